//! `rxsteer report DIR`: renders `report.md` from the files a comparison stored (`run.json`),
//! so a report can always be rebuilt from its run directory alone.
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

/// The report's markdown for a run.
pub fn render(run: &Value) -> Result<String> {
    let rows = run["runs"].as_array().context("run.json has no runs")?;
    let cpus = run["cpus"].as_u64().unwrap_or(0) as usize;
    let mut o = String::new();
    writeln!(o, "# Receive steering: untuned vs RPS vs cpumap\n")?;
    writeln!(
        o,
        "HTTP `GET /health`, {} s measured per mode and repetition, {} connections; receive (NAPI) CPU {}, \
         server CPUs {}, loader CPUs {}.\n",
        run["seconds"], run["connections"], run["roles"]["rx_cpu"], run["roles"]["server_cpus"], run["roles"]["loader_cpus"]
    )?;
    if let Some(c) = run["caveat"].as_str() {
        writeln!(o, "> **Note:** {c}.\n")?;
    }
    writeln!(
        o,
        "## Throughput, per repetition (ratios to untuned from the same repetition)\n"
    )?;
    writeln!(o, "| repetition | untuned req/s | RPS / untuned | cpumap / untuned | p99 untuned / RPS / cpumap (us) |")?;
    writeln!(o, "|---|---|---|---|---|")?;
    let reps = rows
        .iter()
        .filter_map(|r| r["rep"].as_u64())
        .max()
        .map_or(0, |m| m + 1);
    let find = |rep: u64, mode: &str| {
        rows.iter()
            .find(|r| r["rep"].as_u64() == Some(rep) && r["mode"] == mode)
    };
    let mut ratios: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for rep in 0..reps {
        let rps = |m: &str| {
            find(rep, m)
                .and_then(|r| r["req_per_s"].as_f64())
                .unwrap_or(0.0)
        };
        let p99 = |m: &str| find(rep, m).map_or("-".to_string(), |r| r["p99_us"].to_string());
        let base = rps("none").max(1e-9);
        ratios[0].push(rps("rps") / base);
        ratios[1].push(rps("cpumap") / base);
        writeln!(
            o,
            "| {rep} | {:.0} | {:.2} | {:.2} | {} / {} / {} |",
            rps("none"),
            rps("rps") / base,
            rps("cpumap") / base,
            p99("none"),
            p99("rps"),
            p99("cpumap")
        )?;
    }
    for (name, v) in ["RPS", "cpumap"].iter().zip(&ratios) {
        if !v.is_empty() {
            let (lo, hi) = v
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
            writeln!(
                o,
                "\n{name} / untuned ranged {lo:.2}-{hi:.2} over {} repetitions.",
                v.len()
            )?;
        }
    }
    writeln!(o, "\n## Where the receive work went (ms per second, NET_RX softirq + receive kthreads, mean over repetitions)\n")?;
    write!(o, "| mode |")?;
    for c in 0..cpus {
        write!(o, " CPU {c} |")?;
    }
    writeln!(o, "\n|---|{}", "---|".repeat(cpus))?;
    for mode in MODES {
        let mine: Vec<&Value> = rows.iter().filter(|r| r["mode"] == mode).collect();
        write!(o, "| {} |", label(mode))?;
        for c in 0..cpus {
            let mean = mine
                .iter()
                .filter_map(|r| r["receive_ms_per_s"][c].as_f64())
                .sum::<f64>()
                / mine.len().max(1) as f64;
            write!(o, " {mean:.0} |")?;
        }
        writeln!(o)?;
    }
    writeln!(o, "\nEvery figure comes from `run.json` and the rxload and sample files beside it; `rxsteer report DIR` re-renders this page.")?;
    Ok(o)
}

/// Renders `DIR/report.md` from `DIR/run.json`.
pub fn run(dir: &Path) -> Result<()> {
    let path = dir.join("run.json");
    let run: Value = serde_json::from_slice(
        &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("{} is not a comparison's run.json", path.display()))?;
    let md = render(&run)?;
    std::fs::write(dir.join("report.md"), &md)?;
    eprintln!("rxsteer report: wrote {}", dir.join("report.md").display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_ratios_and_the_receive_table() {
        let row = |rep: u64, mode: &str, rps: f64, recv: [f64; 2]| serde_json::json!({"rep": rep, "mode": mode, "req_per_s": rps, "p99_us": 900, "receive_ms_per_s": recv});
        let run = serde_json::json!({
            "cpus": 2, "seconds": 4, "connections": 32, "caveat": "this machine has 2 CPUs",
            "roles": {"rx_cpu": 0, "server_cpus": [1], "loader_cpus": [0]},
            "runs": [row(0, "none", 100.0, [300.0, 200.0]), row(0, "rps", 60.0, [200.0, 300.0]), row(0, "cpumap", 70.0, [230.0, 580.0]),
                     row(1, "none", 200.0, [300.0, 200.0]), row(1, "rps", 100.0, [200.0, 300.0]), row(1, "cpumap", 150.0, [230.0, 560.0])],
        });
        let md = render(&run).unwrap();
        assert!(
            md.contains("| 0 | 100 | 0.60 | 0.70 | 900 / 900 / 900 |"),
            "{md}"
        );
        assert!(md.contains("| 1 | 200 | 0.50 | 0.75 |"), "{md}");
        assert!(
            md.contains("RPS / untuned ranged 0.50-0.60 over 2 repetitions."),
            "{md}"
        );
        assert!(md.contains("| XDP cpumap | 230 | 570 |"), "{md}");
        assert!(md.contains("> **Note:** this machine has 2 CPUs."), "{md}");
        assert!(render(&serde_json::json!({})).is_err());
    }
}
