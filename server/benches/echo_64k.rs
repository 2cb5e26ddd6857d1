//! `/echo` with a 64 KiB body, ZAP vs HTTP on this server, and the vectored write (head and body
//! in one writev) vs copying the body into the frame. Closed loop: each of 8 connections has one
//! request in flight; the server's worker is pinned to one CPU and the clients to another.
//! Arms are rotated within each repetition and ratios are taken per repetition.
//! RXSTEER_BENCH_JSON=FILE writes every figure. Run: cargo xtask bench echo
use rxsteer_server::{start, PerProto, Proto, ServeConfig};
use rxsteer_wire::zaphttp::encode_request;
use serde_json::json;
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

const BODY: usize = 64 << 10;
const CONNS: usize = 8;
const WINDOW: Duration = Duration::from_secs(2);
const REPS: usize = 5;

struct Arm {
    name: &'static str,
    addr: SocketAddr,
    request: Vec<u8>,
    response_len: usize,
}

/// Requests per second of `CONNS` closed-loop connections over `WINDOW`, clients on `cpu`.
fn measure(arm: &Arm, cpu: u32) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..CONNS)
        .map(|_| {
            let (stop, done, req, addr, len) = (
                stop.clone(),
                done.clone(),
                arm.request.clone(),
                arm.addr,
                arm.response_len,
            );
            std::thread::spawn(move || {
                rxsteer_tune::pin::pin_current_thread(cpu).unwrap();
                let mut s = TcpStream::connect(addr).unwrap();
                s.set_nodelay(true).unwrap();
                let mut buf = vec![0u8; len];
                while !stop.load(Ordering::Relaxed) {
                    s.write_all(&req).unwrap();
                    s.read_exact(&mut buf).unwrap();
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300)); // warm-up, excluded
    let (n0, t0) = (done.load(Ordering::SeqCst), Instant::now());
    std::thread::sleep(WINDOW);
    let (n1, t1) = (done.load(Ordering::SeqCst), Instant::now());
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    (n1 - n0) as f64 / (t1 - t0).as_secs_f64()
}

fn server(vectored_min: usize, cpu: u32) -> rxsteer_server::Server {
    let mut cfg = ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 1,
        cpus: Some(vec![cpu]),
        ..ServeConfig::default()
    };
    cfg.conn.vectored_min = vectored_min;
    start(cfg).unwrap()
}

fn main() {
    let cpus = rxsteer_tune::cpus::online_cpus().unwrap();
    let (client_cpu, server_cpu) = (cpus[0], *cpus.last().unwrap());
    let arms = arms(server_cpu);
    println!("POST /echo 64 KiB, {CONNS} closed-loop connections, {WINDOW:?} per arm, {REPS} repetitions, arms rotated");
    println!("server worker on CPU {server_cpu}, clients on CPU {client_cpu}");
    let mut raw = Vec::new();
    let mut per_arm: Vec<Vec<f64>> = vec![Vec::new(); arms.len()];
    let (mut zap_vs_http, mut vec_vs_copy) = (Vec::new(), Vec::new());
    for rep in 0..REPS {
        let mut this = [0f64; 4];
        for k in 0..arms.len() {
            let i = (k + rep) % arms.len();
            this[i] = measure(&arms[i], client_cpu);
            raw.push(json!({"rep": rep, "arm": arms[i].name, "req_per_s": this[i]}));
        }
        println!(
            "rep {rep}: {}",
            arms.iter()
                .zip(this)
                .map(|(a, v)| format!("{} {v:.0}/s", a.name))
                .collect::<Vec<_>>()
                .join(", ")
        );
        for (i, v) in this.iter().enumerate() {
            per_arm[i].push(*v);
        }
        zap_vs_http.push(this[1] / this[0]);
        vec_vs_copy.push(this[1] / this[3]);
    }
    report(&arms, per_arm, zap_vs_http, vec_vs_copy, raw);
}

/// HTTP and ZAP, each on a server that sends large bodies without copying (vectored) and on
/// one that copies every body (the threshold out of reach), all pinned to `cpu`.
fn arms(cpu: u32) -> [Arm; 4] {
    let vectored = server(rxsteer_server::config::VECTORED_MIN, cpu);
    let copying = server(usize::MAX, cpu);
    let body = vec![b'e'; BODY];
    let http_req = [
        format!("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: {BODY}\r\n\r\n").as_bytes(),
        &body,
    ]
    .concat();
    let http_resp = format!("HTTP/1.1 200 OK\r\nServer: rxsteer\r\nContent-Type: application/octet-stream\r\nContent-Length: {BODY}\r\n\r\n").len() + BODY;
    let mut zap_req = Vec::new();
    encode_request(&mut zap_req, b"POST", b"/echo", &[(b"Host", b"x")], &body);
    let zap_resp = 4 + 16 + 48 + 2 + 8 + (4 + 8 + 12 + 24) + BODY;
    let arm =
        |name, server: &rxsteer_server::Server, p: Proto, request: &Vec<u8>, response_len| Arm {
            name,
            addr: server.addr[p].unwrap(),
            request: request.clone(),
            response_len,
        };
    [
        arm(
            "http_vectored",
            &vectored,
            Proto::Http,
            &http_req,
            http_resp,
        ),
        arm("zap_vectored", &vectored, Proto::Zap, &zap_req, zap_resp),
        arm("http_copy", &copying, Proto::Http, &http_req, http_resp),
        arm("zap_copy", &copying, Proto::Zap, &zap_req, zap_resp),
    ]
}

/// Medians and ranges, printed and written where `cargo xtask bench` asked.
fn report(
    arms: &[Arm],
    mut per_arm: Vec<Vec<f64>>,
    mut zap_vs_http: Vec<f64>,
    mut vec_vs_copy: Vec<f64>,
    raw: Vec<serde_json::Value>,
) {
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let range = |v: &[f64]| {
        (
            v.iter().copied().fold(f64::MAX, f64::min),
            v.iter().copied().fold(f64::MIN, f64::max),
        )
    };
    println!("\nmedian req/s:");
    let mut medians = serde_json::Map::new();
    for (i, a) in arms.iter().enumerate() {
        let m = median(&mut per_arm[i]);
        println!("  {:<14} {m:>9.0}", a.name);
        medians.insert(a.name.into(), json!(m));
    }
    let (zl, zh) = range(&zap_vs_http);
    let (vl, vh) = range(&vec_vs_copy);
    let (zm, vm) = (median(&mut zap_vs_http), median(&mut vec_vs_copy));
    println!("ZAP / HTTP (both vectored), per repetition: median {zm:.2}, range {zl:.2}-{zh:.2}");
    println!("ZAP vectored / ZAP copying, per repetition: median {vm:.2}, range {vl:.2}-{vh:.2}");
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = json!({"bench": "echo_64k", "conns": CONNS, "window_s": WINDOW.as_secs_f64(), "medians": medians,
            "zap_over_http": {"median": zm, "min": zl, "max": zh}, "vectored_over_copy": {"median": vm, "min": vl, "max": vh}, "raw": raw});
        std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    }
}
