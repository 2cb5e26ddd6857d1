//! `rx_driver_*`: where the driver received, counted without an XDP program on the interface.
//!
//! An observe-only XDP program in generic (skb) mode makes the kernel copy every GRO'd skb
//! before it runs: on a NIC without native XDP, observing that way halves a receive-bound
//! server (docs/observer.md). These raw tracepoints fire on the driver's CPU, before RPS
//! picks a CPU and before the stack, and only read the skb:
//!   napi_gro_receive_entry   drivers that hand frames to GRO (r8169, veth's NAPI)
//!   napi_gro_frags_entry     drivers that build frags skbs for GRO
//!   netif_receive_skb_entry  drivers without GRO
//!   netif_receive_skb_list_entry  drivers that receive in lists
//!   netif_rx                 the backlog path (loopback, veth without NAPI); the `_entry`
//!                            event would miss `__netif_rx`, and both fire for `netif_rx()`
//! Each path fires exactly one of them per skb the driver hands up. Every program reads the
//! same few fields, at offsets the loader takes from the kernel's BTF (`DriverWatch`),
//! counts only the watched interface, and classifies the frame from a copy of its first
//! header bytes with the same walk XDP uses.
use aya_ebpf::{
    helpers::{bpf_probe_read_kernel, bpf_probe_read_kernel_buf},
    macros::{map, raw_tracepoint},
    maps::Array,
    programs::RawTracePointContext,
};
use rxsteer_common::{
    parse::{classify, Verdict},
    DriverWatch, DRIVER_HEADER_BYTES,
};

use crate::{
    maps::{port_class, RX_STATS},
    rx_account::count,
};

/// The interface to count and the skb layout (key 0), written by the loader before attach.
#[map]
pub static DRIVER_WATCH: Array<DriverWatch> = Array::with_max_entries(1, 0);

/// `mac_header` of an skb whose link-layer header was never set.
const NO_MAC_HEADER: u16 = 0xffff;

#[raw_tracepoint(tracepoint = "napi_gro_receive_entry")]
pub fn rx_driver_gro(ctx: RawTracePointContext) -> i32 {
    let _ = try_rx_driver(&ctx);
    0
}

#[raw_tracepoint(tracepoint = "napi_gro_frags_entry")]
pub fn rx_driver_gro_frags(ctx: RawTracePointContext) -> i32 {
    let _ = try_rx_driver(&ctx);
    0
}

#[raw_tracepoint(tracepoint = "netif_receive_skb_entry")]
pub fn rx_driver_skb(ctx: RawTracePointContext) -> i32 {
    let _ = try_rx_driver(&ctx);
    0
}

#[raw_tracepoint(tracepoint = "netif_receive_skb_list_entry")]
pub fn rx_driver_skb_list(ctx: RawTracePointContext) -> i32 {
    let _ = try_rx_driver(&ctx);
    0
}

#[raw_tracepoint(tracepoint = "netif_rx")]
pub fn rx_driver_netif_rx(ctx: RawTracePointContext) -> i32 {
    let _ = try_rx_driver(&ctx);
    0
}

/// A field of type `T` at byte `off` of the kernel object at `base`.
#[inline(always)]
fn field<T>(base: *const u8, off: u32) -> Result<T, ()> {
    // SAFETY: bpf_probe_read_kernel checks the address and returns an error on a fault.
    unsafe { bpf_probe_read_kernel(base.wrapping_add(off as usize) as *const T) }.map_err(|_| ())
}

#[inline(always)]
fn try_rx_driver(ctx: &RawTracePointContext) -> Result<(), ()> {
    let w = DRIVER_WATCH.get(0).ok_or(())?;
    if w.ifindex == 0 {
        return Err(());
    }
    // TP_PROTO(const struct sk_buff *skb) for every one of the events above.
    let skb = ctx.arg::<u64>(0) as *const u8;
    let dev: *const u8 = field(skb, w.skb_dev)?;
    let ifindex: i32 = field(dev, w.dev_ifindex)?;
    if ifindex as u32 != w.ifindex {
        return Ok(());
    }
    let net: *const u8 = field(dev, w.dev_nd_net)?;
    let inum: u32 = field(net, w.net_ns_inum)?;
    if inum != w.netns_inum {
        return Ok(());
    }
    let len: u32 = field(skb, w.skb_len)?;
    let head: *const u8 = field(skb, w.skb_head)?;
    let data: *const u8 = field(skb, w.skb_data)?;
    let mac: u16 = field(skb, w.skb_mac_header)?;
    let (verdict, bytes) = if mac == NO_MAC_HEADER {
        (classify(&[][..], port_class), len as u64)
    } else {
        let frame = head.wrapping_add(mac as usize);
        // The link-layer header the driver already pulled, counted as XDP counts a frame.
        let pulled = (data as u64).saturating_sub(frame as u64);
        (headers_of(frame, len as u64 + pulled), len as u64 + pulled)
    };
    count(&RX_STATS, &verdict, bytes).map(|_| ())
}

/// Classifies the frame at `frame` (`bytes` long) from a copy of its first header bytes.
#[inline(always)]
fn headers_of(frame: *const u8, bytes: u64) -> Verdict {
    let mut buf = [0u8; DRIVER_HEADER_BYTES];
    // SAFETY: as in `field`; on a fault the copy is zeroed and the walk finds no IP header.
    let _ = unsafe { bpf_probe_read_kernel_buf(frame, &mut buf) };
    let n = (bytes as usize).min(DRIVER_HEADER_BYTES);
    classify(&buf[..n], port_class)
}
