//! What to deploy, per protocol, from a comparison's stored figures and how sure that is:
//! each steering arm judged against untuned ([`crate::decide`]: an interval on the
//! repetitions' ratios, corrected for the arms and the looks), then the best arm judged
//! better whose estimate reaches the gain worth deploying, or "keep untuned" when every arm
//! is settled and none is, or "undecided" with what each open arm needs. Never from fewer
//! than [`MIN_REPS`] repetitions.
use rxsteer_records::{run::ArmName, search::SearchEnd, CpuFlags, Proto, Row, RunDoc, XdpMode};

use crate::decide::{self, Judged, Verdict, MIN_REPS};

/// An arm must be estimated at least this much above untuned to be worth deploying.
const MIN_GAIN: f64 = 1.05;

/// The recommendation for one protocol.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    pub proto: Proto,
    /// The arm to deploy; None: keep untuned, or nothing settled yet.
    pub arm: Option<ArmName>,
    /// One line: "deploy RPS/RFS/XPS: 1.24x untuned (95 % CI 1.14-1.35, 7 of 7 repetitions
    /// higher)", "keep untuned: ...", "undecided after 9 repetitions: ...".
    pub verdict: String,
    /// Why, each from the stored figures.
    pub reasons: Vec<String>,
    /// The command that applies it on the box the run measured.
    pub command: Option<String>,
    /// Every arm weighed, with its interval and verdict (the forest plot draws these).
    pub judged: Vec<Judged>,
}

/// The command that keeps `arm` in place at every boot where the run measured it (the lab's
/// steering targets, or the interface's): `rxsteer install`, which `rxsteer uninstall` takes
/// back.
fn command(run: &RunDoc, arm: ArmName, rows: &[&Row]) -> Option<String> {
    let setup = run.setup.as_ref()?;
    let iface = if run.is_iface() {
        setup.iface.clone()
    } else {
        "IFACE".to_string()
    };
    let cpus = setup
        .steer_targets
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let mode = arm.mode;
    // A mode without a tuning (untuned) has nothing to keep in place.
    mode.steering().tuning?;
    let mut command = format!("rxsteer install --iface {iface} --steer {mode}");
    match mode.steering().cpus {
        CpuFlags::Nothing => {}
        CpuFlags::List => command.push_str(&format!(" --cpus {cpus}")),
        CpuFlags::NapiCpus => command.push_str(&format!(" --napi-cpu {cpus}")),
        CpuFlags::PerClass => command.push_str(&format!(" --http-cpus {cpus}")),
    }
    if mode.steers_with_xdp() {
        let xdp = rows
            .iter()
            .find_map(|r| r.xdp_mode)
            .map_or("auto", XdpMode::as_str);
        command.push_str(&format!(" --xdp-mode {xdp}"));
    }
    Some(command)
}

/// The most common limit the arm's loads were given.
fn limit(rows: &[&Row]) -> Option<String> {
    let mut bounds: Vec<(&str, usize)> = Vec::new();
    for b in rows
        .iter()
        .filter_map(|r| r.verdict.as_ref())
        .map(|v| v.bound.as_str())
    {
        match bounds.iter_mut().find(|(x, _)| *x == b) {
            Some(e) => e.1 += 1,
            None => bounds.push((b, 1)),
        }
    }
    bounds.sort_by_key(|b| std::cmp::Reverse(b.1));
    bounds
        .first()
        .map(|(b, n)| format!("its loads were {b} ({n} of {})", rows.len()))
}

/// Untuned with its observer against untuned with no BPF, when the run measured both,
/// judged like any arm.
fn observer_cost(run: &RunDoc, proto: Proto) -> Option<String> {
    let j = decide::observer_cost(run, proto)?;
    Some(match &j.estimate {
        Some(e) => format!(
            "untuned was observed without XDP, at {} the req/s of untuned with no BPF: {}",
            e.said(),
            j.verdict.said()
        ),
        None => "untuned was observed without XDP; one repetition beside untuned with no BPF \
                 is no interval on what observing cost"
            .into(),
    })
}

/// Whether the untuned arm the ratios are taken against carried no XDP program: otherwise
/// (runs before the observer choice, or `--observer xdp`) untuned is slowed by the observer
/// and every ratio to it reads high, so nothing is recommended from it.
fn untuned_undisturbed(run: &RunDoc, proto: Proto) -> bool {
    let untuned = run.of(ArmName::UNTUNED, proto);
    !untuned.is_empty()
        && untuned.iter().all(|r| {
            r.observer
                .is_some_and(|o| o != rxsteer_records::Observer::Xdp)
        })
}

