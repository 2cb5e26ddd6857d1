//! HTTP/1.1 framing for the server: requests parsed with `httparse` into a stack array of
//! headers (no allocation), responses encoded into a reused buffer.

use std::ops::Range;

/// Most headers one request may carry; more is 431.
pub const MAX_HEADERS: usize = 64;

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Request line and headers; a larger header section is 431.
    pub max_header_bytes: usize,
    /// Largest Content-Length accepted; more is 413.
    pub max_body: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_header_bytes: 16 << 10,
            max_body: 8 << 20,
        }
    }
}

/// A complete request in the buffer.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub body: &'a [u8],
    /// Where `body` is in the buffer, as offsets.
    pub body_at: Range<usize>,
    pub content_type: Option<&'a [u8]>,
    /// Bytes of the buffer this request used (headers and body).
    pub consumed: usize,
    /// The client asked to close (Connection: close, or HTTP/1.0 without keep-alive).
    pub close: bool,
}

/// A request the server answers with an error status and then closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("malformed request")]
    Malformed,
    #[error("header section too large")]
    HeadersTooLarge,
    #[error("body too large")]
    BodyTooLarge,
    #[error("chunked request bodies are not supported; send Content-Length")]
    LengthRequired,
}

impl HttpError {
    pub fn status(self) -> u16 {
        match self {
            HttpError::Malformed => 400,
            HttpError::HeadersTooLarge => 431,
            HttpError::BodyTooLarge => 413,
            HttpError::LengthRequired => 411,
        }
    }
}

/// A Content-Length value: digits only (RFC 9110 8.6: `1*DIGIT`), surrounding blanks allowed,
/// no sign and no overflow. Rust's integer parsing alone would take "+5": two parsers that
/// disagree on a length are a request-smuggling seam.
pub fn content_length(v: &[u8]) -> Option<usize> {
    let v = v.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0usize, |n, d| {
        n.checked_mul(10)?.checked_add(usize::from(d - b'0'))
    })
}

/// Parses the request at the front of `buf`. `Ok(None)`: incomplete, read more.
pub fn parse_request<'a>(buf: &'a [u8], limits: &Limits) -> Result<Option<Request<'a>>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let head = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > limits.max_header_bytes => {
            return Err(HttpError::HeadersTooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(HttpError::HeadersTooLarge),
        Err(_) => return Err(HttpError::Malformed),
    };
    if head > limits.max_header_bytes {
        return Err(HttpError::HeadersTooLarge);
    }
    let mut length: Option<usize> = None;
    let mut content_type = None;
    let mut close = req.version == Some(0);
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = content_length(h.value).ok_or(HttpError::Malformed)?;
            if length.is_some_and(|c| c != n) {
                return Err(HttpError::Malformed);
            }
            length = Some(n);
        } else if h.name.eq_ignore_ascii_case("content-type") {
            content_type = Some(h.value);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(HttpError::LengthRequired);
        } else if h.name.eq_ignore_ascii_case("connection") {
            if h.value.eq_ignore_ascii_case(b"close") {
                close = true;
            } else if h.value.eq_ignore_ascii_case(b"keep-alive") {
                close = false;
            }
        }
    }
    let len = length.unwrap_or(0);
    if len > limits.max_body {
        return Err(HttpError::BodyTooLarge);
    }
    let Some(body) = buf.get(head..head + len) else {
        return Ok(None);
    };
    Ok(Some(Request {
        method: req.method.ok_or(HttpError::Malformed)?,
        path: req.path.ok_or(HttpError::Malformed)?,
        body,
        body_at: head..head + len,
        content_type,
        consumed: head + len,
        close,
    }))
}

/// Appends a response with Content-Length (and `Connection: close` when closing).
pub fn write_response(
    out: &mut Vec<u8>,
    status: u16,
    content_type: &[u8],
    body: &[u8],
    close: bool,
) {
    write_head(out, status, content_type, body.len(), close);
    out.extend_from_slice(body);
}

/// Appends the status line and headers for a body of `body_len` bytes sent separately.
pub fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    content_type: &[u8],
    body_len: usize,
    close: bool,
) {
    let mut n = itoa::Buffer::new();
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(n.format(status).as_bytes());
    out.push(b' ');
    out.extend_from_slice(crate::zaphttp::status_text(status).as_bytes());
    out.extend_from_slice(b"\r\nServer: rxsteer\r\nContent-Type: ");
    out.extend_from_slice(content_type);
    out.extend_from_slice(b"\r\nContent-Length: ");
    out.extend_from_slice(n.format(body_len).as_bytes());
    if close {
        out.extend_from_slice(b"\r\nConnection: close");
    }
    out.extend_from_slice(b"\r\n\r\n");
}

/// A complete response at the front of a buffer (client side).
#[derive(Clone, Debug)]
pub struct Response<'a> {
    pub status: u16,
    pub body: &'a [u8],
    /// Where `body` is in the buffer, as offsets.
    pub body_at: Range<usize>,
    pub consumed: usize,
}

/// Parses the response at the front of `buf` (Content-Length framing, as the servers send).
/// `Ok(None)`: incomplete. A response without Content-Length, or malformed, is an error.
pub fn parse_response(buf: &[u8]) -> Result<Option<Response<'_>>, HttpError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut headers);
    let head = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(HttpError::Malformed),
    };
    let len = resp
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| content_length(h.value))
        .ok_or(HttpError::Malformed)?;
    // The length is the peer's word: a huge one must not wrap the end offset around.
    let end = head.checked_add(len).ok_or(HttpError::Malformed)?;
    let Some(body) = buf.get(head..end) else {
        return Ok(None);
    };
    Ok(Some(Response {
        status: resp.code.ok_or(HttpError::Malformed)?,
        body,
        body_at: head..end,
        consumed: end,
    }))
}
