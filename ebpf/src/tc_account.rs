//! `tc_ingress` / `tc_egress`: observe-only tc programs (TCX, or clsact before 6.6).
//!
//! Ingress runs where the kernel's stack processes each packet, after RPS or cpumap moved it:
//! XDP counts where the driver received, this counts where the stack ran, so in RPS mode it
//! is direct proof of steering. Egress runs where replies are transmitted (XPS). Both always
//! let the packet go on (TC_ACT_UNSPEC: the next program, or the default action).
use aya_ebpf::{macros::classifier, maps::PerCpuArray, programs::TcContext};
use rxsteer_common::{parse::classify, RxStats};

use crate::{
    maps::{port_class, TC_EGRESS_STATS, TC_INGRESS_STATS},
    packet::LinearPacket,
    rx_account::count,
};

const TC_ACT_UNSPEC: i32 = -1;

#[classifier]
pub fn tc_ingress(ctx: TcContext) -> i32 {
    let _ = try_tc_count(&ctx, &TC_INGRESS_STATS);
    TC_ACT_UNSPEC
}

#[classifier]
pub fn tc_egress(ctx: TcContext) -> i32 {
    let _ = try_tc_count(&ctx, &TC_EGRESS_STATS);
    TC_ACT_UNSPEC
}

#[inline(always)]
fn try_tc_count(ctx: &TcContext, map: &PerCpuArray<RxStats>) -> Result<(), ()> {
    let pkt = LinearPacket::tc(ctx);
    count(map, &classify(&pkt, port_class), ctx.len() as u64).map(|_| ())
}
