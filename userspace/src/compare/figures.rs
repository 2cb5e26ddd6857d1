//! The figures of one load: rxload's result next to the per-CPU accounting of its measured
//! window (samples tagged `measure`), and the environment the run had. Everything stored in
//! run.json comes through here.
use anyhow::Result;
use serde_json::{json, Value};
use std::{io::Write, path::Path};

use super::{watch::Tagged, Arm, Proto};
use crate::breakdown::{self, Claims, TimeSplit};

/// Per-CPU rates over the measured samples, and totals of the things that go wrong.
#[derive(Default, Debug, PartialEq)]
pub struct CpuFigures {
    pub receive_ms_per_s: Vec<f64>,
    pub net_rx_ms_per_s: Vec<f64>,
    pub kthread_ms_per_s: Vec<f64>,
    pub packets_per_s: Vec<f64>,
    pub arrived_per_s: Vec<f64>,
    /// tc ingress: packets the stack processed on each CPU; tc egress: packets sent.
    pub stack_per_s: Vec<f64>,
    pub tx_per_s: Vec<f64>,
    /// The loader veth's NAPI kthread (lab): the replies' receive, not the server's.
    pub loader_napi_ms_per_s: Vec<f64>,
    /// Where each CPU's time went, ms per s.
    pub time: Vec<TimeSplit>,
    pub redirect_err: u64,
    pub enqueue_drops: u64,
    pub cpumap_drops: u64,
    pub softnet_dropped: u64,
    pub steer_fallback: u64,
    pub seconds: f64,
}

pub fn cpu_figures(tagged: &[Tagged]) -> CpuFigures {
    let measured: Vec<&Tagged> = tagged.iter().filter(|t| t.phase == "measure").collect();
    let n = measured
        .iter()
        .map(|t| t.raw.sample.cpus.len())
        .max()
        .unwrap_or(0);
    let mut f = CpuFigures {
        receive_ms_per_s: vec![0.0; n],
        net_rx_ms_per_s: vec![0.0; n],
        kthread_ms_per_s: vec![0.0; n],
        packets_per_s: vec![0.0; n],
        arrived_per_s: vec![0.0; n],
        stack_per_s: vec![0.0; n],
        tx_per_s: vec![0.0; n],
        loader_napi_ms_per_s: vec![0.0; n],
        time: vec![TimeSplit::default(); n],
        ..Default::default()
    };
    for t in &measured {
        let s = &t.raw.sample;
        f.seconds += s.interval_s;
        f.redirect_err += s.redirect_err;
        for (i, c) in s.cpus.iter().enumerate() {
            let on = |m: &std::collections::BTreeMap<u32, u64>| m.get(&c.cpu).copied().unwrap_or(0);
            let net_rx = c.net_rx_ns;
            f.time[i].add(&TimeSplit::of(
                s.interval_s * 1e9,
                &c.time,
                &Claims {
                    net_rx,
                    other_softirq: c.softirq_ns.iter().sum::<u64>().saturating_sub(net_rx),
                    receive_kthread: c.cpumap_kthread_ns + c.napi_kthread_ns,
                    loader_kthread: c.other_napi_kthread_ns,
                    server: on(&t.procs.server),
                    loader: on(&t.procs.loader),
                },
            ));
            f.stack_per_s[i] += c.stack_packets as f64;
            f.tx_per_s[i] += c.tx_packets as f64;
            f.loader_napi_ms_per_s[i] += c.other_napi_kthread_ns as f64 / 1e6;
            f.receive_ms_per_s[i] += c.receive_ns() as f64 / 1e6;
            f.net_rx_ms_per_s[i] += c.net_rx_ns as f64 / 1e6;
            f.kthread_ms_per_s[i] += (c.cpumap_kthread_ns + c.napi_kthread_ns) as f64 / 1e6;
            f.packets_per_s[i] += c.packets as f64;
            f.arrived_per_s[i] += c.arrived_packets as f64;
            f.enqueue_drops += c.enqueue_drops;
            f.cpumap_drops += c.cpumap_drops;
            f.softnet_dropped += c.softnet.dropped;
            f.steer_fallback += c.steer_fallback;
        }
    }
    let secs = f.seconds.max(1e-9);
    for v in [
        &mut f.receive_ms_per_s,
        &mut f.net_rx_ms_per_s,
        &mut f.kthread_ms_per_s,
        &mut f.packets_per_s,
        &mut f.arrived_per_s,
        &mut f.stack_per_s,
        &mut f.tx_per_s,
        &mut f.loader_napi_ms_per_s,
    ] {
        for x in v.iter_mut() {
            *x = (*x / secs * 10.0).round() / 10.0;
        }
    }
    for t in f.time.iter_mut() {
        *t = t.rate(f.seconds);
    }
    f
}

