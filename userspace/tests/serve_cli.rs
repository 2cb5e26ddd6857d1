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

/// The io_uring test switches io_uring off for the whole machine; the others wait for it.
static KERNEL_SETTING: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn serves_without_privileges_and_reports_on_sigterm() {
    let _k = KERNEL_SETTING.lock().unwrap_or_else(|e| e.into_inner());
    for io in ["epoll", "uring"] {
        serves_on(io);
    }
}

fn serves_on(io: &str) {
    // Every capability dropped: serving needs none, on either engine.
    let mut child = Command::new("setpriv")
        .args(["--inh-caps=-all", "--bounding-set=-all", "--", RXSTEER])
        .args(served::SERVE_ARGS)
        .args(["--io", io])
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
    assert!(
        line.contains(&format!("worker thread(s) on {io}")),
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

/// `--user`: started by root from a folder only root may enter (as compare --iface starts it
/// from a checkout in a 0700 temporary folder), the server drops to the user itself and
/// serves as it; a parent's setuid before exec could not even reach the binary there.
#[test]
#[ignore = "needs root: drops to nobody"]
fn user_drops_root_itself_even_from_a_folder_only_root_enters() {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("rxsteer-private-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let bin = dir.join("rxsteer");
    std::fs::copy(RXSTEER, &bin).unwrap();
    let mut child = Command::new(&bin)
        .args(served::SERVE_ARGS)
        .arg("--user=65534:65534")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let ended = child.wait().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(line.starts_with("rxsteer serve: HTTP on"), "{line}");
    let ids = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    assert_eq!(ids("Uid:"), ["65534"; 4], "{status}");
    assert_eq!(ids("Gid:"), ["65534"; 4], "{status}");
    assert_eq!(ids("Groups:"), Vec::<&str>::new(), "{status}");
    assert!(ended.success());
}

/// Puts `kernel.io_uring_disabled` back however the test ends.
struct IoUringSetting(String);

impl Drop for IoUringSetting {
    fn drop(&mut self) {
        std::fs::write(IO_URING_DISABLED, &self.0).unwrap();
    }
}

const IO_URING_DISABLED: &str = "/proc/sys/kernel/io_uring_disabled";

#[test]
#[ignore = "needs root: switches io_uring off for the machine (kernel.io_uring_disabled)"]
fn uring_where_the_kernel_refuses_it_is_one_line_and_a_failed_start() {
    let _k = KERNEL_SETTING.lock().unwrap_or_else(|e| e.into_inner());
    let was = std::fs::read_to_string(IO_URING_DISABLED)
        .expect("kernel.io_uring_disabled (Linux 6.6 or later)");
    let _restore = IoUringSetting(was.clone());
    std::fs::write(IO_URING_DISABLED, "2").unwrap();
    let (code, err) = serve(&[
        "--http",
        "127.0.0.1:0",
        "--zap",
        "127.0.0.1:0",
        "--io",
        "uring",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("io_uring is not available"), "{err}");
    // The epoll engine needs no io_uring.
    serves_on("epoll");
    drop(_restore);
    assert_eq!(std::fs::read_to_string(IO_URING_DISABLED).unwrap(), was);
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
        (vec!["--io", "poll"], "invalid value 'poll' for '--io <IO>'"),
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
