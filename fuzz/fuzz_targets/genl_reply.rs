//! The generic-netlink reply parser: whatever the socket hands back is split into messages and
//! attributes, or refused, never a panic; every attribute lies within the datagram.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rxsteer_tune::genl::{split, Reply};

fuzz_target!(|data: &[u8]| {
    if let Ok(replies) = split(data) {
        for r in replies {
            if let Reply::Message(attrs) = r {
                let total: usize = attrs.iter().map(|(_, v)| v.len() + 4).sum();
                assert!(total <= data.len());
            }
        }
    }
});
