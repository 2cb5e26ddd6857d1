//! What to deploy, per protocol, from a comparison's stored figures: the steering arm that
//! beat untuned in every repetition, or "keep untuned", or "no difference shown". Never an
//! arm whose repetitions disagree or whose req/s spread marks it noisy.
use rxsteer_records::{
    run::{median, range, ArmName, NO_BPF_ARM},
    search::SearchEnd,
    CpuFlags, Proto, Row, RunDoc, XdpMode,
};

/// An arm must beat untuned by at least this (median) to be worth deploying.
const MIN_GAIN: f64 = 1.05;
/// A req/s spread (max/min over repetitions) above this is noise, not a result.
const NOISY: f64 = 1.5;

/// The recommendation for one protocol.
#[derive(Clone, Debug, PartialEq)]
pub struct Recommendation {
    pub proto: Proto,
    /// The arm to deploy; None: keep untuned, or nothing shown either way.
    pub arm: Option<ArmName>,
    /// "deploy XDP cpumap (skb)", "keep untuned", "no difference shown".
    pub verdict: String,
    /// Why, each from the stored figures.
    pub reasons: Vec<String>,
    /// The command that applies it on the box the run measured.
    pub command: Option<String>,
}

struct Candidate {
    arm: ArmName,
    ratios: Vec<f64>,
    spread: f64,
}

