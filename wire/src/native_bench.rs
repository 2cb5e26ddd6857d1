//! The zap-proto/bench "native ZAP" arm (spec §3.5): a message with a 24-byte root object (body
//! bytes at 0, a headers list of alternating key/value entries at 8, status u32 at 16). The
//! list is written first, so the root points backwards to it: list and struct offsets are
//! signed, unlike text/bytes offsets.
use crate::zap::{self, u32_at, Message, ZapError};

const FIXED: usize = 24;

/// A decoded message, borrowing the input.
#[derive(Clone, Copy, Debug)]
pub struct BenchMsg<'a> {
    pub body: &'a [u8],
    pub status: u32,
    list: &'a [u8],
    count: u32,
}

impl<'a> BenchMsg<'a> {
    pub fn decode(msg: &'a [u8]) -> Result<Self, ZapError> {
        let m = Message::parse(msg)?;
        let r = m.root;
        let slot = r + 8;
        // Signed relOffset; 0 is null; a target below 16 or past the end reads as empty.
        let rel = u32_at(m.bytes, slot) as i32 as i64;
        let count = u32_at(m.bytes, slot + 4);
        let start = slot as i64 + rel;
        let (list, count) = if rel == 0
            || start < 16
            || start as usize > m.bytes.len()
            || count as usize > m.bytes.len()
        {
            (&m.bytes[..0], 0)
        } else {
            (&m.bytes[start as usize..], count)
        };
        Ok(Self {
            body: m.bytes_slot(r),
            status: u32_at(m.bytes, r + 16),
            list,
            count,
        })
    }

    /// The header entries in order (key, value, key, value, ...). A truncated entry ends it.
    pub fn entries(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let (list, mut off) = (self.list, 0usize);
        (0..self.count).map_while(move |_| {
            let len = u32_at(list, off) as usize;
            let e = list.get(off + 4..off + 4 + len)?;
            off += 4 + len;
            Some(e)
        })
    }
}

/// Appends a message: the entries list, padding to 8, the root object, the body.
pub fn encode(out: &mut Vec<u8>, body: &[u8], entries: &[&[u8]], status: u32) {
    let start = zap::begin(out, 0);
    let list_at = out.len();
    for e in entries {
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e);
    }
    out.resize(start + (out.len() - start).div_ceil(8) * 8, 0);
    let root = out.len();
    out[start + 8..start + 12].copy_from_slice(&((root - start) as u32).to_le_bytes());
    out.resize(root + FIXED, 0);
    if !entries.is_empty() {
        let rel = list_at as i64 - (root + 8) as i64;
        out[root + 8..root + 12].copy_from_slice(&(rel as i32).to_le_bytes());
        out[root + 12..root + 16].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    }
    out[root + 16..root + 20].copy_from_slice(&status.to_le_bytes());
    let at = out.len();
    out.extend_from_slice(body);
    zap::set_slot(out, root, at, body.len());
    zap::finish(out, start);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_example_byte_for_byte() {
        let mut m = Vec::new();
        let entries: [&[u8]; 4] = [
            b"Content-Type",
            b"application/json",
            b"X-Org-Id",
            b"acme-corp",
        ];
        encode(&mut m, b"0123456789abcdef", &entries, 200);
        assert_eq!(m.len(), 120, "total size");
        assert_eq!(u32_at(&m, 8), 80, "root offset");
        assert_eq!(u32_at(&m, 12), 120);
        assert_eq!(u32_at(&m, 88), 0xffff_ffb8, "headers slot rel -72 -> 16");
        assert_eq!(u32_at(&m, 92), 4, "4 entries");
        assert_eq!(
            (u32_at(&m, 80), u32_at(&m, 84)),
            (24, 16),
            "body rel 24 -> 104, len 16"
        );
        assert_eq!(u32_at(&m, 96), 200, "status at 96");
        assert_eq!(&m[77..80], &[0, 0, 0], "padding after the 61-byte list");
        let d = BenchMsg::decode(&m).unwrap();
        assert_eq!((d.body, d.status), (&b"0123456789abcdef"[..], 200));
        assert_eq!(d.entries().collect::<Vec<_>>(), entries);
    }

    #[test]
    fn lists_that_overrun_stop_instead_of_panicking() {
        let mut m = Vec::new();
        encode(&mut m, b"b", &[b"k", b"v"], 1);
        let count_at = u32_at(&m, 8) as usize + 12;
        // A count larger than the message is rejected, as zap-proto/go does: no entries.
        m[count_at..count_at + 4].copy_from_slice(&1000u32.to_le_bytes());
        assert_eq!(BenchMsg::decode(&m).unwrap().entries().count(), 0);
        // A plausible count that overruns the entries: the two real ones, then the walk runs
        // into padding and the object and stops at the first entry past the end.
        m[count_at..count_at + 4].copy_from_slice(&20u32.to_le_bytes());
        let got: Vec<&[u8]> = BenchMsg::decode(&m).unwrap().entries().collect();
        assert_eq!(&got[..2], &[&b"k"[..], &b"v"[..]]);
        assert!(got.len() < 20, "{} entries", got.len());
    }
}
