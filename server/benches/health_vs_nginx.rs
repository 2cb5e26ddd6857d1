//! `GET /health` over HTTP: rxsteer serve on each engine (epoll, io_uring) vs nginx (Debian)
//! and two floors, all driven by wrk (Debian) in the same run. One worker each, on the same
//! CPU; wrk pinned to the other CPU; same connections; the method of common/method.rs
//! (7 repetitions, arms rotated, per-repetition ratios, noisy runs marked).
//!
//! The figure judged is requests per CPU-second of the server's own worker (thread or process),
//! read from /proc over exactly wrk's run: on a 2-CPU machine wrk (one CPU) can be the limit
//! for every arm, so req/s alone says little about a server's cost.
//!
//! The floors (common/floor.rs) only read and send a fixed response. floor-epoll is the bound
//! for any server making the same system calls as ours on epoll; floor-uring shows what
//! batching many connections' operations per kernel entry buys. After the timed repetitions,
//! one more run per arm counts the server's context switches and system calls per request
//! with `perf stat` (apart, since counting every system call slows the task counted).
//!
//! Needs nginx, wrk and perf on PATH (`cargo xtask bench nginx` installs them).
//! RXSTEER_BENCH_JSON=FILE writes every figure.
use rxsteer_server::{start, PerProto, Proto, ServeConfig, ServerIo};
use serde_json::json;
#[path = "common/floor.rs"]
mod floor;
#[path = "common/method.rs"]
mod method;
#[path = "common/nginx.rs"]
mod nginx;
#[path = "common/wrk.rs"]
mod wrk;

use method::{
    new_thread, nginx_worker, noisy, ratio, summary, task_id, user_sys_seconds, Measured, Target,
    REPS,
};
use nginx::{free_port, nginx};
use std::{net::SocketAddr, time::Duration};

const CONNS: &str = "64";
const DURATION: &str = "4s";

struct Arm {
    name: &'static str,
    url: String,
    /// /proc stat of the thread or process that serves it.
    stat: String,
    perf: method::PerfTarget,
}

fn ours(io: ServerIo, cpu: u32) -> SocketAddr {
    start(ServeConfig {
        listen: PerProto::each(|p| {
            (p == Proto::Http).then(|| SocketAddr::from(([127, 0, 0, 1], 0)))
        }),
        threads: 1,
        cpus: Some(vec![cpu]),
        io,
        ..ServeConfig::default()
    })
    .unwrap()
    .addr[Proto::Http]
        .unwrap()
}

fn thread_arm(name: &'static str, addr: SocketAddr, stat: String) -> Arm {
    Arm {
        name,
        url: format!("http://{addr}/health"),
        perf: method::PerfTarget::Thread(task_id(&stat)),
        stat,
    }
}

/// The arms' indices the figures are taken against.
const NGINX: usize = 2;
const FLOOR_EPOLL: usize = 3;
const FLOOR_URING: usize = 4;

fn main() {
    let cpus = rxsteer_tune::cpus::online_cpus().unwrap();
    let (wrk_cpu, server_cpu) = (cpus[0], *cpus.last().unwrap());
    let (arms, _nginx) = arms(server_cpu);
    let names: Vec<&str> = arms.iter().map(|a| a.name).collect();
    println!("GET /health, wrk -t1 -c{CONNS} -d{DURATION} on CPU {wrk_cpu}; servers: 1 worker on CPU {server_cpu}; {REPS} repetitions, arm order rotated");
    println!("arms: {names:?}; the floors only read and send a fixed response (a lower bound on a server's cost, not a server)");
    // Per arm, per repetition: where the server's time went per request.
    let (mut user_ns, mut sys_ns) = (
        vec![vec![0f64; REPS]; arms.len()],
        vec![vec![0f64; REPS]; arms.len()],
    );
    let r = method::rotate(
        arms.len(),
        |rep| format!("rep {rep}"),
        |rep, i| {
            let a = &arms[i];
            let (u0, s0) = user_sys_seconds(&a.stat);
            let w = wrk::run(&a.url, wrk_cpu, CONNS, DURATION);
            let (u1, s1) = user_sys_seconds(&a.stat);
            let (user, sys) = (u1 - u0, s1 - s0);
            let cpu = user + sys;
            user_ns[i][rep] = user * 1e9 / w.requests;
            sys_ns[i][rep] = sys * 1e9 / w.requests;
            let per_cpu_s = w.requests / cpu.max(0.01);
            Measured {
                req_per_s: w.req_per_s,
                per_cpu_s,
                raw: json!({"server": a.name, "req_per_s": w.req_per_s, "requests": w.requests,
                    "server_cpu_s": cpu, "server_user_s": user, "server_sys_s": sys,
                    "req_per_server_cpu_s": per_cpu_s, "wrk": w.text}),
            }
        },
        |i, rps, eff| format!("{} {rps:.0} req/s, {eff:.0}/server CPU-s", names[i]),
        "; ",
    );
    let mut noise = Vec::new();
    let mut per_arm = serde_json::Map::new();
    for (i, a) in arms.iter().enumerate() {
        noise.extend(noisy(a.name, "req per server CPU-s", &r.eff[i]));
        let (u, k) = (summary(&user_ns[i]), summary(&sys_ns[i]));
        println!(
            "{}: server ns per request: user (its own code) {:.0}, kernel {:.0} (medians; /proc utime and stime)",
            a.name, u.median, k.median
        );
        per_arm.insert(
            a.name.into(),
            json!({"req_per_s": summary(&r.rps[i]), "req_per_server_cpu_s": summary(&r.eff[i]),
                "user_ns_per_req": u, "kernel_ns_per_req": k}),
        );
    }
    let (vs, vs_floor, uring_over_epoll) = versus(&names, &r);
    let targets = targets(&r.eff);
    for t in &targets {
        println!("{t}");
    }
    let counters = counters(&arms, wrk_cpu);
    method::say_noise(&noise);
    method::write_json(
        &json!({"bench": "health_vs_nginx", "conns": CONNS, "duration": DURATION,
        "reps": REPS, "noisy": noise, "arms": per_arm, "vs_nginx": vs,
        "vs_floor_epoll": vs_floor, "uring_over_epoll": uring_over_epoll, "targets": targets,
        "counters": counters, "raw": r.raw}),
    );
}

