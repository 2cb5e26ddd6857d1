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
    /// Files the guest sent whole ("RXVM file NAME LINE", one line each), to be stored.
    pub files: BTreeMap<String, String>,
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
            "file" => {
                let f = e.files.entry(name.to_string()).or_default();
                f.push_str(value);
                f.push('\n');
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

impl Evidence {
    /// A data value, empty when the guest never said it.
    fn d(&self, key: &str) -> &str {
        self.data.get(key).map(String::as_str).unwrap_or("")
    }

    /// The JSON samples of one observing command.
    fn samples(&self, name: &str) -> &[Value] {
        self.json.get(name).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Every check of a row, from its evidence. `target_cpu` is where cpumap was told to steer;
/// `suites` are the test suites the guest was given, each of which must have reported.
pub fn judge(
    e: &Evidence,
    nic: Nic,
    boot_options: &[String],
    target_cpu: usize,
    suites: &[String],
) -> Vec<Check> {
    let mut out = e.checks.clone();
    if e.boot.is_some() {
        for s in suites {
            let name = format!("suite:{s}");
            if !out.iter().any(|c| c.name == name) {
                out.push(check(&name, false, "the guest never ran it".into()));
            }
        }
    }
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
        e.d("driver") == nic.driver(),
        format!("bound: {} (expected {})", e.d("driver"), nic.driver()),
    ));
    out.extend(observing(e));
    out.push(interrupt(e, target_cpu));
    out.push(selftest(e));
    out.extend(steering(e, nic, target_cpu));
    out.extend(tuning(e));
    out.extend(levers(e, target_cpu));
    out.push(busy_poll(e));
    out.push(dissector(e));
    out.extend(main_job(e, nic));
    out.push(nic_drops(e));
    out.push(backlog_threads(e, boot_options));
    out
}

/// rxsteer top: the observe programs loaded, counted what the driver received, and the tc
/// witnesses attached.
fn observing(e: &Evidence) -> Vec<Check> {
    let top = e.samples("top");
    let counted: u64 = per_cpu(top, "packets").iter().sum();
    let driver: u64 = e.d("rx-packets").parse().unwrap_or(0);
    let off = (counted as f64 - driver as f64).abs() / (driver.max(1) as f64);
    let said = e.d("top-stderr");
    let tc = if said.contains("as TCX") {
        "TCX"
    } else if said.contains("clsact") {
        "clsact"
    } else {
        "none"
    };
    vec![
        check(
            "programs load (top)",
            e.d("top-rc") == "0" && !top.is_empty(),
            format!("rc {}; {said}", e.d("top-rc")),
        ),
        check(
            "top counts within 1 % of the driver",
            driver > 0 && off <= 0.01 && e.d("top-load-rc") == "0",
            format!(
                "top {counted} packets, rx_packets {driver} ({:.2} % apart); per CPU {:?}",
                off * 100.0,
                per_cpu(top, "packets")
            ),
        ),
        check("tc witnesses attached", tc != "none", format!("tc: {tc}")),
        program_costs(top),
    ]
}

/// The kernel kept run-time statistics for top's programs (BPF_ENABLE_STATS, held by top):
/// tc ingress and a receive tracepoint ran and took time in the window. Under TCG the times
/// are no performance figure; the check is that the kernel gives them.
fn program_costs(top: &[Value]) -> Check {
    let mut runs: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    let mut unavailable = None;
    for s in top {
        if let Some(why) = s["bpf"]["unavailable"].as_str() {
            unavailable = Some(why.to_string());
        }
        for p in s["bpf"]["measured"].as_array().into_iter().flatten() {
            let e = runs
                .entry(p["name"].as_str().unwrap_or("?").to_string())
                .or_default();
            e.0 += p["runs"].as_u64().unwrap_or(0);
            e.1 += p["ns"].as_u64().unwrap_or(0);
        }
    }
    let ran = |name: &str| runs.get(name).is_some_and(|&(n, ns)| n > 0 && ns > 0);
    check(
        "BPF run-time statistics (top)",
        ran("tc_ingress") && (ran("rx_driver_poll") || ran("rx_driver_netif_rx")),
        match unavailable {
            Some(why) => format!("unavailable: {why}"),
            None => format!("runs and ns per program over top's window: {runs:?}"),
        },
    )
}

/// The NIC's RX interrupt pinned (by the guest script) to the target CPU for top's window:
/// the interrupts arrived there, top counted the driver's receive there (where NAPI ran), and
/// the affinity was put back as it was.
fn interrupt(e: &Evidence, target_cpu: usize) -> Check {
    let counts = |s: &str| -> Vec<u64> {
        s.split_whitespace()
            .map(|n| n.parse().unwrap_or(0))
            .collect()
    };
    let (before, after) = e.d("rx-irq-counts").split_once('|').unwrap_or(("", ""));
    let delta: Vec<u64> = counts(after)
        .iter()
        .zip(counts(before))
        .map(|(a, b)| a.saturating_sub(b))
        .collect();
    let share = |v: &[u64]| {
        v.get(target_cpu).copied().unwrap_or(0) as f64 / v.iter().sum::<u64>().max(1) as f64
    };
    let packets = per_cpu(e.samples("top"), "packets");
    let restored = e
        .d("rx-irq-affinity")
        .strip_prefix("before=")
        .and_then(|r| r.split_once(" after="))
        .is_some_and(|(b, a)| !b.is_empty() && a == b);
    check(
        "receive lands where the interrupt does",
        delta.iter().sum::<u64>() > 0
            && share(&delta) >= 0.95
            && share(&packets) >= 0.95
            && restored,
        format!(
            "RX IRQ {}; interrupts per CPU {delta:?}, top's packets per CPU {packets:?} (CPU {target_cpu} expected); affinity {}",
            e.d("rx-irq"),
            e.d("rx-irq-affinity")
        ),
    )
}

/// `rxsteer selftest --iface`: every figure it could compare agreed with the kernel's own
/// count on this driver, the packets and (where sysfs lists the device's IRQs) the
/// interrupts among them; what it skipped is listed with why.
fn selftest(e: &Evidence) -> Check {
    use rxsteer_records::selftest::{Figure, SelftestReport, Verdict as V};
    let name = "selftest: rxsteer's figures agree with the kernel's (--iface)";
    let report: Option<SelftestReport> = e
        .samples("selftest")
        .first()
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let Some(r) = report else {
        return check(name, false, format!("no report; rc {}", e.d("selftest-rc")));
    };
    let passed = |f: Figure| {
        r.checks
            .iter()
            .any(|c| c.figure == f && c.verdict == V::Pass)
    };
    let irq_said = r
        .checks
        .iter()
        .filter(|c| c.figure == Figure::Interrupts)
        .map(|c| match &c.verdict {
            V::Skipped(why) => format!("skipped ({why})"),
            V::Pass => format!("{:.0} = {:.0}", c.rxsteer, c.reference),
            V::Fail => format!("FAIL {:.0} vs {:.0}", c.rxsteer, c.reference),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let failed: Vec<String> = r
        .failed()
        .map(|c| {
            format!(
                "{} {} {:.0} vs {:.0}",
                c.figure, c.of, c.rxsteer, c.reference
            )
        })
        .collect();
    check(
        name,
        e.d("selftest-rc") == "0" && failed.is_empty() && passed(Figure::Packets),
        format!(
            "rc {}; {} passed, {} failed {failed:?}, {} skipped; interrupts per CPU: {irq_said}",
            e.d("selftest-rc"),
            r.passed(),
            failed.len(),
            r.skipped()
        ),
    )
}

/// XDP: auto picks the mode by itself, cpumap redirects onto the target CPU and leaves
/// nothing behind, drv is refused in one line where the driver has no native XDP.
fn steering(e: &Evidence, nic: Nic, target_cpu: usize) -> Vec<Check> {
    let said = e.d("attach-stderr");
    let skb = said.contains("so skb mode");
    let want_skb = !nic.native_xdp();
    let mode = |skb: bool| if skb { "skb" } else { "drv" };
    let arrived = per_cpu(e.samples("attach"), "cpumap_processed");
    let on_target = arrived.get(target_cpu).copied().unwrap_or(0);
    let (drv_rc, drv_out) = (e.d("drv-rc"), e.d("drv-out"));
    let drv = if nic.native_xdp() {
        check(
            "xdp-mode drv",
            drv_rc == "0",
            format!("rc {drv_rc}: {drv_out}"),
        )
    } else {
        // One line, before anything was tuned or attached.
        let one_line = drv_out.trim_end_matches('|').split('|').count() == 1;
        Check {
            name: "xdp-mode drv".into(),
            verdict: if drv_rc != "0" && one_line {
                Verdict::Refused
            } else {
                Verdict::Fail
            },
            detail: format!("rc {drv_rc}: {drv_out}"),
        }
    };
    vec![
        check(
            "xdp-mode auto",
            e.d("attach-rc") == "0" && skb == want_skb,
            format!("chose {} (expected {}): {said}", mode(skb), mode(want_skb)),
        ),
        check(
            "cpumap redirects to the target CPU",
            on_target > 0 && e.d("attach-load-rc") == "0",
            format!("cpumap kthread packets per CPU {arrived:?}, target CPU {target_cpu}"),
        ),
        check(
            "no XDP left after attach",
            e.d("xdp-after") == "0",
            format!("prog/xdp lines after exit: {}", e.d("xdp-after")),
        ),
        drv,
    ]
}

/// Tuning the real queue, and restore byte for byte.
fn tuning(e: &Evidence) -> Vec<Check> {
    let (before, applied, restored) = (
        e.d("tune-before"),
        e.d("tune-applied"),
        e.d("tune-restored"),
    );
    vec![
        check(
            "tune apply --profile rps writes the queue",
            e.d("tune-apply-rc") == "0" && applied != before && !before.is_empty(),
            format!("before {before}; applied {applied}"),
        ),
        check(
            "restore puts every value back",
            e.d("tune-restore-rc") == "0" && restored == before,
            format!("restored {restored}; {}", e.d("tune-out")),
        ),
        busy_poll_tuning(e),
    ]
}

/// The NIC's own loss, counted: the upload, untuned, over the driver's smallest ring and then
/// its largest. Each run.json row carries the interface's loss counters (`nic_drops`), and
/// where the smallest ring lost packets the report names them. Whether the largest loses
/// fewer is the driver's (and under QEMU, its model's) to say: shown, not asserted.
fn nic_drops(e: &Evidence) -> Check {
    let rows = |key: &str| -> Vec<rxsteer_records::sample::NicDrops> {
        e.d(key)
            .split('|')
            .filter_map(|f| f.strip_prefix("\"nic_drops\":"))
            .filter_map(|j| serde_json::from_str(j).ok())
            .collect()
    };
    let (small, big) = (rows("ring-1-drops"), rows("ring-max-drops"));
    let lost = |r: &[rxsteer_records::sample::NicDrops]| r.iter().map(|d| d.lost()).sum::<u64>();
    let said = e.d("ring-1-said");
    check(
        "the NIC's own drops are counted and said (upload over the smallest ring)",
        e.d("ring-1-rc") == "0" && !small.is_empty() && (lost(&small) == 0 || !said.is_empty()),
        format!(
            "ring {}: {} packets lost at the NIC over {} loads ({said}); ring {}: {} over {} loads",
            e.d("ring-1-set"),
            lost(&small),
            small.len(),
            e.d("ring-max-set"),
            lost(&big),
            big.len()
        ),
    )
}

/// The one queue's levers, as ethtool and procfs read them: `tune apply --profile reference
/// --irq-cpu T --coalesce rx-usecs=50` moves each the driver has (a lever it has not is
/// skipped, said by name), the interrupts then land on T, and restore puts every one back;
/// a SIGKILLed session's come back at restore too.
fn levers(e: &Evidence, target_cpu: usize) -> Vec<Check> {
    let (before, applied, restored) = (
        e.d("levers-before"),
        e.d("levers-applied"),
        e.d("levers-restored"),
    );
    let out = e.d("levers-out");
    let field = |all: &str, name: &str| {
        all.split('|')
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let max = e.d("levers-max").trim().to_string();
    // Each lever: changed as asked, or skipped in one line that names it (the driver has no
    // such setting, or reads it and refuses the write: virtio-net's coalescing).
    let ring = field(applied, "ring") == max || out.contains(" rings: the driver ");
    let coalesce = field(applied, "coalesce").contains("rx-usecs:50")
        || out.contains(" coalescing: the driver ");
    let irq = field(applied, "irq").ends_with(&format!("={target_cpu}"));
    let (i0, i1) = e.d("levers-irq-counts").split_once('|').unwrap_or(("", ""));
    let counts = |s: &str| -> Vec<u64> {
        s.split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect()
    };
    let delta: Vec<u64> = counts(i1)
        .iter()
        .zip(counts(i0).iter().chain(std::iter::repeat(&0)))
        .map(|(b, a)| b.saturating_sub(*a))
        .collect();
    let on_target = delta.get(target_cpu).copied().unwrap_or(0);
    let elsewhere: u64 = delta.iter().sum::<u64>() - on_target;
    let (crash_applied, crash_restored) =
        (e.d("levers-crash-applied"), e.d("levers-crash-restored"));
    vec![
        check(
            "tune apply --profile reference moves each lever the driver has",
            e.d("levers-rc") == "0" && ring && coalesce && irq,
            format!("before {before}; applied {applied}; maxima {max}; {out}"),
        ),
        check(
            "the moved interrupt lands on its CPU",
            on_target > 0 && elsewhere <= on_target / 10,
            format!("interrupts per CPU under load {delta:?} (CPU {target_cpu} asked)"),
        ),
        check(
            "restore puts every lever back",
            e.d("levers-restore-rc") == "0" && restored == before && !before.is_empty(),
            format!("restored {restored}"),
        ),
        check(
            "a SIGKILLed reference session's levers come back at restore",
            crash_applied != before && crash_restored == before,
            format!(
                "while it ran {crash_applied}; after restore {crash_restored}; {}",
                e.d("levers-crash-out")
            ),
        ),
    ]
}

/// `tune apply --profile busy-poll`: the interrupt deferred, and from 6.13 each NAPI
/// instance's IRQ suspension set over netlink (6.9-6.12: skipped naming 6.13); restore puts
/// all of it back. Before 6.9 the mode is refused in one line naming 6.9, nothing changed.
fn busy_poll_tuning(e: &Evidence) -> Check {
    let (before, applied, restored) = (
        e.d("tune-before"),
        e.d("tune-busy-applied"),
        e.d("tune-busy-restored"),
    );
    let name = "tune apply --profile busy-poll defers and suspends; restore puts it back";
    if kernel_of(e) < (6, 9) {
        let out = e.d("tune-busy-out");
        return check(
            name,
            e.d("tune-busy-rc") == "1"
                && out.contains("needs Linux 6.9 or later")
                && applied == before
                && restored == before,
            format!("refused: {out}; values unchanged: {}", applied == before),
        );
    }
    let deferred = applied.contains("napi_defer_hard_irqs=2|")
        && applied.contains("gro_flush_timeout=200000|");
    // The line reads `<dev> NAPI irq-suspend-timeout <current> <profile> <snapshot>`.
    let suspend = applied
        .split('|')
        .find(|l| l.contains("irq-suspend-timeout"))
        .unwrap_or("");
    let suspended = if kernel_of(e) >= (6, 13) {
        suspend
            .split_whitespace()
            .nth(3)
            .is_some_and(|now| now.ends_with(":20000000"))
    } else {
        suspend.contains("needs Linux 6.13")
    };
    check(
        name,
        e.d("tune-busy-rc") == "0" && deferred && suspended && restored == before,
        format!(
            "applied {applied}; restored {restored}; {}",
            e.d("tune-busy-out")
        ),
    )
}

/// The guest's kernel release, from the boot line (`kernel=6.1.0-50-amd64`).
fn release(e: &Evidence) -> &str {
    e.boot
        .as_deref()
        .and_then(|b| b.split_whitespace().find_map(|w| w.strip_prefix("kernel=")))
        .unwrap_or("?")
}

/// The guest kernel's (major, minor).
fn kernel_of(e: &Evidence) -> (u32, u32) {
    let mut v = release(e)
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    (v.next().unwrap_or(0), v.next().unwrap_or(0))
}

/// Backlog threads as booted: with `thread_backlog_napi` on a 6.10+ kernel the guest runs
/// `backlog_napi/N` kthreads and the comparison's report says every arm ran with them;
/// otherwise neither.
fn backlog_threads(e: &Evidence, boot_options: &[String]) -> Check {
    let asked = boot_options.iter().any(|o| o == "thread_backlog_napi");
    let want = asked && kernel_of(e) >= (6, 10);
    let threads: u32 = e.d("backlog-threads").parse().unwrap_or(0);
    let said = e.d("report-backlog") != "0" && !e.d("report-backlog").is_empty();
    check(
        "backlog threads as booted",
        (threads > 0) == want && said == want,
        format!(
            "thread_backlog_napi {}; {threads} backlog_napi kthreads; the report {} it",
            if asked {
                "on the command line"
            } else {
                "not asked"
            },
            if said { "says" } else { "does not say" }
        ),
    )
}

/// rps-dissector on a NIC without RXHASH: the kernel asked its flow dissector for RPS's hash
/// in every load of the arm (both protocols at least), so the arm did what it says.
fn dissector(e: &Evidence) -> Check {
    let said = e.d("dissector");
    let rates: Vec<f64> = said
        .split('|')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap_or(0.0))
        .collect();
    check(
        "flow dissector asked for RPS's hash (rps-dissector)",
        rates.len() >= 2 && rates.iter().all(|&r| r > 0.0),
        format!("rps_by_service runs per second, per load: {said}"),
    )
}

/// `serve --busy-poll`: serving with it from Linux 6.9, refused in one line naming 6.9 before.
fn busy_poll(e: &Evidence) -> Check {
    let kernel = kernel_of(e);
    let (started, out) = (e.d("busy-poll-started"), e.d("busy-poll-out"));
    let ok = if kernel >= (6, 9) {
        started == "1" && e.d("busy-poll-load") == "0" && out.contains("busy polling, preferred")
    } else {
        started == "0"
            && out.contains("Linux 6.9 or later")
            && !out.trim_end_matches('|').contains('|')
    };
    check(
        "busy polling: on from 6.9, refused in one line before",
        ok,
        format!(
            "kernel {}.{}: started {started}, load rc {}; {out}",
            kernel.0,
            kernel.1,
            e.d("busy-poll-load")
        ),
    )
}

/// The main job on the real NIC (`rxsteer compare --iface`, the loader across the wire): it
/// ends with rc 0, its report names the guest's kernel, the NIC's driver and the XDP mode
/// cpumap ran in, and it leaves no XDP program and every queue value as it found them.
fn main_job(e: &Evidence, nic: Nic) -> Vec<Check> {
    let release = release(e);
    let (machine, iface, xdp) = (
        e.d("report-machine"),
        e.d("report-iface"),
        e.d("report-xdp").trim_end_matches('|'),
    );
    let want_xdp = if nic.native_xdp() { "drv" } else { "skb" };
    let named = machine.contains(&format!("kernel {release}"))
        && iface.contains(&format!("driver {}", nic.driver()))
        && xdp == want_xdp;
    let upload = e.d("upload-per-request");
    let left = e.d("compare-left");
    let clean = format!("0 {}", e.d("tune-before"));
    // A load that served nothing ends that load, not the comparison (rc 0): every arm must
    // have served here, so such a load fails the check, named.
    let failed = |name: &str| match e.d(&format!("{name}-failed")) {
        "" => String::new(),
        f => format!("; loads that failed: {f}"),
    };
    vec![
        check(
            "main job on the NIC (compare --iface)",
            e.d("compare-rc") == "0" && named && failed("compare").is_empty(),
            format!(
                "rc {}; {} files; report: \"{machine}\" \"{iface}\" cpumap XDP mode {xdp} (expected kernel {release}, driver {}, {want_xdp}){}",
                e.d("compare-rc"),
                e.d("compare-files"),
                nic.driver(),
                failed("compare")
            ),
        ),
        check(
            "frames and skbs per request (upload)",
            e.d("upload-rc") == "0"
                && upload.matches('|').count() >= 4 * 6
                && failed("upload").is_empty(),
            format!("rc {}; {upload}{}", e.d("upload-rc"), failed("upload")),
        ),
        check(
            "main job leaves the NIC as found",
            left == clean.trim_end(),
            format!("prog/xdp lines and queue values after: {left}"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guest's selftest passes when it exited 0 with every compared figure inside and the
    /// packets compared; a figure outside, or no report, fails, naming it.
    #[test]
    fn a_guests_selftest_is_judged_by_its_report() {
        use rxsteer_records::selftest::{Allowance, Figure, Place, SelftestReport, Subject};
        let report = |rxsteer: f64| SelftestReport {
            place: Place::Iface {
                name: "eth0".into(),
            },
            iface: "eth0".into(),
            kernel: "6.1".into(),
            online_cpus: 2,
            span_s: 3.0,
            interval_s: 1.0,
            loaded: None,
            skewed: None,
            checks: vec![
                Subject::new(Figure::Packets, "packets", "/proc/net/dev").judge(
                    rxsteer,
                    1000.0,
                    1000.0,
                    Allowance::share(0.005),
                ),
                Subject::new(Figure::Interrupts, "interrupts", "per_cpu_count")
                    .on_cpu(1)
                    .judge(400.0, 400.0, 400.0, Allowance::exact()),
            ],
        };
        let guest = |rc: &str, r: &SelftestReport| {
            let mut e = Evidence::default();
            e.data.insert("selftest-rc".into(), rc.into());
            e.json
                .insert("selftest".into(), vec![serde_json::to_value(r).unwrap()]);
            selftest(&e)
        };
        let ok = guest("0", &report(1001.0));
        assert_eq!(ok.verdict, Verdict::Pass, "{}", ok.detail);
        assert!(
            ok.detail.contains("interrupts per CPU: 400 = 400"),
            "{}",
            ok.detail
        );
        let bad = guest("1", &report(1100.0));
        assert_eq!(bad.verdict, Verdict::Fail);
        assert!(bad.detail.contains("packets"), "{}", bad.detail);
        let none = selftest(&Evidence::default());
        assert_eq!(none.verdict, Verdict::Fail);
        assert!(none.detail.starts_with("no report"), "{}", none.detail);
    }

    /// busy-poll's tuning as three guests show it (the lines their consoles carry): refused
    /// before 6.9, deferred with the suspension skipped before 6.13, suspended from 6.13; a
    /// value not put back fails on every kernel.
    #[test]
    fn busy_poll_tuning_is_judged_by_the_guests_kernel() {
        let base = "/sys/class/net/eth0/queues/rx-0/rps_cpus=0|napi_defer_hard_irqs=0|gro_flush_timeout=0|";
        let guest = |kernel: &str, rc: &str, applied: &str, restored: &str, out: &str| {
            let lines = [
                format!("RXVM boot kernel={kernel} arch=x86_64 cpus=2"),
                format!("RXVM data tune-before {base}"),
                format!("RXVM data tune-busy-rc {rc}"),
                format!("RXVM data tune-busy-applied {applied}"),
                format!("RXVM data tune-busy-restored {restored}"),
                format!("RXVM data tune-busy-out {out}"),
            ];
            busy_poll_tuning(&evidence(&lines)).verdict
        };
        let refused =
            "rxsteer: --profile busy-poll: it needs Linux 6.9 or later (...); this kernel is 6.1|";
        assert_eq!(
            guest("6.1.0-50-amd64", "1", base, base, refused),
            Verdict::Pass
        );
        let deferred = "/sys/class/net/eth0/queues/rx-0/rps_cpus=0|napi_defer_hard_irqs=2|gro_flush_timeout=200000|";
        let skipped = format!("{deferred}eth0 NAPI irq-suspend-timeout 20000000 - (needs Linux 6.13: this kernel's NAPI instances have no irq-suspend-timeout)|");
        assert_eq!(
            guest("6.12.57+deb13-amd64", "0", &skipped, base, ""),
            Verdict::Pass
        );
        let with =
            |now: &str| format!("{deferred}eth0 NAPI irq-suspend-timeout {now} 20000000 8193:0|");
        let before_13 = format!("{base}eth0 NAPI irq-suspend-timeout 8193:0 20000000 -|");
        let at = |applied: &str, restored: &str| {
            let lines = [
                "RXVM boot kernel=7.3.4+deb13-amd64 arch=x86_64 cpus=2".to_string(),
                format!("RXVM data tune-before {before_13}"),
                "RXVM data tune-busy-rc 0".to_string(),
                format!("RXVM data tune-busy-applied {applied}"),
                format!("RXVM data tune-busy-restored {restored}"),
            ];
            busy_poll_tuning(&evidence(&lines)).verdict
        };
        assert_eq!(at(&with("8193:20000000"), &before_13), Verdict::Pass);
        assert_eq!(
            at(&with("8193:0"), &before_13),
            Verdict::Fail,
            "not suspended"
        );
        assert_eq!(
            at(&with("8193:20000000"), &with("8193:20000000")),
            Verdict::Fail
        );
    }

    /// A stored console of a real guest (Debian 6.1, e1000) judged again: every check passes,
    /// drv is refused, in the order the page lists them.
    #[test]
    fn a_stored_guest_console_is_judged_as_it_was() {
        let log = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../results/2026-12-03-vm-matrix/x86_64-6.1-e1000-2cpu.console.log"
        );
        let console: Vec<String> = std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        let checks = judge(&evidence(&console), Nic::E1000, &[], 1, &[]);
        let names: Vec<_> = checks.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names.len(), 32, "{names:?}");
        for c in &checks {
            let want = match c.name.as_str() {
                "xdp-mode drv" => Verdict::Refused,
                // That console predates the kernel's statistics in top's lines.
                "BPF run-time statistics (top)" => Verdict::Fail,
                // And busy polling, its tuning, the flow dissector and the self-check.
                "busy polling: on from 6.9, refused in one line before"
                | "selftest: rxsteer's figures agree with the kernel's (--iface)"
                | "tune apply --profile busy-poll defers and suspends; restore puts it back"
                | "flow dissector asked for RPS's hash (rps-dissector)" => Verdict::Fail,
                // And the one queue's levers.
                "tune apply --profile reference moves each lever the driver has"
                | "the moved interrupt lands on its CPU"
                | "restore puts every lever back"
                | "a SIGKILLed reference session's levers come back at restore"
                | "the NIC's own drops are counted and said (upload over the smallest ring)" => {
                    Verdict::Fail
                }
                _ => Verdict::Pass,
            };
            assert_eq!(c.verdict, want, "{}: {}", c.name, c.detail);
        }
        // The same guest had one upload load served nothing (the comparison went on): the
        // upload's check fails and names it.
        let mut failed = console.clone();
        failed.push(
            "RXVM data upload-failed - RPS/RFS/XPS over HTTP/1.1, repetition 1: no request succeeded|"
                .into(),
        );
        let upload = judge(&evidence(&failed), Nic::E1000, &[], 1, &[])
            .into_iter()
            .find(|c| c.name == "frames and skbs per request (upload)")
            .unwrap();
        assert_eq!(upload.verdict, Verdict::Fail, "{}", upload.detail);
        assert!(
            upload
                .detail
                .ends_with("loads that failed: - RPS/RFS/XPS over HTTP/1.1, repetition 1: no request succeeded|"),
            "{}",
            upload.detail
        );
        // A guest that never spoke fails, naming why.
        let none = judge(&Evidence::default(), Nic::E1000, &[], 1, &["x".into()]);
        assert_eq!(
            (none[0].name.as_str(), none[0].verdict),
            ("boot", Verdict::Fail)
        );
    }
}
