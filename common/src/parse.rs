//! Bounds-checked header walk: Ethernet, up to two VLAN tags, IPv4 / IPv6 (with extension
//! headers), TCP / UDP ports.
//!
//! Every read goes through [`Packet::bytes`], which checks the end of the packet first. In XDP
//! that check is the `data + off + N <= data_end` comparison the verifier needs; on the host it
//! is a slice bound. The walk is `#[inline(always)]` so the kernel programs get straight-line
//! code with no calls.

use crate::{Class, PORT_HTTP, PORT_ZAP};

/// Where the packet bytes live. Implemented for byte slices here and for the XDP context in
/// the kernel programs.
pub trait Packet {
    /// The `N` bytes at `off`, or `None` when they are not all inside the packet.
    fn bytes<const N: usize>(&self, off: usize) -> Option<[u8; N]>;
}

impl Packet for [u8] {
    #[inline(always)]
    fn bytes<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        let end = off.checked_add(N)?;
        let src = self.get(off..end)?;
        let mut out = [0u8; N];
        out.copy_from_slice(src);
        Some(out)
    }
}

pub const ETH_HLEN: usize = 14;
pub const ETH_P_IPV4: u16 = 0x0800;
pub const ETH_P_IPV6: u16 = 0x86dd;
pub const ETH_P_8021Q: u16 = 0x8100;
pub const ETH_P_8021AD: u16 = 0x88a8;
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;
const VLAN_HLEN: usize = 4;
const MAX_VLAN_TAGS: usize = 2;
const IPV6_HLEN: usize = 40;
const MAX_IPV6_EXT_HEADERS: usize = 4;

/// Network layer found by the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    None,
    V4,
    V6,
}

/// What the walk found. Offsets are from the start of the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headers {
    pub vlan: bool,
    pub family: Family,
    pub l3_off: usize,
    /// IP protocol of the transport header (after IPv6 extension headers).
    pub proto: u8,
    /// Transport ports; `None` for non-first fragments and protocols without ports.
    pub ports: Option<(u16, u16)>,
}

/// A header that is cut short or invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

#[inline(always)]
fn be16<P: Packet + ?Sized>(p: &P, off: usize) -> Result<u16, Malformed> {
    p.bytes::<2>(off).map(u16::from_be_bytes).ok_or(Malformed)
}

#[inline(always)]
fn byte<P: Packet + ?Sized>(p: &P, off: usize) -> Result<u8, Malformed> {
    p.bytes::<1>(off).map(|b| b[0]).ok_or(Malformed)
}

/// Walks the headers of one Ethernet frame.
#[inline(always)]
pub fn walk<P: Packet + ?Sized>(p: &P) -> Result<Headers, Malformed> {
    let mut ethertype = be16(p, 12)?;
    let mut l3_off = ETH_HLEN;
    let mut vlan = false;
    for _ in 0..MAX_VLAN_TAGS {
        if ethertype != ETH_P_8021Q && ethertype != ETH_P_8021AD {
            break;
        }
        vlan = true;
        ethertype = be16(p, l3_off + 2)?;
        l3_off += VLAN_HLEN;
    }
    let none = Headers {
        vlan,
        family: Family::None,
        l3_off,
        proto: 0,
        ports: None,
    };
    match ethertype {
        ETH_P_IPV4 => walk_ipv4(p, none),
        ETH_P_IPV6 => walk_ipv6(p, none),
        // A third stacked tag is beyond what we unwrap: say so rather than call it non-IP.
        ETH_P_8021Q | ETH_P_8021AD => Err(Malformed),
        _ => Ok(none),
    }
}

#[inline(always)]
fn walk_ipv4<P: Packet + ?Sized>(p: &P, mut h: Headers) -> Result<Headers, Malformed> {
    let ver_ihl = byte(p, h.l3_off)?;
    let ihl = (ver_ihl & 0x0f) as usize * 4;
    if ver_ihl >> 4 != 4 || ihl < 20 {
        return Err(Malformed);
    }
    // The whole header, options included, must be present.
    byte(p, h.l3_off + ihl - 1)?;
    h.family = Family::V4;
    h.proto = byte(p, h.l3_off + 9)?;
    let frag_offset = be16(p, h.l3_off + 6)? & 0x1fff;
    if frag_offset == 0 {
        h.ports = walk_l4(p, h.proto, h.l3_off + ihl)?;
    }
    Ok(h)
}

#[inline(always)]
fn walk_ipv6<P: Packet + ?Sized>(p: &P, mut h: Headers) -> Result<Headers, Malformed> {
    if byte(p, h.l3_off)? >> 4 != 6 {
        return Err(Malformed);
    }
    byte(p, h.l3_off + IPV6_HLEN - 1)?;
    h.family = Family::V6;
    let mut next = byte(p, h.l3_off + 6)?;
    let mut off = h.l3_off + IPV6_HLEN;
    let mut first_fragment = true;
    for _ in 0..MAX_IPV6_EXT_HEADERS {
        let len = match next {
            // Hop-by-hop, routing, destination options: (len + 1) * 8 bytes.
            0 | 43 | 60 => (byte(p, off + 1)? as usize + 1) * 8,
            // Fragment header: fixed 8 bytes; only the first fragment carries ports.
            44 => {
                first_fragment = be16(p, off + 2)? >> 3 == 0;
                8
            }
            // Authentication header: (len + 2) * 4 bytes.
            51 => (byte(p, off + 1)? as usize + 2) * 4,
            _ => break,
        };
        next = byte(p, off)?;
        off += len;
    }
    h.proto = next;
    if first_fragment {
        h.ports = walk_l4(p, next, off)?;
    }
    Ok(h)
}

#[inline(always)]
fn walk_l4<P: Packet + ?Sized>(p: &P, proto: u8, off: usize) -> Result<Option<(u16, u16)>, Malformed> {
    match proto {
        IPPROTO_TCP => {
            let doff = (byte(p, off + 12)? >> 4) as usize * 4;
            if doff < 20 {
                return Err(Malformed);
            }
            byte(p, off + 19)?;
            Ok(Some((be16(p, off)?, be16(p, off + 2)?)))
        }
        IPPROTO_UDP => {
            byte(p, off + 7)?;
            Ok(Some((be16(p, off)?, be16(p, off + 2)?)))
        }
        _ => Ok(None),
    }
}

/// The result of classifying one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub class: Class,
    pub family: Family,
    pub vlan: bool,
}

/// Classifies a frame. `port_class` maps a TCP port to `PORT_HTTP`, `PORT_ZAP` or `PORT_NONE`;
/// the destination port is asked first, then the source port, so both directions of a
/// service's connections land in its class.
#[inline(always)]
pub fn classify<P: Packet + ?Sized>(p: &P, port_class: impl Fn(u16) -> u8) -> Verdict {
    let h = match walk(p) {
        Ok(h) => h,
        Err(Malformed) => {
            return Verdict {
                class: Class::Malformed,
                family: Family::None,
                vlan: false,
            }
        }
    };
    let class = match (h.family, h.proto, h.ports) {
        (Family::None, _, _) => Class::NonIp,
        (_, IPPROTO_TCP, Some((sport, dport))) => match port_class(dport) {
            PORT_HTTP => Class::Http,
            PORT_ZAP => Class::Zap,
            _ => match port_class(sport) {
                PORT_HTTP => Class::Http,
                PORT_ZAP => Class::Zap,
                _ => Class::OtherTcp,
            },
        },
        (_, IPPROTO_TCP, None) => Class::OtherTcp,
        _ => Class::OtherIp,
    };
    Verdict {
        class,
        family: h.family,
        vlan: h.vlan,
    }
}
