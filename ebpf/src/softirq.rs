//! Softirq accounting on the `softirq_entry` / `softirq_exit` raw tracepoints
//! (TP_PROTO(unsigned int vec_nr)): per CPU, per vector, runs and nanoseconds.
//! Softirqs do not nest on one CPU, so one start slot per vector is enough.
use aya_ebpf::{helpers::bpf_ktime_get_ns, macros::raw_tracepoint, programs::RawTracePointContext};
use rxsteer_common::N_SOFTIRQ;

use crate::maps::SOFTIRQ_STATS;

#[raw_tracepoint(tracepoint = "softirq_entry")]
pub fn softirq_entry(ctx: RawTracePointContext) -> i32 {
    let _ = try_softirq_entry(&ctx);
    0
}

#[raw_tracepoint(tracepoint = "softirq_exit")]
pub fn softirq_exit(ctx: RawTracePointContext) -> i32 {
    let _ = try_softirq_exit(&ctx);
    0
}

#[inline(always)]
fn vector(ctx: &RawTracePointContext) -> Result<usize, ()> {
    let vec = ctx.arg::<u64>(0) as usize;
    if vec < N_SOFTIRQ {
        Ok(vec)
    } else {
        Err(())
    }
}

fn try_softirq_entry(ctx: &RawTracePointContext) -> Result<(), ()> {
    let vec = vector(ctx)?;
    let stats = SOFTIRQ_STATS.get_ptr_mut(0).ok_or(())?;
    // SAFETY: this CPU's value; tracepoint programs run with migration disabled.
    unsafe { (*stats).start_ns[vec] = bpf_ktime_get_ns() };
    Ok(())
}

fn try_softirq_exit(ctx: &RawTracePointContext) -> Result<(), ()> {
    let vec = vector(ctx)?;
    let stats = SOFTIRQ_STATS.get_ptr_mut(0).ok_or(())?;
    // SAFETY: as above.
    let stats = unsafe { &mut *stats };
    let start = stats.start_ns[vec];
    // An exit without a seen entry (attached mid-run) is not counted.
    if start == 0 {
        return Err(());
    }
    stats.start_ns[vec] = 0;
    stats.count[vec] += 1;
    stats.ns[vec] += unsafe { bpf_ktime_get_ns() }.saturating_sub(start);
    Ok(())
}
