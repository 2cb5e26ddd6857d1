//! What observing costs (`cargo xtask bench observer`): comparisons of untuned observed
//! (`rxsteer compare --steer none`) beside untuned with no BPF at all, each arm's req/s over
//! the no-BPF arm's in the same repetition, per protocol, scenario and server engine, the CPU
//! each spent per request, read from /proc/stat for every arm alike, and what the kernel's
//! statistics say the programs cost.
use anyhow::{bail, Context, Result};
use rxsteer_records::{
    bpf_cost::{BpfCost, BpfCostOf},
    run::{median, range, ArmName, Variant, NO_BPF_ARM},
    Observer, Proto, Row, RunDoc, Scenario, ServerIo, XdpMode,
};
use serde::{Deserialize, Serialize};
use std::{fmt::Write as _, path::Path};

/// The measured (not unavailable) program costs of an arm's loads of `p`.
fn measured_costs(run: &RunDoc, arm: ArmName, p: Proto) -> Vec<&BpfCost> {
    run.of(arm, p)
        .into_iter()
        .filter_map(|r| match r.bpf.as_ref()? {
            BpfCostOf::Measured(c) => Some(c),
            BpfCostOf::Unavailable(_) => None,
        })
        .collect()
}

/// The median of one figure of an arm's measured program costs (None: none measured).
fn median_cost(
    run: &RunDoc,
    arm: ArmName,
    p: Proto,
    f: fn(&BpfCost) -> Option<f64>,
) -> Option<f64> {
    let v: Vec<f64> = measured_costs(run, arm, p)
        .into_iter()
        .filter_map(f)
        .collect();
    (!v.is_empty()).then(|| median(&v))
}

/// Each arm's programs over its measured windows, from the kernel's own statistics: ns per
/// packet the interface received and share of one CPU (median over repetitions), and the
/// costliest programs. Nothing for a run that predates these figures.
pub fn program_cost_table(
    o: &mut String,
    run: &RunDoc,
    arms: &[ArmName],
    protos: &[Proto],
) -> Result<()> {
    if run.runs.iter().all(|r| r.bpf.is_none()) {
        return Ok(());
    }
    writeln!(o, "What rxsteer's BPF programs cost in each measured window, from the kernel's own statistics (BPF_ENABLE_STATS, held only while the run sampled), median over repetitions:\n")?;
    writeln!(o, "| arm | protocol | ns per packet | % of one CPU | costliest programs: ns per run x runs per s (first repetition) |")?;
    writeln!(o, "|---|---|---|---|---|")?;
    for &p in protos {
        for &a in arms {
            let (per_packet, cpu, programs) = match measured_costs(run, a, p).first() {
                Some(c) => {
                    let share = median_cost(run, a, p, |c| Some(c.cpu_share)).unwrap_or(0.0);
                    (
                        median_cost(run, a, p, |c| c.ns_per_packet)
                            .map_or("-".to_string(), |n| format!("{n:.0}")),
                        format!("{:.2} %", share * 100.0),
                        c.programs
                            .iter()
                            .take(3)
                            .map(|x| {
                                format!("{} {:.0} x {:.0}", x.name, x.ns_per_run, x.runs_per_s)
                            })
                            .collect::<Vec<_>>()
                            .join(", "),
                    )
                }
                // None measured: unavailable, with the kernel's reason, or no BPF at all.
                None => match run.of(a, p).iter().find_map(|r| r.bpf.as_ref()) {
                    Some(BpfCostOf::Unavailable(why)) => {
                        ("unavailable".into(), "unavailable".into(), why.clone())
                    }
                    _ => continue,
                },
            };
            writeln!(
                o,
                "| {} | {} | {per_packet} | {cpu} | {programs} |",
                a.label(),
                p.label()
            )?;
        }
    }
    writeln!(o)?;
    Ok(())
}

