//! `rxsteer predict RUN_DIR --cpus N`: what each arm would serve on N CPUs, **a prediction**,
//! from the costs a stored run measured per request and per stage.
//!
//! The model. Every request costs, in microseconds of CPU:
//! - `rx`: the receive work the RX core did (NET_RX softirq and receive kthreads on it, and
//!   the other softirq and irq time there): with one hardware queue this cannot leave that one
//!   core;
//! - `steered`: receive work done on the other CPUs (RPS backlog, cpumap kthreads);
//! - `server`: the server process, every CPU;
//! - `loader`: the load generator and, in the lab, its veth's receive of the replies (counted
//!   only with `--loader local`: a remote loader costs this box nothing);
//! - `overhead`: other softirq and irq time off the RX core.
//!
//! On N CPUs the served rate is the smaller of what the RX core can take (1 s / rx) and what
//! all N together can (N s / everything): whichever binds is named as the limit. Assumed, and
//! said next to every result: costs per request stay what they were when measured (no cache
//! or contention effects, no change of GRO or batching with load), server threads scale
//! linearly, the IPIs and enqueues that steering adds are inside the measured costs, and
//! nothing else runs. `--check OTHER_RUN` tests the per-request costs against a run they were
//! not fitted to (an open-loop `--rate` run: each CPU's busy time at that rate).
use anyhow::{bail, Context, Result};
use rxsteer_records::{
    breakdown::TimeSplit,
    run::{base_arm_where, ArmName, RunDoc, NO_BPF_ARM},
    Proto, Row,
};
use std::{fmt::Write as _, path::Path};

use crate::table::Table;

/// Where the load generator runs on the predicted machine (`predict --loader`).
pub use rxsteer_records::LoaderPlace;

/// One arm's cost per request and stage, in microseconds of CPU, mean over repetitions.
#[derive(Clone, Debug, PartialEq)]
pub struct Costs {
    pub arm: ArmName,
    pub proto: Proto,
    /// The measured rate these costs were divided by.
    pub req_per_s: f64,
    pub rx: f64,
    pub steered: f64,
    pub server: f64,
    pub loader: f64,
    pub overhead: f64,
    /// Per CPU of the fitted run, per request: the box's own work (server, receive, other
    /// softirq and irq), not the load generator's nor other processes'.
    pub per_cpu: Vec<f64>,
}

impl Costs {
    /// Everything one request costs the box, with or without the loader.
    pub fn total(&self, loader: LoaderPlace) -> f64 {
        self.rx
            + self.steered
            + self.server
            + self.overhead
            + match loader {
                LoaderPlace::Local => self.loader,
                LoaderPlace::Remote => 0.0,
            }
    }
}

/// What binds at a point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The one core that takes every packet off the single hardware queue.
    RxCore,
    /// Every CPU busy: server, steered receive work (and the loader, when local).
    AllCpus,
    /// The one kthread the receive work moved to (threaded NAPI: one per queue), which
    /// more CPUs do not spread.
    ReceiveThread,
    /// The one RPS CPU a service's flows hash to (rps-dissector), which more CPUs do not
    /// spread either.
    ServiceCpu,
}

impl Limit {
    pub fn name(self) -> &'static str {
        match self {
            Limit::RxCore => "the RX core",
            Limit::AllCpus => "all CPUs",
            Limit::ReceiveThread => "the NAPI kthread's CPU",
            Limit::ServiceCpu => "the service's one RPS CPU",
        }
    }

    /// The curve table's word for it.
    fn short(self) -> &'static str {
        match self {
            Limit::RxCore => "RX",
            Limit::AllCpus => "all",
            Limit::ReceiveThread => "kthread",
            Limit::ServiceCpu => "service",
        }
    }
}

/// The time split's parts a request costs the box that serves it: not idle, not `other`, and
/// not the loader (a remote one costs the box nothing; an open-loop one paces itself at a cost
/// that does not follow the rate).
fn work(t: &TimeSplit) -> f64 {
    t.server + t.net_rx + t.receive_kthread + t.other_softirq + t.irq
}

