//! `rxsteer report DIR`: renders `report.md` and its SVG charts from the files a comparison
//! stored (`run.json` and the samples), so a report can always be rebuilt from its directory.
mod data;
mod markdown;
mod svg;

pub use data::ratio_in;
use data::{dims, label, of, proto_label};
pub use markdown::{render, summary};

use anyhow::{Context, Result};
use serde_json::Value;
use std::path::Path;

/// The per-CPU receive work over time of one arm's first repetition (every sample, the
/// protocols one after the other), from its stored samples.
fn heatmap_cells(dir: &Path, arm: &str, protos: &[String]) -> Vec<Vec<f64>> {
    let text: String = protos
        .iter()
        .filter_map(|p| {
            std::fs::read_to_string(dir.join(format!("samples-{arm}-{p}-rep0.jsonl"))).ok()
        })
        .collect();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|s| {
            let secs = s["interval_s"].as_f64().unwrap_or(1.0).max(1e-9);
            s["cpus"].as_array().map_or(vec![], |cs| {
                cs.iter()
                    .map(|c| {
                        let f = |k: &str| c[k].as_f64().unwrap_or(0.0);
                        (f("net_rx_ns") + f("cpumap_kthread_ns") + f("napi_kthread_ns"))
                            / 1e6
                            / secs
                    })
                    .collect()
            })
        })
        .collect()
}

/// Renders `DIR/report.md` and its SVGs from `DIR/run.json` and the samples.
pub fn run(dir: &Path) -> Result<()> {
    let path = dir.join("run.json");
    let run: Value = serde_json::from_slice(
        &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("{} is not a comparison's run.json", path.display()))?;
    let md = render(&run)?;
    let rows = run["runs"].as_array().context("run.json has no runs")?;
    let (arms, protos) = dims(&run);
    let collect = |key: &str| -> Vec<Vec<Vec<f64>>> {
        protos
            .iter()
            .map(|p| {
                arms.iter()
                    .map(|a| {
                        of(rows, a, p)
                            .iter()
                            .filter_map(|r| r[key].as_f64())
                            .collect()
                    })
                    .collect()
            })
            .collect()
    };
    let groups: Vec<&str> = protos.iter().map(|p| proto_label(p)).collect();
    let labels: Vec<String> = arms.iter().map(|a| label(a)).collect();
    let names: Vec<&str> = labels.iter().map(String::as_str).collect();
    std::fs::write(
        dir.join("throughput.svg"),
        svg::bars(
            "Throughput (median of repetitions; dots: each repetition)",
            "req/s",
            &groups,
            &names,
            &collect("req_per_s"),
        ),
    )?;
    std::fs::write(
        dir.join("p99.svg"),
        svg::bars(
            "p99 latency (median of repetitions; dots: each repetition)",
            "p99 us",
            &groups,
            &names,
            &collect("p99_us"),
        ),
    )?;
    for a in &arms {
        let title = format!(
            "{}: receive work per CPU over time (repetition 0)",
            label(a)
        );
        std::fs::write(
            dir.join(format!("heatmap-{a}.svg")),
            svg::heatmap(&title, &heatmap_cells(dir, a, &protos)),
        )?;
        let bars = markdown::time_rows(rows, a, &protos);
        if !bars.is_empty() {
            std::fs::write(
                dir.join(format!("time-{a}.svg")),
                svg::stacked(
                    &format!(
                        "{}: where each CPU's time went (ms/s, mean of repetitions)",
                        label(a)
                    ),
                    &bars,
                ),
            )?;
        }
    }
    std::fs::write(dir.join("report.md"), &md)?;
    eprintln!("rxsteer report: wrote {}", dir.join("report.md").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn renders_ratios_per_protocol_and_the_receive_table() {
        let md = render(&run()).unwrap();
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
            md.contains("| XDP cpumap | HTTP/1.1 | 230 | 570 | 570 | 1.20 | 0 | 0 | 0 | drv |"),
            "{md}"
        );
        assert!(
            md.contains("> **Note:** this machine has 2 CPUs: no CPU is free"),
            "{md}"
        );
        assert!(md.contains("![req/s](throughput.svg)") && md.contains("heatmap-cpumap.svg"));
        assert!(render(&serde_json::json!({})).is_err());
    }

    #[test]
    fn runs_stored_before_setup_and_warm_up_were_recorded_still_render() {
        let v = serde_json::json!({"cpus": 2, "seconds": 4, "connections": 32,
            "roles": {"rx_cpu": 0, "server_cpus": [1], "loader_cpus": [0]},
            "runs": [{"rep": 0, "mode": "none", "req_per_s": 100.0, "p99_us": 900, "receive_ms_per_s": [1.0, 2.0]}]});
        let md = render(&v).unwrap();
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
        let md = render(&r).unwrap();
        assert!(
            md.contains("> **Every figure here was taken on a loaded machine"),
            "{md}"
        );
        assert!(!render(&run()).unwrap().contains("loaded machine"));
    }

    #[test]
    fn summary_gives_each_ratio_once() {
        let s = summary(&run()).unwrap();
        assert!(s.contains("rep 0 ZAP: untuned 120 req/s; RPS/RFS/XPS 60 req/s (0.50x); XDP cpumap 90 req/s (0.75x);"), "{s}");
        assert!(s.contains("ratios to untuned, same repetition"));
    }

    #[test]
    fn one_mode_alone_shows_plain_req_per_s() {
        let v =
            serde_json::json!({"cpus": 2, "runs": [row(0, "cpumap", "http", 70.0, [1.0, 2.0])]});
        let md = render(&v).unwrap();
        assert!(
            md.contains("| XDP cpumap req/s |") && md.contains("| 0 | 70 |"),
            "{md}"
        );
        assert!(!summary(&v).unwrap().contains("ratios"));
    }

    #[test]
    fn an_external_load_is_observed_not_given_a_rate() {
        let mut r = row(0, "cpumap", "http", 0.0, [1.0, 2.0]);
        r["req_per_s"] = Value::Null;
        r["p99_us"] = Value::Null;
        let v = serde_json::json!({"cpus": 2, "runs": [r]});
        assert!(summary(&v)
            .unwrap()
            .contains("XDP cpumap observed (external load, no req/s)"));
        assert!(
            render(&v).unwrap().contains("| 0 | - | - | 0 |"),
            "{}",
            render(&v).unwrap()
        );
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