/// Whether the programs' own run time accounts for the no-BPF arm's throughput gap: at
/// most, observing takes the share of one CPU the programs ran, so the observed arm should
/// serve about (1 - that share) of the no-BPF req/s, on a load limited by one CPU. Said
/// against the ratio's interval `(lo, hi)` ([`crate::decide`]); empty without the figures.
pub fn agreement(run: &RunDoc, arm: ArmName, p: Proto, (lo, hi): (f64, f64)) -> String {
    let Some(share) = median_cost(run, arm, p, |c| Some(c.cpu_share)) else {
        return String::new();
    };
    let expected = 1.0 - share;
    let verdict = if expected < lo {
        "the no-BPF arm gained less than that: the programs ran on CPU time the load did not need"
    } else if expected > hi {
        "the no-BPF arm gained more than that: part of observing costs what the kernel's run time does not count (the hooks' dispatch, the statistics' own clock reads, caches)"
    } else {
        "within the interval: they agree"
    };
    format!(
        " The programs ran {:.2} % of one CPU, so untuned should serve about {expected:.3}x of it; {verdict}.",
        share * 100.0
    )
}

/// The default observer may cost at most this share of the no-BPF req/s (median): 1 % on
/// request loads, 3 % on the upload (whose every frame the witnesses see).
pub fn target(scenario: Scenario) -> f64 {
    match scenario {
        Scenario::Upload => 0.03,
        _ => 0.01,
    }
}
/// An arm whose req/s spreads more than this (max/min) over repetitions is noisy.
const NOISY: f64 = 1.5;

/// One observed arm against the no-BPF arm of its load.
#[derive(Clone, Debug, Serialize)]
pub struct ArmCost {
    pub arm: ArmName,
    pub label: String,
    pub observer: Option<Observer>,
    /// Per repetition: this arm's req/s over the no-BPF arm's.
    pub ratios: Vec<f64>,
    pub median: f64,
    pub low: f64,
    pub high: f64,
    /// Median over repetitions: every CPU's busy time (/proc/stat) per request, in us.
    pub busy_us_per_request: f64,
    /// Median: receive work (NET_RX + receive kthreads) per request, in us; only where the
    /// softirq accounting ran (not in the no-BPF arm).
    pub receive_us_per_request: Option<f64>,
    /// Median: the programs' run time per packet and share of one CPU, from the kernel's
    /// statistics (None: not measured, or an arm without BPF).
    pub bpf_ns_per_packet: Option<f64>,
    pub bpf_cpu_share: Option<f64>,
    /// Per repetition: the programs' run time over the server side's busy CPU time (see
    /// [`server_share`]), the figure the target is judged by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_shares: Vec<f64>,
    /// Median: without the tc witnesses, what `--observe minimal` leaves running (as it ran
    /// where the statistics' cost was measured, else as counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimal_server_share: Option<f64>,
    /// Per repetition, where the statistics' own cost was measured in the same bench run:
    /// what observing cost as it ran ([`as_run_share`]), the figure the target is judged by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub as_run_shares: Vec<f64>,
    pub noisy: bool,
}

