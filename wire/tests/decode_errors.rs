//! Bad input to the decoders: a defined error, never a panic, and never stricter than the
//! reference reader where it is lenient.
use rxsteer_wire::{
    http1::{parse_request, write_response, HttpError, Limits},
    rpc::{handle_json, parse_account, RpcError},
    zap::{ZapError, MAX_FRAME},
    zaphttp::{
        decode_request, decode_response, encode_request, encode_response, split_frame,
        FrameLenError, Pairs,
    },
};

fn request_frame() -> Vec<u8> {
    let mut out = Vec::new();
    encode_request(&mut out, b"GET", b"/health", &[(b"Host", b"x")], b"");
    out.split_off(4)
}

#[test]
fn message_header_errors() {
    let good = request_frame();
    assert_eq!(decode_request(&good[..10]).unwrap_err(), ZapError::Short);
    let mut bad = good.clone();
    bad[0] = b'X';
    assert_eq!(decode_request(&bad).unwrap_err(), ZapError::Magic);
    let mut bad = good.clone();
    bad[4] = 3;
    assert_eq!(decode_request(&bad).unwrap_err(), ZapError::Version(3));
    let mut v2 = good.clone();
    v2[4] = 2;
    assert!(
        decode_request(&v2).is_ok(),
        "version 2 is accepted, as upstream does"
    );
    let mut bad = good.clone();
    bad[12..16].copy_from_slice(&(good.len() as u32 + 1).to_le_bytes());
    assert!(matches!(
        decode_request(&bad).unwrap_err(),
        ZapError::Size { .. }
    ));
    let mut bad = good.clone();
    bad[8..12].copy_from_slice(&8u32.to_le_bytes());
    assert!(matches!(
        decode_request(&bad).unwrap_err(),
        ZapError::Root { .. }
    ));
    assert_eq!(
        decode_response(&good).unwrap_err(),
        ZapError::FrameType { got: 1, want: 2 }
    );
    // Bytes past `size` are ignored.
    let mut longer = good.clone();
    longer.extend_from_slice(b"trailing junk");
    assert_eq!(decode_request(&longer).unwrap().target, b"/health");
}

#[test]
fn slots_out_of_range_read_as_empty_like_go() {
    let mut f = request_frame();
    // Point the target slot far past the end: lenient, reads as empty.
    f[24..28].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    assert_eq!(decode_request(&f).unwrap().target, b"");
    // Null method decodes as GET.
    let mut f = request_frame();
    f[16..24].fill(0);
    assert_eq!(decode_request(&f).unwrap().method, b"GET");
}

#[test]
fn truncated_pair_blocks_are_errors() {
    for block in [
        &[1u8, 0, 0][..],
        &[1, 0, 0, 0, 9, 0, 0, 0, b'a'],
        &[2, 0, 0, 0, 1, 0, 0, 0, b'k', 1, 0, 0, 0, b'v'],
    ] {
        assert_eq!(
            Pairs::parse(block).unwrap_err(),
            ZapError::TruncatedPairs,
            "{block:?}"
        );
    }
    // A count far larger than the block cannot make the parser read out of bounds.
    assert_eq!(
        Pairs::parse(&[0xff, 0xff, 0xff, 0xff]).unwrap_err(),
        ZapError::TruncatedPairs
    );
    let ok = Pairs::parse(&[1, 0, 0, 0, 1, 0, 0, 0, b'k', 1, 0, 0, 0, b'v', 0xee]).unwrap();
    assert_eq!(
        ok.iter().collect::<Vec<_>>(),
        vec![(&b"k"[..], &b"v"[..])],
        "bytes after the last pair ignored"
    );
}

#[test]
fn frame_lengths() {
    assert_eq!(split_frame(&[0, 0, 0], MAX_FRAME).unwrap(), None);
    assert_eq!(
        split_frame(&[0, 0, 0, 0], MAX_FRAME).unwrap_err(),
        FrameLenError::Zero
    );
    let huge = (MAX_FRAME as u32 + 1).to_be_bytes();
    assert!(matches!(
        split_frame(&huge, MAX_FRAME).unwrap_err(),
        FrameLenError::TooLarge { .. }
    ));
    // 1 GiB announced, 4 bytes present: just "need more", nothing sized by the claim.
    assert!(matches!(
        split_frame(&(1u32 << 30).to_be_bytes(), MAX_FRAME).unwrap_err(),
        FrameLenError::TooLarge { .. }
    ));
    assert_eq!(split_frame(&[0, 0, 0, 5, 1, 2], MAX_FRAME).unwrap(), None);
    let mut two = Vec::new();
    encode_response(&mut two, 200, b"", &[], b"a", &[]);
    encode_response(&mut two, 404, b"", &[], b"b", &[]);
    let (f1, used) = split_frame(&two, MAX_FRAME).unwrap().unwrap();
    assert_eq!(decode_response(f1).unwrap().body, b"a");
    let (f2, _) = split_frame(&two[used..], MAX_FRAME).unwrap().unwrap();
    let r = decode_response(f2).unwrap();
    assert_eq!(
        (r.status, r.reason, r.body),
        (404, &b"Not Found"[..], &b"b"[..])
    );
}

