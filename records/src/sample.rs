//! One sample: every CPU's counters over one interval, as `rxsteer top --json` and `attach`
//! print it and a comparison stores it (`samples-*.jsonl`). The sampler fills these; the
//! fields added since the first runs default, so every stored run still reads.
use rxsteer_common::{N_CLASSES, N_SOFTIRQ};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::names::{Observer, Phase, XdpMode};

/// One CPU's /proc/stat columns, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Every column: the CPU's wall time as the kernel accounted it.
    pub fn total(&self) -> u64 {
        self.busy() + self.idle + self.iowait
    }

    /// Everything but idle and iowait.
    pub fn busy(&self) -> u64 {
        self.user + self.nice + self.system + self.irq + self.softirq + self.steal
    }

    pub fn delta(&self, prev: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(prev.user),
            nice: self.nice.saturating_sub(prev.nice),
            system: self.system.saturating_sub(prev.system),
            idle: self.idle.saturating_sub(prev.idle),
            iowait: self.iowait.saturating_sub(prev.iowait),
            irq: self.irq.saturating_sub(prev.irq),
            softirq: self.softirq.saturating_sub(prev.softirq),
            steal: self.steal.saturating_sub(prev.steal),
        }
    }
}

/// One row of /proc/net/softnet_stat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Softnet {
    pub processed: u64,
    pub dropped: u64,
    pub time_squeeze: u64,
    pub received_rps: u64,
    pub flow_limit: u64,
}

impl Softnet {
    /// The kernel's columns are 32-bit counters that wrap: deltas are masked to 32 bits.
    pub fn delta(&self, prev: &Softnet) -> Softnet {
        let d = |a: u64, b: u64| a.wrapping_sub(b) & 0xffff_ffff;
        Softnet {
            processed: d(self.processed, prev.processed),
            dropped: d(self.dropped, prev.dropped),
            time_squeeze: d(self.time_squeeze, prev.time_squeeze),
            received_rps: d(self.received_rps, prev.received_rps),
            flow_limit: d(self.flow_limit, prev.flow_limit),
        }
    }
}

/// What the interface counted as lost, by counter name: absolute at a read, per interval in a
/// sample. The standard counters are every interface's; the driver's own are those of its
/// `ethtool -S` statistics whose names say a drop, a miss, no buffer, an overrun or a FIFO.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct NicDrops {
    /// `statistics/rx_missed_errors`, `rx_fifo_errors`, `rx_over_errors` and `rx_dropped`.
    pub counters: BTreeMap<String, u64>,
    /// The driver's own counters of loss (empty: the driver has none, said as such).
    pub driver: BTreeMap<String, u64>,
}

/// The standard counters of loss every interface has.
pub const NIC_DROP_COUNTERS: [&str; 4] = [
    "rx_missed_errors",
    "rx_fifo_errors",
    "rx_over_errors",
    "rx_dropped",
];

/// Whether a driver statistic's name says it counts lost packets.
pub fn is_drop_stat(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["drop", "miss", "no_buf", "nobuf", "overrun", "fifo"]
        .iter()
        .any(|w| n.contains(w))
}

impl NicDrops {
    /// Packets lost as the standard counters tell (distinct fields of the kernel's link
    /// statistics; the driver's own often count the same packets again, so are not added).
    pub fn total(&self) -> u64 {
        self.counters.values().sum()
    }

    /// The largest of the driver's own counters: what the driver says it lost where the
    /// standard counters say nothing.
    pub fn driver_max(&self) -> u64 {
        self.driver.values().copied().max().unwrap_or(0)
    }