/// Why `a`'s loads cannot be weighed, if they cannot: a load that failed, or a search that
/// sustained nothing, is no figure (a loader-bound knee is: a bound, which the verdict
/// weighs as one).
fn unjudged(run: &RunDoc, proto: Proto, a: ArmName) -> Option<String> {
    let rows = run.of(a, proto);
    let failed: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.failed.is_some())
        .collect();
    if let Some(first) = failed.first() {
        return Some(format!(
            "{}: failed in {} of {} repetitions ({})",
            a.label(),
            failed.len(),
            rows.len(),
            first.failed.as_deref().unwrap_or_default()
        ));
    }
    let bad: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| {
            r.search
                .as_ref()
                .is_some_and(|s| matches!(s.end, SearchEnd::NothingSustained { .. }))
        })
        .collect();
    let first = bad.first()?.search.as_ref()?;
    Some(format!(
        "{}: {} in {} of {} repetitions",
        a.label(),
        first.outcome(),
        bad.len(),
        rows.len()
    ))
}

/// Repetitions the answer rests on: the most any weighed arm has beside untuned.
fn reps_judged(judged: &[Judged]) -> usize {
    judged.iter().map(|j| j.reps).max().unwrap_or(0)
}

pub fn recommend(run: &RunDoc, proto: Proto) -> Recommendation {
    let answer = |arm, verdict: String, reasons, command, judged| Recommendation {
        proto,
        arm,
        verdict,
        reasons,
        command,
        judged,
    };
    if !untuned_undisturbed(run, proto) {
        return answer(
            None,
            "no recommendation from this run".into(),
            vec![
                "Its untuned arm carried the observe-only XDP program (a run before the \
                 observer choice, or --observer xdp), which slows it, so every ratio to it \
                 reads high; a run with the default observer gives one"
                    .into(),
            ],
            None,
            vec![],
        );
    }
    let untuned = ArmName::UNTUNED;
    if let Some(why) = unjudged(run, proto, untuned) {
        return answer(
            None,
            "no winner claimed".into(),
            vec![format!(
                "{why}, so no ratio to it says which arm serves more"
            )],
            None,
            vec![],
        );
    }
    let mut reasons = Vec::new();
    // Every steering arm left out is said.
    let left_out: Vec<ArmName> = decide::weighed(run)
        .into_iter()
        .filter(|a| {
            let why = unjudged(run, proto, *a);
            if let Some(why) = &why {
                reasons.push(format!("{why}: not weighed"));
            }
            why.is_some()
        })
        .collect();
    let judged = decide::judge_all(run, proto, &left_out);
    let n = reps_judged(&judged);
    let best = judged
        .iter()
        .filter(|j| j.verdict == Verdict::Better)
        .filter_map(|j| Some((j, j.estimate.as_ref()?)))
        .filter(|(_, e)| e.ratio >= MIN_GAIN)
        .max_by(|a, b| a.1.ratio.total_cmp(&b.1.ratio));
    let (arm, verdict, command) = match best {
        _ if n < MIN_REPS as usize => (None, too_few(run, &judged, n, &mut reasons), None),
        Some((j, e)) => {
            reasons.extend(others(&judged, Some(j.arm)));
            let rows = run.of(j.arm, proto);
            reasons.extend(limit(&rows));
            // What keeping it in place takes beyond the command.
            let needs = j.arm.mode.steering().needs_said();
            if !needs.is_empty() {
                reasons.push(format!("it needs {}", needs.join(" and ")));
            }
            (
                Some(j.arm),
                deploy_line(run, j, e),
                command(run, j.arm, &rows),
            )
        }
        None if !judged.is_empty() && judged.iter().all(|j| j.verdict.settled()) => {
            (None, keep_untuned(&judged, &mut reasons), None)
        }
        None => {
            reasons.extend(others(&judged, None));
            (None, undecided_line(&judged, n), None)
        }
    };
    reasons.extend(run_reasons(run, proto));
    answer(arm, verdict, reasons, command, judged)
}

/// Every judged arm but `except`, with its interval and verdict.
fn others(judged: &[Judged], except: Option<ArmName>) -> Vec<String> {
    judged
        .iter()
        .filter(|j| Some(j.arm) != except)
        .map(|j| format!("{}: {}", j.said(), j.verdict.said()))
        .collect()
}

