//! Answering what is buffered: every whole request at the front of the input, each response
//! encoded into `out`, until the input runs out, a request asks to close, the framing refuses
//! the input, or a response's body is large enough to go out after `out` without copying.
//! Both engines (tokio's epoll loop in [`crate::epoll`] and [`crate::uring`]) drive their
//! connections through this one function, so they answer alike byte for byte.
use std::ops::Range;
use tokio::time::Instant;

use crate::{
    config::ConnConfig,
    framing::{Framing, Split},
    handlers::{handle, Body},
};

/// What one pass over the input produced.
#[derive(Debug, PartialEq, Eq)]
pub struct Answered {
    /// Bytes of the input the answered requests used.
    pub used: usize,
    /// Requests answered.
    pub n: u64,
    pub end: End,
}

#[derive(Debug, PartialEq, Eq)]
pub enum End {
    /// Every whole request is answered; what is left of the input is the start of the next.
    Partial,
    /// The last response's head is in `out` and its body goes out right after it, uncopied;
    /// then close if `close`, else answer again from `used` on.
    Body { at: BodyAt, close: bool },
    /// Send `out`, then close: the client asked to, or the framing refused the input (its
    /// answer, if it has one, is in `out`).
    Close,
}

/// Where a body sent without copying is.
#[derive(Debug, PartialEq, Eq)]
pub enum BodyAt {
    /// These bytes of the input (echo).
    Input(Range<usize>),
    /// The connection's scratch buffer.
    Scratch,
    Static(&'static [u8]),
}

impl BodyAt {
    pub fn bytes<'a>(&self, input: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        match self {
            BodyAt::Input(r) => &input[r.clone()],
            BodyAt::Scratch => scratch,
            BodyAt::Static(b) => b,
        }
    }
}

/// When the request still buffered began, after a pass of answers, for the request deadline:
/// none when nothing is `left`, restarted (`now`) when a request was `answered` and the next
/// one's first bytes are already here, unchanged (`before`, or `now` if new) otherwise. Both
/// engines keep their clock with it; `now` is read only when needed (most batches leave
/// nothing behind).
pub fn partial_since(
    left: bool,
    answered: bool,
    before: Option<Instant>,
    now: impl FnOnce() -> Instant,
) -> Option<Instant> {
    match (left, answered) {
        (false, _) => None,
        (true, false) => before.or_else(|| Some(now())),
        (true, true) => Some(now()),
    }
}

/// Answers the requests at the front of `input` (see the module).
pub fn answer<F: Framing>(
    input: &[u8],
    cfg: &ConnConfig,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Answered {
    let (mut used, mut n) = (0, 0);
    loop {
        let req = match F::split(&input[used..], cfg, out) {
            Split::Whole(req) => req,
            Split::Partial => {
                return Answered {
                    used,
                    n,
                    end: End::Partial,
                }
            }
            Split::Refused => {
                return Answered {
                    used,
                    n,
                    end: End::Close,
                }
            }
        };
        let reply = handle(req.method, req.target, req.content_type, req.body, scratch);
        let body: &[u8] = match reply.body {
            Body::Static(b) | Body::Request(b) => b,
            Body::Scratch => scratch,
        };
        let start = used;
        used += req.used;
        n += 1;
        if body.len() >= cfg.vectored_min {
            F::encode_head(out, reply.status, reply.content_type, body.len(), req.close);
            let at = match reply.body {
                Body::Static(b) => BodyAt::Static(b),
                Body::Scratch => BodyAt::Scratch,
                // The request's body, so in `input` where the framing found it.
                Body::Request(_) => {
                    BodyAt::Input(start + req.body_at.start..start + req.body_at.end)
                }
            };
            let end = End::Body {
                at,
                close: req.close,
            };
            return Answered { used, n, end };
        }
        F::encode(out, reply.status, reply.content_type, body, req.close);
        if req.close {
            return Answered {
                used,
                n,
                end: End::Close,
            };
        }
    }
}
