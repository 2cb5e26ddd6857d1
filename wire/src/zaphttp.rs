//! ZAP-HTTP v0.3 (zap-proto/http v0.3.x, spec §2 and §4): a 4-byte big-endian length, then a
//! ZAP message whose root object is a 48-byte request or response section; text and bytes
//! fields follow in slot order with no padding; headers are a length-prefixed pair block.
use std::ops::Range;

use crate::zap::{self, u16_at, u32_at, Message, ZapError, HEADER_LEN};

pub const FRAME_REQUEST: u8 = 0x01;
pub const FRAME_RESPONSE: u8 = 0x02;
pub const FRAME_RESPONSE_HEAD: u8 = 0x03;
pub const FRAME_DATA: u8 = 0x04;
pub const FRAME_END: u8 = 0x05;
/// The fixed section of a request or response object: six 8-byte slots.
pub const FIXED: usize = 48;
/// What fasthttp sends when a response set no Content-Type.
pub const DEFAULT_CONTENT_TYPE: &[u8] = b"text/plain; charset=utf-8";

/// A validated header pair block: `count u32le, (keyLen u32le, key, valLen u32le, value)*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pairs<'a> {
    block: &'a [u8],
    count: u32,
}

impl<'a> Pairs<'a> {
    /// An empty slot means no pairs; a block that ends inside a field is an error. Bytes after
    /// the last declared pair are ignored.
    pub fn parse(block: &'a [u8]) -> Result<Self, ZapError> {
        if block.is_empty() {
            return Ok(Self::default());
        }
        if block.len() < 4 {
            return Err(ZapError::TruncatedPairs);
        }
        let count = u32_at(block, 0);
        let mut off = 4usize;
        for _ in 0..count {
            for _ in 0..2 {
                let len = u32_at(block, off) as usize;
                if block.len() < off + 4 {
                    return Err(ZapError::TruncatedPairs);
                }
                off = off
                    .checked_add(4 + len)
                    .filter(|&e| e <= block.len())
                    .ok_or(ZapError::TruncatedPairs)?;
            }
        }
        Ok(Self { block, count })
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> PairIter<'a> {
        PairIter {
            block: self.block,
            off: 4,
            left: self.count,
        }
    }

    /// The last value of a header, names compared case-insensitively.
    pub fn get(&self, name: &[u8]) -> Option<&'a [u8]> {
        self.iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .last()
            .map(|(_, v)| v)
    }
}

pub struct PairIter<'a> {
    block: &'a [u8],
    off: usize,
    left: u32,
}

impl<'a> Iterator for PairIter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let mut field = || {
            let len = u32_at(self.block, self.off) as usize;
            let s = &self.block[self.off + 4..self.off + 4 + len];
            self.off += 4 + len;
            s
        };
        let k = field();
        Some((k, field()))
    }
}

/// A decoded request frame, borrowing the frame's bytes.
#[derive(Clone, Debug)]
pub struct RequestView<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub proto: &'a [u8],
    pub headers: Pairs<'a>,
    pub body: &'a [u8],
    /// Where `body` is in the frame (the ZAP message), as offsets.
    pub body_at: Range<usize>,
    pub trailer: Pairs<'a>,
}

impl RequestView<'_> {
    /// The last Host pair (the reference decoder's rule).
    pub fn host(&self) -> Option<&[u8]> {
        self.headers.get(b"host")
    }
}

/// A decoded response frame.
#[derive(Clone, Debug)]
pub struct ResponseView<'a> {
    pub status: u16,
    pub reason: &'a [u8],
    pub proto: &'a [u8],
    pub headers: Pairs<'a>,
    pub body: &'a [u8],
    /// Where `body` is in the frame (the ZAP message), as offsets.
    pub body_at: Range<usize>,
    pub trailer: Pairs<'a>,
}

fn message_of(frame: &[u8], want: u8) -> Result<Message<'_>, ZapError> {
    let m = Message::parse(frame)?;
    if m.frame_type() != want {
        return Err(ZapError::FrameType {
            got: m.frame_type(),
            want,
        });
    }
    Ok(m)
}