/// Our server on each engine, nginx and the two floors, all serving on `cpu` (nginx's
/// process is returned to keep it running).
fn arms(cpu: u32) -> (Vec<Arm>, nginx::Nginx) {
    // Both of our servers name their worker rxsteer-serve-0: told apart by which came first.
    let epoll = ours(ServerIo::Epoll, cpu);
    let epoll_thread = new_thread("rxsteer-serve-0", &[]);
    let uring = ours(ServerIo::Uring, cpu);
    let uring_thread = new_thread("rxsteer-serve-0", std::slice::from_ref(&epoll_thread));
    let port = free_port();
    let nginx_proc = nginx(port, cpu);
    let nginx_stat = nginx_worker(nginx_proc.id());
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
    let (f_epoll, f_uring) = (floor::epoll(cpu, ok), floor::uring(cpu, ok));
    let arms = vec![
        thread_arm("rxsteer-epoll", epoll, epoll_thread),
        thread_arm("rxsteer-uring", uring, uring_thread),
        Arm {
            name: "nginx",
            url: format!("http://127.0.0.1:{port}/health"),
            perf: method::PerfTarget::Process(task_id(&nginx_stat)),
            stat: nginx_stat,
        },
        thread_arm("floor-epoll", f_epoll, new_thread("floor-epoll", &[])),
        thread_arm("floor-uring", f_uring, new_thread("floor-uring", &[])),
    ];
    (arms, nginx_proc)
}

type Figures = serde_json::Map<String, serde_json::Value>;

/// Every arm over nginx, our engines over floor-epoll, and io_uring over epoll.
fn versus(names: &[&str], r: &method::Rotated) -> (Figures, Figures, method::Summary) {
    let (rps, eff) = (&r.rps, &r.eff);
    let mut vs = Figures::new();
    for (i, name) in names.iter().enumerate() {
        if i == NGINX {
            continue;
        }
        let (rr, e) = (ratio(&rps[i], &rps[NGINX]), ratio(&eff[i], &eff[NGINX]));
        println!("{name} / nginx, req/s: {rr}");
        println!("{name} / nginx, requests per server CPU-second: {e}");
        vs.insert(
            (*name).into(),
            json!({"ratio_req_per_s": rr, "ratio_req_per_server_cpu_s": e}),
        );
    }
    let mut vs_floor = Figures::new();
    for i in [0, 1] {
        let e = ratio(&eff[i], &eff[FLOOR_EPOLL]);
        println!(
            "{} / floor-epoll, requests per server CPU-second: {e}",
            names[i]
        );
        vs_floor.insert(names[i].into(), json!(e));
    }
    let e = ratio(&eff[1], &eff[0]);
    println!("rxsteer-uring / rxsteer-epoll, requests per server CPU-second: {e}");
    (vs, vs_floor, e)
}

/// The README's targets for the io_uring engine.
fn targets(eff: &[Vec<f64>]) -> [Target; 2] {
    let floor_uring = ratio(&eff[FLOOR_URING], &eff[NGINX]).median;
    [
        Target::new(
            "rxsteer-uring / floor-epoll, requests per server CPU-second",
            ratio(&eff[1], &eff[FLOOR_EPOLL]),
            1.0,
            None,
        ),
        Target::new(
            "rxsteer-uring / nginx, requests per server CPU-second",
            ratio(&eff[1], &eff[NGINX]),
            1.5,
            Some(format!(
                "the io_uring floor, which does nothing but its reads and sends, reaches {floor_uring:.2}x nginx: the kernel's part of a request bounds every server here (user and kernel ns above)"
            )),
        ),
    ]
}

/// Where the server's time goes, per request: one counted run per arm.
fn counters(arms: &[Arm], wrk_cpu: u32) -> Figures {
    let mut counters = Figures::new();
    let window = Duration::from_secs(3);
    for a in arms {
        let counted = std::thread::scope(|s| {
            let perf = s.spawn(|| method::perf_counts(a.perf, window));
            let w = wrk::run(&a.url, wrk_cpu, CONNS, "3s");
            perf.join().unwrap().map(|c| (c, w.requests))
        });
        match counted {
            Some(((cs, sys), n)) => {
                println!(
                    "{}: {:.3} context switches and {:.3} system calls per request (perf stat, {n:.0} requests)",
                    a.name,
                    cs / n,
                    sys / n
                );
                counters.insert(
                    a.name.into(),
                    json!({"context_switches_per_req": cs / n, "syscalls_per_req": sys / n, "requests": n}),
                );
            }
            None => println!("{}: perf stat gave no counts", a.name),
        }
    }
    counters
}
