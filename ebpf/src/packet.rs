//! The XDP side of `rxsteer_common::parse::Packet`: one check against `data_end` per header,
//! in the form the verifier accepts (blixt's `ptr_at`), then direct loads inside it.
use aya_ebpf::programs::XdpContext;
use rxsteer_common::parse::{Header, Packet};

pub struct XdpPacket {
    start: usize,
    end: usize,
}

impl XdpPacket {
    #[inline(always)]
    pub fn new(ctx: &XdpContext) -> Self {
        Self {
            start: ctx.data(),
            end: ctx.data_end(),
        }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.end - self.start
    }
}

/// Start of a header whose `N` bytes were checked to lie inside the packet.
pub struct XdpHeader(usize);

impl Packet for XdpPacket {
    type Header<'a> = XdpHeader;

    #[inline(always)]
    fn header<const N: usize>(&self, off: usize) -> Option<XdpHeader> {
        let at = self.start + off;
        if at + N > self.end {
            return None;
        }
        Some(XdpHeader(at))
    }
}

impl Header for XdpHeader {
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
