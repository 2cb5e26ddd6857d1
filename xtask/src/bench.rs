//! `cargo xtask bench`: runs a benchmark and keeps its raw output in a new folder under
//! results/, named by date, host and bench, so every figure the README quotes has a run behind it.
use anyhow::{Context, Result};
use std::{path::PathBuf, process::Stdio};

use crate::{cmd, ensure::Paths};

/// results/<date>-<host>-<name>/, created fresh.
pub fn run_dir(paths: &Paths, name: &str) -> Result<PathBuf> {
    let date = cmd::output(
        "bench (date)",
        std::process::Command::new("date").arg("+%Y-%m-%d"),
    )?;
    let host =
        std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_else(|_| "host".into());
    let mut dir =
        paths
            .root
            .join("results")
            .join(format!("{}-{}-{name}", date.trim(), host.trim()));
    let base = dir.clone();
    let mut n = 2;
    while dir.exists() {
        dir = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// A benchmark `cargo xtask bench` can run.
pub struct Bench {
    /// Folder suffix under results/.
    pub name: &'static str,
    pub package: &'static str,
    pub bench: &'static str,
    /// A measuring test run with --nocapture rather than a cargo bench.
    pub is_test: bool,
    /// Environment for the run (e.g. a longer duration than the test's default).
    pub env: &'static [(&'static str, &'static str)],
}

pub const XDP: Bench = Bench {
    name: "xdp-ns-per-packet",
    package: "rxsteer-dataplane",
    bench: "xdp_ns_per_packet",
    is_test: false,
    env: &[],
};
/// What the kernel's BPF run-time statistics cost per run and count for an empty program.
pub const STATS: Bench = Bench {
    name: "bpf-stats-overhead",
    package: "rxsteer-dataplane",
    bench: "bpf_stats_overhead",
    is_test: false,
    env: &[],
};
pub const SERDE: Bench = Bench {
    name: "serde-axis",
    package: "rxsteer-wire",
    bench: "serde_axis",
    is_test: false,
    env: &[],
};
pub const ECHO: Bench = Bench {
    name: "echo-64k-zap-vs-http",
    package: "rxsteer-server",
    bench: "echo_64k",
    is_test: false,
    env: &[],
};
pub const WORKLOADS: Bench = Bench {
    name: "workloads",
    package: "rxsteer-wire",
    bench: "workloads",
    is_test: false,
    env: &[],
};
pub const NGINX: Bench = Bench {
    name: "health-vs-nginx",
    package: "rxsteer-server",
    bench: "health_vs_nginx",
    is_test: false,
    env: &[],
};
pub const LOADGEN: Bench = Bench {
    name: "zap-vs-http-and-rxload-vs-wrk",
    package: "rxsteer-server",
    bench: "loadgen_compare",
    is_test: false,
    env: &[],
};
/// The servers' allocations per request: its printed figures are the result.
pub const ALLOCS: Bench = Bench {
    name: "server-allocs-per-request",
    package: "rxsteer-server",
    bench: "zero_alloc",
    is_test: true,
    env: &[],
};

/// What serving `--metrics` costs: a root test that measures (its figures are the result).
pub const METRICS: Bench = Bench {
    name: "metrics-endpoint-cost",
    package: "rxsteer",
    bench: "metrics_cost",
    is_test: true,
    env: &[("RXSTEER_METRICS_COST_SECS", "30")],
};
/// Runs one bench; its stdout (and the JSON it writes) goes into a new results/ folder,
/// returned.
pub fn run(paths: &Paths, b: &Bench) -> Result<std::path::PathBuf> {
    let dir = run_dir(paths, b.name)?;
    let mut c = cmd::cargo(None);
    if b.is_test {
        c.args([
            "test",
            "--release",
            "-p",
            b.package,
            "--test",
            b.bench,
            "--",
            // A measuring test that needs root is ignored in a plain `cargo test`.
            "--include-ignored",
            "--nocapture",
        ]);
    } else {
        c.args(["bench", "-p", b.package, "--bench", b.bench]);
    }
    let out = c
        .envs(b.env.iter().copied())
        .env("RXSTEER_BENCH_JSON", dir.join("raw.json"))
        .current_dir(&paths.root)
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo bench")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}");
    // A failed run is kept and marked, like a noisy one (which the bench marks itself): what
    // the README quotes must not be the survivor of runs that were thrown away.
    let failed =
        (!out.status.success()).then(|| format!("FAILED: {} exited with {}", b.bench, out.status));
    let text = match &failed {
        Some(f) => format!("# {f}\n{stdout}"),
        None => stdout.into_owned(),
    };
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(str::to_string)
        })
        .unwrap_or_default();
    std::fs::write(
        dir.join("output.txt"),
        format!(
            "# kernel {}# {cpu}\n# nproc {}\n{text}",
            kernel,
            std::thread::available_parallelism()?
        ),
    )?;
    eprintln!("xtask bench: stored in {}", dir.display());
    if let Some(f) = failed {
        anyhow::bail!("{f} (its output is kept, marked, in {})", dir.display());
    }
    Ok(dir)
}
/// Good traffic under a hostile barrage, longer than the test's 3 s.
pub const BARRAGE: Bench = Bench {
    name: "barrage",
    package: "rxsteer",
    bench: "serve_barrage",
    is_test: true,
    env: &[("RXSTEER_BARRAGE_SECS", "20")],
};
/// 60 s at full load on both transports.
pub const SOAK: Bench = Bench {
    name: "soak",
    package: "rxsteer",
    bench: "serve_soak",
    is_test: true,
    env: &[("RXSTEER_SOAK_SECS", "60")],
};

