//! A comparison's `run.json`: the document, its rows (one per load), where it ran, and the
//! figures derived from rows (arms, ratio to untuned, spreads). Runs stored by older versions
//! read through the same types: every field added since has a default, and
//! [`RunDoc::roles`] finds the roles where the first runs kept them.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::{
    breakdown::{TimeSplit, Verdict},
    names::{LoaderIo, Observer, Proto, Scenario, ServerIo, XdpMode, XdpModeChoice},
    sample::TcAttached,
    steering::Mode,
};

/// Which CPU does what in the lab.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Roles {
    /// Runs the server veth's NAPI thread: the stand-in for the NIC's interrupt core.
    pub rx_cpu: u32,
    pub server_cpus: Vec<u32>,
    pub loader_cpus: Vec<u32>,
}

impl Roles {
    /// CPUs steering may move receive work to: server CPUs other than the receive core.
    pub fn steer_targets(&self) -> Vec<u32> {
        self.server_cpus
            .iter()
            .copied()
            .filter(|&c| c != self.rx_cpu)
            .collect()
    }
}

/// The lab's offload and NAPI settings, stored with every run (`setup.lab`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabSettings {
    pub server_gro: bool,
    pub server_tso: bool,
    pub server_napi_threaded: bool,
    pub server_napi_cpu: u32,
    pub loader_tx_checksum: bool,
    pub loader_gro: bool,
    pub loader_napi_threaded: bool,
    pub loader_napi_cpus: Vec<u32>,
    /// Both veths transmit through a pfifo of this many frames (backpressure, not drops).
    pub tx_qdisc_pfifo: u32,
    /// How the loader's frames reach the server veth. Absent in runs before it, which kept
    /// the sender's hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<LabFrames>,
}

/// Whether the lab's frames arrive with a flow hash: a veth hands its peer the hash the
/// sender's socket gave each packet, a NIC without RXHASH (r8169, e1000) gives none.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabFrames {
    /// The loader's veth drops the sender's hash (tc egress `lab_unhash`): RPS dissects every
    /// frame on the receiving CPU, as behind a NIC without RXHASH.
    Unhashed,
    /// The frames kept the sender's hash: RPS took it for free, and no flow dissector was
    /// asked. Why the loader's veth could not drop it.
    SenderHash { why: String },
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SiteKind {
    /// The embedded veth lab.
    #[default]
    Lab,
    /// A real interface of this host.
    Iface,
}

/// The interface's driver and GRO state, as ethtool said.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nic {
    pub driver: Option<String>,
    pub gro: Option<String>,
}

/// Where the run ran.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Setup {
    pub kind: SiteKind,
    pub iface: String,
    /// The lab's roles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Roles>,
    /// The lab's settings (absent from labs before the replies were received loader-side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lab: Option<LabSettings>,
    /// A real interface's server CPUs and loader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpus: Option<Vec<u32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader: Option<String>,
    pub steer_targets: Vec<u32>,
    /// cpumap ring size, frames per CPU.
    pub qsize: u32,
    #[serde(default)]
    pub nic: Nic,
    /// The kernel ran every CPU's backlog in `backlog_napi/N` kthreads (booted with
    /// `thread_backlog_napi`, or PREEMPT_RT), so RPS's steered packets were processed there
    /// rather than in NET_RX softirq. A property of the boot, not of an arm: every arm of the
    /// run had it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backlog_threads: bool,
    /// The one queue's levers as found before the first arm, and as left after the last (the
    /// host as found: the same). Absent from runs before they were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levers: Option<crate::levers::LeversRead>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levers_after: Option<crate::levers::LeversRead>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Build {
    pub version: String,
    pub git: String,
    /// A hash of the sources the embedded kernel programs were built from (`ebpf/`, the
    /// shared types): which program the run loaded. Absent in runs before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ebpf_sources: Option<String>,
}