/// Decodes one request frame (the ZAP message, without the 4-byte length prefix).
pub fn decode_request(frame: &[u8]) -> Result<RequestView<'_>, ZapError> {
    let m = message_of(frame, FRAME_REQUEST)?;
    let r = m.root;
    let method = m.bytes_slot(r);
    // The body's place once; its bytes are that range of the message.
    let body_at = m.slot_range(r + 32);
    Ok(RequestView {
        method: if method.is_empty() { b"GET" } else { method },
        target: m.bytes_slot(r + 8),
        proto: m.bytes_slot(r + 16),
        headers: Pairs::parse(m.bytes_slot(r + 24))?,
        body: &m.bytes[body_at.clone()],
        body_at,
        trailer: Pairs::parse(m.bytes_slot(r + 40))?,
    })
}

/// Decodes one complete response frame (type 0x02; a streaming head 0x03 is refused by name).
pub fn decode_response(frame: &[u8]) -> Result<ResponseView<'_>, ZapError> {
    let m = message_of(frame, FRAME_RESPONSE)?;
    let r = m.root;
    let body_at = m.slot_range(r + 32);
    Ok(ResponseView {
        status: u16_at(m.bytes, r),
        reason: m.bytes_slot(r + 8),
        proto: m.bytes_slot(r + 16),
        headers: Pairs::parse(m.bytes_slot(r + 24))?,
        body: &m.bytes[body_at.clone()],
        body_at,
        trailer: Pairs::parse(m.bytes_slot(r + 40))?,
    })
}

/// Header names the pair block never carries: the body slot's length is authoritative and the
/// trailer slot carries trailers.
fn excluded(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"content-length") || name.eq_ignore_ascii_case(b"trailer")
}

/// Appends a pair block: `first` names in that order (fasthttp's VisitAll order), then the
/// rest in insertion order; `default_first` is emitted when the first name is absent.
/// Returns the block's length (0: nothing written, the slot is null).
fn write_pairs(
    out: &mut Vec<u8>,
    headers: &[(&[u8], &[u8])],
    first: &[&[u8]],
    default_first: Option<&[u8]>,
) -> usize {
    let start = out.len();
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut n = 0u32;
    let mut push = |out: &mut Vec<u8>, k: &[u8], v: &[u8]| {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
        out.extend_from_slice(&(v.len() as u32).to_le_bytes());
        out.extend_from_slice(v);
        n += 1;
    };
    for (i, name) in first.iter().enumerate() {
        let mut found = false;
        for (k, v) in headers.iter().filter(|(k, _)| k.eq_ignore_ascii_case(name)) {
            push(out, k, v);
            found = true;
        }
        if i == 0 && !found {
            if let Some(v) = default_first {
                push(out, name, v);
            }
        }
    }
    for (k, v) in headers {
        if !excluded(k) && !first.iter().any(|f| k.eq_ignore_ascii_case(f)) {
            push(out, k, v);
        }
    }
    if n == 0 {
        out.truncate(start);
        return 0;
    }
    out[start..start + 4].copy_from_slice(&n.to_le_bytes());
    out.len() - start
}

/// Starts a frame: BE length placeholder, ZAP header, zeroed fixed section. Returns the
/// frame's start (after the prefix).
fn begin_frame(out: &mut Vec<u8>, frame_type: u8) -> usize {
    out.extend_from_slice(&[0; 4]);
    let start = zap::begin(out, frame_type);
    out.resize(out.len() + FIXED, 0);
    start
}

/// Patches size and BE prefix.
fn end_frame(out: &mut [u8], start: usize) {
    zap::finish(out, start);
    let len = (out.len() - start) as u32;
    out[start - 4..start].copy_from_slice(&len.to_be_bytes());
}

/// Appends `data` and points slot `slot` (relative to the frame) at it.
fn tail(out: &mut Vec<u8>, start: usize, slot: usize, data: &[u8]) {
    let at = out.len();
    out.extend_from_slice(data);
    zap::set_slot(out, start + slot, at, data.len());
}

/// Appends one request frame, length prefix included, as the reference encoder writes it.
/// Headers go in fasthttp's order: Host, Content-Type, User-Agent, then the rest as given;
/// Content-Length and Trailer are never sent.
pub fn encode_request(
    out: &mut Vec<u8>,
    method: &[u8],
    target: &[u8],
    headers: &[(&[u8], &[u8])],
    body: &[u8],
) {
    let start = begin_frame(out, FRAME_REQUEST);
    let root = HEADER_LEN;
    tail(
        out,
        start,
        root,
        if method.is_empty() { b"GET" } else { method },
    );
    tail(out, start, root + 8, target);
    tail(out, start, root + 16, b"HTTP/1.1");
    let at = out.len();
    let len = write_pairs(
        out,
        headers,
        &[b"Host", b"Content-Type", b"User-Agent"],
        None,
    );
    zap::set_slot(out, start + root + 24, at, len);
    tail(out, start, root + 32, body);
    end_frame(out, start);
}

