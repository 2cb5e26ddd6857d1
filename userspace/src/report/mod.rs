//! `rxsteer report DIR`: renders `report.md` and its SVG charts from the files a comparison
//! stored (`run.json` and the samples), so a report can always be rebuilt from its directory.
mod svg;

use anyhow::{Context, Result};
use serde_json::Value;
use std::{fmt::Write, path::Path};

const MODES: [&str; 3] = ["none", "rps", "cpumap"];

fn label(mode: &str) -> &str {
    match mode {
        "none" => "untuned",
        "rps" => "RPS/RFS/XPS",
        _ => "XDP cpumap",
    }
}

fn proto_label(p: &str) -> &str {
    match p {
        "zap" => "ZAP",
        _ => "HTTP/1.1",
    }
}

/// The modes and protocols present, in their canonical order.
fn dims(run: &Value) -> (Vec<&'static str>, Vec<String>) {
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

fn find<'a>(rows: &'a [Value], rep: u64, mode: &str, proto: &str) -> Option<&'a Value> {
    rows.iter().find(|r| {
        r["rep"].as_u64() == Some(rep)
            && r["mode"] == mode
            && r["proto"].as_str().unwrap_or("http") == proto
    })
}

fn reps(rows: &[Value]) -> u64 {
    rows.iter()
        .filter_map(|r| r["rep"].as_u64())
        .max()
        .map_or(0, |m| m + 1)
}

/// Per repetition, each mode's req/s over untuned's (same repetition, same protocol).
fn ratios(rows: &[Value], mode: &str, proto: &str) -> Vec<f64> {
    (0..reps(rows))
        .filter_map(|rep| {
            let base = find(rows, rep, "none", proto)?["req_per_s"].as_f64()?;
            Some(find(rows, rep, mode, proto)?["req_per_s"].as_f64()? / base.max(1e-9))
        })
        .collect()
}

fn range(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)))
}

/// The few lines printed at the end of a run.
pub fn summary(run: &Value) -> Result<String> {
    let rows = run["runs"].as_array().context("run.json has no runs")?;
    let (modes, protos) = dims(run);
    let mut o = String::new();
    for rep in 0..reps(rows) {
        for p in &protos {
            write!(o, "rep {rep} {}:", proto_label(p))?;
            for m in &modes {
                if let Some(r) = find(rows, rep, m, p) {
                    let Some(rps) = r["req_per_s"].as_f64() else {
                        write!(o, " {} observed (external load, no req/s);", label(m))?;
                        continue;
                    };
                    write!(o, " {} {rps:.0} req/s", label(m))?;
                    if *m != "none" {
                        if let Some(x) = ratios(&rows[..], m, p).get(rep as usize) {
                            write!(o, " ({x:.2}x)")?;
                        }
                    }
                    write!(o, ";")?;
                }
            }
            writeln!(o)?;
        }
    }
    if modes.contains(&"none") && modes.len() > 1 {
        writeln!(o, "(ratios to untuned, same repetition and protocol)")?;
    }
    Ok(o)
}

