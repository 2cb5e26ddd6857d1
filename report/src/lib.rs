//! `rxsteer report DIR`: renders `report.md` and its SVG charts from the files a comparison
//! stored (`run.json` and the samples), so a report can always be rebuilt from its directory.
//! Reads the stored records through their types (`rxsteer-records`), every version of them.
mod capacity;
mod cost;
pub mod decide;
pub mod files;
pub mod forest;
mod interrupts;
mod markdown;
mod nic;
pub mod observer;
pub mod predict;
pub mod recommend;
pub mod stats;
mod svg;
mod table;
mod tail;

pub use markdown::{render, summary};

use anyhow::{Context, Result};
use rxsteer_records::{
    run::{core_kinds, ArmName, RunDoc},
    SampleLine,
};
use std::path::Path;

/// The per-CPU receive work over time of one arm's first repetition (every sample, the
/// protocols one after the other), from its stored samples.
/// A protocol whose samples file is absent (an external load, a failed repetition) has no
/// columns; a line that does not parse is an error naming the file and line.
fn heatmap_cells(dir: &Path, arm: &ArmName, doc: &RunDoc) -> Result<Vec<Vec<f64>>> {
    let (_, protos) = doc.dims();
    let mut cells = Vec::new();
    for p in protos {
        let path = dir.join(format!("samples-{arm}-{p}-rep0.jsonl"));
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let l: SampleLine = serde_json::from_str(line)
                .with_context(|| format!("{} line {}", path.display(), n + 1))?;
            let secs = l.sample.interval_s.max(1e-9);
            cells.push(
                l.sample
                    .cpus
                    .iter()
                    .map(|c| c.receive_ns() as f64 / 1e6 / secs)
                    .collect(),
            );
        }
    }
    Ok(cells)
}

/// What the last stored `cargo xtask bench observer` measured the XDP observer to cost, in
/// one line with its results/ path (see build.rs).
pub const OBSERVER_COST: &str = env!("RXSTEER_OBSERVER_COST");

/// Reads `DIR/run.json`. A value the file gets wrong (an unknown mode, protocol, arm, a CPU
/// count no machine has) is an error naming the file and the field, never a guess.
pub fn read(dir: &Path) -> Result<RunDoc> {
    let path = dir.join("run.json");
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    parse(&bytes)
        .map_err(|e| anyhow::anyhow!("{} is not a comparison's run.json: {e}", path.display()))
}

/// A run.json's bytes as a document, or what is wrong with them (`field: why`). Stored files
/// are untrusted: nothing later sizes a table by a number this has not bounded.
pub fn parse(bytes: &[u8]) -> Result<RunDoc, String> {
    let doc: RunDoc =
        serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_slice(bytes))
            .map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    doc.check_bounds()?;
    Ok(doc)
}

