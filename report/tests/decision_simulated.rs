//! The decision rule checked by simulation: runs drawn from known truths, with the spread and
//! drift measured on this project's machines, fed to the real decision code (`--reps auto`'s
//! looks through `decide::unsettled`, the answer through `recommend`). Pure computation: CI
//! runs it in seconds.
//!
//! The noise model: each load's log capacity is a drift shared by loads in the order they
//! ran (AR(1), 0.68 from one load to the next, sd 0.10) plus the load's own noise (sd 0.12).
//! That gives a log ratio to untuned of sd 0.19-0.21 by how far apart the two loads ran, the
//! capacity search's 0.20 measured in `results/2026-12-04-vm-lab-beyond-rps-upload-7` (the
//! issue's review of every stored 7-repetition run), and the lag-1 autocorrelation of
//! `results/2026-12-04-vm-throughput-noise`.
use rxsteer_records::{
    reps::Sequential,
    run::ArmName,
    search::{Search, SearchEnd},
    Observer, Proto, Row, RunDoc,
};
use rxsteer_report::{
    decide::{self, Verdict},
    recommend::recommend,
    stats::Rng,
};

const ARMS: [&str; 4] = ["none", "rps", "cpumap-drv", "cpumap-skb"];
const RHO: f64 = 0.68;
const DRIFT_SD: f64 = 0.10;
const OWN_SD: f64 = 0.12;
const MIN: u32 = 5;
const MAX: u32 = 20;

struct Truth {
    /// Per steering arm (rps, cpumap-drv, cpumap-skb), its true ratio to untuned.
    ratios: [f64; 3],
    /// Loads above this (log, relative to untuned's truth) hit the loader's limit: the knee
    /// is recorded there and marked loader-bound.
    loader_cap: Option<f64>,
}