fn candidates(run: &RunDoc, proto: Proto) -> Vec<Candidate> {
    let (arms, _) = run.dims();
    arms.iter()
        .filter(|a| **a != NO_BPF_ARM)
        .filter(|a| !a.mode.is_baseline())
        .filter_map(|a| {
            let ratios = run.ratios(*a, proto);
            let rps: Vec<f64> = run
                .of(*a, proto)
                .iter()
                .filter_map(|r| r.req_per_s)
                .collect();
            let (lo, hi) = range(&rps);
            (!ratios.is_empty()).then(|| Candidate {
                arm: *a,
                ratios,
                spread: if rps.len() > 1 {
                    hi / lo.max(1e-9)
                } else {
                    1.0
                },
            })
        })
        .collect()
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

/// Untuned with its observer over untuned with no BPF, when the run measured both.
fn observer_cost(run: &RunDoc, proto: Proto) -> Option<String> {
    let v = run.ratios_to(ArmName::UNTUNED, NO_BPF_ARM, proto);
    (!v.is_empty()).then(|| {
        format!(
            "untuned was observed without XDP, at {:.2}x the req/s of untuned with no BPF (median)",
            median(&v)
        )
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

/// Why `a`'s loads cannot pick a winner, if they cannot: a capacity the loader capped, or
/// none at all, is no figure to pick one by; nor is a load that failed.
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
                .is_some_and(|s| !matches!(s.end, SearchEnd::Knee | SearchEnd::Ceiling))
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

pub fn recommend(run: &RunDoc, proto: Proto) -> Recommendation {
    if !untuned_undisturbed(run, proto) {
        return Recommendation {
            proto,
            arm: None,
            verdict: "no recommendation from this run".into(),
            reasons: vec![
                "Its untuned arm carried the observe-only XDP program (a run before the \
                 observer choice, or --observer xdp), which slows it, so every ratio to it \
                 reads high; a run with the default observer gives one"
                    .into(),
            ],
            command: None,
        };
    }
    let mut reasons = Vec::new();
    let untuned = ArmName::UNTUNED;
    if let Some(why) = unjudged(run, proto, untuned) {
        return Recommendation {
            proto,
            arm: None,
            verdict: "no winner claimed".into(),
            reasons: vec![format!(
                "{why}, so no ratio to it says which arm serves more{}",
                if run.of(untuned, proto).iter().any(|r| r
                    .search
                    .as_ref()
                    .is_some_and(|s| s.end == SearchEnd::LoaderBound))
                {
                    "; more loaders (--loader ssh://...) or fewer connections per loader CPU give one"
                } else {
                    ""
                }
            )],
            command: None,
        };
    }
    // Every steering arm left out is said, also one with no ratio at all (nothing sustained
    // or failed in every repetition).
    let (arms, _) = run.dims();
    let left_out: Vec<ArmName> = arms
        .iter()
        .filter(|a| **a != NO_BPF_ARM && !a.mode.is_baseline())
        .filter_map(|a| {
            let why = unjudged(run, proto, *a)?;
            reasons.push(format!("{why}: not weighed"));
            Some(*a)
        })
        .collect();
    let mut cands = candidates(run, proto);
    cands.retain(|c| !left_out.contains(&c.arm));
    let winners: Vec<&Candidate> = cands
        .iter()
        .filter(|c| c.ratios.iter().all(|&r| r > 1.0) && median(&c.ratios) >= MIN_GAIN)
        .collect();
    let best = winners
        .iter()
        .filter(|c| c.spread <= NOISY)
        .max_by(|a, b| median(&a.ratios).total_cmp(&median(&b.ratios)));
    for c in &winners {
        if c.spread > NOISY {
            reasons.push(format!(
                "{} beat untuned in every repetition but its req/s spread {:.2}x: noisy, not recommended",
                c.arm.label(),
                c.spread
            ));
        }
    }
    let (arm, verdict, command) = match best {
        Some(c) => deploy(run, proto, c, &mut reasons),
        None if !cands.is_empty() && cands.iter().all(|c| c.ratios.iter().all(|&r| r < 1.0)) => {
            reasons.push("every steering arm served less than untuned in every repetition".into());
            (None, "keep untuned".to_string(), None)
        }
        None => {
            let shown = cands
                .iter()
                .filter(|c| c.spread <= NOISY || winners.is_empty());
            reasons.extend(shown.map(no_difference));
            (None, "no difference shown".to_string(), None)
        }
    };
    reasons.extend(observer_cost(run, proto));
    // Arms asked for and not run here are in no ratio: said, so no reader takes the
    // recommendation as having weighed them.
    reasons.extend(
        run.not_run
            .iter()
            .map(|n| format!("{}: not run here, so not weighed: {}", n.arm.label(), n.why)),
    );
    Recommendation {
        proto,
        arm,
        verdict,
        reasons,
        command,
    }
}

/// The winner: why (its ratios, the limit its loads were given) and the command.
fn deploy(
    run: &RunDoc,
    proto: Proto,
    c: &Candidate,
    reasons: &mut Vec<String>,
) -> (Option<ArmName>, String, Option<String>) {
    let (lo, hi) = range(&c.ratios);
    reasons.insert(
        0,
        format!(
            "{} beat untuned in all {} repetitions: {:.2}x median ({lo:.2}-{hi:.2})",
            c.arm.label(),
            c.ratios.len(),
            median(&c.ratios)
        ),
    );
    let rows = run.of(c.arm, proto);
    reasons.extend(limit(&rows));
    // What keeping it in place takes beyond the command.
    let needs = c.arm.mode.steering().needs_said();
    if !needs.is_empty() {
        reasons.push(format!("it needs {}", needs.join(" and ")));
    }
    (
        Some(c.arm),
        format!("deploy {}", c.arm.label()),
        command(run, c.arm, &rows),
    )
}

/// Why a steering arm is not the winner: its median and range, and whether they disagree.
fn no_difference(c: &Candidate) -> String {
    let (lo, hi) = range(&c.ratios);
    format!(
        "{}: {:.2}x median, {lo:.2}-{hi:.2} over {} repetitions: {}",
        c.arm.label(),
        median(&c.ratios),
        c.ratios.len(),
        if lo <= 1.0 && hi >= 1.0 {
            "the repetitions disagree"
        } else {
            "below the 5 % worth deploying"
        }
    )
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

    #[test]
    fn a_consistent_winner_is_recommended_with_its_command() {
        let r = recommend(
            &run(&[
                (100.0, 120.0, 130.0),
                (110.0, 125.0, 140.0),
                (90.0, 100.0, 120.0),
            ]),
            Proto::Http,
        );
        assert_eq!(r.arm.map(|a| a.to_string()).as_deref(), Some("cpumap-skb"));
        assert_eq!(r.verdict, "deploy XDP cpumap (skb)");
        assert!(
            r.reasons[0]
                .starts_with("XDP cpumap (skb) beat untuned in all 3 repetitions: 1.30x median"),
            "{r:?}"
        );
        assert_eq!(
            r.command.as_deref(),
            Some("rxsteer install --iface IFACE --steer cpumap --http-cpus 2,3 --xdp-mode auto")
        );
    }

    #[test]
    fn disagreeing_repetitions_recommend_nothing() {
        let r = recommend(
            &run(&[
                (100.0, 120.0, 90.0),
                (100.0, 95.0, 115.0),
                (100.0, 110.0, 101.0),
            ]),
            Proto::Http,
        );
        assert_eq!((r.arm, r.verdict.as_str()), (None, "no difference shown"));
        assert!(
            r.reasons
                .iter()
                .any(|x| x.contains("the repetitions disagree")),
            "{:?}",
            r.reasons
        );
        let r = recommend(
            &run(&[(100.0, 90.0, 80.0), (100.0, 95.0, 85.0)]),
            Proto::Http,
        );
        assert_eq!(r.verdict, "keep untuned");
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
        let mut r = run(&[(100.0, 120.0, 130.0), (110.0, 125.0, 140.0)]);
        let cpumap = r
            .runs
            .iter_mut()
            .find(|x| x.arm().to_string() == "cpumap-skb")
            .unwrap();
        cpumap.req_per_s = None;
        cpumap.failed = Some("no request succeeded".into());
        let rec = recommend(&r, Proto::Http);
        assert_eq!(rec.verdict, "deploy RPS/RFS/XPS", "{rec:?}");
        assert!(
            rec.reasons.iter().any(|x| x
                == "XDP cpumap (skb): failed in 1 of 2 repetitions (no request succeeded): not weighed"),
            "{:?}",
            rec.reasons
        );
        // Untuned failed: nothing to take a ratio to, so no winner, and no loader advice.
        let untuned = r.runs.iter_mut().find(|x| x.mode.is_baseline()).unwrap();
        untuned.req_per_s = None;
        untuned.failed = Some("no request succeeded".into());
        let rec = recommend(&r, Proto::Http);
        assert_eq!((rec.arm, rec.verdict.as_str()), (None, "no winner claimed"));
        assert_eq!(
            rec.reasons,
            vec!["untuned: failed in 1 of 2 repetitions (no request succeeded), so no ratio to it says which arm serves more"]
        );
    }

    #[test]
    fn a_noisy_winner_is_not_recommended() {
        // cpumap beats untuned every time, but its own req/s spread 2x.
        let r = recommend(
            &run(&[
                (100.0, 90.0, 110.0),
                (300.0, 280.0, 330.0),
                (100.0, 95.0, 120.0),
            ]),
            Proto::Http,
        );
        assert_eq!(r.arm, None, "{r:?}");
        assert!(
            r.reasons
                .iter()
                .any(|x| x.contains("noisy, not recommended")),
            "{:?}",
            r.reasons
        );
    }
}
