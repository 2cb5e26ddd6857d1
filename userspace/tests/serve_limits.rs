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
    let mut extra = hold(server.http, 50);
    let refused = extra.iter_mut().map(closed_at_once).filter(|c| *c).count();
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