/// What sysfs says of one CPU's kind: arm64's `cpu_capacity` (1024 = the biggest core), its
/// cluster, its top frequency, and on x86 hybrid parts the PMU it belongs to (`core`, `atom`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuInfo {
    pub cpu: u32,
    pub capacity: Option<u32>,
    pub cluster: Option<i64>,
    pub max_khz: Option<u64>,
    pub core_type: Option<String>,
}

impl CpuInfo {
    /// How much work the core does, to rank cores by: capacity where the kernel gives it,
    /// else the x86 core type, else the top frequency.
    pub fn rank(&self) -> (u32, u64) {
        let capacity = self.capacity.unwrap_or(match self.core_type.as_deref() {
            Some("atom") => 512,
            _ => 1024,
        });
        (capacity, self.max_khz.unwrap_or(0))
    }
}

/// A core's kind on a machine with two (big/little, performance/efficiency).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoreKind {
    Performance,
    Efficiency,
}

impl CoreKind {
    /// One letter for a row label.
    pub fn letter(self) -> char {
        match self {
            CoreKind::Performance => 'P',
            CoreKind::Efficiency => 'E',
        }
    }
}

/// Each CPU's kind when they are not all alike: the top rank is Performance, the rest
/// Efficiency. Empty on a machine of one kind (or where sysfs says nothing).
pub fn core_kinds(cpus: &[CpuInfo]) -> BTreeMap<u32, CoreKind> {
    let top = cpus.iter().map(CpuInfo::rank).max();
    if cpus.iter().all(|c| Some(c.rank()) == top) {
        return BTreeMap::new();
    }
    cpus.iter()
        .map(|c| {
            let kind = if Some(c.rank()) == top {
                CoreKind::Performance
            } else {
                CoreKind::Efficiency
            };
            (c.cpu, kind)
        })
        .collect()
}

/// The machine as the run found it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub kernel: String,
    pub hostname: String,
    pub cpu_model: Option<String>,
    pub rxsteer: Build,
    pub arch: String,
    pub online_cpus: usize,
    /// 1, 5 and 15 minutes.
    pub loadavg: Vec<f64>,
    pub at: String,
    /// Each online CPU's kind as sysfs gives it (absent from runs before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_kinds: Vec<CpuInfo>,
}

