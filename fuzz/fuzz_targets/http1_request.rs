//! The server's HTTP/1.1 read path: every request in the buffer parsed in turn (pipelining),
//! each body bounded by the limits, rpc bodies through the JSON handler.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rxsteer_wire::{
    http1::{parse_request, Limits},
    rpc,
};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        max_header_bytes: 4096,
        max_body: 1 << 16,
    };
    let mut buf = data;
    let mut out = Vec::new();
    while let Ok(Some(r)) = parse_request(buf, &limits) {
        assert!(r.consumed > 0 && r.consumed <= buf.len());
        assert!(r.body.len() <= limits.max_body);
        out.clear();
        std::hint::black_box(rpc::handle_json(r.body, &mut out));
        buf = &buf[r.consumed..];
    }
});
