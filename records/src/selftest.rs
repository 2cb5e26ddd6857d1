//! `rxsteer selftest`'s result: each of rxsteer's figures beside the kernel's own count of the
//! same thing over the same span, the difference and the tolerance it was judged by. The
//! judging is here, once: a figure passes when it lies within its tolerance of the kernel's
//! span, fails when it does not, and is skipped (with why) when there is nothing to compare;
//! a skipped figure never counts as passed.
use serde::{Deserialize, Serialize};

use crate::names::names;

names! {
    /// What a check compares (its rxsteer figure against the kernel's count).
    Figure, "selftest figure" {
        /// NET_RX softirq runs per CPU (BPF softirq tracepoints) against /proc/softirqs.
        NetRxRuns = "net_rx_runs",
        /// Softirq time per CPU (every vector, BPF tracepoints) against /proc/stat's softirq
        /// column.
        SoftirqTime = "softirq_time",
        /// The observed interface's threaded-NAPI kthread time against each thread's own
        /// /proc/PID/schedstat, found by its name.
        NapiKthreadTime = "napi_kthread_time",
        /// The backlog NAPI kthreads' time (a kernel booted with thread_backlog_napi).
        BacklogKthreadTime = "backlog_kthread_time",
        /// Packets counted where the driver received against the interface's rx_packets
        /// (/proc/net/dev of its network namespace).
        Packets = "packets",
        /// The sampler's own read of the interface's rx_packets (sysfs) against /proc/net/dev.
        NicRxPackets = "nic_rx_packets",
        /// The interface's interrupts per CPU (/proc/interrupts) against the device's IRQs'
        /// /sys/kernel/irq/N/per_cpu_count.
        Interrupts = "interrupts",
        /// A program's runs (BPF statistics, as the sampler reports them) against the
        /// kernel's prog info, held on for the whole span.
        ProgramRuns = "program_runs",
        /// A program's run time, the same way.
        ProgramNs = "program_ns",
        /// A program's runs against its own count of what it ran on (softirq_entry: every
        /// softirq; the XDP observer: every packet).
        ProgramOwnCount = "program_own_count",
        /// cpumap's enqueued and processed frames against the cpumap tracepoints.
        Cpumap = "cpumap",
        /// Requests the loader was asked for against those it finished (answered or failed).
        LoaderSent = "loader_sent",
        /// Requests the loader saw answered against those the server counted.
        LoaderAnswered = "loader_answered",
    }
}

/// A check's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "verdict", content = "why")]
pub enum Verdict {
    Pass,
    Fail,
    /// Not compared: the reason (never counted as a pass).
    Skipped(String),
}

/// One figure beside the kernel's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub figure: Figure,
    /// The CPU (per-CPU figures), else None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<u32>,
    /// What more names it: the program, or the BPF statistics' mode of the span.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub of: String,
    pub unit: String,
    /// rxsteer's figure.
    pub rxsteer: f64,
    /// Where the reference was read: the kernel's own count (a /proc or sysfs file, the
    /// programs' prog info) or, for the loader, the server's.
    pub source: String,
    /// The reference's count over the span: at least `low`, at most `high` (the sampler's
    /// reads lie between two reads of the reference, one either side), `reference` their
    /// middle.
    pub reference_low: f64,
    pub reference_high: f64,
    pub reference: f64,
    /// rxsteer's figure less the reference's middle.
    pub difference: f64,
    /// How far from the middle still passes: half the span's width plus `allowed`.
    pub tolerance: f64,
    /// What the tolerance allows beyond the span's width, in words (e.g. "0.5 %").
    pub allowed: String,
    #[serde(flatten)]
    pub verdict: Verdict,
}

/// What a figure may differ by beyond the width of the kernel's span: a share of the kernel's
/// count, and a floor in the figure's unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allowance {
    pub relative: f64,
    pub absolute: f64,
}

impl Allowance {
    pub const fn share(relative: f64) -> Self {
        Self {
            relative,
            absolute: 0.0,
        }
    }

    pub const fn exact() -> Self {
        Self::share(0.0)
    }

    pub const fn with_floor(self, absolute: f64) -> Self {
        Self { absolute, ..self }
    }

    fn amount(&self, reference: f64) -> f64 {
        (self.relative * reference.abs()).max(self.absolute)
    }

