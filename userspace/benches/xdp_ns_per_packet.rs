//! ns/packet of the XDP programs through BPF_PROG_TEST_RUN (the kernel times `repeat` runs
//! and returns the mean), rx_account against the empty xdp_pass in the same run: programs are
//! interleaved within every repetition, their order rotated, and the ratio is taken per
//! repetition. Prints a table and, with RXSTEER_BENCH_JSON=FILE, writes every raw figure.
//! Needs root. Run: cargo xtask bench
use anyhow::Result;
use aya::programs::{TestRun, TestRunOptions};
use rxsteer::dataplane::{Dataplane, PortConfig, RX_ACCOUNT, XDP_PASS};
use rxsteer_common::frames::{arp, Frame, Ip, Spec};
use serde_json::json;

const REPEAT: u32 = 1_000_000;
const REPS: usize = 21;
/// Programs measured, the baseline first.
const PROGRAMS: [&str; 2] = [XDP_PASS, RX_ACCOUNT];

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
    rxsteer::netns::pin_current_thread(cpu)?;
    let mut dp = Dataplane::load(&PortConfig::default())?;
    let frames = frames();
    let mut raw = Vec::new();
    let mut rows = Vec::new();
    println!("BPF_PROG_TEST_RUN on CPU {cpu}, repeat {REPEAT}, {REPS} repetitions, order rotated");
    println!("ns/packet as median (min); ratio = rx_account / xdp_pass within each repetition");
    println!(
        "{:<20} {:>13} {:>15} {:>9} {:>11} {:>12}",
        "frame", "xdp_pass", "rx_account", "ratio", "ratio range", "ratio of min"
    );
    for (name, frame) in &frames {
        let mut per_prog: Vec<Vec<f64>> = vec![Vec::new(); PROGRAMS.len()];
        let mut ratios = Vec::new();
        for rep in 0..REPS {
            let mut this_rep = [0f64; PROGRAMS.len()];
            for k in 0..PROGRAMS.len() {
                let i = (k + rep) % PROGRAMS.len();
                this_rep[i] = ns_per_packet(&mut dp, PROGRAMS[i], frame)?;
                raw.push(json!({"frame": name, "program": PROGRAMS[i], "rep": rep, "ns_per_packet": this_rep[i]}));
            }
            for (i, v) in this_rep.iter().enumerate() {
                per_prog[i].push(*v);
            }
            ratios.push(this_rep[1] / this_rep[0]);
        }
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &r| (l.min(r), h.max(r)));
        let min = |v: &[f64]| v.iter().copied().fold(f64::MAX, f64::min);
        let (base_min, acct_min) = (min(&per_prog[0]), min(&per_prog[1]));
        let (base, acct, ratio) = (
            median(&mut per_prog[0]),
            median(&mut per_prog[1]),
            median(&mut ratios),
        );
        println!(
            "{name:<20} {:>13} {:>15} {ratio:>9.2} {:>11} {:>12.2}",
            format!("{base:.0} ({base_min:.0})"),
            format!("{acct:.0} ({acct_min:.0})"),
            format!("{lo:.2}-{hi:.2}"),
            acct_min / base_min
        );
        rows.push(json!({"frame": name, "xdp_pass_ns_median": base, "xdp_pass_ns_min": base_min,
            "rx_account_ns_median": acct, "rx_account_ns_min": acct_min,
            "ratio_median": ratio, "ratio_min": lo, "ratio_max": hi, "ratio_of_minima": acct_min / base_min}));
    }
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = json!({"bench": "xdp_ns_per_packet", "repeat": REPEAT, "reps": REPS,
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease")?.trim(),
            "summary": rows, "raw": raw});
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
    }
    Ok(())
}