impl Environment {
    /// "the 1-minute load average is ..." when it is above half the CPUs: a machine too busy
    /// to time on.
    pub fn busy(&self) -> Option<String> {
        let load = *self.loadavg.first()?;
        let cpus = self.online_cpus as f64;
        (self.online_cpus > 0 && load > cpus / 2.0)
            .then(|| format!("the 1-minute load average is {load:.2} on {cpus} CPUs"))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environments {
    pub before: Environment,
    pub after: Environment,
}

/// One load: an arm, a protocol, a repetition. A figure an older version did not store reads
/// as absent (`None`, empty, 0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Row {
    pub rep: u32,
    /// The arm's name (`cpumap`, `cpumap-skb`, `cpumap-skb-plain`); runs before arms existed
    /// have only the mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<ArmName>,
    pub mode: Mode,
    #[serde(default)]
    pub proto: Proto,
    /// The XDP mode that ran, and the one asked for.
    #[serde(default)]
    pub xdp_mode: Option<XdpMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_mode_asked: Option<XdpModeChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_frags: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tc: Option<TcAttached>,
    /// `--observe`: what was watched. Absent from runs before levels (everything was) and
    /// from the no-BPF arm.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<crate::ObserveLevel>,
    /// What counted where the driver received. Absent from runs before observers were named:
    /// every arm of those carried the observe-only XDP program.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<Observer>,
    /// What the kernel showed while the load ran (read, not assumed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached: Option<Attached>,
    /// None for an external load (observed, not measured here).
    pub req_per_s: Option<f64>,
    #[serde(default)]
    pub loaders: Option<u32>,
    #[serde(default)]
    pub requests: Option<u64>,
    /// Mean latency: with the connections, what a closed loop allows (Little's law).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
    #[serde(default)]
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    #[serde(default)]
    pub p999_us: Option<u64>,
    #[serde(default)]
    pub max_us: Option<u64>,
    #[serde(default)]
    pub errors: Option<BTreeMap<String, u64>>,
    #[serde(default)]
    pub error_total: u64,
    #[serde(default)]
    pub client_allocs_per_request: Option<f64>,
    #[serde(default)]
    pub measured_s: f64,
    /// Per CPU, ms per second of the measured window (see `CpuSample::receive_ns`).
    pub receive_ms_per_s: Vec<f64>,
    #[serde(default)]
    pub net_rx_ms_per_s: Vec<f64>,
    #[serde(default)]
    pub kthread_ms_per_s: Vec<f64>,
    #[serde(default)]
    pub packets_per_s: Vec<f64>,
    #[serde(default)]
    pub cpumap_arrived_per_s: Vec<f64>,
    #[serde(default)]
    pub imbalance: f64,
    /// tc ingress and egress per CPU: only when tc ran.
    #[serde(default)]
    pub stack_packets_per_s: Option<Vec<f64>>,
    #[serde(default)]
    pub tx_packets_per_s: Option<Vec<f64>>,
    /// Frames the interface itself counted (`rx_packets`) per second: on a real NIC the frames
    /// off the wire, before GRO; on veth the skbs its peer sent (GSO-sized). Absent from runs
    /// before it was read, and where the interface could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_rx_packets_per_s: Option<f64>,
    /// Interrupts the interface raised per second, per CPU (/proc/interrupts). Absent from runs
    /// before it was read; all 0 where the interface raises none (veth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_irqs_per_s: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loader_napi_ms_per_s: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_ms_per_s: Option<Vec<TimeSplit>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default)]
    pub redirect_err: u64,
    #[serde(default)]
    pub enqueue_drops: u64,
    #[serde(default)]
    pub cpumap_drops: u64,
    #[serde(default)]
    pub softnet_dropped: u64,
    /// What the interface itself lost over the measured window (its ring full, its FIFO
    /// overrun), by counter: packets no CPU saw, so in no figure above. Absent from runs
    /// before it was read, and where the interface could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_drops: Option<crate::sample::NicDrops>,
    /// NET_RX's runs by length and (at `--observe full`) its waits, per CPU, over the measured
    /// window. Absent from runs before they were counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub net_rx_log2: Option<crate::log2::NetRxLog2>,
    /// The one queue's levers as they read at the end of the load, the arm in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levers: Option<crate::levers::LeversRead>,
    #[serde(default)]
    pub steer_fallback: u64,
    /// The capacity search, when the load was one (the default since it existed): the row's
    /// figures are then those of its knee step, and its verdict that of the lowest rate the
    /// arm did not sustain. Absent: one closed-loop or fixed-rate load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::search::Search>,
    /// An interleaved window (`--interleave`): how long the switch into this arm took under
    /// the running load, from the previous arm's end to this one in place and checked, ms.
    /// Absent: the load had its own server and load generator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_ms: Option<f64>,
    /// An interleaved window: the span of the cycle's live lines it holds, in the load's own
    /// seconds (`t_s` of the line before its first, `t_s` of its last), so the stored live
    /// file shows what was measured and what settled around it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_at: Option<[f64; 2]>,
    /// Why the load ended without figures: its loader failed (the server errored, closed
    /// every connection or fell over). Its req/s and latency are absent, no ratio is taken
    /// from it, and the run went on with the other loads. Absent: the load ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// What rxsteer's own BPF programs cost over the measured window, from the kernel's
    /// statistics (or why unknown). Absent: no BPF program loaded (the no-BPF arm), or a run
    /// from before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bpf: Option<crate::bpf_cost::BpfCostOf>,
}

/// What was attached while a load ran, as the kernel listed it then.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attached {
    /// The XDP attachment `ip -d link` showed on the interface (`xdp`, `xdpgeneric`), if any.
    pub xdp: Option<String>,
    /// rxsteer's BPF programs loaded in the kernel (names as the kernel keeps them, 15
    /// characters at most).
    pub programs: Vec<String>,
}

