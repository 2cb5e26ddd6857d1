//! Privilege hygiene as a user meets it. Every command that changes the kernel checks first
//! and names the capabilities it lacks, changing nothing; the server and the load generator
//! need no privilege at all and run as the unprivileged user `nobody`.
mod common;
mod served;

use served::RXSTEER;
use std::process::Command;

/// `rxsteer ARGS` with every capability dropped (uid stays 0: the check must read capabilities).
fn without_caps(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new("setpriv")
        .args(["--inh-caps=-all", "--bounding-set=-all", "--", RXSTEER])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn kernel_changing_commands_refuse_up_front_naming_what_is_missing() {
    let before = common::host_state();
    for (args, needle) in [
        (
            vec!["compare", "-d", "1s", "--reps", "1"],
            "rxsteer compare needs root or CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON",
        ),
        (
            vec!["compare", "--iface", "lo", "--loader", "external"],
            "rxsteer compare needs root or CAP_NET_ADMIN, CAP_BPF, CAP_PERFMON",
        ),
        (
            vec!["attach", "--iface", "lo", "--steer", "rps"],
            "rxsteer attach needs root or CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON",
        ),
        (
            vec!["tune", "apply", "--iface", "lo", "--profile", "rps"],
            "rxsteer tune apply needs root or",
        ),
        (vec!["restore"], "rxsteer restore needs root or"),
        (vec!["lab", "-d", "1s"], "needs root or"),
    ] {
        let (code, err) = without_caps(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(
            err.contains("missing: CAP_"),
            "{args:?} names what is missing: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
    assert_eq!(common::host_state(), before, "nothing changed");
}

#[test]
fn server_and_load_generator_run_as_nobody() {
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];
    // The server as nobody (setpriv in front of rxsteer serve).
    let mut serve = Command::new("setpriv")
        .args(nobody)
        .args([
            RXSTEER,
            "serve",
            "--http",
            "127.0.0.1:0",
            "--zap",
            "127.0.0.1:0",
            "--threads",
            "1",
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(serve.stderr.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let zap = line
        .split("ZAP on ")
        .nth(1)
        .and_then(|r| r.split([',', ' ']).next())
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    let status = std::fs::read_to_string(format!("/proc/{}/status", serve.id())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.contains("65534")),
        "the server runs as nobody"
    );
    // rxload as nobody against it; --json to a place nobody may write.
    let rxload = std::path::Path::new(RXSTEER).with_file_name("rxload");
    let out = Command::new("setpriv")
        .args(nobody)
        .arg(&rxload)
        .arg(format!("zap://{zap}"))
        .args([
            "-c",
            "2",
            "-t",
            "1",
            "-n",
            "500",
            "--warmup",
            "0s",
            "--scenario",
            "rpc",
        ])
        .output()
        .unwrap();
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    let _ = serve.wait();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("500") || text.contains("requests"), "{text}");
}