fn row(rep: u32, arm: &str, log_cap: f64, cap: Option<f64>) -> Row {
    let name: ArmName = arm.parse().unwrap();
    let (value, bound) = match cap {
        Some(c) if log_cap > c => (c, true),
        _ => (log_cap, false),
    };
    Row {
        rep,
        arm: Some(name),
        mode: name.mode,
        proto: Proto::Http,
        req_per_s: Some(50_000.0 * value.exp()),
        observer: Some(Observer::Tracepoint),
        search: Some(Search {
            end: if bound {
                SearchEnd::LoaderBound
            } else {
                SearchEnd::Knee
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// One `--reps auto` run: repetitions with the arm order rotated, each looking at the
/// answer from the fifth on and dropping settled arms, until all settle or 20 are done.
fn sequential_run(truth: &Truth, rng: &mut Rng) -> RunDoc {
    let mut doc = RunDoc {
        cpus: 2,
        sequential: Some(Sequential {
            min: MIN,
            max: MAX,
            budget_s: 600.0,
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut drift = rng.normal() * DRIFT_SD;
    let mut open: Vec<&str> = ARMS.to_vec();
    for rep in 0..MAX {
        let n = open.len();
        for k in 0..n {
            let arm = open[(k + rep as usize) % n];
            drift = RHO * drift + (1.0 - RHO * RHO).sqrt() * DRIFT_SD * rng.normal();
            let truth_log = match ARMS.iter().position(|a| *a == arm).unwrap() {
                0 => 0.0,
                i => truth.ratios[i - 1].ln(),
            };
            let log_cap = truth_log + drift + OWN_SD * rng.normal();
            doc.runs.push(row(rep, arm, log_cap, truth.loader_cap));
        }
        if rep + 1 < MIN {
            continue;
        }
        let unsettled = decide::unsettled(&doc);
        if unsettled.is_empty() {
            break;
        }
        open.retain(|a| *a == "none" || unsettled.iter().any(|(u, _)| u.to_string() == *a));
    }
    doc
}

struct Tally {
    runs: usize,
    deployed: Vec<Option<String>>,
    /// Per steering arm, how often each verdict.
    better: [usize; 3],
    worse: [usize; 3],
    equivalent: [usize; 3],
    reps: Vec<u32>,
}

fn simulate(truth: &Truth, runs: usize, seed: u64) -> Tally {
    let mut rng = Rng::new(seed);
    let mut t = Tally {
        runs,
        deployed: vec![],
        better: [0; 3],
        worse: [0; 3],
        equivalent: [0; 3],
        reps: vec![],
    };
    for _ in 0..runs {
        let doc = sequential_run(truth, &mut rng);
        let r = recommend(&doc, Proto::Http);
        t.deployed.push(r.arm.map(|a| a.to_string()));
        t.reps.push(doc.reps());
        for j in &r.judged {
            let i = ARMS.iter().position(|a| *a == j.arm.to_string()).unwrap() - 1;
            match j.verdict {
                Verdict::Better => t.better[i] += 1,
                Verdict::Worse => t.worse[i] += 1,
                Verdict::Equivalent => t.equivalent[i] += 1,
                Verdict::Undecided { .. } => {}
            }
        }
    }
    t
}

fn share(n: usize, of: usize) -> f64 {
    n as f64 / of as f64
}

const RUNS: usize = 300;

#[test]
fn all_arms_equal_deploys_nothing_and_calls_no_arm_better_or_worse() {
    let t = simulate(
        &Truth {
            ratios: [1.0; 3],
            loader_cap: None,
        },
        RUNS,
        1,
    );
    let deployed = t.deployed.iter().filter(|d| d.is_some()).count();
    let wrong: usize = t.better.iter().chain(&t.worse).sum();
    eprintln!(
        "equal arms: deployed {deployed} of {RUNS}, {wrong} wrong verdicts, median reps {}",
        median(&t.reps)
    );
    assert!(share(deployed, t.runs) <= 0.05, "false deploys {deployed}");
    // The family error: any arm called better or worse when all are equal.
    assert!(share(wrong, t.runs) <= 0.05, "wrong verdicts {wrong}");
}

#[test]
fn a_loader_bound_mixed_in_deploys_nothing_false() {
    // Half a standard deviation above untuned's truth: about a third of loads hit it.
    let t = simulate(
        &Truth {
            ratios: [1.0; 3],
            loader_cap: Some(0.08),
        },
        RUNS,
        2,
    );
    let deployed = t.deployed.iter().filter(|d| d.is_some()).count();
    let wrong: usize = t.better.iter().chain(&t.worse).sum();
    eprintln!("equal arms, loader-bound mixed in: deployed {deployed}, {wrong} wrong verdicts");
    assert!(share(deployed, t.runs) <= 0.05, "false deploys {deployed}");
    assert!(share(wrong, t.runs) <= 0.05, "wrong verdicts {wrong}");
}

/// The power docs/experiment.md states, at this machine's spread and 20 repetitions at most:
/// a -15 % arm is called worse in at least 60 % of runs (measured: 68 %), a +20 % arm
/// deployed in at least 70 % (81 %). A +10 % one is too small to settle here within 20
/// (deployed in 3 %): it is said as undecided, never as "no difference".
#[test]
fn real_differences_are_found_at_the_power_the_docs_claim() {
    let t = simulate(
        &Truth {
            ratios: [1.10, 0.85, 1.20],
            loader_cap: None,
        },
        RUNS,
        3,
    );
    let deployed = |arm: &str| {
        t.deployed
            .iter()
            .filter(|d| d.as_deref() == Some(arm))
            .count()
    };
    let (p10, p20) = (deployed("rps"), deployed("cpumap-skb"));
    let worse15 = t.worse[1];
    eprintln!(
        "+10 %: deployed {p10} of {RUNS}; -15 %: worse {worse15}; +20 %: deployed {p20}; \
         median reps {}",
        median(&t.reps)
    );
    // Never the wrong way round.
    assert_eq!(t.worse[0] + t.worse[2] + t.better[1], 0);
    assert!(deployed("cpumap-drv") == 0);
    assert!(share(worse15, RUNS) >= 0.60, "-15 % worse in {worse15}");
    assert!(share(p20, RUNS) >= 0.70, "+20 % deployed in {p20}");
    assert!(p10 > 0, "+10 % never deployed");
    assert_eq!(
        t.equivalent, [0; 3],
        "a real difference called no difference"
    );
}

#[test]
fn three_fixed_repetitions_never_deploy() {
    let mut rng = Rng::new(4);
    for _ in 0..50 {
        let mut doc = RunDoc {
            cpus: 2,
            reps: 3,
            ..Default::default()
        };
        for rep in 0..3 {
            for (i, arm) in ARMS.iter().enumerate() {
                // A true +30 %: still too few repetitions to decide.
                let truth = if i == 0 { 0.0 } else { 0.3 };
                doc.runs
                    .push(row(rep, arm, truth + 0.05 * rng.normal(), None));
            }
        }
        let r = recommend(&doc, Proto::Http);
        assert_eq!(r.arm, None, "{}", r.verdict);
        assert!(r.verdict.starts_with("too few repetitions to decide"));
    }
}

fn median(v: &[u32]) -> u32 {
    let mut s = v.to_vec();
    s.sort();
    s[s.len() / 2]
}