/// The arm with no BPF program at all: untuned, CPU time from /proc only. Every comparison
/// runs it, so the observer's own cost is measured in the same run.
pub const NO_BPF_ARM: ArmName = ArmName {
    mode: Mode::baseline(),
    variant: Variant {
        no_bpf: true,
        xdp: None,
        frags: None,
    },
};

impl Row {
    /// Each per-CPU list's name and length (see [`RunDoc::check_bounds`]).
    pub fn per_cpu_lengths(&self) -> [(&'static str, usize); 10] {
        let opt = |v: &Option<Vec<f64>>| v.as_ref().map_or(0, Vec::len);
        [
            ("receive_ms_per_s", self.receive_ms_per_s.len()),
            ("net_rx_ms_per_s", self.net_rx_ms_per_s.len()),
            ("kthread_ms_per_s", self.kthread_ms_per_s.len()),
            ("packets_per_s", self.packets_per_s.len()),
            ("cpumap_arrived_per_s", self.cpumap_arrived_per_s.len()),
            ("stack_packets_per_s", opt(&self.stack_packets_per_s)),
            ("tx_packets_per_s", opt(&self.tx_packets_per_s)),
            ("nic_irqs_per_s", opt(&self.nic_irqs_per_s)),
            ("loader_napi_ms_per_s", self.loader_napi_ms_per_s.len()),
            (
                "time_ms_per_s",
                self.time_ms_per_s.as_ref().map_or(0, Vec::len),
            ),
        ]
    }

    /// Marks the load failed: its req/s and latency are not figures, the reason stands.
    pub fn fail(&mut self, why: String) {
        self.req_per_s = None;
        self.p50_us = None;
        self.p99_us = None;
        self.p999_us = None;
        self.failed = Some(why);
    }

    /// The row's arm (runs before arms existed have only the mode).
    pub fn arm(&self) -> ArmName {
        self.arm.unwrap_or(ArmName::of(self.mode))
    }
}

/// How unevenly receive work was spread: the busiest CPU over the mean (1.0 = even; N = all
/// of it on one of N CPUs; 0 = none at all). Rounded to 0.01.
pub fn imbalance(receive: &[f64]) -> f64 {
    let max = receive.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return 0.0;
    }
    let mean = receive.iter().sum::<f64>() / receive.len() as f64;
    (max / mean * 100.0).round() / 100.0
}

/// What an arm varied besides its steering mode: no BPF at all, the XDP mode, the frags
/// choice. Written after the mode, each part after a `-`: `skb`, `skb-plain`, `nobpf`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant {
    pub no_bpf: bool,
    pub xdp: Option<XdpMode>,
    /// Some(true): the frags-aware programs (`frags`); Some(false): the plain ones (`plain`).
    pub frags: Option<bool>,
}

impl Variant {
    fn parts(&self) -> Vec<&'static str> {
        let mut p = Vec::new();
        if self.no_bpf {
            p.push("nobpf");
        }
        if let Some(x) = self.xdp {
            p.push(x.as_str());
        }
        if let Some(f) = self.frags {
            p.push(if f { "frags" } else { "plain" });
        }
        p
    }

    pub fn is_empty(&self) -> bool {
        *self == Variant::default()
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.parts().join("-"))
    }
}

/// An arm: its steering mode and what else the run varied. In files and file names as
/// `cpumap`, `cpumap-skb`, `cpumap-skb-plain`, `none-nobpf`; a name whose mode or variant is
/// unknown is an error naming it, never a guess.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArmName {
    pub mode: Mode,
    pub variant: Variant,
}

