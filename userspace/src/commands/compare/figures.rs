//! The figures of one load: rxload's result next to the per-CPU accounting of its measured
//! window (samples tagged `measure`), and the environment the run had. Everything stored in
//! run.json comes through here.
use anyhow::Result;
use rxsteer_records::{
    bpf_cost::BpfCostOf,
    breakdown::{self, TimeSplit},
    run::{imbalance, Nic, Row},
    LoadResult, Phase, TcAttached,
};
use std::path::Path;

use super::{arm::Arm, watch::Tagged};
use rxsteer_records::Proto;

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
    /// The interface's interrupts per second.
    pub nic_irqs_per_s: Vec<f64>,
    /// Where each CPU's time went, ms per s.
    pub time: Vec<TimeSplit>,
    pub redirect_err: u64,
    pub enqueue_drops: u64,
    pub cpumap_drops: u64,
    pub softnet_dropped: u64,
    pub steer_fallback: u64,
    /// The interface's own received frames per second; None when a sample lacked them.
    pub nic_rx_per_s: Option<f64>,
    /// What the interface lost over the window, by counter; None when a sample lacked it.
    pub nic_drops: Option<rxsteer_records::sample::NicDrops>,
    pub seconds: f64,
}

pub fn cpu_figures(tagged: &[Tagged]) -> CpuFigures {
    let measured: Vec<&Tagged> = tagged
        .iter()
        .filter(|t| t.phase == Phase::Measure)
        .collect();
    let n = measured
        .iter()
        .map(|t| t.line.sample.cpus.len())
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
        nic_irqs_per_s: vec![0.0; n],
        time: vec![TimeSplit::default(); n],
        nic_rx_per_s: (!measured.is_empty()).then_some(0.0),
        nic_drops: (!measured.is_empty()).then(Default::default),
        ..Default::default()
    };
    for t in &measured {
        let s = &t.line.sample;
        f.seconds += s.interval_s;
        f.redirect_err += s.redirect_err;
        f.nic_rx_per_s = f
            .nic_rx_per_s
            .zip(s.nic_rx_packets)
            .map(|(sum, n)| sum + n as f64);
        f.nic_drops = f
            .nic_drops
            .take()
            .zip(s.nic_drops.as_ref())
            .map(|(mut sum, d)| {
                for (to, from) in [
                    (&mut sum.counters, &d.counters),
                    (&mut sum.driver, &d.driver),
                ] {
                    for (k, v) in from {
                        *to.entry(k.clone()).or_default() += v;
                    }
                }
                sum
            });
        for (i, c) in s.cpus.iter().enumerate() {
            let on = |m: &std::collections::BTreeMap<u32, u64>| m.get(&c.cpu).copied().unwrap_or(0);
            f.time[i].add(&rxsteer_records::derived::time_split(
                c,
                s.interval_s,
                on(&t.procs.server),
                on(&t.procs.loader),
            ));
            f.stack_per_s[i] += c.stack_packets as f64;
            f.tx_per_s[i] += c.tx_packets as f64;
            f.loader_napi_ms_per_s[i] += c.other_napi_kthread_ns as f64 / 1e6;
            f.nic_irqs_per_s[i] += c.nic_irqs as f64;
            f.receive_ms_per_s[i] += c.receive_ns() as f64 / 1e6;
            f.net_rx_ms_per_s[i] += c.net_rx_ns as f64 / 1e6;
            f.kthread_ms_per_s[i] += c.kthread_ns() as f64 / 1e6;
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
        &mut f.nic_irqs_per_s,
    ] {
        for x in v.iter_mut() {
            *x = (*x / secs * 10.0).round() / 10.0;
        }
    }
    for t in f.time.iter_mut() {
        *t = t.rate(f.seconds);
    }
    f.nic_rx_per_s = f.nic_rx_per_s.map(|n| (n / secs * 10.0).round() / 10.0);
    f
}

/// One row of run.json.
/// NET_RX's histograms over the measured samples, per CPU; the waits only where the level
/// timed them. None with no measured sample.
fn net_rx_log2(
    tagged: &[Tagged],
    observe: Option<rxsteer_records::ObserveLevel>,
) -> Option<rxsteer_records::log2::NetRxLog2> {
    let timed = rxsteer_records::ObserveLevel::of_record(observe).times_net_rx_waits();
    let mut out = rxsteer_records::log2::NetRxLog2 {
        run: Default::default(),
        wait: timed.then(Default::default),
    };
    let mut any = false;
    for t in tagged.iter().filter(|t| t.phase == Phase::Measure) {
        any = true;
        for c in &t.line.sample.cpus {
            out.run.entry(c.cpu).or_default().add(&c.net_rx_run_log2);
            if let Some(wait) = out.wait.as_mut() {
                wait.entry(c.cpu).or_default().add(&c.net_rx_wait_log2);
            }
        }
    }
    any.then_some(out)
}

