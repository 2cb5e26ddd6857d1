//! What the kernel's BPF run-time statistics cost and what they count, through
//! BPF_PROG_TEST_RUN. Every rxsteer sampler holds the statistics on (BPF_ENABLE_STATS), and
//! the observer's price is read from them, so their own share of each figure must be known:
//! - each program runs `repeat` times with the statistics off and on (the order alternating
//!   per repetition), and the kernel's mean per run is taken for both: `added` is what
//!   turning them on costs per run;
//! - while on, the run time the statistics recorded over those runs, per run: for the empty
//!   xdp_pass that is the floor under every program's "ns per run", the clock read the
//!   statistics count for doing nothing.
//!
//! Prints a table and, with RXSTEER_BENCH_JSON=FILE, writes every raw figure. Needs root.
//! Run: cargo xtask bench stats
use anyhow::{Context, Result};
use aya::programs::{TestRun, TestRunOptions};
use rxsteer_common::frames::{Ip, Spec};
use rxsteer_dataplane::{Dataplane, PortConfig, RX_ACCOUNT, XDP_PASS};
use rxsteer_records::run::median;
use serde_json::json;

const REPEAT: u32 = 1_000_000;
const REPS: usize = 15;
const PROGRAMS: [&str; 2] = [XDP_PASS, RX_ACCOUNT];

/// One test run of `prog`: the kernel's mean ns per run, and (runs, ns) the statistics
/// recorded for the program over it.
fn test_run(dp: &mut Dataplane, prog: &str, frame: &[u8]) -> Result<(f64, u64, u64)> {
    let before = dp.xdp(prog)?.info()?;
    let r = dp.xdp(prog)?.test_run(TestRunOptions {
        data_in: Some(frame),
        repeat: REPEAT,
        ..TestRunOptions::new()
    })?;
    let after = dp.xdp(prog)?.info()?;
    Ok((
        r.duration.as_nanos() as f64,
        after.run_count() - before.run_count(),
        (after.run_time() - before.run_time()).as_nanos() as u64,
    ))
}

fn main() -> Result<()> {
    let cpu = *rxsteer_tune::cpus::online_cpus()?.last().unwrap();
    rxsteer_tune::pin::pin_current_thread(cpu)?;
    let mut dp = Dataplane::load(&PortConfig::default())?;
    let frame = Spec::tcp(Ip::V4, 40000, 8080).data(100).build();
    let mut raw = Vec::new();
    let mut summary = Vec::new();
    println!("BPF_PROG_TEST_RUN on CPU {cpu}, repeat {REPEAT}, {REPS} repetitions, statistics off and on alternating; a TCP/IPv4 HTTP frame of 100 data bytes");
    println!("ns per run as the test run times it, off and on (median), added = on - off within each repetition (median, range); counted = the run time the statistics recorded per run while on (median)");
    println!(
        "{:<12} {:>8} {:>8} {:>20} {:>9}",
        "program", "off", "on", "added", "counted"
    );
    for prog in PROGRAMS {
        let (mut off, mut on, mut added, mut counted) = (vec![], vec![], vec![], vec![]);
        for rep in 0..REPS {
            let mut pair = [0f64; 2];
            for k in 0..2 {
                let stats_on = (k + rep) % 2 == 1;
                // Held only for this test run; the kernel turns the statistics off again when
                // the descriptor closes (unless another holder, say a running rxsteer, keeps
                // them on: then "off" is on too and `added` reads about 0).
                let held = if stats_on {
                    Some(
                        aya::sys::enable_stats(aya::sys::Stats::RunTime)
                            .context("BPF_ENABLE_STATS (5.8+)")?,
                    )
                } else {
                    None
                };
                let (ns, runs, stats_ns) = test_run(&mut dp, prog, frame.as_bytes())?;
                drop(held);
                pair[stats_on as usize] = ns;
                if stats_on {
                    counted.push(stats_ns as f64 / runs.max(1) as f64);
                }
                raw.push(json!({"program": prog, "rep": rep, "stats": stats_on, "ns_per_run": ns, "stats_runs": runs, "stats_ns": stats_ns}));
            }
            off.push(pair[0]);
            on.push(pair[1]);
            added.push(pair[1] - pair[0]);
        }
        let (lo, hi) = added
            .iter()
            .fold((f64::MAX, f64::MIN), |(l, h), &a| (l.min(a), h.max(a)));
        let (off, on, add, count) = (median(&off), median(&on), median(&added), median(&counted));
        println!(
            "{prog:<12} {off:>8.1} {on:>8.1} {:>20} {count:>9.1}",
            format!("{add:.1} ({lo:.1} to {hi:.1})")
        );
        summary.push(json!({"program": prog, "off_ns": off, "on_ns": on, "added_ns_median": add, "added_ns_min": lo, "added_ns_max": hi, "counted_ns_per_run": count}));
    }
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        let doc = json!({"bench": "bpf_stats_overhead", "repeat": REPEAT, "reps": REPS,
            "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease")?.trim(),
            "summary": summary, "raw": raw});
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)?;
    }
    Ok(())
}
