//! `steer`: the receiving CPU's XDP program in cpumap mode. It counts like `rx_account`, then
//! hashes the 5-tuple and redirects the frame into the cpumap entry of a CPU from the set
//! configured for its class. The same flow always maps to the same CPU (no reordering).
//! `on_cpu` runs on the target CPU for every frame that arrives there. The `_frags` twins are
//! the same programs declared multi-buffer aware (see `rx_account`).
use aya_ebpf::{bindings::xdp_action, macros::xdp, programs::XdpContext};
use aya_log_ebpf::{error, warn};
use rxsteer_common::{
    parse::{classify, classify_headers, flow_hash, pick, walk},
    SteerConfig, MAX_STEER_CPUS,
};

use crate::{
    diag,
    maps::{port_class, steer_config, CPUMAP, CPUMAP_FRAGS, ON_CPU_STATS, RX_STATS},
    packet::LinearPacket,
    rx_account::{count, frame_len, note_malformed},
};

#[xdp]
pub fn steer(ctx: XdpContext) -> u32 {
    try_steer(&ctx, false).unwrap_or(xdp_action::XDP_PASS)
}

#[xdp(frags)]
pub fn steer_frags(ctx: XdpContext) -> u32 {
    try_steer(&ctx, true).unwrap_or(xdp_action::XDP_PASS)
}

#[inline(always)]
fn try_steer(ctx: &XdpContext, frags: bool) -> Result<u32, ()> {
    let pkt = LinearPacket::xdp(ctx);
    let headers = walk(&pkt);
    let verdict = classify_headers(&headers, port_class);
    let bytes = frame_len(ctx, &pkt, frags);
    let stats = count(&RX_STATS, &verdict, bytes)?;
    note_malformed(ctx, &verdict, bytes);
    let set = SteerConfig::set_of(verdict.class).ok_or(())?;
    let cfg = steer_config();
    let len = *cfg.len.get(set).ok_or(())?;
    if len == 0 {
        return Ok(xdp_action::XDP_PASS);
    }
    if len as usize > MAX_STEER_CPUS {
        if let Some(n) = diag::due(diag::BAD_STEER_SET) {
            error!(
                ctx,
                "steer: set {} names {} CPUs, more than the table's {}; frame passed ({} on this CPU)",
                set as u32,
                len,
                MAX_STEER_CPUS as u32,
                n
            );
        }
        return Ok(xdp_action::XDP_PASS);
    }
    let h = headers.map_err(|_| ())?;
    let hash = flow_hash(&pkt, &h).ok_or(())?;
    let idx = pick(hash, len) as usize & (MAX_STEER_CPUS - 1);
    let cpu = cfg.cpus[set][idx];
    let cpumap = if frags { &CPUMAP_FRAGS } else { &CPUMAP };
    // A missing cpumap entry falls back to XDP_PASS (counted), rather than a silent drop.
    match cpumap.redirect(cpu, xdp_action::XDP_PASS as u64) {
        Ok(action) => {
            stats.redirected[verdict.class.index()] += 1;
            Ok(action)
        }
        Err(action) => {
            stats.redirect_fallback += 1;
            if let Some(n) = diag::due(diag::NO_CPUMAP_ENTRY) {
                warn!(
                    ctx,
                    "steer: no cpumap entry for CPU {}: frame passed on the receiving CPU ({} on this CPU)",
                    cpu,
                    n
                );
            }
            Ok(action)
        }
    }
}

/// Runs on the cpumap target CPU for every frame steered there: the proof of where it went.
#[xdp(map = "cpumap")]
pub fn on_cpu(ctx: XdpContext) -> u32 {
    let _ = try_on_cpu(&ctx, false);
    xdp_action::XDP_PASS
}

#[xdp(frags, map = "cpumap")]
pub fn on_cpu_frags(ctx: XdpContext) -> u32 {
    let _ = try_on_cpu(&ctx, true);
    xdp_action::XDP_PASS
}

#[inline(always)]
fn try_on_cpu(ctx: &XdpContext, frags: bool) -> Result<(), ()> {
    let pkt = LinearPacket::xdp(ctx);
    count(
        &ON_CPU_STATS,
        &classify(&pkt, port_class),
        frame_len(ctx, &pkt, frags),
    )
    .map(|_| ())
}