/// The stage costs of every arm and protocol of `doc`, whose RX core was `rx_cpu`.
pub fn costs(doc: &RunDoc, rx_cpu: u32) -> Result<Vec<Costs>> {
    let (arms, protos) = doc.dims();
    let mut out = Vec::new();
    // The no-BPF arm has no softirq accounting: its receive work cannot be split out.
    for a in arms.iter().filter(|a| **a != NO_BPF_ARM) {
        for &p in &protos {
            let rows: Vec<&Row> = doc
                .of(*a, p)
                .into_iter()
                .filter(|r| r.req_per_s.is_some_and(|v| v > 0.0) && r.time_ms_per_s.is_some())
                .collect();
            if rows.is_empty() {
                continue;
            }
            let n = rows.len() as f64;
            let mut c = Costs {
                arm: *a,
                proto: p,
                req_per_s: rows.iter().filter_map(|r| r.req_per_s).sum::<f64>() / n,
                rx: 0.0,
                steered: 0.0,
                server: 0.0,
                loader: 0.0,
                overhead: 0.0,
                per_cpu: vec![],
            };
            for r in &rows {
                // ms per second / requests per second = ms per request; x1000: us.
                let us = 1000.0 / r.req_per_s.unwrap_or(1.0) / n;
                let times = r.time_ms_per_s.as_ref().expect("filtered");
                if c.per_cpu.len() < times.len() {
                    c.per_cpu.resize(times.len(), 0.0);
                }
                for (cpu, t) in times.iter().enumerate() {
                    let on_rx = cpu as u32 == rx_cpu;
                    let receive = t.net_rx + t.receive_kthread;
                    let softirq_irq = t.other_softirq + t.irq;
                    if on_rx {
                        c.rx += (receive + softirq_irq) * us;
                    } else {
                        c.steered += receive * us;
                        c.overhead += softirq_irq * us;
                    }
                    c.server += t.server * us;
                    c.loader += t.loader * us;
                    c.per_cpu[cpu] += work(t) * us;
                }
            }
            out.push(c);
        }
    }
    if out.is_empty() {
        bail!("the run has no load with both req/s and every CPU's time split (runs before the time split was recorded cannot be fitted)");
    }
    Ok(out)
}

/// The predicted rate on `cpus` CPUs and what limits it.
pub fn predict(c: &Costs, cpus: u32, loader: LoaderPlace) -> (f64, Limit) {
    let rx_bound = 1e6 / c.rx.max(1e-9);
    let all_bound = cpus as f64 * 1e6 / c.total(loader).max(1e-9);
    // Threaded NAPI moves the queue's receive work into one kthread, and a per-service hash
    // sends each service's (each load is one) to one RPS CPU: the work moved sits on one CPU
    // however many there are.
    let one_cpu = if c.arm.mode.receive_in_one_thread() {
        Some(Limit::ReceiveThread)
    } else if c.arm.mode.receive_per_service_on_one_cpu() {
        Some(Limit::ServiceCpu)
    } else {
        None
    };
    let one_cpu = one_cpu
        .filter(|_| c.steered > 0.0)
        .map(|l| (1e6 / c.steered, l));
    [(rx_bound, Limit::RxCore), (all_bound, Limit::AllCpus)]
        .into_iter()
        .chain(one_cpu)
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("two bounds at least")
}

/// One figure of a check: predicted against measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub kind: CheckKind,
    pub what: String,
    pub predicted: f64,
    pub measured: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckKind {
    /// A CPU's busy time at the other run's rate, ms per second.
    Busy,
    /// A CPU's busy time under an arm over the same CPU's under its untuned, same run.
    Ratio,
}

impl Check {
    pub fn error(&self) -> f64 {
        self.predicted / self.measured.max(1e-9) - 1.0
    }
}

