//! `rxsteer lab` as a user runs it. One test function: the lab has fixed names (so a crashed
//! run's leftovers can be found), so its runs must not overlap. Needs root.
mod common;

use serde_json::Value;
use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

fn lab_namespaces() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("rxs-lab-"))
        .map(str::to_string)
        .collect()
}

/// `rxsteer lab -d 30s --json`, once it says it observes (within 20 s).
fn observing_lab() -> std::process::Child {
    let mut child = Command::new(RXSTEER)
        .args(["lab", "-d", "30s", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let start = Instant::now();
    let mut line = String::new();
    while !line.contains("observing") {
        line.clear();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "lab exited early");
        assert!(start.elapsed() < Duration::from_secs(20));
    }
    // Keep draining stderr so the lab never blocks on a full pipe.
    std::thread::spawn(move || for _ in stderr.lines() {});
    child
}

#[test]
#[ignore = "needs root: builds the veth lab"]
fn lab_runs_receive_on_the_rx_cpu_and_recovers_from_a_killed_run() {
    let cpus = rxsteer_tune::cpus::online_cpus().unwrap();
    let rx_cpu = *cpus.last().unwrap();

    // 1. A bounded run: receive work lands on the pinned NAPI CPU, as kthread time.
    let out = Command::new(RXSTEER)
        .args([
            "lab",
            "-d",
            "2s",
            "--json",
            "--rx-cpu",
            &rx_cpu.to_string(),
            "-c",
            "4",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "one line per 1 s interval");
    let mut packets = vec![0u64; cpus.len()];
    let mut napi_ns = vec![0u64; cpus.len()];
    for l in &lines {
        for (i, c) in l["cpus"].as_array().unwrap().iter().enumerate() {
            packets[i] += c["packets"].as_u64().unwrap();
            napi_ns[i] += c["napi_kthread_ns"].as_u64().unwrap();
        }
    }
    let rx = rx_cpu as usize;
    assert!(packets[rx] > 1000, "load reached the server: {packets:?}");
    assert_eq!(
        packets.iter().sum::<u64>(),
        packets[rx],
        "all receive on CPU {rx_cpu}: {packets:?}"
    );
    assert!(
        napi_ns[rx] > 0,
        "NAPI kthread time on the receive CPU: {napi_ns:?}"
    );
    assert!(err.contains("exchanges in"), "{err}");
    if cpus.len() < 4 {
        assert!(
            err.contains("not a gain"),
            "the 2-CPU caveat is said: {err}"
        );
    }
    assert!(lab_namespaces().is_empty(), "lab removed after a run");

    // 2. SIGKILL leaves the namespaces; the next start removes them and says so.
    let mut child = observing_lab();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        lab_namespaces().len(),
        2,
        "a killed run leaves its namespaces"
    );
    let err = common::succeed(Command::new(RXSTEER).args(["lab", "-d", "1s", "--json"])).stderr;
    assert!(
        err.contains("removed network namespace rxs-lab-s left by an earlier run"),
        "{err}"
    );
    assert!(lab_namespaces().is_empty());

    // 2b. After a SIGKILL, `rxsteer restore` removes them too (their owner is gone), and
    // refuses to while a live lab owns them.
    let mut child = observing_lab();
    let out = Command::new(RXSTEER).arg("restore").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("in use by rxsteer (pid {})", child.id())),
        "{said}"
    );
    assert_eq!(lab_namespaces().len(), 2, "a live lab is left to its owner");
    child.kill().unwrap();
    child.wait().unwrap();
    let said = common::succeed(Command::new(RXSTEER).arg("restore")).stdout;
    assert!(
        said.contains("removed network namespace rxs-lab-s left by a killed lab or compare"),
        "{said}"
    );
    assert!(lab_namespaces().is_empty());

    // 3. Roles that do not fit the machine are refused before anything is created.
    let out = Command::new(RXSTEER)
        .args(["lab", "--rx-cpu", "4096"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("CPU 4096 in --rx-cpu is not online on this machine"),
        "{err}"
    );
    assert!(lab_namespaces().is_empty());
}
