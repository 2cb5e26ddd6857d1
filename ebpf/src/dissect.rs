//! `rps_by_service`: the flow dissector of the rps-dissector arm, the only BPF hook before RPS
//! on a driver without native XDP. RPS picks a packet's CPU from its flow hash, and the kernel
//! takes that hash over what the dissector reports. For a TCP or UDP packet to or from a
//! service port (HTTP or ZAP, `PORT_CLASS`), this reports the service's side alone, the
//! client's address and port zeroed: every flow of one service hashes alike, so each service's
//! receive work lands on one CPU of RPS's set (which one, the kernel's hash seed decides).
//!
//! Anything else goes back to the kernel's own dissector (BPF_FLOW_DISSECTOR_CONTINUE, Linux
//! 6.1): other ports, other protocols, fragments, IPv6 extension headers, headers it cannot
//! read. So only the services' hashing changes.
//!
//! `lab_unhash`: the lab's stand-in for a wire (tc egress on the loader's veth). A veth hands
//! the receiver the hash the sender's socket gave each packet, so RPS never dissects there;
//! frames from a NIC without RXHASH (r8169, e1000) arrive with none and are dissected on the
//! receiving CPU. Invalidating the hash where the loader sends makes the lab do the same.
use aya_ebpf::{
    bindings::{__sk_buff, bpf_ret_code},
    helpers::{bpf_set_hash_invalid, bpf_skb_load_bytes},
    macros::{classifier, flow_dissector},
    programs::{FlowDissectorContext, TcContext},
    EbpfContext,
};
use rxsteer_common::PORT_NONE;

use crate::maps::port_class;

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const IPPROTO_TCP: u8 = 6;
const IPPROTO_UDP: u8 = 17;
const TC_ACT_UNSPEC: i32 = -1;

#[flow_dissector]
pub fn rps_by_service(mut ctx: FlowDissectorContext) -> u32 {
    match try_rps_by_service(&mut ctx) {
        Some(()) => bpf_ret_code::BPF_OK,
        None => bpf_ret_code::BPF_FLOW_DISSECTOR_CONTINUE,
    }
}

/// `N` bytes at `off` from the start of the packet's linear data, or None.
#[inline(always)]
fn load<const N: usize>(ctx: &FlowDissectorContext, off: usize) -> Option<[u8; N]> {
    let mut buf = [0u8; N];
    // SAFETY: the helper writes at most N bytes into buf; the kernel checks the packet range.
    let rc = unsafe {
        bpf_skb_load_bytes(
            ctx.as_ptr() as *const __sk_buff as *const _,
            off as u32,
            buf.as_mut_ptr().cast(),
            N as u32,
        )
    };
    (rc == 0).then_some(buf)
}

#[inline(always)]
fn try_rps_by_service(ctx: &mut FlowDissectorContext) -> Option<()> {
    let keys = ctx.flow_keys();
    let nhoff = keys.nhoff as usize;
    let n_proto = u16::from_be(keys.n_proto);
    // (protocol, offset of the L4 header, source and destination address words)
    let (ip_proto, thoff, mut src, mut dst) = if n_proto == ETH_P_IP {
        let h: [u8; 20] = load(ctx, nhoff)?;
        let ihl = (h[0] & 0x0f) as usize * 4;
        // Fragments (MF set or an offset) carry no ports after the first: the kernel's.
        if h[0] >> 4 != 4 || ihl < 20 || (u16::from_be_bytes([h[6], h[7]]) & 0x3fff) != 0 {
            return None;
        }
        let word = |i: usize| u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        (h[9], nhoff + ihl, [word(12), 0, 0, 0], [word(16), 0, 0, 0])
    } else if n_proto == ETH_P_IPV6 {
        let h: [u8; 40] = load(ctx, nhoff)?;
        let word = |i: usize| u32::from_ne_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        (
            h[6],
            nhoff + 40,
            [word(8), word(12), word(16), word(20)],
            [word(24), word(28), word(32), word(36)],
        )
    } else {
        return None;
    };
    if ip_proto != IPPROTO_TCP && ip_proto != IPPROTO_UDP {
        return None;
    }
    let p: [u8; 4] = load(ctx, thoff)?;
    let (mut sport, mut dport) = (
        u16::from_be_bytes([p[0], p[1]]),
        u16::from_be_bytes([p[2], p[3]]),
    );
    // The client's side is zeroed: to a service (a request) or from one (a reply).
    if port_class(dport) != PORT_NONE {
        (src, sport) = ([0; 4], 0);
    } else if port_class(sport) != PORT_NONE {
        (dst, dport) = ([0; 4], 0);
    } else {
        return None;
    }
    let keys = ctx.flow_keys();
    keys.thoff = thoff as u16;
    keys.ip_proto = ip_proto;
    keys.is_frag = 0;
    keys.is_first_frag = 0;
    keys.is_encap = 0;
    keys.sport = sport.to_be();
    keys.dport = dport.to_be();
    if n_proto == ETH_P_IP {
        keys.addr_proto = ETH_P_IP;
        keys.__bindgen_anon_1.__bindgen_anon_1.ipv4_src = src[0];
        keys.__bindgen_anon_1.__bindgen_anon_1.ipv4_dst = dst[0];
    } else {
        keys.addr_proto = ETH_P_IPV6;
        keys.__bindgen_anon_1.__bindgen_anon_2.ipv6_src = src;
        keys.__bindgen_anon_1.__bindgen_anon_2.ipv6_dst = dst;
    }
    Some(())
}

#[classifier]
pub fn lab_unhash(ctx: TcContext) -> i32 {
    // SAFETY: the context's own skb pointer.
    unsafe { bpf_set_hash_invalid(ctx.skb.skb) };
    TC_ACT_UNSPEC
}
