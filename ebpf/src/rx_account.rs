//! `rx_account`: observe-only XDP. Classifies every frame and counts packets and bytes per
//! class on the CPU that received it. Always XDP_PASS, whatever it finds.
use aya_ebpf::{bindings::xdp_action, macros::xdp, maps::PerCpuArray, programs::XdpContext};
use rxsteer_common::{
    parse::{classify, Family, Verdict},
    RxStats,
};

use crate::{
    maps::{port_class, RX_STATS},
    packet::XdpPacket,
};

#[xdp]
pub fn rx_account(ctx: XdpContext) -> u32 {
    let _ = try_rx_account(&ctx);
    xdp_action::XDP_PASS
}

#[inline(always)]
fn try_rx_account(ctx: &XdpContext) -> Result<(), ()> {
    let pkt = XdpPacket::new(ctx);
    let verdict = classify(&pkt, port_class);
    count(&RX_STATS, &verdict, pkt.len() as u64).map(|_| ())
}

/// Adds one frame to `map` (RX_STATS on the receiving CPU, ON_CPU_STATS on a cpumap target)
/// and returns this CPU's entry for further counters.
#[inline(always)]
pub fn count(
    map: &PerCpuArray<RxStats>,
    v: &Verdict,
    len: u64,
) -> Result<&'static mut RxStats, ()> {
    let stats = map.get_ptr_mut(0).ok_or(())?;
    // SAFETY: per-CPU value of this CPU; XDP runs with preemption disabled.
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
