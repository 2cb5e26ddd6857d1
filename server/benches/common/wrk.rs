//! wrk (Debian) for the benchmarks: one thread pinned to a CPU, its req/s, and its requests per
//! CPU-second (from RUSAGE_CHILDREN around the run). Non-2xx answers or socket errors fail the
//! bench.
use std::process::Command;

/// Each bench reads the fields it compares (the nginx bench keeps the text, the loadgen bench
/// the CPU figure).
#[allow(dead_code)]
pub struct WrkRun {
    pub req_per_s: f64,
    pub req_per_cpu_s: f64,
    pub text: String,
}

fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

pub fn run(url: &str, cpu: u32, conns: &str, duration: &str) -> WrkRun {
    let c0 = children_cpu_s();
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
    let cpu_s = children_cpu_s() - c0;
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
        req_per_cpu_s: total / cpu_s.max(1e-9),
        text,
    }
}
