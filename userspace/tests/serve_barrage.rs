//! Good traffic keeps flowing while hostile clients attack the server: random bytes,
//! truncated ZAP frames, huge ZAP length prefixes, header-count overruns, endless headers,
//! slowloris trickles, and thousands of idle connections, all at once. Good traffic (rxload on
//! both transports) must get every request answered correctly, with its p99 within 2x of the
//! quiet run (optimised code; a debug test build checks 4x, see below); the server's memory stays
//! bounded; timeouts close what clients leave open, and the descriptors come back. `cargo
//! xtask bench barrage` runs it in release, longer, and stores the figures
//! (RXSTEER_BARRAGE_SECS). No privileges needed; loopback only; bounded in time.
mod served;

use rxsteer_wire::zaphttp::encode_request;
use serde_json::{json, Value};
use served::{errors, p99, rxload, Served};
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread,
    time::{Duration, Instant},
};

const IDLE_CONNECTIONS: usize = 2000;

fn secs() -> u64 {
    std::env::var("RXSTEER_BARRAGE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

/// A small xorshift: hostile bytes that differ per connection, reproducibly.
fn noise(seed: &mut u64, out: &mut [u8]) {
    for b in out {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *b = *seed as u8;
    }
}

/// Connects, sends `bytes`, and reads until the server closes (at most 3 s). Returns what
/// came back, or None when the connection could not be made.
fn send_and_drain(addr: SocketAddr, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(1)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
    s.set_write_timeout(Some(Duration::from_secs(3))).ok()?;
    let _ = s.write_all(bytes);
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = s.read(&mut buf) {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    Some(got)
}

/// What the hostile clients saw: each kind's attempts and defined answers.
#[derive(Default)]
struct Seen {
    attempts: AtomicU64,
    answered: AtomicU64,
}

fn attacker(
    stop: &Arc<AtomicBool>,
    seen: &Arc<Seen>,
    pace: Duration,
    mut act: impl FnMut(u64) -> bool + Send + 'static,
) -> thread::JoinHandle<()> {
    let (stop, seen) = (Arc::clone(stop), Arc::clone(seen));
    thread::spawn(move || {
        let mut i = 0;
        while !stop.load(Ordering::Relaxed) {
            seen.attempts.fetch_add(1, Ordering::Relaxed);
            if act(i) {
                seen.answered.fetch_add(1, Ordering::Relaxed);
            }
            i += 1;
            thread::sleep(pace);
        }
    })
}

fn load(srv: &Served, secs: u64) -> (Value, Value) {
    let d = format!("{secs}s");
    let args = ["-c", "8", "-t", "1", "-d", &d, "--warmup", "500ms"];
    let (http, zap) = (format!("http://{}", srv.http), format!("zap://{}", srv.zap));
    thread::scope(|s| {
        let h = s.spawn(|| rxload(&http, 0, &args));
        let z = rxload(&zap, 0, &args);
        (h.join().unwrap(), z)
    })
}

/// One engine at a time: two barrages at once would each measure the other's load.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn good_traffic_survives_a_hostile_barrage_and_memory_stays_bounded_on_epoll() {
    barrage("epoll");
}

#[test]
fn good_traffic_survives_a_hostile_barrage_and_memory_stays_bounded_on_uring() {
    barrage("uring");
}

fn barrage(io: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let secs = secs();
    let idle = format!("{}s", secs + 4);
    let srv = Served::start(
        1,
        &[
            "--idle-timeout",
            &idle,
            "--request-timeout",
            "2s",
            "--io",
            io,
        ],
    );
    // Sockets before any client: the two listeners. All descriptors once warm: tokio creates
    // its epoll and eventfd descriptors lazily, with the first connections.
    let listeners = srv.sockets();
    let (quiet_http, quiet_zap) = load(&srv, secs);
    thread::sleep(Duration::from_millis(500));
    let warm_fds = srv.fds();
    let warm_kinds = srv.fd_kinds();

    let stop = Arc::new(AtomicBool::new(false));
    let kinds = [
        "random bytes",
        "truncated ZAP frames",
        "huge ZAP lengths",
        "header-count overruns",
        "endless headers",
        "slowloris",
    ];
    let seen: Vec<Arc<Seen>> = kinds.iter().map(|_| Arc::new(Seen::default())).collect();
    let (http, zap) = (srv.http, srv.zap);
    let pace = Duration::from_millis(20);
    let mut attackers = vec![
        // Garbage, alternately at each transport: answered (400) or closed, never hung.
        attacker(&stop, &seen[0], pace, move |i| {
            let mut seed = i + 1;
            let mut b = [0u8; 2048];
            noise(&mut seed, &mut b);
            send_and_drain(if i % 2 == 0 { http } else { zap }, &b).is_some()
        }),
        // A real frame cut short, then the client closes its side.
        attacker(&stop, &seen[1], pace, move |i| {
            let mut r = Vec::new();
            encode_request(&mut r, b"POST", b"/echo", &[], &[9; 512]);
            r.truncate(5 + (i as usize * 37) % (r.len() - 6));
            let Ok(mut s) = TcpStream::connect(zap) else {
                return false;
            };
            let _ = s.write_all(&r);
            let _ = s.shutdown(std::net::Shutdown::Write);
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            matches!(s.read(&mut [0u8; 16]), Ok(0))
        }),
        // A length prefix near 4 GiB: closed without a reply and without allocating it.
        attacker(&stop, &seen[2], pace, move |_| {
            let mut b = vec![0xff, 0xff, 0xff, 0xf0];
            b.extend_from_slice(&[0u8; 100]);
            send_and_drain(zap, &b).is_some_and(|r| r.is_empty())
        }),
        // More headers than the stack array holds: 431.
        attacker(&stop, &seen[3], pace, move |_| {
            let mut req = b"GET /health HTTP/1.1\r\n".to_vec();
            for k in 0..100 {
                req.extend_from_slice(format!("X-H{k}: v\r\n").as_bytes());
            }
            req.extend_from_slice(b"\r\n");
            send_and_drain(http, &req).is_some_and(|r| r.starts_with(b"HTTP/1.1 431"))
        }),
        // Header lines that never end: 431 once the header section passes its limit.
        attacker(&stop, &seen[4], pace, move |_| {
            let Ok(mut s) = TcpStream::connect(http) else {
                return false;
            };
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            let _ = s.write_all(b"GET /health HTTP/1.1\r\n");
            for _ in 0..2000 {
                if s.write_all(b"X-Endless: aaaaaaaaaaaaaaaaaaaa\r\n").is_err() {
                    break;
                }
            }
            let mut got = [0u8; 12];
            s.read_exact(&mut got).is_ok() && got.starts_with(b"HTTP/1.1 431")
        }),
    ];
    // Slowloris: 50 connections, each trickling one byte every 100 ms; the request deadline
    // (2 s) must close every one of them.
    {
        let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen[5]));
        attackers.push(thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut conns: Vec<TcpStream> = (0..50)
                    .filter_map(|i| TcpStream::connect(if i % 2 == 0 { http } else { zap }).ok())
                    .collect();
                seen.attempts
                    .fetch_add(conns.len() as u64, Ordering::Relaxed);
                let started = Instant::now();
                while !conns.is_empty() && started.elapsed() < Duration::from_secs(6) {
                    conns.retain_mut(|c| {
                        if c.write_all(b"G").is_err() {
                            seen.answered.fetch_add(1, Ordering::Relaxed);
                            return false;
                        }
                        true
                    });
                    thread::sleep(Duration::from_millis(100));
                }
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        }));
    }
    // Thousands of idle connections, held for the whole barrage.
    let idle_conns: Vec<TcpStream> = (0..IDLE_CONNECTIONS)
        .filter_map(|i| TcpStream::connect(if i % 2 == 0 { http } else { zap }).ok())
        .collect();
    assert_eq!(
        idle_conns.len(),
        IDLE_CONNECTIONS,
        "every idle connection was accepted"
    );

    let (bad_http, bad_zap) = load(&srv, secs);
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        a.join().unwrap();
    }
    let peak_kib = srv.peak_rss_kib();

    let figures = json!({
        "seconds": secs,
        "idle_connections": IDLE_CONNECTIONS,
        "http": {"quiet_req_per_s": quiet_http["req_per_s"], "barrage_req_per_s": bad_http["req_per_s"],
                 "quiet_p99_us": p99(&quiet_http), "barrage_p99_us": p99(&bad_http),
                 "p99_ratio": p99(&bad_http) as f64 / p99(&quiet_http).max(1) as f64,
                 "requests": bad_http["requests"], "errors": errors(&bad_http)},
        "zap": {"quiet_req_per_s": quiet_zap["req_per_s"], "barrage_req_per_s": bad_zap["req_per_s"],
                "quiet_p99_us": p99(&quiet_zap), "barrage_p99_us": p99(&bad_zap),
                "p99_ratio": p99(&bad_zap) as f64 / p99(&quiet_zap).max(1) as f64,
                "requests": bad_zap["requests"], "errors": errors(&bad_zap)},
        "hostile": kinds.iter().zip(&seen).map(|(k, s)| (k.to_string(), json!({
            "attempts": s.attempts.load(Ordering::Relaxed), "defined_answer": s.answered.load(Ordering::Relaxed)})))
            .collect::<serde_json::Map<_, _>>(),
        "server_peak_rss_mib": peak_kib as f64 / 1024.0,
    });
    println!("barrage figures: {figures}");

    for (name, v, quiet) in [
        ("HTTP", &bad_http, &quiet_http),
        ("ZAP", &bad_zap, &quiet_zap),
    ] {
        // rxload validates every response (status and body): every good request must have
        // got its correct answer, not most of them.
        let ok = v["requests"].as_u64().unwrap();
        assert!(
            ok > 0 && errors(v) == 0,
            "{name}: {ok} answered, {} failed under the barrage: {figures}",
            errors(v)
        );
        // The target, within 2x of the quiet p99, holds for optimised code: `cargo xtask
        // bench barrage` runs this test in release and asserts it. An unoptimised test build
        // serves about a third of the requests, so the hostile clients take a larger share of
        // its one CPU (2.3-2.8x was seen once in CI); there this guards against collapse (a
        // server stalled by slow or idle clients shows p99 in seconds), not the figure.
        let bound = if cfg!(debug_assertions) { 4 } else { 2 };
        assert!(
            p99(v) <= bound * p99(quiet).max(100),
            "{name}: p99 {} us under the barrage vs {} us quiet (bound {bound}x): {figures}",
            p99(v),
            p99(quiet)
        );
    }
    for (k, s) in kinds.iter().zip(&seen) {
        let (tried, answered) = (
            s.attempts.load(Ordering::Relaxed),
            s.answered.load(Ordering::Relaxed),
        );
        // Every hostile attempt got its defined answer (a status, or a close): a server that
        // hangs on one of them fails here.
        assert!(
            tried > 0 && answered == tried,
            "{k}: {answered} of {tried} got their defined answer: {figures}"
        );
    }
    // Memory bounded: 2000 idle connections and the attacks do not grow the server past this.
    assert!(peak_kib < 128 * 1024, "server peak RSS {peak_kib} KiB");
    // Nobody closes the idle connections: the idle timeout must, and every descriptor returns.
    let sockets = srv.settle(Served::sockets, listeners, Duration::from_secs(secs + 10));
    let fds = srv.fds();
    assert!(
        sockets <= listeners && fds <= warm_fds,
        "{sockets} sockets ({listeners} listeners), {fds} descriptors ({warm_fds} warm): {:?} then {:?}",
        warm_kinds,
        srv.fd_kinds()
    );
    drop(idle_conns);
}