    /// Each counter's growth from `prev` (a counter that went backwards, a driver reset,
    /// reads as 0).
    pub fn delta(&self, prev: &NicDrops) -> NicDrops {
        let d = |now: &BTreeMap<String, u64>, then: &BTreeMap<String, u64>| {
            now.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.saturating_sub(then.get(k).copied().unwrap_or(*v)),
                    )
                })
                .collect()
        };
        NicDrops {
            counters: d(&self.counters, &prev.counters),
            driver: d(&self.driver, &prev.driver),
        }
    }

    /// The counters that counted a loss, standard ones first: what a sentence names.
    pub fn nonzero(&self) -> impl Iterator<Item = (&str, u64)> {
        self.counters
            .iter()
            .chain(&self.driver)
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| (k.as_str(), *v))
    }

    /// Lost packets in the interval, by either count.
    pub fn lost(&self) -> u64 {
        self.total().max(self.driver_max())
    }

    /// What was lost over `seconds`, in a phrase for a verdict (`the NIC dropped 1200 packets
    /// (400/s) before any CPU saw them: rx_missed_errors 1200`); None where nothing was. A
    /// driver without counters of its own is named, so that a zero is never silent.
    pub fn said(&self, seconds: f64) -> Option<String> {
        let lost = self.lost();
        if lost == 0 {
            return None;
        }
        let named: Vec<String> = self.nonzero().map(|(k, v)| format!("{k} {v}")).collect();
        let own = if self.driver.is_empty() {
            " (the driver keeps no loss counter of its own)"
        } else {
            ""
        };
        Some(format!(
            "the NIC dropped {lost} packets ({:.0}/s) before any CPU saw them: {}{own}",
            lost as f64 / seconds.max(1e-9),
            named.join(", ")
        ))
    }
}

/// Packets per traffic class (see `rxsteer_common::Class`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassPackets {
    pub http: u64,
    pub zap: u64,
    pub tcp: u64,
    pub ip: u64,
    pub non_ip: u64,
    pub malformed: u64,
}

impl ClassPackets {
    /// From a BPF map's per-class array, in `Class` order.
    pub fn from_array(a: &[u64; N_CLASSES]) -> Self {
        let [http, zap, tcp, ip, non_ip, malformed] = *a;
        Self {
            http,
            zap,
            tcp,
            ip,
            non_ip,
            malformed,
        }
    }
}

/// One CPU over one interval. Fields missing from a stored line read as 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuSample {
    pub cpu: u32,
    /// Frames seen where the driver received them on this CPU (by the XDP program or the
    /// receive tracepoints, as the line's observer says), and their bytes.
    pub packets: u64,
    pub bytes: u64,
    pub class_packets: ClassPackets,
    pub ipv4: u64,
    pub ipv6: u64,
    pub vlan: u64,
    pub net_rx_ns: u64,
    pub net_rx_runs: u64,
    /// NET_RX's runs by length (log2 ns buckets), at every observe level. Empty in lines
    /// from before it was counted.
    #[serde(skip_serializing_if = "crate::log2::Log2Ns::is_empty")]
    pub net_rx_run_log2: crate::log2::Log2Ns,
    /// NET_RX's waits from its first raise to the run that served it, and their sum: only at
    /// `--observe full` (the line's `level` says; below it these are absent, not zero).
    #[serde(skip_serializing_if = "crate::log2::Log2Ns::is_empty")]
    pub net_rx_wait_log2: crate::log2::Log2Ns,
    #[serde(skip_serializing_if = "is_zero")]
    pub net_rx_wait_ns: u64,
    pub net_tx_ns: u64,
    pub net_tx_runs: u64,
    /// Every softirq vector, in kernel order (HI, TIMER, NET_TX, NET_RX, ...).
    pub softirq_ns: [u64; N_SOFTIRQ],
    pub softirq_runs: [u64; N_SOFTIRQ],
    /// Run time of cpumap kthreads on this CPU (receive work that is not softirq time).
    pub cpumap_kthread_ns: u64,
    /// Run time of the observed interface's threaded-NAPI kthreads last seen on this CPU.
    pub napi_kthread_ns: u64,
    /// Run time of other interfaces' NAPI kthreads on this CPU (in the lab: the loader veth's
    /// receive of the replies, work a real set-up does on the loader's machine). Not receive
    /// work of the observed interface.
    #[serde(default)]
    pub other_napi_kthread_ns: u64,
    /// Run time of the backlog NAPI kthreads (`backlog_napi/N`) on this CPU: where a kernel
    /// booted with `thread_backlog_napi` (6.10+, always on PREEMPT_RT) runs every CPU's
    /// backlog, RPS's steered packets included, instead of in NET_RX softirq. Shared by every
    /// device whose packets reach a backlog. Absent from runs before it was read.
    #[serde(default)]
    pub backlog_kthread_ns: u64,
    pub cpumap_processed: u64,
    pub cpumap_drops: u64,
    /// Frames this CPU enqueued into cpumap rings, and those dropped on a full ring.
    pub enqueue_frames: u64,
    pub enqueue_drops: u64,
    /// Frames the cpumap entry's program counted arriving on this CPU (cpumap mode).
    pub arrived_packets: u64,
    pub arrived_class: ClassPackets,
    /// Frames this CPU's steering program redirected, and those passed because the chosen
    /// cpumap entry was missing.
    pub steered_packets: u64,
    pub steer_fallback: u64,
    pub softnet: Softnet,
    /// Packets tc ingress saw on this CPU: where the stack processed them (after RPS or
    /// cpumap moved them). Absent from runs before tc accounting, and without TCX.
    #[serde(default)]
    pub stack_packets: u64,
    #[serde(default)]
    pub stack_class: ClassPackets,
    /// Packets tc egress saw leave from this CPU (XPS).
    #[serde(default)]
    pub tx_packets: u64,
    #[serde(default)]
    pub tx_class: ClassPackets,
    /// This CPU's /proc/stat time over the interval.
    #[serde(default)]
    pub time: CpuTimes,
    /// Interrupts the observed interface raised on this CPU (/proc/interrupts, its own lines).
    /// Absent from runs before it was read; 0 where the interface raises none (veth).
    #[serde(default)]
    pub nic_irqs: u64,
}

