//! Two comparisons in one run, server worker pinned to one CPU and the load generator to the
//! other, arms alternating per repetition, ratios per repetition:
//! 1. ZAP vs HTTP on this server, same handler, same load generator (rxload), same
//!    connections, for /health and /rpc; for /health also a ZAP floor (a fixed frame sent
//!    for every read, common/floor.rs): the bound on ZAP / HTTP that no ZAP server exceeds.
//! 2. rxload (each I/O engine: tokio, io_uring) vs wrk on HTTP /health, against this server
//!    and against nginx (Debian, one worker pinned like ours): req/s, and requests per
//!    CPU-second of the load generator.
//!
//! (Both run in the same process and repetitions.)
//! Needs RXLOAD (path to a release rxload) and wrk: run it with `cargo xtask bench loadgen`.
//! RXSTEER_BENCH_JSON=FILE writes every figure.
#[path = "common/floor.rs"]
mod floor;
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/ratios.rs"]
mod ratios;
#[path = "common/wrk.rs"]
mod wrk;

use ratios::summary;
use rxsteer_server::{start, ServeConfig};
use serde_json::json;
use std::{net::SocketAddr, process::Command};

const CONNS: &str = "64";
const DURATION: &str = "4s";
const REPS: usize = 5;

/// rxload's (req/s, requests per its own CPU-second).
fn rxload(target: &str, scenario: &str, cpu: u32, io: &str) -> (f64, f64) {
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
            "--io",
            io,
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
    // The ZAP floor: our server's exact ZAP /health frame, sent for every read and nothing
    // else (common/floor.rs). Every ZAP server costs at least that, so with the same client
    // floor-ZAP / HTTP bounds what ZAP / HTTP any ZAP server could reach against this one.
    let mut ok = Vec::new();
    let ct: [(&[u8], &[u8]); 1] = [(b"Content-Type", rxsteer_server::handlers::CT_TEXT)];
    rxsteer_wire::zaphttp::encode_response(&mut ok, 200, b"", &ct, b"ok", &[]);
    let floor_zap = format!("zap://{}", floor::epoll(server_cpu, ok.leak()));
    let mut doc = serde_json::Map::new();
    for scenario in ["health", "rpc"] {
        let arms: &[&str] = if scenario == "health" {
            &[&http, &zap, &floor_zap]
        } else {
            &[&http, &zap]
        };
        let (mut ratios, mut bounds) = (Vec::new(), Vec::new());
        let mut raw = Vec::new();
        for rep in 0..REPS {
            let mut r = [0f64; 3];
            for k in 0..arms.len() {
                let i = (k + rep) % arms.len();
                r[i] = rxload(arms[i], scenario, load_cpu, "tokio").0;
            }
            let floor_cell = if arms.len() == 3 {
                bounds.push(r[2] / r[0]);
                format!(
                    ", floor-ZAP {:.0} req/s, floor-ZAP/HTTP {:.2}",
                    r[2],
                    r[2] / r[0]
                )
            } else {
                String::new()
            };
            println!(
                "{scenario} rep {rep}: HTTP {:.0} req/s, ZAP {:.0} req/s, ZAP/HTTP {:.2}{floor_cell}",
                r[0],
                r[1],
                r[1] / r[0]
            );
            raw.push(
                json!({"rep": rep, "http_req_per_s": r[0], "zap_req_per_s": r[1],
                "floor_zap_req_per_s": (arms.len() == 3).then_some(r[2])}),
            );
            ratios.push(r[1] / r[0]);
        }
        let (m, lo, hi) = summary(&mut ratios);
        println!("{scenario}: ZAP / HTTP per repetition: median {m:.2}, range {lo:.2}-{hi:.2}");
        let mut fig = json!({"median": m, "min": lo, "max": hi, "raw": raw});
        if !bounds.is_empty() {
            let (bm, blo, bhi) = summary(&mut bounds);
            println!("{scenario}: floor-ZAP / HTTP (the most any ZAP server reaches over this HTTP server with this client): median {bm:.2}, range {blo:.2}-{bhi:.2}");
            fig["floor_zap_over_http"] = json!({"median": bm, "min": blo, "max": bhi});
        }
        doc.insert(format!("zap_over_http_{scenario}"), fig);
    }
    let port = nginx::free_port();
    let _nginx = nginx::nginx(port, server_cpu);
    for (server, base) in [
        ("rxsteer", http.clone()),
        ("nginx", format!("http://127.0.0.1:{port}")),
    ] {
        // Arms: rxload on tokio, rxload on io_uring, wrk; the order rotates each repetition.
        let arms = ["rxload", "rxload --io uring", "wrk"];
        let mut ratios: [[Vec<f64>; 2]; 2] = Default::default();
        let mut raw = Vec::new();
        for rep in 0..REPS {
            let mut r = [(0f64, 0f64); 3];
            for k in 0..3 {
                let i = (k + rep) % 3;
                let url = format!("{base}/health");
                r[i] = match i {
                    0 => rxload(&url, "health", load_cpu, "tokio"),
                    1 => rxload(&url, "health", load_cpu, "uring"),
                    _ => {
                        let w = wrk::run(&url, load_cpu, CONNS, DURATION);
                        (w.req_per_s, w.req_per_cpu_s)
                    }
                };
            }
            println!(
                "{server} rep {rep}: rxload {:.0} req/s ({:.0} per CPU-s), rxload --io uring {:.0} req/s ({:.0} per CPU-s), wrk {:.0} req/s ({:.0} per CPU-s)",
                r[0].0, r[0].1, r[1].0, r[1].1, r[2].0, r[2].1
            );
            raw.push(
                json!({"rep": rep, "rxload": {"req_per_s": r[0].0, "req_per_cpu_s": r[0].1},
                "rxload_uring": {"req_per_s": r[1].0, "req_per_cpu_s": r[1].1},
                "wrk": {"req_per_s": r[2].0, "req_per_cpu_s": r[2].1}}),
            );
            for e in 0..2 {
                ratios[e][0].push(r[e].0 / r[2].0);
                ratios[e][1].push(r[e].1 / r[2].1);
            }
        }
        let mut figures = serde_json::Map::new();
        for (e, [rps, cpu]) in ratios.iter_mut().enumerate() {
            let (m, lo, hi) = summary(rps);
            let (cm, clo, chi) = summary(cpu);
            println!(
                "{server}: {} / wrk, req/s: median {m:.2}, range {lo:.2}-{hi:.2}",
                arms[e]
            );
            println!("{server}: {} / wrk, requests per load-generator CPU-second: median {cm:.2}, range {clo:.2}-{chi:.2}", arms[e]);
            figures.insert(
                if e == 0 { "tokio" } else { "uring" }.into(),
                json!({"req_per_s": {"median": m, "min": lo, "max": hi}, "req_per_cpu_s": {"median": cm, "min": clo, "max": chi}}),
            );
        }
        figures.insert("raw".into(), json!(raw));
        doc.insert(
            format!("rxload_over_wrk_{server}"),
            serde_json::Value::Object(figures),
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
