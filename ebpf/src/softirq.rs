//! Softirq accounting on the `softirq_entry` / `softirq_exit` raw tracepoints
//! (TP_PROTO(unsigned int vec_nr)): per CPU, per vector, runs and nanoseconds, and NET_RX's
//! runs by length in log2 buckets. Softirqs do not nest on one CPU, so one start slot per
//! vector is enough. With `softirq_raise` attached (`--observe full`), NET_RX's wait from its
//! first raise to the entry that serves it, in the same buckets: the time a packet's softirq
//! sat pending (behind another softirq, or in ksoftirqd's run queue).
use aya_ebpf::{helpers::bpf_ktime_get_ns, macros::raw_tracepoint, programs::RawTracePointContext};
use rxsteer_common::{log2_bucket, N_LOG2, N_SOFTIRQ, SOFTIRQ_NET_RX};

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

#[raw_tracepoint(tracepoint = "softirq_raise")]
pub fn softirq_raise(ctx: RawTracePointContext) -> i32 {
    let _ = try_softirq_raise(&ctx);
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

/// A raise marks NET_RX pending from now, unless it already was (the wait runs from the
/// first raise). The raise happens on the CPU that will run it, as the entry does.
fn try_softirq_raise(ctx: &RawTracePointContext) -> Result<(), ()> {
    if ctx.arg::<u64>(0) as usize != SOFTIRQ_NET_RX {
        return Ok(());
    }
    let stats = SOFTIRQ_STATS.get_ptr_mut(0).ok_or(())?;
    // SAFETY: this CPU's value; tracepoint programs run with migration disabled.
    let stats = unsafe { &mut *stats };
    if stats.net_rx_raised_ns == 0 {
        stats.net_rx_raised_ns = unsafe { bpf_ktime_get_ns() };
    }
    Ok(())
}

fn try_softirq_entry(ctx: &RawTracePointContext) -> Result<(), ()> {
    let vec = vector(ctx)?;
    let stats = SOFTIRQ_STATS.get_ptr_mut(0).ok_or(())?;
    // SAFETY: this CPU's value; tracepoint programs run with migration disabled.
    let stats = unsafe { &mut *stats };
    let now = unsafe { bpf_ktime_get_ns() };
    stats.start_ns[vec] = now;
    if vec == SOFTIRQ_NET_RX && stats.net_rx_raised_ns != 0 {
        let wait = now.saturating_sub(stats.net_rx_raised_ns);
        stats.net_rx_raised_ns = 0;
        let b = log2_bucket(wait);
        if b < N_LOG2 {
            stats.net_rx_wait_log2[b] += 1;
        }
        stats.net_rx_wait_ns += wait;
    }
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
    let ran = unsafe { bpf_ktime_get_ns() }.saturating_sub(start);
    stats.ns[vec] += ran;
    if vec == SOFTIRQ_NET_RX {
        let b = log2_bucket(ran);
        if b < N_LOG2 {
            stats.net_rx_run_log2[b] += 1;
        }
    }
    Ok(())
}
