//! Bounds-checked header walk: Ethernet, up to two VLAN tags, IPv4 / IPv6 (with extension
//! headers), TCP / UDP ports.
//!
//! Every read goes through a [`Packet::header`], which checks the end of the packet first. In XDP
//! that check is the `data + off + N <= data_end` comparison the verifier needs; on the host it
//! is a slice bound. The walk is `#[inline(always)]` so the kernel programs get straight-line
//! code with no calls.

use crate::{Class, PORT_HTTP, PORT_ZAP};

/// Where the packet bytes live. Implemented for byte slices here and for the XDP context in
/// the kernel programs.
pub trait Packet {
    /// A span of the packet already checked to be in bounds.
    type Header<'a>: Header
    where
        Self: 'a;

    /// The `N` bytes at `off` as one checked header, or `None` when they are not all inside
    /// the packet. One check per header: reads inside it need no further check, which is
    /// also the shape the verifier accepts (every read covered by a check on its pointer).
    fn header<const N: usize>(&self, off: usize) -> Option<Self::Header<'_>>;
}

/// Reads inside a checked header. Callers pass constant indices below the header's `N`.
pub trait Header {
    fn u8(&self, i: usize) -> u8;
    /// A big-endian (network order) u16 at byte `i`.
    fn be16(&self, i: usize) -> u16;
}

impl Packet for [u8] {
    type Header<'a> = &'a [u8];

    #[inline(always)]
    fn header<const N: usize>(&self, off: usize) -> Option<&[u8]> {
        self.get(off..off.checked_add(N)?)
    }
}

impl Header for &[u8] {
    #[inline(always)]
    fn u8(&self, i: usize) -> u8 {
        self[i]
    }

