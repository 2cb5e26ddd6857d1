//! The routes, one set of functions for both transports (as the reference framework serves one
//! handler over HTTP and ZAP):
//! - `GET /health` -> 200 `ok`
//! - `POST /rpc` -> the rpc record: native ZAP when the request's Content-Type is
//!   `application/zap`, JSON otherwise; identical compute either way
//! - `POST /echo` -> the body back
//! - `POST /upload` -> the number of body bytes received, as text (a receive-heavy load)
//! - anything else -> 404
use rxsteer_wire::rpc;

pub const CT_TEXT: &[u8] = b"text/plain; charset=utf-8";
pub const CT_JSON: &[u8] = b"application/json";
pub const CT_ZAP: &[u8] = b"application/zap";
pub const CT_OCTETS: &[u8] = b"application/octet-stream";

/// Where a reply's body is.
#[derive(Debug, PartialEq, Eq)]
pub enum Body<'a> {
    Static(&'static [u8]),
    /// A slice of the request (echo): no copy until the response is encoded.
    Request(&'a [u8]),
    /// In the connection's scratch buffer.
    Scratch,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Reply<'a> {
    pub status: u16,
    pub content_type: &'static [u8],
    pub body: Body<'a>,
}

impl Reply<'_> {
    fn text(status: u16, body: &'static [u8]) -> Self {
        Self {
            status,
            content_type: CT_TEXT,
            body: Body::Static(body),
        }
    }
}

/// Handles one request. `scratch` is the connection's reused buffer for computed bodies
/// (cleared here).
pub fn handle<'a>(
    method: &[u8],
    target: &[u8],
    content_type: Option<&[u8]>,
    body: &'a [u8],
    scratch: &mut Vec<u8>,
) -> Reply<'a> {
    scratch.clear();
    let path = target.split(|&b| b == b'?').next().unwrap_or(target);
    match (method, path) {
        (b"GET", b"/health") => Reply::text(200, b"ok"),
        (b"POST", b"/echo") => Reply {
            status: 200,
            content_type: CT_OCTETS,
            body: Body::Request(body),
        },
        (b"POST", b"/upload") => {
            // Into the reused scratch buffer: no allocation once it has grown to 20 bytes.
            let _ = std::io::Write::write_fmt(scratch, format_args!("{}", body.len()));
            Reply {
                status: 200,
                content_type: CT_TEXT,
                body: Body::Scratch,
            }
        }
        (b"POST", b"/rpc") if content_type.is_some_and(|c| c.eq_ignore_ascii_case(CT_ZAP)) => {
            match rpc::handle_native(body, scratch) {
                Ok(()) => Reply {
                    status: 200,
                    content_type: CT_ZAP,
                    body: Body::Scratch,
                },
                Err(_) => Reply::text(400, b"rpc body is not the native EthCallReq record"),
            }
        }
        (b"POST", b"/rpc") => match rpc::handle_json(body, scratch) {
            Ok(()) => Reply {
                status: 200,
                content_type: CT_JSON,
                body: Body::Scratch,
            },
            Err(_) => Reply::text(
                400,
                b"rpc body is not the JSON record {method, account, block, id}",
            ),
        },
        _ => Reply::text(404, b"not found"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let mut s = Vec::new();
        assert_eq!(
            handle(b"GET", b"/health", None, b"", &mut s),
            Reply::text(200, b"ok")
        );
        assert_eq!(
            handle(b"GET", b"/health?x=1", None, b"", &mut s).status,
            200
        );
        assert_eq!(
            handle(b"POST", b"/echo", None, b"abc", &mut s).body,
            Body::Request(b"abc")
        );
        assert_eq!(handle(b"GET", b"/echo", None, b"", &mut s).status, 404);
        let r = handle(b"POST", b"/upload", None, &[7; 65536], &mut s);
        assert_eq!(
            (r.status, r.body, s.as_slice()),
            (200, Body::Scratch, &b"65536"[..])
        );
        assert_eq!(handle(b"GET", b"/nope", None, b"", &mut s).status, 404);
        let json = br#"{"method":"m","account":"0xdeadbeef00112233445566778899aabbccddeeff","block":1,"id":7}"#;
        let r = handle(b"POST", b"/rpc", Some(CT_JSON), json, &mut s);
        assert_eq!((r.status, r.content_type), (200, CT_JSON));
        assert!(s.starts_with(br#"{"id":7,"#));
        assert_eq!(
            handle(b"POST", b"/rpc", Some(CT_ZAP), json, &mut s).status,
            400,
            "JSON is not a native record"
        );
        assert_eq!(handle(b"POST", b"/rpc", None, b"{", &mut s).status, 400);
    }
}