impl CpuSample {
    /// Receive work in nanoseconds: NET_RX softirq plus the receive kthreads (cpumap, the
    /// observed interface's threaded NAPI and the backlog threads). The one definition every
    /// view and figure uses.
    pub fn receive_ns(&self) -> u64 {
        self.net_rx_ns + self.kthread_ns()
    }

    /// The receive kthreads' part of [`receive_ns`](Self::receive_ns).
    pub fn kthread_ns(&self) -> u64 {
        self.cpumap_kthread_ns + self.napi_kthread_ns + self.backlog_kthread_ns
    }
}

/// One interval, all CPUs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    /// Seconds since the sampler started, at the end of this interval.
    pub t_s: f64,
    pub interval_s: f64,
    pub cpus: Vec<CpuSample>,
    pub redirect_err: u64,
    /// Frames the interface itself counted (its `rx_packets`) in the interval: on a real NIC
    /// the frames off the wire, before GRO; on veth the skbs its peer sent, GSO-sized. None
    /// where the sampler could not read it (an interface of another network namespace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic_rx_packets: Option<u64>,
    /// Packets the interface itself lost in the interval (its ring full, its FIFO overrun)
    /// before any CPU saw them: they never reach softnet_stat. None where the sampler could
    /// not read the interface.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic_drops: Option<NicDrops>,
    /// Redirect failures by errno (e.g. "28" = ENOSPC: cpumap ring full).
    pub redirect_err_by_errno: BTreeMap<String, u64>,
    pub xdp_exceptions: u64,
    /// What rxsteer's BPF programs ran in the interval, from the kernel's statistics. None
    /// where no BPF program was loaded (and in lines from before it was read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bpf: Option<crate::bpf_cost::BpfRuns>,
    /// Seconds of the interval the statistics were on (`--bpf-stats sampled`): `bpf`'s runs
    /// and run time are that window's, scaled to the whole interval. None: on throughout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bpf_window_s: Option<f64>,
}

impl Sample {
    pub fn total_packets(&self) -> u64 {
        self.cpus.iter().map(|c| c.packets).sum()
    }

    /// Packets the interface received in the interval: its own count, or what the programs
    /// counted where the interface could not be read.
    pub fn received_packets(&self) -> u64 {
        self.nic_rx_packets.unwrap_or_else(|| self.total_packets())
    }

    /// What rxsteer's programs cost in this interval, per packet received. None: no BPF.
    pub fn bpf_cost(&self) -> Option<crate::bpf_cost::BpfCostOf> {
        crate::bpf_cost::BpfCostOf::of(self.bpf.as_ref(), self.interval_s, self.received_packets())
    }
}

/// How the tc programs were attached, or why not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TcAttached {
    /// Ingress and egress attached as TCX links (kernel >= 6.6).
    Tcx,
    /// Ingress and egress as netlink filters on a clsact qdisc rxsteer added.
    Clsact,
    /// Not attached: the reason (the rest of the observation goes on without tc counts).
    Unavailable(String),
}

