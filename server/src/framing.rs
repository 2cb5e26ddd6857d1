//! The two framings both engines serve, behind one small trait: split a whole request off the
//! front of the buffered bytes, and encode a response (may_minihttp's shape).
//! [`crate::batch::answer`], which the epoll loop ([`crate::epoll`]) and the io_uring engine
//! ([`crate::uring`]) both call, is written once over it.
use std::ops::Range;

use rxsteer_wire::{
    http1::{parse_request, write_head, write_response},
    zaphttp::{decode_request, encode_response, encode_response_head, split_frame, LEN_PREFIX},
};

use crate::{config::ConnConfig, handlers::CT_TEXT};

/// One whole request, borrowed from the read buffer.
pub struct Request<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    pub content_type: Option<&'a [u8]>,
    pub body: &'a [u8],
    /// Where `body` is in the bytes the request was split from, as offsets.
    pub body_at: Range<usize>,
    /// Bytes of the read buffer this request used.
    pub used: usize,
    /// The client asked to close after this response.
    pub close: bool,
}

pub enum Split<'a> {
    Whole(Request<'a>),
    /// The next request is not all here yet.
    Partial,
    /// Input the framing refuses: its answer, if it has one, is already in `out`; the
    /// connection closes after sending it.
    Refused,
}

/// Runs `$body` with `$F` the framing of `$proto`: the one place a protocol's name meets its
/// framing. Each engine picks the framing once per connection, at accept, through it.
#[macro_export]
#[doc(hidden)]
macro_rules! with_framing {
    ($proto:expr, $F:ident => $body:expr) => {
        match $proto {
            $crate::Proto::Http => {
                type $F = $crate::framing::Http;
                $body
            }
            $crate::Proto::Zap => {
                type $F = $crate::framing::Zap;
                $body
            }
        }
    };
}
pub use with_framing;

pub trait Framing {
    /// The most bytes one request may hold in the read buffer.
    fn read_limit(cfg: &ConnConfig) -> usize;
    /// The request at the front of `data`.
    fn split<'a>(data: &'a [u8], cfg: &ConnConfig, out: &mut Vec<u8>) -> Split<'a>;
    /// A whole response.
    fn encode(out: &mut Vec<u8>, status: u16, content_type: &[u8], body: &[u8], close: bool);
    /// A response's head only, for a body sent after it without copying.
    fn encode_head(out: &mut Vec<u8>, status: u16, content_type: &[u8], len: usize, close: bool);
}

/// HTTP/1.1 keep-alive with pipelining.
pub struct Http;

impl Framing for Http {
    fn read_limit(cfg: &ConnConfig) -> usize {
        cfg.http.max_header_bytes + cfg.http.max_body
    }

    fn split<'a>(data: &'a [u8], cfg: &ConnConfig, out: &mut Vec<u8>) -> Split<'a> {
        match parse_request(data, &cfg.http) {
            Ok(Some(r)) => Split::Whole(Request {
                method: r.method.as_bytes(),
                target: r.path.as_bytes(),
                content_type: r.content_type,
                body: r.body,
                body_at: r.body_at,
                used: r.consumed,
                close: r.close,
            }),
            Ok(None) => Split::Partial,
            // The error's status and reason, then close (what nginx does too).
            Err(e) => {
                write_response(out, e.status(), CT_TEXT, e.to_string().as_bytes(), true);
                Split::Refused
            }
        }
    }

    fn encode(out: &mut Vec<u8>, status: u16, content_type: &[u8], body: &[u8], close: bool) {
        write_response(out, status, content_type, body, close);
    }

    fn encode_head(out: &mut Vec<u8>, status: u16, content_type: &[u8], len: usize, close: bool) {
        write_head(out, status, content_type, len, close);
    }
}

/// ZAP-HTTP: one request in flight per connection by the reference client; pipelined frames
/// are answered in order. ZAP has no close flag: a connection ends when the client closes it.
pub struct Zap;

impl Framing for Zap {
    fn read_limit(cfg: &ConnConfig) -> usize {
        cfg.max_frame + 4
    }

    fn split<'a>(data: &'a [u8], cfg: &ConnConfig, out: &mut Vec<u8>) -> Split<'a> {
        match split_frame(data, cfg.max_frame) {
            Ok(Some((frame, used))) => match decode_request(frame) {
                Ok(r) => Split::Whole(Request {
                    method: r.method,
                    target: r.target,
                    content_type: r.headers.get(b"content-type"),
                    body: r.body,
                    body_at: LEN_PREFIX + r.body_at.start..LEN_PREFIX + r.body_at.end,
                    used,
                    close: false,
                }),
                // As the reference: 400 with the reason as text, then close.
                Err(e) => {
                    let msg = format!("malformed request frame: {e}");
                    encode_response(out, 400, b"", &[], msg.as_bytes(), &[]);
                    Split::Refused
                }
            },
            Ok(None) => Split::Partial,
            // A zero or oversized length: the reference closes without a reply.
            Err(_) => Split::Refused,
        }
    }

    fn encode(out: &mut Vec<u8>, status: u16, content_type: &[u8], body: &[u8], _close: bool) {
        encode_response(
            out,
            status,
            b"",
            &[(&b"Content-Type"[..], content_type)],
            body,
            &[],
        );
    }

    fn encode_head(out: &mut Vec<u8>, status: u16, content_type: &[u8], len: usize, _close: bool) {
        encode_response_head(
            out,
            status,
            b"",
            &[(&b"Content-Type"[..], content_type)],
            len,
        );
    }
}