/// Each CPU's busy time for the box's own work (ms per second: server, receive, other softirq
/// and irq; the loader left out) in `other`, predicted
/// from `fit`'s per-request costs at `other`'s measured rate, next to what `other` measured.
pub fn check(fit: &[Costs], other: &RunDoc, rx_cpu: u32) -> Result<Vec<Check>> {
    let measured = costs(other, rx_cpu)?;
    let fitted = |m: &Costs| fit.iter().find(|f| f.arm == m.arm && f.proto == m.proto);
    let mut out = Vec::new();
    for m in &measured {
        let Some(f) = fitted(m) else {
            continue;
        };
        for (cpu, (&fc, &mc)) in f.per_cpu.iter().zip(&m.per_cpu).enumerate() {
            out.push(Check {
                kind: CheckKind::Busy,
                what: format!(
                    "{} {} at {:.0} req/s: CPU {cpu} ms/s of server + receive + softirq/irq",
                    m.arm.label(),
                    m.proto.label(),
                    m.req_per_s
                ),
                predicted: fc * m.req_per_s / 1000.0,
                measured: mc * m.req_per_s / 1000.0,
            });
        }
        // Against its untuned in the same run: what steering moved, whatever the rate does
        // to the cost of everything alike.
        let base = base_arm_where(m.arm, |a| measured.iter().any(|b| b.arm == a));
        let Some(mb) = measured
            .iter()
            .find(|b| b.arm == base && b.proto == m.proto)
        else {
            continue;
        };
        let (Some(fb), true) = (fitted(mb), m.arm != base) else {
            continue;
        };
        for cpu in 0..m.per_cpu.len().min(mb.per_cpu.len()) {
            let busy = |c: &Costs, rate: f64| c.per_cpu.get(cpu).copied().unwrap_or(0.0) * rate;
            out.push(Check {
                kind: CheckKind::Ratio,
                what: format!(
                    "{} over untuned, {} at {:.0} req/s: CPU {cpu}",
                    m.arm.label(),
                    m.proto.label(),
                    m.req_per_s
                ),
                predicted: busy(f, m.req_per_s) / busy(fb, mb.req_per_s).max(1e-9),
                measured: busy(m, m.req_per_s) / busy(mb, mb.req_per_s).max(1e-9),
            });
        }
    }
    if out.is_empty() {
        bail!("the runs share no arm and protocol to check");
    }
    Ok(out)
}

/// The seed's published figure on GB10: untuned 194k req/s, RPS 518k (2.5 GbE, remote loads).
pub const SEED_RPS_OVER_UNTUNED: f64 = 518.0 / 194.0;

/// Options of one prediction.
pub struct Ask<'a> {
    pub dir: &'a Path,
    pub cpus: u32,
    pub rx_cpu: Option<u32>,
    pub loader: LoaderPlace,
    pub check: Option<&'a Path>,
    /// The predicted box's RX core against the fitted run's, in speed (1.0: alike; a GB10's
    /// Cortex-X925 against its A725 about 1024/480 by `cpu_capacity`).
    pub rx_speed: f64,
    /// The same for the core an arm that moves the interrupt (irq-affinity) puts it on:
    /// the interrupt core's capacity, which that arm chooses and the others take as found.
    pub irq_core_speed: f64,
}

/// The fitted costs as the predicted box's RX core would take them: an arm's RX-core work
/// runs faster or slower by its core's speed (the interrupt core's where the arm moves the
/// interrupt). The check against another run uses the costs as measured.
pub fn on_predicted_cores(fit: &[Costs], ask: &Ask) -> Vec<Costs> {
    fit.iter()
        .map(|c| {
            let moves = c.arm.mode.steering().tuning.is_some_and(|t| t.irq_move);
            let speed = if moves {
                ask.irq_core_speed
            } else {
                ask.rx_speed
            };
            Costs {
                rx: c.rx / speed.max(1e-9),
                ..c.clone()
            }
        })
        .collect()
}

/// Writes `RUN_DIR/predict-<N>cpus.md` and `.svg`, and prints the table.
pub fn run(ask: &Ask) -> Result<()> {
    let doc = crate::read(ask.dir)?;
    let rx_cpu = match (ask.rx_cpu, doc.roles()) {
        (Some(c), _) => c,
        (None, Some(r)) => r.rx_cpu,
        (None, None) => bail!("the run does not say which CPU was the RX core: give --rx-cpu"),
    };
    let fit = costs(&doc, rx_cpu)?;
    let md = render(&doc, &fit, ask, rx_cpu)?;
    let fit = on_predicted_cores(&fit, ask);
    // One file per question: the CPU count, and the run checked against if any.
    let stem = match ask.check.and_then(|c| c.file_name()) {
        Some(c) => format!("predict-{}cpus-check-{}", ask.cpus, c.to_string_lossy()),
        None => format!("predict-{}cpus", ask.cpus),
    };
    crate::files::write_replacing(ask.dir.join(format!("{stem}.md")), &md)?;
    crate::files::write_replacing(ask.dir.join(format!("{stem}.svg")), chart(&doc, &fit, ask))?;
    print!("{md}");
    eprintln!(
        "rxsteer predict: wrote {}",
        ask.dir.join(format!("{stem}.md")).display()
    );
    Ok(())
}