/// One load (a scenario, a protocol, a server engine), all its arms.
#[derive(Clone, Debug, Serialize)]
pub struct LoadCost {
    pub scenario: Scenario,
    pub proto: Proto,
    pub server_io: Option<ServerIo>,
    pub run: String,
    pub reps: u32,
    pub no_bpf_req_per_s: f64,
    pub no_bpf_busy_us_per_request: f64,
    pub arms: Vec<ArmCost>,
    /// Why the machine was not quiet, when the run went ahead anyway.
    pub loaded_machine: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ObserverBench {
    pub loads: Vec<LoadCost>,
    /// Per load: the default observer against the target, met or by how much not.
    pub verdicts: Vec<String>,
    /// The statistics' own cost, measured in the same bench run (None: not measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<StatsCost>,
}

/// us of `per_s` (ms per second, summed over CPUs) per request at `rps`.
fn per_request(ms_per_s: f64, rps: Option<f64>) -> Option<f64> {
    rps.filter(|r| *r > 0.0).map(|r| ms_per_s / r * 1000.0)
}

/// Every CPU's busy time (/proc/stat) per request served, in us.
pub(crate) fn busy_us(r: &Row) -> Option<f64> {
    let busy: f64 = r.time_ms_per_s.as_ref()?.iter().map(|t| t.busy()).sum();
    per_request(busy, r.req_per_s)
}

fn receive_us(r: &Row) -> Option<f64> {
    if r.observer == Some(Observer::Off) {
        return None;
    }
    per_request(r.receive_ms_per_s.iter().sum(), r.req_per_s)
}

/// What the kernel's BPF run-time statistics themselves cost, from `cargo xtask bench stats`
/// in the same bench run (its raw.json): what they count per run of the empty program (the
/// floor under every program's figure) and what turning them on adds to each run.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct StatsCost {
    pub counted_ns: f64,
    pub added_ns: f64,
}

/// The stats bench's raw.json, as far as it is read here.
#[derive(Deserialize)]
struct StatsBenchDoc {
    summary: Vec<StatsBenchRow>,
}

#[derive(Deserialize)]
struct StatsBenchRow {
    program: String,
    added_ns_median: f64,
    counted_ns_per_run: f64,
}

impl StatsCost {
    /// From the stats bench's raw.json: the empty program's figures.
    pub fn read(raw_json: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(raw_json)
            .with_context(|| format!("reading {}", raw_json.display()))?;
        let doc: StatsBenchDoc = serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", raw_json.display()))?;
        let empty = doc
            .summary
            .iter()
            .find(|r| r.program == "xdp_pass")
            .with_context(|| format!("{}: no xdp_pass row", raw_json.display()))?;
        Ok(Self {
            counted_ns: empty.counted_ns_per_run,
            added_ns: empty.added_ns_median,
        })
    }
}

/// What observing cost one load as it ran, over the server side's CPU time: each program's
/// run time net of the statistics' floor (`counted_ns` a run, which also holds the empty
/// program's own few ns), plus what the statistics added to every run while they were on
/// (`added_ns` a run, for the share of the window they were on: a tenth when sampled, all of
/// it for runs from before sampling). The hooks' dispatch and caches are still not in it.
pub fn as_run_share(r: &Row, stats: StatsCost, leave_out: &[&str]) -> Option<f64> {
    let Some(BpfCostOf::Measured(c)) = r.bpf.as_ref() else {
        return None;
    };
    let on = c.stats_on.unwrap_or(1.0);
    let ns: f64 = c
        .programs
        .iter()
        .filter(|p| !leave_out.contains(&p.name.as_str()))
        .map(|p| p.runs_per_s * ((p.ns_per_run - stats.counted_ns).max(0.0) + on * stats.added_ns))
        .sum();
    let server_ms = server_ms_per_s(r)?;
    Some(ns / (server_ms * 1e6))
}

/// Every CPU's busy time less the load generator's, ms per second.
fn server_ms_per_s(r: &Row) -> Option<f64> {
    let ms: f64 = r
        .time_ms_per_s
        .as_ref()?
        .iter()
        .map(|t| t.busy() - t.loader)
        .sum();
    (ms > 0.0).then_some(ms)
}

/// The tc witnesses, which `--observe minimal` does not attach.
const TC_PROGRAMS: [&str; 2] = ["tc_ingress", "tc_egress"];

