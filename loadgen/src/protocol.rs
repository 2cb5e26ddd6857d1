//! What rxload speaks per protocol, in one place: a request on the wire and the response at
//! the front of a buffer. A new protocol is one arm in each (and its row in records'
//! `Proto::spec`, whose scheme names its targets).
use rxsteer_wire::{
    http1::parse_response as parse_http_response,
    zap::{ZapError, MAX_FRAME},
    zaphttp::{
        decode_response, encode_request as encode_zap_request, split_frame, FRAME_DATA, FRAME_END,
        FRAME_RESPONSE_HEAD, LEN_PREFIX,
    },
};
use std::ops::Range;

use crate::{
    stats::ErrorKind,
    target::{Proto, Target},
};

/// The request on the wire: HTTP/1.1 text, or a ZAP-HTTP frame.
pub fn encode_request(
    target: &Target,
    method: &str,
    path: &str,
    ct: Option<&str>,
    headers: &[(String, String)],
    body: &[u8],
) -> Vec<u8> {
    let mut bytes = Vec::new();
    match target.proto {
        Proto::Http => {
            bytes.extend_from_slice(
                format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", target.authority).as_bytes(),
            );
            if let Some(ct) = ct {
                bytes.extend_from_slice(format!("Content-Type: {ct}\r\n").as_bytes());
            }
            for (k, v) in headers {
                bytes.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
            }
            if !body.is_empty() || method != "GET" {
                bytes.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
            }
            bytes.extend_from_slice(b"\r\n");
            bytes.extend_from_slice(body);
        }
        Proto::Zap => {
            let mut h: Vec<(&[u8], &[u8])> = vec![(b"Host", target.authority.as_bytes())];
            if let Some(ct) = ct {
                h.push((b"Content-Type", ct.as_bytes()));
            }
            h.extend(headers.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())));
            encode_zap_request(&mut bytes, method.as_bytes(), path.as_bytes(), &h, body);
        }
    }
    bytes
}

/// A whole response at the front of a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub status: u16,
    /// Where its body is in the buffer.
    pub body: Range<usize>,
    /// The bytes it takes, from the front.
    pub used: usize,
}

/// The response at the front of `buf`, if whole. Body positions are offsets the decoders
/// return, never the difference of two slices' addresses (a null ZAP slot is not inside the
/// buffer).
pub fn parse_response(proto: Proto, buf: &[u8]) -> Result<Option<Parsed>, ErrorKind> {
    match proto {
        Proto::Http => match parse_http_response(buf) {
            Ok(Some(r)) => Ok(Some(Parsed {
                status: r.status,
                body: r.body_at,
                used: r.consumed,
            })),
            Ok(None) => Ok(None),
            Err(_) => Err(ErrorKind::Protocol),
        },
        Proto::Zap => match split_frame(buf, MAX_FRAME) {
            Ok(Some((frame, used))) => {
                let r = decode_response(frame).map_err(|e| match e {
                    // A streamed response (the wire spec's ResponseHead, Data..., End): not a
                    // whole response rxload can validate. One named error; the connection
                    // starts over, leaving the rest of the stream behind.
                    ZapError::FrameType {
                        got: FRAME_RESPONSE_HEAD | FRAME_DATA | FRAME_END,
                        ..
                    } => ErrorKind::Unsupported,
                    _ => ErrorKind::Protocol,
                })?;
                // The decoder's offsets are the frame's; the frame follows its length prefix.
                Ok(Some(Parsed {
                    status: r.status,
                    body: LEN_PREFIX + r.body_at.start..LEN_PREFIX + r.body_at.end,
                    used,
                }))
            }
            Ok(None) => Ok(None),
            Err(_) => Err(ErrorKind::Protocol),
        },
    }
}
