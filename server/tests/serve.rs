//! The servers over real sockets on loopback: every route on both transports, pipelining, and
//! every kind of bad input getting its defined answer. No privileges needed.
#[macro_use]
mod common;

use rxsteer_server::{PerProto, Proto, ServeConfig, ServerIo};
use rxsteer_wire::{
    native::{EthCallReq, EthCallResp},
    rpc,
    zap::MAX_FRAME,
    zaphttp::{decode_response, encode_request, split_frame},
};
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

server_per_engine!({
    let mut cfg = ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 2,
        ..ServeConfig::default()
    };
    cfg.conn.http.max_body = 1 << 20;
    cfg.conn.max_frame = 2 << 20;
    cfg
});
fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Reads HTTP responses until `n` complete ones arrived; returns (status, body) each.
fn read_http(s: &mut TcpStream, n: usize) -> Vec<(u16, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    while out.len() < n {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut resp = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(h)) = resp.parse(&buf) {
            let len: usize = resp
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .map(|h| std::str::from_utf8(h.value).unwrap().parse().unwrap())
                .unwrap();
            if buf.len() >= h + len {
                out.push((resp.code.unwrap(), buf[h..h + len].to_vec()));
                buf.drain(..h + len);
                continue;
            }
        }
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "server closed after {} responses", out.len());
        buf.extend_from_slice(&chunk[..k]);
    }
    out
}

fn http(io: ServerIo, req: &[u8]) -> (u16, Vec<u8>) {
    let mut s = connect(server(io).addr[Proto::Http].unwrap());
    s.write_all(req).unwrap();
    read_http(&mut s, 1).remove(0)
}

/// The server closed the connection: the next read returns 0 or a reset, within the socket's
/// 5 s read timeout, which is far below the server's own idle timeout (60 s), so only a close
/// the server chose counts. A timeout or stray bytes are failures.
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        Err(e) => panic!("the server did not close within the read timeout: {e}"),
        Ok(_) => panic!(
            "the server sent more ({:?}) instead of closing",
            b[0] as char
        ),
    }
}

fn http_routes(io: ServerIo) {
    assert_eq!(
        http(io, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"),
        (200, b"ok".to_vec())
    );
    assert_eq!(http(io, b"GET /nope HTTP/1.1\r\n\r\n").0, 404);
    for size in [16usize, 256, 800, 4096, 65536, 1 << 20] {
        let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
        let req = [
            format!("POST /echo HTTP/1.1\r\nContent-Length: {size}\r\n\r\n").as_bytes(),
            &body,
        ]
        .concat();
        assert_eq!(http(io, &req), (200, body), "echo {size}");
    }
    let json = br#"{"method":"eth_getBalance","account":"0xdeadbeef00112233445566778899aabbccddeeff","block":68943,"id":9}"#;
    let req = [
        format!(
            "POST /rpc HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            json.len()
        )
        .as_bytes(),
        json,
    ]
    .concat();
    let (status, body) = http(io, &req);
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        (v["id"].as_u64(), v["balance"].as_u64(), v["nonce"].as_u64()),
        (Some(9), Some(0x0de0_b6b3_a765_0d8b), Some(42))
    );
}

fn http_pipelined_requests_are_all_answered_in_order(io: ServerIo) {
    let mut s = connect(server(io).addr[Proto::Http].unwrap());
    let mut reqs = Vec::new();
    for i in 0..50 {
        reqs.extend_from_slice(
            format!("POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\n{i:03}").as_bytes(),
        );
    }
    s.write_all(&reqs).unwrap();
    let got = read_http(&mut s, 50);
    for (i, (status, body)) in got.iter().enumerate() {
        assert_eq!(
            (*status, body.as_slice()),
            (200, format!("{i:03}").as_bytes())
        );
    }
}

/// A client that sends its requests and then shuts its sending side still gets every answer,
/// large ones included (they may be in flight when the end of its input arrives), then a close.
fn a_half_closed_client_gets_every_response_then_the_close(io: ServerIo) {
    let mut s = connect(server(io).addr[Proto::Http].unwrap());
    let big = vec![b'b'; 300 << 10];
    let mut reqs = Vec::new();
    for i in 0..20 {
        let body: &[u8] = if i % 5 == 4 { &big } else { b"abc" };
        reqs.extend_from_slice(
            format!(
                "POST /echo HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
                body.len()
            )
            .as_bytes(),
        );
        reqs.extend_from_slice(body);
    }
    // Sent from a thread: the responses fill the socket while the requests are still going out.
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        w.write_all(&reqs).unwrap();
        w.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let got = read_http(&mut s, 20);
    writer.join().unwrap();
    for (i, (status, body)) in got.iter().enumerate() {
        let want = if i % 5 == 4 { big.len() } else { 3 };
        assert_eq!((*status, body.len()), (200, want), "response {i}");
    }
    assert!(closed(&mut s));
}

