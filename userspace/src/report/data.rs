//! The shape of a stored run: which arms (steering mode, and XDP mode when the run compared
//! them) and protocols it holds, rows by repetition, and each arm's ratio to untuned from the
//! same repetition, protocol and XDP mode.
use serde_json::Value;

pub const MODES: [&str; 3] = ["none", "rps", "cpumap"];

/// An arm's steering mode and what else the run varied (`skb`, `skb-plain`, ...).
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

/// The untuned arm an arm's ratio is taken against (same variant).
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

/// The arms and protocols present: variants in the order the run stored them, steering
/// modes in their canonical order within each.
pub fn dims(run: &Value) -> (Vec<String>, Vec<String>) {
    let rows = run["runs"].as_array().map_or(&[][..], |v| &v[..]);
    let mut variants: Vec<Option<&str>> = Vec::new();
    for r in rows {
        let v = split(arm_of(r)).1;
        if !variants.contains(&v) {
            variants.push(v);
        }
    }
    let mut arms: Vec<String> = Vec::new();
    for v in variants {
        arms.extend(MODES.iter().map(|m| match v {
            Some(v) => format!("{m}-{v}"),
            None => m.to_string(),
        }));
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

/// An arm's req/s over its untuned's in one repetition (same protocol and variant): the one
/// ratio function, for the live screen and the report alike.
pub fn ratio_in(rows: &[Value], rep: u64, arm: &str, proto: &str) -> Option<f64> {
    let b = find(rows, rep, &base(arm), proto)?["req_per_s"].as_f64()?;
    Some(find(rows, rep, arm, proto)?["req_per_s"].as_f64()? / b.max(1e-9))
}

/// Per repetition, an arm's ratio to its untuned.
pub fn ratios(rows: &[Value], arm: &str, proto: &str) -> Vec<f64> {
    (0..reps(rows))
        .filter_map(|rep| ratio_in(rows, rep, arm, proto))
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
        assert_eq!(dims(&run).0, ["cpumap-skb", "none-drv", "rps"]);
        assert_eq!(label("cpumap-skb-plain"), "XDP cpumap (skb-plain)");
        assert_eq!(base("cpumap-skb-plain"), "none-skb-plain");
    }

    #[test]
    fn ratios_pair_rep_protocol_and_variant() {
        let rows = vec![
            serde_json::json!({"rep": 0, "arm": "none-skb", "proto": "zap", "req_per_s": 200.0}),
            serde_json::json!({"rep": 0, "arm": "none-drv", "proto": "zap", "req_per_s": 100.0}),
            serde_json::json!({"rep": 0, "arm": "rps-skb", "proto": "zap", "req_per_s": 150.0}),
            serde_json::json!({"rep": 0, "mode": "none", "proto": "http", "req_per_s": 10.0}),
        ];
        assert_eq!(ratio_in(&rows, 0, "rps-skb", "zap"), Some(0.75));
        assert_eq!(ratio_in(&rows, 1, "rps-skb", "zap"), None);
        assert_eq!(ratio_in(&rows, 0, "rps-skb", "http"), None);
    }
}
