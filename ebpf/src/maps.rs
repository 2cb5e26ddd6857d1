//! Every map the programs share with userspace. Sizes that depend on the machine are set at
//! load time by userspace; the numbers here are placeholders for those.
use aya_ebpf::{
    macros::map,
    maps::{Array, PerCpuArray},
};
use rxsteer_common::{RxStats, SoftirqStats, XdpTraceStats, PORT_CLASS_ENTRIES};

/// TCP port -> PORT_HTTP / PORT_ZAP / PORT_NONE, written by userspace before attach.
#[map]
pub static PORT_CLASS: Array<u8> = Array::with_max_entries(PORT_CLASS_ENTRIES, 0);

/// Receive counters by class, per CPU (key 0).
#[map]
pub static RX_STATS: PerCpuArray<RxStats> = PerCpuArray::with_max_entries(1, 0);

/// Softirq counts and nanoseconds by vector, per CPU (key 0).
#[map]
pub static SOFTIRQ_STATS: PerCpuArray<SoftirqStats> = PerCpuArray::with_max_entries(1, 0);

/// xdp:* tracepoint counters, per CPU (key 0).
#[map]
pub static XDP_TRACE: PerCpuArray<XdpTraceStats> = PerCpuArray::with_max_entries(1, 0);