/// Renders `DIR/report.md` and its SVGs from `DIR/run.json` and the samples.
pub fn run(dir: &Path) -> Result<()> {
    let doc = read(dir)?;
    let md = render(&doc)?;
    let (arms, protos) = doc.dims();
    let collect = |figure: fn(&rxsteer_records::Row) -> Option<f64>| -> Vec<Vec<Vec<f64>>> {
        protos
            .iter()
            .map(|&p| {
                arms.iter()
                    .map(|a| doc.of(*a, p).into_iter().filter_map(figure).collect())
                    .collect()
            })
            .collect()
    };
    let groups: Vec<&str> = protos.iter().map(|p| p.label()).collect();
    let labels: Vec<String> = arms.iter().map(|a| a.label()).collect();
    let names: Vec<&str> = labels.iter().map(String::as_str).collect();
    files::write_replacing(
        dir.join("throughput.svg"),
        svg::bars(
            "Throughput (median of repetitions; dots: each repetition)",
            "req/s",
            &groups,
            &names,
            &collect(|r| r.req_per_s),
        ),
    )?;
    files::write_replacing(
        dir.join("p99.svg"),
        svg::bars(
            "p99 latency (median of repetitions; dots: each repetition)",
            "p99 us",
            &groups,
            &names,
            &collect(|r| r.p99_us.map(|v| v as f64)),
        ),
    )?;
    // The answer as a picture, per protocol, where the run recommends at all.
    if recommend::applies(&doc) {
        for &p in &protos {
            let r = recommend::recommend(&doc, p);
            if !r.judged.is_empty() {
                files::write_replacing(dir.join(forest::file(p)), forest::svg(&doc, p, &r.judged))?;
            }
        }
    }
    let kinds = core_kinds(
        doc.environment
            .as_ref()
            .map_or(&[][..], |e| &e.before.cpu_kinds),
    );
    for a in &arms {
        let title = format!(
            "{}: receive work per CPU over time (repetition 0)",
            a.label()
        );
        files::write_replacing(
            dir.join(format!("heatmap-{a}.svg")),
            svg::heatmap(&title, &heatmap_cells(dir, a, &doc)?, &kinds),
        )?;
        let bars = markdown::time_rows(&doc, *a);
        if !bars.is_empty() {
            files::write_replacing(
                dir.join(format!("time-{a}.svg")),
                svg::stacked(
                    &format!(
                        "{}: where each CPU's time went (ms/s, mean of repetitions)",
                        a.label()
                    ),
                    &bars,
                ),
            )?;
        }
    }
    for (name, chart) in capacity::charts(&doc) {
        files::write_replacing(dir.join(name), chart)?;
    }
    files::write_replacing(dir.join("report.md"), &md)?;
    eprintln!("rxsteer report: wrote {}", dir.join("report.md").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::Value;

    fn doc(v: Value) -> RunDoc {
        serde_json::from_value(v).unwrap()
    }

    fn row(rep: u64, mode: &str, proto: &str, rps: f64, recv: [f64; 2]) -> Value {
        serde_json::json!({"rep": rep, "mode": mode, "proto": proto, "req_per_s": rps, "p99_us": 900,
            "error_total": 0, "receive_ms_per_s": recv, "kthread_ms_per_s": [0.0, recv[1]], "imbalance": 1.2,
            "redirect_err": 0, "enqueue_drops": 0, "cpumap_drops": 0, "softnet_dropped": 0, "xdp_mode": "drv"})
    }

    fn run() -> Value {
        serde_json::json!({
            "cpus": 2, "seconds": 4, "warmup_s": 1, "connections": 32, "scenario": "health", "caveat": "this machine has 2 CPUs",
            "setup": {"kind": "lab", "roles": {"rx_cpu": 0, "server_cpus": [1], "loader_cpus": [0]}},
            "runs": [row(0, "none", "http", 100.0, [300.0, 200.0]), row(0, "rps", "http", 60.0, [200.0, 300.0]), row(0, "cpumap", "http", 70.0, [230.0, 580.0]),
                     row(0, "none", "zap", 120.0, [300.0, 200.0]), row(0, "rps", "zap", 60.0, [200.0, 300.0]), row(0, "cpumap", "zap", 90.0, [230.0, 560.0]),
                     row(1, "none", "http", 200.0, [300.0, 200.0]), row(1, "rps", "http", 100.0, [200.0, 300.0]), row(1, "cpumap", "http", 150.0, [230.0, 560.0])],
        })
    }

    #[test]
    fn an_unknown_arm_mode_is_refused_naming_the_file_and_field() {
        let dir = std::env::temp_dir().join(format!("rxsteer-badarm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut v = run();
        v["runs"][1]["arm"] = "turbo-skb".into();
        std::fs::write(dir.join("run.json"), v.to_string()).unwrap();
        let e = format!("{:#}", read(&dir).unwrap_err());
        assert!(
            e.contains("run.json: runs[1].arm")
                && e.contains("\"turbo\" is not a valid steering mode"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unknown_stored_name_is_refused_naming_the_file_and_field() {
        let dir = std::env::temp_dir().join(format!("rxsteer-badname-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (field, value, said) in [
            (
                "mode",
                "fast",
                "runs[2].mode: \"fast\" is not a valid steering mode",
            ),
            (
                "proto",
                "quic",
                "runs[2].proto: \"quic\" is not a valid protocol",
            ),
            (
                "observer",
                "ebpf",
                "runs[2].observer: \"ebpf\" is not a valid observer",
            ),
            (
                "xdp_mode",
                "hw",
                "runs[2].xdp_mode: \"hw\" is not a valid XDP mode",
            ),
        ] {
            let mut v = run();
            v["runs"][2][field] = value.into();
            std::fs::write(dir.join("run.json"), v.to_string()).unwrap();
            let e = format!("{:#}", read(&dir).unwrap_err());
            assert!(
                e.contains("run.json is not a comparison's run.json: ") && e.contains(said),
                "{e}"
            );
        }
        // A samples line that does not parse stops the report, naming file and line.
        std::fs::write(dir.join("run.json"), run().to_string()).unwrap();
        std::fs::write(dir.join("samples-none-http-rep0.jsonl"), "{\"truncated\n").unwrap();
        let e = format!("{:#}", super::run(&dir).unwrap_err());
        assert!(e.contains("samples-none-http-rep0.jsonl line 1"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A stored file is untrusted: a number that would size a table past any machine is refused
    /// naming the field (it once aborted on a 16 GB allocation), and empty or over-long per-CPU
    /// lists render without a panic.
    #[test]
    fn crafted_numbers_are_refused_and_odd_lists_still_render() {
        for (path, value, said) in [
            (
                &["cpus"][..],
                serde_json::json!(2_000_000_000u64),
                "cpus: 2000000000 is more CPUs",
            ),
            (
                &["cpus"],
                serde_json::json!(1_000_000_000_000_000u64),
                "cpus: 1000000000000000",
            ),
            (
                &["setup", "roles", "rx_cpu"],
                serde_json::json!(4_000_000_000u64),
                "roles: CPU 4000000000 is past",
            ),
            (
                &["runs", "2", "receive_ms_per_s"],
                serde_json::json!(vec![1.0; 9000]),
                "runs[2].receive_ms_per_s: 9000 values",
            ),
        ] {
            let mut v = run();
            let mut at = &mut v;
            for p in &path[..path.len() - 1] {
                at = match p.parse::<usize>() {
                    Ok(i) => &mut at[i],
                    Err(_) => &mut at[*p],
                };
            }
            at[path[path.len() - 1]] = value;
            let e = parse(v.to_string().as_bytes()).unwrap_err();
            assert!(e.contains(said), "{path:?}: {e}");
        }
        for field in ["receive_ms_per_s", "kthread_ms_per_s", "net_rx_ms_per_s"] {
            for list in [serde_json::json!([]), serde_json::json!(vec![5.0; 64])] {
                let mut v = run();
                v["runs"][0][field] = list.clone();
                v["runs"][4][field] = list;
                let doc = parse(v.to_string().as_bytes()).unwrap();
                render(&doc).unwrap();
            }
        }
    }

    /// A run with a flow-dissector arm says how far that dissector reaches; one without does not.
    #[test]
    fn a_dissector_arm_says_its_reach() {
        let reach = "rps-dissector's reach:** its BPF flow dissector serves everything";
        assert!(!render(&doc(run())).unwrap().contains(reach));
        let mut v = run();
        v["runs"][1]["mode"] = "rps-dissector".into();
        let md = render(&doc(v)).unwrap();
        assert!(md.contains(reach), "{md}");
    }

    /// Packets the NIC lost are in no CPU's figure: the answer names the arm, the count and
    /// the counters; a run whose rows read the interface and lost nothing says nothing, and
    /// its table shows 0 where it read and "-" where it did not.
    #[test]
    fn the_nics_own_drops_are_said_in_the_answer() {
        let said = "**The NIC dropped packets** over HTTP/1.1: XDP cpumap lost 1500 packets at the NIC in 1 of 2 loads (rx_missed_errors, rx_no_buffer_count)";
        let mut v = run();
        for i in [0, 1, 3] {
            v["runs"][i]["nic_drops"] =
                serde_json::json!({"counters": {"rx_missed_errors": 0}, "driver": {}});
        }
        let quiet = render(&doc(v.clone())).unwrap();
        assert!(!quiet.contains("The NIC dropped"), "{quiet}");
        assert!(
            quiet.contains("| untuned | HTTP/1.1 | 300 | 200 | 200 | 1.20 | 0 | 0 | 0 | 0 | drv |"),
            "{quiet}"
        );
        v["runs"][2]["nic_drops"] = serde_json::json!({
            "counters": {"rx_missed_errors": 1200, "rx_dropped": 0},
            "driver": {"rx_no_buffer_count": 1500}});
        let md = render(&doc(v)).unwrap();
        assert!(md.contains(said), "{md}");
        assert!(!md.contains("over ZAP: "), "{md}");
    }

    /// Each lever's before, under the arm that changed it, and after; what the place lacks
    /// said; after unlike before said in bold.
    #[test]
    fn the_levers_table_shows_before_under_and_after() {
        let levers = |gro: &str, irq: &str| {
            serde_json::json!({"offloads": format!("gro={gro} gso=on tso=on"),
                "irqs": [{"irq": 11, "cpus": irq, "effective": irq}],
                "missing": ["rings: the driver has none (EOPNOTSUPP)"]})
        };
        let mut v = run();
        v["setup"]["levers"] = levers("off", "0-1");
        v["setup"]["levers_after"] = levers("off", "0-1");
        for i in 0..9 {
            v["runs"][i]["levers"] = levers("off", "0-1");
        }
        v["runs"][1]["levers"] = levers("on", "1");
        let md = render(&doc(v.clone())).unwrap();
        assert!(
            md.contains("| lever | before | under RPS/RFS/XPS | after |"),
            "{md}"
        );
        assert!(md.contains("| offloads | gro=off gso=on tso=on | gro=on gso=on tso=on | gro=off gso=on tso=on |"), "{md}");
        assert!(
            md.contains(
                "| IRQ 11 | 0-1 (delivered to 0-1) | 1 (delivered to 1) | 0-1 (delivered to 0-1) |"
            ),
            "{md}"
        );
        assert!(
            md.contains("Not applicable here: rings: the driver has none"),
            "{md}"
        );
        assert!(!md.contains("differ from before"), "{md}");
        v["setup"]["levers_after"] = levers("on", "0-1");
        assert!(render(&doc(v))
            .unwrap()
            .contains("**The levers after the run differ from before it**"));
    }

    #[test]
    fn renders_ratios_per_protocol_and_the_receive_table() {
        let md = render(&doc(run().clone())).unwrap();
        assert!(
            md.contains("### HTTP/1.1") && md.contains("### ZAP"),
            "{md}"
        );
        assert!(
            md.contains("| 0 | 100 | 0.60 | 0.70 | 900 / 900 / 900 | 0 |"),
            "{md}"
        );
        assert!(
            md.contains("| 0 | 120 | 0.50 | 0.75 |"),
            "ZAP ratios to ZAP untuned: {md}"
        );
        assert!(md.contains("| 1 | 200 | 0.50 | 0.75 |"), "{md}");
        assert!(
            md.contains("RPS/RFS/XPS / untuned ranged 0.50-0.60 over 2 repetitions."),
            "{md}"
        );
        assert!(
            md.contains("| XDP cpumap | HTTP/1.1 | 230 | 570 | 570 | 1.20 | 0 | 0 | 0 | - | drv |"),
            "{md}"
        );
        assert!(
            md.contains("> **Note:** this machine has 2 CPUs: no CPU is free"),
            "{md}"
        );
        assert!(md.contains("![req/s](throughput.svg)") && md.contains("heatmap-cpumap.svg"));
        assert!(render(&doc(serde_json::json!({}))).is_err());
    }

    #[test]
    fn runs_stored_before_setup_and_warm_up_were_recorded_still_render() {
        let v = serde_json::json!({"cpus": 2, "seconds": 4, "connections": 32,
            "roles": {"rx_cpu": 0, "server_cpus": [1], "loader_cpus": [0]},
            "runs": [{"rep": 0, "mode": "none", "req_per_s": 100.0, "p99_us": 900, "receive_ms_per_s": [1.0, 2.0]}]});
        let md = render(&doc(v.clone())).unwrap();
        assert!(md.contains("4 s measured per load, 32 connections"), "{md}");
        assert!(md.contains("**An older lab.**"), "{md}");
        assert!(md.contains("receive (NAPI) CPU 0, server CPUs [1]"), "{md}");
        assert!(!md.contains("null"), "{md}");
    }

    #[test]
    fn a_loaded_machine_marks_the_report() {
        let mut r = run();
        r["loaded_machine"] =
            "taken on a loaded machine (the 1-minute load average is 1.90 on 2 CPUs at the start)"
                .into();
        let md = render(&doc(r.clone())).unwrap();
        assert!(
            md.contains("> **Every figure here was taken on a loaded machine"),
            "{md}"
        );
        assert!(!render(&doc(run().clone()))
            .unwrap()
            .contains("loaded machine"));
    }

    /// A kernel that runs the backlog in threads is said once, for every arm; a run without
    /// the fact (every run before it was read) says nothing.
    #[test]
    fn a_kernel_with_backlog_threads_is_said() {
        let mut r = run();
        r["setup"]["backlog_threads"] = true.into();
        let md = render(&doc(r)).unwrap();
        assert!(
            md.contains("> **This kernel runs the backlog in threads**"),
            "{md}"
        );
        assert!(!render(&doc(run())).unwrap().contains("backlog in threads"));
    }

    #[test]
    fn summary_gives_each_ratio_once() {
        let s = summary(&doc(run().clone())).unwrap();
        assert!(s.contains("rep 0 ZAP: untuned 120 req/s; RPS/RFS/XPS 60 req/s (0.50x); XDP cpumap 90 req/s (0.75x);"), "{s}");
        assert!(s.contains("ratios to untuned, same repetition"));
    }

    #[test]
    fn one_mode_alone_shows_plain_req_per_s() {
        let v =
            serde_json::json!({"cpus": 2, "runs": [row(0, "cpumap", "http", 70.0, [1.0, 2.0])]});
        let md = render(&doc(v.clone())).unwrap();
        assert!(
            md.contains("| XDP cpumap req/s |") && md.contains("| 0 | 70 |"),
            "{md}"
        );
        assert!(!summary(&doc(v.clone())).unwrap().contains("ratios"));
    }

    #[test]
    fn an_external_load_is_observed_not_given_a_rate() {
        let mut r = row(0, "cpumap", "http", 0.0, [1.0, 2.0]);
        r["req_per_s"] = Value::Null;
        r["p99_us"] = Value::Null;
        let v = serde_json::json!({"cpus": 2, "runs": [r]});
        assert!(summary(&doc(v.clone()))
            .unwrap()
            .contains("XDP cpumap observed (external load, no req/s)"));
        assert!(
            render(&doc(v.clone()))
                .unwrap()
                .contains("| 0 | - | - | 0 |"),
            "{}",
            render(&doc(v.clone())).unwrap()
        );
    }

    #[test]
    fn a_load_that_failed_is_named_first_and_the_others_still_render() {
        let mut v = run();
        let rps = &mut v["runs"][1];
        rps["req_per_s"] = Value::Null;
        rps["p99_us"] = Value::Null;
        rps["failed"] = "0 of 0 measured requests failed: no request succeeded".into();
        let md = render(&doc(v.clone())).unwrap();
        assert!(md.contains("## Loads that failed"), "{md}");
        assert!(
            md.contains("- RPS/RFS/XPS over HTTP/1.1, repetition 1: 0 of 0 measured requests failed: no request succeeded"),
            "{md}"
        );
        assert!(md.contains("## Throughput per repetition"), "{md}");
        let s = summary(&doc(v)).unwrap();
        assert!(s.contains("rep 0 HTTP/1.1: untuned 100 req/s; RPS/RFS/XPS failed; XDP cpumap 70 req/s (0.70x);"), "{s}");
    }

    #[test]
    fn each_arm_s_program_cost_is_a_table_and_checked_against_the_no_bpf_arm() {
        let mut v = run();
        let cost = |ns_per_packet: f64, share: f64| {
            serde_json::json!({"measured": {"programs": [
                {"name": "tc_ingress", "runs_per_s": 20000.0, "ns_per_run": 60.0},
                {"name": "rx_driver_poll", "runs_per_s": 900.0, "ns_per_run": 150.0}],
                "ns_per_packet": ns_per_packet, "cpu_share": share}})
        };
        let runs = v["runs"].as_array_mut().unwrap();
        for r in runs.iter_mut() {
            r["observer"] = "tracepoint".into();
            r["bpf"] = cost(95.0, 0.012);
        }
        for i in [1, 7] {
            runs[i]["bpf"] = serde_json::json!({"unavailable": "no BPF_ENABLE_STATS"});
        }
        let mut nobpf = row(0, "none", "http", 110.0, [300.0, 200.0]);
        nobpf["arm"] = "none-nobpf".into();
        nobpf["observer"] = "off".into();
        runs.push(nobpf);
        let md = render(&doc(v)).unwrap();
        assert!(
            md.contains("| untuned | HTTP/1.1 | 95 | 1.20 % | tc_ingress 60 x 20000, rx_driver_poll 150 x 900 |"),
            "{md}"
        );
        assert!(
            md.contains(
                "| RPS/RFS/XPS | HTTP/1.1 | unavailable | unavailable | no BPF_ENABLE_STATS |"
            ),
            "{md}"
        );
        // untuned served 100/110 = 0.91x of no BPF; the programs' 1.2 % explain 0.988x.
        assert!(
            md.contains("The programs ran 1.20 % of one CPU, so untuned should serve about 0.988x of it; the no-BPF arm gained more than that"),
            "{md}"
        );
    }

    #[test]
    fn a_192_cpu_run_names_the_busiest_cpus_and_folds_the_rest() {
        let per_cpu = |busy: &[usize], v: f64| -> Vec<f64> {
            (0..192)
                .map(|c| if busy.contains(&c) { v } else { 1.0 })
                .collect()
        };
        let split = serde_json::json!({"server": 100.0, "loader": 0.0, "net_rx": 50.0, "receive_kthread": 0.0,
            "other_softirq": 0.0, "irq": 0.0, "other": 0.0, "idle": 850.0});
        let row = |mode: &str, busy: &[usize]| {
            serde_json::json!({"rep": 0, "mode": mode, "proto": "http", "req_per_s": 100.0, "p99_us": 900,
                "receive_ms_per_s": per_cpu(busy, 500.0), "kthread_ms_per_s": per_cpu(&[], 0.0),
                "packets_per_s": per_cpu(busy, 1000.0), "stack_packets_per_s": per_cpu(busy, 900.0),
                "tx_packets_per_s": per_cpu(busy, 800.0),
                "time_ms_per_s": vec![split.clone(); 192]})
        };
        let v = serde_json::json!({"cpus": 192, "seconds": 4, "connections": 32,
            "runs": [row("none", &[0]), row("cpumap", &[0, 40, 41, 42, 43, 44, 45, 46, 191])]});
        let md = render(&doc(v.clone())).unwrap();
        let receive = md
            .lines()
            .find(|l| l.starts_with("| arm | protocol | CPU 0 |"))
            .expect("the receive table");
        // 8 named CPUs (the busiest in any load) and one column for the other 184.
        assert!(
            receive.contains("| CPU 0 | CPU 40 |") && receive.contains("| other 184 CPUs (sum) |"),
            "{receive}"
        );
        assert!(!receive.contains("CPU 191"), "only 8 named: {receive}");
        assert!(md.contains("With 192 CPUs the table names the 8"), "{md}");
        assert!(md.contains("| XDP cpumap | HTTP/1.1 | 500 | 500 |"), "{md}");
        let rows = markdown::time_rows(&doc(v), "cpumap".parse().unwrap());
        assert_eq!(rows.len(), 9, "8 CPUs and the mean of the rest");
        assert_eq!(rows[8].0, "other 184 CPUs (mean) HTTP/1.1");
        assert_eq!(rows[8].1.idle, 850.0);
    }

    #[test]
    fn a_machine_of_two_kinds_says_which_cpus_are_which() {
        let mut v = run();
        let info = |cpu: u32, capacity: u32| serde_json::json!({"cpu": cpu, "capacity": capacity});
        let env = serde_json::json!({"kernel": "6.8", "hostname": "gb10", "arch": "aarch64",
            "online_cpus": 2, "loadavg": [0.1], "at": "x", "rxsteer": {"version": "0", "git": "g"},
            "cpu_kinds": [info(0, 480), info(1, 1024)]});
        v["environment"] = serde_json::json!({"before": env, "after": env});
        let md = render(&doc(v)).unwrap();
        assert!(
            md.contains("performance (P) CPUs 1; efficiency (E) CPUs 0."),
            "{md}"
        );
        assert!(!render(&doc(run())).unwrap().contains("Two kinds"));
    }

    #[test]
    fn writes_the_report_and_charts_from_the_directory() {
        let dir = std::env::temp_dir().join(format!("rxsteer-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("run.json"), run().to_string()).unwrap();
        std::fs::write(
            dir.join("samples-cpumap-http-rep0.jsonl"),
            "{\"interval_s\":0.5,\"cpus\":[{\"net_rx_ns\":100000000},{\"cpumap_kthread_ns\":250000000}]}\n",
        )
        .unwrap();
        super::run(&dir).unwrap();
        for f in [
            "report.md",
            "throughput.svg",
            "p99.svg",
            "heatmap-none.svg",
            "heatmap-cpumap.svg",
        ] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        let h = std::fs::read_to_string(dir.join("heatmap-cpumap.svg")).unwrap();
        assert!(h.contains("CPU 1, sample 0: 500 ms/s"), "{h}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