/// What observing took of the server's box in one load: the kernel's run time of our
/// programs (but those named in `leave_out`) over every CPU's busy time less the load
/// generator's (which a real set-up spends on other machines). Both are per second of the
/// same window, so per request alike. Where the server's CPUs are what limits it, this is
/// the share of its throughput that observing takes, counted from inside instead of read
/// off a req/s ratio that spreads wider than the target on a small machine. It errs high by
/// the statistics' own clock reads and low by what the run time does not count (the hooks'
/// dispatch, caches): the throughput ratio stays beside it.
pub fn server_share(r: &Row, leave_out: &[&str]) -> Option<f64> {
    let Some(BpfCostOf::Measured(c)) = r.bpf.as_ref() else {
        return None;
    };
    let programs_ns: f64 = c
        .programs
        .iter()
        .filter(|p| !leave_out.contains(&p.name.as_str()))
        .map(|p| p.runs_per_s * p.ns_per_run)
        .sum();
    Some(programs_ns / (server_ms_per_s(r)? * 1e6))
}

fn median_of(rows: &[&Row], f: fn(&Row) -> Option<f64>) -> Option<f64> {
    let v: Vec<f64> = rows.iter().filter_map(|r| f(r)).collect();
    (!v.is_empty()).then(|| median(&v))
}

/// One stored comparison's arms against its no-BPF arm, over `proto`.
pub fn load_cost(
    doc: &RunDoc,
    run: &str,
    proto: Proto,
    stats: Option<StatsCost>,
) -> Result<LoadCost> {
    let base = doc.of(NO_BPF_ARM, proto);
    if base.is_empty() {
        bail!(
            "{run}: no {NO_BPF_ARM} arm over {}: not an observer comparison",
            proto.label()
        );
    }
    let (arms, _) = doc.dims();
    let mut out = Vec::new();
    for a in arms.iter().filter(|a| **a != NO_BPF_ARM) {
        let mine = doc.of(*a, proto);
        let ratios = doc.ratios_to(*a, NO_BPF_ARM, proto);
        if ratios.is_empty() {
            continue;
        }
        let (low, high) = range(&ratios);
        let rps: Vec<f64> = mine.iter().filter_map(|r| r.req_per_s).collect();
        let (lo, hi) = range(&rps);
        out.push(ArmCost {
            arm: *a,
            label: a.label(),
            observer: mine.first().and_then(|r| r.observer),
            median: median(&ratios),
            low,
            high,
            ratios,
            busy_us_per_request: median_of(&mine, busy_us).unwrap_or(0.0),
            receive_us_per_request: median_of(&mine, receive_us),
            bpf_ns_per_packet: median_cost(doc, *a, proto, |c| c.ns_per_packet),
            bpf_cpu_share: median_cost(doc, *a, proto, |c| Some(c.cpu_share)),
            server_shares: mine.iter().filter_map(|r| server_share(r, &[])).collect(),
            // As it ran where the statistics' cost is known, else as counted.
            minimal_server_share: match stats {
                Some(st) => {
                    let v: Vec<f64> = mine
                        .iter()
                        .filter_map(|r| as_run_share(r, st, &TC_PROGRAMS))
                        .collect();
                    (!v.is_empty()).then(|| median(&v))
                }
                None => median_of(&mine, |r| server_share(r, &TC_PROGRAMS)),
            },
            as_run_shares: stats.map_or(vec![], |s| {
                mine.iter()
                    .filter_map(|r| as_run_share(r, s, &[]))
                    .collect()
            }),
            noisy: rps.len() > 1 && hi > NOISY * lo,
        });
    }
    let base_rps: Vec<f64> = base.iter().filter_map(|r| r.req_per_s).collect();
    Ok(LoadCost {
        scenario: doc.scenario,
        proto,
        server_io: doc.server_io,
        run: run.to_string(),
        reps: doc.reps(),
        no_bpf_req_per_s: median(&base_rps),
        no_bpf_busy_us_per_request: median_of(&base, busy_us).unwrap_or(0.0),
        arms: out,
        loaded_machine: doc.loaded_machine.clone(),
    })
}