/// How unevenly receive work was spread: the busiest CPU over the mean of the CPUs that did
/// any (1.0 = even; N = all of it on one of N CPUs).
pub fn imbalance(receive: &[f64]) -> f64 {
    let busy: Vec<f64> = receive.iter().copied().filter(|&x| x > 0.0).collect();
    if busy.is_empty() {
        return 0.0;
    }
    let mean = receive.iter().sum::<f64>() / receive.len() as f64;
    let max = busy.iter().copied().fold(0.0, f64::max);
    (max / mean * 100.0).round() / 100.0
}

/// One row of run.json.
pub fn row(rep: u32, arm: Arm, proto: Proto, load: Option<&Value>, tagged: &[Tagged]) -> Value {
    let f = cpu_figures(tagged);
    // How attach ran (from its sample lines): XDP mode, frags, tc.
    let attached = |k: &str| {
        tagged
            .first()
            .map_or(Value::Null, |t| t.raw.json[k].clone())
    };
    let cpu_ids: Vec<u32> = tagged
        .iter()
        .find(|t| t.phase == "measure")
        .map_or(vec![], |t| {
            t.raw.sample.cpus.iter().map(|c| c.cpu).collect()
        });
    let verdict = breakdown::verdict(
        &cpu_ids
            .iter()
            .copied()
            .zip(f.time.iter().copied())
            .collect::<Vec<_>>(),
    );
    let q = |k: &str| load.map_or(Value::Null, |l| l["latency_us"]["quantiles"][k].clone());
    let errors = load.map_or(Value::Null, |l| l["errors"].clone());
    let error_total: u64 = errors
        .as_object()
        .map_or(0, |m| m.values().filter_map(Value::as_u64).sum());
    let tc_ran = matches!(attached("tc"), Value::String(ref s) if s == "tcx");
    json!({
        "rep": rep, "arm": arm.key(), "mode": arm.mode.as_str(), "proto": proto.as_str(),
        "xdp_mode": attached("xdp_mode"), "xdp_mode_asked": arm.xdp.as_str(),
        "xdp_frags": attached("xdp_frags"), "tc": attached("tc"),
        "req_per_s": load.map_or(Value::Null, |l| l["req_per_s"].clone()),
        "loaders": load.map_or(Value::Null, |l| l.get("loaders").cloned().unwrap_or(1.into())),
        "requests": load.map_or(Value::Null, |l| l["requests"].clone()),
        "p50_us": q("p50"), "p99_us": q("p99"), "p999_us": q("p99.9"), "max_us": q("max"),
        "errors": errors, "error_total": error_total,
        "client_allocs_per_request": load.map_or(Value::Null, |l| l["client"]["allocs_per_request"].clone()),
        "measured_s": f.seconds,
        "receive_ms_per_s": f.receive_ms_per_s, "net_rx_ms_per_s": f.net_rx_ms_per_s,
        "kthread_ms_per_s": f.kthread_ms_per_s, "packets_per_s": f.packets_per_s,
        "cpumap_arrived_per_s": f.arrived_per_s, "imbalance": imbalance(&f.receive_ms_per_s),
        "stack_packets_per_s": if tc_ran { json!(f.stack_per_s) } else { Value::Null },
        "tx_packets_per_s": if tc_ran { json!(f.tx_per_s) } else { Value::Null },
        "loader_napi_ms_per_s": f.loader_napi_ms_per_s,
        "time_ms_per_s": f.time, "verdict": verdict,
        "redirect_err": f.redirect_err, "enqueue_drops": f.enqueue_drops, "cpumap_drops": f.cpumap_drops,
        "softnet_dropped": f.softnet_dropped, "steer_fallback": f.steer_fallback,
    })
}

