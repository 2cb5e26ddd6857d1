//! Whether an arm serves more than untuned, and how sure: each repetition's ratio to untuned
//! (same repetition, same protocol) as a log, their geometric mean, and a paired t interval
//! at a level corrected for the arms compared and, in a `--reps auto` run, for every look.
//! From that interval one of four verdicts: better, worse, no difference of 5 % or more, or
//! undecided with about how many more repetitions would settle it.
//!
//! Why a t interval on log ratios, not a distribution-free one: the sign interval of a
//! median needs 6 repetitions for any 95 % interval and 9 or more once corrected for three
//! arms, where the t interval decides a clear difference at 5; the log ratios stored here are
//! close to normal (docs/experiment.md), and the simulation test measures the error rate the
//! rule really has with the drift and spread of this machine.
//!
//! A loader-bound knee is a bound, not a figure: the arm's capacity is at least it. Such a
//! repetition's ratio is a lower bound where the arm was loader-bound (it may support
//! "better", never "worse") and an upper bound where untuned was (it may support "worse",
//! never "better"). Each side's interval takes every repetition, a bound on the other side
//! counted as no difference at most (its ratio clamped to 1): leaving those repetitions out
//! instead would keep only the ones where untuned drew low, and read every arm high. "No
//! difference" is never claimed from a run with bounds in it.
use rxsteer_records::{
    reps::Sequential,
    run::{base_arm_in, find, ArmName},
    search::SearchEnd,
    Proto, Row, RunDoc,
};

use crate::stats;

/// The default confidence that every verdict of one protocol's answer, over every arm and
/// every look, is right at once (`--confidence`).
pub const CONFIDENCE: f64 = 0.95;

/// The chance that any verdict of one protocol's answer is wrong.
pub fn family_alpha(run: &RunDoc) -> f64 {
    1.0 - run.confidence.unwrap_or(CONFIDENCE)
}

/// "95 %": the confidence said beside an interval.
pub fn confidence_said(run: &RunDoc) -> String {
    let c = run.confidence.unwrap_or(CONFIDENCE) * 100.0;
    if (c - c.round()).abs() < 1e-9 {
        format!("{c:.0} %")
    } else {
        format!("{c} %")
    }
}
/// No verdict from fewer repetitions than this (a fixed `--reps` below it is "too few").
pub const MIN_REPS: u32 = 5;
/// "No difference of 5 % or more": the interval lies inside these.
pub const EQUIVALENT: (f64, f64) = (0.95, 1.05);
/// More repetitions than this needed is said as "more than" it.
const MORE_CAP: u32 = 1000;

/// How a repetition's ratio is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Known {
    Exact,
    /// The arm was loader-bound: its true ratio is at least this.
    AtLeast,
    /// Untuned was loader-bound: the true ratio is at most this.
    AtMost,
    /// Both were: a bound each way, so it supports neither side.
    Neither,
}

/// One repetition's ratio of an arm to its untuned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub rep: u32,
    pub ratio: f64,
    pub known: Known,
}

/// Whether a load's figure is a lower bound on what the server could do: its search ended
/// at the loader's limit or the search's ceiling.
fn lower_bound(row: &Row) -> bool {
    row.search
        .as_ref()
        .is_some_and(|s| matches!(s.end, SearchEnd::LoaderBound | SearchEnd::Ceiling))
}

/// Per repetition where both ran with a figure, `arm`'s ratio to `base` and how it is known.
pub fn pairs_to(run: &RunDoc, arm: ArmName, base: ArmName, proto: Proto) -> Vec<Pair> {
    (0..run.reps())
        .filter_map(|rep| {
            let a = find(&run.runs, rep, arm, proto)?;
            let b = find(&run.runs, rep, base, proto)?;
            if a.failed.is_some() || b.failed.is_some() {
                return None;
            }
            let (ra, rb) = (a.req_per_s?, b.req_per_s?);
            if ra <= 0.0 || rb <= 0.0 {
                return None;
            }
            let known = match (lower_bound(a), lower_bound(b)) {
                (false, false) => Known::Exact,
                (true, false) => Known::AtLeast,
                (false, true) => Known::AtMost,
                (true, true) => Known::Neither,
            };
            Some(Pair {
                rep,
                ratio: ra / rb,
                known,
            })
        })
        .collect()
}

/// [`pairs_to`] the arm's own untuned.
pub fn pairs(run: &RunDoc, arm: ArmName, proto: Proto) -> Vec<Pair> {
    pairs_to(run, arm, base_arm_in(&run.runs, arm), proto)
}

