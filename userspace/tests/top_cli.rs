//! `rxsteer top` as a user runs it: inside a lab namespace, JSON lines, observing with no XDP
//! program by default (receive tracepoints), and every way it can stop (count reached, SIGTERM,
//! SIGINT, SIGKILL, a bad flag, an unusable interface) leaves nothing attached. Needs root.
mod common;

use common::{lab, online_cpus, udp_burst, wait_with_timeout};
use serde_json::Value;
use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

/// top's flags for `count` JSON lines of `interval` each on `dev`.
fn json_lines<'a>(dev: &'a str, count: &'a str, interval: &'a str) -> [&'a str; 7] {
    [
        "--iface",
        dev,
        "--json",
        "--count",
        count,
        "--interval",
        interval,
    ]
}

/// Starts top in `ns` and waits for its "observing" line on stderr.
fn start_top(ns: &rxsteer::netns::Netns, args: &[&str]) -> Child {
    spawn_top(ns, args).0
}

/// [`start_top`], keeping the rest of its stderr and the first line.
fn spawn_top(
    ns: &rxsteer::netns::Netns,
    args: &[&str],
) -> (Child, BufReader<std::process::ChildStderr>, String) {
    let mut child = ns
        .command(RXSTEER)
        .arg("top")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    assert!(line.contains("observing"), "top did not start: {line}");
    (child, err, line)
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn json_lines_show_packets_and_net_rx_time_on_the_sending_cpu() {
    let lab = lab('j');
    let cpus = online_cpus();
    let sender = *cpus.last().unwrap();
    // Every run counted: the burst is shorter than an interval.
    let mut top = start_top(
        &lab.server,
        &[
            &json_lines(&lab.server_dev, "6", "400ms")[..],
            &["--bpf-stats", "always"],
        ]
        .concat(),
    );
    // 2.4 s of samples for a burst that takes well under one: room for a starved sender
    // when the other tests load the machine (a burst still running at the last sample was
    // seen to lose its final 64 datagrams).
    assert_eq!(
        lab.server.xdp_attached(&lab.server_dev).unwrap(),
        None,
        "the default observer attaches no XDP program"
    );
    udp_burst(&lab.client, sender, lab.server_ip, 5000, 2000);
    let status = wait_with_timeout(&mut top, Duration::from_secs(15));
    assert!(status.success());
    let lines: Vec<Value> = BufReader::new(top.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    let mut packets = vec![0u64; cpus.len()];
    let mut net_rx_ns = vec![0u64; cpus.len()];
    for l in &lines {
        assert_eq!(l["iface"], lab.server_dev.as_str());
        assert_eq!(l["observer"], "tracepoint");
        assert!(l.get("xdp_mode").is_none(), "no XDP mode without XDP: {l}");
        for (i, c) in l["cpus"].as_array().unwrap().iter().enumerate() {
            packets[i] += c["packets"].as_u64().unwrap();
            net_rx_ns[i] += c["net_rx_ns"].as_u64().unwrap();
            assert_eq!(c["class_packets"]["http"], 0);
            // The derived figures beside the raw columns: NET_RX ms per second of the line's
            // interval, and a time split that adds up to the interval.
            let d = &l["derived"][i];
            assert_eq!(d["cpu"], c["cpu"]);
            let per_s = c["net_rx_ns"].as_f64().unwrap() / 1e6 / l["interval_s"].as_f64().unwrap();
            assert!(
                (d["net_rx_ms_per_s"].as_f64().unwrap() - per_s).abs() < 1e-6,
                "{d}"
            );
            let split: f64 = d["time_ms_per_s"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .sum();
            assert!((split - 1000.0).abs() < 2.0, "a second's split: {d}");
        }
    }
    let s = sender as usize;
    assert_eq!(
        packets[s], 2000,
        "all datagrams counted on the sender's CPU: {packets:?}"
    );
    assert_eq!(packets.iter().sum::<u64>(), 2000, "{packets:?}");
    assert!(
        net_rx_ns[s] > 0,
        "NET_RX time on the sender's CPU: {net_rx_ns:?}"
    );
    // What observing cost, from the kernel's own statistics: the receive tracepoint and the
    // tc ingress witness ran once per datagram at least, each run took some time.
    let runs = program_runs(&lines);
    let (n, ns) = runs.get("tc_ingress").copied().unwrap_or_default();
    assert!(
        n >= 2000 && ns > 0,
        "tc_ingress: {n} runs, {ns} ns of {runs:?}"
    );
    assert!(
        ["rx_driver_poll", "rx_driver_netif_rx"]
            .iter()
            .any(|p| runs.get(*p).is_some_and(|&(n, ns)| n > 0 && ns > 0)),
        "a receive tracepoint ran: {runs:?}"
    );
    assert!(
        !runs.contains_key("steer") && !runs.contains_key("rx_account"),
        "no XDP program ran: {runs:?}"
    );
    assert_eq!(lab.server.xdp_attached(&lab.server_dev).unwrap(), None);
    // The kernel's statistics are off again once top is gone (it held them by descriptor).
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled")
            .unwrap()
            .trim(),
        "0"
    );
}

/// Each program's runs and nanoseconds over `lines`, from the kernel's statistics.
fn program_runs(lines: &[Value]) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut runs: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for l in lines {
        for p in l["bpf"]["measured"]
            .as_array()
            .unwrap_or_else(|| panic!("{l}"))
        {
            let e = runs
                .entry(p["name"].as_str().unwrap().to_string())
                .or_default();
            e.0 += p["runs"].as_u64().unwrap();
            e.1 += p["ns"].as_u64().unwrap();
        }
    }
    runs
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn each_observe_level_runs_its_programs_and_says_what_it_lacks() {
    let lab = lab('o');
    let sender = *online_cpus().last().unwrap();
    let ran = |runs: &std::collections::BTreeMap<String, (u64, u64)>, p: &str| {
        runs.get(p).map_or(0, |r| r.0)
    };
    // tc ingress sees every datagram; egress the ICMP port-unreachable replies.
    for (level, ingress, egress, lacks) in [
        ("minimal", false, false, Some("where the stack ran")),
        ("default", true, false, Some("where replies left")),
        ("full", true, true, None),
    ] {
        let (mut top, mut err, mut said) = spawn_top(
            &lab.server,
            &[
                "--iface",
                &lab.server_dev,
                "--json",
                "--count",
                "3",
                "--interval",
                "300ms",
                "--observe",
                level,
                "--bpf-stats",
                "always",
            ],
        );
        udp_burst(&lab.client, sender, lab.server_ip, 5000, 500);
        let status = wait_with_timeout(&mut top, Duration::from_secs(15));
        assert!(status.success(), "{level}: {status}");
        std::io::Read::read_to_string(&mut err, &mut said).unwrap();
        let lines: Vec<Value> = BufReader::new(top.stdout.take().unwrap())
            .lines()
            .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
            .collect();
        assert_eq!(lines[0]["observe"], level, "{}", lines[0]);
        let runs = program_runs(&lines);
        assert_eq!(
            ran(&runs, "tc_ingress") >= 500,
            ingress,
            "{level}: {runs:?}"
        );
        assert_eq!(ran(&runs, "tc_egress") > 0, egress, "{level}: {runs:?}");
        // NET_RX's runs by length at every level, one bucket count per run; its waits timed
        // (softirq_raise) only at full, and absent below it.
        let sum = |field: &str| -> u64 {
            lines
                .iter()
                .flat_map(|l| l["cpus"].as_array().unwrap())
                .map(|c| match &c[field] {
                    Value::Array(b) => b.iter().map(|n| n.as_u64().unwrap()).sum(),
                    n => n.as_u64().unwrap_or(0),
                })
                .sum()
        };
        assert!(sum("net_rx_runs") > 0, "{level}");
        assert_eq!(sum("net_rx_run_log2"), sum("net_rx_runs"), "{level}");
        let full = level == "full";
        assert_eq!(ran(&runs, "softirq_raise") > 0, full, "{level}: {runs:?}");
        assert_eq!(sum("net_rx_wait_log2") > 0, full, "{level}");
        match lacks {
            Some(what) => assert!(
                said.contains(&format!("--observe {level}: not counting {what}")),
                "{level}: {said}"
            ),
            None => assert!(!said.contains("not counting"), "{level}: {said}"),
        }
        if level == "minimal" {
            assert!(lines[0]["tc"]["unavailable"].is_string(), "{}", lines[0]);
        }
    }
    let (code, err) = run_top(&lab.server, &["--iface", "lo", "--observe", "everything"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("invalid value 'everything' for '--observe")
            && err.contains("[possible values: default, minimal, full]"),
        "{err}"
    );
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn by_default_the_statistics_are_on_for_a_tenth_of_each_interval_and_scaled() {
    let lab = lab('w');
    let sender = *online_cpus().last().unwrap();
    let mut top = start_top(&lab.server, &json_lines(&lab.server_dev, "4", "500ms"));
    // A steady trickle across every window: 40 datagrams every 10 ms for 2.2 s.
    for _ in 0..220 {
        udp_burst(&lab.client, sender, lab.server_ip, 5000, 40);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(wait_with_timeout(&mut top, Duration::from_secs(15)).success());
    let lines: Vec<Value> = BufReader::new(top.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for l in &lines {
        let w = l["bpf_window_s"].as_f64().unwrap_or_else(|| panic!("{l}"));
        assert!((0.03..0.15).contains(&w), "a tenth of 500 ms: {w}");
    }
    // The window's runs are scaled to the interval: about the datagrams tc ingress counted
    // in the same intervals (each run is one datagram), within what a 50 ms window of a
    // trickle in 10 ms steps can say.
    let runs = program_runs(&lines[1..]);
    let counted: u64 = lines[1..]
        .iter()
        .flat_map(|l| l["cpus"].as_array().unwrap().iter())
        .map(|c| c["stack_packets"].as_u64().unwrap())
        .sum();
    let (n, _) = runs.get("tc_ingress").copied().unwrap_or_default();
    assert!(counted > 1000, "{counted}");
    assert!(
        n as f64 > counted as f64 * 0.3 && (n as f64) < counted as f64 * 3.0,
        "tc_ingress scaled runs {n} against {counted} counted: {runs:?}"
    );
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn signals_stop_it_and_detach() {
    let lab = lab('s');
    for (signal, name) in [
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGKILL, "SIGKILL"),
    ] {
        let mut top = start_top(
            &lab.server,
            &["--iface", &lab.server_dev, "--json", "--observer", "xdp"],
        );
        assert!(
            lab.server.xdp_attached(&lab.server_dev).unwrap().is_some(),
            "attached while running"
        );
        // `ip netns exec` execs rxsteer, so the child's pid is rxsteer's.
        unsafe { libc::kill(top.id() as i32, signal) };
        let status = wait_with_timeout(&mut top, Duration::from_secs(5));
        if signal != libc::SIGKILL {
            assert!(status.success(), "{name}: clean exit, got {status}");
        }
        // The XDP program hangs off a bpf_link: closing the fd (even by SIGKILL) detaches it.
        let start = Instant::now();
        while lab.server.xdp_attached(&lab.server_dev).unwrap().is_some() {
            assert!(
                start.elapsed() < Duration::from_secs(2),
                "{name}: XDP still attached"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn run_top(ns: &rxsteer::netns::Netns, args: &[&str]) -> (i32, String) {
    let out = ns.command(RXSTEER).arg("top").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn bad_input_is_one_clear_line_and_leaves_nothing_attached() {
    let lab = lab('b');
    let dev = lab.server_dev.as_str();
    // Loopback has no native XDP: forcing driver mode must fail and leave lo clean.
    let (code, err) = run_top(
        &lab.server,
        &[
            "--iface",
            "lo",
            "--observer",
            "xdp",
            "--xdp-mode",
            "drv",
            "--json",
            "--count",
            "1",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        // Refused by the trial attach, before any program of rxsteer's is attached.
        err.starts_with("rxsteer: --xdp-mode drv: lo has no native (driver) XDP")
            && err.contains("; --xdp-mode skb runs it in generic mode"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(lab.server.xdp_attached("lo").unwrap(), None);
    // ...while auto falls back to skb mode and says so, with what that was measured to cost.
    let out = lab
        .server
        .command(RXSTEER)
        .args([
            "top",
            "--iface",
            "lo",
            "--observer",
            "xdp",
            "--json",
            "--count",
            "1",
            "--interval",
            "100ms",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["xdp_mode"], "skb");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("skb (generic) mode"), "{said}");
    assert!(
        said.contains("--xdp-mode auto: lo has no native XDP, so skb mode"),
        "{said}"
    );
    assert!(
        said.contains("the kernel skips GRO, so every frame"),
        "{said}"
    );
    assert!(
        said.contains("--observer xdp in skb mode: the kernel skips GRO on the interface")
            && said.contains("last measured cost: "),
        "{said}"
    );
    assert_eq!(line["tc"], "tcx", "tc witnesses attached beside XDP");
    assert!(
        line["cpus"][0]["time"]["idle"].is_u64(),
        "/proc/stat per CPU"
    );

    let (code, err) = run_top(&lab.server, &["--iface", "rxnosuch0", "--json"]);
    assert_eq!(
        (code, err.trim()),
        (
            1,
            "rxsteer: interface \"rxnosuch0\" does not exist (in this network namespace)"
        )
    );

    lab.server.ip(&["link", "set", dev, "down"]).unwrap();
    let (code, err) = run_top(&lab.server, &["--iface", dev, "--json"]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!("interface \"{dev}\" is down")),
        "{err}"
    );
    assert_eq!(lab.server.xdp_attached(dev).unwrap(), None);

    for (args, needle) in [
        (
            vec!["--iface", "lo", "--http-ports", "80,x"],
            "\"x\" in port list \"80,x\"",
        ),
        (
            vec!["--iface", "lo", "--zap-ports", "0"],
            "\"0\" in port list \"0\"",
        ),
        (
            vec!["--iface", "lo", "--http-ports", "80", "--zap-ports", "80"],
            "port 80 is in both",
        ),
        (
            vec!["--iface", "lo", "--interval", "1ms"],
            "between 50ms and 1h",
        ),
        (
            vec!["--iface", "lo", "--xdp-mode", "hw"],
            "invalid value 'hw' for '--xdp-mode",
        ),
        (
            vec!["--iface", "lo", "--xdp-frags", "maybe"],
            "invalid value 'maybe' for '--xdp-frags",
        ),
        (
            vec!["--iface", "bad/name"],
            "\"bad/name\" is not a valid interface name",
        ),
    ] {
        let (code, err) = run_top(&lab.server, &args);
        assert_ne!(code, 0, "{args:?}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // Out of range: the flag parser's one line with the range, exit 2.
    let (code, err) = run_top(&lab.server, &["--iface", "lo", "--count", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("0 is not in 1.."), "{err}");
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn without_privileges_it_names_the_missing_capabilities() {
    // setpriv drops every capability but keeps uid 0: the check must look at capabilities.
    let out = Command::new("setpriv")
        .args([
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
            RXSTEER,
            "top",
            "--iface",
            "lo",
            "--json",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("rxsteer top needs root or CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON; missing: CAP_BPF, CAP_NET_ADMIN, CAP_PERFMON"), "{err}");
}

/// Sends `count` copies of `frame` out of `dev` in `ns` through an AF_PACKET socket, from one
/// CPU (veth then runs the receiver's XDP there).
fn send_raw(ns: &rxsteer::netns::Netns, dev: &str, frame: Vec<u8>, count: u32) {
    let dev = dev.to_string();
    ns.spawn(Some(online_cpus()[0]), move || {
        // SAFETY: plain socket calls on a descriptor this closure owns and closes.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            anyhow::ensure!(
                fd >= 0,
                "AF_PACKET socket: {}",
                std::io::Error::last_os_error()
            );
            let name = std::ffi::CString::new(dev.clone())?;
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = libc::if_nametoindex(name.as_ptr()) as i32;
            addr.sll_halen = 6;
            for _ in 0..count {
                let n = libc::sendto(
                    fd,
                    frame.as_ptr().cast(),
                    frame.len(),
                    0,
                    (&addr as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                );
                anyhow::ensure!(n >= 0, "sendto: {}", std::io::Error::last_os_error());
            }
            libc::close(fd);
        }
        Ok(())
    })
    .join()
    .unwrap()
    .expect("raw frames");
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn kernel_diagnostics_reach_rust_log_rate_limited() {
    use rxsteer_common::frames::{Ip, Spec};
    let lab = lab('d');
    let mut top = lab
        .server
        .command(RXSTEER)
        .args(["top", "--iface", &lab.server_dev, "--json", "--count", "3"])
        .args(["--interval", "300ms", "--observer", "xdp"])
        .env("RUST_LOG", "debug")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(top.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("observing") {
        assert!(err.read_line(&mut said).unwrap() > 0, "top exited: {said}");
    }
    // IPv4 with a header length of 4 bytes: a frame the parser must give up on.
    let bad = Spec::tcp(Ip::V4, 40000, 8080).build().with_byte(14, 0x41);
    send_raw(&lab.client, &lab.client_dev, bad.as_bytes().to_vec(), 100);
    assert!(wait_with_timeout(&mut top, Duration::from_secs(10)).success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    let records: Vec<&str> = rest
        .lines()
        .filter(|l| l.contains("the parser gave up on"))
        .collect();
    assert!(!records.is_empty(), "a debug record: {rest}");
    // 100 malformed frames on one CPU log at counts 1, 2, 4, ..., 64: at most 7 records.
    assert!(records.len() <= 7, "rate-limited: {records:?}");
    assert!(
        records[0].contains("malformed header; 1 on this CPU"),
        "{records:?}"
    );
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn without_a_terminal_it_prints_lines_instead_of_panicking() {
    // No --json, and stdout a pipe (a script, cron, `ssh host rxsteer top` without -t).
    let lab = lab('n');
    let out = lab
        .server
        .command(RXSTEER)
        .args([
            "top",
            "--iface",
            &lab.server_dev,
            "--count",
            "2",
            "--interval",
            "200ms",
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("not a terminal: one line per interval"),
        "{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("t ") && l.contains("cpu0 rx") && l.contains("observer: ")),
        "{stdout}"
    );
    assert_eq!(lab.server.xdp_attached(&lab.server_dev).unwrap(), None);
}

/// The clsact qdisc of `dev` in `ns`, as `tc qdisc show` lists it.
fn has_clsact(ns: &rxsteer::netns::Netns, dev: &str) -> bool {
    let out = ns
        .command("tc")
        .args(["qdisc", "show", "dev", dev])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).contains("qdisc clsact")
}

#[test]
#[ignore = "needs root: attaches XDP and tc programs in a veth lab"]
fn tc_witnesses_on_a_clsact_qdisc_of_our_own_are_removed_even_after_sigkill() {
    // Kernels before 6.6 have no TCX: the witnesses hang on a clsact qdisc rxsteer adds.
    let lab = lab('q');
    let cpus = online_cpus();
    let dev = lab.server_dev.clone();
    let mut top = start_top(
        &lab.server,
        &[
            "--iface",
            &dev,
            "--json",
            "--count",
            "3",
            "--interval",
            "300ms",
            "--tc",
            "clsact",
        ],
    );
    assert!(has_clsact(&lab.server, &dev), "the qdisc while observing");
    udp_burst(&lab.client, cpus[0], lab.server_ip, 5000, 500);
    assert!(wait_with_timeout(&mut top, Duration::from_secs(10)).success());
    let lines: Vec<Value> = BufReader::new(top.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(lines.iter().all(|l| l["tc"] == "clsact"), "{lines:?}");
    let stack: u64 = lines
        .iter()
        .flat_map(|l| l["cpus"].as_array().unwrap().iter())
        .map(|c| c["stack_class"]["ip"].as_u64().unwrap())
        .sum();
    assert_eq!(stack, 500, "tc ingress saw every datagram");
    assert!(!has_clsact(&lab.server, &dev), "deleted on a clean exit");

    // An interface that already has one is not shared: refused, and left as it was.
    lab.server
        .command("tc")
        .args(["qdisc", "add", "dev", &dev, "clsact"])
        .output()
        .unwrap();
    let (code, err) = run_top(
        &lab.server,
        &["--iface", &dev, "--json", "--count", "1", "--tc", "clsact"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("already has a clsact qdisc (someone else's tc programs)"),
        "{err}"
    );
    assert!(has_clsact(&lab.server, &dev), "someone else's qdisc stays");
    lab.server
        .command("tc")
        .args(["qdisc", "del", "dev", &dev, "clsact"])
        .output()
        .unwrap();

    // SIGKILL leaves the qdisc; `rxsteer restore` (or the next start) removes it.
    let mut top = start_top(&lab.server, &["--iface", &dev, "--json", "--tc", "clsact"]);
    top.kill().unwrap();
    top.wait().unwrap();
    assert!(has_clsact(&lab.server, &dev), "a SIGKILL leaves the qdisc");
    let said = common::succeed(lab.server.command(RXSTEER).arg("restore")).stderr;
    assert!(said.contains("removed the clsact qdisc on"), "{said}");
    assert!(!has_clsact(&lab.server, &dev), "restored");
}