/// Which observer the fitted run's untuned and RPS arms carried: their costs per request
/// include it.
fn fitted_observer(doc: &RunDoc) -> String {
    let plain = doc
        .runs
        .iter()
        .filter(|r| !r.mode.steers_with_xdp() && r.arm() != NO_BPF_ARM);
    let mut seen: Vec<String> = Vec::new();
    for r in plain {
        let s = match (r.observer, r.xdp_mode) {
            (None, m) => format!(
                "the observe-only XDP program{} (the run predates the observer choice, so its untuned and RPS costs include it; known cost: {})",
                m.map_or(String::new(), |m| format!(" in {} mode", m.long_name())),
                crate::OBSERVER_COST
            ),
            (Some(rxsteer_records::Observer::Xdp), m) => format!(
                "the observe-only XDP program{} in its untuned and RPS arms",
                m.map_or(String::new(), |m| format!(" in {} mode", m.long_name()))
            ),
            (Some(obs), _) => format!("{obs} ({}) in its untuned and RPS arms", obs.meaning()),
        };
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    if seen.is_empty() {
        "cpumap arms only (each counted with its steering program)".into()
    } else {
        seen.join("; ")
    }
}

fn render(doc: &RunDoc, fit: &[Costs], ask: &Ask, rx_cpu: u32) -> Result<String> {
    let mut o = String::new();
    writeln!(
        o,
        "# PREDICTION for {} CPUs (not a measurement)\n\nFitted on `{}` ({} CPUs, `{}`), RX core CPU {rx_cpu}, loader {}.\n",
        ask.cpus,
        ask.dir.display(),
        doc.cpus,
        doc.scenario,
        match ask.loader {
            LoaderPlace::Remote => "remote (its CPU and reply receive not counted)",
            LoaderPlace::Local => "local (sharing the CPUs)",
        }
    )?;
    writeln!(o, "Observer of the fitted run: {}.\n", fitted_observer(doc))?;
    if ask.rx_speed != 1.0 || ask.irq_core_speed != 1.0 {
        writeln!(o, "The predicted box's RX core runs {:.2}x the fitted run's, and the core an arm that moves the interrupt puts it on {:.2}x (its capacity): their RX-core costs are divided so below; the costs table and the check are as measured.\n", ask.rx_speed, ask.irq_core_speed)?;
    }
    o.push_str(&costs_section(fit));
    let measured = fit;
    let scaled = on_predicted_cores(fit, ask);
    let fit = &scaled[..];
    o.push_str(&curve_section(fit, ask));
    o.push_str(&own_size_section(doc, fit));
    // Each arm against its untuned, at N.
    writeln!(
        o,
        "\n## Ratios to untuned at {} CPUs (prediction)\n",
        ask.cpus
    )?;
    for c in fit.iter().filter(|c| !c.arm.mode.is_baseline()) {
        let base = base_arm_where(c.arm, |a| fit.iter().any(|u| u.arm == a));
        if let Some(u) = fit.iter().find(|u| u.arm == base && u.proto == c.proto) {
            let (r, l) = predict(c, ask.cpus, ask.loader);
            let (ru, lu) = predict(u, ask.cpus, ask.loader);
            writeln!(
                o,
                "- {} over {}: {:.2}x untuned (untuned limited by {}, this arm by {}).",
                c.arm.label(),
                c.proto.label(),
                r / ru,
                lu.name(),
                l.name()
            )?;
        }
    }
    seed_section(&mut o, fit, ask)?;
    if let Some(other) = ask.check {
        check_section(&mut o, measured, other, rx_cpu)?;
    }
    writeln!(o, "## Assumptions\n\n- Costs per request stay as measured at every load and CPU count: no cache, memory or lock effects, no change in GRO or interrupt batching with load.\n- Server threads scale linearly; the RX core's work cannot be split (one hardware queue), everything else can go to any CPU.\n- The IPIs, enqueues and backlog work that steering adds are inside the measured costs (they were measured with it on).\n- Nothing else runs on the box (`other` time is left out); the network and the loaders never cap the rate.\n- Measured on a {}-CPU machine, where the RX core also ran the loader: its receive work is what the time split charged to NET_RX and the receive kthreads there.", doc.cpus)?;
    Ok(o)
}

/// What each arm's request cost per stage, as measured.
fn costs_section(fit: &[Costs]) -> String {
    let us = |f: fn(&Costs) -> f64| move |c: &&Costs| format!("{:.1}", f(c));
    let table = Table::new()
        .column("arm", |c: &&Costs| c.arm.label())
        .column("protocol", |c| c.proto.label().to_string())
        .column("measured req/s", |c| format!("{:.0}", c.req_per_s))
        .column("RX core", us(|c| c.rx))
        .column("steered receive", us(|c| c.steered))
        .column("server", us(|c| c.server))
        .column("loader", us(|c| c.loader))
        .column("other softirq + irq", us(|c| c.overhead));
    format!(
        "## Cost per request and stage, measured (us of CPU)\n\n{}",
        table.render(fit)
    )
}

/// Predicted req/s at CPU counts up to the asked one, with the limit.
fn curve_section(fit: &[Costs], ask: &Ask) -> String {
    let points: Vec<u32> = [1, 2, 4, 8, 12, 16, 20, 32, 64, 128, 192]
        .into_iter()
        .filter(|&n| n <= ask.cpus)
        .chain(std::iter::once(ask.cpus))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut table = Table::new()
        .column("arm", |c: &&Costs| c.arm.label())
        .column("protocol", |c| c.proto.label().to_string());
    for n in points {
        table = table.column(n.to_string(), move |c: &&Costs| {
            let (r, l) = predict(c, n, ask.loader);
            format!("{:.1}k ({})", r / 1000.0, l.short())
        });
    }
    format!(
        "\n## Predicted req/s by CPU count (the limit in brackets)\n\n{}",
        table.render(fit)
    )
}

/// The model against the run it was fitted on: same CPU count, the loader local.
fn own_size_section(doc: &RunDoc, fit: &[Costs]) -> String {
    // Idle CPUs left and other time (ms/s), mean over the arm's repetitions.
    let left = |c: &Costs| {
        let rows = doc.of(c.arm, c.proto);
        let splits: Vec<&TimeSplit> = rows
            .iter()
            .filter_map(|r| r.time_ms_per_s.as_ref())
            .flatten()
            .collect();
        let reps = rows.len().max(1) as f64;
        (
            splits.iter().map(|t| t.idle).sum::<f64>() / reps / 1000.0,
            splits.iter().map(|t| t.other).sum::<f64>() / reps,
        )
    };
    let table = Table::new()
        .column("arm", |c: &&Costs| c.arm.label())
        .column("protocol", |c| c.proto.label().to_string())
        .column(format!("model at {} CPUs, loader local", doc.cpus), |c| {
            format!("{:.0}", predict(c, doc.cpus as u32, LoaderPlace::Local).0)
        })
        .column("measured", |c| format!("{:.0}", c.req_per_s))
        .column("idle CPUs left", |c| format!("{:.2}", left(c).0))
        .column("other (steal, other tasks), ms/s", |c| {
            format!("{:.0}", left(c).1)
        });
    format!(
        "\n## The model at the fitted run's own size\n\n{}\nWhere the measured rate is below the model's at the same size, the run was not CPU-bound (idle left) or lost time the model does not count (`other`), for example to the closed loop's connections waiting on each answer, or to the VM's steal. The predicted gains are ratios of costs, which that does not change; the absolute rates are upper bounds.\n",
        table.render(fit)
    )
}

/// The RPS arms against the seed's measured ratio, and which way the prediction misses it.
fn seed_section(o: &mut String, fit: &[Costs], ask: &Ask) -> Result<()> {
    writeln!(o, "\n## Against the seed's measurement\n")?;
    writeln!(
        o,
        "The seed measured RPS at {SEED_RPS_OVER_UNTUNED:.2}x untuned on GB10 (194k -> 518k req/s, 20 cores, 2.5 GbE, remote loaders). When both are limited by the RX core, the ratio is the RX core's cost per request untuned over its cost with RPS: the seed's {SEED_RPS_OVER_UNTUNED:.2}x means RPS left {:.0} % of the RX core's work there.",
        100.0 / SEED_RPS_OVER_UNTUNED
    )?;
    for c in fit
        .iter()
        .filter(|c| c.arm.mode == rxsteer_records::Mode::Rps)
    {
        let base = base_arm_where(c.arm, |a| fit.iter().any(|u| u.arm == a));
        let Some(u) = fit.iter().find(|u| u.arm == base && u.proto == c.proto) else {
            continue;
        };
        let (r, l) = predict(c, ask.cpus, ask.loader);
        let (ru, lu) = predict(u, ask.cpus, ask.loader);
        let left = c.rx / u.rx.max(1e-9);
        writeln!(
            o,
            "- {} {}: predicted {:.2}x at {} CPUs ({} vs {}); here RPS left {:.0} % of the RX core's per-request work on it ({:.1} of {:.1} us), {} than the seed's box did.",
            c.arm.label(),
            c.proto.label(),
            r / ru,
            ask.cpus,
            lu.name(),
            l.name(),
            left * 100.0,
            c.rx,
            u.rx,
            if left < 1.0 / SEED_RPS_OVER_UNTUNED { "less" } else { "more" }
        )?;
    }
    // Which way the prediction misses the seed decides what can explain it.
    let below = fit
        .iter()
        .filter(|c| c.arm.mode == rxsteer_records::Mode::Rps)
        .filter_map(|c| {
            let u = fit.iter().find(|u| {
                u.arm == base_arm_where(c.arm, |a| fit.iter().any(|u| u.arm == a))
                    && u.proto == c.proto
            })?;
            Some(predict(c, ask.cpus, ask.loader).0 / predict(u, ask.cpus, ask.loader).0)
        })
        .any(|r| r < SEED_RPS_OVER_UNTUNED);
    writeln!(
        o,
        "\n{}\n",
        if below {
            "Why the prediction may fall short (reasons, not measured here): under RPS the RX core keeps the driver's receive, GRO, the RPS hash and the IPIs that wake the other CPUs. Here that is veth's software receive and generic XDP on a VM, whose cost next to the stack's is not the Realtek driver's on the GB10; a larger share left on the RX core here means a smaller gain. The model has no term for the hardware's own costs."
        } else {
            "Why the prediction may run ahead (reasons, not measured here): the model lets every CPU but the RX core scale without limit. The real run can be capped first by what it leaves out: the 2.5 GbE link, the loaders, and the caches and memory bandwidth a 20-core box shares, which a 2-CPU VM does not show."
        }
    )?;
    Ok(())
}

/// The fitted costs against a run they were not fitted to.
fn check_section(o: &mut String, fit: &[Costs], other: &Path, rx_cpu: u32) -> Result<()> {
    let odoc = crate::read(other).with_context(|| format!("--check {}", other.display()))?;
    let checks = check(fit, &odoc, rx_cpu)?;
    writeln!(
        o,
        "## Check against `{}` (not fitted on it)\n\nFrom the fitted costs per request, at the rates that run measured: each CPU's busy time for the box's own work, and each arm's busy time over its untuned's on the same CPU (what steering moved). Judged on CPUs busy 50 ms/s or more.\n",
        other.display()
    )?;
    for (kind, head, digits) in [
        (CheckKind::Busy, "busy, ms/s", 0),
        (CheckKind::Ratio, "ratio to untuned", 2),
    ] {
        let table = Table::new()
            .column("figure", |c: &&Check| c.what.clone())
            .column(format!("predicted {head}"), |c| {
                format!("{:.digits$}", c.predicted)
            })
            .column("measured", |c| format!("{:.digits$}", c.measured))
            .column("error", |c| format!("{:+.0} %", c.error() * 100.0));
        let mine: Vec<&Check> = checks.iter().filter(|c| c.kind == kind).collect();
        o.push_str(&table.render(mine.iter().copied()));
        let worst = mine
            .iter()
            .filter(|c| kind == CheckKind::Ratio || c.measured >= 50.0)
            .map(|c| c.error().abs())
            .fold(0.0, f64::max);
        writeln!(
            o,
            "\nLargest error ({head}): {:.0} %, {} the 15 % goal.\n",
            worst * 100.0,
            if worst <= 0.15 {
                "within"
            } else {
                "NOT within"
            }
        )?;
    }
    let busy: Vec<f64> = checks
        .iter()
        .filter(|c| c.kind == CheckKind::Busy && c.measured >= 50.0)
        .map(Check::error)
        .collect();
    let mean = busy.iter().sum::<f64>() / busy.len().max(1) as f64;
    if mean < -0.05 {
        writeln!(
            o,
            "At this load a request cost more CPU than at saturation (busy times {:.0} % low on average), likely because fewer packets share each NAPI run, GRO merge and wake-up (not measured here). Predicted capacity rests on the saturation costs; busy times below saturation come out low, while the ratios between arms, on which the predicted gain rests, are judged above.\n",
            -mean * 100.0
        )?;
    }
    Ok(())
}

/// Predicted req/s against CPU count, a line per arm and protocol, and the measured rate of
/// the fitted run as a point at its CPU count.
fn chart(doc: &RunDoc, fit: &[Costs], ask: &Ask) -> String {
    let series: Vec<crate::svg::Series> = fit
        .iter()
        .map(|c| crate::svg::Series {
            name: format!("{} {}", c.arm.label(), c.proto.label()),
            line: (1..=ask.cpus)
                .map(|n| (n as f64, predict(c, n, ask.loader).0))
                .collect(),
            measured: (doc.cpus as f64, c.req_per_s),
        })
        .collect();
    crate::svg::lines(
        &format!(
            "PREDICTION: req/s by CPU count (lines), measured on {} CPUs (dots)",
            doc.cpus
        ),
        "CPUs",
        "req/s",
        &series,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(server: f64, net_rx: f64, kthread: f64, loader: f64) -> TimeSplit {
        TimeSplit {
            server,
            net_rx,
            receive_kthread: kthread,
            loader,
            idle: 1000.0 - server - net_rx - kthread - loader,
            ..Default::default()
        }
    }

    fn doc() -> RunDoc {
        // Untuned: 10k req/s, the RX core (CPU 0) does 400 ms/s of receive and 300 of loader;
        // the server CPU 600 ms/s of server. cpumap: receive moves to CPU 1's kthread.
        let row = |mode: &str, rps: f64, t: Vec<TimeSplit>| Row {
            arm: Some(mode.parse().unwrap()),
            mode: mode.parse().unwrap(),
            req_per_s: Some(rps),
            time_ms_per_s: Some(t),
            ..Default::default()
        };
        RunDoc {
            cpus: 2,
            runs: vec![
                row(
                    "none",
                    10_000.0,
                    vec![split(0.0, 400.0, 0.0, 300.0), split(600.0, 0.0, 0.0, 0.0)],
                ),
                row(
                    "cpumap",
                    8_000.0,
                    vec![split(0.0, 100.0, 0.0, 240.0), split(480.0, 0.0, 240.0, 0.0)],
                ),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn costs_come_per_request_and_stage() {
        let c = costs(&doc(), 0).unwrap();
        let none = c.iter().find(|c| c.arm.to_string() == "none").unwrap();
        // 400 ms/s / 10k req/s = 40 us per request on the RX core.
        assert!((none.rx - 40.0).abs() < 1e-9, "{none:?}");
        assert!((none.server - 60.0).abs() < 1e-9);
        assert!((none.loader - 30.0).abs() < 1e-9);
        let cpumap = c.iter().find(|c| c.arm.to_string() == "cpumap").unwrap();
        assert!((cpumap.rx - 12.5).abs() < 1e-9);
        assert!((cpumap.steered - 30.0).abs() < 1e-9);
        assert_eq!(cpumap.per_cpu.len(), 2);
    }

    /// Threaded NAPI's receive work stays on its one kthread: it bounds the arm however many
    /// CPUs there are, where RPS's spread work would not.
    #[test]
    fn a_napi_thread_is_bounded_by_its_one_kthread() {
        let mut c = costs(&doc(), 0).unwrap()[1].clone();
        c.arm = "napi-thread".parse().unwrap();
        // 30 us of receive work per request moved off the RX core: 33.3k at most.
        let (r, l) = predict(&c, 20, LoaderPlace::Remote);
        assert_eq!(l, Limit::ReceiveThread);
        assert!((r - 1e6 / 30.0).abs() < 1e-6, "{r}");
        c.arm = "rps".parse().unwrap();
        assert_ne!(predict(&c, 20, LoaderPlace::Remote).1, Limit::ReceiveThread);
        // A service's flows hashed alike land on one RPS CPU: the same bound, named so.
        c.arm = "rps-dissector".parse().unwrap();
        let (r, l) = predict(&c, 20, LoaderPlace::Remote);
        assert_eq!(l, Limit::ServiceCpu);
        assert!((r - 1e6 / 30.0).abs() < 1e-6, "{r}");
    }

    #[test]
    fn the_rx_core_binds_untuned_and_all_cpus_bind_once_receive_is_spread() {
        let c = costs(&doc(), 0).unwrap();
        let none = &c[0];
        // 1 CPU: everything on one: 1e6 / (40 + 60) = 10k.
        assert_eq!(
            predict(none, 1, LoaderPlace::Remote),
            (10_000.0, Limit::AllCpus)
        );
        // 20 CPUs: the RX core takes 40 us a request: 25k, whatever the other 19 could do.
        assert_eq!(
            predict(none, 20, LoaderPlace::Remote),
            (25_000.0, Limit::RxCore)
        );
        let cpumap = &c[1];
        let (r, l) = predict(cpumap, 20, LoaderPlace::Remote);
        assert_eq!(l, Limit::RxCore);
        assert!((r - 80_000.0).abs() < 1e-6, "{r}");
        let (r2, _) = predict(cpumap, 2, LoaderPlace::Local);
        assert!(
            r2 < predict(cpumap, 2, LoaderPlace::Remote).0,
            "a local loader costs"
        );
    }

    /// The interrupt core's capacity: an arm that moves the interrupt takes the speed of the
    /// core it moves it to, the others the RX core's; a faster RX core raises the RX bound.
    #[test]
    fn the_interrupt_cores_speed_scales_the_rx_bound_of_the_arm_that_moves_it() {
        let mut fit = costs(&doc(), 0).unwrap();
        fit[1].arm = "irq-affinity".parse().unwrap();
        let ask = Ask {
            dir: Path::new("/x"),
            cpus: 20,
            rx_cpu: None,
            loader: LoaderPlace::Remote,
            check: None,
            rx_speed: 0.5,
            irq_core_speed: 2.0,
        };
        let on = on_predicted_cores(&fit, &ask);
        assert!(
            (on[0].rx - fit[0].rx * 2.0).abs() < 1e-9,
            "untuned's RX core at half speed"
        );
        assert!(
            (on[1].rx - fit[1].rx / 2.0).abs() < 1e-9,
            "the moved interrupt's core at twice"
        );
        // Untuned at 20 CPUs was 25k, bound by its RX core: at half speed, 12.5k.
        assert_eq!(
            predict(&on[0], 20, LoaderPlace::Remote),
            (12_500.0, Limit::RxCore)
        );
    }

    #[test]
    fn the_check_predicts_busy_time_at_another_rate() {
        let fit = costs(&doc(), 0).unwrap();
        let mut at_half = doc();
        for r in &mut at_half.runs {
            r.req_per_s = r.req_per_s.map(|v| v / 2.0);
            for t in r.time_ms_per_s.as_mut().unwrap() {
                *t = t.scaled(0.5);
            }
        }
        let checks = check(&fit, &at_half, 0).unwrap();
        let count = |k| checks.iter().filter(|c| c.kind == k).count();
        assert_eq!((count(CheckKind::Busy), count(CheckKind::Ratio)), (4, 2));
        for c in &checks {
            assert!(c.error().abs() < 0.01, "{c:?}");
        }
        assert!(
            checks[0].what.contains("at 5000 req/s: CPU 0"),
            "{:?}",
            checks[0]
        );
    }

    #[test]
    fn a_run_without_time_splits_is_refused_with_the_reason() {
        let mut d = doc();
        for r in &mut d.runs {
            r.time_ms_per_s = None;
        }
        assert!(costs(&d, 0).unwrap_err().to_string().contains("time split"));
    }
}
