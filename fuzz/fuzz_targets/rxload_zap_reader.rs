//! rxload's ZAP-HTTP response reading as a connection runs it: frames back to back, reads
//! split anywhere, null and out-of-frame slots, every response validated (common/reader.rs).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common/reader.rs"]
mod reader;

fuzz_target!(|data: &[u8]| reader::drive(rxload::target::Proto::Zap, data));
