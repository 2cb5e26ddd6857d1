//! Zero allocation per request, measured: the counting global allocator (rxsteer-alloc) judges
//! only the server's worker thread; after a warm-up, 10 000 requests per route and transport must
//! allocate nothing. Prints allocs/request and bytes/request for each.
use rxsteer_server::{start, PerProto, Proto, ServeConfig, ServerIo};
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

/// Both engines, one after the other: the counter judges every marked worker thread, so two
/// servers measured at once would count each other's connection set-up.
#[test]
fn steady_state_requests_allocate_nothing() {
    let mut failures = Vec::new();
    for io in ServerIo::ALL {
        println!("engine {io}:");
        failures.extend(one_engine(*io).into_iter().map(|f| format!("{io}: {f}")));
    }
    assert!(failures.is_empty(), "steady state allocated: {failures:?}");
}

/// Allocations of the marked threads while `f` runs.
fn counted(f: impl FnOnce()) -> rxsteer_alloc::Counts {
    let before = rxsteer_alloc::marked();
    f();
    rxsteer_alloc::marked().since(before)
}

fn report(name: &str, requests: usize, c: rxsteer_alloc::Counts, failures: &mut Vec<String>) {
    println!(
        "  {name:<30} {:.4} allocs/request  {:.2} bytes/request  ({requests} requests after warm-up)",
        c.allocs as f64 / requests as f64,
        c.bytes as f64 / requests as f64
    );
    if c.allocs != 0 {
        failures.push(format!(
            "{name}: {} allocations, {} bytes",
            c.allocs, c.bytes
        ));
    }
}

fn one_engine(io: ServerIo) -> Vec<String> {
    let server = start(ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 1,
        io,
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
        let addr = server.addr[if *is_zap { Proto::Zap } else { Proto::Http }].unwrap();
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
        let c = counted(|| exchange(&mut s, req, len, MEASURED, &mut buf));
        report(name, MEASURED, c, &mut failures);
    }
    // Pipelined: 16 requests in each write, all answered in one response write.
    for (name, is_zap, req) in cases.iter().take(3) {
        let addr = server.addr[if *is_zap { Proto::Zap } else { Proto::Http }].unwrap();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        let len = response_len(&mut s, req, *is_zap);
        let burst = req.repeat(PIPELINED);
        exchange(
            &mut s,
            &burst,
            len * PIPELINED,
            WARMUP / PIPELINED,
            &mut buf,
        );
        let c = counted(|| {
            exchange(
                &mut s,
                &burst,
                len * PIPELINED,
                MEASURED / PIPELINED,
                &mut buf,
            )
        });
        report(
            &format!("{name} x{PIPELINED} pipelined"),
            MEASURED,
            c,
            &mut failures,
        );
    }
    // Concurrent: CONCURRENT connections, each on its own client thread, at once.
    for (name, is_zap, req) in cases.iter().take(3) {
        let addr = server.addr[if *is_zap { Proto::Zap } else { Proto::Http }].unwrap();
        let start_line = std::sync::Barrier::new(CONCURRENT + 1);
        let end_line = std::sync::Barrier::new(CONCURRENT + 1);
        let closed_line = std::sync::Barrier::new(CONCURRENT + 1);
        let c = std::thread::scope(|scope| {
            for _ in 0..CONCURRENT {
                scope.spawn(|| {
                    // Every connection opens, and closes, outside the measured window.
                    let mut s = TcpStream::connect(addr).unwrap();
                    s.set_nodelay(true).unwrap();
                    let len = response_len(&mut s, req, *is_zap);
                    let mut buf = vec![0u8; len];
                    exchange(&mut s, req, len, WARMUP, &mut buf);
                    start_line.wait();
                    exchange(&mut s, req, len, MEASURED / CONCURRENT, &mut buf);
                    end_line.wait();
                    // Closed only after the window is read: a close is connection teardown.
                    closed_line.wait();
                });
            }
            start_line.wait();
            let c = counted(|| {
                end_line.wait();
            });
            closed_line.wait();
            c
        });
        report(
            &format!("{name} x{CONCURRENT} concurrent"),
            MEASURED,
            c,
            &mut failures,
        );
    }
    failures
}

const PIPELINED: usize = 16;
const CONCURRENT: usize = 8;
