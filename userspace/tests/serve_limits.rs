//! `rxsteer serve` at its limits, on both engines, watched from outside: out of descriptors it
//! pauses accepting instead of spinning a core, and past `--max-connections` a new connection
//! is closed at once and counted while the ones it holds are still answered. No privileges.
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    process::Command,
    time::{Duration, Instant},
};

mod served;
use served::{Served, RXSTEER};

/// One test at a time: each watches a server's CPU or latency, which another test's server
/// and clients on this machine's few CPUs would disturb.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// utime + stime of `pid`, in clock ticks (/proc/PID/stat fields 14 and 15).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = after.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

fn ticks_per_s() -> f64 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

fn health(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    resp
}

/// `n` connections opened and held (each connect bounded by 5 s).
fn hold(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap())
        .collect()
}

fn starved_server_does_not_spin(io: &str) {
    let _alone = alone();
    // 64 descriptors for the whole process, and a connection limit above that: the accepts
    // themselves run out (EMFILE) while 200 connections wait in the backlog.
    let mut c = Command::new("prlimit");
    c.args(["--nofile=64:64", "--", RXSTEER])
        .args(served::SERVE_ARGS)
        .args(["--io", io, "--max-connections", "1000"]);
    let server = Served::spawn(c);
    let held = hold(server.http, 200);
    std::thread::sleep(Duration::from_millis(500));
    let (t0, c0) = (Instant::now(), cpu_ticks(server.pid()));
    std::thread::sleep(Duration::from_secs(3));
    let used = (cpu_ticks(server.pid()) - c0) as f64 / ticks_per_s();
    let share = used / t0.elapsed().as_secs_f64();
    assert!(
        share < 0.05,
        "{io}: {:.1} % of a core while out of descriptors (must pause, not spin)",
        share * 100.0
    );
    drop(held);
    // Accepting resumes by itself once descriptors are free again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let resp = health(server.http);
        if resp.starts_with("HTTP/1.1 200 OK") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{io}: no answer after the connections closed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn out_of_descriptors_the_epoll_engine_pauses_accepting() {
    starved_server_does_not_spin("epoll");
}

#[test]
fn out_of_descriptors_the_uring_engine_pauses_accepting() {
    starved_server_does_not_spin("uring");
}

/// Whether the server closed `s` within 2 s: a read of 0 or a reset.
fn closed_at_once(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => true,
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
        _ => false,
    }
}

fn past_the_limit_connections_are_refused(io: &str) {
    let _alone = alone();
    let limit = 20;
    let mut c = Command::new(RXSTEER);
    c.args(served::SERVE_ARGS)
        .args(["--io", io, "--max-connections", &limit.to_string()]);
    let server = Served::spawn(c);
    let mut first = hold(server.http, limit);
    // Every held connection is accepted before the extra ones arrive.
    for s in &mut first {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /health HTTP/1.1\r\n\r\n").unwrap();
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK"), "{io}");
    }
    // Each refused with a reset, which may come back before connect(2) has returned.
    let refused = (0..50)
        .filter(
            |_| match TcpStream::connect_timeout(&server.http, Duration::from_secs(5)) {
                Ok(mut s) => closed_at_once(&mut s),
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            },
        )
        .count();
    assert_eq!(
        refused, 50,
        "{io}: every connection past the limit is closed at once"
    );
    // The first ones are still served.
    for s in first.iter_mut().take(5) {
        s.write_all(b"GET /health HTTP/1.1\r\n\r\n").unwrap();
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).unwrap();
        assert!(buf[..n].starts_with(b"HTTP/1.1 200 OK"), "{io}");
    }
    let said = server.stop();
    assert!(
        said.contains("refused 50 connection(s) at the limit"),
        "{io}: counted in the exit summary: {said}"
    );
}

#[test]
fn past_the_limit_the_epoll_engine_refuses_and_counts() {
    past_the_limit_connections_are_refused("epoll");
}

#[test]
fn past_the_limit_the_uring_engine_refuses_and_counts() {
    past_the_limit_connections_are_refused("uring");
}

