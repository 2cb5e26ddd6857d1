//! wrk (Debian) for the benchmarks: one thread pinned to a CPU, its req/s, requests, and CPU
//! seconds (its whole process's, from RUSAGE_CHILDREN around the run). Non-2xx answers or
//! socket errors fail the bench.
use std::process::Command;

/// Each bench reads the fields it compares (the nginx bench keeps the text, the loadgen bench
/// the CPU figure).
#[allow(dead_code)]
pub struct WrkRun {
    pub req_per_s: f64,
    /// Requests wrk completed over its run.
    pub requests: f64,
    /// wrk's CPU seconds over its whole run (its process, from outside).
    pub cpu_s: f64,
    pub text: String,
}

pub fn run(url: &str, cpu: u32, conns: &str, duration: &str) -> WrkRun {
    let c0 = crate::method::children_cpu_s();
    let out = Command::new("taskset")
        .args([
            "-c",
            &cpu.to_string(),
            "wrk",
            "-t1",
            "-c",
            conns,
            "-d",
            duration,
            "--latency",
            url,
        ])
        .output()
        .expect("wrk on PATH");
    let cpu_s = crate::method::children_cpu_s() - c0;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let req_per_s: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no Requests/sec in wrk output:\n{text}"));
    let total: f64 = text
        .lines()
        .find_map(|l| {
            l.split_whitespace()
                .next()
                .filter(|_| l.contains("requests in"))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or_else(|| panic!("no request total in wrk output:\n{text}"));
    assert!(
        !text.contains("Non-2xx") && !text.contains("Socket errors"),
        "wrk errors:\n{text}"
    );
    WrkRun {
        req_per_s,
        requests: total,
        cpu_s,
        text,
    }
}
