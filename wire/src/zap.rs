//! The ZAP message: a 16-byte little-endian header, then objects whose pointer slots hold
//! offsets relative to the slot itself (zap-proto/go; spec §3).
use std::ops::Range;

use thiserror::Error;

pub const MAGIC: [u8; 4] = *b"ZAP\0";
pub const HEADER_LEN: usize = 16;
/// Largest frame the reference reader accepts (the BE length prefix of ZAP-HTTP).
pub const MAX_FRAME: usize = 64 << 20;

#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
pub enum ZapError {
    #[error("message shorter than the 16-byte header")]
    Short,
    #[error("bad magic (not ZAP\\0)")]
    Magic,
    #[error("unsupported version {0} (1 or 2)")]
    Version(u16),
    #[error("size field {size} outside 16..={available}")]
    Size { size: u32, available: usize },
    #[error("root offset {root} outside 16..{size}")]
    Root { root: u32, size: u32 },
    #[error("frame type {got:#04x}, expected {want:#04x}")]
    FrameType { got: u8, want: u8 },
    #[error("truncated header block")]
    TruncatedPairs,
}

#[inline]
pub fn u16_at(b: &[u8], off: usize) -> u16 {
    b.get(off..off + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

#[inline]
pub fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

#[inline]
pub fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .map_or(0, |s| u64::from_le_bytes(s.try_into().unwrap()))
}

/// A validated message: `bytes` is cut to the header's `size`; bytes past it are ignored.
#[derive(Clone, Copy, Debug)]
pub struct Message<'a> {
    pub bytes: &'a [u8],
    pub version: u16,
    pub flags: u16,
    pub root: usize,
}

impl<'a> Message<'a> {
    pub fn parse(b: &'a [u8]) -> Result<Self, ZapError> {
        if b.len() < HEADER_LEN {
            return Err(ZapError::Short);
        }
        if b[0..4] != MAGIC {
            return Err(ZapError::Magic);
        }
        let version = u16_at(b, 4);
        if version != 1 && version != 2 {
            return Err(ZapError::Version(version));
        }
        let size = u32_at(b, 12);
        if (size as usize) < HEADER_LEN || size as usize > b.len() {
            return Err(ZapError::Size {
                size,
                available: b.len(),
            });
        }
        let root = u32_at(b, 8);
        if root < HEADER_LEN as u32 || root >= size {
            return Err(ZapError::Root { root, size });
        }
        Ok(Self {
            bytes: &b[..size as usize],
            version,
            flags: u16_at(b, 6),
            root: root as usize,
        })
    }

    /// The application message type: the flags' high byte.
    pub fn frame_type(&self) -> u8 {
        (self.flags >> 8) as u8
    }

    /// A text/bytes slot at absolute offset `slot`: `{rel u32 (unsigned, forward), len u32}`.
    /// rel 0 is null. A target outside the message (or below 16) reads as empty, as the Go
    /// reader does; a decoder must not be stricter than the reference.
    pub fn bytes_slot(&self, slot: usize) -> &'a [u8] {
        &self.bytes[self.slot_range(slot)]
    }

    /// Where slot `slot`'s bytes are in the message, as offsets: what a caller that needs the
    /// position (to send a body from the buffer it arrived in) uses instead of subtracting
    /// addresses. A null or out-of-message slot is the empty range `0..0`, always in bounds.
    pub fn slot_range(&self, slot: usize) -> Range<usize> {
        let rel = u32_at(self.bytes, slot) as usize;
        let len = u32_at(self.bytes, slot + 4) as usize;
        if rel == 0 {
            return 0..0;
        }
        let start = slot + rel;
        match start.checked_add(len) {
            Some(end) if start >= HEADER_LEN && end <= self.bytes.len() => start..end,
            _ => 0..0,
        }
    }
}

/// Appends a message header with `size` 0, to be patched by [`finish`].
pub fn begin(out: &mut Vec<u8>, frame_type: u8) -> usize {
    let start = out.len();
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&((frame_type as u16) << 8).to_le_bytes());
    out.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    start
}

/// Patches the size of the message that starts at `start`.
pub fn finish(out: &mut [u8], start: usize) {
    let size = (out.len() - start) as u32;
    out[start + 12..start + 16].copy_from_slice(&size.to_le_bytes());
}

/// Writes slot `slot` (absolute) to point at `data_start` with `len` bytes; empty data is null.
pub fn set_slot(out: &mut [u8], slot: usize, data_start: usize, len: usize) {
    let (rel, len) = if len == 0 {
        (0u32, 0u32)
    } else {
        ((data_start - slot) as u32, len as u32)
    };
    out[slot..slot + 4].copy_from_slice(&rel.to_le_bytes());
    out[slot + 4..slot + 8].copy_from_slice(&len.to_le_bytes());
}