/// "too few repetitions to decide (3): so far ...": the intervals so far are in the line
/// itself, what the repetitions showed and that it is not yet an answer; why first among
/// the reasons.
fn too_few(run: &RunDoc, judged: &[Judged], n: usize, reasons: &mut Vec<String>) -> String {
    reasons.insert(
        0,
        match &run.sequential {
            Some(s) => format!(
                "{n} repetitions: a verdict needs at least {MIN_REPS}, and {}; a larger \
                 --budget gives more",
                s.ended.said()
            ),
            None => format!(
                "{n} repetitions: a verdict needs at least {MIN_REPS} (--reps auto, the \
                 default, runs until each arm is settled)"
            ),
        },
    );
    let so_far: Vec<String> = judged
        .iter()
        .filter(|j| j.estimate.is_some())
        .map(Judged::said)
        .collect();
    let mut line = format!("too few repetitions to decide ({n})");
    if !so_far.is_empty() {
        line.push_str(&format!(": so far {}", so_far.join("; ")));
    }
    line
}

/// "deploy RPS/RFS/XPS: 1.24x untuned (95 % CI 1.14-1.35, 7 of 7 repetitions higher)".
fn deploy_line(run: &RunDoc, j: &Judged, e: &decide::Estimate) -> String {
    format!(
        "deploy {}: {:.2}x untuned ({} CI {:.2}-{:.2}, {} of {} repetitions higher)",
        j.arm.label(),
        e.ratio,
        decide::confidence_said(run),
        e.lo,
        e.hi,
        e.higher,
        e.n
    )
}

/// Every arm settled and none worth deploying: the small gains and the rest, said.
fn keep_untuned(judged: &[Judged], reasons: &mut Vec<String>) -> String {
    let gain = (MIN_GAIN - 1.0) * 100.0;
    reasons.extend(
        judged
            .iter()
            .filter(|j| j.verdict == Verdict::Better)
            .map(|j| {
                format!(
                    "{}: better, but under the {gain:.0} % worth deploying",
                    j.said()
                )
            }),
    );
    reasons.extend(
        judged
            .iter()
            .filter(|j| j.verdict != Verdict::Better)
            .map(|j| format!("{}: {}", j.said(), j.verdict.said())),
    );
    format!("keep untuned: no arm gains {gain:.0} % or more")
}

/// "undecided after 9 repetitions: RPS 1.16x (0.96-1.39, ...), about 15 more needed; XDP
/// cpumap worse, 0.68x (0.57-0.81)": the open arms first, then the settled ones.
fn undecided_line(judged: &[Judged], n: usize) -> String {
    let open: Vec<String> = judged
        .iter()
        .filter(|j| !j.verdict.settled())
        .map(|j| match &j.verdict {
            Verdict::Undecided { more: Some(m) } => format!("{}, about {m} more needed", j.said()),
            _ => j.said(),
        })
        .collect();
    let settled: Vec<String> = judged
        .iter()
        .filter(|j| j.verdict.settled())
        .map(|j| format!("{} {}", j.arm.label(), settled_said(j)))
        .collect();
    let mut line = format!("undecided after {n} repetitions: {}", open.join("; "));
    if !settled.is_empty() {
        line.push_str(&format!("; {}", settled.join("; ")));
    }
    line
}

/// What every answer of the run says besides its arms: how often untuned was loader-bound,
/// how the repetitions were looked at, an early end, the observer's cost, arms not run.
fn run_reasons(run: &RunDoc, proto: Proto) -> Vec<String> {
    let mut reasons = Vec::new();
    let untuned_rows = run.of(ArmName::UNTUNED, proto);
    let capped = untuned_rows
        .iter()
        .filter(|r| {
            r.search
                .as_ref()
                .is_some_and(|s| s.end == SearchEnd::LoaderBound)
        })
        .count();
    if capped > 0 {
        reasons.push(format!(
            "untuned was loader-bound in {capped} of {}: its capacity is above its knee there, so \
             those repetitions can show a loss but never a gain; more loaders (--loader \
             ssh://...) or fewer connections per loader CPU give one",
            untuned_rows.len()
        ));
    }
    if let Some(s) = &run.sequential {
        reasons.push(format!(
            "--reps auto: looked after each repetition from the {}th to the {}th, within a \
             {:.0}-s budget; stopped because {}",
            s.min,
            s.max,
            s.budget_s,
            s.ended.said()
        ));
    }
    if let Some(why) = &run.incomplete {
        reasons.push(format!("the run ended early ({why}): this is what it had"));
    }
    reasons.extend(observer_cost(run, proto));
    // Arms asked for and not run here are in no ratio: said, so no reader takes the
    // recommendation as having weighed them.
    reasons.extend(
        run.not_run
            .iter()
            .map(|n| format!("{}: not run here, so not weighed: {}", n.arm.label(), n.why)),
    );
    reasons
}