pub fn row(rep: u32, arm: Arm, proto: Proto, load: Option<&LoadResult>, tagged: &[Tagged]) -> Row {
    let f = cpu_figures(tagged);
    // How attach ran, from its first sample line: XDP mode, frags, tc.
    let first = tagged.first().map(|t| &t.line);
    let tc = first.and_then(|l| l.tc.clone());
    let cpu_ids: Vec<u32> = tagged
        .iter()
        .find(|t| t.phase == Phase::Measure)
        .map_or(vec![], |t| {
            t.line.sample.cpus.iter().map(|c| c.cpu).collect()
        });
    let shape = breakdown::LoadShape {
        connections: load.map_or(0, |l| l.connections),
        mean_us: load.map(|l| l.latency_us.mean),
        req_per_s: load.map(|l| l.req_per_s),
        rate: load.and_then(|l| l.open_loop).map(|o| o.target_per_s),
    };
    let mut verdict = breakdown::verdict(
        &cpu_ids
            .iter()
            .copied()
            .zip(f.time.iter().copied())
            .collect::<Vec<_>>(),
        &shape,
    );
    // Loss at the NIC is in no CPU's figure: the verdict says it.
    if let (Some(v), Some(said)) = (
        verdict.as_mut(),
        f.nic_drops.as_ref().and_then(|d| d.said(f.seconds)),
    ) {
        v.text = format!("{}; {said}", v.text);
    }
    // What our programs cost in the measured window, per packet the interface received.
    let measured = || tagged.iter().filter(|t| t.phase == Phase::Measure);
    let packets: u64 = measured().map(|t| t.line.sample.received_packets()).sum();
    let mut bpf = BpfCostOf::of(
        measured().filter_map(|t| t.line.sample.bpf.as_ref()),
        f.seconds,
        packets,
    );
    // Sampled statistics: how much of the window they were on (their own cost scales by it).
    let windows: Option<f64> = measured()
        .map(|t| t.line.sample.bpf_window_s)
        .sum::<Option<f64>>();
    if let (Some(BpfCostOf::Measured(c)), Some(on)) = (bpf.as_mut(), windows) {
        c.stats_on = Some((on / f.seconds.max(1e-9)).min(1.0));
    }
    // The witnesses' counts are kept however tc was attached (TCX, or our clsact qdisc).
    let tc_ran = matches!(tc, Some(TcAttached::Tcx | TcAttached::Clsact));
    let observe = first.and_then(|l| l.observe);
    let tx_ran = tc_ran && rxsteer_records::ObserveLevel::of_record(observe).counts_tx();
    let q = load.map(|l| l.latency_us.quantiles);
    Row {
        rep,
        arm: Some(arm.key()),
        mode: arm.mode,
        proto,
        xdp_mode: first.and_then(|l| l.xdp_mode),
        xdp_mode_asked: arm.runs_xdp().then_some(arm.xdp),
        observer: first.and_then(|l| l.observer),
        observe,
        attached: None,
        mean_us: load.map(|l| l.latency_us.mean),
        xdp_frags: first.and_then(|l| l.xdp_frags),
        tc,
        req_per_s: load.map(|l| l.req_per_s),
        loaders: load.map(LoadResult::loader_count),
        requests: load.map(|l| l.requests),
        p50_us: q.map(|q| q.p50),
        p99_us: q.map(|q| q.p99),
        p999_us: q.map(|q| q.p999),
        max_us: q.map(|q| q.max),
        errors: load.map(|l| l.errors.clone()),
        error_total: load.map_or(0, LoadResult::error_total),
        client_allocs_per_request: load.map(|l| l.client.allocs_per_request),
        measured_s: f.seconds,
        imbalance: imbalance(&f.receive_ms_per_s),
        receive_ms_per_s: f.receive_ms_per_s,
        net_rx_ms_per_s: f.net_rx_ms_per_s,
        kthread_ms_per_s: f.kthread_ms_per_s,
        packets_per_s: f.packets_per_s,
        cpumap_arrived_per_s: f.arrived_per_s,
        stack_packets_per_s: tc_ran.then_some(f.stack_per_s),
        nic_rx_packets_per_s: f.nic_rx_per_s,
        // None where no measured sample came (nothing to count, not zero interrupts).
        nic_irqs_per_s: (!f.nic_irqs_per_s.is_empty()).then_some(f.nic_irqs_per_s),
        tx_packets_per_s: tx_ran.then_some(f.tx_per_s),
        loader_napi_ms_per_s: f.loader_napi_ms_per_s,
        time_ms_per_s: Some(f.time),
        verdict,
        redirect_err: f.redirect_err,
        enqueue_drops: f.enqueue_drops,
        cpumap_drops: f.cpumap_drops,
        softnet_dropped: f.softnet_dropped,
        nic_drops: f.nic_drops,
        net_rx_log2: net_rx_log2(tagged, observe),
        // Read by the caller, which knows where the interface is.
        levers: None,
        steer_fallback: f.steer_fallback,
        search: None,
        switch_ms: None,
        window_at: None,
        failed: None,
        bpf,
    }
}

