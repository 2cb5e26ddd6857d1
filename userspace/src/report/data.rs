//! The shape of a stored run: which arms (steering mode, and XDP mode when the run compared
//! them) and protocols it holds, rows by repetition, and each arm's ratio to untuned from the
//! same repetition, protocol and XDP mode.
use serde_json::Value;

pub const MODES: [&str; 3] = ["none", "rps", "cpumap"];
/// XDP modes an arm's name may carry (`cpumap-skb`), in report order.
pub const XDP_MODES: [&str; 2] = ["drv", "skb"];

/// An arm's steering mode and, for runs that compared XDP modes, its XDP mode.
pub fn split(arm: &str) -> (&str, Option<&str>) {
    match arm.split_once('-') {
        Some((m, x)) => (m, Some(x)),
        None => (arm, None),
    }
}

pub fn label(arm: &str) -> String {
    let (mode, xdp) = split(arm);
    let name = match mode {
        "none" => "untuned",
        "rps" => "RPS/RFS/XPS",
        _ => "XDP cpumap",
    };
    match xdp {
        Some(x) => format!("{name} ({x})"),
        None => name.to_string(),
    }
}

/// The untuned arm an arm's ratio is taken against (same XDP mode).
pub fn base(arm: &str) -> String {
    match split(arm).1 {
        Some(x) => format!("none-{x}"),
        None => "none".into(),
    }
}

pub fn proto_label(p: &str) -> &str {
    match p {
        "zap" => "ZAP",
        _ => "HTTP/1.1",
    }
}

/// A row's arm (runs stored before arms existed have only a mode).
pub fn arm_of(r: &Value) -> &str {
    r["arm"].as_str().or(r["mode"].as_str()).unwrap_or("none")
}

/// The arms and protocols present, in their canonical order (XDP mode, then steering mode).
pub fn dims(run: &Value) -> (Vec<String>, Vec<String>) {
    let rows = run["runs"].as_array().map_or(&[][..], |v| &v[..]);
    let mut arms: Vec<String> = MODES.iter().map(|m| m.to_string()).collect();
    for x in XDP_MODES {
        arms.extend(MODES.iter().map(|m| format!("{m}-{x}")));
    }
    arms.retain(|a| rows.iter().any(|r| arm_of(r) == a));
    let mut protos: Vec<String> = Vec::new();
    for r in rows {
        let p = r["proto"].as_str().unwrap_or("http").to_string();
        if !protos.contains(&p) {
            protos.push(p);
        }
    }
    (arms, protos)
}

/// The rows of one arm and protocol, every repetition.
pub fn of<'a>(rows: &'a [Value], arm: &str, proto: &str) -> Vec<&'a Value> {
    rows.iter()
        .filter(|r| arm_of(r) == arm && r["proto"].as_str().unwrap_or("http") == proto)
        .collect()
}

pub fn find<'a>(rows: &'a [Value], rep: u64, arm: &str, proto: &str) -> Option<&'a Value> {
    of(rows, arm, proto)
        .into_iter()
        .find(|r| r["rep"].as_u64() == Some(rep))
}

pub fn reps(rows: &[Value]) -> u64 {
    rows.iter()
        .filter_map(|r| r["rep"].as_u64())
        .max()
        .map_or(0, |m| m + 1)
}

/// Per repetition, an arm's req/s over its untuned's (same repetition, protocol, XDP mode).
pub fn ratios(rows: &[Value], arm: &str, proto: &str) -> Vec<f64> {
    let base = base(arm);
    (0..reps(rows))
        .filter_map(|rep| {
            let b = find(rows, rep, &base, proto)?["req_per_s"].as_f64()?;
            Some(find(rows, rep, arm, proto)?["req_per_s"].as_f64()? / b.max(1e-9))
        })
        .collect()
}

pub fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)))
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The mean over `rows` of per-CPU array `key` (missing entries count as 0).
pub fn mean_per_cpu(rows: &[&Value], key: &str, cpus: usize) -> Vec<f64> {
    (0..cpus)
        .map(|c| {
            rows.iter().filter_map(|r| r[key][c].as_f64()).sum::<f64>() / rows.len().max(1) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arms_carry_their_xdp_mode() {
        assert_eq!(label("cpumap-skb"), "XDP cpumap (skb)");
        assert_eq!(label("none"), "untuned");
        assert_eq!(base("rps-skb"), "none-skb");
        assert_eq!(base("rps"), "none");
        let run = serde_json::json!({"runs": [
            {"arm": "cpumap-skb", "mode": "cpumap", "proto": "zap"},
            {"arm": "none-drv", "mode": "none", "proto": "zap"},
            {"mode": "rps"}]});
        assert_eq!(dims(&run).0, ["rps", "none-drv", "cpumap-skb"]);
    }
}
