//! Every map the programs share with userspace. Sizes that depend on the machine are set at
//! load time by userspace; the numbers here are placeholders for those.
use aya_ebpf::{
    macros::map,
    maps::{CpuMap, PerCpuArray},
};
use rxsteer_common::{RxStats, SoftirqStats, SteerConfig, XdpTraceStats, PORT_CLASS_ENTRIES};

/// TCP port -> PORT_HTTP / PORT_ZAP / PORT_NONE. Read-only global data that userspace fills
/// at load time (`override_global`): a direct load per packet, where a map lookup measured
/// about 8 ns more per TCP packet.
#[unsafe(no_mangle)]
static PORT_CLASS: [u8; PORT_CLASS_ENTRIES] = [0; PORT_CLASS_ENTRIES];

#[inline(always)]
pub fn port_class(port: u16) -> u8 {
    // A port comes out of a byte swap (be16). 6.18's verifier bounds the swap's result; 6.1's
    // does not, and refused the table index as "math between map_value pointer and register
    // with unbounded min value" (found in the Debian 6.1 guest, `cargo xtask vm`). The index
    // is masked with a value the compiler cannot fold, so the bounds check below stays in the
    // program and tells an older verifier what a newer one works out itself.
    let mask: usize = unsafe { core::ptr::read_volatile(&(PORT_CLASS_ENTRIES - 1)) };
    match PORT_CLASS.get(port as usize & mask) {
        // Volatile: the compiler must not fold the zeros it sees here; the loader replaces them.
        Some(class) => unsafe { core::ptr::read_volatile(class) },
        None => rxsteer_common::PORT_NONE,
    }
}

/// Receive counters by class, per CPU (key 0).
#[map]
pub static RX_STATS: PerCpuArray<RxStats> = PerCpuArray::with_max_entries(1, 0);

/// Softirq counts and nanoseconds by vector, per CPU (key 0).
#[map]
pub static SOFTIRQ_STATS: PerCpuArray<SoftirqStats> = PerCpuArray::with_max_entries(1, 0);

/// xdp:* tracepoint counters, per CPU (key 0).
#[map]
pub static XDP_TRACE: PerCpuArray<XdpTraceStats> = PerCpuArray::with_max_entries(1, 0);

/// Which CPUs each kind of traffic is spread over: read-only global data set at load time.
#[unsafe(no_mangle)]
static STEER: SteerConfig = SteerConfig::EMPTY;

#[inline(always)]
pub fn steer_config() -> &'static SteerConfig {
    // SAFETY: a static; read through a volatile pointer so the zeros here are not folded.
    unsafe { &*core::ptr::read_volatile(&(&STEER as *const SteerConfig)) }
}

/// CPU index -> cpumap entry (queue + the on_cpu program). Sized at load time to the
/// machine's possible CPUs (a larger size fails with E2BIG).
#[map]
pub static CPUMAP: CpuMap = CpuMap::with_max_entries(1, 0);

/// The same for the frags-aware programs: the kernel refuses a frags-aware program that
/// shares a cpumap with one that is not (EINVAL at load).
#[map]
pub static CPUMAP_FRAGS: CpuMap = CpuMap::with_max_entries(1, 0);

/// What `on_cpu` saw arrive on each target CPU, by class (key 0).
#[map]
pub static ON_CPU_STATS: PerCpuArray<RxStats> = PerCpuArray::with_max_entries(1, 0);

/// Where the stack processed packets (tc ingress), by class, per CPU (key 0).
#[map]
pub static TC_INGRESS_STATS: PerCpuArray<RxStats> = PerCpuArray::with_max_entries(1, 0);

/// Where replies were transmitted (tc egress), by class, per CPU (key 0).
#[map]
pub static TC_EGRESS_STATS: PerCpuArray<RxStats> = PerCpuArray::with_max_entries(1, 0);