/// The machine as the run found it: kernel, CPUs, load average.
pub fn environment() -> Value {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let load: Vec<f64> = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("CPU part"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    json!({
        "kernel": read("/proc/sys/kernel/osrelease"), "hostname": read("/proc/sys/kernel/hostname"),
        "cpu_model": cpu_model,
        "rxsteer": {"version": env!("CARGO_PKG_VERSION"), "git": env!("RXSTEER_GIT")},
        "arch": std::env::consts::ARCH, "online_cpus": rxsteer_tune::cpus::online_cpus().map(|c| c.len()).unwrap_or(0),
        "loadavg": load,
        "at": humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    })
}

/// What the run's interface is: its driver and GRO state (ethtool, where the interface lives).
pub fn iface_facts(ns: Option<&crate::netns::Netns>, dev: &str) -> Value {
    let ethtool = |args: &[&str]| -> String {
        super::session::command_at(ns, std::path::Path::new("ethtool"))
            .args(args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default()
    };
    let field = |text: &str, key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
    };
    json!({
        "driver": field(&ethtool(&["-i", dev]), "driver:"),
        "gro": field(&ethtool(&["-k", dev]), "generic-receive-offload:"),
    })
}

/// The samples of one mode session, one JSON line each, tagged with phase (and protocol).
pub fn store_samples(path: &Path, tagged: &[Tagged]) -> Result<()> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for t in tagged {
        let mut v = t.raw.json.clone();
        v["phase"] = t.phase.into();
        serde_json::to_writer(&mut out, &v)?;
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        compare::session::RawSample,
        sampler::{CpuSample, Sample},
    };

    fn tagged(phase: &'static str, net_rx_ms: [u64; 2], kthread_ms: [u64; 2]) -> Tagged {
        let mut s = Sample {
            interval_s: 0.5,
            redirect_err: 1,
            ..Default::default()
        };
        for cpu in 0..2 {
            s.cpus.push(CpuSample {
                cpu,
                packets: 1000,
                net_rx_ns: net_rx_ms[cpu as usize] * 1_000_000,
                cpumap_kthread_ns: kthread_ms[cpu as usize] * 1_000_000,
                ..Default::default()
            });
        }
        let mut json = serde_json::to_value(&s).unwrap();
        json["xdp_mode"] = "drv".into();
        Tagged {
            phase,
            raw: RawSample { json, sample: s },
            procs: Default::default(),
        }
    }

    #[test]
    fn only_the_measured_window_counts() {
        let t = [
            tagged("warmup", [400, 400], [400, 400]),
            tagged("measure", [100, 0], [0, 200]),
            tagged("measure", [100, 0], [0, 100]),
        ];
        let f = cpu_figures(&t);
        assert_eq!(f.seconds, 1.0);
        assert_eq!(f.net_rx_ms_per_s, [200.0, 0.0]);
        assert_eq!(f.kthread_ms_per_s, [0.0, 300.0]);
        assert_eq!(f.receive_ms_per_s, [200.0, 300.0]);
        assert_eq!(f.packets_per_s, [2000.0, 2000.0]);
        assert_eq!(f.redirect_err, 2);
        let load = json!({"req_per_s": 5000.0, "requests": 5000, "errors": {"read": 2, "connect": 1},
            "latency_us": {"quantiles": {"p50": 10, "p99": 90, "p99.9": 120, "max": 300}},
            "client": {"allocs_per_request": 0.0}});
        let arm = Arm {
            mode: super::super::Mode::Cpumap,
            xdp: crate::dataplane::XdpModeChoice::Skb,
            frags: crate::dataplane::FragsChoice::Auto,
            per_xdp_mode: true,
            per_frags: false,
        };
        let r = row(1, arm, Proto::Zap, Some(&load), &t);
        assert_eq!(
            (r["arm"].as_str(), r["xdp_mode_asked"].as_str()),
            (Some("cpumap-skb"), Some("skb"))
        );
        assert!(
            r["stack_packets_per_s"].is_null(),
            "no tc line: no tc figures"
        );
        assert_eq!(r["p99_us"], 90);
        assert_eq!(r["error_total"], 3);
        assert_eq!(r["xdp_mode"], "drv");
        assert_eq!(r["imbalance"], 1.2);
    }

    #[test]
    fn imbalance_of_even_and_one_sided_work() {
        assert_eq!(imbalance(&[100.0, 100.0]), 1.0);
        assert_eq!(imbalance(&[400.0, 0.0, 0.0, 0.0]), 4.0);
        assert_eq!(imbalance(&[0.0, 0.0]), 0.0);
    }
}