/// One comparison of an observer bench: its folder under the run's and its own flags.
struct ObserverLoad {
    name: String,
    args: Vec<String>,
}

/// `cargo xtask bench observer`: what observing costs. Two comparisons in the lab, `/health`
/// and a 64 KiB upload over HTTP, each of untuned observed every way (the receive
/// tracepoints, the XDP program in driver and in skb mode) beside untuned with no BPF, 7
/// repetitions with the arms rotated. Stored under one results/ folder with the summary
/// (output.txt, raw.json) and the one line results/observer-cost.txt that `--observer xdp`
/// and the reports of older runs quote.
pub fn observer(paths: &Paths) -> Result<()> {
    let loads = ["health", "upload"].map(|scenario| ObserverLoad {
        name: scenario.to_string(),
        args: [
            "--observer",
            "all",
            "--xdp-mode",
            "both",
            "--proto",
            "http",
            "--scenario",
            scenario,
        ]
        .map(String::from)
        .to_vec(),
    });
    let (dir, bench) = observer_loads(paths, "observer-cost", &loads, None)?;
    let rel = dir
        .strip_prefix(&paths.root)
        .unwrap_or(&dir)
        .display()
        .to_string();
    std::fs::write(
        paths.root.join("results/observer-cost.txt"),
        format!("{}\n", rxsteer_report::observer::cost_line(&bench, &rel)),
    )?;
    eprintln!("xtask bench: results/observer-cost.txt updated");
    Ok(())
}

/// `cargo xtask bench observer-matrix`: the default observer (the receive tracepoints and
/// the tc witnesses) against untuned with no BPF on every load a user runs: HTTP and ZAP,
/// `/health`, `/rpc` and the 64 KiB upload, on the epoll and the io_uring server; 7
/// repetitions each, arms rotated, with each program's cost from the kernel's statistics.
/// The targets: at most 1 % on the request loads and 3 % on the upload, judged by the
/// programs' share of the server side's CPU (`rxsteer_report::observer::server_share`), the
/// req/s ratio beside it.
pub fn observer_matrix(paths: &Paths) -> Result<()> {
    let mut loads = Vec::new();
    for io in ["epoll", "uring"] {
        for scenario in ["health", "rpc", "upload"] {
            loads.push(ObserverLoad {
                name: format!("{scenario}-{io}"),
                args: [
                    "--observer",
                    "tracepoint",
                    "--proto",
                    "both",
                    "--scenario",
                    scenario,
                    "--server-io",
                    io,
                ]
                .map(String::from)
                .to_vec(),
            });
        }
    }
    // What the statistics themselves cost, measured first in this same run: the verdicts
    // count observing as it ran, net of the statistics' floor plus their cost while on.
    let stats_dir = run(paths, &STATS)?;
    let stats = rxsteer_report::observer::StatsCost::read(&stats_dir.join("raw.json"))?;
    observer_loads(paths, "observer-matrix", &loads, Some(stats)).map(|_| ())
}

/// Runs each comparison (untuned only, closed loop, 7 repetitions of 4 s), then stores the
/// summary: output.txt and raw.json in one results/ folder named `name`. A comparison that
/// fails is marked in output.txt and kept.
fn observer_loads(
    paths: &Paths,
    name: &str,
    loads: &[ObserverLoad],
    stats: Option<rxsteer_report::observer::StatsCost>,
) -> Result<(std::path::PathBuf, rxsteer_report::observer::ObserverBench)> {
    let dir = run_dir(paths, name)?;
    let rxsteer = paths.root.join("target/release/rxsteer");
    let mut runs = Vec::new();
    for load in loads {
        let out = dir.join(&load.name);
        let status = std::process::Command::new(&rxsteer)
            .args([
                "compare",
                // The observer's cost as the stored bench has always measured it: closed-loop
                // req/s of each arm over untuned with no BPF.
                "--closed", "--steer", "none",
            ])
            .args(&load.args)
            .args(["--reps", "7", "-d", "4s"])
            .args(["--quiet-wait", "300s", "--no-tui", "--out"])
            .arg(&out)
            .current_dir(&paths.root)
            .status()
            .context("running rxsteer compare")?;
        if !status.success() {
            std::fs::write(
                dir.join("output.txt"),
                format!(
                    "# FAILED: rxsteer compare {} exited with {status}\n",
                    load.args.join(" ")
                ),
            )?;
            anyhow::bail!(
                "the {} comparison failed (kept, marked, in {})",
                load.name,
                dir.display()
            );
        }
        runs.push(out);
    }
    let dirs: Vec<&std::path::Path> = runs.iter().map(|p| p.as_path()).collect();
    let bench = rxsteer_report::observer::summarize(&dirs, stats)?;
    let text = rxsteer_report::observer::render(&bench)?;
    print!("{text}");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    std::fs::write(
        dir.join("output.txt"),
        format!(
            "# kernel {kernel}# nproc {}\n{text}",
            std::thread::available_parallelism()?
        ),
    )?;
    std::fs::write(dir.join("raw.json"), serde_json::to_string_pretty(&bench)?)?;
    eprintln!("xtask bench: stored in {}", dir.display());
    Ok((dir, bench))
}
