//! The header walk the XDP programs run (Ethernet, VLAN, IPv4 with options, IPv6 with
//! extension headers, ports), compiled for the host: classification, the steering hash, and
//! the CPU pick must hold for any bytes.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rxsteer_common::parse::{classify, flow_hash, pick, walk};

fuzz_target!(|data: &[u8]| {
    // black_box: a result nobody reads lets the optimiser drop the whole walk, and with it
    // every edge libFuzzer could have covered.
    std::hint::black_box(classify(std::hint::black_box(data), |p| (p % 7) as u8));
    if let Ok(h) = walk(data) {
        assert!(h.l3_off <= data.len());
        if let Some(hash) = flow_hash(data, &h) {
            for len in [1, 2, 3, 20, 64] {
                assert!(pick(hash, len) < len);
            }
        }
    }
});
