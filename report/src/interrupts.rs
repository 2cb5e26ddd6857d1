//! The interface's interrupts: per CPU and second, and per request served. Where the one
//! queue's interrupt lands, and what an arm did to it: busy polling and interrupt deferral
//! are meant to raise fewer, threaded NAPI moves none of them. Read from the interface's own
//! lines of /proc/interrupts; a veth raises none, which one line says.
use anyhow::Result;
use rxsteer_records::{
    run::{mean_per_cpu, ArmName},
    Proto, Row, RunDoc,
};
use std::fmt::Write;

use crate::{capacity::median_range, table::Table};

/// A load's interrupts per request served: every CPU's interrupts per second over its req/s.
fn per_request(r: &Row) -> Option<f64> {
    let irqs: f64 = r.nic_irqs_per_s.as_ref()?.iter().sum();
    let served = r.req_per_s.filter(|&v| v > 0.0)?;
    Some(irqs / served)
}

pub fn section(
    o: &mut String,
    run: &RunDoc,
    arms: &[ArmName],
    protos: &[Proto],
    cpus: usize,
) -> Result<()> {
    let counted: Vec<&Row> = run
        .runs
        .iter()
        .filter(|r| r.nic_irqs_per_s.is_some())
        .collect();
    if counted.is_empty() {
        return Ok(());
    }
    writeln!(o, "\n## The interface's interrupts\n")?;
    let none = counted
        .iter()
        .all(|r| r.nic_irqs_per_s.iter().flatten().all(|&v| v == 0.0));
    if none {
        writeln!(
            o,
            "The interface raised no interrupt in any load (its lines in /proc/interrupts are \
             what is counted; a veth has none).\n"
        )?;
        return Ok(());
    }
    writeln!(
        o,
        "Interrupts per second on each CPU from the interface's own lines in /proc/interrupts, \
         mean over repetitions, and per request served, median (range).\n"
    )?;
    type Load = (ArmName, Proto, Vec<f64>);
    let mut table = Table::new()
        .column("arm", |l: &Load| l.0.label())
        .column("protocol", |l| l.1.label().to_string());
    for c in 0..cpus {
        table = table.column(format!("CPU {c}"), move |l: &Load| {
            format!("{:.0}", l.2.get(c).copied().unwrap_or(0.0))
        });
    }
    let table = table.column("per request", |l: &Load| {
        let v: Vec<f64> = run
            .of(l.0, l.1)
            .iter()
            .filter_map(|r| per_request(r))
            .collect();
        median_range(&v, |x| format!("{x:.3}"))
    });
    let loads = arms.iter().flat_map(|&a| {
        protos.iter().filter_map(move |&p| {
            let mine = run.of(a, p);
            if mine.iter().all(|r| r.nic_irqs_per_s.is_none()) {
                return None;
            }
            Some((
                a,
                p,
                mean_per_cpu(&mine, |r| r.nic_irqs_per_s.as_deref(), cpus),
            ))
        })
    });
    o.push_str(&table.render(loads));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rep: u32, arm: &str, irqs: Option<Vec<f64>>, req_per_s: f64) -> Row {
        let arm: ArmName = arm.parse().unwrap();
        Row {
            rep,
            arm: Some(arm),
            mode: arm.mode,
            proto: Proto::Http,
            req_per_s: Some(req_per_s),
            nic_irqs_per_s: irqs,
            ..Default::default()
        }
    }

    fn doc(runs: Vec<Row>) -> RunDoc {
        RunDoc {
            cpus: 2,
            runs,
            ..Default::default()
        }
    }

    #[test]
    fn a_nics_interrupts_show_per_cpu_and_per_request() {
        let run = doc(vec![
            row(0, "none", Some(vec![0.0, 5000.0]), 10_000.0),
            row(1, "none", Some(vec![0.0, 3000.0]), 10_000.0),
            row(0, "busy-poll", Some(vec![0.0, 500.0]), 10_000.0),
        ]);
        let arms: Vec<ArmName> = ["none", "busy-poll"].map(|a| a.parse().unwrap()).to_vec();
        let mut o = String::new();
        section(&mut o, &run, &arms, &[Proto::Http], 2).unwrap();
        assert!(
            o.contains("| untuned | HTTP/1.1 | 0 | 4000 | 0.400 (0.300-0.500) |"),
            "{o}"
        );
        assert!(
            o.contains("| busy poll | HTTP/1.1 | 0 | 500 | 0.050 |"),
            "{o}"
        );
    }

    #[test]
    fn a_veth_says_it_raised_none_and_older_runs_say_nothing() {
        let veth = doc(vec![row(0, "none", Some(vec![0.0, 0.0]), 10_000.0)]);
        let arms = [ArmName::UNTUNED];
        let mut o = String::new();
        section(&mut o, &veth, &arms, &[Proto::Http], 2).unwrap();
        assert!(o.contains("raised no interrupt in any load"), "{o}");
        let old = doc(vec![row(0, "none", None, 10_000.0)]);
        let mut o = String::new();
        section(&mut o, &old, &arms, &[Proto::Http], 2).unwrap();
        assert_eq!(o, "");
    }
}
