//! `rxsteer serve` as a user runs it: no privileges needed, one line per bad flag, a clean
//! stop on SIGTERM that reports what it served.
use std::{
    io::{BufRead, BufReader, Read, Write},
    net::TcpStream,
    process::{Command, Stdio},
    time::Duration,
};

mod served;
use served::RXSTEER;

#[test]
fn serves_without_privileges_and_reports_on_sigterm() {
    // Every capability dropped: serving needs none.
    let mut child = Command::new("setpriv")
        .args(["--inh-caps=-all", "--bounding-set=-all", "--", RXSTEER])
        .args(served::SERVE_ARGS)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("rxsteer serve: HTTP on 127.0.0.1:"),
        "{line}"
    );
    let http = line
        .split("HTTP on ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap()
        .to_string();
    let mut s = TcpStream::connect(&http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(
        resp.starts_with("HTTP/1.1 200 OK") && resp.ends_with("ok"),
        "{resp}"
    );
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("served 1 HTTP and 0 ZAP requests"), "{rest}");
}

/// `rxsteer serve ARGS` run to its end: exit code and stderr.
fn serve(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(RXSTEER)
        .arg("serve")
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_flags_are_one_line() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let busy = taken.local_addr().unwrap().to_string();
    for (args, needle) in [
        (
            vec!["--http", "nonsense"],
            "\"nonsense\" is not an address like :8080",
        ),
        (vec!["--cpus", "4096"], "CPU 4096 in --cpus is not online"),
        (
            vec!["--idle-timeout", "soon"],
            "invalid value 'soon' for '--idle-timeout",
        ),
        (vec!["--http", busy.as_str(), "--threads", "1"], "binding"),
    ] {
        let (code, err) = serve(&args);
        assert_ne!(code, Some(0), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Values that make no sense are refused by the parser, before anything starts: one line
    // naming the flag, the value and the range, exit 2.
    for (args, needle) in [
        (
            vec!["--threads", "0"],
            "invalid value '0' for '--threads <THREADS>': 0 is not in 1..=1024",
        ),
        (vec!["--threads", "100000"], "100000 is not in 1..=1024"),
        (
            vec!["--max-frame", "0"],
            "invalid value '0' for '--max-frame <MAX_FRAME>': 0 is not in 16..=67108864",
        ),
        (
            vec!["--max-body", "2000000000"],
            "2000000000 is not in 0..=1073741824",
        ),
        (
            vec!["--idle-timeout", "0s"],
            "invalid value '0s' for '--idle-timeout <IDLE_TIMEOUT>': \"0s\" is outside 100ms..=24h",
        ),
        (
            vec!["--request-timeout", "2d"],
            "\"2d\" is outside 100ms..=24h",
        ),
    ] {
        let (code, err) = serve(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(
            err.lines().next().map(|l| l.contains(needle)),
            Some(true),
            "{args:?}: one line: {err}"
        );
    }
}
