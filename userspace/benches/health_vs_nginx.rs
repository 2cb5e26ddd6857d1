//! `GET /health` over HTTP: rxsteer serve vs nginx (Debian), both driven by wrk (Debian) in
//! the same run. Same worker count (1), same CPU for the server, wrk pinned to another CPU,
//! same connections; the order alternates per repetition and the ratio is taken per
//! repetition. nginx runs from a config written here that returns 200 "ok" on /health.
//! On a 2-CPU machine wrk (one CPU) can be the limit for both, so the bench also reports each
//! server's requests per CPU-second of its own worker (user + sys from /proc over the window):
//! the server's cost, whatever the load generator manages.
//! Needs nginx and wrk on PATH (`cargo xtask bench nginx` installs them).
//! RXSTEER_BENCH_JSON=FILE writes every figure.
use rxsteer::serve::{start, ServeConfig};
use serde_json::json;
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/wrk.rs"]
mod wrk;

use nginx::{free_port, nginx};
use std::{net::SocketAddr, time::Duration};

const CONNS: &str = "64";
const DURATION: &str = "4s";
const REPS: usize = 5;

/// utime + stime of a task, in seconds.
fn cpu_seconds(stat_path: &str) -> f64 {
    let s = std::fs::read_to_string(stat_path).unwrap();
    let after = &s[s.rfind(')').unwrap() + 1..];
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 of /proc/PID/stat, counted from the state field (3) after ')'.
    (f[11] + f[12]) as f64 / 100.0 // USER_HZ
}

/// /proc/.../stat of our server's worker thread.
fn our_worker() -> String {
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() == "rxsteer-serve-0" {
            return t.path().join("stat").display().to_string();
        }
    }
    panic!("no rxsteer-serve-0 thread");
}

/// /proc/PID/stat of nginx's worker process (the master's child).
fn nginx_worker(master: u32) -> String {
    for _ in 0..100 {
        let kids = std::fs::read_to_string(format!("/proc/{master}/task/{master}/children"))
            .unwrap_or_default();
        if let Some(pid) = kids.split_whitespace().next() {
            return format!("/proc/{pid}/stat");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nginx started no worker");
}

fn main() {
    let cpus = rxsteer_tune::cpus::online_cpus().unwrap();
    let (wrk_cpu, server_cpu) = (cpus[0], *cpus.last().unwrap());
    let ours = start(ServeConfig {
        http: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        zap: None,
        threads: 1,
        cpus: Some(vec![server_cpu]),
        ..ServeConfig::default()
    })
    .unwrap();
    let port = free_port();
    let nginx_proc = nginx(port, server_cpu);
    let stats = [our_worker(), nginx_worker(nginx_proc.id())];
    let targets = [
        ("rxsteer", format!("http://{}/health", ours.http.unwrap())),
        ("nginx", format!("http://127.0.0.1:{port}/health")),
    ];
    println!("GET /health, wrk -t1 -c{CONNS} -d{DURATION} on CPU {wrk_cpu}; servers: 1 worker on CPU {server_cpu}; {REPS} repetitions, order alternating");
    let secs: f64 = DURATION.trim_end_matches('s').parse().unwrap();
    let mut ratios = Vec::new();
    let mut eff_ratios = Vec::new();
    let mut raw = Vec::new();
    for rep in 0..REPS {
        let (mut rps, mut per_cpu_s) = ([0f64; 2], [0f64; 2]);
        for k in 0..2 {
            let i = (k + rep) % 2;
            let cpu0 = cpu_seconds(&stats[i]);
            let wrk::WrkRun {
                req_per_s: r, text, ..
            } = wrk::run(&targets[i].1, wrk_cpu, CONNS, DURATION);
            let cpu = cpu_seconds(&stats[i]) - cpu0;
            rps[i] = r;
            per_cpu_s[i] = r * secs / cpu.max(0.01);
            raw.push(
                json!({"rep": rep, "server": targets[i].0, "req_per_s": r, "server_cpu_s": cpu,
                "req_per_server_cpu_s": per_cpu_s[i], "wrk": text}),
            );
        }
        println!(
            "rep {rep}: rxsteer {:.0} req/s, {:.0}/server CPU-s; nginx {:.0} req/s, {:.0}/server CPU-s; ratios {:.2} and {:.2}",
            rps[0], per_cpu_s[0], rps[1], per_cpu_s[1], rps[0] / rps[1], per_cpu_s[0] / per_cpu_s[1]
        );
        ratios.push(rps[0] / rps[1]);
        eff_ratios.push(per_cpu_s[0] / per_cpu_s[1]);
    }
    let summary = |v: &mut Vec<f64>| {
        let (lo, hi) = (
            v.iter().copied().fold(f64::MAX, f64::min),
            v.iter().copied().fold(f64::MIN, f64::max),
        );
        v.sort_by(f64::total_cmp);
        (v[v.len() / 2], lo, hi)
    };
    let (med, lo, hi) = summary(&mut ratios);
    let (emed, elo, ehi) = summary(&mut eff_ratios);
    println!("rxsteer / nginx, req/s: median {med:.2}, range {lo:.2}-{hi:.2}");
    println!("rxsteer / nginx, requests per server CPU-second: median {emed:.2}, range {elo:.2}-{ehi:.2}");
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = json!({"bench": "health_vs_nginx", "conns": CONNS, "duration": DURATION,
            "ratio_req_per_s": {"median": med, "min": lo, "max": hi},
            "ratio_req_per_server_cpu_s": {"median": emed, "min": elo, "max": ehi}, "raw": raw});
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