/// The report's markdown for a run.
pub fn render(run: &Value) -> Result<String> {
    let rows = run["runs"].as_array().context("run.json has no runs")?;
    let (modes, protos) = dims(run);
    let cpus = run["cpus"].as_u64().unwrap_or(0) as usize;
    let mut o = String::new();
    writeln!(
        o,
        "# Receive steering: {}\n",
        modes
            .iter()
            .map(|m| label(m))
            .collect::<Vec<_>>()
            .join(" vs ")
    )?;
    let setup = &run["setup"];
    let where_ = if setup["kind"] == "iface" {
        format!(
            "interface `{}`, server CPUs {}, steering targets {}, load: {}",
            setup["iface"].as_str().unwrap_or("?"),
            setup["server_cpus"],
            setup["steer_targets"],
            setup["loader"].as_str().unwrap_or("?")
        )
    } else {
        // Runs stored before `setup` existed keep their roles at the top level.
        let r = if setup.is_null() {
            &run["roles"]
        } else {
            &setup["roles"]
        };
        format!(
            "the embedded veth lab: receive (NAPI) CPU {}, server CPUs {}, loader CPUs {}",
            r["rx_cpu"], r["server_cpus"], r["loader_cpus"]
        )
    };
    writeln!(
        o,
        "`{}` scenario over {}, {} s measured per load after {} s of warm-up, {} connections, {} repetitions (mode order rotated); {where_}.\n",
        run["scenario"].as_str().unwrap_or("health"),
        protos.iter().map(|p| proto_label(p)).collect::<Vec<_>>().join(" and "),
        run["seconds"], run["warmup_s"], run["connections"], reps(rows)
    )?;
    let env = &run["environment"];
    if !env.is_null() {
        writeln!(
            o,
            "Machine: {} CPUs, {} kernel {}; 1-minute load average {} before and {} after.\n",
            env["before"]["online_cpus"],
            env["before"]["arch"].as_str().unwrap_or("?"),
            env["before"]["kernel"].as_str().unwrap_or("?"),
            env["before"]["loadavg"][0],
            env["after"]["loadavg"][0]
        )?;
    }
    if let Some(c) = run["caveat"].as_str() {
        writeln!(o, "> **Note:** {c}.\n")?;
    }
    if let Some(m) = run["loaded_machine"].as_str() {
        writeln!(
            o,
            "> **Every figure here was {m}** (run with --force): other work was timed too.\n"
        )?;
    }
    let nic = &setup["nic"];
    if !nic.is_null() {
        writeln!(
            o,
            "Interface driver {}, GRO {}, cpumap ring {} frames per CPU; rxsteer {} ({}).\n",
            nic["driver"].as_str().unwrap_or("?"),
            nic["gro"].as_str().unwrap_or("?"),
            setup["qsize"],
            env["before"]["rxsteer"]["version"].as_str().unwrap_or("?"),
            env["before"]["rxsteer"]["git"].as_str().unwrap_or("?")
        )?;
    }
    writeln!(o, "## Throughput per repetition\n")?;
    writeln!(o, "![req/s](throughput.svg) ![p99](p99.svg)\n")?;
    for p in &protos {
        writeln!(o, "### {}\n", proto_label(p))?;
        write!(o, "| repetition |")?;
        for m in &modes {
            if *m == "none" || !modes.contains(&"none") {
                write!(o, " {} req/s |", label(m))?;
            } else {
                write!(o, " {} / untuned |", label(m))?;
            }
        }
        writeln!(
            o,
            " p99 us ({}) | errors |",
            modes
                .iter()
                .map(|m| label(m))
                .collect::<Vec<_>>()
                .join(" / ")
        )?;
        writeln!(o, "|---|{}---|---|", "---|".repeat(modes.len()))?;
        for rep in 0..reps(rows) {
            write!(o, "| {rep} |")?;
            let mut p99 = Vec::new();
            let mut errors = 0;
            for m in &modes {
                let r = find(rows, rep, m, p);
                let Some(rps) = r.and_then(|r| r["req_per_s"].as_f64()) else {
                    // An external load: observed, not measured here.
                    write!(o, " - |")?;
                    p99.push("-".into());
                    continue;
                };
                p99.push(r.map_or("-".into(), |r| r["p99_us"].to_string()));
                errors += r.and_then(|r| r["error_total"].as_u64()).unwrap_or(0);
                match (*m, find(rows, rep, "none", p)) {
                    ("none", _) | (_, None) => write!(o, " {rps:.0} |")?,
                    (_, Some(b)) => write!(
                        o,
                        " {:.2} |",
                        rps / b["req_per_s"].as_f64().unwrap_or(0.0).max(1e-9)
                    )?,
                }
            }
            writeln!(o, " {} | {errors} |", p99.join(" / "))?;
        }
        for m in modes.iter().filter(|m| **m != "none") {
            let v = ratios(rows, m, p);
            if !v.is_empty() {
                let (lo, hi) = range(&v);
                writeln!(
                    o,
                    "\n{} / untuned ranged {lo:.2}-{hi:.2} over {} repetitions.",
                    label(m),
                    v.len()
                )?;
            }
        }
        writeln!(o)?;
    }
    writeln!(o, "## Where the receive work went\n")?;
    writeln!(o, "ms per second of each CPU in the measured windows (NET_RX softirq + receive kthreads: cpumap and threaded NAPI), mean over repetitions; imbalance is the busiest CPU over the mean (1.0 = even).\n")?;
    write!(o, "| mode | protocol |")?;
    for c in 0..cpus {
        write!(o, " CPU {c} |")?;
    }
    writeln!(
        o,
        " of it kthread | imbalance | redirect errors | ring drops | softnet drops | XDP mode |"
    )?;
    writeln!(
        o,
        "|---|---|{}---|---|---|---|---|---|",
        "---|".repeat(cpus)
    )?;
    for m in &modes {
        for p in &protos {
            let mine: Vec<&Value> = rows
                .iter()
                .filter(|r| r["mode"] == *m && r["proto"].as_str().unwrap_or("http") == p)
                .collect();
            let mean = |k: &str, c: usize| {
                mine.iter().filter_map(|r| r[k][c].as_f64()).sum::<f64>() / mine.len().max(1) as f64
            };
            let total = |k: &str| mine.iter().filter_map(|r| r[k].as_u64()).sum::<u64>();
            let avg = |k: &str| {
                mine.iter().filter_map(|r| r[k].as_f64()).sum::<f64>() / mine.len().max(1) as f64
            };
            write!(o, "| {} | {} |", label(m), proto_label(p))?;
            for c in 0..cpus {
                write!(o, " {:.0} |", mean("receive_ms_per_s", c))?;
            }
            let kthread: f64 = (0..cpus).map(|c| mean("kthread_ms_per_s", c)).sum();
            writeln!(
                o,
                " {kthread:.0} | {:.2} | {} | {} | {} | {} |",
                avg("imbalance"),
                total("redirect_err"),
                total("enqueue_drops") + total("cpumap_drops"),
                total("softnet_dropped"),
                mine.first()
                    .and_then(|r| r["xdp_mode"].as_str())
                    .unwrap_or("-")
            )?;
        }
    }
    writeln!(o)?;
    for m in &modes {
        writeln!(
            o,
            "![{} receive work per CPU over time](heatmap-{m}.svg)",
            label(m)
        )?;
    }
    writeln!(o, "\nEvery figure comes from `run.json` and the rxload and sample files beside it; `rxsteer report DIR` re-renders this page and its charts.")?;
    Ok(o)
}

