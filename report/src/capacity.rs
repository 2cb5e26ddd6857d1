//! The report's answer when every load was a capacity search: per protocol, each arm's highest
//! rate sustained under the p99 bound, its ratio to untuned, and what limited it at the knee;
//! then the searches' steps, and the curves of p99 and CPU busy share against the rate.
use anyhow::Result;
use rxsteer_records::{
    breakdown::{rate_text, Verdict},
    run::{median, range, ArmName},
    search::{ms, Search, SearchEnd, StepKind},
    Proto, Row, RunDoc,
};
use std::fmt::Write;

use crate::{
    svg::{self, Series},
    table::Table,
};

/// Whether the run searched (every load a search).
pub fn searched(run: &RunDoc) -> bool {
    run.search.is_some() && run.runs.iter().any(|r| r.search.is_some())
}

fn searches(run: &RunDoc, arm: ArmName, p: Proto) -> Vec<(&Row, &Search)> {
    run.of(arm, p)
        .into_iter()
        .filter_map(|r| Some((r, r.search.as_ref()?)))
        .collect()
}

/// The bound of a protocol's searches (one per protocol, set by its first load whose
/// unloaded step ran: a load that failed even there set none).
fn bound_of(run: &RunDoc, p: Proto) -> Option<&Search> {
    run.runs
        .iter()
        .filter(|r| r.proto == p)
        .filter_map(|r| r.search.as_ref())
        .find(|s| s.bound_us > 0)
}

/// "58k (55k-61k)": a median and its range over repetitions.
pub(crate) fn median_range(v: &[f64], f: impl Fn(f64) -> String) -> String {
    if v.is_empty() {
        return "-".into();
    }
    let (lo, hi) = range(v);
    if v.len() == 1 {
        f(v[0])
    } else {
        format!("{} ({}-{})", f(median(v)), f(lo), f(hi))
    }
}

/// The limit in a few words: "receive-bound, CPU 0" (how many repetitions said so).
fn short(v: &Verdict) -> String {
    let cpus = v
        .cpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("+");
    format!("{}, CPU {cpus}", v.bound)
}

/// The most common limit of these rows, "(2 of 3)" when they do not all agree.
fn common_limit(rows: &[&Row]) -> String {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for v in rows.iter().filter_map(|r| r.verdict.as_ref()) {
        let s = short(v);
        match seen.iter_mut().find(|(x, _)| *x == s) {
            Some(e) => e.1 += 1,
            None => seen.push((s, 1)),
        }
    }
    seen.sort_by_key(|e| std::cmp::Reverse(e.1));
    match seen.first() {
        None => "-".into(),
        Some((s, n)) if *n == rows.len() => s.clone(),
        Some((s, n)) => format!("{s} ({n} of {})", rows.len()),
    }
}

