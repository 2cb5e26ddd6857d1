//! What each request cost the whole box, and its tail: every CPU's busy time (/proc/stat, read
//! from outside the arm's processes) per request served, each repetition against the untuned
//! arm of the same repetition, with p99 and p99.9. These compare arms where a spreading gain
//! cannot show (no free CPU to steer to): an arm that serves as much for less CPU is cheaper.
use anyhow::Result;
use rxsteer_records::{
    run::{base_arm_in, find, ArmName},
    search::ms,
    Proto, RunDoc,
};
use std::fmt::Write;

use crate::{capacity::median_range, observer::busy_us, table::Table};

/// Per repetition: an arm's busy time per request over its untuned's (below 1: cheaper).
fn ratios(run: &RunDoc, arm: ArmName, p: Proto) -> Vec<f64> {
    let base = base_arm_in(&run.runs, arm);
    (0..run.reps())
        .filter_map(|rep| {
            let mine = busy_us(find(&run.runs, rep, arm, p)?)?;
            let theirs = busy_us(find(&run.runs, rep, base, p)?)?;
            (theirs > 0.0).then(|| mine / theirs)
        })
        .collect()
}

pub fn section(o: &mut String, run: &RunDoc, arms: &[ArmName], protos: &[Proto]) -> Result<()> {
    if run.runs.iter().all(|r| busy_us(r).is_none()) {
        return Ok(());
    }
    writeln!(o, "\n## CPU per request and the tail\n")?;
    let whose = if run.is_iface() {
        "this host's CPUs (with `--loader local`, the loader's too)"
    } else {
        "every CPU of the lab, the loader's included,"
    };
    writeln!(
        o,
        "Busy time of {whose} per request served, in us, from /proc/stat over each measured \
         window (for a capacity search: at the knee), median (range) over repetitions; the \
         ratio is taken per repetition against the untuned arm's (below 1.00x: cheaper). p99 \
         and p99.9 of the same loads.\n"
    )?;
    type Load = (ArmName, Proto);
    let busy = |l: &Load| {
        let v: Vec<f64> = run.of(l.0, l.1).iter().filter_map(|r| busy_us(r)).collect();
        median_range(&v, |x| format!("{x:.1}"))
    };
    let ratio = |l: &Load| {
        if l.0 == base_arm_in(&run.runs, l.0) {
            return "-".to_string();
        }
        median_range(&ratios(run, l.0, l.1), |x| format!("{x:.2}x"))
    };
    let tail = |f: fn(&rxsteer_records::Row) -> Option<u64>| {
        move |l: &Load| {
            let v: Vec<f64> = run
                .of(l.0, l.1)
                .iter()
                .filter_map(|r| f(r).map(|u| u as f64))
                .collect();
            median_range(&v, |x| ms(x as u64))
        }
    };
    let table = Table::new()
        .column("arm", |l: &Load| l.0.label())
        .column("protocol", |l| l.1.label().to_string())
        .column("CPU us per request", busy)
        .column("/ untuned", ratio)
        .column("p99", tail(|r| r.p99_us))
        .column("p99.9", tail(|r| r.p999_us));
    let loads = protos
        .iter()
        .flat_map(|&p| arms.iter().map(move |&a| (a, p)));
    o.push_str(&table.render(loads));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::{breakdown::TimeSplit, Row};

    fn row(rep: u32, arm: &str, req_per_s: f64, busy_ms_per_s: f64, p999_us: u64) -> Row {
        let arm: ArmName = arm.parse().unwrap();
        Row {
            rep,
            arm: Some(arm),
            mode: arm.mode,
            proto: Proto::Http,
            req_per_s: Some(req_per_s),
            p99_us: Some(1000),
            p999_us: Some(p999_us),
            time_ms_per_s: Some(vec![TimeSplit {
                server: busy_ms_per_s,
                idle: 1000.0 - busy_ms_per_s,
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    /// An arm that serves as much for less CPU reads below 1.00x, per repetition against the
    /// untuned of the same repetition; the tail is each load's own.
    #[test]
    fn cpu_per_request_is_taken_per_repetition_against_untuned() {
        let run = RunDoc {
            runs: vec![
                row(0, "none", 10_000.0, 500.0, 2000),
                row(0, "napi-thread", 10_000.0, 400.0, 9000),
                row(1, "none", 5_000.0, 500.0, 2000),
                row(1, "napi-thread", 10_000.0, 900.0, 9000),
            ],
            ..Default::default()
        };
        assert_eq!(
            ratios(&run, "napi-thread".parse().unwrap(), Proto::Http),
            [0.8, 0.9]
        );
        let mut o = String::new();
        let arms = [ArmName::UNTUNED, "napi-thread".parse().unwrap()];
        section(&mut o, &run, &arms, &[Proto::Http]).unwrap();
        assert!(
            o.contains("| untuned | HTTP/1.1 | 75.0 (50.0-100.0) | - |"),
            "{o}"
        );
        assert!(
            o.contains("| NAPI thread | HTTP/1.1 | 65.0 (40.0-90.0) | 0.85x (0.80x-0.90x) |"),
            "{o}"
        );
        assert!(o.contains("| 9.00 ms (9.00 ms-9.00 ms) |"), "p99.9: {o}");
    }
}
