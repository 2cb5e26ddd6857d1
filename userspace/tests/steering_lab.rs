//! Steering modes as a user runs them, in veth labs the tests create: cpumap moves receive
//! work into the target CPU's kthread, RPS moves it to the RPS CPUs, modes are exclusive, and
//! every exit (clean, SIGKILL + restore, SIGKILL + next start) leaves the host byte-identical.
//! Needs root.
mod common;

use common::{lab, online_cpus, udp_burst, udp_flows};
use rxsteer::netns::{Netns, VethLab};
use serde_json::Value;
use std::{
    io::{BufRead, BufReader, Read},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

fn cat(ns: &Netns, path: &str) -> Vec<u8> {
    let out = ns.command("cat").arg(path).output().unwrap();
    assert!(out.status.success(), "cat {path}");
    out.stdout
}

fn rps_cpus(lab: &VethLab) -> String {
    String::from_utf8(cat(
        &lab.server,
        &format!("/sys/class/net/{}/queues/rx-0/rps_cpus", lab.server_dev),
    ))
    .unwrap()
}

/// attach's stderr up to the line that says it observes (within 10 s).
fn until_observing(err: &mut impl BufRead) -> String {
    let mut said = String::new();
    let start = Instant::now();
    while !said.contains("observing") {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "attach exited early: {said}"
        );
        said.push_str(&line);
        assert!(start.elapsed() < Duration::from_secs(10), "{said}");
    }
    said
}

/// Starts `rxsteer attach` in the server namespace; waits until it observes.
fn attach(lab: &VethLab, args: &[&str]) -> (Child, String) {
    let mut child = lab
        .server
        .command(RXSTEER)
        .args(["attach", "--iface", &lab.server_dev])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let said = until_observing(&mut err);
    // Keep draining stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    (child, said)
}

