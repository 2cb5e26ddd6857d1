//! `GET /health` over HTTP: rxsteer serve vs nginx (Debian), both driven by wrk (Debian) in
//! the same run. Same worker count (1), same CPU for the server, wrk pinned to another CPU,
//! same connections; the order alternates per repetition and the ratio is taken per
//! repetition. nginx runs from a config written here that returns 200 "ok" on /health.
//! On a 2-CPU machine wrk (one CPU) can be the limit for both, so the bench also reports each
//! server's requests per CPU-second of its own worker (user + sys from /proc over the window):
//! the server's cost, whatever the load generator manages.
//! Needs nginx and wrk on PATH (`cargo xtask bench nginx` installs them).
//! RXSTEER_BENCH_JSON=FILE writes every figure.
use ratios::summary;
use rxsteer_server::{start, ServeConfig};
use serde_json::json;
#[path = "common/floor.rs"]
mod floor;
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/ratios.rs"]
mod ratios;
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
    assert!(after.split_whitespace().count() > 12, "{stat_path}: {s:?}");
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // Fields 14 and 15 of /proc/PID/stat, counted from the state field (3) after ')'.
    (f[11] + f[12]) as f64 / 100.0 // USER_HZ
}

/// /proc/.../stat of our server's worker thread.
fn our_worker() -> String {
    own_thread("rxsteer-serve-0")
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

/// Thread `name`'s /proc stat in this process.
fn own_thread(name: &str) -> String {
    for _ in 0..100 {
        for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim() == name {
                return t.path().join("stat").display().to_string();
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no {name} thread");
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
    // The floors send exactly our server's /health response.
    let mut ok = Vec::new();
    rxsteer_wire::http1::write_response(
        &mut ok,
        200,
        rxsteer_server::handlers::CT_TEXT,
        b"ok",
        false,
    );
    let ok: &'static [u8] = ok.leak();
    let (epoll, uring) = (floor::epoll(server_cpu, ok), floor::uring(server_cpu, ok));
    // Arms: (name, URL, /proc stat of the thread or process that serves it).
    let arms = [
        (
            "rxsteer",
            format!("http://{}/health", ours.http.unwrap()),
            our_worker(),
        ),
        (
            "nginx",
            format!("http://127.0.0.1:{port}/health"),
            nginx_worker(nginx_proc.id()),
        ),
        (
            "floor-epoll",
            format!("http://{epoll}/health"),
            own_thread("floor-epoll"),
        ),
        (
            "floor-uring",
            format!("http://{uring}/health"),
            own_thread("floor-uring"),
        ),
    ];
    let names: Vec<&str> = arms.iter().map(|a| a.0).collect();
    println!("GET /health, wrk -t1 -c{CONNS} -d{DURATION} on CPU {wrk_cpu}; servers: 1 worker on CPU {server_cpu}; {REPS} repetitions, arm order rotated");
    println!("arms: {names:?}; the floors only read and send a fixed response (a lower bound on any server's cost, not a server)");
    let secs: f64 = DURATION.trim_end_matches('s').parse().unwrap();
    // Ratios of arm i to nginx (index 1), per repetition: req/s and per server CPU-second.
    let mut ratios = vec![Vec::new(); arms.len()];
    let mut eff_ratios = vec![Vec::new(); arms.len()];
    let mut raw = Vec::new();
    for rep in 0..REPS {
        let (mut rps, mut per_cpu_s) = (vec![0f64; arms.len()], vec![0f64; arms.len()]);
        for k in 0..arms.len() {
            let i = (k + rep) % arms.len();
            let (name, url, stat) = &arms[i];
            let cpu0 = cpu_seconds(stat);
            let wrk::WrkRun {
                req_per_s: r, text, ..
            } = wrk::run(url, wrk_cpu, CONNS, DURATION);
            let cpu = cpu_seconds(stat) - cpu0;
            rps[i] = r;
            per_cpu_s[i] = r * secs / cpu.max(0.01);
            raw.push(
                json!({"rep": rep, "server": name, "req_per_s": r, "server_cpu_s": cpu,
                "req_per_server_cpu_s": per_cpu_s[i], "wrk": text}),
            );
        }
        let cells: Vec<String> = (0..arms.len())
            .map(|i| {
                format!(
                    "{} {:.0} req/s, {:.0}/server CPU-s",
                    names[i], rps[i], per_cpu_s[i]
                )
            })
            .collect();
        println!("rep {rep}: {}", cells.join("; "));
        for i in 0..arms.len() {
            ratios[i].push(rps[i] / rps[1]);
            eff_ratios[i].push(per_cpu_s[i] / per_cpu_s[1]);
        }
    }
    let mut doc_ratios = serde_json::Map::new();
    for i in [0, 2, 3] {
        let (med, lo, hi) = summary(&mut ratios[i]);
        let (emed, elo, ehi) = summary(&mut eff_ratios[i]);
        println!(
            "{} / nginx, req/s: median {med:.2}, range {lo:.2}-{hi:.2}",
            names[i]
        );
        println!(
            "{} / nginx, requests per server CPU-second: median {emed:.2}, range {elo:.2}-{ehi:.2}",
            names[i]
        );
        doc_ratios.insert(
            names[i].into(),
            json!({"ratio_req_per_s": {"median": med, "min": lo, "max": hi},
                "ratio_req_per_server_cpu_s": {"median": emed, "min": elo, "max": ehi}}),
        );
    }
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = json!({"bench": "health_vs_nginx", "conns": CONNS, "duration": DURATION,
            "vs_nginx": doc_ratios, "raw": raw});
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