/// Appends one response frame, length prefix included, as a fasthttp handler's response is
/// framed: reason from the status table when `reason` is empty; Content-Type first (defaulting
/// to `text/plain; charset=utf-8`), then Content-Encoding, Server, Set-Cookie, then the rest;
/// `trailers` (usually none) in declaration order.
pub fn encode_response(
    out: &mut Vec<u8>,
    status: u16,
    reason: &[u8],
    headers: &[(&[u8], &[u8])],
    body: &[u8],
    trailers: &[(&[u8], &[u8])],
) {
    let start = out.len() + 4;
    encode_response_head(out, status, reason, headers, body.len());
    out.extend_from_slice(body);
    if !trailers.is_empty() {
        let at = out.len();
        let len = write_pairs(out, trailers, &[], None);
        zap::set_slot(out, start + HEADER_LEN + 40, at, len);
        end_frame(out, start);
    }
}

/// Appends a response frame's head: everything up to the body, with the body slot, size and
/// length prefix already counting `body_len` bytes. The caller sends the body right after it
/// (one vectored write), so a large body is never copied into the frame. No trailers.
pub fn encode_response_head(
    out: &mut Vec<u8>,
    status: u16,
    reason: &[u8],
    headers: &[(&[u8], &[u8])],
    body_len: usize,
) {
    let start = begin_frame(out, FRAME_RESPONSE);
    let root = HEADER_LEN;
    let status = if status == 0 { 200 } else { status };
    out[start + root..start + root + 2].copy_from_slice(&status.to_le_bytes());
    tail(
        out,
        start,
        root + 8,
        if reason.is_empty() {
            status_text(status).as_bytes()
        } else {
            reason
        },
    );
    tail(out, start, root + 16, b"HTTP/1.1");
    let at = out.len();
    let first: [&[u8]; 4] = [
        b"Content-Type",
        b"Content-Encoding",
        b"Server",
        b"Set-Cookie",
    ];
    let len = write_pairs(out, headers, &first, Some(DEFAULT_CONTENT_TYPE));
    zap::set_slot(out, start + root + 24, at, len);
    let body_at = out.len();
    zap::set_slot(out, start + root + 32, body_at, body_len);
    let total = (body_at - start + body_len) as u32;
    out[start + 12..start + 16].copy_from_slice(&total.to_le_bytes());
    out[start - 4..start].copy_from_slice(&total.to_be_bytes());
}

/// fasthttp's status texts for the codes rxsteer uses, and its fallback.
pub fn status_text(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Request Entity Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Unknown Status Code",
    }
}

/// The bytes before each frame: its big-endian length. A frame [`split_frame`] returns starts
/// at this offset of the buffer it was split from.
pub const LEN_PREFIX: usize = 4;

/// Splits one frame off the front of a read buffer: `Ok(Some((frame, consumed)))` when a
/// whole frame is buffered, `Ok(None)` when more bytes are needed. A length of 0 or above
/// `max` is an error: the reference closes the connection, and nothing is allocated for an
/// announced length, so memory grows only with bytes received.
pub fn split_frame(buf: &[u8], max: usize) -> Result<Option<(&[u8], usize)>, FrameLenError> {
    if buf.len() < LEN_PREFIX {
        return Ok(None);
    }
    let n = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    if n == 0 {
        return Err(FrameLenError::Zero);
    }
    if n > max {
        return Err(FrameLenError::TooLarge { len: n, max });
    }
    Ok(buf
        .get(LEN_PREFIX..LEN_PREFIX + n)
        .map(|f| (f, LEN_PREFIX + n)))
}

#[derive(Debug, thiserror::Error, Clone, Copy, PartialEq, Eq)]
pub enum FrameLenError {
    #[error("zero-length frame")]
    Zero,
    #[error("frame length {len} over the limit {max}")]
    TooLarge { len: usize, max: usize },
}