fn json_lines(child: &mut Child) -> Vec<Value> {
    let mut s = String::new();
    child.stdout.take().unwrap().read_to_string(&mut s).unwrap();
    s.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn per_cpu_sum(lines: &[Value], f: impl Fn(&Value) -> u64) -> Vec<u64> {
    let n = online_cpus().len();
    let mut v = vec![0u64; n];
    for l in lines {
        for (i, c) in l["cpus"].as_array().unwrap().iter().enumerate() {
            v[i] += f(c);
        }
    }
    v
}

/// No state file for this (the root) network namespace.
fn no_state_file() -> bool {
    !rxsteer::host::state_path().unwrap().exists()
        && !rxsteer::host::session_path().unwrap().exists()
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn cpumap_moves_tcp_receive_into_the_target_cpus_kthread() {
    cpumap_upload('k', "drv", "driver (native) mode");
}

/// The user's NIC has no native XDP: the same upload with XDP in generic (skb) mode, after
/// the receiving CPU built each packet's skb (and with GRO skipped: netif_elide_gro).
#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn cpumap_in_skb_mode_moves_the_stack_to_the_target_cpu() {
    cpumap_upload('g', "skb", "skb (generic) mode");
}

/// A 32 MiB TCP upload through cpumap steering in `xdp_mode`: frames arrive only on the
/// target CPU (on_cpu), every steered frame arrives, the stack runs there (tc ingress), the
/// work is kthread time, and the host is byte-identical afterwards.
fn cpumap_upload(tag: char, xdp_mode: &str, said_mode: &str) {
    let cpus = online_cpus();
    assert!(
        cpus.len() >= 2,
        "needs 2 CPUs (sender and target), this machine has 1"
    );
    let (sender, target) = (cpus[0], *cpus.last().unwrap());
    // TX checksum offload off on the sender: native-XDP cpumap on veth drops partial checksums.
    let lab = common::nic_lab(tag);
    let before = common::profile_values(&lab);
    let (mut top, said) = attach(
        &lab,
        &[
            "--steer",
            "cpumap",
            "--http-cpus",
            &target.to_string(),
            "--json",
            "--interval",
            "500ms",
            "--count",
            "6",
            "--xdp-mode",
            xdp_mode,
        ],
    );
    assert!(said.contains("steering cpumap (HTTP -> CPUs"), "{said}");
    assert!(said.contains(said_mode), "{said}");
    if xdp_mode == "skb" {
        assert!(said.contains("plain XDP programs: frags-aware"), "{said}");
    }
    assert!(said.contains("tc ingress as TCX"), "{said}");
    assert_eq!(
        rps_cpus(&lab).trim_matches(|c| c == '0' || c == '\n' || c == ','),
        "",
        "RPS off under cpumap"
    );

    // A real TCP upload: the receiver is pinned to the target CPU, the sender to another.
    const BYTES: usize = 32 << 20;
    assert_eq!(
        common::tcp_upload(&lab, sender, target, BYTES),
        BYTES,
        "every byte arrived"
    );

    assert!(top.wait().unwrap().success());
    let lines = json_lines(&mut top);
    let arrived = per_cpu_sum(&lines, |c| c["arrived_class"]["http"].as_u64().unwrap());
    let steered = per_cpu_sum(&lines, |c| c["steered_packets"].as_u64().unwrap());
    let kthread = per_cpu_sum(&lines, |c| c["cpumap_kthread_ns"].as_u64().unwrap());
    let net_rx = per_cpu_sum(&lines, |c| c["net_rx_ns"].as_u64().unwrap());
    let stack = per_cpu_sum(&lines, |c| c["stack_class"]["http"].as_u64().unwrap());
    assert!(lines
        .iter()
        .all(|l| l["xdp_mode"] == xdp_mode && l["tc"] == "tcx"));
    let t = target as usize;
    assert!(stack[t] > 100, "the stack ran on CPU {target}: {stack:?}");
    assert_eq!(
        stack.iter().sum::<u64>(),
        stack[t],
        "and nowhere else (tc ingress): {stack:?}"
    );
    assert!(
        arrived[t] > 1000,
        "frames arrived on CPU {target}: {arrived:?}"
    );
    assert_eq!(
        arrived.iter().sum::<u64>(),
        arrived[t],
        "only on the target: {arrived:?}"
    );
    assert_eq!(
        steered.iter().sum::<u64>(),
        arrived[t],
        "every steered frame arrived: {steered:?}"
    );
    assert!(
        kthread[t] > net_rx[t],
        "on CPU {target} receive work is cpumap-kthread time ({} ns), not NET_RX softirq ({} ns)",
        kthread[t],
        net_rx[t]
    );
    assert_eq!(lab.server.xdp_attached(&lab.server_dev).unwrap(), None);
    assert_eq!(
        common::profile_values(&lab),
        before,
        "tuning reverted byte for byte"
    );
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn rps_moves_backlog_work_to_the_rps_cpu() {
    let cpus = online_cpus();
    assert!(cpus.len() >= 2, "needs 2 CPUs, this machine has 1");
    let (sender, rps) = (cpus[0], *cpus.last().unwrap());
    let lab = lab('r');
    let before = common::profile_values(&lab);
    let (mut top, said) = attach(
        &lab,
        &[
            "--steer",
            "rps",
            "--cpus",
            &rps.to_string(),
            "--json",
            "--interval",
            "400ms",
            "--count",
            "4",
        ],
    );
    assert!(said.contains("steering rps"), "{said}");
    assert!(said.contains("with the receive tracepoints"), "{said}");
    assert_ne!(rps_cpus(&lab).trim(), "0", "RPS mask set while attached");
    assert_eq!(
        lab.server.xdp_attached(&lab.server_dev).unwrap(),
        None,
        "RPS is observed with no XDP program, as the user runs it"
    );
    udp_burst(&lab.client, sender, lab.server_ip, 5000, 3000);
    assert!(top.wait().unwrap().success());
    let lines = json_lines(&mut top);
    let seen = per_cpu_sum(&lines, |c| c["packets"].as_u64().unwrap());
    let processed = per_cpu_sum(&lines, |c| c["softnet"]["processed"].as_u64().unwrap());
    let received_rps = per_cpu_sum(&lines, |c| c["softnet"]["received_rps"].as_u64().unwrap());
    let stack = per_cpu_sum(&lines, |c| c["stack_class"]["ip"].as_u64().unwrap());
    let (s, r) = (sender as usize, rps as usize);
    assert!(
        stack[r] >= 2900 && stack[s] < 100,
        "tc ingress: the stack ran on the RPS CPU, not the sender's: {stack:?}"
    );
    assert_eq!(
        seen[s], 3000,
        "the driver-side count is on the receiving (here: sending) CPU, before RPS: {seen:?}"
    );
    assert!(lines.iter().all(|l| l["observer"] == "tracepoint"));
    assert!(
        processed[r] >= 2900,
        "the RPS CPU processed the backlog: {processed:?}"
    );
    assert!(
        received_rps[r] > 0,
        "and was woken for it: {received_rps:?}"
    );
    assert_eq!(common::profile_values(&lab), before);
}

/// Where the stack ran for 64 UDP flows to `port`, per CPU, under `steer` with RPS over
/// every CPU; frames arrive unhashed (the lab's wire), as from a NIC without RXHASH.
fn stack_cpus_of_flows(lab: &VethLab, steer: &str, port: u16) -> (Vec<u64>, Vec<Value>) {
    let cpus = online_cpus();
    let all = format!("{}-{}", cpus[0], cpus.last().unwrap());
    let (mut top, said) = attach(
        lab,
        &[
            "--steer",
            steer,
            "--cpus",
            &all,
            "--http-ports",
            "7000",
            "--json",
            "--interval",
            "500ms",
            "--count",
            "4",
            "--bpf-stats",
            "always",
        ],
    );
    assert!(said.contains(&format!("steering {steer}")), "{said}");
    udp_flows(&lab.client, cpus[0], lab.server_ip, port, 64, 40);
    assert!(top.wait().unwrap().success());
    let lines = json_lines(&mut top);
    let stack = per_cpu_sum(&lines, |c| c["stack_class"]["ip"].as_u64().unwrap());
    (stack, lines)
}

/// rps-dissector: a service's flows all hash alike, so they land on one CPU of RPS's set;
/// other ports keep the kernel's hash and spread as under plain RPS, which the same flows
/// show first (so the test can tell the two apart).
#[test]
#[ignore = "needs root: steers a veth lab and attaches a flow dissector"]
fn rps_dissector_lands_a_services_flows_on_one_cpu_and_leaves_the_rest_spread() {
    assert!(online_cpus().len() >= 2, "needs 2 CPUs");
    let lab = lab('d');
    let _wire = rxsteer_dataplane::lab_wire::LabWire::attach(
        &format!("/run/netns/{}", lab.client.name()),
        &lab.client_dev,
    )
    .unwrap();
    let before = common::profile_values(&lab);
    let spread = |stack: &[u64]| {
        let total: u64 = stack.iter().sum();
        total >= 64 * 40 * 9 / 10 && stack.iter().all(|&n| n * 10 >= total)
    };
    let (rps, _) = stack_cpus_of_flows(&lab, "rps", 7000);
    assert!(
        spread(&rps),
        "plain RPS spreads 64 flows over every CPU: {rps:?}"
    );
    let (service, lines) = stack_cpus_of_flows(&lab, "rps-dissector", 7000);
    let total: u64 = service.iter().sum();
    assert!(
        total >= 64 * 40 * 9 / 10 && service.iter().any(|&n| n * 100 >= total * 99),
        "every flow to the service on one CPU: {service:?}"
    );
    let dissected: u64 = lines
        .iter()
        .filter_map(|l| l["bpf"]["measured"].as_array())
        .flatten()
        .filter(|p| p["name"] == "rps_by_service")
        .map(|p| p["runs"].as_u64().unwrap())
        .sum();
    assert!(
        dissected >= total,
        "the dissector was asked for each packet: {dissected} of {total}"
    );
    let (other, _) = stack_cpus_of_flows(&lab, "rps-dissector", 7001);
    assert!(
        spread(&other),
        "another port keeps the kernel's hash: {other:?}"
    );
    assert_eq!(common::profile_values(&lab), before);
    let loaded = rxsteer_dataplane::loaded_rxsteer_programs().unwrap();
    assert!(
        !loaded.iter().any(|p| p == "rps_by_service"),
        "the dissector is gone with the session: {loaded:?}"
    );
}

/// A 192-CPU machine's CPU lists and the queue files of `dev`, as sysfs would hold them.
fn fake_sysfs_192(dev: &str) -> std::path::PathBuf {
    let root = std::env::temp_dir().join(format!("rxsteer-sysfs192-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let cpu = root.join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(cpu.join("online"), "0-191\n").unwrap();
    std::fs::write(cpu.join("possible"), "0-191\n").unwrap();
    let zero = "00000000,00000000,00000000,00000000,00000000,00000000\n";
    for (q, files) in [
        ("rx-0", &[("rps_cpus", zero), ("rps_flow_cnt", "0\n")][..]),
        ("tx-0", &[("xps_cpus", zero)][..]),
    ] {
        let dir = root.join(format!("sys/class/net/{dev}/queues/{q}"));
        std::fs::create_dir_all(&dir).unwrap();
        for (f, v) in files {
            std::fs::write(dir.join(f), v).unwrap();
        }
    }
    root
}

fn files_under(root: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
#[ignore = "needs root: attaches XDP in a veth lab"]
fn rps_masks_past_64_cpus_go_end_to_end_through_attach_on_a_fake_sysfs_tree() {
    let lab = lab('g');
    let real_before = common::profile_values(&lab);
    let root = fake_sysfs_192(&lab.server_dev);
    let fake_before = files_under(&root);
    let rps_file = root.join(format!(
        "sys/class/net/{}/queues/rx-0/rps_cpus",
        lab.server_dev
    ));
    let xps_file = root.join(format!(
        "sys/class/net/{}/queues/tx-0/xps_cpus",
        lab.server_dev
    ));
    let run = |cpus: &str| {
        lab.server
            .command(RXSTEER)
            .env("RXSTEER_TUNE_ROOT", &root)
            .args(["attach", "--iface", &lab.server_dev, "--steer", "rps"])
            .args([
                "--cpus",
                cpus,
                "--json",
                "--interval",
                "300ms",
                "--count",
                "4",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    // CPU 192 is past the fake machine's last: refused, nothing written.
    let out = run("0,192").wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("CPU 192 in --cpus is not online"), "{err}");
    assert_eq!(files_under(&root), fake_before);

    // Both sides of the 32- and 64-bit word boundaries, and a run to the last CPU.
    let mut child = run("0,63,64,100-191");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let said = until_observing(&mut err);
    // Written by hand, most significant 32-bit group first: 191..160, 159..128, 127..96
    // (100-127), 95..64 (64), 63..32 (63), 31..0 (0).
    let want = "ffffffff,ffffffff,fffffff0,00000001,80000000,00000001";
    assert_eq!(std::fs::read_to_string(&rps_file).unwrap().trim(), want);
    assert_eq!(std::fs::read_to_string(&xps_file).unwrap().trim(), want);
    assert!(said.contains("rps (CPUs 0,63-64,100-191)"), "{said}");
    assert!(child.wait().unwrap().success());
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("tuned value(s) restored"), "{rest}");
    assert_eq!(
        files_under(&root),
        fake_before,
        "the fake tree is restored byte for byte"
    );
    assert_eq!(
        common::profile_values(&lab),
        real_before,
        "the real queues were never touched"
    );
    assert_eq!(lab.server.xdp_attached(&lab.server_dev).unwrap(), None);
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn every_exit_restores_the_host_and_modes_are_exclusive() {
    let lab = lab('x');
    let before = common::profile_values(&lab);

    // SIGKILL leaves the tuning; `rxsteer restore` puts it back.
    let (mut a, _) = attach(&lab, &["--steer", "rps", "--json"]);
    assert_ne!(rps_cpus(&lab).trim(), "0");
    // A second session in the same namespace is refused, and changes nothing.
    let out = lab
        .server
        .command(RXSTEER)
        .args([
            "attach",
            "--iface",
            &lab.server_dev,
            "--steer",
            "cpumap",
            "--json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains(&format!(
            "rxsteer attach --steer rps on {} (pid {}) is changing this network namespace's tuning",
            lab.server_dev,
            a.id()
        )),
        "{err}"
    );
    a.kill().unwrap();
    a.wait().unwrap();
    assert_ne!(
        common::profile_values(&lab),
        before,
        "a killed session leaves its tuning"
    );
    let out = lab.server.command(RXSTEER).arg("restore").output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    // Another test of this binary may hold the embedded lab at this instant; restore reports
    // that owner's state as "left to it" on a line of its own, so look for ours by line.
    assert!(
        out.status.success() && said.lines().any(|l| l.starts_with("restored ")),
        "{said}"
    );
    assert_eq!(
        common::profile_values(&lab),
        before,
        "restore is byte-exact"
    );

    // SIGKILL again; this time the next start restores it before doing anything, and a switch
    // to cpumap leaves RPS off while it runs: modes never mix.
    let (mut a, _) = attach(&lab, &["--steer", "rps", "--json"]);
    a.kill().unwrap();
    a.wait().unwrap();
    let (mut b, said) = attach(
        &lab,
        &[
            "--steer",
            "cpumap",
            "--json",
            "--interval",
            "200ms",
            "--count",
            "3",
        ],
    );
    assert!(said.contains("which did not exit cleanly"), "{said}");
    assert_eq!(
        rps_cpus(&lab).trim_matches(|c| c == '0' || c == '\n' || c == ','),
        ""
    );
    assert!(b.wait().unwrap().success());
    assert_eq!(common::profile_values(&lab), before);

    // SIGTERM while it is still setting up (loading programs, tuning): the handlers are
    // installed first, so this too is a clean exit that reverts.
    let mut early = lab
        .server
        .command(RXSTEER)
        .args([
            "attach",
            "--iface",
            &lab.server_dev,
            "--steer",
            "rps",
            "--json",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(150));
    unsafe { libc::kill(early.id() as i32, libc::SIGTERM) };
    assert!(
        early.wait().unwrap().success(),
        "SIGTERM during setup: clean exit"
    );
    assert_eq!(common::profile_values(&lab), before);

    // SIGTERM, and a hang-up (the terminal or ssh session closed) or SIGQUIT: each a clean
    // exit that reverts.
    for signal in [libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        let (mut b, _) = attach(&lab, &["--steer", "rps", "--json"]);
        assert_ne!(common::profile_values(&lab), before, "tuned while attached");
        unsafe { libc::kill(b.id() as i32, signal) };
        assert!(b.wait().unwrap().success(), "signal {signal}: clean exit");
        assert_eq!(
            common::profile_values(&lab),
            before,
            "signal {signal}: reverted"
        );
        assert_eq!(lab.server.xdp_attached(&lab.server_dev).unwrap(), None);
    }
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn bad_steering_input_is_one_line_and_changes_nothing() {
    let lab = lab('v');
    let before = common::profile_values(&lab);
    let dev = lab.server_dev.as_str();
    for (args, needle) in [
        (
            vec!["--steer", "cpumap", "--http-cpus", "4096"],
            "CPU 4096 in --http-cpus is not online",
        ),
        (
            vec!["--steer", "cpumap", "--http-cpus", "0", "--zap-cpus", "0"],
            "CPU 0 is in both --http-cpus and --zap-cpus",
        ),
        (
            vec!["--steer", "cpumap", "--http-cpus", "3-1"],
            "runs backwards",
        ),
        (
            vec!["--steer", "cpumap", "--qsize", "0"],
            "invalid value '0' for '--qsize <QSIZE>': 0 is not in 1..=16384",
        ),
        (
            vec!["--steer", "cpumap", "--qsize", "16385"],
            "invalid value '16385' for '--qsize <QSIZE>': 16385 is not in 1..=16384",
        ),
        (
            vec!["--steer", "rps", "--cpus", "4096"],
            "CPU 4096 in --cpus is not online",
        ),
        (
            vec!["--steer", "rps", "--http-cpus", "0"],
            "--http-cpus only applies to --steer cpumap",
        ),
        (
            vec!["--steer", "cpumap", "--http-ports", "8080,zz"],
            "\"zz\" in port list",
        ),
        (
            vec!["--steer", "bogus"],
            "invalid value 'bogus' for '--steer",
        ),
        (
            vec![
                "--steer",
                "cpumap",
                "--xdp-mode",
                "skb",
                "--xdp-frags",
                "on",
            ],
            "--xdp-frags on: frags-aware programs with cpumap in skb mode",
        ),
    ] {
        let out = lab
            .server
            .command(RXSTEER)
            .args(["attach", "--iface", dev])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Backlog threads are the boot's: on a kernel booted without them the mode is refused in
    // one line naming the option (where this machine runs them, it is accepted instead).
    if !rxsteer_dataplane::procfs::backlog_threads() {
        let out = lab
            .server
            .command(RXSTEER)
            .args(["attach", "--iface", dev, "--steer", "backlog-threads"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_ne!(out.status.code(), Some(0));
        assert!(
            err.contains("booted with thread_backlog_napi") && err.trim().lines().count() == 1,
            "{err}"
        );
    }
    let out = lab
        .server
        .command(RXSTEER)
        .args(["attach", "--iface", "rxnosuch0", "--steer", "rps"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"rxnosuch0\" does not exist"));
    lab.server.ip(&["link", "set", dev, "down"]).unwrap();
    let out = lab
        .server
        .command(RXSTEER)
        .args(["attach", "--iface", dev, "--steer", "cpumap"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("is down"));
    lab.server.ip(&["link", "set", dev, "up"]).unwrap();
    assert_eq!(common::profile_values(&lab), before);
    assert_eq!(lab.server.xdp_attached(dev).unwrap(), None);
}

/// The root namespace's tuning has one state file, and a live session owns it: the tests that
/// tune there take turns.
static ROOT_NS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn root_ns_turn() -> std::sync::MutexGuard<'static, ()> {
    ROOT_NS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A veth pair in the root namespace (this kernel has no dummy device), deleted on drop: the
/// only place global sysctls may be written. It holds the root namespace's turn while it lives.
struct RootVeth {
    dev: String,
    _turn: std::sync::MutexGuard<'static, ()>,
}

impl RootVeth {
    fn create(tag: char) -> Self {
        let turn = root_ns_turn();
        let n = std::process::id() % 10000;
        let (dev, peer) = (format!("rxs{tag}{n}a"), format!("rxs{tag}{n}b"));
        rxsteer::netns::ip(&["link", "add", &dev, "type", "veth", "peer", "name", &peer]).unwrap();
        let v = RootVeth { dev, _turn: turn };
        rxsteer::netns::ip(&["link", "set", &v.dev, "up"]).unwrap();
        v
    }
}

impl Drop for RootVeth {
    fn drop(&mut self) {
        let _ = rxsteer::netns::ip(&["link", "del", &self.dev]);
    }
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path).unwrap().trim().to_string()
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn global_sysctls_are_set_and_restored_from_the_root_namespace() {
    let veth = RootVeth::create('g');
    let dev = veth.dev.clone();
    let globals: Vec<String> = rxsteer_tune::sysctl::REFERENCE
        .iter()
        .map(|(n, _, _)| rxsteer_tune::sysctl::path(n).display().to_string())
        .chain([
            format!("/sys/class/net/{dev}/queues/rx-0/rps_cpus"),
            "/proc/sys/net/core/rps_sock_flow_entries".into(),
        ])
        .collect();
    let read_all =
        || -> Vec<Vec<u8>> { globals.iter().map(|p| std::fs::read(p).unwrap()).collect() };
    let before = read_all();
    let out = Command::new(RXSTEER)
        .args(["tune", "apply", "--iface", &dev, "--profile", "rps"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/core/netdev_max_backlog")
            .unwrap()
            .trim(),
        "300000"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/net/core/rps_sock_flow_entries")
            .unwrap()
            .trim(),
        "1048576"
    );
    let out = Command::new(RXSTEER)
        .args(["tune", "revert"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read_all(), before, "every global value back, byte for byte");
    assert!(no_state_file());
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn rfs_alone_sets_its_flow_tables_without_spreading_and_restores_them() {
    let veth = RootVeth::create('f');
    let dev = &veth.dev;
    let q = |f: &str| format!("/sys/class/net/{dev}/queues/rx-0/{f}");
    let paths = [
        q("rps_cpus"),
        q("rps_flow_cnt"),
        format!("/sys/class/net/{dev}/queues/tx-0/xps_cpus"),
        "/proc/sys/net/core/rps_sock_flow_entries".to_string(),
    ];
    let read_all = || -> Vec<Vec<u8>> { paths.iter().map(|p| std::fs::read(p).unwrap()).collect() };
    let before = read_all();
    let said = common::succeed(Command::new(RXSTEER).args([
        "tune",
        "apply",
        "--iface",
        dev,
        "--profile",
        "rfs",
    ]));
    assert_eq!(read_trimmed(&paths[3]), "1048576", "{}", said.stdout);
    assert_eq!(
        read_trimmed(&paths[1]),
        "65536",
        "one queue's share, capped"
    );
    assert!(
        rxsteer_tune::cpus::parse_cpumask(&read_trimmed(&paths[0]))
            .unwrap()
            .is_empty(),
        "RFS alone spreads nothing: rps_cpus empty"
    );
    common::succeed(Command::new(RXSTEER).args(["tune", "revert"]));
    assert_eq!(read_all(), before, "every value back, byte for byte");
    // As a session: attach puts it in place and takes it back when it ends.
    common::succeed(Command::new(RXSTEER).args([
        "attach", "--iface", dev, "--steer", "rfs", "--count", "1", "--json",
    ]));
    assert_eq!(read_all(), before, "attach left every value as it found it");
    assert!(no_state_file());
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn rfs_is_refused_in_a_namespace_where_its_table_cannot_be_set() {
    let lab = common::lab('f');
    let dev = &lab.server_dev;
    let before = common::profile_values(&lab);
    for args in [
        vec!["attach", "--iface", dev, "--steer", "rfs", "--count", "1"],
        vec!["tune", "apply", "--iface", dev, "--profile", "rfs"],
    ] {
        let out = lab.server.command(RXSTEER).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("rfs: it needs net.core.rps_sock_flow_entries")
                && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    assert_eq!(common::profile_values(&lab), before, "nothing changed");
}

#[test]
#[ignore = "needs root: steers a veth lab and changes sysctls"]
fn state_files_of_namespaces_that_are_gone_are_removed_in_one_line_each() {
    // `restore` reverts the root namespace's tuning: not while another test holds it.
    let _turn = root_ns_turn();
    // A lab namespace deleted while its session was killed leaves a state file no namespace
    // can restore: `rxsteer restore` (and every start) removes it and says so.
    let dir = std::path::Path::new(rxsteer_tune::state::STATE_DIR);
    std::fs::create_dir_all(dir).unwrap();
    let orphan = dir.join("tune-netns-1.json");
    std::fs::write(&orphan, b"{}").unwrap();
    let said = common::succeed(Command::new(RXSTEER).arg("restore")).stderr;
    assert!(
        said.contains("tune-netns-1.json: its network namespace (inode 1) no longer exists"),
        "{said}"
    );
    assert!(!orphan.exists());
}

/// The CPUs of each NAPI kthread of `dev`, by pid.
fn napi_kthread_cpus(dev: &str) -> Vec<(u32, Vec<u32>)> {
    let prefix = rxsteer_tune::pin::napi_comm_prefix(dev);
    rxsteer_tune::pin::kthreads_with_comm_prefix(&[&prefix])
        .unwrap()
        .into_iter()
        .map(|(pid, _)| (pid, rxsteer_tune::pin::affinity_of(pid).unwrap()))
        .collect()
}

/// A root-namespace veth whose NAPI can be threaded (a veth has NAPI only with GRO or XDP).
fn napi_veth(tag: char) -> RootVeth {
    let veth = RootVeth::create(tag);
    let out = Command::new("ethtool")
        .args(["-K", &veth.dev, "gro", "on"])
        .output()
        .unwrap();
    assert!(out.status.success(), "ethtool -K {} gro on", veth.dev);
    veth
}

#[test]
#[ignore = "needs root: threads a veth's NAPI and pins its kthread"]
fn napi_thread_pins_the_kthreads_and_puts_back_threaded_and_their_cpus() {
    let veth = napi_veth('n');
    let dev = &veth.dev;
    let threaded = format!("/sys/class/net/{dev}/threaded");
    let target = *online_cpus().last().unwrap();
    let before = std::fs::read(&threaded).unwrap();
    assert_eq!(
        read_trimmed(&threaded),
        "0",
        "a fresh veth polls in softirq"
    );
    let said = common::succeed(Command::new(RXSTEER).args([
        "tune",
        "apply",
        "--iface",
        dev,
        "--profile",
        "napi-thread",
        "--napi-cpu",
        &target.to_string(),
    ]));
    assert_eq!(read_trimmed(&threaded), "1", "{}", said.stdout);
    let pinned = napi_kthread_cpus(dev);
    assert!(!pinned.is_empty(), "no NAPI kthread: {}", said.stdout);
    for (pid, cpus) in &pinned {
        assert_eq!(cpus, &[target], "kthread {pid}");
    }
    common::succeed(Command::new(RXSTEER).args(["tune", "revert"]));
    assert_eq!(std::fs::read(&threaded).unwrap(), before, "threaded back");
    // Where the kernel keeps the kthreads after threaded goes off (before 6.15 or so), they
    // are no longer pinned where rxsteer put them: they have the CPUs a new kthread gets.
    let fresh = rxsteer_tune::pin::affinity_of(2).unwrap();
    for (pid, cpus) in napi_kthread_cpus(dev) {
        assert_eq!(cpus, fresh, "kthread {pid} left pinned");
    }
    assert!(no_state_file());
}

#[test]
#[ignore = "needs root: threads a veth's NAPI and pins its kthread"]
fn an_admins_napi_pin_comes_back_after_a_session_and_after_a_crash() {
    let veth = napi_veth('p');
    let dev = &veth.dev;
    let threaded = format!("/sys/class/net/{dev}/threaded");
    let cpus = online_cpus();
    let (theirs, ours) = (cpus[0], *cpus.last().unwrap());
    // The admin threads NAPI and pins its kthread: what rxsteer must put back.
    std::fs::write(&threaded, "1").unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    while napi_kthread_cpus(dev).is_empty() {
        assert!(Instant::now() < deadline, "no NAPI kthread for {dev}");
        std::thread::sleep(Duration::from_millis(20));
    }
    for (pid, _) in napi_kthread_cpus(dev) {
        rxsteer_tune::pin::pin_task(pid, &[theirs]).unwrap();
    }
    let found = napi_kthread_cpus(dev);
    let ours_s = ours.to_string();
    let session = ["attach", "--iface", dev, "--steer", "napi-thread"];
    // A session that ends by itself.
    common::succeed(Command::new(RXSTEER).args(session).args([
        "--napi-cpu",
        &ours_s,
        "--count",
        "1",
        "--json",
    ]));
    assert_eq!(napi_kthread_cpus(dev), found, "the admin's pin is back");
    assert_eq!(read_trimmed(&threaded), "1");
    // A session killed outright: `rxsteer restore` puts the pin back.
    let mut child = Command::new(RXSTEER)
        .args(session)
        .args(["--napi-cpu", &ours_s, "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = until_observing(&mut BufReader::new(child.stderr.take().unwrap()));
    for (pid, cpus) in napi_kthread_cpus(dev) {
        assert_eq!(cpus, [ours], "kthread {pid} while attached: {said}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let said = common::succeed(Command::new(RXSTEER).arg("restore"));
    assert_eq!(
        napi_kthread_cpus(dev),
        found,
        "the admin's pin is back after a crash: {}",
        said.stdout
    );
    assert!(no_state_file());
}

#[test]
#[ignore = "needs root: creates a veth"]
fn napi_thread_refuses_a_cpu_flag_it_does_not_take_and_a_device_without_napi() {
    let veth = RootVeth::create('q');
    let dev = &veth.dev;
    let threaded = format!("/sys/class/net/{dev}/threaded");
    let before = std::fs::read(&threaded).unwrap();
    let out = Command::new(RXSTEER)
        .args(["tune", "apply", "--iface", dev, "--profile", "napi-thread"])
        .args(["--cpus", "0"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--cpus only applies to --steer rps"),
        "{err}"
    );
    // GRO off: the veth has no NAPI to thread; the refusal says why and nothing stays changed.
    let out = Command::new(RXSTEER)
        .args(["tune", "apply", "--iface", dev, "--profile", "napi-thread"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no NAPI instance to thread"),
        "{err}"
    );
    assert_eq!(std::fs::read(&threaded).unwrap(), before);
    common::succeed(Command::new(RXSTEER).args(["tune", "revert"]));
    assert!(no_state_file());
}

#[test]
#[ignore = "needs root: tunes a veth in the root namespace"]
fn busy_poll_defers_the_interrupt_and_suspends_it_and_puts_every_value_back() {
    use rxsteer_tune::irq_suspend;
    // GRO on: the veth has a NAPI instance, whose IRQ suspension (6.13) the arm sets too.
    let veth = napi_veth('b');
    let dev = &veth.dev;
    let files: Vec<String> = rxsteer_tune::profile::IRQ_DEFERRAL
        .iter()
        .map(|(f, _)| format!("/sys/class/net/{dev}/{f}"))
        .collect();
    let ifindex = std::path::PathBuf::from(format!("/sys/class/net/{dev}/ifindex"));
    let suspension = irq_suspend::unsupported(&ifindex);
    if let Some(why) = &suspension {
        // Only an older kernel may lack it, and then the arm says so and runs without it.
        assert!(why.contains("6.13"), "{why}");
        println!("note: this kernel has no per-NAPI IRQ suspension: {why}");
    } else {
        // The admin's own value, which rxsteer must put back.
        irq_suspend::write(&ifindex, "777").unwrap();
    }
    let read_all = || -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = files.iter().map(|p| std::fs::read(p).unwrap()).collect();
        if suspension.is_none() {
            v.push(irq_suspend::read(&ifindex).unwrap().into_bytes());
        }
        v
    };
    let before = read_all();
    let said = common::succeed(Command::new(RXSTEER).args([
        "tune",
        "apply",
        "--iface",
        dev,
        "--profile",
        "busy-poll",
    ]));
    for (path, (_, want)) in files.iter().zip(rxsteer_tune::profile::IRQ_DEFERRAL) {
        assert_eq!(read_trimmed(path), want, "{path}: {}", said.stdout);
    }
    if suspension.is_none() {
        let now = irq_suspend::read(&ifindex).unwrap();
        assert!(
            irq_suspend::same(&irq_suspend::WANTED_NS.to_string(), &now),
            "every NAPI instance suspended: {now}; {}",
            said.stdout
        );
    }
    common::succeed(Command::new(RXSTEER).args(["tune", "revert"]));
    assert_eq!(read_all(), before, "every value back, byte for byte");
    assert!(no_state_file());
    // A session killed outright: `rxsteer restore` puts them back too.
    let mut child = Command::new(RXSTEER)
        .args(["attach", "--iface", dev, "--steer", "busy-poll", "--json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let said = until_observing(&mut BufReader::new(child.stderr.take().unwrap()));
    assert_ne!(read_all(), before, "the session tuned nothing: {said}");
    child.kill().unwrap();
    child.wait().unwrap();
    let said = common::succeed(Command::new(RXSTEER).arg("restore"));
    assert_eq!(read_all(), before, "back after a crash: {}", said.stdout);
    assert!(no_state_file());
}
