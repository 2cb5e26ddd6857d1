//! `--metrics` against the real thing: Debian's Prometheus server scrapes `rxsteer top` in a
//! veth lab while datagrams arrive from one CPU, and its query API shows the per-CPU counters
//! risen on that CPU; promtool passes the exposition; every panel of the shipped Grafana
//! dashboard gets data back; a flood of idle connections never stalls sampling; a port in use
//! is refused before anything is attached. Needs root and the `prometheus` package (`cargo
//! xtask test` installs it).
mod common;

use common::{http_get as get, lab, online_cpus, udp_burst, wait_with_timeout};
use rxsteer::netns::Netns;
use serde::Deserialize;
use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    process::{Child, Stdio},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");
const EXPORTER: &str = "127.0.0.1:19464";
const PROMETHEUS: &str = "127.0.0.1:19090";

/// What the query API answers (`/api/v1/query`), the parts read here.
#[derive(Deserialize)]
struct Answer {
    status: String,
    data: Data,
}

#[derive(Deserialize)]
struct Data {
    result: Vec<Series>,
}

#[derive(Deserialize)]
struct Series {
    metric: std::collections::BTreeMap<String, String>,
    /// [timestamp, "value"].
    value: (f64, String),
}

fn query(ns: &Netns, promql: &str) -> Vec<Series> {
    let q: String = promql
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = get(ns, PROMETHEUS, &format!("/api/v1/query?query={q}"), "*/*");
    assert_eq!(status, 200, "{promql}: {body}");
    let a: Answer = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{promql}: {e}: {body}"));
    assert_eq!(a.status, "success", "{promql}: {body}");
    a.data.result
}

