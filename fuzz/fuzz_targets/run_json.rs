//! A stored run.json is untrusted input (a results/ folder is shared and cloned): whatever
//! parses and passes the bounds check must render as a report without a panic, and nothing
//! may allocate by a number the file gives (libFuzzer's malloc limit fails such an input).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(doc) = rxsteer_report::parse(data) {
        let _ = std::hint::black_box(rxsteer_report::render(&doc));
    }
});