/// Flooders, and the new connections each makes per second: an open loop, as an attacker's,
/// the same offered flood for both engines (a closed loop would flood faster the faster a
/// server refuses). 4 000 connections a second in all, each one past the limit. The flooders
/// are not pinned: on this project's 2 CPUs their own work shares the server's and rxload's
/// CPUs, so the bound covers that too (pinned beside rxload they delay rxload itself).
const FLOODERS: u32 = 2;
const FLOOD_PER_S: u32 = 2_000;

/// Connects to `addr` FLOOD_PER_S times a second until `stop`, waiting for each refusal;
/// returns how many connections were made. Bounded: each connect and each wait by 2 s.
fn flood(addr: SocketAddr, stop: &std::sync::atomic::AtomicBool) -> u64 {
    let every = Duration::from_secs(1) / FLOOD_PER_S;
    let (mut made, mut next) = (0, Instant::now());
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(mut s) => {
                made += 1;
                closed_at_once(&mut s);
            }
            // Refused so fast that the reset came back before connect(2) returned.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => made += 1,
            Err(_) => {}
        }
        next += every;
        if let Some(wait) = next.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    made
}

/// nginx's promise for `worker_connections`, held here: a flood of new connections beyond
/// the limit is refused at the door, and the connections already established keep their
/// latency (p99 within 2x of the quiet run, as the barrage holds for hostile input).
fn established_keep_their_latency_under_a_flood(io: &str) {
    let _alone = alone();
    let limit = 16;
    let server = Served::start(1, &["--io", io, "--max-connections", &limit.to_string()]);
    let url = format!("http://{}", server.http);
    let load = ["-c", "8", "-t", "1", "-d", "3s", "--warmup", "500ms"];
    let quiet = served::rxload(&url, 0, &load);
    // rxload's 8 plus 8 held: the worker is at its limit, so every flooded connection is
    // one past it (the flood starts after rxload connected).
    let _held = hold(server.http, limit - 8);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (loaded, made) = std::thread::scope(|s| {
        let loaded = s.spawn(|| served::rxload(&url, 0, &load));
        // The flood starts once rxload holds its connections, inside its warm-up (500 ms).
        std::thread::sleep(Duration::from_millis(250));
        let flooders: Vec<_> = (0..FLOODERS)
            .map(|_| s.spawn(|| flood(server.http, &stop)))
            .collect();
        let loaded = loaded.join().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let made: u64 = flooders.into_iter().map(|f| f.join().unwrap()).sum();
        (loaded, made)
    });
    let said = server.stop();
    let (q, l) = (served::p99(&quiet), served::p99(&loaded));
    let figures = format!(
        "{io}: quiet p99 {q} us, {} req/s; under the flood p99 {l} us, {} req/s; {made} \
         connection(s) flooded; server said: {said}",
        quiet["req_per_s"], loaded["req_per_s"]
    );
    println!("{figures}");
    // rxload runs 3.5 s, the flood about 3.2 s of it: most of what was offered was made.
    let offered = u64::from(FLOODERS * FLOOD_PER_S) * 3;
    assert!(
        made > offered / 2,
        "the flood must be one ({offered} offered): {figures}"
    );
    assert_eq!(served::errors(&loaded), 0, "{figures}");
    assert!(
        said.contains("connection(s) at the limit"),
        "the flood was refused and counted: {figures}"
    );
    // As in the barrage test: 2x holds for optimised code; an unoptimised build serves about
    // a third of the requests, so the flood takes a larger share of its CPU and 4x guards
    // against collapse there (a worker stalled by the flood shows p99 in seconds). Its quiet
    // p99 is taken at no less than 500 us: a fresh-clone CI run on 2 shared vCPUs saw a
    // quiet 319 us and 1702 us under the flood (5.3x, 1.7 ms: no collapse), so the bound
    // there is 2 ms, still three orders of magnitude under a stalled worker.
    let (bound, floor) = if cfg!(debug_assertions) {
        (4, 500)
    } else {
        (2, 100)
    };
    assert!(l <= bound * q.max(floor), "p99 beyond {bound}x: {figures}");
}

#[test]
fn under_a_connection_flood_the_epoll_engine_keeps_established_latency() {
    established_keep_their_latency_under_a_flood("epoll");
}

#[test]
fn under_a_connection_flood_the_uring_engine_keeps_established_latency() {
    established_keep_their_latency_under_a_flood("uring");
}
