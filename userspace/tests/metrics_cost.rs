//! What `--metrics` costs the process that serves it. `rxsteer top` in a veth lab, its
//! threads' time on a CPU read from /proc/PID/task/TID/schedstat (nanoseconds) over a window
//! with no scrape and a window with a scrape every second (Prometheus's default is 15 s to a
//! minute: a second is the heavy case), beside the same top without `--metrics` over the same
//! length. The endpoint's threads are named `rxs-metrics*`; adding each sample to the counters
//! runs on the sampler thread and shows only in the process's total. RXSTEER_METRICS_COST_SECS
//! sets each window (default 5 s; `cargo xtask bench metrics` runs 30 s and stores the output).
//! Needs root.
mod common;

use common::{http_get, lab};
use rxsteer::netns::Netns;
use std::{
    io::{BufRead, BufReader},
    process::{Child, Stdio},
    time::Duration,
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");
const ADDR: &str = "127.0.0.1:19466";

fn window() -> Duration {
    let s = std::env::var("RXSTEER_METRICS_COST_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    Duration::from_secs(s)
}

/// Each thread's name and nanoseconds on a CPU so far.
fn threads(pid: u32) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let dir = t.unwrap().path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let ns = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        out.push((comm.trim().to_string(), ns));
    }
    out
}

/// (the endpoint's threads, the whole process) in ns.
fn on_cpu(pid: u32) -> (u64, u64) {
    let t = threads(pid);
    let endpoint = t
        .iter()
        .filter(|(n, _)| n.starts_with(rxsteer::metrics::THREAD))
        .map(|(_, ns)| ns)
        .sum();
    (endpoint, t.iter().map(|(_, ns)| ns).sum())
}

fn start(ns: &Netns, dev: &str, metrics: bool) -> Child {
    let mut c = ns.command(RXSTEER);
    c.args(["top", "--iface", dev, "--json", "--interval", "1s"]);
    if metrics {
        c.args(["--metrics", ADDR]);
    }
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let want = if metrics { "OpenMetrics" } else { "observing" };
    let mut said = String::new();
    while !said.contains(want) {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "top ended: {said}");
        said.push_str(&line);
    }
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    // Past its first sample: the baseline's own reads are not in the window.
    std::thread::sleep(Duration::from_millis(1500));
    child
}

fn stop(mut child: Child) {
    common::sigterm(&child);
    assert!(child.wait().unwrap().success());
}

#[test]
#[ignore = "needs root: rxsteer top in a veth lab"]
fn what_serving_metrics_costs_the_observer_process() {
    let lab = lab('k');
    let w = window();
    let secs = w.as_secs_f64();

    let plain = start(&lab.server, &lab.server_dev, false);
    let (_, a0) = on_cpu(plain.id());
    std::thread::sleep(w);
    let (_, a1) = on_cpu(plain.id());
    stop(plain);

    let served = start(&lab.server, &lab.server_dev, true);
    let pid = served.id();
    let (e0, p0) = on_cpu(pid);
    std::thread::sleep(w);
    let (e1, p1) = on_cpu(pid);
    let mut scrapes = 0u64;
    let mut bytes = 0usize;
    let until = std::time::Instant::now() + w;
    while std::time::Instant::now() < until {
        let (status, body) = http_get(
            &lab.server,
            ADDR,
            "/metrics",
            "application/openmetrics-text",
        );
        assert_eq!(status, 200);
        bytes = body.len();
        scrapes += 1;
        std::thread::sleep(Duration::from_secs(1));
    }
    let (e2, p2) = on_cpu(pid);
    stop(served);

    let us_per_s = |ns: u64| ns as f64 / 1e3 / secs;
    let idle = us_per_s(e1 - e0);
    let per_scrape_us = (e2 - e1) as f64 / 1e3 / scrapes as f64;
    let (without, idle_total, scraped_total) =
        (us_per_s(a1 - a0), us_per_s(p1 - p0), us_per_s(p2 - p1));
    let cpus = rxsteer_tune::cpus::online_cpus().unwrap().len();
    let report = format!(
        "window {secs:.0} s, {cpus} CPUs, exposition {bytes} bytes\n\
         endpoint threads, no scrape:        {idle:8.1} us/s\n\
         endpoint threads, per scrape:       {per_scrape_us:8.1} us ({scrapes} scrapes, 1/s)\n\
         top without --metrics, process:     {without:8.1} us/s\n\
         top with --metrics, no scrape:      {idle_total:8.1} us/s\n\
         top with --metrics, a scrape a second: {scraped_total:8.1} us/s\n"
    );
    println!("{report}");
    if let Ok(path) = std::env::var("RXSTEER_BENCH_JSON") {
        let json = serde_json::json!({
            "window_s": secs, "cpus": cpus, "exposition_bytes": bytes, "scrapes": scrapes,
            "endpoint_idle_us_per_s": idle, "endpoint_us_per_scrape": per_scrape_us,
            "process_us_per_s_without": without, "process_us_per_s_idle": idle_total,
            "process_us_per_s_scraped": scraped_total,
        });
        std::fs::write(path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    }
    // Behaviour, not a figure: an idle endpoint only wakes to see its stop flag, and a scrape
    // is rendering a few kilobytes, far below a millisecond's work on any CPU.
    assert!(scrapes >= w.as_secs() / 2, "{report}");
    assert!(per_scrape_us > 0.0 && per_scrape_us < 5000.0, "{report}");
    assert!(idle < 1000.0, "{report}");
}
