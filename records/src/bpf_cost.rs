//! What rxsteer's own BPF programs cost, from the kernel's statistics: while a sampler runs it
//! holds `BPF_ENABLE_STATS` (a global switch the kernel turns off again when the last holder's
//! descriptor closes), and each program's `run_cnt` and `run_time_ns` say how often it ran and
//! for how long (bpftop's figure). Per interval in a sample line, summed over a load in run.json.
use serde::{Deserialize, Serialize};

/// The kernel's figures for one program over an interval or a load.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramRuns {
    /// As the kernel keeps it (15 characters at most).
    pub name: String,
    pub runs: u64,
    pub ns: u64,
}

/// The programs' figures, or why there are none. Never zeros in place of a figure the kernel
/// did not give.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BpfRuns {
    /// Every program that ran in the interval (one that did not is left out).
    Measured(Vec<ProgramRuns>),
    /// The kernel keeps no run-time statistics here (before 5.8, or refused): the reason.
    Unavailable(String),
}

impl BpfRuns {
    /// The figures of several intervals added up; unavailable if any interval was.
    pub fn sum<'a>(intervals: impl IntoIterator<Item = &'a BpfRuns>) -> Option<BpfRuns> {
        let mut total: Vec<ProgramRuns> = Vec::new();
        let mut any = false;
        for i in intervals {
            any = true;
            match i {
                BpfRuns::Unavailable(why) => return Some(BpfRuns::Unavailable(why.clone())),
                BpfRuns::Measured(v) => {
                    for p in v {
                        match total.iter_mut().find(|t| t.name == p.name) {
                            Some(t) => {
                                t.runs += p.runs;
                                t.ns += p.ns;
                            }
                            None => total.push(p.clone()),
                        }
                    }
                }
            }
        }
        total.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
        any.then_some(BpfRuns::Measured(total))
    }
}

/// One program over a load: how often it ran and what one run cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramCost {
    pub name: String,
    pub runs_per_s: f64,
    pub ns_per_run: f64,
}

/// Every program of the observer (and of the steering, where an arm steers with XDP) over a
/// load: run.json `runs[].bpf`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BpfCost {
    /// Costliest first.
    pub programs: Vec<ProgramCost>,
    /// All programs' run time per packet the interface received (None: no packet counted).
    pub ns_per_packet: Option<f64>,
    /// All programs' run time as a share of one CPU (0.01 = 1 %).
    pub cpu_share: f64,
    /// The share of the window the statistics were on (`--bpf-stats sampled`: about 0.1),
    /// the figures above being scaled from it. Absent: on throughout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats_on: Option<f64>,
}

/// run.json `runs[].bpf`: the cost, or why it is unknown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BpfCostOf {
    Measured(BpfCost),
    Unavailable(String),
}

impl BpfCost {
    /// The cost of `runs` over `seconds`, in which the interface received `packets`.
    pub fn of(runs: &[ProgramRuns], seconds: f64, packets: u64) -> Self {
        let seconds = seconds.max(1e-9);
        let ns: u64 = runs.iter().map(|p| p.ns).sum();
        Self {
            programs: runs
                .iter()
                .map(|p| ProgramCost {
                    name: p.name.clone(),
                    runs_per_s: round(p.runs as f64 / seconds, 1),
                    ns_per_run: round(p.ns as f64 / p.runs.max(1) as f64, 1),
                })
                .collect(),
            ns_per_packet: (packets > 0).then(|| round(ns as f64 / packets as f64, 1)),
            cpu_share: round(ns as f64 / (seconds * 1e9), 5),
            stats_on: None,
        }
    }

    /// "observer: 85 ns per packet, 0.41 % of one CPU".
    pub fn line(&self) -> String {
        format!(
            "observer: {} per packet, {:.2} % of one CPU",
            self.ns_per_packet
                .map_or("- ns".to_string(), |n| format!("{n:.0} ns")),
            self.cpu_share * 100.0
        )
    }
}

impl BpfCostOf {
    /// The cost of a load from its intervals' figures (None: no BPF program was loaded).
    pub fn of<'a>(
        intervals: impl IntoIterator<Item = &'a BpfRuns>,
        seconds: f64,
        packets: u64,
    ) -> Option<Self> {
        Some(match BpfRuns::sum(intervals)? {
            BpfRuns::Measured(v) => BpfCostOf::Measured(BpfCost::of(&v, seconds, packets)),
            BpfRuns::Unavailable(why) => BpfCostOf::Unavailable(why),
        })
    }

    /// The one line a user reads: the cost, or that it is unknown and why.
    pub fn line(&self) -> String {
        match self {
            BpfCostOf::Measured(c) => c.line(),
            BpfCostOf::Unavailable(why) => format!("observer: cost unavailable ({why})"),
        }
    }
}

fn round(v: f64, digits: i32) -> f64 {
    let k = 10f64.powi(digits);
    (v * k).round() / k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(name: &str, runs: u64, ns: u64) -> ProgramRuns {
        ProgramRuns {
            name: name.into(),
            runs,
            ns,
        }
    }

    #[test]
    fn intervals_add_up_per_program_and_the_cost_is_per_run_packet_and_cpu() {
        let a = BpfRuns::Measured(vec![
            runs("tc_ingress", 100, 5_000),
            runs("rx_driver_poll", 10, 3_000),
        ]);
        let b = BpfRuns::Measured(vec![runs("tc_ingress", 300, 15_000)]);
        let cost = BpfCostOf::of([&a, &b], 2.0, 400).unwrap();
        let BpfCostOf::Measured(c) = &cost else {
            panic!("{cost:?}")
        };
        assert_eq!(c.programs[0].name, "tc_ingress");
        assert_eq!(
            (c.programs[0].runs_per_s, c.programs[0].ns_per_run),
            (200.0, 50.0)
        );
        assert_eq!(
            (c.programs[1].runs_per_s, c.programs[1].ns_per_run),
            (5.0, 300.0)
        );
        assert_eq!(c.ns_per_packet, Some(57.5));
        assert_eq!(c.cpu_share, 0.00001);
        assert_eq!(cost.line(), "observer: 58 ns per packet, 0.00 % of one CPU");
        let json = serde_json::to_value(&cost).unwrap();
        assert!(json["measured"]["programs"].is_array(), "{json}");
        assert_eq!(serde_json::from_value::<BpfCostOf>(json).unwrap(), cost);
    }

    #[test]
    fn unavailable_is_said_never_zero_and_no_bpf_is_none() {
        let a = BpfRuns::Measured(vec![runs("tc_ingress", 1, 1)]);
        let u = BpfRuns::Unavailable("no BPF_ENABLE_STATS before 5.8".into());
        let cost = BpfCostOf::of([&a, &u], 1.0, 1).unwrap();
        assert_eq!(
            cost.line(),
            "observer: cost unavailable (no BPF_ENABLE_STATS before 5.8)"
        );
        assert_eq!(BpfCostOf::of([], 1.0, 1), None);
    }
}
