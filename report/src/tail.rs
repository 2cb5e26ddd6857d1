//! Why the tail is long: NET_RX's run length and its wait from raise to run on the receive
//! core, from the kernel's log2 histograms, beside the load's own p99 and p99.9. Each arm's
//! loads are added up (the histograms of every repetition); the receive core is the CPU whose
//! NET_RX ran most often. The section appears only where a run counted them.
use rxsteer_records::{
    log2::{Log2Ns, NetRxLog2},
    run::{Row, RunDoc},
    search::ms,
};
use std::fmt::Write;

/// Every load's histograms of `rows`, added up per CPU.
fn summed(rows: &[&Row]) -> Option<NetRxLog2> {
    let mut out: Option<NetRxLog2> = None;
    for h in rows.iter().filter_map(|r| r.net_rx_log2.as_ref()) {
        let o = out.get_or_insert_with(|| NetRxLog2 {
            run: Default::default(),
            wait: h.wait.as_ref().map(|_| Default::default()),
        });
        for (cpu, b) in &h.run {
            o.run.entry(*cpu).or_default().add(b);
        }
        match (o.wait.as_mut(), &h.wait) {
            (Some(w), Some(hw)) => {
                for (cpu, b) in hw {
                    w.entry(*cpu).or_default().add(b);
                }
            }
            // One load without waits timed: none are said for the arm.
            _ => o.wait = None,
        }
    }
    out
}

/// "< 64 us": the histogram's `q` quantile as its bucket's upper edge.
fn below(h: &Log2Ns, q: f64) -> String {
    h.quantile_ns(q)
        .map_or("-".into(), |ns| format!("< {}", ms(ns.div_ceil(1000))))
}

fn median(mut v: Vec<u64>) -> Option<u64> {
    v.sort_unstable();
    v.get(v.len() / 2).copied()
}

pub fn section(o: &mut String, run: &RunDoc) -> std::fmt::Result {
    if !run.runs.iter().any(|r| r.net_rx_log2.is_some()) {
        return Ok(());
    }
    let (arms, protos) = run.dims();
    writeln!(o, "## Why the tail is long: NET_RX on the receive core\n")?;
    writeln!(o, "From the kernel's log2 histograms (a value is below its bucket's upper edge and at least half of it), every repetition's measured window added up; the receive core is the CPU whose NET_RX ran most often. NET_RX's wait runs from its first raise to the run that served it (behind other softirqs, or in ksoftirqd's queue): timed only at `--observe full`, \"not timed\" below it.\n")?;
    writeln!(o, "| protocol | arm | receive core | NET_RX runs | run p50 | run p99 | wait p50 | wait p99 | load p99 | load p99.9 |")?;
    writeln!(o, "|---|---|---|---|---|---|---|---|---|---|")?;
    let mut said = Vec::new();
    for &p in &protos {
        for &a in &arms {
            let rows = run.of(a, p);
            let Some(h) = summed(&rows) else { continue };
            let Some(cpu) = h.busiest() else { continue };
            let runs = &h.run[&cpu];
            let wait = h.wait.as_ref().and_then(|w| w.get(&cpu));
            let p99 = median(rows.iter().filter_map(|r| r.p99_us).collect());
            let p999 = median(rows.iter().filter_map(|r| r.p999_us).collect());
            let (w50, w99) = wait.map_or(("not timed".into(), "not timed".into()), |w| {
                (below(w, 0.5), below(w, 0.99))
            });
            writeln!(
                o,
                "| {} | {} | CPU {cpu} | {} | {} | {} | {w50} | {w99} | {} | {} |",
                p.label(),
                a.label(),
                runs.count(),
                below(runs, 0.5),
                below(runs, 0.99),
                p99.map_or("-".into(), ms),
                p999.map_or("-".into(), ms),
            )?;
            // The longest of the two on the request's path, against the request's own p99.
            let longest = [("ran", Some(runs)), ("waited", wait)]
                .into_iter()
                .filter_map(|(what, h)| Some((what, h?.quantile_ns(0.99)?)))
                .max_by_key(|(_, ns)| *ns);
            if let (Some((what, ns)), Some(p99)) = (longest, p99) {
                said.push(format!(
                    "{} over {}: NET_RX {what} up to {} (p99) on CPU {cpu}, against a request \
                     p99 of {}",
                    a.label(),
                    p.label(),
                    ms(ns.div_ceil(1000)),
                    ms(p99)
                ));
            }
        }
    }
    writeln!(o)?;
    for s in said {
        writeln!(o, "- {s}.")?;
    }
    writeln!(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(arm: &str, wait: bool) -> Row {
        let mut run = std::collections::BTreeMap::new();
        // CPU 0 ran most: 99 runs under 2 us, one under 64 us.
        run.insert(
            0,
            Log2Ns(vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 0, 0, 1]),
        );
        run.insert(1, Log2Ns(vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]));
        let waits = wait.then(|| {
            let mut w = std::collections::BTreeMap::new();
            // 100 waits, the slowest 2 under 4.2 ms.
            w.insert(
                0,
                Log2Ns([vec![0; 12], vec![98, 0, 0, 0, 0, 0, 0, 0, 0, 2]].concat()),
            );
            w
        });
        serde_json::from_value(serde_json::json!({
            "rep": 0, "arm": arm, "mode": "none", "proto": "http",
            "p99_us": 900, "p999_us": 5000,
        }))
        .map(|mut r: Row| {
            r.net_rx_log2 = Some(NetRxLog2 { run, wait: waits });
            r
        })
        .unwrap()
    }

    #[test]
    fn the_receive_core_s_run_and_wait_quantiles_beside_the_load_s() {
        let doc: RunDoc = serde_json::from_value(serde_json::json!({"runs": []})).unwrap();
        let doc = RunDoc {
            runs: vec![row("none", true), row("rps", false)],
            ..doc
        };
        let mut o = String::new();
        section(&mut o, &doc).unwrap();
        assert!(o.contains("| HTTP/1.1 | untuned | CPU 0 | 100 | < 3 us | < 3 us | < 9 us | < 4.20 ms | 900 us | 5.00 ms |"), "{o}");
        assert!(o.contains("not timed | not timed"), "{o}");
        assert!(
            o.contains("untuned over HTTP/1.1: NET_RX waited up to 4.20 ms (p99) on CPU 0, against a request p99 of 900 us"),
            "{o}"
        );
        let mut empty = String::new();
        let none = RunDoc {
            runs: vec![],
            ..doc
        };
        section(&mut empty, &none).unwrap();
        assert!(empty.is_empty());
    }
}
