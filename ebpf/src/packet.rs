//! The kernel side of `rxsteer_common::parse::Packet`, for XDP and tc alike: one check
//! against `data_end` per header, in the form the verifier accepts (blixt's `ptr_at`), then
//! direct loads inside it. Both hooks see the frame from its Ethernet header; only the
//! linear part is reachable this way, which is where the headers are.
use aya_ebpf::programs::{TcContext, XdpContext};
use rxsteer_common::parse::{Header, Packet};

pub struct LinearPacket {
    start: usize,
    end: usize,
}

impl LinearPacket {
    #[inline(always)]
    pub fn xdp(ctx: &XdpContext) -> Self {
        Self {
            start: ctx.data(),
            end: ctx.data_end(),
        }
    }

    #[inline(always)]
    pub fn tc(ctx: &TcContext) -> Self {
        Self {
            start: ctx.data(),
            end: ctx.data_end(),
        }
    }

    /// Bytes of the linear part (for XDP without frags, the whole frame).
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.end - self.start
    }
}

/// Start of a header whose `N` bytes were checked to lie inside the packet.
pub struct PacketHeader(usize);

impl Packet for LinearPacket {
    type Header<'a> = PacketHeader;

    #[inline(always)]
    fn header<const N: usize>(&self, off: usize) -> Option<PacketHeader> {
        let at = self.start + off;
        if at + N > self.end {
            return None;
        }
        Some(PacketHeader(at))
    }
}

impl Header for PacketHeader {
    #[inline(always)]
    fn u8(&self, i: usize) -> u8 {
        // SAFETY: i < N, and [at, at + N) was checked to be inside the packet.
        unsafe { *((self.0 + i) as *const u8) }
    }

    #[inline(always)]
    fn be16(&self, i: usize) -> u16 {
        // SAFETY: as above. Header fields read as u16 sit at even offsets from the frame
        // start; x86-64 and arm64 JITs load unaligned packet data correctly in any case.
        u16::from_be(unsafe { *((self.0 + i) as *const u16) })
    }
}
