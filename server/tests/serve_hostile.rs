//! Hostile input while serving: each bad connection gets its defined answer or is closed, and
//! the server keeps serving everyone else. No privileges needed.
#[macro_use]
mod common;

use rxsteer_server::{PerProto, Proto, ServeConfig, ServerIo};
use rxsteer_wire::zaphttp::encode_request;
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::{Duration, Instant},
};

const IDLE: Duration = Duration::from_millis(500);
const REQUEST: Duration = Duration::from_millis(1500);

server_per_engine!({
    let mut cfg = ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 1,
        ..ServeConfig::default()
    };
    cfg.conn.idle = IDLE;
    cfg.conn.request = REQUEST;
    cfg
});
fn conn(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Reads until the server closes (a read of 0 or a reset) and returns what it sent and how
/// long that took. A read that times out is a failure, not a close: the socket's read timeout
/// (5 s) is the bound, and a server that hangs on bad input fails here.
fn until_closed(s: &mut TcpStream) -> (Vec<u8>, Duration) {
    let start = Instant::now();
    let mut all = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (all, start.elapsed()),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (all, start.elapsed())
            }
            Err(e) => panic!(
                "the server did not close within {:?} ({e}); it sent {:?}",
                start.elapsed(),
                String::from_utf8_lossy(&all)
            ),
            Ok(n) => all.extend_from_slice(&buf[..n]),
        }
    }
}

/// Bad input must be closed at once, not by the idle timeout: well under [`IDLE`].
fn closed_at_once(s: &mut TcpStream) -> Vec<u8> {
    let (got, took) = until_closed(s);
    assert!(
        took < IDLE / 2,
        "closed after {took:?}, by a timeout rather than at once"
    );
    got
}

/// A good client still gets answers on both transports.
fn still_serving(io: ServerIo) {
    let mut h = conn(server(io).addr[Proto::Http].unwrap());
    h.write_all(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert!(closed_at_once(&mut h).ends_with(b"\r\n\r\nok"));
    let mut z = conn(server(io).addr[Proto::Zap].unwrap());
    let mut req = Vec::new();
    encode_request(&mut req, b"GET", b"/health", &[], b"");
    z.write_all(&req).unwrap();
    let mut resp = [0u8; 129];
    z.read_exact(&mut resp).unwrap();
    assert_eq!(&resp[127..], b"ok");
}

fn half_a_request_then_silence_is_closed_after_the_idle_timeout(io: ServerIo) {
    for (addr, half) in [
        (
            server(io).addr[Proto::Http].unwrap(),
            b"GET /health HTTP/1.1\r\nHost: x\r\n".to_vec(),
        ),
        (server(io).addr[Proto::Zap].unwrap(), {
            let mut r = Vec::new();
            encode_request(&mut r, b"POST", b"/echo", &[], &[7; 1000]);
            r.truncate(300);
            r
        }),
    ] {
        let mut s = conn(addr);
        s.write_all(&half).unwrap();
        let (got, took) = until_closed(&mut s);
        assert!(got.is_empty(), "no reply to half a request");
        assert!(took >= IDLE / 2 && took < IDLE * 6, "closed after {took:?}");
    }
    still_serving(io);
}

fn garbage_overruns_and_bad_text_get_defined_answers(io: ServerIo) {
    let zap = server(io).addr[Proto::Zap].unwrap();
    // Random bytes as a "frame" of plausible length: 400 then closed.
    let mut s = conn(zap);
    let mut junk = vec![0, 0, 0, 64];
    junk.extend((0..64u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8));
    s.write_all(&junk).unwrap();
    let got = closed_at_once(&mut s);
    assert!(String::from_utf8_lossy(&got).contains("malformed request frame"));
    // A header pair count that overruns the frame: "truncated header block", 400.
    let mut req = Vec::new();
    encode_request(&mut req, b"GET", b"/health", &[(b"Host", b"x")], b"");
    let pairs_at = 4 + 64 + 3 + 7 + 8; // prefix + header + fixed + method + target + proto
    req[pairs_at..pairs_at + 4].copy_from_slice(&1000u32.to_le_bytes());
    let mut s = conn(zap);
    s.write_all(&req).unwrap();
    let got = closed_at_once(&mut s);
    assert!(
        String::from_utf8_lossy(&got).contains("malformed request frame: truncated header block"),
        "{got:?}"
    );
    // 0xFFFFFFFF length: closed without a reply.
    let mut s = conn(zap);
    s.write_all(&[0xff; 4]).unwrap();
    assert!(closed_at_once(&mut s).is_empty());
    // Invalid UTF-8 in the method and target: no route matches, 404, connection kept.
    let mut req = Vec::new();
    encode_request(&mut req, b"G\xffT", b"/\xfe\xfd", &[], b"");
    let mut s = conn(zap);
    s.write_all(&req).unwrap();
    let mut head = [0u8; 24];
    s.read_exact(&mut head).unwrap();
    assert_eq!(u16::from_le_bytes([head[20], head[21]]), 404);
    // HTTP: invalid UTF-8 in the request line is a 400.
    let mut s = conn(server(io).addr[Proto::Http].unwrap());
    s.write_all(b"GET /\xff\xfe HTTP/1.1\r\n\r\n").unwrap();
    let got = closed_at_once(&mut s);
    assert!(
        got.starts_with(b"HTTP/1.1 400"),
        "{}",
        String::from_utf8_lossy(&got)
    );
    still_serving(io);
}

fn many_idle_connections_do_not_stop_service(io: ServerIo) {
    let conns: Vec<TcpStream> = (0..500)
        .map(|i| conn(server(io).addr[if i % 2 == 0 { Proto::Http } else { Proto::Zap }].unwrap()))
        .collect();
    still_serving(io);
    drop(conns);
}

fn slowloris_trickling_bytes_never_idles_but_is_closed_at_the_request_deadline(io: ServerIo) {
    for (addr, endless) in [
        (
            server(io).addr[Proto::Http].unwrap(),
            b"GET /health HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                .to_vec(),
        ),
        (server(io).addr[Proto::Zap].unwrap(), {
            let mut r = Vec::new();
            encode_request(&mut r, b"POST", b"/echo", &[], &[7; 1000]);
            r
        }),
    ] {
        let mut s = conn(addr);
        s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
        let start = Instant::now();
        // One byte every 200 ms: well inside the idle timeout, so only the request deadline
        // can close it.
        let mut closed_after = None;
        for b in endless.iter().take(40) {
            if s.write_all(&[*b]).is_err() {
                closed_after = Some(start.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
            let mut probe = [0u8; 1];
            s.set_nonblocking(true).unwrap();
            let r = s.read(&mut probe);
            s.set_nonblocking(false).unwrap();
            if matches!(r, Ok(0)) {
                closed_after = Some(start.elapsed());
                break;
            }
        }
        let took = closed_after.expect("a trickling client was never closed");
        assert!(
            took >= REQUEST - Duration::from_millis(300) && took < REQUEST * 3,
            "closed after {took:?}"
        );
    }
    still_serving(io);
}

on_each_engine!(
    half_a_request_then_silence_is_closed_after_the_idle_timeout,
    garbage_overruns_and_bad_text_get_defined_answers,
    many_idle_connections_do_not_stop_service,
    slowloris_trickling_bytes_never_idles_but_is_closed_at_the_request_deadline,
);