fn http_bad_requests_get_their_status_and_close(io: ServerIo) {
    let big_header = [
        b"GET / HTTP/1.1\r\nX: ".as_slice(),
        &vec![b'y'; 20000],
        b"\r\n\r\n",
    ]
    .concat();
    let many = [
        b"GET / HTTP/1.1\r\n".as_slice(),
        &b"A: b\r\n".repeat(100),
        b"\r\n",
    ]
    .concat();
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"BLAH\r\n\r\n".to_vec(), 400),
        (
            b"GET / HTTP/1.1\r\nContent-Length: nope\r\n\r\n".to_vec(),
            400,
        ),
        (big_header, 431),
        (many, 431),
        (
            b"POST /echo HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n".to_vec(),
            413,
        ),
        (
            b"POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
                .to_vec(),
            411,
        ),
    ];
    for (req, status) in cases {
        let mut s = connect(server(io).addr[Proto::Http].unwrap());
        s.write_all(&req).unwrap();
        let got = read_http(&mut s, 1);
        assert_eq!(
            got[0].0,
            status,
            "{}",
            String::from_utf8_lossy(&req[..40.min(req.len())])
        );
        assert!(closed(&mut s), "closed after {status}");
    }
    // Connection: close is honoured after the response.
    let mut s = connect(server(io).addr[Proto::Http].unwrap());
    s.write_all(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    assert_eq!(read_http(&mut s, 1)[0].0, 200);
    assert!(closed(&mut s));
}

fn zap_request(method: &[u8], target: &[u8], headers: &[(&[u8], &[u8])], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_request(&mut out, method, target, headers, body);
    out
}

/// Reads `n` response frames.
fn read_zap(s: &mut TcpStream, n: usize) -> Vec<(u16, Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut chunk = [0u8; 65536];
    while out.len() < n {
        if let Some((frame, used)) = split_frame(&buf, MAX_FRAME).unwrap() {
            let r = decode_response(frame).unwrap();
            out.push((
                r.status,
                r.body.to_vec(),
                r.headers.get(b"content-type").unwrap_or_default().to_vec(),
            ));
            buf.drain(..used);
            continue;
        }
        let k = s.read(&mut chunk).unwrap();
        assert!(k > 0, "server closed after {} frames", out.len());
        buf.extend_from_slice(&chunk[..k]);
    }
    out
}

fn zap_routes_and_pipelining(io: ServerIo) {
    let mut s = connect(server(io).addr[Proto::Zap].unwrap());
    let host: &[(&[u8], &[u8])] = &[(b"Host", b"127.0.0.1:8391")];
    s.write_all(&zap_request(b"GET", b"/health", host, b""))
        .unwrap();
    assert_eq!(read_zap(&mut s, 1)[0].0, 200);
    let mut native = Vec::new();
    EthCallReq {
        id: 5,
        block: 0x10d4f,
        method: b"eth_getBalance",
        account: &[0xde; 20],
    }
    .encode(&mut native);
    let mut frames = Vec::new();
    for size in [16usize, 65536, 1 << 20] {
        let body: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        frames.extend(zap_request(b"POST", b"/echo", &[], &body));
    }
    frames.extend(zap_request(
        b"POST",
        b"/rpc",
        &[(b"Content-Type", b"application/zap")],
        &native,
    ));
    frames.extend(zap_request(b"GET", b"/nope", &[], b""));
    s.write_all(&frames).unwrap();
    let got = read_zap(&mut s, 5);
    for (i, size) in [16usize, 65536, 1 << 20].iter().enumerate() {
        assert_eq!(got[i].0, 200);
        assert_eq!(got[i].1.len(), *size);
    }
    let (status, body, ct) = &got[3];
    assert_eq!((*status, ct.as_slice()), (200, &b"application/zap"[..]));
    let r = EthCallResp::decode(body).unwrap();
    assert_eq!(
        (r.id, r.balance, r.nonce, r.block_hash),
        (
            5,
            rpc::balance(0x10d4f, b"eth_getBalance", &[0xde; 20]),
            42,
            &rpc::BLOCK_HASH[..]
        )
    );
    assert_eq!(got[4].0, 404);
}

fn zap_bad_frames(io: ServerIo) {
    let addr = server(io).addr[Proto::Zap].unwrap();
    // Zero length and a length over the limit: closed, as the reference does, no reply.
    for prefix in [0u32, (2 << 20) + 1, u32::MAX] {
        let mut s = connect(addr);
        s.write_all(&prefix.to_be_bytes()).unwrap();
        assert!(closed(&mut s), "length {prefix}");
    }
    // A frame that does not decode: 400 with the reason, then closed.
    let mut s = connect(addr);
    s.write_all(&[0, 0, 0, 20]).unwrap();
    s.write_all(&[0x42; 20]).unwrap();
    let got = read_zap(&mut s, 1);
    assert_eq!(got[0].0, 400);
    assert_eq!(
        String::from_utf8_lossy(&got[0].1),
        "malformed request frame: bad magic (not ZAP\\0)"
    );
    assert!(closed(&mut s));
    // A response frame sent as a request: wrong frame type, 400.
    let mut s = connect(addr);
    let mut resp = Vec::new();
    rxsteer_wire::zaphttp::encode_response(&mut resp, 200, b"", &[], b"x", &[]);
    s.write_all(&resp).unwrap();
    assert_eq!(read_zap(&mut s, 1)[0].0, 400);
    // A frame split into single bytes still decodes.
    let mut s = connect(addr);
    s.set_nodelay(true).unwrap();
    for b in zap_request(b"GET", b"/health", &[], b"") {
        s.write_all(&[b]).unwrap();
    }
    assert_eq!(read_zap(&mut s, 1)[0].0, 200);
}

on_each_engine!(
    a_half_closed_client_gets_every_response_then_the_close,
    http_routes,
    http_pipelined_requests_are_all_answered_in_order,
    http_bad_requests_get_their_status_and_close,
    zap_routes_and_pipelining,
    zap_bad_frames,
);
