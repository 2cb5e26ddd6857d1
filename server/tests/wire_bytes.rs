//! On-wire size of each scenario's request and response on both transports, measured on real
//! connections to the server: printed, and asserted against the formats' size models (and the
//! spec's published sizes where it gives them).
#[macro_use]
mod common;

use rxsteer_server::{start, PerProto, Proto, ServeConfig, ServerIo};
use rxsteer_wire::{native::EthCallReq, zaphttp::encode_request};
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

const HOST: &str = "127.0.0.1:8391";
const TEXT: &str = "text/plain; charset=utf-8";
const ZAPCT: &str = "application/zap";
const JSONCT: &str = "application/json";
const OCTETS: &str = "application/octet-stream";

/// Sends one request; returns the response, checked to be exactly `expected_len` bytes.
fn roundtrip(addr: SocketAddr, req: &[u8], expected_len: usize) -> usize {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req).unwrap();
    let mut got = vec![0u8; expected_len];
    s.read_exact(&mut got).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut more = [0u8; 64];
    let extra = s.read(&mut more).unwrap_or(0);
    expected_len + extra
}

/// ZAP-HTTP size model (spec §4.8): prefix 4 + header 16 + fixed 48 + text fields + a pair
/// block (4 + sum of 8 + key + value; none when empty) + body.
fn pairs(ps: &[(&str, &str)]) -> usize {
    if ps.is_empty() {
        0
    } else {
        4 + ps.iter().map(|(k, v)| 8 + k.len() + v.len()).sum::<usize>()
    }
}
fn zap_req(method: &str, target: &str, ps: &[(&str, &str)], body: usize) -> usize {
    4 + 16 + 48 + method.len() + target.len() + "HTTP/1.1".len() + pairs(ps) + body
}
fn zap_resp(ct: &str, body: usize) -> usize {
    4 + 16 + 48 + "OK".len() + "HTTP/1.1".len() + pairs(&[("Content-Type", ct)]) + body
}
fn http_req(path: &str, ct: &str, body: usize) -> usize {
    format!("POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: {ct}\r\nContent-Length: {body}\r\n\r\n").len() + body
}
fn http_resp(ct: &str, body: usize) -> usize {
    format!("HTTP/1.1 200 OK\r\nServer: rxsteer\r\nContent-Type: {ct}\r\nContent-Length: {body}\r\n\r\n").len() + body
}

fn zap(method: &[u8], target: &[u8], h: &[(&[u8], &[u8])], body: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    encode_request(&mut v, method, target, h, body);
    v
}

fn http_post(path: &str, ct: &str, body: &[u8]) -> Vec<u8> {
    [format!("POST {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes(), body].concat()
}

fn scenario_sizes_on_both_transports(io: ServerIo) {
    let server = start(ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 1,
        io,
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
    let host: (&[u8], &[u8]) = (b"Host", HOST.as_bytes());
    let (b16, b64k) = (vec![b'a'; 16], vec![b'a'; 65536]);
    // {"id":1,"balance":1000000000000069003,"nonce":42,"blockHash":"0x" + 64 hex + "}
    let rpc_json_resp =
        r#"{"id":1,"balance":1000000000000069003,"nonce":42,"blockHash":""}"#.len() + 66;
    let cases: Vec<(&str, &str, Vec<u8>, usize, usize)> = vec![
        (
            "health",
            "zap",
            zap(b"GET", b"/health", &[host], b""),
            zap_req("GET", "/health", &[("Host", HOST)], 0),
            zap_resp(TEXT, 2),
        ),
        (
            "health",
            "http",
            format!("GET /health HTTP/1.1\r\nHost: {HOST}\r\n\r\n").into_bytes(),
            46,
            http_resp(TEXT, 2),
        ),
        (
            "rpc",
            "zap",
            zap(
                b"POST",
                b"/rpc",
                &[host, (b"Content-Type", ZAPCT.as_bytes())],
                &native,
            ),
            zap_req(
                "POST",
                "/rpc",
                &[("Host", HOST), ("Content-Type", ZAPCT)],
                82,
            ),
            zap_resp(ZAPCT, 80),
        ),
        (
            "rpc",
            "http",
            http_post("/rpc", JSONCT, json),
            http_req("/rpc", JSONCT, json.len()),
            http_resp(JSONCT, rpc_json_resp),
        ),
        (
            "echo 16 B",
            "zap",
            zap(b"POST", b"/echo", &[host], &b16),
            zap_req("POST", "/echo", &[("Host", HOST)], 16),
            zap_resp(OCTETS, 16),
        ),
        (
            "echo 16 B",
            "http",
            http_post("/echo", OCTETS, &b16),
            http_req("/echo", OCTETS, 16),
            http_resp(OCTETS, 16),
        ),
        (
            "echo 64 KiB",
            "zap",
            zap(b"POST", b"/echo", &[host], &b64k),
            zap_req("POST", "/echo", &[("Host", HOST)], 65536),
            zap_resp(OCTETS, 65536),
        ),
        (
            "echo 64 KiB",
            "http",
            http_post("/echo", OCTETS, &b64k),
            http_req("/echo", OCTETS, 65536),
            http_resp(OCTETS, 65536),
        ),
    ];
    // The spec's published sizes: zapload's hello request 116 B, a fasthttp "ok" 129 B, the rpc
    // request 231 B (golden req_zapload_rpc), the native records 82 / 80 B.
    assert_eq!(
        (cases[0].3, cases[0].4, cases[2].3, native.len()),
        (116, 129, 231, 82)
    );
    println!(
        "{:<12} {:<5} {:>9} {:>9}",
        "scenario", "wire", "request", "response"
    );
    for (name, transport, req, want_req, want_resp) in cases {
        let addr = server.addr[transport.parse::<Proto>().unwrap()].unwrap();
        let resp = roundtrip(addr, &req, want_resp);
        println!("{name:<12} {transport:<5} {:>9} {resp:>9}", req.len());
        assert_eq!(
            req.len(),
            want_req,
            "{name} over {transport}: request bytes"
        );
        assert_eq!(resp, want_resp, "{name} over {transport}: response bytes");
    }
}

on_each_engine!(scenario_sizes_on_both_transports);
