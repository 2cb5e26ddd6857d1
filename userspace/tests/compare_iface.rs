//! `rxsteer compare --iface IF` as on a real NIC: a namespace plays the server host, its veth
//! plays the NIC, and a second namespace plays the machine the load comes from. With
//! `--loader local` rxsteer drives the load itself; with `--loader external` it only observes
//! while someone else (here the test, with rxload) drives it. Needs root.
mod common;

use serde_json::Value;
use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    process::Stdio,
    time::Duration,
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

fn rxload() -> String {
    std::path::Path::new(RXSTEER)
        .with_file_name("rxload")
        .display()
        .to_string()
}

fn read_run(dir: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
#[ignore = "needs root: attaches to and tunes a veth interface"]
fn local_loader_measures_on_the_interface_and_says_what_it_can_not_show() {
    let lab = common::nic_lab('n');
    let out_dir = std::env::temp_dir().join(format!("rxsteer-iface-l-{}", std::process::id()));
    // While it runs: who the server is (its uid) and where it listens.
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            // The last look at each serve process: it starts as root and drops to nobody
            // before it serves, so a look in that first instant is not what it runs as.
            let mut seen = std::collections::BTreeMap::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                seen.extend(serve_processes());
                std::thread::sleep(Duration::from_millis(50));
            }
            seen
        })
    };
    let out = common::compare_on_iface(&lab, &["local"])
        .args([
            "--closed", "--steer", "rps", "--proto", "zap", "-d", "1s", "--reps", "1", "-c", "4",
            "--no-tui",
        ])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let servers = watcher.join().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!servers.is_empty(), "serve was seen running: {err}");
    for (uid, cmdline) in servers.values() {
        assert_ne!(*uid, 0, "serve runs without root: {cmdline}");
        assert!(
            cmdline.contains(&format!("zap={}:9653", lab.server_ip))
                && !cmdline.contains("0.0.0.0"),
            "serve binds the interface's address: {cmdline}"
        );
    }
    assert!(
        err.contains("never crosses"),
        "the local-loader caveat: {err}"
    );
    let run = read_run(&out_dir);
    assert_eq!(run["setup"]["kind"], "iface");
    assert_eq!(run["setup"]["iface"], lab.server_dev.as_str());
    let row = &run["runs"][0];
    assert!(row["req_per_s"].as_f64().unwrap() > 100.0, "{row}");
    assert_eq!(row["error_total"], 0);
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        report.contains(&format!("interface `{}`", lab.server_dev)),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Every `rxsteer serve` running now: its real uid and its command line.
/// Each running `rxsteer serve`: its pid, uid and command line.
fn serve_processes() -> Vec<(u32, (u32, String))> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !(cmdline.contains(" serve ") && cmdline.contains("--listen")) {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(e.path().join("status")) else {
            continue;
        };
        let uid = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next()?.parse().ok());
        let pid = e.file_name().to_str().and_then(|p| p.parse().ok());
        if let (Some(pid), Some(uid)) = (pid, uid) {
            out.push((pid, (uid, cmdline)));
        }
    }
    out
}