/// How the programs were attached: stored with every sample line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Observed {
    /// What counted where the driver received.
    pub observer: Observer,
    /// The XDP mode that actually ran; None when no XDP program is on the interface.
    pub xdp_mode: Option<XdpMode>,
    /// Whether the multi-buffer aware (frags) XDP programs ran.
    pub xdp_frags: bool,
    /// How the tc witness programs were attached, or why not.
    pub tc: TcAttached,
    /// What was watched: which tc witnesses the level attaches.
    pub level: crate::ObserveLevel,
}

impl Observed {
    /// Nothing loaded (`--observer off`): CPU time from /proc only.
    pub fn no_bpf() -> Self {
        Self {
            observer: Observer::Off,
            xdp_mode: None,
            xdp_frags: false,
            tc: TcAttached::Unavailable("no BPF program (--observer off)".into()),
            level: crate::ObserveLevel::Minimal,
        }
    }
}

/// One line of `top --json` / `attach --json`, and of a comparison's `samples-*.jsonl` (which
/// adds the phase). Lines stored before a field existed read it as absent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleLine {
    #[serde(default)]
    pub iface: String,
    /// What counted where the driver received (absent from lines before observers were
    /// named: those all came from the XDP program).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observer: Option<Observer>,
    /// The XDP mode that ran; absent when no XDP program was on the interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_mode: Option<XdpMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_frags: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tc: Option<TcAttached>,
    /// `--observe` (absent from lines before levels: those watched everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observe: Option<crate::ObserveLevel>,
    /// Which part of a load the sample fell in (stored samples only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<Phase>,
    #[serde(flatten)]
    pub sample: Sample,
}

impl SampleLine {
    pub fn new(iface: &str, how: &Observed, sample: Sample) -> Self {
        Self {
            iface: iface.to_string(),
            observer: Some(how.observer),
            xdp_mode: how.xdp_mode,
            xdp_frags: Some(how.xdp_frags),
            tc: Some(how.tc.clone()),
            observe: Some(how.level),
            phase: None,
            sample,
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_keeps_its_shape_and_an_old_line_still_reads() {
        let how = Observed {
            observer: Observer::Xdp,
            xdp_mode: Some(XdpMode::Skb),
            xdp_frags: false,
            tc: TcAttached::Tcx,
            level: crate::ObserveLevel::Full,
        };
        let mut s = Sample {
            t_s: 1.0,
            interval_s: 0.5,
            ..Default::default()
        };
        s.cpus.push(CpuSample {
            cpu: 1,
            net_rx_ns: 5,
            cpumap_kthread_ns: 7,
            napi_kthread_ns: 11,
            ..Default::default()
        });
        assert_eq!(s.cpus[0].receive_ns(), 23);
        let line = SampleLine::new("veth0", &how, s);
        let json = serde_json::to_value(&line).unwrap();
        assert_eq!(
            (&json["xdp_mode"], &json["tc"], &json["cpus"][0]["cpu"]),
            (&"skb".into(), &"tcx".into(), &1.into())
        );
        assert!(json.get("phase").is_none());
        assert_eq!(serde_json::from_value::<SampleLine>(json).unwrap(), line);
        // A line from before tc, frags and /proc/stat time were stored.
        let mut old = serde_json::to_value(&line).unwrap();
        let o = old.as_object_mut().unwrap();
        for k in ["xdp_frags", "tc", "observe", "iface"] {
            o.remove(k);
        }
        let c = o["cpus"][0].as_object_mut().unwrap();
        for k in [
            "time",
            "stack_packets",
            "stack_class",
            "tx_packets",
            "tx_class",
        ] {
            c.remove(k);
        }
        let back: SampleLine = serde_json::from_value(old).unwrap();
        assert_eq!((back.tc, back.xdp_frags), (None, None));
        assert_eq!(back.sample.cpus[0].net_rx_ns, 5);
        assert_eq!(
            serde_json::to_value(TcAttached::Unavailable("no TCX".into())).unwrap(),
            serde_json::json!({"unavailable": "no TCX"})
        );
    }
}
