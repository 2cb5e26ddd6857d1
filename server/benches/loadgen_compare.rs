//! Two comparisons in one run, server worker pinned to one CPU and the load generator to the
//! other, with the method of common/method.rs (7 repetitions, arms rotated, per-repetition
//! ratios, noisy runs marked; no warm-up for any arm: every figure covers a load generator's
//! whole run):
//! 1. ZAP vs HTTP on this server (epoll engine), same handler, same load generator (rxload),
//!    same connections, for /health and /rpc (native record vs JSON), judged in requests per
//!    CPU-second of the server's worker thread (/proc over the load's run); for /health also
//!    a ZAP floor (a fixed frame sent for every read, common/floor.rs): the bound on ZAP / HTTP
//!    no ZAP server exceeds.
//! 2. rxload (each I/O engine: tokio, io_uring) vs wrk on HTTP /health, against this server
//!    and against nginx (Debian, one worker pinned like ours), judged in requests per
//!    CPU-second of the load generator's process (RUSAGE_CHILDREN around its run, the same for
//!    rxload and wrk).
//!
//! Needs RXLOAD (path to a release rxload) and wrk: run it with `cargo xtask bench loadgen`.
//! RXSTEER_BENCH_JSON=FILE writes every figure.
#[path = "common/floor.rs"]
mod floor;
#[path = "common/method.rs"]
mod method;
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/wrk.rs"]
mod wrk;

use method::{
    children_cpu_s, cpu_seconds, new_thread, noisy, ratio, summary, Measured, Target, REPS,
};
use rxsteer_server::{start, PerProto, Proto, ServeConfig};
use serde_json::json;
use std::{net::SocketAddr, process::Command};

const CONNS: &str = "64";
const DURATION: &str = "4s";

/// One load's figures: req/s, requests completed, the load generator's CPU seconds.
struct Load {
    req_per_s: f64,
    requests: f64,
    loader_cpu_s: f64,
}

/// rxload's run, its CPU read from outside (RUSAGE_CHILDREN around it), no warm-up.
fn rxload(target: &str, scenario: &str, cpu: u32, io: &str) -> Load {
    let rxload = std::env::var("RXLOAD")
        .expect("RXLOAD=path to a release rxload (cargo xtask bench loadgen sets it)");
    let json = std::env::temp_dir().join(format!("rxload-bench-{}.json", std::process::id()));
    let c0 = children_cpu_s();
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
            "0s",
            "--io",
            io,
            "--json",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let loader_cpu_s = children_cpu_s() - c0;
    assert!(
        out.status.success(),
        "rxload failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: rxsteer_records::LoadResult =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let errors: u64 = r.errors.values().sum();
    assert_eq!(errors, 0, "rxload saw errors: {:?}", r.errors);
    Load {
        req_per_s: r.req_per_s,
        requests: r.requests as f64,
        loader_cpu_s,
    }
}

/// What every part of the run adds to, and where the load generators run.
struct Run {
    load_cpu: u32,
    doc: serde_json::Map<String, serde_json::Value>,
    noise: Vec<String>,
    targets: Vec<Target>,
}

fn main() {
    let cpus = rxsteer_tune::cpus::online_cpus().unwrap();
    let (load_cpu, server_cpu) = (cpus[0], *cpus.last().unwrap());
    let s = start(ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 1,
        cpus: Some(vec![server_cpu]),
        ..ServeConfig::default()
    })
    .unwrap();
    let server_thread = new_thread("rxsteer-serve-0", &[]);
    let (http, zap) = (
        format!("http://{}", s.addr[Proto::Http].unwrap()),
        format!("zap://{}", s.addr[Proto::Zap].unwrap()),
    );
    println!("server: 1 worker (epoll) on CPU {server_cpu}; load generators on CPU {load_cpu}, -c{CONNS}, one thread, {DURATION}, no warm-up; {REPS} repetitions, arms rotated");
    let floor_zap = zap_floor(server_cpu);
    let floor_thread = new_thread("floor-epoll", &[]);
    let mut run = Run {
        load_cpu,
        doc: serde_json::Map::new(),
        noise: Vec::new(),
        targets: Vec::new(),
    };
    for scenario in ["health", "rpc"] {
        let mut arms = vec![
            ("HTTP", &http, &server_thread),
            ("ZAP", &zap, &server_thread),
        ];
        if scenario == "health" {
            arms.push(("floor-ZAP", &floor_zap, &floor_thread));
        }
        zap_over_http(&mut run, scenario, &arms);
    }
    let port = nginx::free_port();
    let _nginx = nginx::nginx(port, server_cpu);
    for (server, base) in [
        ("rxsteer", http.clone()),
        ("nginx", format!("http://127.0.0.1:{port}")),
    ] {
        rxload_over_wrk(&mut run, server, &base);
    }
    for t in &run.targets {
        println!("{t}");
    }
    method::say_noise(&run.noise);
    run.doc.insert("targets".into(), json!(run.targets));
    run.doc.insert("reps".into(), json!(REPS));
    run.doc.insert("noisy".into(), json!(run.noise));
    method::write_json(&serde_json::Value::Object(run.doc));
}

/// The ZAP floor: our server's exact ZAP /health frame, sent for every read and nothing else
/// (common/floor.rs). Every ZAP server costs at least that, so with the same client
/// floor-ZAP / HTTP bounds what ZAP / HTTP any ZAP server could reach against this one.
fn zap_floor(cpu: u32) -> String {
    let mut ok = Vec::new();
    let ct: [(&[u8], &[u8]); 1] = [(b"Content-Type", rxsteer_server::handlers::CT_TEXT)];
    rxsteer_wire::zaphttp::encode_response(&mut ok, 200, b"", &ct, b"ok", &[]);
    format!("zap://{}", floor::epoll(cpu, ok.leak()))
}

