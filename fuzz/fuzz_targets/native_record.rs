//! The native ZAP reader: the message header and slots, the rpc request and response records,
//! and the handler that decodes a request and encodes its answer. Whatever decodes must
//! answer with the fixed 80-byte response.
#![no_main]
use libfuzzer_sys::fuzz_target;
use rxsteer_wire::{
    native::{EthCallReq, EthCallResp},
    rpc,
    zap::Message,
};

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = Message::parse(data) {
        std::hint::black_box(m.frame_type());
        for slot in (0..data.len()).step_by(8).take(64) {
            let s = m.bytes_slot(slot);
            assert!(s.len() <= data.len());
        }
    }
    std::hint::black_box(EthCallResp::decode(data));
    let decoded = EthCallReq::decode(data).is_ok();
    let mut out = Vec::new();
    match rpc::handle_native(data, &mut out) {
        Ok(()) => assert!(decoded && out.len() == 80, "{} bytes", out.len()),
        Err(_) => assert!(!decoded),
    }
});
