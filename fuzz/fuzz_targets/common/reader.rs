//! A connection's read side as rxload runs it, for the fuzz targets: the bytes arrive in reads
//! of the sizes the input chooses (split anywhere, several responses per read), and after each
//! read every whole response at the front is parsed, validated and consumed, exactly as both
//! load engines do (`rxload::response`). Input: one byte of read-size seed, one of which check,
//! then the stream.
use rxload::{
    response::{grow_if_full, parse_one, settle},
    scenario::Check,
    stats::ErrorKind,
    target::Proto,
};

pub fn drive(proto: Proto, data: &[u8]) {
    let [seed, which, stream @ ..] = data else {
        return;
    };
    let check = match which % 4 {
        0 => Check::Body(Vec::new()),
        1 => Check::Body(b"ok".to_vec()),
        2 => Check::RpcJson,
        _ => Check::RpcNative,
    };
    // A small first buffer, so growth is reached too (the engines start at 16 KiB).
    let mut buf = vec![0u8; 64];
    let mut filled = 0usize;
    let mut rest = stream;
    let mut step = *seed as usize;
    while !rest.is_empty() {
        // Read sizes from 1 to 64 bytes, varying with every read.
        step = step.wrapping_mul(31).wrapping_add(7);
        let n = (step % 64 + 1).min(rest.len()).min(buf.len() - filled);
        buf[filled..filled + n].copy_from_slice(&rest[..n]);
        filled += n;
        rest = &rest[n..];
        loop {
            match parse_one(proto, &buf[..filled]) {
                Ok(Some(p)) => {
                    assert!(p.used > 0 && p.used <= filled, "{p:?} of {filled}");
                    assert!(p.body.start <= p.body.end && p.body.end <= p.used, "{p:?}");
                    let before = filled;
                    let a = settle(&check, &mut buf, &mut filled, p.clone());
                    assert_eq!(filled, before - p.used);
                    assert_eq!(a.bytes, p.used);
                    assert!(matches!(
                        a.valid,
                        Ok(()) | Err(ErrorKind::Status | ErrorKind::Body)
                    ));
                }
                Ok(None) => {
                    if grow_if_full(&mut buf, filled).is_err() {
                        return;
                    }
                    break;
                }
                // A malformed response is an error of a named kind, and the connection
                // starts over: what follows on this one is not read.
                Err(kind) => {
                    assert!(matches!(kind, ErrorKind::Protocol | ErrorKind::Unsupported));
                    return;
                }
            }
        }
    }
}