/// The bench over its stored comparisons (`dirs`, each with a run.json): one load per
/// comparison and protocol it drove.
/// `stats`: the statistics' own cost, where the bench measured it in the same run.
pub fn summarize(dirs: &[&Path], stats: Option<StatsCost>) -> Result<ObserverBench> {
    let mut loads = Vec::new();
    for d in dirs {
        let doc = crate::read(d)?;
        for p in doc.dims().1 {
            loads.push(load_cost(&doc, &d.display().to_string(), p, stats)?);
        }
    }
    let verdicts = loads.iter().filter_map(|l| verdict(l, stats)).collect();
    Ok(ObserverBench {
        loads,
        verdicts,
        stats,
    })
}

/// "upload over ZAP, uring server": which load a line speaks of.
fn load_name(l: &LoadCost) -> String {
    format!(
        "{} over {}, {} server",
        l.scenario,
        l.proto.label(),
        l.server_io.map_or("epoll", ServerIo::as_str)
    )
}

/// The default observer (the receive tracepoints) against the target on one load: judged by
/// the programs' share of the server side's CPU ([`server_share`]), with the req/s ratio
/// beside it.
fn verdict(l: &LoadCost, stats: Option<StatsCost>) -> Option<String> {
    let a = l
        .arms
        .iter()
        .find(|a| a.observer == Some(Observer::Tracepoint))?;
    let target = target(l.scenario);
    let by_ratio = ratio_verdict(a, target);
    Some(match kernel_verdict(a, target, stats) {
        Some(kernel) => format!(
            "{}: {kernel}; by req/s the observer cost {by_ratio}",
            load_name(l)
        ),
        // Runs before the kernel's statistics were stored: the ratio alone.
        None => format!("{}: the default observer cost {by_ratio}", load_name(l)),
    })
}

/// Met when every repetition is within the target, NOT met when the median is over it, else
/// met at the median with how many repetitions were over; with the median and range.
fn judge(shares: &[f64], target: f64) -> String {
    let (lo, hi) = range(shares);
    let med = median(shares);
    let over = shares.iter().filter(|s| **s > target).count();
    let judged = if over == 0 {
        "met".to_string()
    } else if med > target {
        format!("NOT met, by {:.2} points", (med - target) * 100.0)
    } else {
        format!(
            "met at the median; {over} of {} repetitions over",
            shares.len()
        )
    };
    format!(
        "{:.2} % ({:.2}-{:.2}) of the server side's CPU, target at most {:.0} %: {judged}",
        med * 100.0,
        lo * 100.0,
        hi * 100.0,
        target * 100.0
    )
}

/// By the kernel's statistics: as observing ran (net of the statistics' own cost, where the
/// bench measured it), else as the statistics count it; the other figures beside.
fn kernel_verdict(a: &ArmCost, target: f64, stats: Option<StatsCost>) -> Option<String> {
    if a.server_shares.is_empty() {
        return None;
    }
    let minimal = a.minimal_server_share.map_or(String::new(), |m| {
        format!(
            " (without the tc witnesses, as --observe minimal runs: {:.2} %)",
            m * 100.0
        )
    });
    Some(match stats {
        Some(st) if !a.as_run_shares.is_empty() => format!(
            "as it ran, observing took {} (the programs net of the statistics' {:.1} ns floor per run, plus the {:.0} ns the statistics add to each run while on); as the statistics count it, {:.2} %{minimal}",
            judge(&a.as_run_shares, target),
            st.counted_ns,
            st.added_ns,
            median(&a.server_shares) * 100.0
        ),
        _ => format!(
            "the programs took {}{minimal}",
            judge(&a.server_shares, target)
        ),
    })
}