/// The per-CPU receive work over time of one mode's first repetition (every sample, the
/// protocols one after the other), from its stored samples.
fn heatmap_cells(dir: &Path, mode: &str, protos: &[String]) -> Vec<Vec<f64>> {
    let text: String = protos
        .iter()
        .filter_map(|p| {
            std::fs::read_to_string(dir.join(format!("samples-{mode}-{p}-rep0.jsonl"))).ok()
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
    let (modes, protos) = dims(&run);
    let collect = |key: &str| -> Vec<Vec<Vec<f64>>> {
        protos
            .iter()
            .map(|p| {
                modes
                    .iter()
                    .map(|m| {
                        rows.iter()
                            .filter(|r| {
                                r["mode"] == *m && r["proto"].as_str().unwrap_or("http") == p
                            })
                            .filter_map(|r| r[key].as_f64())
                            .collect()
                    })
                    .collect()
            })
            .collect()
    };
    let groups: Vec<&str> = protos.iter().map(|p| proto_label(p)).collect();
    let names: Vec<&str> = modes.iter().map(|m| label(m)).collect();
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
    for m in &modes {
        let title = format!(
            "{}: receive work per CPU over time (repetition 0)",
            label(m)
        );
        std::fs::write(
            dir.join(format!("heatmap-{m}.svg")),
            svg::heatmap(&title, &heatmap_cells(dir, m, &protos)),
        )?;
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
        assert!(md.contains("> **Note:** this machine has 2 CPUs."), "{md}");
        assert!(md.contains("![req/s](throughput.svg)") && md.contains("heatmap-cpumap.svg"));
        assert!(render(&serde_json::json!({})).is_err());
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
