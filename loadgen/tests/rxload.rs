//! rxload as a user runs it, against the project's servers (in this process) and against tiny
//! misbehaving servers written here. Loopback only; every run is bounded.
use rxsteer_server::{start, PerProto, Proto, ServeConfig, Server, ServerIo};
use rxsteer_wire::zaphttp::encode_response;
use serde_json::Value;
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener},
    process::Command,
    sync::atomic::Ordering,
};

const RXLOAD: &str = env!("CARGO_BIN_EXE_rxload");

fn server() -> Server {
    start(ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 1,
        ..ServeConfig::default()
    })
    .unwrap()
}

/// Runs rxload with `--json`; returns (exit code, JSON, stderr).
fn rxload(args: &[&str]) -> (i32, Value, String) {
    let json =
        std::env::temp_dir().join(format!("rxload-{}-{}.json", std::process::id(), rand_tag()));
    let out = Command::new(RXLOAD)
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let v = std::fs::read(&json)
        .ok()
        .map_or(Value::Null, |b| serde_json::from_slice(&b).unwrap());
    let _ = std::fs::remove_file(&json);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn rand_tag() -> u64 {
    use std::sync::atomic::AtomicU64;
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

fn errors(v: &Value) -> u64 {
    v["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum()
}

/// A short run with no warm-up, as the error tests use: `conns` connections on one thread for
/// `duration`, on engine `io`.
fn short_run(target: &str, io: &str, conns: &str, duration: &str) -> (i32, Value, String) {
    rxload(&[
        target, "--io", io, "-c", conns, "-t", "1", "-d", duration, "--warmup", "0s",
    ])
}

#[test]
fn every_scenario_on_both_transports_validates_and_allocates_nothing() {
    let s = server();
    for io in ["tokio", "uring"] {
        for (scheme, addr) in [
            ("http", s.addr[Proto::Http].unwrap()),
            ("zap", s.addr[Proto::Zap].unwrap()),
        ] {
            for scenario in ["health", "rpc", "echo", "upload"] {
                // "" is the scenario's own default (64 KiB for upload).
                for size in match scenario {
                    "echo" => &["tiny", "chat", "large"][..],
                    "upload" => &["", "small"][..],
                    _ => &["tiny"][..],
                } {
                    let target = format!("{scheme}://{addr}");
                    let mut args = vec![
                        target.as_str(),
                        "--io",
                        io,
                        "--scenario",
                        scenario,
                        "-c",
                        "4",
                        "-t",
                        "1",
                        "-d",
                        "600ms",
                        "--warmup",
                        "300ms",
                    ];
                    if !size.is_empty() {
                        args.extend(["--body-size", size]);
                    }
                    let (code, v, err) = rxload(&args);
                    let what = format!("--io {io}: {scheme} {scenario} {size}");
                    assert_eq!(code, 0, "{what}: {err}");
                    assert!(v["requests"].as_u64().unwrap() > 50, "{what}: {v}");
                    assert_eq!(errors(&v), 0, "{what}: {v}");
                    assert_eq!(
                        v["client"]["allocs_per_request"].as_f64().unwrap(),
                        0.0,
                        "{what}: zero allocation per request"
                    );
                    for q in ["p50", "p90", "p99", "p99.9", "p99.99", "max"] {
                        assert!(
                            v["latency_us"]["quantiles"][q].as_u64().unwrap() > 0,
                            "{what}: {q}"
                        );
                    }
                    // Statuses are counted for measured requests only (not the warm-up's).
                    assert_eq!(v["status"]["200"], v["requests"], "{what}: {v}");
                    if scenario == "upload" {
                        // The body went up; the answer (its byte count) is short.
                        let sent = if size.is_empty() { 65536 } else { 256 };
                        let answers = v["status"]["200"].as_f64().unwrap();
                        assert!(
                            v["request_wire_bytes"].as_u64().unwrap() > sent,
                            "{what}: {v}"
                        );
                        assert!(
                            v["bytes_in"].as_f64().unwrap() / answers < 300.0,
                            "{what}: {v}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn counts_agree_with_the_servers_own_count() {
    for io in ["tokio", "uring"] {
        // A server of its own per engine, so its count is this run's alone.
        let s = server();
        let target = format!("http://{}", s.addr[Proto::Http].unwrap());
        let (code, v, err) = rxload(&[
            &target, "--io", io, "-c", "8", "-t", "1", "-n", "20000", "--warmup", "0s",
        ]);
        assert_eq!(code, 0, "--io {io}: {err}");
        let ours = v["requests"].as_u64().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let served = s
            .served
            .of(rxsteer_server::Proto::Http)
            .load(Ordering::SeqCst);
        // -n sends exactly what it is asked: no connection sends one more once the count
        // is reached, so the server's own count is rxload's.
        assert_eq!(ours, 20000, "--io {io}");
        assert_eq!(served, ours, "--io {io}: rxload {ours}, server {served}");
    }
}

/// `-n N` sends N measured requests over all connections, however few: every connection
/// that is already going once sent one more after the count (`-c 4 -n 1` sent 4). With a
/// warm-up the warm-up's requests come on top, counted apart; pipelined batches are cut to
/// what is left.
#[test]
fn n_sends_exactly_n_on_both_engines_however_many_connections() {
    for io in ["tokio", "uring"] {
        for (c, n) in [("4", 1u64), ("4", 24), ("4", 100), ("8", 500)] {
            let s = server();
            let target = format!("http://{}", s.addr[Proto::Http].unwrap());
            let (code, v, err) = rxload(&[
                &target,
                "--io",
                io,
                "-c",
                c,
                "-t",
                "1",
                "-n",
                &n.to_string(),
                "--warmup",
                "0s",
            ]);
            assert_eq!(code, 0, "--io {io} -c {c} -n {n}: {err}");
            std::thread::sleep(std::time::Duration::from_millis(100));
            let served = s.served.of(Proto::Http).load(Ordering::SeqCst);
            assert_eq!(v["requests"].as_u64(), Some(n), "--io {io} -c {c} -n {n}");
            assert_eq!(served, n, "--io {io} -c {c} -n {n}: the server's own count");
        }
    }
    // Pipelined (tokio only): a batch of 4 cut to the 2 left.
    let s = server();
    let target = format!("http://{}", s.addr[Proto::Http].unwrap());
    let (code, v, err) = rxload(&[
        &target,
        "-c",
        "3",
        "-t",
        "1",
        "--pipeline",
        "4",
        "-n",
        "10",
        "--warmup",
        "0s",
    ]);
    assert_eq!(code, 0, "{err}");
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert_eq!(v["requests"].as_u64(), Some(10));
    assert_eq!(s.served.of(Proto::Http).load(Ordering::SeqCst), 10);
}

/// Every request sent is in one place: the warm-up's apart, the measured ones, those
/// answered after the window, and those still in flight when the run ended. What the server
/// answered is what rxload saw answered, or was in flight at the end, on both engines.
#[test]
fn every_request_sent_is_accounted_for_the_warm_up_apart() {
    use rxsteer_records::load::Accounting;
    let account = |v: &Value| -> Accounting {
        serde_json::from_value(v["accounting"].clone()).expect("an accounting block")
    };
    for io in ["tokio", "uring"] {
        let s = server();
        let target = format!("http://{}", s.addr[Proto::Http].unwrap());
        let (code, v, err) = rxload(&[
            &target, "--io", io, "-c", "4", "-t", "1", "-d", "700ms", "--warmup", "300ms",
        ]);
        assert_eq!(code, 0, "--io {io}: {err}");
        let a = account(&v);
        assert!(a.balances(), "--io {io}: {a:?}");
        assert!(
            a.warmup.answered > 0,
            "--io {io}: the warm-up's, apart: {a:?}"
        );
        assert_eq!(a.measured.answered, v["requests"].as_u64().unwrap());
        std::thread::sleep(std::time::Duration::from_millis(100));
        let served = s.served.of(Proto::Http).load(Ordering::SeqCst);
        // The server may have answered what was in flight at the end, after rxload stopped
        // reading: those are between.
        let answered = a.warmup.answered + a.measured.answered + a.after_window.answered;
        assert!(
            (answered..=answered + a.unanswered_at_end).contains(&served),
            "--io {io}: the server's own count {served}, {a:?}"
        );
    }
    // A server that reads and never answers: at the deadline every request is still in
    // flight, and said so, not lost.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut c = c;
                let mut buf = [0u8; 4096];
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            });
        }
    });
    for io in ["tokio", "uring"] {
        let (code, v, err) = rxload(&[
            &format!("http://{addr}"),
            "--io",
            io,
            "-c",
            "3",
            "-t",
            "1",
            "-d",
            "500ms",
            "--warmup",
            "0s",
        ]);
        assert_eq!(code, 1, "--io {io}: no request succeeded: {err}");
        let a = account(&v);
        assert_eq!((a.sent, a.unanswered_at_end), (3, 3), "--io {io}: {a:?}");
        assert!(a.balances());
    }
}

#[test]
fn a_refused_connection_is_counted_and_fails_the_run() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (code, v, _) = short_run(&format!("http://127.0.0.1:{port}"), "tokio", "2", "300ms");
    assert_eq!(code, 1, "no successful request: non-zero exit");
    assert!(v["errors"]["connect"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["requests"], 0);
}

/// A server that answers every request on a connection with `reply` (then closes if `close`).
fn misbehaving(reply: &'static [u8], close: bool) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut c = c;
                let mut buf = [0u8; 4096];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 || c.write_all(reply).is_err() || close {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A server that resets every connection as soon as it accepts it (SO_LINGER 0, then close).
fn resetting() -> SocketAddr {
    use std::os::fd::AsRawFd;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            // SAFETY: setsockopt with a valid linger struct on a socket we own.
            unsafe {
                libc::setsockopt(
                    c.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as u32,
                );
            }
            drop(c);
        }
    });
    addr
}

#[test]
fn connections_reset_by_the_server_are_counted_errors_on_both_engines() {
    // The request's send can fail (the reset came first; in the ring its linked receive is
    // then cancelled) or succeed and the receive fail; on a loaded machine the reset can even
    // beat the connect's completion (seen in CI: every failure a connect error). Any way, an
    // error of one of those kinds, the run ends on time, and with nothing valid it exits
    // non-zero.
    let addr = resetting();
    for io in ["tokio", "uring"] {
        let started = std::time::Instant::now();
        let (code, v, err) = short_run(&format!("http://{addr}"), io, "4", "400ms");
        assert_eq!(code, 1, "--io {io}: {err}");
        assert_eq!(v["requests"], 0, "--io {io}: {v}");
        let kind = |k: &str| v["errors"][k].as_u64().unwrap();
        let failed = kind("read") + kind("write") + kind("connect");
        assert!(failed > 0, "--io {io}: {v}");
        assert_eq!(
            failed,
            v["errors"]
                .as_object()
                .unwrap()
                .values()
                .map(|n| n.as_u64().unwrap())
                .sum::<u64>(),
            "--io {io}: only connect, read or write errors: {v}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "--io {io}: took {:?}",
            started.elapsed()
        );
    }
}

#[test]
fn a_broken_server_cannot_score_errors_are_counted_by_kind() {
    let cases: [(&[u8], bool, &str); 4] = [
        (
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nno",
            false,
            "status",
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nnot",
            false,
            "body",
        ),
        (b"garbage that is not HTTP\r\n\r\n", false, "protocol"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok",
            true,
            "read",
        ),
    ];
    for ((reply, close, kind), io) in cases.into_iter().flat_map(|c| [(c, "tokio"), (c, "uring")]) {
        let addr = misbehaving(reply, close);
        let (code, v, _) = short_run(&format!("http://{addr}"), io, "2", "400ms");
        assert_eq!(code, 1, "{kind} ({io}): nothing valid, non-zero exit");
        assert_eq!(v["requests"], 0, "{kind} ({io})");
        assert!(
            v["errors"][kind].as_u64().unwrap() > 0,
            "{kind} ({io}): {v}"
        );
    }
    // --io uring: a refused connection is a connect error, and what it cannot do is refused.
    let gone = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let (code, v, _) = short_run(&format!("http://{gone}"), "uring", "1", "300ms");
    assert_eq!(code, 1);
    assert!(v["errors"]["connect"].as_u64().unwrap() > 0, "{v}");
    let (code, _, err) = rxload(&[
        &format!("http://{gone}"),
        "--io",
        "uring",
        "--pipeline",
        "4",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--io uring runs the closed loop"), "{err}");
    // A ZAP server that sends a zero length prefix: a protocol error.
    let addr = misbehaving(&[0, 0, 0, 0], false);
    let (_, v, _) = short_run(&format!("zap://{addr}"), "tokio", "1", "300ms");
    assert!(v["errors"]["protocol"].as_u64().unwrap() > 0, "{v}");
}

/// A ZAP server that answers every request with a streamed response's head frame (the wire
/// spec's ResponseHead, frame type 3), as a handler with a body stream does.
fn streaming_zap() -> SocketAddr {
    let mut head = Vec::new();
    rxsteer_wire::zaphttp::encode_response(
        &mut head,
        200,
        b"OK",
        &[(b"Content-Type", b"text/event-stream")],
        b"",
        &[],
    );
    // The frame type is the high byte of the header's flags (message offset 7, after the
    // 4-byte length prefix).
    head[4 + 7] = rxsteer_wire::zaphttp::FRAME_RESPONSE_HEAD;
    misbehaving(Box::leak(head.into_boxed_slice()), false)
}

/// rxload's exit code and JSON, and how long it ran.
fn timed(args: &[&str]) -> (i32, Value, std::time::Duration) {
    let started = std::time::Instant::now();
    let (code, v, err) = rxload(args);
    let took = started.elapsed();
    assert!(v.is_object(), "{args:?}: no JSON: {err}");
    (code, v, took)
}

#[test]
fn every_run_ends_failed_requests_count_toward_n_and_d_is_a_hard_deadline() {
    let bound = std::time::Duration::from_secs(5);
    let failing = misbehaving(
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nno",
        false,
    );
    let streaming = streaming_zap();
    for io in ["tokio", "uring"] {
        for (target, kind) in [
            (format!("http://{failing}"), "status"),
            (format!("zap://{streaming}"), "unsupported"),
        ] {
            // -n 3: three failed requests are three requests; the run ends.
            let (code, v, took) =
                timed(&[&target, "--io", io, "-c", "1", "-n", "3", "--warmup", "0s"]);
            assert_eq!(code, 1, "{io} {target}: every request failed: {v}");
            assert_eq!(v["errors"][kind], 3, "{io} {target}: {v}");
            assert!(took < bound, "{io} {target}: -n 3 took {took:?}");
            // -d 2s: ends at the deadline, reconnects backed off and counted.
            let (code, v, took) =
                timed(&[&target, "--io", io, "-c", "2", "-d", "2s", "--warmup", "0s"]);
            assert_eq!(code, 1, "{io} {target}: {v}");
            assert!(
                v["errors"][kind].as_u64().unwrap() > 0,
                "{io} {target}: {v}"
            );
            assert!(v["reconnects"].as_u64().unwrap() > 0, "{io} {target}: {v}");
            assert!(
                took < std::time::Duration::from_secs(4),
                "{io} {target}: -d 2s took {took:?}"
            );
        }
    }
    // A server that accepts and never answers: -d is still the end, though every read would
    // only time out after 10 s.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let (code, v, took) = timed(&[
        &format!("http://{addr}"),
        "-c",
        "2",
        "-d",
        "1s",
        "--warmup",
        "0s",
    ]);
    assert_eq!(code, 1, "{v}");
    assert!(
        took < std::time::Duration::from_secs(3),
        "-d 1s took {took:?}"
    );
    drop(silent);
}

#[test]
fn max_errors_sets_the_share_of_failures_a_run_may_have() {
    // Every other response is a 500: 50 % failed.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut c = c;
                let mut buf = [0u8; 4096];
                let mut n = 0u64;
                while let Ok(len) = c.read(&mut buf) {
                    if len == 0 {
                        return;
                    }
                    n += 1;
                    let reply: &[u8] = if n.is_multiple_of(2) {
                        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nno"
                    } else {
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
                    };
                    if c.write_all(reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let target = format!("http://{addr}");
    let args = |max: &'static str| {
        vec![
            target.clone(),
            "-c".into(),
            "1".into(),
            "-n".into(),
            "40".into(),
            "--warmup".into(),
            "0s".into(),
            "--max-errors".into(),
            max.into(),
        ]
    };
    let run = |max: &'static str| {
        let a = args(max);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        rxload(&a)
    };
    let (code, v, err) = run("0");
    assert_eq!(code, 1, "any failure fails the run by default: {v}");
    assert!(
        err.contains("measured requests failed") && err.contains("status"),
        "{err}"
    );
    let (code, v, _) = run("60");
    assert_eq!(code, 0, "50 % failed, 60 % allowed: {v}");
    assert_eq!(v["max_errors_percent"], 60.0);
}

#[test]
fn bad_flags_name_the_flag() {
    for (args, needle) in [
        (vec!["http://127.0.0.1:1", "-c", "0"], "--connections"),
        (
            vec!["ftp://127.0.0.1:1"],
            "scheme must be http:// or zap://",
        ),
        (
            vec!["http://127.0.0.1:1", "--max-errors", "101"],
            "\"101\": a percentage from 0 to 100",
        ),
        (vec!["http://127.0.0.1:1", "-H", "nocolon"], "'Name: value'"),
        (
            vec!["http://127.0.0.1:1", "--body-size", "huge"],
            "--body-size \"huge\"",
        ),
        (
            vec!["http://127.0.0.1:1", "-d", "soon"],
            "\"soon\" is not a duration",
        ),
        (
            vec!["http://127.0.0.1:1", "--body", "@/no/such/file"],
            "--body @/no/such/file",
        ),
    ] {
        let out = Command::new(RXLOAD).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// An HTTP /health server that stalls once, for `stall_ms`, after `after_ms` of serving.
fn stalling(after_ms: u64, stall_ms: u64) -> SocketAddr {
    use std::sync::{atomic::AtomicBool, Arc};
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let started = std::time::Instant::now();
    let stalled = Arc::new(AtomicBool::new(false));
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            let stalled = stalled.clone();
            std::thread::spawn(move || {
                let mut c = c;
                let _ = c.set_nodelay(true);
                let mut buf = [0u8; 4096];
                while let Ok(n) = c.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    if started.elapsed().as_millis() as u64 > after_ms
                        && !stalled.swap(true, Ordering::SeqCst)
                    {
                        std::thread::sleep(std::time::Duration::from_millis(stall_ms));
                    }
                    if c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    addr
}

fn p99_ms(v: &Value) -> f64 {
    v["latency_us"]["quantiles"]["p99"].as_u64().unwrap() as f64 / 1000.0
}

#[test]
fn open_loop_counts_the_stall_from_intended_send_times() {
    // Open loop: 400 req/s over 2 connections for 2 s; one 250 ms stall at 0.8 s. Requests
    // intended during the stall are late by up to 250 ms, and that latency is counted.
    let addr = stalling(800, 250);
    let (code, open, err) = rxload(&[
        &format!("http://{addr}"),
        "-c",
        "2",
        "-t",
        "1",
        "--rate",
        "400",
        "-d",
        "2s",
        "--warmup",
        "0s",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(errors(&open), 0, "{open}");
    assert!(
        p99_ms(&open) >= 100.0,
        "open-loop p99 {} ms must show the 250 ms stall",
        p99_ms(&open)
    );
    assert_eq!(open["open_loop"]["reached"], true, "{open}");
    // Closed loop against the same kind of server: each connection sees the stall once, the
    // rest of its thousands of requests are fast, and p99 hides it (coordinated omission).
    let addr = stalling(800, 250);
    let (_, closed, _) = rxload(&[
        &format!("http://{addr}"),
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "2s",
        "--warmup",
        "0s",
    ]);
    assert!(
        p99_ms(&closed) < 50.0,
        "closed-loop p99 {} ms",
        p99_ms(&closed)
    );
}

#[test]
fn a_rate_that_cannot_be_reached_is_said_and_hgrm_is_written() {
    let addr = stalling(u64::MAX, 0);
    let hgrm = std::env::temp_dir().join(format!("rxload-{}.hgrm", std::process::id()));
    let out = Command::new(RXLOAD)
        .args([
            &format!("http://{addr}"),
            "-c",
            "1",
            "-t",
            "1",
            "--rate",
            "10000000",
            "-d",
            "500ms",
            "--warmup",
            "0s",
            "--hgrm",
        ])
        .arg(&hgrm)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("target 10000000/s: NOT reached"), "{text}");
    let h = std::fs::read_to_string(&hgrm).unwrap();
    let _ = std::fs::remove_file(&hgrm);
    assert!(
        h.starts_with("       Value     Percentile TotalCount 1/(1-Percentile)"),
        "{h}"
    );
    assert!(h.contains("#[Max     ="), "{h}");
    let (_, v, err) = rxload(&[&format!("http://{addr}"), "--rate", "100"]);
    assert!(v.is_null() && err.contains("--rate needs -d"), "{err}");
}

#[test]
fn live_lines_come_once_per_interval_and_add_up() {
    let s = server();
    let live = std::env::temp_dir().join(format!("rxload-live-{}.jsonl", std::process::id()));
    let (code, v, err) = rxload(&[
        &format!("zap://{}", s.addr[Proto::Zap].unwrap()),
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "2s",
        "--warmup",
        "500ms",
        "--live",
        live.to_str().unwrap(),
        "--live-interval",
        "250ms",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Value> = std::fs::read_to_string(&live)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let _ = std::fs::remove_file(&live);
    // 2.5 s of run at 250 ms: about 9-10 lines (the last interval may close with the run).
    assert!((8..=11).contains(&lines.len()), "{} lines", lines.len());
    assert_eq!(lines[0]["phase"], "warmup");
    assert_eq!(lines.last().unwrap()["phase"], "measure");
    for l in &lines {
        for k in ["t_s", "req_per_s", "errors", "p50_us", "p99_us", "max_us"] {
            assert!(l.get(k).is_some(), "{k} in {l}");
        }
    }
    // The measured lines' request counts add up to about the total (edges aside).
    let measured: f64 = lines
        .iter()
        .filter(|l| l["phase"] == "measure")
        .map(|l| l["req_per_s"].as_f64().unwrap() * 0.25)
        .sum();
    let total = v["requests"].as_u64().unwrap() as f64;
    assert!(
        (measured - total).abs() / total < 0.25,
        "live {measured:.0} vs total {total:.0}"
    );
    assert_eq!(
        v["client"]["allocs_per_request"].as_f64().unwrap(),
        0.0,
        "live output allocates nothing in-window"
    );
}

#[test]
fn pipelined_http_is_answered_in_order_and_counted() {
    let s = server();
    let target = format!("http://{}", s.addr[Proto::Http].unwrap());
    for scenario in ["health", "echo"] {
        let (code, v, err) = rxload(&[
            &target,
            "--scenario",
            scenario,
            "--pipeline",
            "16",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "600ms",
            "--warmup",
            "200ms",
        ]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(errors(&v), 0, "{scenario}: {v}");
        assert!(v["requests"].as_u64().unwrap() > 500, "{scenario}: {v}");
        assert_eq!(
            v["client"]["allocs_per_request"].as_f64().unwrap(),
            0.0,
            "{scenario}"
        );
    }
    for (args, needle) in [
        (
            vec!["--pipeline", "4", "--rate", "100", "-d", "1s"],
            "--pipeline with --rate",
        ),
        (vec!["--pipeline", "0"], "--pipeline"),
    ] {
        let out = Command::new(RXLOAD)
            .arg(&target)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(needle),
            "{args:?}"
        );
    }
    let out = Command::new(RXLOAD)
        .args([
            &format!("zap://{}", s.addr[Proto::Zap].unwrap()),
            "--pipeline",
            "4",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pipeline is for HTTP"));
}

/// An HTTP server answering every request `ok`, recording each connection's peer address.
fn recording() -> (
    SocketAddr,
    std::sync::Arc<std::sync::Mutex<Vec<SocketAddr>>>,
) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let peers = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = peers.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            seen.lock().unwrap().push(s.peer_addr().unwrap());
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                            .is_err()
                        {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, peers)
}

#[test]
fn bind_spreads_connections_over_source_addresses_and_ports() {
    let (addr, peers) = recording();
    let url = format!("http://{addr}/health");
    let (code, v, err) = rxload(&[
        &url,
        "-c",
        "6",
        "-t",
        "2",
        "-n",
        "600",
        "--warmup",
        "0s",
        "--bind",
        "127.0.0.2:41000-41099,127.0.0.3:42000-42099",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(errors(&v), 0, "{v}");
    let peers = peers.lock().unwrap().clone();
    assert_eq!(peers.len(), 6, "one connection each: {peers:?}");
    let mut distinct = peers.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 6, "six distinct flows: {peers:?}");
    for p in &peers {
        let ok = match p.ip().to_string().as_str() {
            "127.0.0.2" => (41000..=41099).contains(&p.port()),
            "127.0.0.3" => (42000..=42099).contains(&p.port()),
            _ => false,
        };
        assert!(ok, "{p} is outside the --bind plan");
    }
    assert_eq!(
        peers
            .iter()
            .filter(|p| p.ip().to_string() == "127.0.0.2")
            .count(),
        3
    );
    // A plan that cannot hold the connections is refused up front, naming it.
    let (code, _, err) = rxload(&[
        &url,
        "-c",
        "6",
        "-n",
        "10",
        "--bind",
        "127.0.0.2:41000-41002",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("3 ports for 6 connections"), "{err}");
}

fn server_on(io: ServerIo) -> Server {
    start(ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 1,
        io,
        ..ServeConfig::default()
    })
    .unwrap()
}

#[test]
fn empty_bodies_pass_on_every_engine_pair_timed_and_counted() {
    // Both servers answer a 0-byte ZAP echo with a null body slot: rxload panicked on it
    // (with -d) and hung (with -n). Every scenario with --body-size 0, both ways of ending.
    for server_io in [ServerIo::Epoll, ServerIo::Uring] {
        let s = server_on(server_io);
        for io in ["tokio", "uring"] {
            for (scheme, addr) in [
                ("http", s.addr[Proto::Http].unwrap()),
                ("zap", s.addr[Proto::Zap].unwrap()),
            ] {
                for scenario in ["echo", "upload", "rpc"] {
                    for end in [["-d", "300ms"], ["-n", "300"]] {
                        let target = format!("{scheme}://{addr}");
                        let args = [
                            target.as_str(),
                            "--io",
                            io,
                            "--scenario",
                            scenario,
                            "--body-size",
                            "0",
                            "-c",
                            "2",
                            "-t",
                            "1",
                            "--warmup",
                            "100ms",
                            end[0],
                            end[1],
                        ];
                        let what =
                            format!("server {server_io:?}, --io {io}: {scheme} {scenario} {end:?}");
                        let (code, v, took) = timed(&args);
                        assert_eq!(code, 0, "{what}: {v}");
                        assert_eq!(errors(&v), 0, "{what}: {v}");
                        assert!(
                            took < std::time::Duration::from_secs(10),
                            "{what}: {took:?}"
                        );
                        let n = v["requests"].as_u64().unwrap();
                        if end[0] == "-n" {
                            // Exactly N, and the status line counts those N: not the
                            // responses still in flight when N was reached.
                            assert_eq!(n, 300, "{what}: {v}");
                        }
                        assert!(n > 0, "{what}: {v}");
                        assert_eq!(v["status"]["200"], n, "{what}: {v}");
                    }
                }
            }
        }
    }
}

/// A ZAP-HTTP response frame, for the misbehaving servers.
fn zap_reply(status: u16, reason: &[u8], headers: &[(&[u8], &[u8])], body: &[u8]) -> &'static [u8] {
    let mut out = Vec::new();
    encode_response(&mut out, status, reason, headers, body, &[]);
    Box::leak(out.into_boxed_slice())
}

#[test]
fn null_and_end_of_frame_slots_are_read_as_sent() {
    // Every optional slot null (reason, headers, body): an empty body, valid for a 0-byte echo.
    let null = misbehaving(zap_reply(200, b"", &[], b""), false);
    // A body slot that points at the very end of the frame (the last field written).
    let at_end = misbehaving(zap_reply(200, b"OK", &[(b"x-a", b"b")], b"abc"), false);
    for io in ["tokio", "uring"] {
        for (addr, size) in [(null, "0"), (at_end, "3")] {
            let target = format!("zap://{addr}");
            // The echo check wants the body back: "abc" is what filler(3) sends.
            let (code, v, err) = rxload(&[
                &target,
                "--io",
                io,
                "--scenario",
                "echo",
                "--body-size",
                size,
                "-c",
                "1",
                "-t",
                "1",
                "-n",
                "50",
                "--warmup",
                "0s",
            ]);
            assert_eq!(code, 0, "--io {io} {target} size {size}: {err} {v}");
            assert_eq!(v["requests"], 50, "{v}");
        }
    }
}

#[test]
fn a_load_thread_that_dies_ends_the_run_within_a_second_with_its_reason() {
    let s = server();
    for io in ["tokio", "uring"] {
        let target = format!("http://{}", s.addr[Proto::Http].unwrap());
        // -n far beyond what 2 connections reach: without the check the run waits 10 minutes.
        let started = std::time::Instant::now();
        let json =
            std::env::temp_dir().join(format!("rxload-died-{}-{io}.json", std::process::id()));
        let out = Command::new(RXLOAD)
            .args([
                &target,
                "--io",
                io,
                "-c",
                "2",
                "-t",
                "2",
                "-n",
                "100000000",
                "--warmup",
                "100ms",
            ])
            .arg("--json")
            .arg(&json)
            .env("RXLOAD_INJECT_PANIC_MS", "400")
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "--io {io}: {err}");
        assert!(
            took < std::time::Duration::from_millis(1400),
            "--io {io}: took {took:?}"
        );
        let line = err.lines().last().unwrap_or_default();
        assert!(
            line.contains("load thread 0 panicked: injected failure")
                && line.contains("from the other 1 of 2 threads"),
            "--io {io}: {err}"
        );
        // The figures measured so far, from the thread that lived.
        let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let _ = std::fs::remove_file(&json);
        assert!(v["requests"].as_u64().unwrap() > 0, "--io {io}: {v}");
        assert_eq!(errors(&v), 0, "--io {io}: {v}");
    }
}

#[test]
fn a_run_with_no_successful_response_fails_whatever_max_errors_allows() {
    let failing = misbehaving(
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 2\r\n\r\nno",
        false,
    );
    let target = format!("http://{failing}");
    let (code, v, err) = rxload(&[
        &target,
        "-c",
        "1",
        "-n",
        "20",
        "--warmup",
        "0s",
        "--max-errors",
        "100",
    ]);
    // 100 % failed and 100 % allowed: still 1, since nothing was measured.
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["errors"]["status"], 20, "{v}");
    assert!(err.contains("20 of 20 measured requests failed"), "{err}");
}