/// The first screen: one table per protocol, each followed by its recommendation.
pub fn answer_section(
    o: &mut String,
    run: &RunDoc,
    arms: &[ArmName],
    protos: &[Proto],
) -> Result<()> {
    writeln!(o, "## The answer: capacity at the p99 bound\n")?;
    writeln!(
        o,
        "Each arm's capacity is the highest open-loop rate it sustained (at least {:.0} % of it served, no error) with p99 at or under the bound: found per repetition by doubling the offered rate, then bisecting; ratios to untuned are taken per repetition.\n",
        rxsteer_records::search::SUSTAINED_SHARE * 100.0
    )?;
    for &p in protos {
        let Some(first) = bound_of(run, p) else {
            continue;
        };
        writeln!(
            o,
            "**{}**, p99 bound {} ({}):\n",
            p.label(),
            ms(first.bound_us),
            match first.bound_from {
                rxsteer_records::search::BoundFrom::Flag => "--p99".to_string(),
                rxsteer_records::search::BoundFrom::Floor => "the 1 ms floor".to_string(),
                rxsteer_records::search::BoundFrom::TenTimesUnloaded => format!(
                    "10x the unloaded p99 of {}",
                    first.unloaded_p99_us.map_or("?".into(), ms)
                ),
            }
        )?;
        let table = Table::new()
            .column("arm", |a: &ArmName| a.label())
            .column("capacity req/s, median (range)", |a| {
                let found = searches(run, *a, p);
                let caps: Vec<f64> = found.iter().filter_map(|(_, s)| s.capacity()).collect();
                let mut cell = median_range(&caps, rate_text);
                let loader = found
                    .iter()
                    .filter(|(_, s)| s.end == SearchEnd::LoaderBound)
                    .count();
                let none = found.len() - caps.len();
                if loader > 0 {
                    write!(
                        cell,
                        "; loader-bound in {loader} of {}: the server's capacity is above this",
                        found.len()
                    )
                    .ok();
                }
                if found.iter().any(|(_, s)| s.end == SearchEnd::Ceiling) {
                    cell.push_str("; the search's ceiling: capacity above");
                }
                if none > 0 {
                    write!(cell, "; nothing sustained in {none}").ok();
                    let why = found.iter().find_map(|(_, s)| match &s.end {
                        SearchEnd::NothingSustained { why } => Some(why),
                        _ => None,
                    });
                    if let Some(why) = why {
                        write!(cell, " ({why})").ok();
                    }
                }
                cell
            })
            .column("/ untuned, median (range)", |a| {
                if a.mode.is_baseline() {
                    return "-".into();
                }
                median_range(&run.ratios(*a, p), |x| format!("{x:.2}x"))
            })
            .column("p99 at capacity", |a| {
                let v: Vec<f64> = searches(run, *a, p)
                    .iter()
                    .filter_map(|(_, s)| s.knee_step().map(|k| k.p99_us as f64))
                    .collect();
                median_range(&v, |x| ms(x as u64))
            })
            .column("limited at the knee by", |a| common_limit(&run.of(*a, p)));
        o.push_str(&table.render(arms.iter().copied()));
        if let Some(said) = crate::nic::drops_said(run, p) {
            writeln!(o, "\n{said}")?;
        }
        if crate::recommend::applies(run) {
            let r = crate::recommend::recommend(run, p);
            writeln!(
                o,
                "\n**Recommendation for {}: {}.** {}.",
                p.label(),
                r.verdict,
                r.reasons.join("; ")
            )?;
            if let Some(c) = &r.command {
                writeln!(o, "Apply it: `{c}`")?;
            }
            if !r.judged.is_empty() {
                writeln!(
                    o,
                    "\n![each arm against untuned with its interval]({})",
                    crate::forest::file(p)
                )?;
            }
        }
        writeln!(o)?;
    }
    Ok(())
}