/// "worse, 0.68x (0.57-0.81)": a settled arm in the undecided line.
fn settled_said(j: &Judged) -> String {
    let e = j
        .estimate
        .as_ref()
        .map(|e| format!(", {:.2}x ({:.2}-{:.2})", e.ratio, e.lo, e.hi))
        .unwrap_or_default();
    format!("{}{e}", j.verdict.said())
}

/// Whether the run can recommend at all: it has an untuned arm and a steering arm to weigh
/// against it (the observer bench, untuned only, has nothing to recommend).
pub fn applies(run: &RunDoc) -> bool {
    let (arms, _) = run.dims();
    let untuned = |a: &ArmName| a.mode.is_baseline();
    arms.iter().any(untuned) && !arms.iter().all(untuned)
}

/// One line per protocol, for the end of `compare` (none where [`applies`] is false).
pub fn lines(run: &RunDoc) -> Vec<String> {
    if !applies(run) {
        return vec![];
    }
    run.dims()
        .1
        .iter()
        .map(|&p| {
            let r = recommend(run, p);
            format!(
                "recommendation, {}: {}{}",
                p.label(),
                r.verdict,
                r.command.map_or(String::new(), |c| format!(": {c}"))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rep: u32, arm: &str, rps: f64) -> Row {
        let mode = arm.parse::<ArmName>().unwrap().mode;
        Row {
            rep,
            arm: Some(arm.parse().unwrap()),
            mode,
            proto: Proto::Http,
            req_per_s: Some(rps),
            observer: Some(match mode {
                rxsteer_records::Mode::Cpumap => rxsteer_records::Observer::Xdp,
                _ => rxsteer_records::Observer::Tracepoint,
            }),
            ..Default::default()
        }
    }

    fn run(per_rep: &[(f64, f64, f64)]) -> RunDoc {
        let mut runs = Vec::new();
        for (rep, &(none, rps, cpumap)) in per_rep.iter().enumerate() {
            let rep = rep as u32;
            runs.extend([
                row(rep, "none", none),
                row(rep, "rps", rps),
                row(rep, "cpumap-skb", cpumap),
            ]);
        }
        RunDoc {
            cpus: 20,
            setup: Some(rxsteer_records::run::Setup {
                steer_targets: vec![2, 3],
                ..Default::default()
            }),
            runs,
            ..Default::default()
        }
    }

    /// Five repetitions: untuned near 100, RPS about even, cpumap about 1.3x.
    fn five(rps: [f64; 5], cpumap: [f64; 5]) -> RunDoc {
        let none = [100.0, 110.0, 90.0, 105.0, 95.0];
        let per: Vec<(f64, f64, f64)> = (0..5).map(|i| (none[i], rps[i], cpumap[i])).collect();
        run(&per)
    }

    #[test]
    fn a_clear_winner_is_deployed_with_its_interval_and_command() {
        let r = recommend(
            &five(
                [101.0, 108.0, 91.0, 104.0, 96.0],
                [130.0, 140.0, 120.0, 138.0, 122.0],
            ),
            Proto::Http,
        );
        assert_eq!(r.arm.map(|a| a.to_string()).as_deref(), Some("cpumap-skb"));
        assert!(
            r.verdict.starts_with("deploy XDP cpumap (skb): 1.3")
                && r.verdict.contains("untuned (95 % CI 1.2")
                && r.verdict.ends_with("5 of 5 repetitions higher)"),
            "{r:?}"
        );
        assert_eq!(
            r.command.as_deref(),
            Some("rxsteer install --iface IFACE --steer cpumap --http-cpus 2,3 --xdp-mode auto")
        );
        // RPS was weighed too, and said.
        assert!(
            r.reasons.iter().any(|x| x.starts_with("RPS/RFS/XPS 1.0")),
            "{:?}",
            r.reasons
        );
    }

    #[test]
    fn fewer_than_five_repetitions_never_deploy() {
        // Higher in all 3 repetitions: the old sign rule deployed this at p = 0.125.
        let r = recommend(
            &run(&[
                (100.0, 120.0, 130.0),
                (110.0, 125.0, 140.0),
                (90.0, 100.0, 120.0),
            ]),
            Proto::Http,
        );
        assert_eq!(r.arm, None);
        assert!(
            r.verdict
                .starts_with("too few repetitions to decide (3): so far RPS/RFS/XPS 1.15x ("),
            "{}",
            r.verdict
        );
        assert!(r.command.is_none());
    }

    #[test]
    fn a_clear_loss_is_named_worse_not_hidden() {
        let r = recommend(
            &five(
                [70.0, 75.0, 64.0, 72.0, 68.0],
                [99.0, 111.0, 92.0, 104.0, 94.0],
            ),
            Proto::Http,
        );
        assert_eq!(r.arm, None);
        assert!(r.verdict.starts_with("keep untuned"), "{r:?}");
        let rps = r
            .judged
            .iter()
            .find(|j| j.arm.to_string() == "rps")
            .unwrap();
        assert_eq!(rps.verdict, Verdict::Worse);
        assert!(
            r.reasons
                .iter()
                .any(|x| x.contains("RPS/RFS/XPS 0.7") && x.ends_with("worse")),
            "{:?}",
            r.reasons
        );
    }

    #[test]
    fn disagreeing_repetitions_are_undecided_with_what_would_settle_them() {
        let r = recommend(
            &five(
                [130.0, 90.0, 110.0, 95.0, 120.0],
                [70.0, 75.0, 64.0, 72.0, 68.0],
            ),
            Proto::Http,
        );
        assert_eq!(r.arm, None);
        assert!(
            r.verdict
                .starts_with("undecided after 5 repetitions: RPS/RFS/XPS ")
                && r.verdict.contains("more needed")
                && r.verdict.contains("XDP cpumap (skb) worse, 0.70x"),
            "{}",
            r.verdict
        );
    }

    #[test]
    fn a_run_whose_untuned_carried_the_xdp_observer_recommends_nothing() {
        let mut old = run(&[(100.0, 120.0, 130.0), (110.0, 125.0, 140.0)]);
        for r in &mut old.runs {
            r.observer = None;
        }
        let r = recommend(&old, Proto::Http);
        assert_eq!(
            (r.arm, r.verdict.as_str()),
            (None, "no recommendation from this run")
        );
    }

    #[test]
    fn a_load_that_failed_is_not_weighed_and_the_others_still_are() {
        let mut r = five(
            [130.0, 140.0, 120.0, 138.0, 122.0],
            [99.0, 111.0, 92.0, 104.0, 94.0],
        );
        let cpumap = r
            .runs
            .iter_mut()
            .find(|x| x.arm().to_string() == "cpumap-skb")
            .unwrap();
        cpumap.req_per_s = None;
        cpumap.failed = Some("no request succeeded".into());
        let rec = recommend(&r, Proto::Http);
        assert!(rec.verdict.starts_with("deploy RPS/RFS/XPS: "), "{rec:?}");
        assert!(
            rec.reasons.iter().any(|x| x
                == "XDP cpumap (skb): failed in 1 of 5 repetitions (no request succeeded): not weighed"),
            "{:?}",
            rec.reasons
        );
        // Untuned failed: nothing to take a ratio to, so no winner.
        let untuned = r.runs.iter_mut().find(|x| x.mode.is_baseline()).unwrap();
        untuned.req_per_s = None;
        untuned.failed = Some("no request succeeded".into());
        let rec = recommend(&r, Proto::Http);
        assert_eq!((rec.arm, rec.verdict.as_str()), (None, "no winner claimed"));
        assert_eq!(
            rec.reasons,
            vec!["untuned: failed in 1 of 5 repetitions (no request succeeded), so no ratio to it says which arm serves more"]
        );
    }

    #[test]
    fn a_loader_bound_untuned_still_lets_a_loss_be_seen() {
        // RPS at 0.7x of untuned's bound, cpumap at about 1.0x of it.
        let mut r = five(
            [70.0, 77.0, 63.0, 73.5, 66.5],
            [101.0, 109.0, 91.0, 106.0, 94.0],
        );
        for x in r.runs.iter_mut().filter(|x| x.mode.is_baseline()) {
            x.search = Some(rxsteer_records::search::Search {
                end: SearchEnd::LoaderBound,
                ..Default::default()
            });
        }
        let rec = recommend(&r, Proto::Http);
        let rps = rec
            .judged
            .iter()
            .find(|j| j.arm.to_string() == "rps")
            .unwrap();
        assert_eq!(rps.verdict, Verdict::Worse, "{rec:?}");
        assert_eq!(rps.estimate.as_ref().unwrap().bounds, 5);
        // cpumap is as fast as untuned's bound: nothing says whether it is faster.
        let cpumap = rec
            .judged
            .iter()
            .find(|j| j.arm.to_string() == "cpumap-skb")
            .unwrap();
        assert!(!cpumap.verdict.settled(), "{cpumap:?}");
    }
}
