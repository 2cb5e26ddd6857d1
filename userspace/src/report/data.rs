//! The shape of a stored run: which modes and protocols it holds, rows by repetition, and
//! each mode's ratio to untuned from the same repetition and protocol.
use serde_json::Value;

pub const MODES: [&str; 3] = ["none", "rps", "cpumap"];

pub fn label(mode: &str) -> &str {
    match mode {
        "none" => "untuned",
        "rps" => "RPS/RFS/XPS",
        _ => "XDP cpumap",
    }
}

pub fn proto_label(p: &str) -> &str {
    match p {
        "zap" => "ZAP",
        _ => "HTTP/1.1",
    }
}

/// The modes and protocols present, in their canonical order.
pub fn dims(run: &Value) -> (Vec<&'static str>, Vec<String>) {
    let rows = run["runs"].as_array().map_or(&[][..], |v| &v[..]);
    let modes = MODES
        .into_iter()
        .filter(|m| rows.iter().any(|r| r["mode"] == *m))
        .collect();
    let mut protos: Vec<String> = Vec::new();
    for r in rows {
        let p = r["proto"].as_str().unwrap_or("http").to_string();
        if !protos.contains(&p) {
            protos.push(p);
        }
    }
    (modes, protos)
}

pub fn find<'a>(rows: &'a [Value], rep: u64, mode: &str, proto: &str) -> Option<&'a Value> {
    rows.iter().find(|r| {
        r["rep"].as_u64() == Some(rep)
            && r["mode"] == mode
            && r["proto"].as_str().unwrap_or("http") == proto
    })
}

pub fn reps(rows: &[Value]) -> u64 {
    rows.iter()
        .filter_map(|r| r["rep"].as_u64())
        .max()
        .map_or(0, |m| m + 1)
}

/// Per repetition, each mode's req/s over untuned's (same repetition, same protocol).
pub fn ratios(rows: &[Value], mode: &str, proto: &str) -> Vec<f64> {
    (0..reps(rows))
        .filter_map(|rep| {
            let base = find(rows, rep, "none", proto)?["req_per_s"].as_f64()?;
            Some(find(rows, rep, mode, proto)?["req_per_s"].as_f64()? / base.max(1e-9))
        })
        .collect()
}

pub fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)))
}