/// An arm's ratio to untuned: the geometric mean and its interval, as ratios.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub ratio: f64,
    pub lo: f64,
    pub hi: f64,
    /// Repetitions it rests on, and how many of them the arm served more than untuned.
    pub n: usize,
    pub higher: usize,
    /// Of those, ratios that are bounds (a loader-bound knee).
    pub bounds: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    Better,
    Worse,
    /// The interval lies inside [`EQUIVALENT`].
    Equivalent,
    /// About this many more repetitions at the spread seen would settle it; None: more
    /// than [`MORE_CAP`], or too few repetitions to tell yet.
    Undecided {
        more: Option<u32>,
    },
}

impl Verdict {
    pub fn settled(&self) -> bool {
        !matches!(self, Verdict::Undecided { .. })
    }

    pub fn said(&self) -> String {
        match self {
            Verdict::Better => "better".into(),
            Verdict::Worse => "worse".into(),
            Verdict::Equivalent => "no difference of 5 % or more".into(),
            Verdict::Undecided { more: Some(m) } => format!("undecided, about {m} more needed"),
            Verdict::Undecided { more: None } => {
                "undecided, and more repetitions at this spread would not settle it (or its \
                 loader-bound ones point the other way)"
                    .into()
            }
        }
    }
}

/// One arm, judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    pub arm: ArmName,
    /// Repetitions with a ratio to untuned (an interval needs 2).
    pub reps: usize,
    pub estimate: Option<Estimate>,
    pub verdict: Verdict,
}

impl Judged {
    /// "RPS/RFS/XPS 1.24x (1.14-1.35, 7 of 7 higher)".
    pub fn said(&self) -> String {
        match &self.estimate {
            Some(e) => format!("{} {}", self.arm.label(), e.said()),
            None => format!("{}: no repetition to judge", self.arm.label()),
        }
    }
}

impl Estimate {
    /// "1.24x (1.14-1.35, 7 of 7 higher)", with the loader-bound repetitions counted where
    /// there are any.
    pub fn said(&self) -> String {
        let bounds = if self.bounds > 0 {
            format!(", {} loader-bound", self.bounds)
        } else {
            String::new()
        };
        format!(
            "{:.2}x ({:.2}-{:.2}, {} of {} higher{bounds})",
            self.ratio, self.lo, self.hi, self.higher, self.n
        )
    }
}

/// The log ratios one side of the verdict weighs: a bound that can only support the other
/// side counts as no difference at most.
fn side_logs(pairs: &[Pair], side: Side) -> Vec<f64> {
    pairs
        .iter()
        .map(|p| {
            let l = p.ratio.ln();
            match (side, p.known) {
                (_, Known::Exact) | (Side::All, _) => l,
                (Side::Up, Known::AtLeast) | (Side::Down, Known::AtMost) => l,
                (Side::Up, _) => l.min(0.0),
                (Side::Down, _) => l.max(0.0),
            }
        })
        .collect()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Whether the arm is better: lower bounds as they are.
    Up,
    /// Whether it is worse: upper bounds as they are.
    Down,
    All,
}

/// The interval over one side's logs at `alpha`, as an [`Estimate`].
fn estimate(pairs: &[Pair], side: Side, alpha: f64) -> Option<Estimate> {
    let logs = side_logs(pairs, side);
    let (m, lo, hi) = stats::t_interval(&logs, alpha)?;
    Some(Estimate {
        ratio: m.exp(),
        lo: lo.exp(),
        hi: hi.exp(),
        n: pairs.len(),
        higher: logs.iter().filter(|l| **l > 0.0).count(),
        bounds: pairs.iter().filter(|p| p.known != Known::Exact).count(),
    })
}

/// The verdict on `pairs` at a per-look two-sided level `alpha`; the estimate shown is the
/// interval that decided it, else the one over every repetition as measured.
pub fn judge(arm: ArmName, pairs: &[Pair], alpha: f64) -> Judged {
    let bounded = pairs.iter().any(|p| p.known != Known::Exact);
    let up = estimate(pairs, Side::Up, alpha);
    let down = estimate(pairs, Side::Down, alpha);
    let all = estimate(pairs, Side::All, alpha);
    let (estimate, verdict) = if let Some(e) = up.filter(|e| e.lo > 1.0) {
        (Some(e), Verdict::Better)
    } else if let Some(e) = down.filter(|e| e.hi < 1.0) {
        (Some(e), Verdict::Worse)
    } else if let Some(e) = all
        .clone()
        .filter(|e| !bounded && e.lo >= EQUIVALENT.0 && e.hi <= EQUIVALENT.1)
    {
        (Some(e), Verdict::Equivalent)
    } else {
        let more = more_needed(pairs, alpha);
        (all, Verdict::Undecided { more })
    };
    Judged {
        arm,
        reps: pairs.len(),
        estimate,
        verdict,
    }
}