/// `--loader netns:NAME`: rxload in a namespace of this host that holds the other end of the
/// wire (as a VM's second NIC does), so the load crosses the interface's receive queue. The
/// namespace is checked before anything changes, and it is not deleted afterwards.
#[test]
#[ignore = "needs root: attaches to and tunes a veth interface"]
fn netns_loader_drives_the_load_across_the_wire_and_leaves_its_namespace() {
    let lab = common::nic_lab('w');
    let out_dir = std::env::temp_dir().join(format!("rxsteer-iface-w-{}", std::process::id()));
    let missing = common::compare_on_iface(&lab, &["netns:rxs-no-such-ns"])
        .args([
            "--steer", "rps", "--proto", "http", "--reps", "1", "--no-tui",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success(), "{err}");
    assert!(
        err.contains("--loader netns:rxs-no-such-ns: no such network namespace"),
        "{err}"
    );
    let rx0 = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap();
    let loader = format!("netns:{}", lab.client.name());
    let out = common::compare_on_iface(&lab, &[&loader])
        .args([
            "--closed", "--steer", "rps", "--proto", "http", "-d", "1s", "--reps", "1", "-c", "4",
            "--no-tui",
        ])
        .arg("--out")
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("never crosses"),
        "no local-loader caveat: {err}"
    );
    let run = read_run(&out_dir);
    let served: f64 = run["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["req_per_s"].as_f64().unwrap() * r["measured_s"].as_f64().unwrap_or(1.0))
        .sum();
    assert!(served > 100.0, "{run}");
    assert!(
        run["setup"]["loader"]
            .as_str()
            .unwrap()
            .contains(&format!("network namespace {}", lab.client.name())),
        "{run}"
    );
    // The requests came across the wire: the server's interface received them.
    let rx = lab.server.link_stat(&lab.server_dev, "rx_packets").unwrap() - rx0;
    assert!(rx as f64 >= served, "{rx} packets for {served:.0} requests");
    assert!(
        std::path::Path::new("/run/netns")
            .join(lab.client.name())
            .exists(),
        "the loader's namespace is the user's and stays"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
#[ignore = "needs root: attaches to and tunes a veth interface"]
fn external_loader_is_observed_and_steered_without_rxsteer_driving_it() {
    let lab = common::nic_lab('n');
    let out_dir = std::env::temp_dir().join(format!("rxsteer-iface-e-{}", std::process::id()));
    let mut compare = common::compare_on_iface(&lab, &["external"])
        .args([
            "--closed", "--steer", "cpumap", "--proto", "http", "-d", "2s", "--warmup", "0s",
            "--reps", "1",
        ])
        .args(["--no-tui", "--out"])
        .arg(&out_dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let errs = compare.stderr.take().unwrap();
    let lines = std::thread::spawn(move || {
        BufReader::new(errs)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<_>>()
    });
    // The "other machine" waits for rxsteer's server, then drives HTTP at it for longer than
    // the observed window.
    common::wait_listening(
        &lab.client,
        SocketAddr::from((lab.server_ip, 8080)),
        Duration::from_secs(20),
        "rxsteer's server",
    );
    let load = lab
        .client
        .command(&rxload())
        .arg(format!("http://{}:8080", lab.server_ip))
        // It outlives rxsteer's server by design: the refused connects at the end are
        // expected, not a failed run.
        .args([
            "-c",
            "8",
            "-t",
            "1",
            "-d",
            "4s",
            "--warmup",
            "0s",
            "--max-errors",
            "100",
        ])
        .output()
        .unwrap();
    let status = compare.wait().unwrap();
    let err = lines.join().unwrap().join("\n");
    assert!(status.success(), "{err}");
    assert!(
        load.status.success(),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    assert!(err.contains("only observes"), "{err}");
    let run = read_run(&out_dir);
    let row = &run["runs"][0];
    assert!(row["req_per_s"].is_null(), "rxsteer drove nothing: {row}");
    let packets: f64 = row["packets_per_s"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    assert!(packets > 1000.0, "the external load was observed: {row}");
    let arrived: f64 = row["cpumap_arrived_per_s"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .sum();
    assert!(arrived > 1000.0, "and steered through the cpumap: {row}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
#[ignore = "needs root: attaches to and tunes a veth interface"]
fn a_server_port_in_use_is_named_and_the_host_restored() {
    let lab = common::nic_lab('p');
    // Something else already serves 8080 on this "host".
    let (hold_tx, hold_rx) = std::sync::mpsc::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let holder = lab.server.spawn(None, move || {
        let _l = std::net::TcpListener::bind("0.0.0.0:8080")?;
        ready_tx.send(()).unwrap();
        let _ = hold_rx.recv();
        Ok(())
    });
    ready_rx.recv().unwrap();
    let out = common::compare_on_iface(&lab, &["local"])
        .args([
            "--closed", "--steer", "cpumap", "--proto", "http", "-d", "1s", "--reps", "1",
            "--no-tui",
        ])
        .args(["--out", "/tmp/rxsteer-port-in-use"])
        .output()
        .unwrap();
    drop(hold_tx);
    holder.join().unwrap().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("{}:8080", lab.server_ip)) && err.contains("in use"),
        "{err}"
    );
    // Everything the mode put in place was taken down again.
    assert_eq!(
        lab.server.xdp_attached(&lab.server_dev).unwrap(),
        None,
        "{err}"
    );
    let _ = std::fs::remove_dir_all("/tmp/rxsteer-port-in-use");
}