/// What the run's interface is: its driver and GRO state (ethtool, where the interface lives).
pub fn iface_facts(ns: Option<&crate::netns::Netns>, dev: &str) -> Nic {
    let ethtool = |args: &[&str]| -> String {
        crate::netns::command_at(ns, std::path::Path::new("ethtool"))
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
    Nic {
        driver: field(&ethtool(&["-i", dev]), "driver:"),
        gro: field(&ethtool(&["-k", dev]), "generic-receive-offload:"),
    }
}

/// The samples of one mode session, one JSON line each, tagged with phase (and protocol).
pub fn store_samples(path: &Path, tagged: &[Tagged]) -> Result<()> {
    let mut out = Vec::new();
    for t in tagged {
        let line = rxsteer_records::SampleLine {
            phase: Some(t.phase),
            ..t.line.clone()
        };
        serde_json::to_writer(&mut out, &line)?;
        out.push(b'\n');
    }
    rxsteer_report::files::write_replacing(path, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_dataplane::sampler::{CpuSample, Sample};
    use rxsteer_records::{load::Quantiles, SampleLine, XdpMode};

    fn tagged(phase: Phase, net_rx_ms: [u64; 2], kthread_ms: [u64; 2]) -> Tagged {
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
        Tagged {
            phase,
            line: SampleLine {
                xdp_mode: Some(XdpMode::Drv),
                sample: s,
                ..Default::default()
            },
            procs: Default::default(),
        }
    }

    #[test]
    fn only_the_measured_window_counts() {
        let t = [
            tagged(Phase::Warmup, [400, 400], [400, 400]),
            tagged(Phase::Measure, [100, 0], [0, 200]),
            tagged(Phase::Measure, [100, 0], [0, 100]),
        ];
        let f = cpu_figures(&t);
        assert_eq!(f.seconds, 1.0);
        assert_eq!(f.net_rx_ms_per_s, [200.0, 0.0]);
        assert_eq!(f.kthread_ms_per_s, [0.0, 300.0]);
        assert_eq!(f.receive_ms_per_s, [200.0, 300.0]);
        assert_eq!(f.packets_per_s, [2000.0, 2000.0]);
        assert_eq!(f.redirect_err, 2);
        let mut load = LoadResult {
            req_per_s: 5000.0,
            requests: 5000,
            ..Default::default()
        };
        load.errors = [("read".to_string(), 2), ("connect".to_string(), 1)].into();
        load.latency_us.quantiles = Quantiles {
            p50: 10,
            p99: 90,
            p999: 120,
            max: 300,
            ..Default::default()
        };
        let arm = Arm {
            mode: rxsteer_records::Mode::Cpumap,
            xdp: rxsteer_dataplane::XdpModeChoice::Skb,
            frags: rxsteer_dataplane::FragsChoice::Auto,
            observer: rxsteer_dataplane::ObserverChoice::Auto,
            per_xdp_mode: true,
            per_frags: false,
        };
        let r = row(1, arm, Proto::Zap, Some(&load), &t);
        assert_eq!(
            (r.arm().to_string().as_str(), r.xdp_mode_asked),
            ("cpumap-skb", Some(rxsteer_dataplane::XdpModeChoice::Skb))
        );
        assert!(r.stack_packets_per_s.is_none(), "no tc line: no tc figures");
        assert_eq!(r.p99_us, Some(90));
        assert_eq!(r.error_total, 3);
        assert_eq!(r.xdp_mode, Some(XdpMode::Drv));
        assert_eq!(r.imbalance, 1.2);
        assert_eq!(r.loaders, Some(1));
    }
}
