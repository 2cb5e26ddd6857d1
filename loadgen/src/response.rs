//! Reading responses off a connection's buffer, the same for both engines: the response at
//! the front (status, where its body is, the bytes it takes), the buffer's growth, and what a
//! whole response means for the run. Pure functions over bytes, so the fuzzer drives them as
//! a connection does (pipelined responses, reads split anywhere).
use rxsteer_wire::{zap::MAX_FRAME, zaphttp::LEN_PREFIX};

use crate::{
    scenario::{validate, Check, Invalid},
    stats::ErrorKind,
    target::Proto,
};

pub use crate::protocol::Parsed;

/// The response at the front of `buf`, if whole (as `proto` frames it).
pub fn parse_one(proto: Proto, buf: &[u8]) -> Result<Option<Parsed>, ErrorKind> {
    crate::protocol::parse_response(proto, buf)
}

/// A full buffer with no whole response yet grows, only for a response larger than any seen
/// before (memory grows with bytes received), up to the largest frame.
pub fn grow_if_full(buf: &mut Vec<u8>, filled: usize) -> Result<(), ErrorKind> {
    if filled == buf.len() {
        let grown = (buf.len() * 2).min(MAX_FRAME + LEN_PREFIX);
        if grown == buf.len() {
            return Err(ErrorKind::Protocol);
        }
        buf.resize(grown, 0);
    }
    Ok(())
}

/// What one whole response was: its status and size (counted when measured) and whether it
/// is the one the request should get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub bytes: usize,
    pub valid: Result<(), ErrorKind>,
}

/// Validates the response at the front of `buf[..*filled]` and moves what follows it
/// (pipelined responses) to the front.
pub fn settle(check: &Check, buf: &mut [u8], filled: &mut usize, parsed: Parsed) -> Answer {
    let valid = validate(check, parsed.status, &buf[parsed.body]).map_err(|e| match e {
        Invalid::Status => ErrorKind::Status,
        Invalid::Body => ErrorKind::Body,
    });
    buf.copy_within(parsed.used..*filled, 0);
    *filled -= parsed.used;
    Answer {
        status: parsed.status,
        bytes: parsed.used,
        valid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_wire::zaphttp::encode_response;

    fn framed(status: u16, reason: &[u8], headers: &[(&[u8], &[u8])], body: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_response(&mut out, status, reason, headers, body, &[]);
        out
    }

    #[test]
    fn a_null_zap_body_is_an_empty_range_inside_the_buffer() {
        // What both servers send for a 0-byte echo: every optional slot null.
        let mut buf = framed(200, b"", &[], b"");
        let at = buf.len();
        buf.extend_from_slice(&framed(200, b"", &[], b"next"));
        let p = parse_one(Proto::Zap, &buf).unwrap().unwrap();
        assert_eq!((p.status, p.used), (200, at));
        assert!(p.body.is_empty() && p.body.end <= buf.len());
        let mut filled = buf.len();
        let a = settle(&Check::Body(Vec::new()), &mut buf, &mut filled, p);
        assert_eq!(a.valid, Ok(()));
        // The pipelined one behind it, now at the front.
        let p = parse_one(Proto::Zap, &buf[..filled]).unwrap().unwrap();
        assert_eq!(&buf[p.body], b"next");
    }

    #[test]
    fn a_body_slot_at_the_end_of_the_frame() {
        let mut buf = framed(200, b"OK", &[(b"a", b"b")], b"tail");
        let len = buf.len();
        let p = parse_one(Proto::Zap, &buf).unwrap().unwrap();
        assert_eq!(p.body, len - 4..len);
        let mut filled = len;
        let a = settle(&Check::Body(b"tail".to_vec()), &mut buf, &mut filled, p);
        assert_eq!((a.valid, filled), (Ok(()), 0));
    }

    #[test]
    fn an_empty_http_body_and_a_pipelined_one() {
        let buf = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        let p = parse_one(Proto::Http, buf).unwrap().unwrap();
        assert!(p.body.is_empty());
        let q = parse_one(Proto::Http, &buf[p.used..]).unwrap().unwrap();
        assert_eq!(&buf[p.used..][q.body], b"ok");
    }

    #[test]
    fn a_wrong_body_or_status_is_named() {
        let mut buf = framed(500, b"", &[], b"x");
        let mut filled = buf.len();
        let p = parse_one(Proto::Zap, &buf).unwrap().unwrap();
        let a = settle(&Check::Body(b"x".to_vec()), &mut buf, &mut filled, p);
        assert_eq!((a.status, a.valid), (500, Err(ErrorKind::Status)));
        let mut buf = framed(200, b"", &[], b"y");
        let mut filled = buf.len();
        let p = parse_one(Proto::Zap, &buf).unwrap().unwrap();
        let a = settle(&Check::Body(b"x".to_vec()), &mut buf, &mut filled, p);
        assert_eq!(a.valid, Err(ErrorKind::Body));
    }
}
