//! Kernel-side diagnostics through aya-log, for the rare paths only (a redirect that found no
//! cpumap entry, a steering set longer than the table, a frame the parser gave up on), never
//! per packet. Each kind is rate-limited by a per-CPU counter: a record goes out on the 1st,
//! 2nd, 4th, 8th, ... occurrence on a CPU, carrying the count, so a flood costs log2(n)
//! records and the hot path only a branch it does not take.
use aya_ebpf::{macros::map, maps::PerCpuArray};

/// Which rare path (index into `DIAG_SEEN`).
pub const NO_CPUMAP_ENTRY: u32 = 0;
pub const BAD_STEER_SET: u32 = 1;
pub const MALFORMED: u32 = 2;
const KINDS: u32 = 3;

/// Occurrences per kind, per CPU.
#[map]
static DIAG_SEEN: PerCpuArray<u64> = PerCpuArray::with_max_entries(KINDS, 0);

/// Counts one occurrence of `kind` on this CPU; `Some(count)` when this one is to be logged.
#[inline(always)]
pub fn due(kind: u32) -> Option<u64> {
    let seen = DIAG_SEEN.get_ptr_mut(kind)?;
    // SAFETY: this CPU's slot; XDP runs with preemption disabled.
    let n = unsafe {
        *seen += 1;
        *seen
    };
    n.is_power_of_two().then_some(n)
}
