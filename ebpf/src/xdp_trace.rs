//! Counters from the `xdp:*` raw tracepoints. Argument positions follow the TP_PROTO of
//! include/trace/events/xdp.h:
//!   xdp_cpumap_kthread(int map_id, u32 processed, u32 drops, int sched, stats *)
//!   xdp_cpumap_enqueue(int map_id, u32 processed, u32 drops, int to_cpu)
//!   xdp_redirect_err(dev, prog, tgt, int err, map_type, u32 map_id, u32 index)
//!   xdp_exception(dev, prog, u32 act)
use aya_ebpf::{macros::raw_tracepoint, programs::RawTracePointContext};
use rxsteer_common::{XdpTraceStats, N_ERRNO, N_XDP_ACTIONS};

use crate::maps::XDP_TRACE;

#[inline(always)]
fn stats() -> Result<&'static mut XdpTraceStats, ()> {
    let p = XDP_TRACE.get_ptr_mut(0).ok_or(())?;
    // SAFETY: this CPU's value; tracepoint programs run with migration disabled.
    Ok(unsafe { &mut *p })
}

#[inline(always)]
fn arg_u32(ctx: &RawTracePointContext, n: usize) -> u64 {
    ctx.arg::<u64>(n) as u32 as u64
}

#[raw_tracepoint(tracepoint = "xdp_cpumap_kthread")]
pub fn xdp_cpumap_kthread(ctx: RawTracePointContext) -> i32 {
    if let Ok(s) = stats() {
        s.kthread_runs += 1;
        s.kthread_processed += arg_u32(&ctx, 1);
        s.kthread_drops += arg_u32(&ctx, 2);
        s.kthread_sched += (arg_u32(&ctx, 3) != 0) as u64;
    }
    0
}

#[raw_tracepoint(tracepoint = "xdp_cpumap_enqueue")]
pub fn xdp_cpumap_enqueue(ctx: RawTracePointContext) -> i32 {
    if let Ok(s) = stats() {
        s.enqueue_batches += 1;
        s.enqueue_frames += arg_u32(&ctx, 1);
        s.enqueue_drops += arg_u32(&ctx, 2);
    }
    0
}

#[raw_tracepoint(tracepoint = "xdp_redirect_err")]
pub fn xdp_redirect_err(ctx: RawTracePointContext) -> i32 {
    if let Ok(s) = stats() {
        let err = ctx.arg::<u64>(3) as u32 as i32;
        let errno = (err.unsigned_abs() as usize).min(N_ERRNO - 1);
        s.redirect_err += 1;
        s.redirect_err_by_errno[errno] += 1;
    }
    0
}

#[raw_tracepoint(tracepoint = "xdp_exception")]
pub fn xdp_exception(ctx: RawTracePointContext) -> i32 {
    if let Ok(s) = stats() {
        let act = (arg_u32(&ctx, 2) as usize).min(N_XDP_ACTIONS - 1);
        s.exception_by_action[act] += 1;
    }
    0
}
