//! Privilege hygiene as a user meets it. Every command that changes the kernel checks first
//! and names the capabilities it lacks, changing nothing; the server and the load generator
//! need no privilege at all and run as the unprivileged user `nobody`.
mod common;
mod served;

use served::{Served, RXSTEER};
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
#[ignore = "needs root: runs the commands as nobody to see them refuse"]
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
#[ignore = "needs root: runs the commands as nobody to see them refuse"]
fn server_and_load_generator_run_as_nobody() {
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--"];
    let mut c = Command::new("setpriv");
    c.args(nobody).arg(RXSTEER).args(served::SERVE_ARGS);
    let srv = Served::spawn(c);
    let status = std::fs::read_to_string(format!("/proc/{}/status", srv.pid())).unwrap();
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("Uid:") && l.contains("65534")),
        "the server runs as nobody"
    );
    let rxload = std::path::Path::new(RXSTEER).with_file_name("rxload");
    let out = Command::new("setpriv")
        .args(nobody)
        .arg(&rxload)
        .arg(format!("zap://{}", srv.zap))
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
    assert!(
        out.status.success(),
        "rxload as nobody: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains(" ok, 0 errors"), "{summary}");
}
