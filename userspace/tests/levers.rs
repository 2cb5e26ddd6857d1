//! The one queue's levers on a real device (#47): the reference tuning turns a veth's GRO on
//! (read back by `ethtool -k`, another tool), tune apply and a session both put it back byte
//! for byte, a SIGKILLed session's levers come back at `rxsteer restore`, and what a veth has
//! not (a ring, an interrupt, coalescing) is skipped in one line each. Needs root.
//!
//! Rings, coalescing and a moved interrupt on real drivers are the VM guests' (e1000,
//! virtio-net: docs/vm.md); the fake-tree tests in tune cover their snapshot and revert.
mod common;

use common::lab;
use rxsteer::netns::VethLab;
use std::{
    io::{BufRead, BufReader},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn rxsteer(lab: &VethLab, args: &[&str]) -> Command {
    let mut c = lab.server.command(RXSTEER);
    c.args(args);
    c
}

/// GRO, GSO and TSO of the lab's server veth as `ethtool -k` prints them, and its whole
/// `ethtool -k` text (byte for byte after a revert).
fn offloads(lab: &VethLab) -> (String, String) {
    let o = lab
        .server
        .command("ethtool")
        .args(["-k", &lab.server_dev])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let all = String::from_utf8_lossy(&o.stdout).into_owned();
    let three = all
        .lines()
        .filter(|l| {
            l.starts_with("generic-receive-offload:")
                || l.starts_with("generic-segmentation-offload:")
                || l.starts_with("tcp-segmentation-offload:")
        })
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("; ");
    (three, all)
}

#[test]
#[ignore = "needs root: tunes a veth lab"]
fn the_reference_turns_gro_on_and_tune_revert_puts_every_byte_back() {
    let lab = lab('l');
    let dev = lab.server_dev.clone();
    let (three, before) = offloads(&lab);
    assert!(
        three.contains("generic-receive-offload: off"),
        "a veth starts with GRO off: {three}"
    );
    let values = common::profile_values(&lab);
    let apply = rxsteer(
        &lab,
        &["tune", "apply", "--iface", &dev, "--profile", "reference"],
    )
    .output()
    .unwrap();
    let said = text(&apply);
    assert!(apply.status.success(), "{said}");
    assert!(
        offloads(&lab).0.contains("generic-receive-offload: on"),
        "{said}"
    );
    assert!(said.contains(&format!("{dev} offloads: ")), "{said}");
    // A veth has no ring: one skipped line, and the run went on.
    let ring = said
        .lines()
        .find(|l| l.contains(&format!("skipped {dev} rings:")))
        .unwrap_or_else(|| panic!("no line for the ring: {said}"));
    assert!(ring.contains("not applicable here"), "{ring}");
    let revert = rxsteer(&lab, &["tune", "revert"]).output().unwrap();
    assert!(revert.status.success(), "{}", text(&revert));
    assert_eq!(offloads(&lab).1, before, "ethtool -k byte for byte");
    assert_eq!(common::profile_values(&lab), values);
}

/// A session that observes: its stderr up to "observing", and the rest as it ends.
fn observing(
    lab: &VethLab,
    args: &[&str],
) -> (std::process::Child, String, std::thread::JoinHandle<String>) {
    let mut child = rxsteer(lab, args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !said.contains("observing") {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "exited early: {said}"
        );
        said.push_str(&line);
        assert!(Instant::now() < deadline, "{said}");
    }
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut rest);
        rest
    });
    (child, said, rest)
}

#[test]
#[ignore = "needs root: tunes a veth lab"]
fn a_killed_reference_session_is_put_back_by_restore() {
    let lab = lab('m');
    let dev = lab.server_dev.clone();
    let before = offloads(&lab).1;
    let (mut child, said, _) = observing(
        &lab,
        &["attach", "--iface", &dev, "--steer", "reference", "--json"],
    );
    assert!(said.contains("tuned for reference"), "{said}");
    assert!(
        said.contains(&format!("rxsteer: skipped {dev} rings: ")),
        "a lever the place lacks is said: {said}"
    );
    assert!(offloads(&lab).0.contains("generic-receive-offload: on"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        offloads(&lab).0.contains("generic-receive-offload: on"),
        "SIGKILL reverts nothing by itself"
    );
    let restore = rxsteer(&lab, &["restore"]).output().unwrap();
    let out = text(&restore);
    assert!(restore.status.success(), "{out}");
    assert!(
        out.contains(&format!("{dev} offloads: gro=on gso=on tso=on -> gro=off")),
        "{out}"
    );
    assert_eq!(offloads(&lab).1, before, "ethtool -k byte for byte");
}

/// irq-affinity on a device with no interrupt says so and changes nothing; an --irq-cpu
/// naming a CPU this machine has not is refused in one line before anything starts.
#[test]
#[ignore = "needs root: tunes a veth lab"]
fn irq_affinity_on_a_veth_says_not_applicable_and_a_bad_irq_cpu_is_refused() {
    let lab = lab('q');
    let dev = lab.server_dev.clone();
    let values = common::profile_values(&lab);
    let (three, _) = offloads(&lab);
    let (mut child, said, _) = observing(
        &lab,
        &[
            "attach",
            "--iface",
            &dev,
            "--steer",
            "irq-affinity",
            "--json",
        ],
    );
    assert!(
        said.contains(&format!(
            "skipped {dev} interrupt's CPUs: the device has no interrupt of its own"
        )),
        "{said}"
    );
    assert!(said.contains("(0 value(s) written)"), "{said}");
    assert_eq!(common::profile_values(&lab), values, "no mask, no sysctl");
    assert_eq!(offloads(&lab).0, three);
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert!(child.wait().unwrap().success());
    let bad = rxsteer(
        &lab,
        &[
            "attach",
            "--iface",
            &dev,
            "--steer",
            "rps",
            "--irq-cpu",
            "4095",
        ],
    )
    .output()
    .unwrap();
    let out = text(&bad);
    assert_eq!(bad.status.code(), Some(2), "{out}");
    assert!(
        out.contains("--irq-cpu") && out.contains("CPU 4095 is not online here"),
        "{out}"
    );
}

/// A lever another tool changes mid-session is said at the session's end (the run measured
/// that tool's value, not ours), and the revert still puts the value found at the start back.
#[test]
#[ignore = "needs root: tunes a veth lab"]
fn a_lever_changed_mid_session_is_said_as_drift_at_the_end() {
    let lab = lab('d');
    let dev = lab.server_dev.clone();
    let before = offloads(&lab).1;
    let (child, said, rest) = observing(
        &lab,
        &["attach", "--iface", &dev, "--steer", "reference", "--json"],
    );
    assert!(said.contains("tuned for reference"), "{said}");
    common::succeed(
        lab.server
            .command("ethtool")
            .args(["-K", &dev, "gro", "off"]),
    );
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let mut child = child;
    assert!(child.wait().unwrap().success());
    let rest = rest.join().unwrap();
    assert!(
        rest.contains(&format!(
            "rxsteer: drift: {dev} offloads: set gro=on gso=on tso=on, now gro=off"
        )),
        "{rest}"
    );
    assert_eq!(offloads(&lab).1, before, "ethtool -k byte for byte");
}