/// Every search's steps, compact: one row per load.
pub fn steps_section(
    o: &mut String,
    run: &RunDoc,
    arms: &[ArmName],
    protos: &[Proto],
) -> Result<()> {
    writeln!(o, "## The capacity searches\n")?;
    let charts: Vec<String> = protos
        .iter()
        .flat_map(|p| {
            [
                format!(
                    "![p99 against the offered rate]({})",
                    chart_file("capacity", *p)
                ),
                format!(
                    "![busy share against the offered rate]({})",
                    chart_file("busy", *p)
                ),
            ]
        })
        .collect();
    writeln!(o, "{}\n", charts.join(" "))?;
    writeln!(o, "Each step: the offered rate, its p99, and ✓ where it was sustained (✗ with why not). Step 0 is the unloaded one.\n")?;
    let mut loads: Vec<(&Row, &Search)> = Vec::new();
    for &p in protos {
        for a in arms {
            loads.extend(searches(run, *a, p));
        }
    }
    let table = Table::new()
        .column("arm", |(r, _): &(&Row, &Search)| r.arm().label())
        .column("protocol", |(r, _)| r.proto.label().to_string())
        .column("rep", |(r, _)| r.rep.to_string())
        .column("steps", |(_, s)| {
            s.steps
                .iter()
                .map(|st| {
                    let mark = match (st.kind, st.sustained) {
                        (StepKind::Unloaded, _) => String::new(),
                        (_, true) => " ✓".into(),
                        (_, false) => format!(" ✗ {}", st.why_not.as_deref().unwrap_or("")),
                    };
                    format!("{}: {}{mark}", rate_text(st.offered_per_s), ms(st.p99_us))
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .column("outcome", |(_, s)| s.outcome());
    o.push_str(&table.render(loads));
    writeln!(o)?;
    Ok(())
}

pub fn chart_file(what: &str, p: Proto) -> String {
    format!("{what}-{}.svg", p.as_str())
}

/// The repetition whose capacity is the median of the arm's (the one a curve shows).
fn median_search(run: &RunDoc, arm: ArmName, p: Proto) -> Option<&Search> {
    let mut found: Vec<&Search> = searches(run, arm, p).into_iter().map(|(_, s)| s).collect();
    found.sort_by(|a, b| {
        a.capacity()
            .unwrap_or(0.0)
            .total_cmp(&b.capacity().unwrap_or(0.0))
    });
    found.get(found.len().saturating_sub(1) / 2).copied()
}

/// The sustained-or-not steps of a search in rate order, without the unloaded one.
fn curve(s: &Search, y: impl Fn(&rxsteer_records::search::Step) -> f64) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = s
        .steps
        .iter()
        .filter(|st| st.kind != StepKind::Unloaded)
        .map(|st| (st.offered_per_s, y(st)))
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    pts
}

/// Per protocol: p99 against the offered rate per arm (its median repetition; p99 drawn up to
/// 3x the bound, where the curve has already told), and each CPU's busy share.
pub fn charts(run: &RunDoc) -> Vec<(String, String)> {
    let (arms, protos) = run.dims();
    let mut out = Vec::new();
    for p in protos {
        let Some(bound) = bound_of(run, p).map(|s| s.bound_us as f64) else {
            continue;
        };
        let mut p99 = Vec::new();
        let mut busy = Vec::new();
        for a in &arms {
            let Some(s) = median_search(run, *a, p) else {
                continue;
            };
            let knee = s
                .knee_step()
                .map_or((0.0, 0.0), |k| (k.offered_per_s, k.p99_us as f64));
            p99.push(Series {
                name: a.label(),
                line: curve(s, |st| (st.p99_us as f64).min(3.0 * bound)),
                measured: knee,
            });
            let cpus = s.steps.iter().map(|st| st.busy.len()).max().unwrap_or(0);
            for c in 0..cpus {
                let line = curve(s, |st| st.busy.get(c).copied().unwrap_or(0.0) * 100.0);
                let at_knee = s.knee_step().map_or((0.0, 0.0), |k| {
                    (
                        k.offered_per_s,
                        k.busy.get(c).copied().unwrap_or(0.0) * 100.0,
                    )
                });
                busy.push(Series {
                    name: format!("{} CPU {c}", a.label()),
                    line,
                    measured: at_knee,
                });
            }
        }
        out.push((
            chart_file("capacity", p),
            svg::lines(
                &format!(
                    "{}: p99 against the offered rate (median repetition; dot: the capacity; bound {})",
                    p.label(),
                    ms(bound as u64)
                ),
                "offered req/s",
                "p99 us",
                &p99,
            ),
        ));
        out.push((
            chart_file("busy", p),
            svg::lines(
                &format!(
                    "{}: each CPU's busy share against the offered rate (median repetition)",
                    p.label()
                ),
                "offered req/s",
                "busy %",
                &busy,
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::{
        search::{Asked, Step},
        Observer,
    };

    /// One load's search: the unloaded step, then (offered, served, p99 in us) steps judged
    /// against a 1 ms bound; `loader_cpu` on the steps that failed.
    fn searched_row(rep: u32, arm: &str, steps: &[(f64, f64, u64)], loader_cpu: f64) -> Row {
        let mut s = Search {
            bound_us: 1000,
            unloaded_p99_us: Some(80),
            steps: vec![Step {
                offered_per_s: 500.0,
                req_per_s: 500.0,
                p99_us: 80,
                sustained: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        for &(offered, served, p99) in steps {
            let mut st = Step {
                kind: StepKind::Coarse,
                offered_per_s: offered,
                req_per_s: served,
                p99_us: p99,
                ..Default::default()
            };
            st.judge(1000);
            if !st.sustained {
                st.loader_cpu = loader_cpu;
            }
            s.steps.push(st);
        }
        s.finish(false);
        let name: ArmName = arm.parse().unwrap();
        Row {
            rep,
            arm: Some(name),
            mode: name.mode,
            proto: Proto::Http,
            req_per_s: s.capacity(),
            observer: Some(if name.mode == rxsteer_records::Mode::Cpumap {
                Observer::Xdp
            } else {
                Observer::Tracepoint
            }),
            search: Some(s),
            ..Default::default()
        }
    }

    fn doc(runs: Vec<Row>) -> RunDoc {
        RunDoc {
            cpus: 2,
            protos: vec![Proto::Http],
            search: Some(Asked::default()),
            runs,
            ..Default::default()
        }
    }

    fn answer(run: &RunDoc) -> String {
        let (arms, protos) = run.dims();
        let mut o = String::new();
        answer_section(&mut o, run, &arms, &protos).unwrap();
        o
    }

    /// Five repetitions: untuned's knee at 10k (its failed step's loader at `untuned_loader`
    /// of its CPU), RPS's at 20k.
    fn untuned_and_rps(untuned_loader: f64) -> String {
        let mut runs = Vec::new();
        for rep in 0..5 {
            let untuned = [(10e3, 10e3, 300), (20e3, 15e3, 4000)];
            runs.push(searched_row(rep, "none", &untuned, untuned_loader));
            let rps = [(10e3, 10e3, 300), (20e3, 20e3, 600), (40e3, 25e3, 9000)];
            runs.push(searched_row(rep, "rps", &rps, 0.3));
        }
        answer(&doc(runs))
    }

    #[test]
    fn a_knee_found_in_every_repetition_answers_with_capacity_ratio_and_winner() {
        let o = untuned_and_rps(0.3);
        assert!(
            o.contains("| RPS/RFS/XPS | 20k (20k-20k) | 2.00x (2.00x-2.00x) |"),
            "{o}"
        );
        assert!(
            o.contains(
                "**Recommendation for HTTP/1.1: deploy RPS/RFS/XPS: 2.00x untuned (95 % CI \
                 2.00-2.00, 5 of 5 repetitions higher).**"
            ),
            "{o}"
        );
    }

    #[test]
    fn a_knee_the_loader_caused_is_named_and_never_a_winner() {
        // Untuned's failed step saturated the loader: its capacity is only a floor.
        let o = untuned_and_rps(0.97);
        assert!(
            o.contains("loader-bound in 5 of 5: the server's capacity is above this"),
            "{o}"
        );
        // Every ratio is an upper bound: it could show a loss, never this gain.
        assert!(
            o.contains(
                "**Recommendation for HTTP/1.1: undecided after 5 repetitions: RPS/RFS/XPS 2.00x"
            ),
            "{o}"
        );
        assert!(o.contains("fewer connections per loader CPU"), "{o}");
    }

    #[test]
    fn an_arm_that_sustained_nothing_says_why_and_is_not_weighed() {
        let mut runs = Vec::new();
        for rep in 0..2 {
            runs.push(searched_row(rep, "none", &[(10e3, 10e3, 300)], 0.3));
            runs.push(searched_row(rep, "rps", &[(10e3, 9e3, 300)], 0.3));
        }
        let o = answer(&doc(runs));
        assert!(
            o.contains("nothing sustained in 2 (served 90 % of the offered rate)"),
            "{o}"
        );
        assert!(o.contains("RPS/RFS/XPS: no rate sustained"), "{o}");
    }
}