/// Prometheus in `ns`, scraping the exporter every second; killed when dropped.
struct Server(Child, std::path::PathBuf);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn prometheus(ns: &Netns) -> Server {
    let dir = std::env::temp_dir().join(format!("rxsteer-prometheus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: rxsteer\n    static_configs:\n      - targets: ['{EXPORTER}']\n"
        ),
    )
    .unwrap();
    let child = ns
        .command("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address={PROMETHEUS}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("starting prometheus (the Debian package `prometheus`)");
    Server(child, dir)
}

/// `rxsteer COMMAND` (top, or attach with its flags) in `ns` with `--metrics`, JSON lines on
/// stdout, until the line that says where it serves.
fn observing(
    ns: &Netns,
    dev: &str,
    command: &[&str],
    count: &str,
) -> (Child, BufReader<std::process::ChildStderr>) {
    let mut child = ns
        .command(RXSTEER)
        .args(command)
        .args(["--iface", dev, "--json", "--interval", "500ms"])
        .args([
            "--count",
            count,
            "--metrics",
            EXPORTER,
            "--bpf-stats",
            "always",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains("OpenMetrics for Prometheus at http://127.0.0.1:19464/metrics") {
        let mut line = String::new();
        assert!(err.read_line(&mut line).unwrap() > 0, "it ended: {said}");
        said.push_str(&line);
    }
    (child, err)
}

/// Polls `promql` until a series satisfies `ok` (Prometheus needs a few scrapes), at most 30 s.
fn eventually(ns: &Netns, promql: &str, ok: impl Fn(&[Series]) -> bool) -> Vec<Series> {
    let start = Instant::now();
    loop {
        let r = query(ns, promql);
        if ok(&r) {
            return r;
        }
        let seen: Vec<_> = r.iter().map(|s| (&s.metric, &s.value.1)).collect();
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{promql}: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The dashboard's panel queries, with Grafana's rate interval as a test can evaluate it.
#[derive(Deserialize)]
struct Dashboard {
    panels: Vec<Panel>,
}

#[derive(Deserialize)]
struct Panel {
    title: String,
    targets: Vec<Target>,
}

#[derive(Deserialize)]
struct Target {
    expr: String,
}

#[test]
#[ignore = "needs root and Debian's prometheus: a veth lab scraped by a real Prometheus server"]
fn prometheus_scrapes_the_per_cpu_counters_where_the_receive_ran() {
    let lab = lab('p');
    let sender = *online_cpus().last().unwrap();
    let server = prometheus(&lab.server);
    // attach --steer rps: the steering gauges too (top has none); --observe full: NET_RX's
    // wait histogram too.
    let (mut top, mut err) = observing(
        &lab.server,
        &lab.server_dev,
        &["attach", "--steer", "rps", "--observe", "full"],
        "60",
    );
    // The exposition as curl and promtool get it (classic text), and as Prometheus asks.
    let (status, text) = get(&lab.server, EXPORTER, "/metrics", "*/*");
    assert_eq!(status, 200);
    let mut promtool = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (the Debian package `prometheus`)");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    let (_, om) = get(
        &lab.server,
        EXPORTER,
        "/metrics",
        "application/openmetrics-text",
    );
    assert!(om.ends_with("# EOF\n"), "{om}");
    assert_eq!(get(&lab.server, EXPORTER, "/other", "*/*").0, 404);

    // Datagrams from one CPU: the veth's receive runs there.
    for _ in 0..6 {
        udp_burst(&lab.client, sender, lab.server_ip, 5000, 2000);
    }
    let up = eventually(&lab.server, "up{job=\"rxsteer\"}", |r| {
        r.iter().any(|s| s.value.1 == "1")
    });
    assert_eq!(up.len(), 1);
    let by_cpu = eventually(
        &lab.server,
        "sum by (cpu) (rxsteer_receive_packets_total)",
        |r| {
            r.iter().any(|s| {
                s.metric["cpu"] == sender.to_string()
                    && s.value.1.parse::<f64>().unwrap() >= 10000.0
            })
        },
    );
    let on = |cpu: &str| {
        by_cpu
            .iter()
            .find(|s| s.metric["cpu"] == cpu)
            .map_or(0.0, |s| s.value.1.parse::<f64>().unwrap())
    };
    let total: f64 = by_cpu
        .iter()
        .map(|s| s.value.1.parse::<f64>().unwrap())
        .sum();
    assert!(
        on(&sender.to_string()) >= 0.9 * total,
        "the receive ran on CPU {sender}: {:?}",
        by_cpu
            .iter()
            .map(|s| (&s.metric, &s.value.1))
            .collect::<Vec<_>>()
    );
    eventually(&lab.server, "rxsteer_net_rx_seconds_total", |r| {
        r.iter().any(|s| {
            s.metric["cpu"] == sender.to_string() && s.value.1.parse::<f64>().unwrap() > 0.0
        })
    });
    // The kernel's histograms: NET_RX's runs and (at --observe full) its waits, counted on
    // the CPU that received.
    for histogram in [
        "rxsteer_net_rx_run_seconds_count",
        "rxsteer_net_rx_wait_seconds_count",
    ] {
        eventually(&lab.server, histogram, |r| {
            r.iter().any(|s| {
                s.metric["cpu"] == sender.to_string() && s.value.1.parse::<f64>().unwrap() > 0.0
            })
        });
    }
    eventually(&lab.server, "rxsteer_program_run_seconds_total", |r| {
        r.iter().any(|s| s.value.1.parse::<f64>().unwrap() > 0.0)
    });
    // Every panel of the dashboard that ships in docs/ gets data back from this server.
    let dashboard: Dashboard = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/grafana-dashboard.json"
        ))
        .unwrap(),
    )
    .unwrap();
    assert!(dashboard.panels.len() >= 5);
    for p in &dashboard.panels {
        for t in &p.targets {
            let expr = t.expr.replace("$__rate_interval", "10s");
            eventually(&lab.server, &expr, |r| !r.is_empty())
                .first()
                .unwrap_or_else(|| panic!("panel {:?}: no data", p.title));
        }
    }
    // Another tool rewrites the RPS mask: the next scrape says the steering no longer holds,
    // and attach names it at its end, before it puts the value back.
    let mask = format!("/sys/class/net/{}/queues/rx-0/rps_cpus", lab.server_dev);
    let rps = |value: &str| {
        common::succeed(
            lab.server
                .command("sh")
                .args(["-c", &format!("echo {value} > {mask}")]),
        );
    };
    let read_mask = || common::succeed(lab.server.command("cat").arg(&mask)).stdout;
    let set = read_mask();
    assert_ne!(
        set.trim_matches(['0', ',', '\n']),
        "",
        "attach set a mask: {set}"
    );
    eventually(&lab.server, "rxsteer_steering_in_place", |r| {
        r.iter().any(|s| s.value.1 == "1")
    });
    rps("0");
    eventually(&lab.server, "rxsteer_steering_in_place", |r| {
        r.iter().any(|s| s.value.1 == "0")
    });
    eventually(&lab.server, "rxsteer_steering_drifted_values", |r| {
        r.iter().any(|s| s.value.1 == "1")
    });
    common::sigterm(&top);
    assert!(wait_with_timeout(&mut top, Duration::from_secs(40)).success());
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(
        rest.contains("another tool changed it during the session"),
        "{rest}"
    );
    assert_eq!(
        read_mask().trim_matches(['0', ',', '\n']),
        "",
        "the mask put back"
    );
    drop(server);
    assert_eq!(lab.server.xdp_attached(&lab.server_dev).unwrap(), None);
}

#[test]
#[ignore = "needs root: a veth lab, flooded with idle connections"]
fn a_flood_of_idle_connections_never_stalls_sampling() {
    let lab = lab('f');
    let (mut top, _err) = observing(&lab.server, &lab.server_dev, &["top"], "16");
    // 200 connections that never send a byte, held open for 4 s while top samples.
    let flood = lab.server.spawn(None, || {
        let addr: SocketAddr = EXPORTER.parse()?;
        let mut held = Vec::new();
        for _ in 0..200 {
            if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                held.push(s);
            }
        }
        std::thread::sleep(Duration::from_secs(4));
        Ok(held.len())
    });
    assert!(flood.join().unwrap().unwrap() > 0);
    // The flood gone, a scrape is served again while top still runs.
    let (status, _) = get(&lab.server, EXPORTER, "/metrics", "*/*");
    assert_eq!(status, 200);
    let lines: Vec<serde_json::Value> = BufReader::new(top.stdout.take().unwrap())
        .lines()
        .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
        .collect();
    assert!(wait_with_timeout(&mut top, Duration::from_secs(20)).success());
    assert_eq!(lines.len(), 16);
    let mut at = 0.0;
    for l in &lines {
        let t = l["t_s"].as_f64().unwrap();
        assert!(
            t - at < 1.0,
            "a sample 500 ms apart came after {} s",
            t - at
        );
        at = t;
    }
}

#[test]
#[ignore = "needs root: a veth lab"]
fn a_port_in_use_or_a_nonsense_address_is_refused_before_anything_is_attached() {
    let lab = lab('u');
    let held = lab
        .server
        .spawn(None, || Ok(std::net::TcpListener::bind(EXPORTER)?))
        .join()
        .unwrap()
        .unwrap();
    for (value, says) in [
        (EXPORTER, "--metrics 127.0.0.1:19464: cannot listen there"),
        ("nonsense", "is not a port"),
        ("70000", "is not a port"),
    ] {
        let out = lab
            .server
            .command(RXSTEER)
            .args([
                "top",
                "--iface",
                &lab.server_dev,
                "--count",
                "1",
                "--metrics",
                value,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {err}");
        assert!(err.contains(says), "{value}: {err}");
        assert!(!err.contains("observing"), "{value}: attached first: {err}");
    }
    drop(held);
    assert_eq!(lab.server.xdp_attached(&lab.server_dev).unwrap(), None);
}
