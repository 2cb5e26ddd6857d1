//! The XDP side of `rxsteer_common::parse::Packet`: a bounds check against `data_end` before
//! every read, in the form the verifier accepts (blixt's `ptr_at`).
use aya_ebpf::programs::XdpContext;
use rxsteer_common::parse::Packet;

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

impl Packet for XdpPacket {
    #[inline(always)]
    fn bytes<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        let at = self.start + off;
        if at + N > self.end {
            return None;
        }
        // SAFETY: [at, at + N) was just checked to lie inside the packet.
        Some(unsafe { core::ptr::read_unaligned(at as *const [u8; N]) })
    }
}
