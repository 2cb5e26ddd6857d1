//! Every vector in tests/golden (copied from the reference vectors, produced by the reference
//! Go encoders; see tests/golden/README.md): encoded
//! byte for byte from its fields, and decoded back to the same fields.
use rxsteer_wire::{
    native::{EthCallReq, EthCallResp},
    rpc,
    zap::MAX_FRAME,
    zaphttp::{decode_request, decode_response, encode_request, encode_response, split_frame},
};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

fn golden_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    assert!(dir.is_dir(), "golden vectors expected at {}", dir.display());
    dir
}

/// The wire bytes of a case, checked against the manifest's sha256.
fn wire(name: &str) -> Vec<u8> {
    let dir = golden_dir();
    let hex = std::fs::read_to_string(dir.join(format!("{name}.wire.hex"))).unwrap();
    let hex = hex.trim();
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    let manifest = std::fs::read_to_string(dir.join("MANIFEST.tsv")).unwrap();
    let row = manifest
        .lines()
        .find(|l| l.split('\t').next() == Some(name))
        .unwrap();
    let sha = row.split('\t').nth(4).unwrap();
    let got: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(got, sha, "{name}: hex file does not match MANIFEST sha256");
    bytes
}

/// The frame inside a wire case (the BE length prefix checked and removed).
fn frame(w: &[u8]) -> &[u8] {
    let (f, used) = split_frame(w, MAX_FRAME).unwrap().unwrap();
    assert_eq!(used, w.len());
    f
}

fn native_req() -> EthCallReq<'static> {
    const ACCOUNT: [u8; 20] = [
        0xde, 0xad, 0xbe, 0xef, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa,
        0xbb, 0xcc, 0xdd, 0xee, 0xff,
    ];
    EthCallReq {
        id: 1,
        block: 0x10d4f,
        method: b"eth_getBalance",
        account: &ACCOUNT,
    }
}

fn native_req_bytes() -> Vec<u8> {
    let mut v = Vec::new();
    native_req().encode(&mut v);
    v
}

fn native_resp_bytes() -> Vec<u8> {
    let r = native_req();
    let mut v = Vec::new();
    EthCallResp {
        id: r.id,
        balance: rpc::balance(r.block, r.method, r.account),
        nonce: rpc::NONCE,
        block_hash: &rpc::BLOCK_HASH,
    }
    .encode(&mut v);
    v
}