/// About how many more repetitions, at the mean and spread seen so far, would bring the
/// interval clear of 1 or inside [`EQUIVALENT`], whichever comes first; None where neither
/// would within [`MORE_CAP`] (or a bound rules out "no difference" and the mean sits on 1).
fn more_needed(pairs: &[Pair], alpha: f64) -> Option<u32> {
    let all = side_logs(pairs, Side::All);
    if all.len() < 2 {
        return None;
    }
    let (m, _) = stats::mean_sd(&all);
    // Clear of 1 on the side the mean points to, bounds counted as that side counts them.
    let side = side_logs(pairs, if m > 0.0 { Side::Up } else { Side::Down });
    let bounded = pairs.iter().any(|p| p.known != Known::Exact);
    let needed = |logs: &[f64], reached: &dyn Fn(f64, f64) -> bool| -> Option<u32> {
        if logs.len() < 2 {
            return None;
        }
        let (m, sd) = stats::mean_sd(logs);
        let n = logs.len() as u32;
        let ok = |k: u32| {
            let half = stats::t_critical(alpha, k as f64 - 1.0) * sd / (k as f64).sqrt();
            reached(m, half)
        };
        // The half-width falls as k grows: the first k that reaches it, by bisection.
        if !ok(n + MORE_CAP) {
            return None;
        }
        let (mut lo, mut hi) = (n, n + MORE_CAP);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if ok(mid) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Some(hi - n)
    };
    let clear = needed(&side, &|m, half| half < m.abs());
    let inside = needed(if bounded { &[] } else { &all }, &|m, half| {
        half < (m - EQUIVALENT.0.ln()).min(EQUIVALENT.1.ln() - m)
    });
    match (clear, inside) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The arms one protocol's answer weighs: every arm but untuned and the no-BPF arm (the
/// observer's cost is judged on its own, [`observer_cost`]).
pub fn weighed(run: &RunDoc) -> Vec<ArmName> {
    let (arms, _) = run.dims();
    arms.into_iter()
        .filter(|a| *a != rxsteer_records::run::NO_BPF_ARM && !a.mode.is_baseline())
        .collect()
}

/// The per-look two-sided level for `arms` judged together: the family's 5 % shared over the
/// arms (Bonferroni), then over the looks of a sequential run (Pocock-type, derived in
/// [`stats::per_look_alpha`]).
pub fn look_alpha(family: f64, sequential: Option<&Sequential>, arms: usize) -> f64 {
    let family = family / arms.max(1) as f64;
    match sequential {
        Some(s) => stats::per_look_alpha(family, s.min.max(2), s.max.max(s.min)),
        None => family,
    }
}

/// Every weighed arm of `proto`, judged at the run's level. `skip` leaves out arms that will
/// not be weighed (a failed load); they still count in the correction, since they were
/// compared.
pub fn judge_all(run: &RunDoc, proto: Proto, skip: &[ArmName]) -> Vec<Judged> {
    let arms = weighed(run);
    let alpha = look_alpha(family_alpha(run), run.sequential.as_ref(), arms.len());
    arms.into_iter()
        .filter(|a| !skip.contains(a))
        .map(|a| judge(a, &pairs(run, a, proto), alpha))
        .collect()
}

/// What observing cost, judged like any arm: each observed untuned arm (one per observer
/// variant; usually just `none`) against untuned with no BPF, corrected for their count.
pub fn observer_costs(run: &RunDoc, proto: Proto) -> Vec<Judged> {
    let nobpf = rxsteer_records::run::NO_BPF_ARM;
    let (arms, _) = run.dims();
    let observed: Vec<ArmName> = arms
        .into_iter()
        .filter(|a| a.mode.is_baseline() && *a != nobpf)
        .collect();
    let alpha = look_alpha(family_alpha(run), run.sequential.as_ref(), observed.len());
    observed
        .into_iter()
        .filter_map(|a| {
            let p = pairs_to(run, a, nobpf, proto);
            (!p.is_empty()).then(|| judge(a, &p, alpha))
        })
        .collect()
}

/// [`observer_costs`] of plain untuned, the arm every ratio is taken to.
pub fn observer_cost(run: &RunDoc, proto: Proto) -> Option<Judged> {
    observer_costs(run, proto)
        .into_iter()
        .find(|j| j.arm == ArmName::UNTUNED)
}

/// The loads a `--reps auto` run still needs: per protocol, the arms not yet settled (the
/// observer's cost included where the run measures it). Below the first look every arm is
/// unsettled.
pub fn unsettled(run: &RunDoc) -> Vec<(ArmName, Proto)> {
    let first = run.sequential.as_ref().map_or(MIN_REPS, |s| s.min) as usize;
    let settled = |j: &Judged| j.reps >= first && j.verdict.settled();
    let (arms, protos) = run.dims();
    let mut open = Vec::new();
    for &p in &protos {
        let judged = judge_all(run, p, &[]);
        for a in weighed(run) {
            if !judged.iter().any(|j| j.arm == a && settled(j)) {
                open.push((a, p));
            }
        }
        let nobpf = rxsteer_records::run::NO_BPF_ARM;
        if arms.contains(&nobpf) && !observer_cost(run, p).is_some_and(|j| settled(&j)) {
            open.push((nobpf, p));
        }
    }
    open
}

/// After `reps` repetitions: one line per arm and protocol with its interval and verdict so
/// far, for the live screen ("after 6: HTTP/1.1 RPS/RFS/XPS 1.04x (0.91-1.19, 4 of 6
/// higher): undecided, about 12 more needed").
pub fn look_lines(run: &RunDoc, reps: u32) -> Vec<String> {
    let (_, protos) = run.dims();
    let mut lines = Vec::new();
    for p in protos {
        let mut judged = judge_all(run, p, &[]);
        judged.extend(observer_cost(run, p).map(|mut j| {
            j.arm = rxsteer_records::run::NO_BPF_ARM;
            j
        }));
        for j in judged {
            let what = if j.arm == rxsteer_records::run::NO_BPF_ARM {
                "untuned over no BPF (the observer's cost)".to_string()
            } else {
                j.arm.label()
            };
            lines.push(match &j.estimate {
                Some(e) => format!(
                    "after {reps}: {} {what} {}: {}",
                    p.label(),
                    e.said(),
                    j.verdict.said()
                ),
                None => format!("after {reps}: {} {what}: no interval yet", p.label()),
            });
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(ratios: &[f64]) -> Vec<Pair> {
        ratios
            .iter()
            .enumerate()
            .map(|(rep, &ratio)| Pair {
                rep: rep as u32,
                ratio,
                known: Known::Exact,
            })
            .collect()
    }

    #[test]
    fn each_verdict_from_its_interval() {
        let a = ArmName::UNTUNED;
        let j = judge(a, &exact(&[1.2, 1.25, 1.22, 1.3, 1.18]), 0.05);
        assert_eq!(j.verdict, Verdict::Better);
        let e = j.estimate.unwrap();
        assert!(e.lo > 1.0 && (1.2..1.26).contains(&e.ratio), "{e:?}");
        assert_eq!((e.n, e.higher), (5, 5));
        let j = judge(a, &exact(&[0.7, 0.66, 0.72, 0.69, 0.7]), 0.05);
        assert_eq!(j.verdict, Verdict::Worse);
        let j = judge(a, &exact(&[1.0, 1.01, 0.99, 1.0, 1.005]), 0.05);
        assert_eq!(j.verdict, Verdict::Equivalent);
        let j = judge(a, &exact(&[1.3, 0.8, 1.1, 0.95, 1.2]), 0.05);
        assert!(
            matches!(j.verdict, Verdict::Undecided { more: Some(m) } if m > 5),
            "{j:?}"
        );
        assert!(!j.verdict.settled());
    }

    #[test]
    fn a_loader_bound_ratio_supports_only_its_side() {
        let a = ArmName::UNTUNED;
        // The arm loader-bound at 0.9x in every repetition: its capacity is at least that,
        // so nothing says it is worse.
        let mut p = exact(&[0.9, 0.88, 0.91, 0.9, 0.89]);
        for x in &mut p {
            x.known = Known::AtLeast;
        }
        assert!(!matches!(judge(a, &p, 0.05).verdict, Verdict::Worse));
        // Untuned loader-bound with the arm at 1.2x: untuned may be as good, so not better.
        for x in &mut p {
            x.known = Known::AtMost;
            x.ratio += 0.3;
        }
        assert!(!matches!(judge(a, &p, 0.05).verdict, Verdict::Better));
        // ... but an upper bound below 1 is a loss.
        for x in &mut p {
            x.ratio -= 0.5;
        }
        assert_eq!(judge(a, &p, 0.05).verdict, Verdict::Worse);
    }

    #[test]
    fn the_level_tightens_with_arms_and_looks() {
        assert!((look_alpha(0.05, None, 1) - 0.05).abs() < 1e-12);
        assert!((look_alpha(0.05, None, 4) - 0.0125).abs() < 1e-12);
        let seq = Sequential {
            min: 5,
            max: 20,
            ..Default::default()
        };
        assert!(look_alpha(0.05, Some(&seq), 4) < 0.0125);
    }
}
