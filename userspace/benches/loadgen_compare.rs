//! Two comparisons in one run, server worker pinned to one CPU and the load generator to the
//! other, arms alternating per repetition, ratios per repetition:
//! 1. ZAP vs HTTP on this server, same handler, same load generator (rxload), same
//!    connections, for /health and /rpc.
//! 2. rxload vs wrk on HTTP /health, against this server and against nginx (Debian, one
//!    worker pinned like ours): req/s, and requests per CPU-second of the load generator.
//!
//! (Both run in the same process and repetitions.)
//! Needs RXLOAD (path to a release rxload) and wrk: run it with `cargo xtask bench loadgen`.
//! RXSTEER_BENCH_JSON=FILE writes every figure.
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/wrk.rs"]
mod wrk;

use rxsteer::serve::{start, ServeConfig};
use serde_json::json;
use std::{net::SocketAddr, process::Command};

const CONNS: &str = "64";
const DURATION: &str = "4s";
const REPS: usize = 5;

/// rxload's (req/s, requests per its own CPU-second).
fn rxload(target: &str, scenario: &str, cpu: u32) -> (f64, f64) {
    let rxload = std::env::var("RXLOAD")
        .expect("RXLOAD=path to a release rxload (cargo xtask bench loadgen sets it)");
    let json = std::env::temp_dir().join(format!("rxload-bench-{}.json", std::process::id()));
    let out = Command::new("taskset")
        .args([
            "-c",
            &cpu.to_string(),
            &rxload,
            target,
            "--scenario",
            scenario,
            "-c",
            CONNS,
            "-t",
            "1",
            "-d",
            DURATION,
            "--warmup",
            "500ms",
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rxload failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let errors: u64 = v["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(errors, 0, "rxload saw errors: {v}");
    (
        v["req_per_s"].as_f64().unwrap(),
        v["client"]["requests_per_cpu_s"].as_f64().unwrap(),
    )
}

fn summary(v: &mut [f64]) -> (f64, f64, f64) {
    let (lo, hi) = (
        v.iter().copied().fold(f64::MAX, f64::min),
        v.iter().copied().fold(f64::MIN, f64::max),
    );
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], lo, hi)
}

fn main() {
    let cpus = rxsteer_tune::cpus::online_cpus().unwrap();
    let (load_cpu, server_cpu) = (cpus[0], *cpus.last().unwrap());
    let s = start(ServeConfig {
        http: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        zap: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        threads: 1,
        cpus: Some(vec![server_cpu]),
        ..ServeConfig::default()
    })
    .unwrap();
    let (http, zap) = (
        format!("http://{}", s.http.unwrap()),
        format!("zap://{}", s.zap.unwrap()),
    );
    println!("server: 1 worker on CPU {server_cpu}; load generators on CPU {load_cpu}, -c{CONNS}, one thread, {DURATION}; {REPS} repetitions, arms alternating");
    let mut doc = serde_json::Map::new();
    for scenario in ["health", "rpc"] {
        let mut ratios = Vec::new();
        let mut raw = Vec::new();
        for rep in 0..REPS {
            let mut r = [0f64; 2];
            for k in 0..2 {
                let i = (k + rep) % 2;
                r[i] = rxload(if i == 0 { &http } else { &zap }, scenario, load_cpu).0;
            }
            println!(
                "{scenario} rep {rep}: HTTP {:.0} req/s, ZAP {:.0} req/s, ZAP/HTTP {:.2}",
                r[0],
                r[1],
                r[1] / r[0]
            );
            raw.push(json!({"rep": rep, "http_req_per_s": r[0], "zap_req_per_s": r[1]}));
            ratios.push(r[1] / r[0]);
        }
        let (m, lo, hi) = summary(&mut ratios);
        println!("{scenario}: ZAP / HTTP per repetition: median {m:.2}, range {lo:.2}-{hi:.2}");
        doc.insert(
            format!("zap_over_http_{scenario}"),
            json!({"median": m, "min": lo, "max": hi, "raw": raw}),
        );
    }
    let port = nginx::free_port();
    let _nginx = nginx::nginx(port, server_cpu);
    for (server, base) in [
        ("rxsteer", http.clone()),
        ("nginx", format!("http://127.0.0.1:{port}")),
    ] {
        let (mut rps_ratio, mut cpu_ratio, mut raw) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..REPS {
            let mut r = [(0f64, 0f64); 2];
            for k in 0..2 {
                let i = (k + rep) % 2;
                r[i] = if i == 0 {
                    rxload(&format!("{base}/health"), "health", load_cpu)
                } else {
                    {
                        let w = wrk::run(&format!("{base}/health"), load_cpu, CONNS, DURATION);
                        (w.req_per_s, w.req_per_cpu_s)
                    }
                };
            }
            println!(
                "{server} rep {rep}: rxload {:.0} req/s ({:.0} per CPU-s), wrk {:.0} req/s ({:.0} per CPU-s)",
                r[0].0, r[0].1, r[1].0, r[1].1
            );
            raw.push(json!({"rep": rep, "rxload": {"req_per_s": r[0].0, "req_per_cpu_s": r[0].1}, "wrk": {"req_per_s": r[1].0, "req_per_cpu_s": r[1].1}}));
            rps_ratio.push(r[0].0 / r[1].0);
            cpu_ratio.push(r[0].1 / r[1].1);
        }
        let (m, lo, hi) = summary(&mut rps_ratio);
        let (cm, clo, chi) = summary(&mut cpu_ratio);
        println!("{server}: rxload / wrk, req/s: median {m:.2}, range {lo:.2}-{hi:.2}");
        println!("{server}: rxload / wrk, requests per load-generator CPU-second: median {cm:.2}, range {clo:.2}-{chi:.2}");
        doc.insert(
            format!("rxload_over_wrk_{server}"),
            json!({"req_per_s": {"median": m, "min": lo, "max": hi},
            "req_per_cpu_s": {"median": cm, "min": clo, "max": chi}, "raw": raw}),
        );
    }
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        std::fs::write(
            path,
            serde_json::to_string_pretty(&serde_json::Value::Object(doc)).unwrap(),
        )
        .unwrap();
    }
}