fn with_prefix(msg: &[u8]) -> Vec<u8> {
    let mut v = (msg.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(msg);
    v
}

fn check_request(
    name: &str,
    method: &[u8],
    target: &[u8],
    headers: &[(&[u8], &[u8])],
    body: &[u8],
) {
    let want = wire(name);
    let mut out = Vec::new();
    encode_request(&mut out, method, target, headers, body);
    assert_eq!(out, want, "{name}: encoded bytes");
    let r = decode_request(frame(&want)).unwrap();
    assert_eq!(
        (r.method, r.target, r.proto, r.body),
        (method, target, &b"HTTP/1.1"[..], body),
        "{name}"
    );
    let pairs: Vec<(&[u8], &[u8])> = r.headers.iter().collect();
    assert_eq!(pairs, headers, "{name}: header pairs in order");
    assert!(r.trailer.is_empty());
}

fn check_response(
    name: &str,
    status: u16,
    headers_in: &[(&[u8], &[u8])],
    body: &[u8],
    trailers: &[(&[u8], &[u8])],
    headers_out: &[(&[u8], &[u8])],
) {
    let want = wire(name);
    let mut out = Vec::new();
    encode_response(&mut out, status, b"", headers_in, body, trailers);
    assert_eq!(out, want, "{name}: encoded bytes");
    let r = decode_response(frame(&want)).unwrap();
    assert_eq!(
        (r.status, r.reason, r.proto, r.body),
        (status, &b"OK"[..], &b"HTTP/1.1"[..], body),
        "{name}"
    );
    assert_eq!(r.headers.iter().collect::<Vec<_>>(), headers_out, "{name}");
    assert_eq!(r.trailer.iter().collect::<Vec<_>>(), trailers, "{name}");
}

const CT: &[u8] = b"Content-Type";
const TEXT: &[u8] = b"text/plain; charset=utf-8";

#[test]
fn requests() {
    check_request(
        "req_get_health_host",
        b"GET",
        b"/health",
        &[(b"Host", b"127.0.0.1:8391")],
        b"",
    );
    check_request("req_get_health_nohost", b"GET", b"/health", &[], b"");
    check_request(
        "upstream_v03_goldenEmptyRequest",
        b"GET",
        b"/health",
        &[],
        b"",
    );
    check_request(
        "req_post_rpc_json",
        b"POST",
        b"/rpc",
        &[
            (CT, b"application/json"),
            (b"Accept", b"application/json"),
            (b"X-Request-Id", b"req-0001"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#,
    );
    check_request(
        "upstream_v03_goldenRequest",
        b"POST",
        b"/v1/blocks?height=42",
        &[(CT, b"application/json"), (b"X-Trace-Id", b"abc-123")],
        br#"{"jsonrpc":"2.0","method":"eth_blockNumber"}"#,
    );
    let body: Vec<u8> = (0..65536).map(|i| b'a' + (i % 26) as u8).collect();
    check_request(
        "req_post_64k",
        b"POST",
        b"/echo",
        &[(CT, b"application/octet-stream")],
        &body,
    );
    check_request(
        "req_zapload_rpc",
        b"POST",
        b"/rpc",
        &[(b"Host", b"127.0.0.1:8391"), (CT, b"application/zap")],
        &native_req_bytes(),
    );
}

#[test]
fn request_headers_take_fasthttp_order_and_drop_frame_owned_names() {
    // Given out of order and with Content-Length / Trailer: encoded as the reference does.
    let mut out = Vec::new();
    encode_request(
        &mut out,
        b"POST",
        b"/rpc",
        &[
            (b"Content-Length", b"82"),
            (CT, b"application/zap"),
            (b"Trailer", b"X"),
            (b"Host", b"127.0.0.1:8391"),
        ],
        &native_req_bytes(),
    );
    assert_eq!(out, wire("req_zapload_rpc"));
}

#[test]
fn responses() {
    check_response("resp_200_ok", 200, &[], b"ok", &[], &[(CT, TEXT)]);
    check_response(
        "resp_zapload_rpc",
        200,
        &[],
        &native_resp_bytes(),
        &[],
        &[(CT, TEXT)],
    );
    let json_ct: &[(&[u8], &[u8])] = &[(CT, b"application/json"), (b"X-Trace-Id", b"abc-123")];
    check_response(
        "upstream_v03_goldenResponse",
        200,
        json_ct,
        br#"{"result":"0x2a"}"#,
        &[],
        json_ct,
    );
    let oct: &[(&[u8], &[u8])] = &[(CT, b"application/octet-stream")];
    check_response(
        "upstream_v03_goldenTrailerResponse",
        200,
        oct,
        b"streamed",
        &[(b"X-Checksum", b"deadbeef")],
        oct,
    );
}

#[test]
fn native_records() {
    assert_eq!(with_prefix(&native_req_bytes()), wire("native_rpc_req"));
    assert_eq!(with_prefix(&native_resp_bytes()), wire("native_rpc_resp"));
    let req_wire = wire("native_rpc_req");
    assert_eq!(EthCallReq::decode(&req_wire[4..]).unwrap(), native_req());
    let resp_wire = wire("native_rpc_resp");
    let r = EthCallResp::decode(&resp_wire[4..]).unwrap();
    assert_eq!(
        (r.id, r.balance, r.nonce, r.block_hash),
        (1, 0x0de0_b6b3_a765_0d8b, 42, &rpc::BLOCK_HASH[..])
    );
    // The server's native rpc handler produces exactly the reference response body.
    let mut out = Vec::new();
    rpc::handle_native(&req_wire[4..], &mut out).unwrap();
    assert_eq!(with_prefix(&out), resp_wire);
}

#[test]
fn a_response_head_plus_its_body_is_the_whole_frame() {
    // The vectored path must put exactly the same bytes on the wire as the copying encoder.
    for body in [&b"ok"[..], &[9u8; 70000][..], b""] {
        let ct: &[(&[u8], &[u8])] = &[(b"Content-Type", b"application/octet-stream")];
        let mut whole = Vec::new();
        encode_response(&mut whole, 200, b"", ct, body, &[]);
        let mut head = Vec::new();
        rxsteer_wire::zaphttp::encode_response_head(&mut head, 200, b"", ct, body.len());
        head.extend_from_slice(body);
        assert_eq!(head, whole, "body of {} bytes", body.len());
    }
}
