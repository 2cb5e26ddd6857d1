//! rxload's HTTP/1.1 response reading as a connection runs it: pipelined responses, reads
//! split anywhere, every response validated (common/reader.rs).
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common/reader.rs"]
mod reader;

fuzz_target!(|data: &[u8]| reader::drive(rxload::target::Proto::Http, data));