/// ZAP over HTTP (and the floor over HTTP where it runs) on one scenario, by requests per
/// server CPU-second: arms are (name, URL, the server thread's stat path).
fn zap_over_http(run: &mut Run, scenario: &str, arms: &[(&str, &String, &String)]) {
    let r = method::rotate(
        arms.len(),
        |rep| format!("{scenario} rep {rep}"),
        |_, i| {
            let (name, url, stat) = arms[i];
            let c0 = cpu_seconds(stat);
            let l = rxload(url, scenario, run.load_cpu, "tokio");
            let cpu = cpu_seconds(stat) - c0;
            let per_cpu_s = l.requests / cpu.max(0.01);
            Measured {
                req_per_s: l.req_per_s,
                per_cpu_s,
                raw: json!({"arm": name, "req_per_s": l.req_per_s, "requests": l.requests,
                    "server_cpu_s": cpu, "req_per_server_cpu_s": per_cpu_s}),
            }
        },
        |i, rps, eff| format!("{} {rps:.0} req/s, {eff:.0}/server CPU-s", arms[i].0),
        "; ",
    );
    let (rps, eff) = (&r.rps, &r.eff);
    for (i, a) in arms.iter().enumerate() {
        run.noise.extend(noisy(
            &format!("{scenario} {}", a.0),
            "req per server CPU-s",
            &eff[i],
        ));
    }
    let (ratio_rps, e) = (ratio(&rps[1], &rps[0]), ratio(&eff[1], &eff[0]));
    println!("{scenario}: ZAP / HTTP, req/s: {ratio_rps}");
    println!("{scenario}: ZAP / HTTP, requests per server CPU-second: {e}");
    let mut fig = json!({"req_per_s": ratio_rps, "req_per_server_cpu_s": e,
        "http": {"req_per_s": summary(&rps[0]), "req_per_server_cpu_s": summary(&eff[0])},
        "zap": {"req_per_s": summary(&rps[1]), "req_per_server_cpu_s": summary(&eff[1])},
        "raw": r.raw});
    let mut bound = None;
    if arms.len() == 3 {
        let b = ratio(&eff[2], &eff[0]);
        println!("{scenario}: floor-ZAP / HTTP, requests per server CPU-second (the most any ZAP server reaches over this HTTP server): {b}");
        fig["floor_zap_over_http_per_server_cpu_s"] = json!(b);
        bound = Some(format!(
            "the ZAP floor bounds it at {:.2} (the most any ZAP server reaches over this HTTP server)",
            b.median
        ));
    }
    let want = if scenario == "health" { 1.0 } else { 1.25 };
    run.targets.push(Target::new(
        &format!("ZAP / HTTP {scenario}, requests per server CPU-second"),
        e,
        want,
        bound,
    ));
    run.doc.insert(format!("zap_over_http_{scenario}"), fig);
}

/// rxload on tokio and on io_uring against wrk, against one server's /health, by requests
/// per load-generator CPU-second.
fn rxload_over_wrk(run: &mut Run, server: &str, base: &str) {
    // Arms: rxload on tokio, rxload on io_uring, wrk; the order rotates each repetition.
    let arms = ["rxload", "rxload --io uring", "wrk"];
    let url = format!("{base}/health");
    let load_cpu = run.load_cpu;
    let r = method::rotate(
        3,
        |rep| format!("{server} rep {rep}"),
        |_, i| {
            let l = match i {
                0 => rxload(&url, "health", load_cpu, "tokio"),
                1 => rxload(&url, "health", load_cpu, "uring"),
                _ => {
                    let w = wrk::run(&url, load_cpu, CONNS, DURATION);
                    Load {
                        req_per_s: w.req_per_s,
                        requests: w.requests,
                        loader_cpu_s: w.cpu_s,
                    }
                }
            };
            let per_cpu_s = l.requests / l.loader_cpu_s.max(0.01);
            Measured {
                req_per_s: l.req_per_s,
                per_cpu_s,
                raw: json!({"loader": arms[i], "req_per_s": l.req_per_s, "requests": l.requests,
                    "loader_cpu_s": l.loader_cpu_s, "req_per_loader_cpu_s": per_cpu_s}),
            }
        },
        |i, rps, eff| format!("{} {rps:.0} req/s ({eff:.0} per loader CPU-s)", arms[i]),
        ", ",
    );
    let (rps, eff) = (&r.rps, &r.eff);
    let mut figures = serde_json::Map::new();
    for i in 0..3 {
        run.noise.extend(noisy(
            &format!("{} against {server}", arms[i]),
            "req per loader CPU-s",
            &eff[i],
        ));
    }
    for e in 0..2 {
        let (rr, c) = (ratio(&rps[e], &rps[2]), ratio(&eff[e], &eff[2]));
        println!("{server}: {} / wrk, req/s: {rr}", arms[e]);
        println!(
            "{server}: {} / wrk, requests per load-generator CPU-second: {c}",
            arms[e]
        );
        figures.insert(
            if e == 0 { "tokio" } else { "uring" }.into(),
            json!({"req_per_s": rr, "req_per_cpu_s": c}),
        );
        if e == 1 && server == "nginx" {
            run.targets.push(Target::new(
                "rxload --io uring / wrk against nginx, requests per load-generator CPU-second",
                c,
                1.2,
                None,
            ));
        }
    }
    figures.insert("raw".into(), json!(r.raw));
    run.doc.insert(
        format!("rxload_over_wrk_{server}"),
        serde_json::Value::Object(figures),
    );
}