    fn words(&self, unit: &str) -> String {
        let (r, a) = (self.relative, self.absolute);
        if r == 0.0 && a == 0.0 {
            "exact".into()
        } else if a == 0.0 {
            format!("{} %", percent(r))
        } else if r == 0.0 {
            format!("{} {unit}", amount(a))
        } else {
            format!("{} % or {} {unit}", percent(r), amount(a))
        }
    }
}

/// A share as a percentage, to two significant places at most (0.5, 1, 9.9, 34).
fn percent(share: f64) -> String {
    let p = share * 100.0;
    let s = if p >= 10.0 {
        format!("{p:.0}")
    } else {
        format!("{p:.1}")
    };
    s.trim_end_matches(".0").to_string()
}

fn amount(a: f64) -> String {
    if a >= 1.0 {
        format!("{a:.0}")
    } else {
        format!("{a:.2}")
    }
}

/// What a check is about, before it is judged.
#[derive(Clone, Debug, PartialEq)]
pub struct Subject {
    pub figure: Figure,
    pub cpu: Option<u32>,
    pub of: String,
    pub unit: &'static str,
    pub source: &'static str,
}

impl Subject {
    pub fn new(figure: Figure, unit: &'static str, source: &'static str) -> Self {
        Self {
            figure,
            cpu: None,
            of: String::new(),
            unit,
            source,
        }
    }

    pub fn on_cpu(self, cpu: u32) -> Self {
        Self {
            cpu: Some(cpu),
            ..self
        }
    }

    pub fn of(self, of: impl Into<String>) -> Self {
        Self {
            of: of.into(),
            ..self
        }
    }

    /// Judges `rxsteer` against the reference's span [`low`, `high`]. Where neither counted
    /// anything, there is nothing to judge: skipped, not passed.
    pub fn judge(self, rxsteer: f64, low: f64, high: f64, allowed: Allowance) -> Check {
        let (low, high) = (low.min(high), low.max(high));
        if rxsteer == 0.0 && high == 0.0 {
            return self.skipped("neither counted any in the span (no traffic of this kind)");
        }
        let reference = (low + high) / 2.0;
        let difference = rxsteer - reference;
        let tolerance = (high - low) / 2.0 + allowed.amount(reference);
        let verdict = if difference.abs() <= tolerance {
            Verdict::Pass
        } else {
            Verdict::Fail
        };
        Check {
            figure: self.figure,
            cpu: self.cpu,
            of: self.of,
            unit: self.unit.into(),
            rxsteer,
            source: self.source.into(),
            reference_low: low,
            reference_high: high,
            reference,
            difference,
            tolerance,
            allowed: allowed.words(self.unit),
            verdict,
        }
    }

    /// Both figures shown, their difference too, but not judged: no tolerance can be stated
    /// (`why` says which bias or tail). Never counted as a pass.
    pub fn shown(self, rxsteer: f64, low: f64, high: f64, why: impl Into<String>) -> Check {
        let (low, high) = (low.min(high), low.max(high));
        let reference = (low + high) / 2.0;
        Check {
            rxsteer,
            reference_low: low,
            reference_high: high,
            reference,
            difference: rxsteer - reference,
            ..self.skipped(why)
        }
    }

    /// Not compared, and why.
    pub fn skipped(self, why: impl Into<String>) -> Check {
        Check {
            figure: self.figure,
            cpu: self.cpu,
            of: self.of,
            unit: self.unit.into(),
            rxsteer: 0.0,
            source: self.source.into(),
            reference_low: 0.0,
            reference_high: 0.0,
            reference: 0.0,
            difference: 0.0,
            tolerance: 0.0,
            allowed: String::new(),
            verdict: Verdict::Skipped(why.into()),
        }
    }
}

impl Check {
    /// Not judged, but both figures are there to read (see `Subject::shown`).
    pub fn is_shown(&self) -> bool {
        matches!(self.verdict, Verdict::Skipped(_))
            && (self.rxsteer != 0.0 || self.reference_high != 0.0)
    }

    /// The difference as a share of the reference (None where it counted none).
    pub fn difference_share(&self) -> Option<f64> {
        (self.reference != 0.0).then(|| self.difference / self.reference)
    }
}

/// Where the self-check ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "on")]
pub enum Place {
    /// The embedded lab, under a paced load of rxsteer's own.
    Lab {
        requests: u64,
        rate_per_s: f64,
        connections: u32,
    },
    /// An interface of this host, watched only.
    Iface { name: String },
}