#[test]
fn http_requests_pipelined_and_partial() {
    let l = Limits::default();
    let two = b"GET /health HTTP/1.1\r\nHost: a\r\n\r\nPOST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc";
    let r1 = parse_request(two, &l).unwrap().unwrap();
    assert_eq!(
        (r1.method, r1.path, r1.body, r1.close),
        ("GET", "/health", &b""[..], false)
    );
    let r2 = parse_request(&two[r1.consumed..], &l).unwrap().unwrap();
    assert_eq!(
        (r2.method, r2.path, r2.body),
        ("POST", "/echo", &b"abc"[..])
    );
    assert_eq!(r1.consumed + r2.consumed, two.len());
    for cut in 0..two.len() - r2.consumed {
        if cut < r1.consumed {
            assert!(
                parse_request(&two[..cut], &l).unwrap().is_none(),
                "cut at {cut}"
            );
        }
    }
    assert!(
        parse_request(b"POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nab", &l)
            .unwrap()
            .is_none()
    );
    let close = parse_request(b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", &l)
        .unwrap()
        .unwrap();
    assert!(close.close);
    let old = parse_request(b"GET / HTTP/1.0\r\n\r\n", &l)
        .unwrap()
        .unwrap();
    assert!(old.close, "HTTP/1.0 closes unless keep-alive");
}

#[test]
fn http_errors_map_to_statuses() {
    let l = Limits {
        max_header_bytes: 256,
        max_body: 1024,
    };
    let big = [
        b"GET / HTTP/1.1\r\nX: ".as_slice(),
        &[b'y'; 300],
        b"\r\n\r\n",
    ]
    .concat();
    let cases: [(&[u8], HttpError, u16); 6] = [
        (b"GARBAGE\r\n\r\n", HttpError::Malformed, 400),
        (
            b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
            HttpError::Malformed,
            400,
        ),
        (
            b"GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            HttpError::Malformed,
            400,
        ),
        (
            b"POST / HTTP/1.1\r\nContent-Length: 2048\r\n\r\n",
            HttpError::BodyTooLarge,
            413,
        ),
        (
            b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            HttpError::LengthRequired,
            411,
        ),
        (&big, HttpError::HeadersTooLarge, 431),
    ];
    for (req, err, status) in cases {
        assert_eq!(
            parse_request(req, &l).unwrap_err(),
            err,
            "{}",
            String::from_utf8_lossy(req)
        );
        assert_eq!(err.status(), status);
    }
    // An endless header section (no blank line yet) is refused once past the limit.
    let endless = [b"GET / HTTP/1.1\r\n".as_slice(), &b"X-A: b\r\n".repeat(40)].concat();
    assert_eq!(
        parse_request(&endless, &l).unwrap_err(),
        HttpError::HeadersTooLarge
    );
    let many: Vec<u8> = [
        b"GET / HTTP/1.1\r\n".as_slice(),
        &b"A: b\r\n".repeat(70),
        b"\r\n",
    ]
    .concat();
    assert_eq!(
        parse_request(&many, &Limits::default()).unwrap_err(),
        HttpError::HeadersTooLarge
    );
}

#[test]
fn http_response_encoding() {
    let mut out = Vec::new();
    write_response(&mut out, 200, b"text/plain", b"ok", false);
    assert_eq!(out, b"HTTP/1.1 200 OK\r\nServer: rxsteer\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok");
    out.clear();
    write_response(&mut out, 431, b"text/plain", b"", true);
    assert!(out.starts_with(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    assert!(out.ends_with(b"Content-Length: 0\r\nConnection: close\r\n\r\n"));
}

#[test]
fn rpc_json_round_trip_and_errors() {
    let mut out = Vec::new();
    let req = br#"{"method":"eth_getBalance","account":"0xdeadbeef00112233445566778899aabbccddeeff","block":68943,"id":1}"#;
    handle_json(req, &mut out).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["id"], 1);
    assert_eq!(
        v["balance"], 0x0de0_b6b3_a765_0d8bu64,
        "same compute as the native path"
    );
    assert_eq!(v["nonce"], 42);
    assert_eq!(
        v["blockHash"],
        "0x0123456789abcdeffedcba98765432100f1e2d3c4b5a69788796a5b4c3d2e1f0"
    );
    for bad in [
        &b"{}"[..],
        b"not json",
        br#"{"method":"m","account":"0x12","block":1,"id":1}"#,
    ] {
        assert!(
            handle_json(bad, &mut Vec::new()).is_err(),
            "{}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(
        parse_account("0xzz00112233445566778899aabbccddeeff001122").unwrap_err(),
        RpcError::Account
    );
}

#[test]
fn content_length_is_digits_only_and_never_overflows() {
    use rxsteer_wire::http1::{content_length, parse_response};
    assert_eq!(content_length(b"0"), Some(0));
    assert_eq!(content_length(b" 42 "), Some(42));
    for bad in [
        &b""[..],
        b"+5",
        b"-1",
        b"4 2",
        b"0x10",
        b"1e3",
        b"18446744073709551616",
    ] {
        assert_eq!(
            content_length(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    // Found by fuzzing rxload's response parser: a length near usize::MAX wrapped the end of
    // the body around (a panic with overflow checks on).
    let huge = b"HTTP/1.1 200 OK\r\nContent-Length: 18446744073709551615\r\n\r\n";
    assert!(matches!(parse_response(huge), Err(HttpError::Malformed)));
    let signed = b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok";
    assert!(matches!(parse_response(signed), Err(HttpError::Malformed)));
    // The server side refuses a signed length instead of reading it as 5.
    let req = b"POST /echo HTTP/1.1\r\nContent-Length: +5\r\n\r\nhello";
    assert_eq!(
        parse_request(req, &Limits::default()).unwrap_err(),
        HttpError::Malformed
    );
}
