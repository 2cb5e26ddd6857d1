//! Types shared by rxsteer's kernel programs (`ebpf/`) and its userspace.
//!
//! Everything here is `#[repr(C)]` and plain data so the same bytes mean the same thing on both
//! sides of a BPF map. The `user` feature adds `aya::Pod` so userspace can read the maps.
//! `parse` is the one bounds-checked header walker; it is generic over where the bytes live, so
//! host tests and fuzzers run exactly the logic the XDP programs run.
#![no_std]

pub mod names;
pub mod parse;

/// Traffic classes counted per packet. The discriminant is the index into [`RxStats`] arrays.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// TCP to or from one of the configured HTTP ports.
    Http = 0,
    /// TCP to or from one of the configured ZAP ports.
    Zap = 1,
    /// Any other TCP (including non-first fragments, whose ports are not visible).
    OtherTcp = 2,
    /// IPv4 or IPv6 that is not TCP (UDP, ICMP, ...).
    OtherIp = 3,
    /// Not IP at all (ARP, LLDP, ...).
    NonIp = 4,
    /// Truncated or invalid Ethernet, VLAN, IP or L4 header. Still passed.
    Malformed = 5,
}

pub const N_CLASSES: usize = 6;
pub const CLASS_NAMES: [&str; N_CLASSES] = ["http", "zap", "tcp", "ip", "non_ip", "malformed"];

impl Class {
    pub const ALL: [Class; N_CLASSES] = [
        Class::Http,
        Class::Zap,
        Class::OtherTcp,
        Class::OtherIp,
        Class::NonIp,
        Class::Malformed,
    ];

    pub const fn index(self) -> usize {
        self as usize
    }

    pub const fn name(self) -> &'static str {
        CLASS_NAMES[self as usize]
    }
}

/// Values of the `PORT_CLASS` global (one byte per TCP port).
pub const PORT_NONE: u8 = 0;
pub const PORT_HTTP: u8 = 1;
pub const PORT_ZAP: u8 = 2;
/// Entries of the `PORT_CLASS` global: one per TCP port number.
pub const PORT_CLASS_ENTRIES: usize = 65536;

/// Per-CPU receive counters, one map entry (key 0): a single lookup per packet.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxStats {
    pub packets: [u64; N_CLASSES],
    pub bytes: [u64; N_CLASSES],
    /// Packets whose network header was IPv4 / IPv6 (any class but non-IP).
    pub ipv4: u64,
    pub ipv6: u64,
    /// Packets that carried at least one 802.1Q / 802.1ad tag.
    pub vlan: u64,
    /// Steering program only: frames handed to `bpf_redirect_map`, by class, and frames passed
    /// because the chosen cpumap entry was missing. Kept here so one lookup serves both.
    pub redirected: [u64; N_CLASSES],
    pub redirect_fallback: u64,
    /// Packets counted without their headers (the receive tracepoints): in no class.
    pub unclassified: u64,
}

impl RxStats {
    pub const ZERO: Self = Self {
        packets: [0; N_CLASSES],
        bytes: [0; N_CLASSES],
        ipv4: 0,
        ipv6: 0,
        vlan: 0,
        redirected: [0; N_CLASSES],
        redirect_fallback: 0,
        unclassified: 0,
    };

    pub fn total_packets(&self) -> u64 {
        self.packets.iter().sum::<u64>() + self.unclassified
    }

    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().sum()
    }
}

/// Number of softirq vectors (`NR_SOFTIRQS` in include/linux/interrupt.h).
pub const N_SOFTIRQ: usize = 10;
pub const SOFTIRQ_NAMES: [&str; N_SOFTIRQ] = [
    "HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU",
];
pub const SOFTIRQ_NET_TX: usize = 2;
pub const SOFTIRQ_NET_RX: usize = 3;

/// Per-CPU softirq accounting, one map entry (key 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftirqStats {
    /// Completed handler runs per vector.
    pub count: [u64; N_SOFTIRQ],
    /// Nanoseconds spent in the handler per vector.
    pub ns: [u64; N_SOFTIRQ],
    /// Entry timestamp of the run in progress (0 = none). Kernel-side scratch.
    pub start_ns: [u64; N_SOFTIRQ],
    /// NET_RX runs by length: bucket `i` counts runs of [2^i, 2^(i+1)) ns (bucket 0 also 0 and
    /// 1 ns; the last also everything longer). Counted by `softirq_exit`, at every level.
    pub net_rx_run_log2: [u64; N_LOG2],
    /// NET_RX's wait from its first raise to the entry of the run that served it, in the same
    /// buckets, and the waits' sum in ns. Counted only while `softirq_raise` is attached
    /// (`--observe full`): it runs on every raise of any vector.
    pub net_rx_wait_log2: [u64; N_LOG2],
    pub net_rx_wait_ns: u64,
    /// When NET_RX was first raised and not yet entered (0 = not pending). Kernel-side scratch.
    pub net_rx_raised_ns: u64,
}

/// Log2 buckets of a nanosecond histogram: 2^31 ns is 2.1 s, beyond any softirq's wait.
pub const N_LOG2: usize = 32;

/// The log2 bucket of `ns` (see [`SoftirqStats::net_rx_run_log2`]), without a loop, so that
/// any verifier takes it.
#[inline(always)]
pub fn log2_bucket(ns: u64) -> usize {
    let (mut v, mut r) = (ns, 0usize);
    if v >= 1 << 32 {
        v >>= 32;
        r += 32;
    }
    if v >= 1 << 16 {
        v >>= 16;
        r += 16;
    }
    if v >= 1 << 8 {
        v >>= 8;
        r += 8;
    }
    if v >= 1 << 4 {
        v >>= 4;
        r += 4;
    }
    if v >= 1 << 2 {
        v >>= 2;
        r += 2;
    }
    if v >= 1 << 1 {
        r += 1;
    }
    if r < N_LOG2 {
        r
    } else {
        N_LOG2 - 1
    }
}