/// By req/s over the no-BPF arm's, repetition by repetition: met only if even the worst
/// repetition is within the target, not met only if even the best one is over it.
fn ratio_verdict(a: &ArmCost, target: f64) -> String {
    let cost = 1.0 - a.median;
    let judged = if 1.0 - a.low <= target {
        "met".to_string()
    } else if 1.0 - a.high > target {
        format!("NOT met, by {:.1} points", (cost - target) * 100.0)
    } else {
        format!(
            "not decided: the repetitions spread {:.2}x-{:.2}x, wider than the target",
            a.low, a.high
        )
    };
    let programs = a.bpf_cpu_share.map_or(String::new(), |s| {
        format!("; the programs ran {:.2} % of one CPU", s * 100.0)
    });
    format!(
        "{:.1} % (median), target at most {:.0} %: {judged}{programs}",
        cost * 100.0,
        target * 100.0
    )
}

/// The bench's printed output.
pub fn render(b: &ObserverBench) -> Result<String> {
    let mut o = String::new();
    writeln!(o, "observer cost: untuned observed, req/s over untuned with no BPF in the same repetition; the programs' own cost from the kernel's statistics")?;
    if let Some(st) = b.stats {
        writeln!(o, "the statistics themselves (cargo xtask bench stats, this run): {:.1} ns counted per run of the empty program, {:.0} ns added to each run while on", st.counted_ns, st.added_ns)?;
    }
    for l in &b.loads {
        writeln!(
            o,
            "\n{} ({} repetitions, arms rotated; {}): no BPF {:.0} req/s, {:.1} us busy CPU per request{}",
            load_name(l),
            l.reps,
            l.run,
            l.no_bpf_req_per_s,
            l.no_bpf_busy_us_per_request,
            l.loaded_machine
                .as_ref()
                .map_or(String::new(), |m| format!("; LOADED MACHINE: {m}"))
        )?;
        for a in &l.arms {
            writeln!(
                o,
                "  {:<28} {:.2}x ({:.2}-{:.2})  busy {:.1} us/request  receive {}  programs {}{}{}",
                a.label,
                a.median,
                a.low,
                a.high,
                a.busy_us_per_request,
                a.receive_us_per_request
                    .map_or("-".into(), |r| format!("{r:.1} us/request")),
                match (a.bpf_ns_per_packet, a.bpf_cpu_share) {
                    (Some(n), Some(c)) =>
                        format!("{n:.0} ns/packet, {:.2} % of one CPU", c * 100.0),
                    (None, Some(c)) => format!("{:.2} % of one CPU", c * 100.0),
                    _ => "-".into(),
                },
                match (a.server_shares.is_empty(), a.as_run_shares.is_empty()) {
                    (true, _) => String::new(),
                    (false, true) => format!(
                        ", {:.2} % of the server side's CPU",
                        median(&a.server_shares) * 100.0
                    ),
                    (false, false) => format!(
                        ", {:.2} % of the server side's CPU as counted, {:.2} % as it ran",
                        median(&a.server_shares) * 100.0,
                        median(&a.as_run_shares) * 100.0
                    ),
                },
                if a.noisy { "  NOISY" } else { "" }
            )?;
        }
    }
    writeln!(o)?;
    for v in &b.verdicts {
        writeln!(o, "{v}")?;
    }
    Ok(o)
}

