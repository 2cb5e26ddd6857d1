//! The host's judgement of what a guest gathered (guest.sh prints the evidence): each check
//! pass, fail or refused, with what it rests on.
use serde_json::Value;
use std::collections::BTreeMap;

use super::Nic;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    Fail,
    /// The tool refused, as it should on this row (named in the detail).
    Refused,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Refused => "refused",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub verdict: Verdict,
    pub detail: String,
}

/// What the guest said, by kind.
#[derive(Default, Debug)]
pub struct Evidence {
    pub boot: Option<String>,
    pub checks: Vec<Check>,
    pub data: BTreeMap<String, String>,
    pub json: BTreeMap<String, Vec<Value>>,
}

pub fn evidence(console: &[String]) -> Evidence {
    let mut e = Evidence::default();
    for line in console {
        let Some(rest) = line.trim_start().strip_prefix("RXVM ") else {
            continue;
        };
        let (kind, rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
        match kind {
            "boot" => e.boot = Some(rest.to_string()),
            "check" => {
                let (word, detail) = value.split_once(' ').unwrap_or((value, ""));
                e.checks.push(Check {
                    name: name.to_string(),
                    verdict: if word == "pass" {
                        Verdict::Pass
                    } else {
                        Verdict::Fail
                    },
                    detail: detail.to_string(),
                });
            }
            "data" => {
                e.data.insert(name.to_string(), value.to_string());
            }
            "json" => {
                if let Ok(v) = serde_json::from_str(value) {
                    e.json.entry(name.to_string()).or_default().push(v);
                }
            }
            _ => {}
        }
    }
    e
}

fn check(name: &str, ok: bool, detail: String) -> Check {
    Check {
        name: name.into(),
        verdict: if ok { Verdict::Pass } else { Verdict::Fail },
        detail,
    }
}

/// Packets per CPU summed over a command's JSON intervals, by field.
fn per_cpu(samples: &[Value], field: &str) -> Vec<u64> {
    let mut out = Vec::new();
    for s in samples {
        for (i, c) in s["cpus"].as_array().into_iter().flatten().enumerate() {
            if out.len() <= i {
                out.resize(i + 1, 0);
            }
            out[i] += c[field].as_u64().unwrap_or(0);
        }
    }
    out
}

/// Every check of a row, from its evidence. `target_cpu` is where cpumap was told to steer.
pub fn judge(e: &Evidence, nic: Nic, target_cpu: usize) -> Vec<Check> {
    let d = |k: &str| e.data.get(k).map(String::as_str).unwrap_or("");
    let mut out = e.checks.clone();
    if e.boot.is_none() {
        out.push(check("boot", false, "the guest's init never spoke".into()));
        return out;
    }
    if !out
        .iter()
        .any(|c| c.name == "link" && c.verdict == Verdict::Pass)
    {
        return out;
    }
    out.push(check(
        "driver",
        d("driver") == nic.driver(),
        format!("bound: {} (expected {})", d("driver"), nic.driver()),
    ));
    // rxsteer top: the observe programs loaded, and counted what the driver received.
    let top = e.json.get("top").map(Vec::as_slice).unwrap_or(&[]);
    let counted: u64 = per_cpu(top, "packets").iter().sum();
    let driver: u64 = d("rx-packets").parse().unwrap_or(0);
    let off = (counted as f64 - driver as f64).abs() / (driver.max(1) as f64);
    out.push(check(
        "programs load (top)",
        d("top-rc") == "0" && !top.is_empty(),
        format!("rc {}; {}", d("top-rc"), d("top-stderr")),
    ));
    out.push(check(
        "top counts within 1 % of the driver",
        driver > 0 && off <= 0.01 && d("top-load-rc") == "0",
        format!(
            "top {counted} packets, rx_packets {driver} ({:.2} % apart); per CPU {:?}",
            off * 100.0,
            per_cpu(top, "packets")
        ),
    ));
    let tc = if d("top-stderr").contains("as TCX") {
        "TCX"
    } else if d("top-stderr").contains("clsact") {
        "clsact"
    } else {
        "none"
    };
    out.push(check(
        "tc witnesses attached",
        tc != "none",
        format!("tc: {tc}"),
    ));
    // XDP: auto picks the mode by itself; cpumap redirects onto the target CPU.
    let said = d("attach-stderr");
    let skb = said.contains("so skb mode");
    let want_skb = !nic.native_xdp();
    out.push(check(
        "xdp-mode auto",
        d("attach-rc") == "0" && skb == want_skb,
        format!(
            "chose {} (expected {}): {said}",
            if skb { "skb" } else { "drv" },
            if want_skb { "skb" } else { "drv" }
        ),
    ));
    let attach = e.json.get("attach").map(Vec::as_slice).unwrap_or(&[]);
    let arrived = per_cpu(attach, "cpumap_processed");
    let on_target = arrived.get(target_cpu).copied().unwrap_or(0);
    out.push(check(
        "cpumap redirects to the target CPU",
        on_target > 0 && d("attach-load-rc") == "0",
        format!("cpumap kthread packets per CPU {arrived:?}, target CPU {target_cpu}"),
    ));
    out.push(check(
        "no XDP left after attach",
        d("xdp-after") == "0",
        format!("prog/xdp lines after exit: {}", d("xdp-after")),
    ));
    let drv_out = d("drv-out");
    out.push(if nic.native_xdp() {
        check(
            "xdp-mode drv",
            d("drv-rc") == "0",
            format!("rc {}: {drv_out}", d("drv-rc")),
        )
    } else {
        // One line, before anything was tuned or attached.
        let one_line = drv_out.trim_end_matches('|').split('|').count() == 1;
        Check {
            name: "xdp-mode drv".into(),
            verdict: if d("drv-rc") != "0" && one_line {
                Verdict::Refused
            } else {
                Verdict::Fail
            },
            detail: format!("rc {}: {drv_out}", d("drv-rc")),
        }
    });
    // Tuning the real queue, and restore byte for byte.
    let (before, applied, restored) = (d("tune-before"), d("tune-applied"), d("tune-restored"));
    out.push(check(
        "tune apply --profile rps writes the queue",
        d("tune-apply-rc") == "0" && applied != before && !before.is_empty(),
        format!("before {before}; applied {applied}"),
    ));
    out.push(check(
        "restore puts every value back",
        d("tune-restore-rc") == "0" && restored == before,
        format!("restored {restored}; {}", d("tune-out")),
    ));
    out
}