impl SoftirqStats {
    pub const ZERO: Self = Self {
        count: [0; N_SOFTIRQ],
        ns: [0; N_SOFTIRQ],
        start_ns: [0; N_SOFTIRQ],
        net_rx_run_log2: [0; N_LOG2],
        net_rx_wait_log2: [0; N_LOG2],
        net_rx_wait_ns: 0,
        net_rx_raised_ns: 0,
    };
}

/// Buckets for `xdp_redirect_err` by errno; larger errnos land in the last bucket.
pub const N_ERRNO: usize = 64;
/// Buckets for `xdp_exception` by XDP action (ABORTED, DROP, PASS, TX, REDIRECT, other...).
pub const N_XDP_ACTIONS: usize = 8;

/// Per-CPU counters from the `xdp:*` tracepoints, one map entry (key 0).
///
/// cpumap work runs in a kernel thread on the target CPU, not in NET_RX softirq, and redirect
/// failures show nowhere else: these are what make that work and those drops visible.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XdpTraceStats {
    /// `xdp_cpumap_kthread`: batches run by the cpumap kthread on this CPU.
    pub kthread_runs: u64,
    pub kthread_processed: u64,
    pub kthread_drops: u64,
    /// Times the kthread yielded the CPU (`sched` argument).
    pub kthread_sched: u64,
    /// `xdp_cpumap_enqueue`: bulk flushes from this (source) CPU into some cpumap ring.
    pub enqueue_batches: u64,
    pub enqueue_frames: u64,
    /// Frames dropped because the target ring was full.
    pub enqueue_drops: u64,
    /// `xdp_redirect_err`: all failures, and by errno (index = -err, clamped).
    pub redirect_err: u64,
    pub redirect_err_by_errno: [u64; N_ERRNO],
    /// `xdp_exception`: by XDP action (index clamped to the last bucket).
    pub exception_by_action: [u64; N_XDP_ACTIONS],
}

impl XdpTraceStats {
    pub const ZERO: Self = Self {
        kthread_runs: 0,
        kthread_processed: 0,
        kthread_drops: 0,
        kthread_sched: 0,
        enqueue_batches: 0,
        enqueue_frames: 0,
        enqueue_drops: 0,
        redirect_err: 0,
        redirect_err_by_errno: [0; N_ERRNO],
        exception_by_action: [0; N_XDP_ACTIONS],
    };

    pub fn exceptions(&self) -> u64 {
        self.exception_by_action.iter().sum()
    }
}

/// Steering sets: which CPUs each kind of traffic is spread over.
pub const STEER_HTTP: usize = 0;
pub const STEER_ZAP: usize = 1;
/// Other TCP and other IP traffic.
pub const STEER_OTHER: usize = 2;
pub const N_STEER_SETS: usize = 3;
/// Largest steering set (and highest CPU id + 1 a set may name is the cpumap size).
pub const MAX_STEER_CPUS: usize = 256;

/// The steering configuration, a read-only global the loader fills. A set of length 0 means
/// "do not steer this traffic" (XDP_PASS on the receiving CPU).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SteerConfig {
    pub len: [u32; N_STEER_SETS],
    pub cpus: [[u32; MAX_STEER_CPUS]; N_STEER_SETS],
}

impl SteerConfig {
    pub const EMPTY: Self = Self {
        len: [0; N_STEER_SETS],
        cpus: [[0; MAX_STEER_CPUS]; N_STEER_SETS],
    };

    /// Which set a class is steered by, if any (non-IP and malformed frames never move).
    pub const fn set_of(class: Class) -> Option<usize> {
        match class {
            Class::Http => Some(STEER_HTTP),
            Class::Zap => Some(STEER_ZAP),
            Class::OtherTcp | Class::OtherIp => Some(STEER_OTHER),
            Class::NonIp | Class::Malformed => None,
        }
    }
}

/// What the receive tracepoints (`rx_driver_*`) need to count where the driver received
/// without an XDP program: the interface to count, and where `struct napi_struct`,
/// `struct sk_buff` and `struct net_device` keep the fields read, as the kernel's BTF gives
/// them at load time (byte offsets). `ifindex` 0 means "count nothing". One entry of the
/// `DRIVER_WATCH` array.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverWatch {
    pub ifindex: u32,
    /// The inode of the interface's network namespace: an ifindex is only unique within one.
    pub netns_inum: u32,
    pub napi_dev: u32,
    pub skb_dev: u32,
    pub dev_ifindex: u32,
    /// `net_device.nd_net` (a `struct net *`), then `net.ns` + `ns_common.inum`.
    pub dev_nd_net: u32,
    pub net_ns_inum: u32,
    pub _pad: u32,
}

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C) structs of u64 / u32 fields and arrays, with no padding.
    unsafe impl aya::Pod for super::RxStats {}
    unsafe impl aya::Pod for super::SoftirqStats {}
    unsafe impl aya::Pod for super::XdpTraceStats {}
    unsafe impl aya::Pod for super::SteerConfig {}
    unsafe impl aya::Pod for super::DriverWatch {}
}

#[cfg(any(test, feature = "frames"))]
pub mod frames;
