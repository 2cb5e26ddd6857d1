//! ns/packet of the XDP programs through BPF_PROG_TEST_RUN (the kernel times `repeat` runs
//! and returns the mean): rx_account and steer against the empty xdp_pass in the same run.
//! The empty program's figure is the harness's own cost per run (about 8 ns on one host of
//! this kind, 28 ns on another), so each program's own cost is reported as `added`, its
//! figure minus xdp_pass's in the same repetition, beside the gross figure and the ratio.
//! Programs are interleaved within every repetition, their order rotated, and ratios are taken
//! per repetition. steer runs with real sets and cpumap entries; a plain (not live-frame) test
//! run returns its XDP_REDIRECT verdict without delivering, so this is the decision's cost. Prints a table and, with RXSTEER_BENCH_JSON=FILE, writes every raw figure.
//! Needs root. Run: cargo xtask bench
use anyhow::Result;
use aya::programs::{TestRun, TestRunOptions};
use rxsteer_common::frames::{arp, Frame, Ip, Spec};
use rxsteer_dataplane::{Dataplane, PortConfig, SteerSets, RX_ACCOUNT, STEER, XDP_PASS};
use serde_json::json;

const REPEAT: u32 = 1_000_000;
const REPS: usize = 21;
/// Programs measured, the baseline first.
const PROGRAMS: [&str; 3] = [XDP_PASS, RX_ACCOUNT, STEER];

fn frames() -> Vec<(&'static str, Frame)> {
    vec![
        ("tcp4_http_syn", Spec::tcp(Ip::V4, 40000, 8080).build()),
        (
            "tcp6_zap_data_82B",
            Spec::tcp(Ip::V6, 40000, 9653).data(82).build(),
        ),
        (
            "vlan_tcp4_http_data",
            Spec::tcp(Ip::V4, 40000, 8080)
                .data(100)
                .build()
                .with_vlan(1),
        ),
        ("udp4", Spec::udp(Ip::V4, 5353, 5353).data(40).build()),
        ("arp", arp()),
    ]
}

fn ns_per_packet(dp: &mut Dataplane, prog: &str, frame: &Frame) -> Result<f64> {
    let r = dp.xdp(prog)?.test_run(TestRunOptions {
        data_in: Some(frame.as_bytes()),
        repeat: REPEAT,
        ..TestRunOptions::new()
    })?;
    Ok(r.duration.as_nanos() as f64)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    // One CPU for the whole run: no migrations between the programs being compared.
    let cpu = *rxsteer_tune::cpus::online_cpus()?.last().unwrap();
    rxsteer_tune::pin::pin_current_thread(cpu)?;
    let cpus = rxsteer_tune::cpus::online_cpus()?;
    let sets = SteerSets {
        http: cpus.clone(),
        zap: vec![cpus[0]],
        other: vec![],
    };
    let sets = if cpus.len() > 1 {
        SteerSets {
            http: cpus[1..].to_vec(),
            ..sets
        }
    } else {
        sets
    };
    let mut dp = Dataplane::load_with(&PortConfig::default(), &sets)?;
    dp.fill_cpumap(&sets, 2048, false)?;
    let frames = frames();
    let mut raw = Vec::new();
    let mut rows = Vec::new();
    println!("BPF_PROG_TEST_RUN on CPU {cpu}, repeat {REPEAT}, {REPS} repetitions, order rotated");
    println!("ns/packet through the test run, as median (min); added = program - xdp_pass and ratio = program / xdp_pass within each repetition, median (range)");
    println!("xdp_pass is the harness's own cost per run (it does nothing), so `added` is what the program itself costs per packet");
    println!(
        "{:<20} {:>9} {:>10} {:>7} {:>17} {:>10} {:>7} {:>17}",
        "frame", "xdp_pass", "rx_account", "added", "ratio", "steer", "added", "ratio"
    );
    for (name, frame) in &frames {
        let mut per_prog: Vec<Vec<f64>> = vec![Vec::new(); PROGRAMS.len()];
        let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); PROGRAMS.len()];
        let mut added: Vec<Vec<f64>> = vec![Vec::new(); PROGRAMS.len()];
        for rep in 0..REPS {
            let mut this_rep = [0f64; PROGRAMS.len()];
            for k in 0..PROGRAMS.len() {
                let i = (k + rep) % PROGRAMS.len();
                this_rep[i] = ns_per_packet(&mut dp, PROGRAMS[i], frame)?;
                raw.push(json!({"frame": name, "program": PROGRAMS[i], "rep": rep, "ns_per_packet": this_rep[i]}));
            }
            for (i, v) in this_rep.iter().enumerate() {
                per_prog[i].push(*v);
                ratios[i].push(v / this_rep[0]);
                added[i].push(v - this_rep[0]);
            }
        }
        let mut cells = Vec::new();
        let mut row = serde_json::Map::new();
        row.insert("frame".into(), json!(name));
        for i in 0..PROGRAMS.len() {
            let min = per_prog[i].iter().copied().fold(f64::MAX, f64::min);
            let (lo, hi) = ratios[i]
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), &r| (l.min(r), h.max(r)));
            let (med, ratio) = (median(&mut per_prog[i]), median(&mut ratios[i]));
            let net = median(&mut added[i]);
            cells.push(format!("{med:.0} ({min:.0})"));
            if i > 0 {
                cells.push(format!("{net:.0}"));
                cells.push(format!("{ratio:.2} ({lo:.2}-{hi:.2})"));
            }
            row.insert(PROGRAMS[i].into(), json!({"ns_median": med, "ns_min": min, "ns_added_median": net, "ratio_median": ratio, "ratio_min": lo, "ratio_max": hi}));
        }
        println!(
            "{name:<20} {:>9} {:>10} {:>7} {:>17} {:>10} {:>7} {:>17}",
            cells[0], cells[1], cells[2], cells[3], cells[4], cells[5], cells[6]
        );
        rows.push(serde_json::Value::Object(row));
    }
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = json!({"bench": "xdp_ns_per_packet", "repeat": REPEAT, "reps": REPS,
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease")?.trim(),
            "summary": rows, "raw": raw});
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
    }
    Ok(())
}
