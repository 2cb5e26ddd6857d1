//! `rx_driver_*`: where the driver received, counted without an XDP program on the interface.
//!
//! An observe-only XDP program in generic (skb) mode makes the kernel skip GRO on the
//! interface (netif_elide_gro) and copy every skb short of headroom
//! before it runs: on a NIC without native XDP, observing that way halves a receive-bound
//! server (docs/observer.md). These raw tracepoints fire on the driver's CPU, before RPS
//! picks a CPU and before the stack, and only read kernel structs:
//!   napi_poll   once per NAPI poll, with the packets the driver's poll received (`work`):
//!               every NAPI driver (r8169, veth with NAPI), a few events per thousand
//!               packets instead of one per packet
//!   netif_rx    per skb on the backlog path (loopback, veth without NAPI), whose polls are
//!               the per-CPU backlog's and name no device; `__netif_rx` fires no `_entry`
//!               event and `netif_rx()` fires both, so this one
//! Packets only, in no class: reading each packet's headers cost 130 ns or more per frame
//! (docs/observer.md); tc ingress still counts by class where the stack ran. The offsets come
//! from the kernel's BTF at load time (`DriverWatch`); the device each NAPI instance or skb
//! names is checked once per change of device on a CPU, not per event.
use aya_ebpf::{
    helpers::bpf_probe_read_kernel,
    macros::{map, raw_tracepoint},
    maps::{Array, PerCpuArray},
    programs::RawTracePointContext,
};
use rxsteer_common::DriverWatch;

use crate::maps::RX_STATS;

/// The interface to count and the struct layout (key 0), written by the loader before attach.
#[map]
pub static DRIVER_WATCH: Array<DriverWatch> = Array::with_max_entries(1, 0);

/// NAPI instances remembered per CPU. One was not enough: where two devices' NAPI polls
/// take turns on one CPU (the lab's two veth ends on a 2-CPU machine; a NIC beside a
/// veth or a second port) every poll missed, and the four probe reads of a miss made the
/// program cost 160 ns per run instead of about half that.
const NAPI_SLOTS: usize = 4;

/// Per CPU: the last NAPI instances and the last skb device seen, and whether each is the
/// watched interface. They change rarely, so the device's index and namespace are read on a
/// change, not per event.
#[repr(C)]
pub struct Seen {
    napi: [u64; NAPI_SLOTS],
    napi_watched: [u64; NAPI_SLOTS],
    /// The slot the next new NAPI instance replaces (round robin).
    napi_next: u64,
    dev: u64,
    dev_watched: u64,
}

#[map]
static DRIVER_SEEN: PerCpuArray<Seen> = PerCpuArray::with_max_entries(1, 0);

#[raw_tracepoint(tracepoint = "napi_poll")]
pub fn rx_driver_poll(ctx: RawTracePointContext) -> i32 {
    let _ = try_rx_driver_poll(&ctx);
    0
}

#[raw_tracepoint(tracepoint = "netif_rx")]
pub fn rx_driver_netif_rx(ctx: RawTracePointContext) -> i32 {
    let _ = try_rx_driver_netif_rx(&ctx);
    0
}

/// A field of type `T` at byte `off` of the kernel object at `base`.
#[inline(always)]
fn field<T>(base: *const u8, off: u32) -> Result<T, ()> {
    // SAFETY: bpf_probe_read_kernel checks the address and returns an error on a fault.
    unsafe { bpf_probe_read_kernel(base.wrapping_add(off as usize) as *const T) }.map_err(|_| ())
}

#[inline(always)]
fn watch_and_seen() -> Result<(&'static DriverWatch, &'static mut Seen), ()> {
    let w = DRIVER_WATCH.get(0).ok_or(())?;
    if w.ifindex == 0 {
        return Err(());
    }
    let seen = DRIVER_SEEN.get_ptr_mut(0).ok_or(())?;
    // SAFETY: this CPU's value; tracepoint programs run with migration disabled.
    Ok((w, unsafe { &mut *seen }))
}

/// TP_PROTO(struct napi_struct *napi, int work, int budget).
#[inline(always)]
fn try_rx_driver_poll(ctx: &RawTracePointContext) -> Result<(), ()> {
    let work = ctx.arg::<u64>(1) as i32;
    if work <= 0 {
        return Ok(());
    }
    let (w, seen) = watch_and_seen()?;
    let napi = ctx.arg::<u64>(0);
    let watched = match (0..NAPI_SLOTS).find(|&i| seen.napi[i] == napi) {
        Some(i) => seen.napi_watched[i],
        None => {
            let dev: *const u8 = field(napi as *const u8, w.napi_dev)?;
            let watched = is_watched(w, dev) as u64;
            let slot = seen.napi_next as usize % NAPI_SLOTS;
            seen.napi_next = seen.napi_next.wrapping_add(1);
            seen.napi[slot] = napi;
            seen.napi_watched[slot] = watched;
            watched
        }
    };
    if watched == 0 {
        return Ok(());
    }
    add(work as u64)
}

/// TP_PROTO(struct sk_buff *skb).
#[inline(always)]
fn try_rx_driver_netif_rx(ctx: &RawTracePointContext) -> Result<(), ()> {
    let (w, seen) = watch_and_seen()?;
    let dev: u64 = field(ctx.arg::<u64>(0) as *const u8, w.skb_dev)?;
    if dev != seen.dev {
        seen.dev = dev;
        seen.dev_watched = is_watched(w, dev as *const u8) as u64;
    }
    if seen.dev_watched == 0 {
        return Ok(());
    }
    add(1)
}

#[inline(always)]
fn add(packets: u64) -> Result<(), ()> {
    let stats = RX_STATS.get_ptr_mut(0).ok_or(())?;
    // SAFETY: this CPU's value, as above.
    unsafe { (*stats).unclassified += packets };
    Ok(())
}

/// Whether the device at `dev` is the watched one: its index, in the watched namespace.
#[inline(always)]
fn is_watched(w: &DriverWatch, dev: *const u8) -> bool {
    if dev.is_null() {
        return false;
    }
    let Ok(ifindex) = field::<i32>(dev, w.dev_ifindex) else {
        return false;
    };
    if ifindex as u32 != w.ifindex {
        return false;
    }
    let Ok(net) = field::<*const u8>(dev, w.dev_nd_net) else {
        return false;
    };
    field::<u32>(net, w.net_ns_inum).is_ok_and(|inum| inum == w.netns_inum)
}