impl ArmName {
    /// The untuned baseline arm with its observer and nothing else varied (plain `none`).
    pub const UNTUNED: ArmName = ArmName::of(Mode::baseline());

    /// The arm of `mode` alone, with nothing else varied.
    pub const fn of(mode: Mode) -> Self {
        Self {
            mode,
            variant: Variant {
                no_bpf: false,
                xdp: None,
                frags: None,
            },
        }
    }

    /// As a reader sees it: "XDP cpumap (skb)", "untuned (no BPF)".
    pub fn label(&self) -> String {
        if *self == NO_BPF_ARM {
            return "untuned (no BPF)".into();
        }
        if self.variant.is_empty() {
            self.mode.label().to_string()
        } else {
            format!("{} ({})", self.mode.label(), self.variant)
        }
    }

    /// The untuned arm of the same variant (`none-skb` for `cpumap-skb`): what runs before
    /// observers were named took every ratio against. The no-BPF arm's is plain `none`.
    pub fn untuned_peer(&self) -> Self {
        if *self == NO_BPF_ARM {
            return Self::UNTUNED;
        }
        Self {
            mode: Mode::baseline(),
            variant: self.variant,
        }
    }
}

impl std::fmt::Display for ArmName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.variant.is_empty() {
            f.write_str(self.mode.as_str())
        } else {
            write!(f, "{}-{}", self.mode, self.variant)
        }
    }
}

/// A part of an arm's name that is no known variant.
#[derive(Debug)]
pub struct UnknownArm(String);

impl std::fmt::Display for UnknownArm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnknownArm {}

impl std::str::FromStr for ArmName {
    type Err = UnknownArm;