/// The whole self-check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SelftestReport {
    pub place: Place,
    /// The observed interface (the lab's server veth, or the one asked for).
    pub iface: String,
    pub kernel: String,
    pub online_cpus: usize,
    /// Seconds each span was sampled, and the sampling interval.
    pub span_s: f64,
    pub interval_s: f64,
    /// Where the machine was too loaded to time and the check ran anyway (--force).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded: Option<String>,
    /// A figure multiplied on purpose (--skew), so the tests see a failing check fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skewed: Option<String>,
    pub checks: Vec<Check>,
}

impl SelftestReport {
    pub fn failed(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Fail)
    }

    pub fn passed(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.verdict == Verdict::Pass)
            .count()
    }

    pub fn skipped(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| matches!(c.verdict, Verdict::Skipped(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_inside_the_span_and_its_allowance_passes_and_one_outside_fails() {
        let s = || Subject::new(Figure::Packets, "packets", "/proc/net/dev");
        // The kernel counted 1000..1010 over the span: the middle 1005, half-width 5.
        let c = s().judge(1015.0, 1000.0, 1010.0, Allowance::share(0.01));
        assert_eq!(c.reference, 1005.0);
        assert_eq!(c.difference, 10.0);
        assert!((c.tolerance - 15.05).abs() < 1e-9, "{}", c.tolerance);
        assert_eq!(c.verdict, Verdict::Pass);
        assert_eq!(c.allowed, "1 %");
        let c = s().judge(1021.0, 1000.0, 1010.0, Allowance::share(0.01));
        assert_eq!(c.verdict, Verdict::Fail);
        // Exact: only the span's width.
        let c = s().judge(1011.0, 1000.0, 1010.0, Allowance::exact());
        assert_eq!((c.verdict, c.allowed.as_str()), (Verdict::Fail, "exact"));
        // A floor where the count is small.
        let c = s().judge(3.0, 0.0, 0.0, Allowance::share(0.005).with_floor(3.0));
        assert_eq!(c.verdict, Verdict::Pass);
        assert_eq!(c.allowed, "0.5 % or 3 packets");
        // Nothing on either side: nothing judged.
        let c = s().judge(0.0, 0.0, 0.0, Allowance::exact());
        assert!(matches!(c.verdict, Verdict::Skipped(_)), "{c:?}");
    }

    #[test]
    fn a_shown_check_carries_both_figures_and_is_never_judged() {
        let s = Subject::new(Figure::SoftirqTime, "ms", "/proc/stat softirq");
        let c = s.shown(297.0, 590.0, 600.0, "tick-sampled");
        assert_eq!(
            (c.rxsteer, c.reference, c.difference),
            (297.0, 595.0, -298.0)
        );
        assert_eq!(c.verdict, Verdict::Skipped("tick-sampled".into()));
        assert!(c.is_shown());
        let plain = Subject::new(Figure::Cpumap, "frames", "x").skipped("none");
        assert!(!plain.is_shown());
    }

    #[test]
    fn a_skipped_check_is_neither_passed_nor_failed_and_says_why() {
        let r = SelftestReport {
            place: Place::Iface {
                name: "eth0".into(),
            },
            iface: "eth0".into(),
            kernel: "6.1".into(),
            online_cpus: 2,
            span_s: 3.0,
            interval_s: 1.0,
            loaded: None,
            skewed: None,
            checks: vec![
                Subject::new(Figure::Interrupts, "interrupts", "per_cpu_count")
                    .skipped("veth raises none"),
                Subject::new(Figure::Packets, "packets", "/proc/net/dev").judge(
                    1.0,
                    1.0,
                    1.0,
                    Allowance::exact(),
                ),
                Subject::new(Figure::NetRxRuns, "runs", "/proc/softirqs")
                    .on_cpu(1)
                    .judge(9.0, 1.0, 1.0, Allowance::exact()),
            ],
        };
        assert_eq!((r.passed(), r.skipped(), r.failed().count()), (1, 1, 1));
        let text = serde_json::to_string(&r).unwrap();
        assert!(
            text.contains(r#""verdict":"skipped","why":"veth raises none""#),
            "{text}"
        );
        let back: SelftestReport = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }
}
