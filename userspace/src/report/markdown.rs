//! The report page (markdown) and the short summary a run prints at its end.
use anyhow::{Context, Result};
use serde_json::Value;
use std::fmt::Write;

use super::data::{dims, find, label, proto_label, range, ratios, reps};

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
        "`{}` scenario over {}, {} s measured per load{}, {} connections, {} repetitions (mode order rotated); {where_}.\n",
        run["scenario"].as_str().unwrap_or("health"),
        protos.iter().map(|p| proto_label(p)).collect::<Vec<_>>().join(" and "),
        run["seconds"],
        // Runs stored before the warm-up was recorded leave it out rather than print null.
        run["warmup_s"].as_f64().map_or(String::new(), |w| format!(" after {w} s of warm-up")),
        run["connections"],
        reps(rows)
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
    if run["loader_io"] == "uring" {
        writeln!(
            o,
            "> rxload ran on io_uring (`--loader-io uring`): less load-generator CPU per request, and a response may be timed up to 100 us late, so p99 reads high by up to that much.\n"
        )?;
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
