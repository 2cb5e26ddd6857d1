//! `rx_account`: observe-only XDP. Classifies every frame and counts packets and bytes per
//! class on the CPU that received it. Always XDP_PASS, whatever it finds.
//!
//! `rx_account_frags` is the same program declared multi-buffer aware (`xdp.frags`): in skb
//! (generic) mode the kernel then hands it a nonlinear packet as it is instead of linearising
//! (copying) it first. Userspace loads it where the kernel accepts the flag.
use aya_ebpf::{
    bindings::xdp_action, helpers::bpf_xdp_get_buff_len, macros::xdp, maps::PerCpuArray,
    programs::XdpContext,
};
use aya_log_ebpf::debug;
use rxsteer_common::{
    parse::{classify, Family, Verdict},
    Class, RxStats,
};

use crate::{
    diag,
    maps::{port_class, RX_STATS},
    packet::LinearPacket,
};

#[xdp]
pub fn rx_account(ctx: XdpContext) -> u32 {
    let _ = try_rx_account(&ctx, false);
    xdp_action::XDP_PASS
}

#[xdp(frags)]
pub fn rx_account_frags(ctx: XdpContext) -> u32 {
    let _ = try_rx_account(&ctx, true);
    xdp_action::XDP_PASS
}

#[inline(always)]
fn try_rx_account(ctx: &XdpContext, frags: bool) -> Result<(), ()> {
    let pkt = LinearPacket::xdp(ctx);
    let verdict = classify(&pkt, port_class);
    let len = frame_len(ctx, &pkt, frags);
    count(&RX_STATS, &verdict, len)?;
    note_malformed(ctx, &verdict, len);
    Ok(())
}

/// A frame the parser gave up on: a debug record, rate-limited (see `diag`).
#[inline(always)]
pub fn note_malformed(ctx: &XdpContext, v: &Verdict, len: u64) {
    if v.class == Class::Malformed {
        if let Some(n) = diag::due(diag::MALFORMED) {
            debug!(
                ctx,
                "a {} byte frame the parser gave up on (malformed header; {} on this CPU)", len, n
            );
        }
    }
}

/// The frame's length: with frags, the linear part plus every fragment.
#[inline(always)]
pub fn frame_len(ctx: &XdpContext, pkt: &LinearPacket, frags: bool) -> u64 {
    if frags {
        // SAFETY: a helper the verifier allows for XDP programs; it only reads the buffer.
        unsafe { bpf_xdp_get_buff_len(ctx.ctx) }
    } else {
        pkt.len() as u64
    }
}

/// Adds one frame to `map` (RX_STATS on the receiving CPU, ON_CPU_STATS on a cpumap target,
/// the tc maps where the stack ran) and returns this CPU's entry for further counters.
#[inline(always)]
pub fn count(
    map: &PerCpuArray<RxStats>,
    v: &Verdict,
    len: u64,
) -> Result<&'static mut RxStats, ()> {
    let stats = map.get_ptr_mut(0).ok_or(())?;
    // SAFETY: per-CPU value of this CPU; XDP and tc run with preemption disabled.
    let stats = unsafe { &mut *stats };
    let i = v.class.index();
    stats.packets[i] += 1;
    stats.bytes[i] += len;
    match v.family {
        Family::V4 => stats.ipv4 += 1,
        Family::V6 => stats.ipv6 += 1,
        Family::None => {}
    }
    if v.vlan {
        stats.vlan += 1;
    }
    Ok(stats)
}

/// The baseline for the ns/packet benchmark: the cheapest possible XDP program.
#[xdp]
pub fn xdp_pass(_ctx: XdpContext) -> u32 {
    xdp_action::XDP_PASS
}