    fn from_str(s: &str) -> Result<Self, UnknownArm> {
        // A mode's name may hold a dash itself (`napi-thread`): the longest one that starts
        // the arm's name is its mode.
        let named = |m: &&Mode| {
            s.strip_prefix(m.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
        };
        let Some(&mode) = Mode::ALL
            .iter()
            .filter(named)
            .max_by_key(|m| m.as_str().len())
        else {
            let first = s.split('-').next().unwrap_or_default();
            let why = first
                .parse::<Mode>()
                .err()
                .map_or_else(|| format!("{s:?} is not an arm's name"), |e| e.to_string());
            return Err(UnknownArm(why));
        };
        let rest = &s[mode.as_str().len()..];
        let mut variant = Variant::default();
        for p in rest.split('-').filter(|p| !p.is_empty()) {
            match p {
                "nobpf" => variant.no_bpf = true,
                "frags" => variant.frags = Some(true),
                "plain" => variant.frags = Some(false),
                x => {
                    variant.xdp = Some(x.parse().map_err(|_| {
                        UnknownArm(format!(
                            "{p:?} in arm {s:?} is not a variant: expected nobpf, drv, skb, frags or plain"
                        ))
                    })?)
                }
            }
        }
        let arm = Self { mode, variant };
        // The spelling is the name's: one way to write each arm.
        if arm.to_string() != s {
            return Err(UnknownArm(format!(
                "{s:?} is not an arm's name (it reads as {arm})"
            )));
        }
        Ok(arm)
    }
}

impl Serialize for ArmName {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ArmName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The untuned arm an arm's ratio is taken against in `rows`: the one of its variant where
/// the run has it (an XDP-observed untuned, as older runs and `--observer xdp` store), else
/// plain `none`, the untuned arm that carries no XDP program.
pub fn base_arm_in(rows: &[Row], arm: ArmName) -> ArmName {
    base_arm_where(arm, |a| rows.iter().any(|r| r.arm() == a))
}

/// [`base_arm_in`] over any list of arms: `present` says whether an arm is in it.
pub fn base_arm_where(arm: ArmName, present: impl Fn(ArmName) -> bool) -> ArmName {
    let variant = arm.untuned_peer();
    if present(variant) {
        variant
    } else {
        ArmName::UNTUNED
    }
}

/// The document. What an older version did not store reads as absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunDoc {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<Setup>,
    pub cpus: usize,
    #[serde(default)]
    pub steer: Vec<Mode>,
    #[serde(default)]
    pub arms: Vec<ArmName>,
    /// `--xdp-mode` and `--xdp-frags` as asked (auto, drv, skb, both; auto, on, off, both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_frags: Option<String>,
    /// `--observer` as asked (auto, tracepoint, xdp, all); each row names what ran. Absent
    /// from runs before observers were named (their untuned and RPS arms carried XDP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<String>,
    /// `--observe`: what the observed arms watched (absent from runs before levels, which
    /// watched everything; see [`crate::ObserveLevel::of_record`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<crate::ObserveLevel>,
    #[serde(default)]
    pub body_size: Option<u32>,
    /// Open loop at this many requests per second per load (`--rate`); absent (and no
    /// `search`): closed loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Every load was a capacity search with these settings (each row has its steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::search::Asked>,
    #[serde(default)]
    pub protos: Vec<Proto>,
    #[serde(default)]
    pub scenario: Scenario,
    pub seconds: f64,
    #[serde(default)]
    pub warmup_s: Option<f64>,
    pub connections: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loader_io: Option<LoaderIo>,
    /// The server's engine; runs before it existed used epoll.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_io: Option<ServerIo>,
    #[serde(default)]
    pub reps: u32,
    /// `--reps auto`: the looks the verdicts' level was derived for, and why the run
    /// stopped. Absent: a fixed count, looked at once at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<crate::reps::Sequential>,
    /// `--interleave`: every arm switched in place under one continuous load per protocol
    /// and repetition. Absent: one arm per load, each with its own server and load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<crate::reps::Interleaved>,
    /// `--confidence` where it was not the default 0.95.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Why the run ended before its plan (Ctrl-C, SIGTERM): its figures are what it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    pub caveat: Option<String>,
    /// Why the machine was not quiet, when the run went ahead anyway (--force).
    #[serde(default)]
    pub loaded_machine: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environments>,
    /// Where the first runs kept the lab's roles (later: `setup.roles`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roles: Option<Roles>,
    /// Arms asked for and not run here, each with why (a need of its mode this place lacks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<NotRun>,
    pub runs: Vec<Row>,
}

/// An arm a comparison was asked for and did not run, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotRun {
    pub arm: ArmName,
    pub why: String,
}

/// The most CPUs a Linux machine can have (CONFIG_NR_CPUS is at most 8192): a stored CPU count
/// or CPU id past it is a damaged or crafted file, not a machine.
pub const MAX_CPUS: usize = 8192;

