//! rxload's response parsers: HTTP/1.1 responses framed by Content-Length, ZAP-HTTP response
//! frames, and the rpc answer in both forms (JSON and the native record), as the validator
//! reads them. A hostile server must not crash or stall the load generator.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rxsteer_wire::{
    http1::parse_response,
    native::EthCallResp,
    rpc::JsonResponse,
    zaphttp::{decode_response, split_frame},
};

fuzz_target!(|data: &[u8]| {
    let mut buf = data;
    while let Ok(Some(r)) = parse_response(buf) {
        assert!(r.consumed > 0 && r.consumed <= buf.len());
        std::hint::black_box(serde_json::from_slice::<JsonResponse>(r.body));
        buf = &buf[r.consumed..];
    }
    let mut buf = data;
    while let Ok(Some((frame, used))) = split_frame(buf, 64 << 20) {
        if let Ok(r) = decode_response(frame) {
            std::hint::black_box(EthCallResp::decode(r.body));
            for (k, v) in r.headers.iter().chain(r.trailer.iter()) {
                assert!(k.len() + v.len() <= frame.len());
            }
        }
        buf = &buf[used..];
    }
});
