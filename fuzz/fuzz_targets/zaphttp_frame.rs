//! The server's ZAP-HTTP read path: split frames off a read buffer as the connection does,
//! decode each request, walk every header and trailer pair. Every view must lie inside the
//! frame it came from.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rxsteer_wire::zaphttp::{decode_request, split_frame};

fn inside(part: &[u8], whole: &[u8]) -> bool {
    let (p, w) = (part.as_ptr_range(), whole.as_ptr_range());
    part.is_empty() || (p.start >= w.start && p.end <= w.end)
}

fuzz_target!(|data: &[u8]| {
    let mut buf = data;
    // A small limit, so the fuzzer reaches both the limit and complete frames.
    while let Ok(Some((frame, used))) = split_frame(buf, 1 << 16) {
        assert!(used > 4 && used <= buf.len());
        if let Ok(r) = decode_request(frame) {
            for part in [r.target, r.proto, r.body] {
                assert!(inside(part, frame));
            }
            // The body's offsets name the same bytes as its slice.
            assert_eq!(&frame[r.body_at.clone()], r.body);
            for (k, v) in r.headers.iter().chain(r.trailer.iter()) {
                assert!(inside(k, frame) && inside(v, frame));
            }
            std::hint::black_box(r.host());
        }
        buf = &buf[used..];
    }
});