impl RunDoc {
    /// What a stored file must hold before anything is sized by it: a CPU count, CPU ids and
    /// per-CPU lists within [`MAX_CPUS`]. The error names the field, as a parse error does.
    pub fn check_bounds(&self) -> Result<(), String> {
        if self.cpus > MAX_CPUS {
            return Err(format!(
                "cpus: {} is more CPUs than Linux has (at most {MAX_CPUS})",
                self.cpus
            ));
        }
        if let Some(r) = self.roles() {
            let ids = r
                .server_cpus
                .iter()
                .chain(&r.loader_cpus)
                .chain([&r.rx_cpu]);
            if let Some(id) = ids.copied().find(|&c| c as usize >= MAX_CPUS) {
                return Err(format!(
                    "roles: CPU {id} is past Linux's last CPU id ({})",
                    MAX_CPUS - 1
                ));
            }
        }
        for (i, row) in self.runs.iter().enumerate() {
            for (name, len) in row.per_cpu_lengths() {
                if len > MAX_CPUS {
                    return Err(format!(
                        "runs[{i}].{name}: {len} values, more CPUs than Linux has (at most {MAX_CPUS})"
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn is_iface(&self) -> bool {
        self.setup
            .as_ref()
            .is_some_and(|s| s.kind == SiteKind::Iface)
    }

    /// The lab's roles, wherever this run's version kept them.
    pub fn roles(&self) -> Option<&Roles> {
        self.setup
            .as_ref()
            .and_then(|s| s.roles.as_ref())
            .or(self.roles.as_ref())
    }

    /// The arms and protocols present: variants in the order the run stored them, steering
    /// modes in their canonical order within each.
    pub fn dims(&self) -> (Vec<ArmName>, Vec<Proto>) {
        let mut variants: Vec<Variant> = Vec::new();
        for r in &self.runs {
            let v = r.arm().variant;
            if !variants.contains(&v) {
                variants.push(v);
            }
        }
        let mut arms: Vec<ArmName> = Vec::new();
        for variant in variants {
            arms.extend(Mode::ALL.iter().map(|&mode| ArmName { mode, variant }));
        }
        arms.retain(|&a| self.runs.iter().any(|r| r.arm() == a));
        let mut protos: Vec<Proto> = Vec::new();
        for r in &self.runs {
            if !protos.contains(&r.proto) {
                protos.push(r.proto);
            }
        }
        (arms, protos)
    }

    /// The rows of one arm and protocol, every repetition.
    pub fn of(&self, arm: ArmName, proto: Proto) -> Vec<&Row> {
        of(&self.runs, arm, proto)
    }

    pub fn reps(&self) -> u32 {
        self.runs.iter().map(|r| r.rep + 1).max().unwrap_or(0)
    }

    /// Per repetition, an arm's ratio to its untuned.
    pub fn ratios(&self, arm: ArmName, proto: Proto) -> Vec<f64> {
        self.ratios_to(arm, base_arm_in(&self.runs, arm), proto)
    }

    /// Per repetition, an arm's req/s over `base`'s (e.g. untuned over the no-BPF arm: what
    /// observing cost).
    pub fn ratios_to(&self, arm: ArmName, base: ArmName, proto: Proto) -> Vec<f64> {
        (0..self.reps())
            .filter_map(|rep| ratio_to(&self.runs, rep, arm, base, proto))
            .collect()
    }
}

pub fn of(rows: &[Row], arm: ArmName, proto: Proto) -> Vec<&Row> {
    rows.iter()
        .filter(|r| r.arm() == arm && r.proto == proto)
        .collect()
}

pub fn find(rows: &[Row], rep: u32, arm: ArmName, proto: Proto) -> Option<&Row> {
    rows.iter()
        .find(|r| r.rep == rep && r.arm() == arm && r.proto == proto)
}

/// An arm's req/s over its untuned's in one repetition (same protocol and variant): the one
/// ratio function, for the live screen and the report alike.
pub fn ratio_in(rows: &[Row], rep: u32, arm: ArmName, proto: Proto) -> Option<f64> {
    ratio_to(rows, rep, arm, base_arm_in(rows, arm), proto)
}

/// An arm's req/s over `base`'s in one repetition and protocol.
pub fn ratio_to(rows: &[Row], rep: u32, arm: ArmName, base: ArmName, proto: Proto) -> Option<f64> {
    let b = find(rows, rep, base, proto)?.req_per_s?;
    Some(find(rows, rep, arm, proto)?.req_per_s? / b.max(1e-9))
}

pub fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)))
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The mean over `rows` of a per-CPU figure (missing entries count as 0).
pub fn mean_per_cpu(
    rows: &[&Row],
    figure: impl Fn(&Row) -> Option<&[f64]>,
    cpus: usize,
) -> Vec<f64> {
    (0..cpus)
        .map(|c| {
            rows.iter()
                .filter_map(|r| figure(r).and_then(|v| v.get(c)))
                .sum::<f64>()
                / rows.len().max(1) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arm(s: &str) -> ArmName {
        s.parse().unwrap()
    }

    fn row(rep: u32, name: &str, proto: Proto, rps: f64) -> Row {
        Row {
            rep,
            arm: Some(arm(name)),
            mode: arm(name).mode,
            proto,
            req_per_s: Some(rps),
            ..Default::default()
        }
    }

    #[test]
    fn arms_carry_their_xdp_mode() {
        assert_eq!(arm("cpumap-skb").label(), "XDP cpumap (skb)");
        assert_eq!(arm("none").label(), "untuned");
        assert_eq!(arm("rps-skb").untuned_peer(), arm("none-skb"));
        assert_eq!(arm("rps").untuned_peer(), arm("none"));
        assert_eq!(arm("cpumap-skb-plain").label(), "XDP cpumap (skb-plain)");
        assert_eq!(
            arm("cpumap-skb-plain").untuned_peer(),
            arm("none-skb-plain")
        );
        assert_eq!(NO_BPF_ARM.to_string(), "none-nobpf");
        assert_eq!(NO_BPF_ARM.label(), "untuned (no BPF)");
        assert_eq!(NO_BPF_ARM.untuned_peer(), arm("none"));
        // A mode whose name holds a dash keeps it, variants follow.
        assert_eq!(arm("napi-thread").mode, Mode::NapiThread);
        assert_eq!(arm("napi-thread-skb").label(), "NAPI thread (skb)");
        assert_eq!(arm("napi-thread-skb").untuned_peer(), arm("none-skb"));
        for bad in [
            "turbo",
            "cpumap-hw",
            "cpumap-plain-skb",
            "rps-",
            "napi",
            "napi-threads",
        ] {
            assert!(bad.parse::<ArmName>().is_err(), "{bad}");
        }
        let doc = RunDoc {
            runs: vec![
                row(0, "cpumap-skb", Proto::Zap, 1.0),
                row(0, "none-drv", Proto::Zap, 1.0),
                Row {
                    mode: Mode::Rps,
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        assert_eq!(
            doc.dims().0,
            [arm("cpumap-skb"), arm("none-drv"), arm("rps")]
        );
    }

    #[test]
    fn ratios_pair_rep_protocol_and_variant() {
        let rows = vec![
            row(0, "none-skb", Proto::Zap, 200.0),
            row(0, "none-drv", Proto::Zap, 100.0),
            row(0, "rps-skb", Proto::Zap, 150.0),
            Row {
                mode: Mode::None,
                req_per_s: Some(10.0),
                ..Default::default()
            },
        ];
        assert_eq!(ratio_in(&rows, 0, arm("rps-skb"), Proto::Zap), Some(0.75));
        assert_eq!(ratio_in(&rows, 1, arm("rps-skb"), Proto::Zap), None);
        assert_eq!(ratio_in(&rows, 0, arm("rps-skb"), Proto::Http), None);
    }

    #[test]
    fn imbalance_of_even_and_one_sided_work() {
        assert_eq!(imbalance(&[100.0, 100.0]), 1.0);
        assert_eq!(imbalance(&[400.0, 0.0, 0.0, 0.0]), 4.0);
        assert_eq!(imbalance(&[0.0, 0.0]), 0.0);
        assert_eq!(imbalance(&[]), 0.0);
    }

    #[test]
    fn spreads() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0]), 2.5);
        assert_eq!(range(&[2.0, 5.0, 3.0]), (2.0, 5.0));
    }

    #[test]
    fn a_busy_machine_is_one_above_half_its_cpus() {
        let env = |load: f64| Environment {
            loadavg: vec![load, 1.0, 1.0],
            online_cpus: 2,
            ..Default::default()
        };
        assert!(env(1.5).busy().unwrap().contains("1.50 on 2 CPUs"));
        assert_eq!(env(1.0).busy(), None);
        assert_eq!(Environment::default().busy(), None);
    }
}