/// The one line `--observer xdp` in skb mode and old runs' reports quote (results/observer-cost.txt).
pub fn cost_line(b: &ObserverBench, stored: &str) -> String {
    // The untuned arm observed by the XDP program in one mode (`none-skb`, `none-drv`).
    let xdp_observed = |mode: XdpMode| ArmName {
        variant: Variant {
            xdp: Some(mode),
            ..ArmName::UNTUNED.variant
        },
        ..ArmName::UNTUNED
    };
    let of = |obs: ArmName| -> Vec<String> {
        b.loads
            .iter()
            .filter(|l| l.proto == Proto::Http)
            .filter_map(|l| {
                let a = l.arms.iter().find(|a| a.arm == obs)?;
                Some(format!(
                    "{:.2}x ({:.2}-{:.2}) on {}",
                    a.median, a.low, a.high, l.scenario
                ))
            })
            .collect()
    };
    format!(
        "untuned with the XDP observer in skb mode served {} and in driver mode {}, the receive tracepoints {}, of the req/s with no BPF (veth lab, median of repetitions; {stored})",
        of(xdp_observed(XdpMode::Skb)).join(", "),
        of(xdp_observed(XdpMode::Drv)).join(", "),
        of(ArmName::UNTUNED).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(rep: u32, arm: &str, obs: Observer, rps: f64) -> Row {
        Row {
            rep,
            arm: Some(arm.parse().unwrap()),
            proto: Proto::Http,
            observer: Some(obs),
            req_per_s: Some(rps),
            receive_ms_per_s: vec![100.0, 0.0],
            ..Default::default()
        }
    }

    #[test]
    fn each_arm_is_a_ratio_to_no_bpf_in_its_repetition() {
        let mut runs = Vec::new();
        for (rep, base, skb) in [(0, 1000.0, 0.5), (1, 1200.0, 0.25), (2, 1100.0, 0.45)] {
            runs.push(row(rep, "none-nobpf", Observer::Off, base));
            runs.push(row(rep, "none", Observer::Tracepoint, base * 0.99));
            runs.push(row(rep, "none-skb", Observer::Xdp, base * skb));
        }
        let doc = RunDoc {
            scenario: Scenario::Upload,
            runs,
            ..Default::default()
        };
        let l = load_cost(&doc, "results/x", Proto::Http, None).unwrap();
        let tp = &l.arms[0];
        assert_eq!(tp.arm.to_string(), "none");
        assert!((tp.median - 0.99).abs() < 1e-9 && !tp.noisy, "{tp:?}");
        let receive = tp.receive_us_per_request.unwrap();
        assert!(
            (receive - 100.0 / 1089.0 * 1000.0).abs() < 1e-6,
            "{receive}"
        );
        let skb = &l.arms[1];
        assert!((skb.median - 0.45).abs() < 1e-9);
        assert!(skb.noisy, "300-500 req/s is a 1.67x spread");
        let b = ObserverBench {
            verdicts: vec![verdict(&l, None).unwrap()],
            loads: vec![l],
            stats: None,
        };
        assert_eq!(
            b.verdicts[0],
            "upload over HTTP/1.1, epoll server: the default observer cost 1.0 % (median), target at most 3 %: met"
        );
        // A spread wider than the target decides nothing, whichever side the median is on.
        let mut wide = b.loads[0].clone();
        wide.arms[0].low = 0.9;
        wide.arms[0].high = 1.2;
        wide.arms[0].bpf_cpu_share = Some(0.0197);
        assert_eq!(
            verdict(&wide, None).unwrap(),
            "upload over HTTP/1.1, epoll server: the default observer cost 1.0 % (median), target at most 3 %: not decided: the repetitions spread 0.90x-1.20x, wider than the target; the programs ran 1.97 % of one CPU"
        );
        wide.arms[0].high = 0.95;
        wide.arms[0].median = 0.93;
        assert!(verdict(&wide, None)
            .unwrap()
            .contains("NOT met, by 4.0 points"));
        let line = cost_line(&b, "results/x");
        assert!(
            line.starts_with(
                "untuned with the XDP observer in skb mode served 0.45x (0.25-0.50) on upload"
            ),
            "{line}"
        );
        assert!(render(&b).unwrap().contains("NOISY"));
        let none = RunDoc::default();
        assert!(load_cost(&none, "r", Proto::Http, None).is_err());
    }

    /// A load whose programs ran `ns_per_s` in total (half tc ingress, half the receive
    /// tracepoint) beside 800 ms/s of the server side's work (900 busy, 100 of it loader).
    fn observed(rep: u32, ns_per_s: f64) -> Row {
        use rxsteer_records::{bpf_cost::ProgramCost, breakdown::TimeSplit};
        let program = |name: &str| ProgramCost {
            name: name.into(),
            runs_per_s: 100_000.0,
            ns_per_run: ns_per_s / 2.0 / 100_000.0,
        };
        let cpu = TimeSplit {
            server: 300.0,
            loader: 50.0,
            net_rx: 100.0,
            idle: 550.0,
            ..Default::default()
        };
        Row {
            bpf: Some(BpfCostOf::Measured(BpfCost {
                programs: vec![program("tc_ingress"), program("rx_driver_poll")],
                ns_per_packet: None,
                cpu_share: ns_per_s / 1e9,
                stats_on: Some(0.1),
            })),
            time_ms_per_s: Some(vec![cpu, cpu]),
            ..row(rep, "none", Observer::Tracepoint, 1000.0)
        }
    }

    #[test]
    fn the_target_is_judged_by_the_programs_share_of_the_server_sides_cpu() {
        let r = observed(0, 20e6);
        assert!((server_share(&r, &[]).unwrap() - 0.025).abs() < 1e-12);
        assert!((server_share(&r, &TC_PROGRAMS).unwrap() - 0.0125).abs() < 1e-12);
        assert_eq!(
            server_share(&row(0, "none", Observer::Tracepoint, 1.0), &[]),
            None
        );
        let load = |shares: [f64; 3]| {
            let mut runs = Vec::new();
            for (rep, share) in shares.into_iter().enumerate() {
                runs.push(row(rep as u32, "none-nobpf", Observer::Off, 1000.0));
                runs.push(observed(rep as u32, share * 800e6));
            }
            let doc = RunDoc {
                scenario: Scenario::Health,
                runs,
                ..Default::default()
            };
            verdict(&load_cost(&doc, "r", Proto::Http, None).unwrap(), None).unwrap()
        };
        assert_eq!(
            load([0.004, 0.006, 0.008]),
            "health over HTTP/1.1, epoll server: the programs took 0.60 % (0.40-0.80) of the server side's CPU, target at most 1 %: met (without the tc witnesses, as --observe minimal runs: 0.30 %); by req/s the observer cost 0.0 % (median), target at most 1 %: met; the programs ran 0.48 % of one CPU"
        );
        assert!(load([0.004, 0.006, 0.012])
            .contains(": met at the median; 1 of 3 repetitions over (without"));
        assert!(load([0.004, 0.012, 0.013]).contains(": NOT met, by 0.20 points (without"));
    }

    #[test]
    fn as_it_ran_is_net_of_the_statistics_floor_plus_their_cost_while_on() {
        // Two programs, 100 000 runs a second each at 100 ns as counted; the statistics
        // count 50 ns for nothing and add 80 ns a run, on a tenth of the time.
        let r = observed(0, 20e6);
        let stats = StatsCost {
            counted_ns: 50.0,
            added_ns: 80.0,
        };
        let share = as_run_share(&r, stats, &[]).unwrap();
        let minimal = as_run_share(&r, stats, &TC_PROGRAMS).unwrap();
        assert!((minimal - share / 2.0).abs() < 1e-12, "{minimal}");
        assert!(
            (share - 2.0 * 100_000.0 * (50.0 + 8.0) / 800e6).abs() < 1e-12,
            "{share}"
        );
        let mut runs = vec![row(0, "none-nobpf", Observer::Off, 1000.0), r];
        runs[1].rep = 0;
        let doc = RunDoc {
            scenario: Scenario::Health,
            runs,
            ..Default::default()
        };
        let l = load_cost(&doc, "r", Proto::Http, Some(stats)).unwrap();
        let v = verdict(&l, Some(stats)).unwrap();
        assert!(
            v.starts_with("health over HTTP/1.1, epoll server: as it ran, observing took 1.45 % (1.45-1.45) of the server side's CPU, target at most 1 %: NOT met, by 0.45 points (the programs net of the statistics' 50.0 ns floor per run, plus the 80 ns the statistics add to each run while on); as the statistics count it, 2.50 %"),
            "{v}"
        );
    }
}
