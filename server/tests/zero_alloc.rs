//! Zero allocation per request, measured: the counting global allocator (rxsteer-alloc) judges
//! only the server's worker thread; after a warm-up, 10 000 requests per route and transport must
//! allocate nothing. Prints allocs/request and bytes/request for each.
use rxsteer_server::{start, ServeConfig};
use rxsteer_wire::{native::EthCallReq, zaphttp::encode_request};
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
};

#[global_allocator]
static GLOBAL: rxsteer_alloc::Counting = rxsteer_alloc::Counting;

fn mark_worker() {
    rxsteer_alloc::count_this_thread();
}

const WARMUP: usize = 1000;
const MEASURED: usize = 10_000;

/// Sends `req` and reads exactly `resp_len` bytes back, `n` times on one connection.
fn exchange(s: &mut TcpStream, req: &[u8], resp_len: usize, n: usize, buf: &mut [u8]) {
    for _ in 0..n {
        s.write_all(req).unwrap();
        s.read_exact(&mut buf[..resp_len]).unwrap();
    }
}

/// The length of the one response `req` gets.
fn response_len(s: &mut TcpStream, req: &[u8], zap: bool) -> usize {
    s.write_all(req).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut got = 0;
    loop {
        got += s.read(&mut buf[got..]).unwrap();
        if zap && got >= 4 {
            let n = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize + 4;
            if got == n {
                return n;
            }
        }
        if !zap {
            let mut h = [httparse::EMPTY_HEADER; 16];
            let mut r = httparse::Response::new(&mut h);
            if let Ok(httparse::Status::Complete(head)) = r.parse(&buf[..got]) {
                let len: usize = r
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .map(|h| std::str::from_utf8(h.value).unwrap().parse().unwrap())
                    .unwrap();
                if got == head + len {
                    return got;
                }
            }
        }
    }
}

#[test]
fn steady_state_requests_allocate_nothing() {
    let server = start(ServeConfig {
        http: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        zap: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        threads: 1,
        on_worker_start: Some(mark_worker),
        ..ServeConfig::default()
    })
    .unwrap();
    let json = br#"{"method":"eth_getBalance","account":"0xdeadbeef00112233445566778899aabbccddeeff","block":68943,"id":1}"#;
    let mut native = Vec::new();
    EthCallReq {
        id: 1,
        block: 0x10d4f,
        method: b"eth_getBalance",
        account: &[0xde; 20],
    }
    .encode(&mut native);
    let http_post = |path: &str, ct: &str, body: &[u8]| {
        [format!("POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(), body].concat()
    };
    let zap = |method: &[u8], path: &[u8], headers: &[(&[u8], &[u8])], body: &[u8]| {
        let mut v = Vec::new();
        encode_request(&mut v, method, path, headers, body);
        v
    };
    let host: &[(&[u8], &[u8])] = &[(b"Host", b"127.0.0.1:8391")];
    let mut cases: Vec<(String, bool, Vec<u8>)> = vec![
        (
            "http GET /health".into(),
            false,
            b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        ),
        (
            "http POST /rpc (JSON)".into(),
            false,
            http_post("/rpc", "application/json", json),
        ),
        (
            "zap GET /health".into(),
            true,
            zap(b"GET", b"/health", host, b""),
        ),
        (
            "zap POST /rpc (native)".into(),
            true,
            zap(
                b"POST",
                b"/rpc",
                &[(b"Content-Type", b"application/zap")],
                &native,
            ),
        ),
        (
            "zap POST /rpc (JSON)".into(),
            true,
            zap(
                b"POST",
                b"/rpc",
                &[(b"Content-Type", b"application/json")],
                json,
            ),
        ),
    ];
    for size in [16usize, 4096, 65536] {
        let body = vec![b'e'; size];
        cases.push((
            format!("http POST /echo {size} B"),
            false,
            http_post("/echo", "application/octet-stream", &body),
        ));
        cases.push((
            format!("zap POST /echo {size} B"),
            true,
            zap(b"POST", b"/echo", &[], &body),
        ));
        cases.push((
            format!("http POST /upload {size} B"),
            false,
            http_post("/upload", "application/octet-stream", &body),
        ));
        cases.push((
            format!("zap POST /upload {size} B"),
            true,
            zap(b"POST", b"/upload", &[], &body),
        ));
    }
    let mut buf = vec![0u8; 1 << 20];
    let mut failures = Vec::new();
    for (name, is_zap, req) in &cases {
        let addr = if *is_zap { server.zap } else { server.http }.unwrap();
        let before_open = rxsteer_alloc::marked();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let len = response_len(&mut s, req, *is_zap);
        exchange(&mut s, req, len, WARMUP, &mut buf);
        // The counter sees the worker: opening a connection allocates its task and buffers.
        assert!(
            rxsteer_alloc::marked().since(before_open).allocs > 0,
            "{name}: no allocation seen during connection setup"
        );
        let before = rxsteer_alloc::marked();
        exchange(&mut s, req, len, MEASURED, &mut buf);
        let rxsteer_alloc::Counts { allocs, bytes } = rxsteer_alloc::marked().since(before);
        println!(
            "{name:<28} {:.4} allocs/request  {:.2} bytes/request  ({MEASURED} requests after {WARMUP} warm-up)",
            allocs as f64 / MEASURED as f64,
            bytes as f64 / MEASURED as f64
        );
        if allocs != 0 {
            failures.push(format!("{name}: {allocs} allocations, {bytes} bytes"));
        }
    }
    assert!(failures.is_empty(), "steady state allocated: {failures:?}");
}