    #[inline(always)]
    fn be16(&self, i: usize) -> u16 {
        u16::from_be_bytes([self[i], self[i + 1]])
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
    /// Transport ports, valid when `has_ports` (0 otherwise). Plain fields rather than an
    /// `Option`: an `Option`'s undefined payload lets LLVM reuse a register holding a packet
    /// pointer in arithmetic the verifier then rejects.
    pub sport: u16,
    pub dport: u16,
    /// False for non-first fragments and protocols without ports.
    pub has_ports: bool,
}

impl Headers {
    /// (source, destination) port, when the frame carries them.
    pub fn ports(&self) -> Option<(u16, u16)> {
        self.has_ports.then_some((self.sport, self.dport))
    }
}

/// A header that is cut short or invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

#[inline(always)]
fn be16<P: Packet + ?Sized>(p: &P, off: usize) -> Result<u16, Malformed> {
    p.header::<2>(off).map(|h| h.be16(0)).ok_or(Malformed)
}

#[inline(always)]
fn byte<P: Packet + ?Sized>(p: &P, off: usize) -> Result<u8, Malformed> {
    p.header::<1>(off).map(|h| h.u8(0)).ok_or(Malformed)
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
        sport: 0,
        dport: 0,
        has_ports: false,
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
    // Fixed fields come from one checked 20-byte read: the verifier only trusts reads covered
    // by a check on the same pointer, and the options check below has a variable offset.
    let ip = p.header::<20>(h.l3_off).ok_or(Malformed)?;
    let ver_ihl = ip.u8(0);
    let ihl = (ver_ihl & 0x0f) as usize * 4;
    if ver_ihl >> 4 != 4 || ihl < 20 {
        return Err(Malformed);
    }
    // The whole header, options included, must be present.
    byte(p, h.l3_off + ihl - 1)?;
    h.family = Family::V4;
    h.proto = ip.u8(9);
    let frag_offset = ip.be16(6) & 0x1fff;
    if frag_offset == 0 {
        let ports = walk_l4(p, h.proto, h.l3_off + ihl)?;
        set_ports(&mut h, ports);
    }
    Ok(h)
}

#[inline(always)]
fn walk_ipv6<P: Packet + ?Sized>(p: &P, mut h: Headers) -> Result<Headers, Malformed> {
    let ip = p.header::<IPV6_HLEN>(h.l3_off).ok_or(Malformed)?;
    if ip.u8(0) >> 4 != 6 {
        return Err(Malformed);
    }
    h.family = Family::V6;
    let mut next = ip.u8(6);
    let mut off = h.l3_off + IPV6_HLEN;
    let mut first_fragment = true;
    for _ in 0..MAX_IPV6_EXT_HEADERS {
        if !matches!(next, 0 | 43 | 44 | 51 | 60) {
            break;
        }
        // Every extension header is at least 8 bytes: read them in one check.
        let ext = p.header::<8>(off).ok_or(Malformed)?;
        let len = match next {
            // Fragment header: fixed 8 bytes; only the first fragment carries ports.
            44 => {
                first_fragment = ext.be16(2) >> 3 == 0;
                8
            }
            // Authentication header: (len + 2) * 4 bytes.
            51 => (ext.u8(1) as usize + 2) * 4,
            // Hop-by-hop, routing, destination options: (len + 1) * 8 bytes.
            _ => (ext.u8(1) as usize + 1) * 8,
        };
        next = ext.u8(0);
        off += len;
    }
    h.proto = next;
    if first_fragment {
        let ports = walk_l4(p, next, off)?;
        set_ports(&mut h, ports);
    }
    Ok(h)
}

#[inline(always)]
fn set_ports(h: &mut Headers, ports: Option<(u16, u16)>) {
    if let Some((s, d)) = ports {
        h.sport = s;
        h.dport = d;
        h.has_ports = true;
    }
}

#[inline(always)]
fn walk_l4<P: Packet + ?Sized>(
    p: &P,
    proto: u8,
    off: usize,
) -> Result<Option<(u16, u16)>, Malformed> {
    match proto {
        IPPROTO_TCP => {
            let tcp = p.header::<20>(off).ok_or(Malformed)?;
            if tcp.u8(12) >> 4 < 5 {
                return Err(Malformed);
            }
            Ok(Some((tcp.be16(0), tcp.be16(2))))
        }
        IPPROTO_UDP => {
            let udp = p.header::<8>(off).ok_or(Malformed)?;
            Ok(Some((udp.be16(0), udp.be16(2))))
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
    classify_headers(&walk(p), port_class)
}

/// [`classify`] for headers already walked (the steering program needs both).
#[inline(always)]
pub fn classify_headers(h: &Result<Headers, Malformed>, port_class: impl Fn(u16) -> u8) -> Verdict {
    let h = match h {
        Ok(h) => h,
        Err(Malformed) => {
            return Verdict {
                class: Class::Malformed,
                family: Family::None,
                vlan: false,
            }
        }
    };
    let class = match (h.family, h.proto, h.ports()) {
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

#[inline(always)]
fn mix(h: u32, word: u32) -> u32 {
    (h ^ word).wrapping_mul(0x9e37_79b1).rotate_left(13)
}

/// Hash of the 5-tuple (source and destination address, ports, protocol), IPv4 or IPv6.
/// Unlike an address-pair hash, the many connections of one client spread over the set.
/// IPv6 addresses are XOR-folded to 32 bits first, so both families cost three multiply
/// rounds and the finaliser. Non-first fragments carry no ports and hash with ports 0.
/// `None` for non-IP.
#[inline(always)]
pub fn flow_hash<P: Packet + ?Sized>(p: &P, h: &Headers) -> Option<u32> {
    let (sport, dport) = (h.sport, h.dport);
    // The 16-bit halves of the source then destination address, XOR-folded per address.
    let (mut src, mut dst) = (0u32, 0u32);
    match h.family {
        Family::V4 => {
            let a = p.header::<8>(h.l3_off + 12)?;
            src = ((a.be16(0) as u32) << 16) | a.be16(2) as u32;
            dst = ((a.be16(4) as u32) << 16) | a.be16(6) as u32;
        }
        Family::V6 => {
            let a = p.header::<32>(h.l3_off + 8)?;
            for i in 0..4 {
                src ^= ((a.be16(4 * i) as u32) << 16) | a.be16(4 * i + 2) as u32;
                dst ^= ((a.be16(16 + 4 * i) as u32) << 16) | a.be16(16 + 4 * i + 2) as u32;
            }
        }
        Family::None => return None,
    }
    let mut x = mix(
        0x5eed_1234 ^ h.proto as u32,
        ((sport as u32) << 16) | dport as u32,
    );
    x = mix(x, src);
    x = mix(x, dst);
    // murmur3's finaliser: every input bit reaches every output bit.
    x ^= x >> 16;
    x = x.wrapping_mul(0x85eb_ca6b);
    x ^= x >> 13;
    x = x.wrapping_mul(0xc2b2_ae35);
    Some(x ^ (x >> 16))
}

/// Index into a set of `len` CPUs for `hash`, without a division: (hash * len) >> 32.
#[inline(always)]
pub fn pick(hash: u32, len: u32) -> u32 {
    ((hash as u64 * len as u64) >> 32) as u32
}
