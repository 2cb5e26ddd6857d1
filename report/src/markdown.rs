//! The report page (markdown) and the short summary a run prints at its end.
use anyhow::{bail, Result};
use rxsteer_records::{
    breakdown::{TimeSplit, PARTS, SATURATED},
    run::{
        base_arm_in as base, find, mean_per_cpu, median, range, ratio_in, ArmName, CoreKind,
        NO_BPF_ARM,
    },
    Observer, Proto, Row, RunDoc, XdpMode,
};
use std::fmt::Write;

use crate::table::Table;

fn is_untuned(arm: &ArmName) -> bool {
    arm.mode.is_baseline()
}

fn label(arm: &ArmName) -> String {
    arm.label()
}

/// Per-CPU tables name every CPU up to this many.
const ALL_CPUS_UP_TO: usize = 16;
/// Past that, they name this many (those with the most receive work in any row) and give the
/// rest one column.
const NAMED_CPUS: usize = 8;

/// The CPUs a per-CPU table or chart names, and the ones it folds into one "other" column.
struct Columns {
    named: Vec<usize>,
    rest: Vec<usize>,
}

impl Columns {
    fn of(run: &RunDoc, cpus: usize) -> Self {
        if cpus <= ALL_CPUS_UP_TO {
            return Self {
                named: (0..cpus).collect(),
                rest: vec![],
            };
        }
        let peak: Vec<f64> = (0..cpus)
            .map(|c| {
                run.runs
                    .iter()
                    .filter_map(|r| r.receive_ms_per_s.get(c))
                    .fold(0.0, |a: f64, &b| a.max(b))
            })
            .collect();
        let mut order: Vec<usize> = (0..cpus).collect();
        order.sort_by(|&a, &b| peak[b].total_cmp(&peak[a]).then(a.cmp(&b)));
        let mut named = order[..NAMED_CPUS].to_vec();
        named.sort_unstable();
        let rest = (0..cpus).filter(|c| !named.contains(c)).collect();
        Self { named, rest }
    }

    /// "CPU 3", ..., and "other 184 CPUs (sum)".
    fn names(&self, what: &str) -> Vec<String> {
        let mut n: Vec<String> = self
            .named
            .iter()
            .map(|c| format!("CPU {c}{what}"))
            .collect();
        if !self.rest.is_empty() {
            n.push(format!("other {} CPUs (sum){what}", self.rest.len()));
        }
        n
    }

    /// The named CPUs' values, then the sum of the rest.
    fn values(&self, per_cpu: &[f64]) -> Vec<f64> {
        let at = |c: &usize| per_cpu.get(*c).copied().unwrap_or(0.0);
        let mut v: Vec<f64> = self.named.iter().map(at).collect();
        if !self.rest.is_empty() {
            v.push(self.rest.iter().map(at).sum());
        }
        v
    }
}

fn has_runs(run: &RunDoc) -> Result<()> {
    if run.runs.is_empty() {
        bail!("run.json has no runs");
    }
    Ok(())
}

/// An arm whose req/s spread (max/min over repetitions) is above this is marked noisy.
const NOISY: f64 = 1.5;

/// The few lines printed at the end of a run.
pub fn summary(run: &RunDoc) -> Result<String> {
    has_runs(run)?;
    let rows = &run.runs;
    let (arms, protos) = run.dims();
    let mut o = String::new();
    for rep in 0..run.reps() {
        for &p in &protos {
            write!(o, "rep {rep} {}:", p.label())?;
            for a in &arms {
                if let Some(r) = find(rows, rep, *a, p) {
                    if r.failed.is_some() {
                        write!(o, " {} failed;", label(a))?;
                        continue;
                    }
                    let Some(rps) = r.req_per_s else {
                        write!(o, " {} observed (external load, no req/s);", label(a))?;
                        continue;
                    };
                    write!(o, " {} {rps:.0} req/s", label(a))?;
                    if !is_untuned(a) {
                        if let Some(x) = ratio_in(rows, rep, *a, p) {
                            write!(o, " ({x:.2}x)")?;
                        }
                    }
                    write!(o, ";")?;
                }
            }
            writeln!(o)?;
        }
    }
    if arms.iter().any(is_untuned) && arms.len() > 1 {
        writeln!(
            o,
            "(ratios to untuned, same repetition and protocol; untuned carries no XDP program unless the run says so)"
        )?;
        for line in crate::recommend::lines(run) {
            writeln!(o, "{line}")?;
        }
    }
    Ok(o)
}

/// Per protocol: what to deploy, why, and the command (see `recommend`).
fn recommendation_section(o: &mut String, run: &RunDoc, protos: &[Proto]) -> Result<()> {
    if !crate::recommend::applies(run) {
        return Ok(());
    }
    writeln!(o, "## Recommendation\n")?;
    for &p in protos {
        let r = crate::recommend::recommend(run, p);
        writeln!(
            o,
            "- **{}: {}.** {}.",
            p.label(),
            r.verdict,
            r.reasons.join("; ")
        )?;
        if let Some(c) = &r.command {
            writeln!(o, "  Apply it: `{c}`")?;
        }
        if !r.judged.is_empty() {
            writeln!(
                o,
                "\n  ![each arm against untuned with its interval]({})",
                crate::forest::file(p)
            )?;
        }
    }
    writeln!(o)?;
    Ok(())
}

/// The report's markdown for a run.
pub fn render(run: &RunDoc) -> Result<String> {
    has_runs(run)?;
    let (arms, protos) = run.dims();
    let mut o = String::new();
    writeln!(
        o,
        "# Receive steering: {}\n",
        arms.iter().map(label).collect::<Vec<_>>().join(" vs ")
    )?;
    failed_section(&mut o, run)?;
    let searched = crate::capacity::searched(run);
    if searched {
        // The first screen answers: capacity per arm and the recommendation, then the notes.
        crate::capacity::answer_section(&mut o, run, &arms, &protos)?;
        notes_section(&mut o, run)?;
        setup_section(&mut o, run, &protos)?;
    } else {
        setup_section(&mut o, run, &protos)?;
        notes_section(&mut o, run)?;
        recommendation_section(&mut o, run, &protos)?;
        // Said whether or not the run recommends (one arm alone does not).
        for &p in &protos {
            if let Some(said) = crate::nic::drops_said(run, p) {
                writeln!(o, "{said}\n")?;
            }
        }
    }
    xdp_section(&mut o, &run.runs)?;
    crate::nic::levers_section(&mut o, run)?;
    crate::tail::section(&mut o, run)?;
    observer_section(&mut o, run, &arms, &protos)?;
    if searched {
        writeln!(
            o,
            "## Capacity per repetition (req/s at each search's knee)\n"
        )?;
    } else {
        writeln!(o, "## Throughput per repetition\n")?;
    }
    writeln!(o, "![req/s](throughput.svg) ![p99](p99.svg)\n")?;
    for &p in &protos {
        throughput_section(&mut o, run, &arms, p)?;
    }
    // The no-BPF arm counted nothing per CPU: it has req/s and /proc time only.
    let counted: Vec<ArmName> = arms.iter().filter(|a| **a != NO_BPF_ARM).copied().collect();
    receive_section(&mut o, run, &counted, &protos)?;
    witness_section(&mut o, run, &counted, &protos, run.cpus)?;
    crate::interrupts::section(&mut o, run, &arms, &protos, run.cpus)?;
    per_request_section(&mut o, run, &arms, &protos)?;
    crate::cost::section(&mut o, run, &arms, &protos)?;
    time_section(&mut o, run, &arms)?;
    verdict_section(&mut o, run, &arms, &protos)?;
    if searched {
        writeln!(o)?;
        crate::capacity::steps_section(&mut o, run, &arms, &protos)?;
    }
    writeln!(o, "\nEvery figure comes from `run.json` and the rxload and sample files beside it; `rxsteer report DIR` re-renders this page and its charts.")?;
    Ok(o)
}

/// The loads whose loader failed (no request succeeded), first: no figure below stands for
/// them, and the run went on without them.
fn failed_section(o: &mut String, run: &RunDoc) -> Result<()> {
    let failed: Vec<&Row> = run.runs.iter().filter(|r| r.failed.is_some()).collect();
    if failed.is_empty() {
        return Ok(());
    }
    writeln!(
        o,
        "## Loads that failed
"
    )?;
    writeln!(
        o,
        "No request of these succeeded: they have no req/s or latency, no ratio is taken from them, and the other loads ran on.
"
    )?;
    for r in failed {
        writeln!(
            o,
            "- {} over {}, repetition {}: {}",
            label(&r.arm()),
            r.proto.label(),
            r.rep + 1,
            r.failed.as_deref().unwrap_or_default()
        )?;
    }
    writeln!(o)?;
    Ok(())
}

/// Where and how the run was made: scenario, protocols, durations, the machine.
/// Where the run ran: the interface and its CPUs, or the lab's roles (and whether its frames
/// came unhashed, as from a NIC without RXHASH).
fn where_it_ran(run: &RunDoc, setup: &rxsteer_records::run::Setup) -> String {
    if run.is_iface() {
        format!(
            "interface `{}`, server CPUs {:?}, steering targets {:?}, load: {}",
            setup.iface,
            setup.server_cpus.clone().unwrap_or_default(),
            setup.steer_targets,
            setup.loader.as_deref().unwrap_or("?")
        )
    } else {
        let r = run.roles().cloned().unwrap_or_default();
        let unhashed = matches!(
            setup.lab.as_ref().and_then(|l| l.frames.as_ref()),
            Some(rxsteer_records::run::LabFrames::Unhashed)
        );
        format!(
            "the embedded veth lab: receive (NAPI) CPU {}, server CPUs {:?}, loader CPUs {:?}{}",
            r.rx_cpu,
            r.server_cpus,
            r.loader_cpus,
            if unhashed {
                ", frames unhashed as from a NIC without RXHASH (the loader's veth drops its sockets' flow hash)"
            } else {
                ""
            }
        )
    }
}

fn setup_section(o: &mut String, run: &RunDoc, protos: &[Proto]) -> Result<()> {
    let setup = run.setup.clone().unwrap_or_default();
    let where_ = where_it_ran(run, &setup);
    let load = match (&run.interleaved, &run.search) {
        (Some(i), _) => format!(
            "**interleaved**: one server for the whole run and, per protocol and repetition, one \
             continuous load under which every arm was switched in place in turn (order \
             rotated), {} s dropped after each switch once the arm was in place, then {} s \
             measured, cut at the load's {} s live lines (a window's p99 is the highest of its \
             lines', its p99.9 is not known); {}",
            i.settle_s,
            i.window_s,
            i.live_interval_s,
            switch_times(run)
        ),
        (None, Some(s)) => format!(
            "a capacity search per load (open-loop steps of {} s after {} s of warm-up, rates {} to {} req/s)",
            s.step_s,
            s.step_warmup_s,
            rxsteer_records::breakdown::rate_text(s.rates[0]),
            rxsteer_records::breakdown::rate_text(s.rates[1])
        ),
        (None, None) => format!(
            "{} s measured per load{}",
            run.seconds,
            // Runs stored before the warm-up was recorded leave it out rather than print null.
            run.warmup_s
                .map_or(String::new(), |w| format!(" after {w} s of warm-up"))
        ),
    };
    writeln!(
        o,
        "`{}` scenario over {}, {load}, {} connections, {} repetitions (mode order rotated); {where_}.\n",
        run.scenario,
        protos.iter().map(|p| p.label()).collect::<Vec<_>>().join(" and "),
        run.connections,
        run.reps()
    )?;
    if let Some(env) = &run.environment {
        let load1 = |e: &rxsteer_records::run::Environment| {
            e.loadavg.first().map_or("?".to_string(), |l| l.to_string())
        };
        writeln!(
            o,
            "Machine: {} CPUs, {} kernel {}; 1-minute load average {} before and {} after.\n",
            env.before.online_cpus,
            env.before.arch,
            env.before.kernel,
            load1(&env.before),
            load1(&env.after)
        )?;
        let kinds = rxsteer_records::run::core_kinds(&env.before.cpu_kinds);
        if !kinds.is_empty() {
            let of = |k: CoreKind| -> Vec<String> {
                kinds
                    .iter()
                    .filter(|(_, v)| **v == k)
                    .map(|(c, _)| c.to_string())
                    .collect()
            };
            writeln!(
                o,
                "Two kinds of core (sysfs capacity or core type): performance (P) CPUs {}; efficiency (E) CPUs {}.\n",
                of(CoreKind::Performance).join(", "),
                of(CoreKind::Efficiency).join(", ")
            )?;
        }
    }
    Ok(())
}

/// How long switching into each arm took under the running load (median and range over its
/// windows), as an interleaved run measured it.
fn switch_times(run: &RunDoc) -> String {
    let mut per_arm: Vec<(rxsteer_records::run::ArmName, Vec<f64>)> = Vec::new();
    for r in &run.runs {
        let Some(ms) = r.switch_ms else { continue };
        match per_arm.iter_mut().find(|(a, _)| *a == r.arm()) {
            Some((_, v)) => v.push(ms),
            None => per_arm.push((r.arm(), vec![ms])),
        }
    }
    if per_arm.is_empty() {
        return "no switch was measured".to_string();
    }
    let each: Vec<String> = per_arm
        .iter()
        .map(|(a, v)| {
            let (lo, hi) = rxsteer_records::run::range(v);
            format!(
                "{} {:.0} ms ({lo:.0}-{hi:.0})",
                a.label(),
                rxsteer_records::run::median(v)
            )
        })
        .collect();
    format!(
        "a switch (the previous arm taken down, this one put in place and checked) took, median \
         and range: {}",
        each.join(", ")
    )
}

/// The notes a reader must see before any figure: a small machine, an older lab, an open
/// loop, io_uring on either side, a loaded machine; then the interface and the build.
fn notes_section(o: &mut String, run: &RunDoc) -> Result<()> {
    let cpus = run.cpus;
    let setup = run.setup.clone().unwrap_or_default();
    // Derived from the CPU count, not the stored text: the same caveat for every run.
    if let Some(c) = run
        .caveat
        .as_ref()
        .and(rxsteer_records::small_machine_caveat(cpus.max(1)))
    {
        writeln!(o, "> **Note:** {c}.\n")?;
    }
    if !run.is_iface() && setup.lab.is_none() {
        writeln!(
            o,
            "> **An older lab.** This run predates the lab receiving the replies on the loader's side (TSO off on the server veth, threaded NAPI on the loader veth): the loader's receive of every reply ran as NET_RX on the server CPU and is counted here as that CPU's receive work.\n"
        )?;
    }
    if let Some(rxsteer_records::run::LabFrames::SenderHash { why }) =
        setup.lab.as_ref().and_then(|l| l.frames.as_ref())
    {
        writeln!(
            o,
            "> **The lab's frames kept the sender's flow hash** ({why}): RPS took it for free, where behind a NIC without RXHASH the receiving CPU dissects every frame, and a flow dissector (rps-dissector) was never asked.\n"
        )?;
    }
    if run
        .dims()
        .0
        .iter()
        .any(|a| a.mode.receive_per_service_on_one_cpu())
    {
        writeln!(
            o,
            "> **rps-dissector's reach:** {}.\n",
            rxsteer_records::steering::DISSECTOR_REACH
        )?;
    }
    if let Some(r) = run.rate {
        writeln!(
            o,
            "> **Open loop at {r:.0} requests per second per load** (`--rate`): every arm was offered the same load, so req/s ratios say only whether an arm kept up; the figures to read are how busy each CPU was at that load.\n"
        )?;
    }
    if run.loader_io == Some(rxsteer_records::LoaderIo::Uring) {
        writeln!(
            o,
            "> rxload ran on io_uring (`--loader-io uring`): less load-generator CPU per request, and a response may be timed up to 100 us late, so p99 reads high by up to that much.\n"
        )?;
    }
    if run.server_io == Some(rxsteer_records::ServerIo::Uring) {
        writeln!(
            o,
            "> The server ran on io_uring (`--server-io uring`): fewer system calls and wake-ups per request than the epoll engine, so its CPU time per request is lower and more of each CPU is left to receive work.\n"
        )?;
    }
    if let Some(m) = &run.loaded_machine {
        writeln!(
            o,
            "> **Every figure here was {m}** (run with --force): other work was timed too.\n"
        )?;
    }
    if let (Some(s), Some(env)) = (&run.setup, &run.environment) {
        writeln!(
            o,
            "Interface driver {}, GRO {}, cpumap ring {} frames per CPU; rxsteer {} ({}).\n",
            s.nic.driver.as_deref().unwrap_or("?"),
            s.nic.gro.as_deref().unwrap_or("?"),
            s.qsize,
            env.before.rxsteer.version,
            env.before.rxsteer.git
        )?;
    }
    if run.setup.as_ref().is_some_and(|s| s.backlog_threads) {
        writeln!(
            o,
            "> **This kernel runs the backlog in threads** (booted with `thread_backlog_napi`, or PREEMPT_RT), in every arm: the packets RPS steered were processed in `backlog_napi/N` kthreads, counted here as receive kthread time rather than NET_RX softirq. Compare with a run of the same box booted without it to see what the threads change.\n"
        )?;
    }
    Ok(())
}

/// One protocol's req/s per repetition: untuned as req/s, every other arm as its ratio to
/// untuned, then the p99 of every arm and the errors; then the noisy arms and the ranges.
fn throughput_section(o: &mut String, run: &RunDoc, arms: &[ArmName], p: Proto) -> Result<()> {
    let rows = &run.runs;
    let has_base = |a: &ArmName| arms.contains(&base(rows, *a));
    writeln!(o, "### {}\n", p.label())?;
    let rps =
        |rep: u32, a: &ArmName| find(rows, rep, *a, p).and_then(|r| r.req_per_s.map(|v| (r, v)));
    let mut table = Table::new().column("repetition", |rep: &u32| rep.to_string());
    for a in arms {
        let header = if is_untuned(a) || !has_base(a) {
            format!("{} req/s", label(a))
        } else {
            format!("{} / untuned", label(a))
        };
        // An external load: observed, not measured here ("-").
        table = table.column(header, move |&rep| match rps(rep, a) {
            None => "-".into(),
            Some((_, v)) => match (is_untuned(a), ratio_in(rows, rep, *a, p)) {
                (true, _) | (_, None) => format!("{v:.0}"),
                (_, Some(x)) => format!("{x:.2}"),
            },
        });
    }
    let all = arms.iter().map(label).collect::<Vec<_>>().join(" / ");
    let table = table
        .column(format!("p99 us ({all})"), |&rep| {
            arms.iter()
                .map(|a| match rps(rep, a) {
                    Some((r, _)) => r.p99_us.map_or("-".into(), |v| v.to_string()),
                    None => "-".into(),
                })
                .collect::<Vec<String>>()
                .join(" / ")
        })
        .column("errors", |&rep| {
            arms.iter()
                .filter_map(|a| rps(rep, a))
                .map(|(r, _)| r.error_total)
                .sum::<u64>()
                .to_string()
        });
    o.push_str(&table.render(0..run.reps()));
    for a in arms {
        let v: Vec<f64> = run.of(*a, p).iter().filter_map(|r| r.req_per_s).collect();
        let (lo, hi) = range(&v);
        if v.len() > 1 && hi > NOISY * lo {
            writeln!(
                o,
                "\n**Noisy:** {} req/s spread {:.2}x (max/min) over {} repetitions, above {NOISY}x: read its ratios with that in mind.",
                label(a),
                hi / lo.max(1e-9),
                v.len()
            )?;
        }
    }
    for a in arms.iter().filter(|a| !is_untuned(a)) {
        let v = run.ratios(*a, p);
        if !v.is_empty() {
            let (lo, hi) = range(&v);
            writeln!(
                o,
                "\n{} / untuned ranged {lo:.2}-{hi:.2} over {} repetitions.",
                label(a),
                v.len()
            )?;
        }
    }
    writeln!(o)?;
    Ok(())
}

/// Receive work per CPU, per arm and protocol, with where it was kthread time, the
/// imbalance, the drops and the XDP mode; then each arm's heatmap.
fn receive_section(o: &mut String, run: &RunDoc, arms: &[ArmName], protos: &[Proto]) -> Result<()> {
    let cpus = run.cpus;
    writeln!(o, "## Where the receive work went\n")?;
    writeln!(o, "ms per second of each CPU in the measured windows (NET_RX softirq + receive kthreads: cpumap and threaded NAPI), mean over repetitions; imbalance is the busiest CPU over the mean (1.0 = even).\n")?;
    let columns = Columns::of(run, cpus);
    if !columns.rest.is_empty() {
        writeln!(o, "With {cpus} CPUs the table names the {NAMED_CPUS} with the most receive work in any load and sums the other {}.\n", columns.rest.len())?;
    }
    // Per load: its rows and its receive work per CPU column, computed once.
    type Load<'r> = (ArmName, Proto, Vec<&'r Row>, Vec<f64>);
    let total = |l: &Load, f: fn(&Row) -> u64| l.2.iter().map(|r| f(r)).sum::<u64>();
    let mut table = Table::new()
        .column("arm", |l: &Load| label(&l.0))
        .column("protocol", |l| l.1.label().to_string());
    for (i, name) in columns.names("").into_iter().enumerate() {
        table = table.column(name, move |l: &Load| format!("{:.0}", l.3[i]));
    }
    let table = table
        .column("of it kthread", |l| {
            let k: f64 = mean_per_cpu(&l.2, |r| Some(&r.kthread_ms_per_s), cpus)
                .iter()
                .sum();
            format!("{k:.0}")
        })
        .column("imbalance", |l| {
            format!(
                "{:.2}",
                l.2.iter().map(|r| r.imbalance).sum::<f64>() / l.2.len().max(1) as f64
            )
        })
        .column("redirect errors", |l| {
            total(l, |r| r.redirect_err).to_string()
        })
        .column("ring drops", |l| {
            (total(l, |r| r.enqueue_drops) + total(l, |r| r.cpumap_drops)).to_string()
        })
        .column("softnet drops", |l| {
            total(l, |r| r.softnet_dropped).to_string()
        })
        .column("NIC drops", |l| {
            // Absent where no row read the interface: not a zero.
            let read: Vec<u64> =
                l.2.iter()
                    .filter_map(|r| r.nic_drops.as_ref().map(|d| d.lost()))
                    .collect();
            match read.is_empty() {
                true => "-".to_string(),
                false => read.iter().sum::<u64>().to_string(),
            }
        })
        .column("XDP mode", |l| {
            l.2.first()
                .and_then(|r| r.xdp_mode)
                .map_or("-", XdpMode::as_str)
                .to_string()
        });
    let loads = arms
        .iter()
        .flat_map(|a| protos.iter().map(move |&p| (*a, p, run.of(*a, p))))
        .map(|(a, p, rows)| {
            let receive = columns.values(&mean_per_cpu(&rows, |r| Some(&r.receive_ms_per_s), cpus));
            (a, p, rows, receive)
        });
    o.push_str(&table.render(loads));
    writeln!(o)?;
    for a in arms {
        writeln!(
            o,
            "![{} receive work per CPU over time](heatmap-{a}.svg)",
            label(a)
        )?;
    }
    Ok(())
}

/// How one arm was observed, what the kernel showed attached, and where its receive work is
/// counted when the server polled it.
fn how_observed(a: ArmName, r: &Row) -> String {
    let how = match (r.observer, r.xdp_mode) {
        (Some(Observer::Xdp), Some(m)) if !a.mode.steers_with_xdp() => {
            format!("the observe-only XDP program in {} mode", m.long_name())
        }
        (Some(Observer::Xdp), Some(m)) => {
            format!("its own steering program ({} mode)", m.long_name())
        }
        (Some(obs), _) => obs.meaning().to_string(),
        (None, _) => "not recorded".to_string(),
    };
    let seen = r.attached.as_ref().map_or(String::new(), |w| {
        format!(
            "; the kernel showed {} on the interface",
            w.xdp.as_deref().unwrap_or("no XDP program")
        )
    });
    // Busy polling runs the driver's poll in the server's own thread, outside softirq
    // and the receive kthreads: that receive work is in the server's time.
    let polled = match a.mode.steering().server {
        rxsteer_records::ServerHelp::BusyPoll { usecs } => format!(
            "; the server busy-polled ({usecs} us per wait), so the receive work it polled \
             is counted in the server's time, not as NET_RX or a receive kthread"
        ),
        rxsteer_records::ServerHelp::Nothing => String::new(),
    };
    format!("{how}{seen}{polled}")
}

/// How each arm was observed, and what observing cost in this same run: every untuned arm
/// with an observer against the untuned arm with no BPF at all, repetition by repetition.
/// Runs before observers were named carried the XDP program in their untuned and RPS arms:
/// said, with what that is known to cost.
fn observer_section(
    o: &mut String,
    run: &RunDoc,
    arms: &[ArmName],
    protos: &[Proto],
) -> Result<()> {
    let rows = &run.runs;
    if rows.iter().all(|r| r.observer.is_none()) {
        writeln!(
            o,
            "> **The untuned and RPS arms here carried rxsteer's observe-only XDP program** (in each arm's XDP mode): this run predates the observer choice. The user's own untuned and RPS set-ups carry no XDP program, and in skb mode the kernel skips GRO and copies every packet short of headroom for one, so these arms' req/s are low by the observer's cost and ratios to untuned read high. Known cost: {}. Newer runs observe those arms with receive tracepoints and measure the cost in the same run.\n",
            crate::OBSERVER_COST
        )?;
        return Ok(());
    }
    writeln!(o, "## The observer and what it cost\n")?;
    for a in arms {
        let Some(r) = rows.iter().find(|r| r.arm() == *a) else {
            continue;
        };
        writeln!(o, "- {}: {}.", label(a), how_observed(*a, r))?;
    }
    // Runs before levels watched everything, and say nothing here.
    if let Some(level) = run.observe {
        let lacks = level.lacks();
        if !lacks.is_empty() {
            writeln!(
                o,
                "- Watched at `--observe {level}`: this run lacks {}.",
                lacks.join("; and ")
            )?;
        }
    }
    for n in &run.not_run {
        writeln!(o, "- **{}: not run here:** {}.", label(&n.arm), n.why)?;
    }
    writeln!(o)?;
    crate::observer::program_cost_table(o, run, arms, protos)?;
    // What observing cost, judged like any arm (crate::decide::observer_costs).
    for &p in protos {
        for j in crate::decide::observer_costs(run, p) {
            let a = j.arm;
            match &j.estimate {
                Some(e) => writeln!(
                    o,
                    "- **Observer cost, {}:** {} served {} the req/s of untuned with no BPF ({} interval, {:+.1} %): {}.{}",
                    p.label(),
                    label(&a),
                    e.said(),
                    crate::decide::confidence_said(run),
                    (e.ratio - 1.0) * 100.0,
                    j.verdict.said(),
                    crate::observer::agreement(run, a, p, (e.lo, e.hi))
                )?,
                None => {
                    // One repetition: its one ratio (there is one, or it would not be judged).
                    let ratio = run.ratios_to(a, NO_BPF_ARM, p).first().copied().unwrap_or(1.0);
                    writeln!(
                        o,
                        "- **Observer cost, {}:** {} served {ratio:.2}x the req/s of untuned with no BPF in its one repetition: no interval.{}",
                        p.label(),
                        label(&a),
                        crate::observer::agreement(run, a, p, (ratio, ratio))
                    )?
                }
            }
        }
    }
    writeln!(
        o,
        "\nEvery arm's ratio is taken against the untuned arm that carries no XDP program.\n"
    )?;
    Ok(())
}

/// Which XDP modes ran, what each means for cpumap, and whether the frags programs ran.
fn xdp_section(o: &mut String, rows: &[Row]) -> Result<()> {
    let mut ran: Vec<(XdpMode, bool)> = Vec::new();
    for r in rows {
        if let Some(m) = r.xdp_mode {
            let frags = r.xdp_frags.unwrap_or(false);
            if !ran.contains(&(m, frags)) {
                ran.push((m, frags));
            }
        }
    }
    if ran.is_empty() || rows.iter().all(|r| r.xdp_frags.is_none()) {
        return Ok(());
    }
    writeln!(o, "## XDP attach mode\n")?;
    for (mode, frags) in ran {
        writeln!(
            o,
            "- **{}**, {} programs: {}.",
            mode.long_name(),
            if frags {
                "multi-buffer aware (frags)"
            } else {
                "plain (non-frags)"
            },
            mode.meaning()
        )?;
    }
    writeln!(o)?;
    Ok(())
}

/// XDP packets (where the driver received) beside tc ingress (where the stack ran) and tc
/// egress (where packets left), per CPU.
fn witness_section(
    o: &mut String,
    run: &RunDoc,
    arms: &[ArmName],
    protos: &[Proto],
    cpus: usize,
) -> Result<()> {
    if run.runs.iter().all(|r| r.stack_packets_per_s.is_none()) {
        return Ok(());
    }
    writeln!(
        o,
        "\n## Where the driver received, where the stack ran, where replies left\n"
    )?;
    writeln!(o, "Packets per second per CPU, mean over repetitions: XDP (where the driver handed the frame over; in skb mode on each frame's skb, GRO being skipped while a generic XDP program is attached, and after RPS picked a CPU) / tc ingress (where the kernel's stack processed it, after RPS or cpumap moved it) / tc egress (where packets were transmitted). In driver mode XDP counts frames before GRO and tc counts GRO'd packets, so the two differ by the GRO factor.\n")?;
    let columns = Columns::of(run, cpus);
    // Per load: XDP, tc ingress and tc egress packets per CPU column.
    // tc egress is absent where the run's --observe level did not count it: "-", never 0.
    type Load = (ArmName, Proto, [Vec<f64>; 2], Option<Vec<f64>>);
    let mut table = Table::new()
        .column("arm", |l: &Load| label(&l.0))
        .column("protocol", |l| l.1.label().to_string());
    for (i, name) in columns.names(": XDP / stack / tx").into_iter().enumerate() {
        table = table.column(name, move |l: &Load| {
            let [xdp, stack] = &l.2;
            let tx = l.3.as_ref().map_or("-".to_string(), |tx| kilo(tx[i]));
            format!("{} / {} / {tx}", kilo(xdp[i]), kilo(stack[i]))
        });
    }
    let loads = arms.iter().flat_map(|a| {
        protos.iter().filter_map(|&p| {
            let mine = run.of(*a, p);
            if mine.iter().all(|r| r.stack_packets_per_s.is_none()) {
                return None;
            }
            let per_cpu =
                |f: fn(&Row) -> Option<&[f64]>| columns.values(&mean_per_cpu(&mine, f, cpus));
            let figures = [
                per_cpu(|r| Some(&r.packets_per_s)),
                per_cpu(|r| r.stack_packets_per_s.as_deref()),
            ];
            let tx = mine
                .iter()
                .any(|r| r.tx_packets_per_s.is_some())
                .then(|| per_cpu(|r| r.tx_packets_per_s.as_deref()));
            Some((*a, p, figures, tx))
        })
    });
    o.push_str(&table.render(loads));
    Ok(())
}

/// Per request: the frames the interface received, the packets where the driver handed them
/// over (what the observer counted), and the skbs the stack processed (tc ingress). On a real
/// NIC frames arrive at MTU and GRO builds the skbs, so the last is the smaller; veth without
/// XDP hands over the sender's GSO skbs, so its "frames" are skbs already. These ratios are
/// what emulation and a machine's speed do not change.
fn per_request_section(
    o: &mut String,
    run: &RunDoc,
    arms: &[ArmName],
    protos: &[Proto],
) -> Result<()> {
    if run.runs.iter().all(|r| r.nic_rx_packets_per_s.is_none()) {
        return Ok(());
    }
    writeln!(o, "\n## Frames and skbs per request\n")?;
    writeln!(o, "Received on the interface, per request served, mean over repetitions: the interface's own frame count (`rx_packets`), the packets where the driver handed them to the kernel (the observer's count; in skb-mode XDP one per frame, GRO being skipped), and the skbs the stack processed (tc ingress). A real NIC counts MTU frames and GRO merges them into fewer skbs; veth counts the skbs its peer sent, GSO-sized where offloads are on. With an XDP program in skb (generic) mode on the interface the kernel skips GRO (netif_elide_gro), so there every frame is its own skb.\n")?;
    type Load = (ArmName, Proto, [Option<f64>; 3]);
    let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    let table = Table::new()
        .column("arm", |l: &Load| label(&l.0))
        .column("protocol", |l| l.1.label().to_string())
        .column("frames at the interface", move |l| cell(l.2[0]))
        .column("at the driver (observer)", move |l| cell(l.2[1]))
        .column("skbs at tc ingress", move |l| cell(l.2[2]));
    let loads = arms.iter().flat_map(|a| {
        protos.iter().map(move |&p| {
            let mine = run.of(*a, p);
            // Mean over repetitions of each repetition's count per request.
            let per_request = |f: &dyn Fn(&Row) -> Option<f64>| -> Option<f64> {
                let v: Vec<f64> = mine
                    .iter()
                    .filter_map(|r| {
                        let req = r.req_per_s.filter(|q| *q > 0.0)?;
                        f(r).filter(|n| *n > 0.0).map(|n| n / req)
                    })
                    .collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let figures = [
                per_request(&|r| r.nic_rx_packets_per_s),
                per_request(&|r| Some(r.packets_per_s.iter().sum())),
                per_request(&|r| r.stack_packets_per_s.as_ref().map(|v| v.iter().sum())),
            ];
            (*a, p, figures)
        })
    });
    o.push_str(&table.render(loads));
    Ok(())
}

fn kilo(v: f64) -> String {
    if v >= 1000.0 {
        format!("{:.1}k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

/// One arm's time split per CPU and protocol, mean over repetitions (ms per second). Past
/// [`ALL_CPUS_UP_TO`] CPUs: the [`Columns`] CPUs, and one row for the mean of the rest.
pub fn time_rows(run: &RunDoc, arm: ArmName) -> Vec<(String, TimeSplit)> {
    let mut out = Vec::new();
    let cpus = run
        .runs
        .iter()
        .filter_map(|r| r.time_ms_per_s.as_ref().map(Vec::len))
        .max()
        .unwrap_or(0);
    let columns = Columns::of(run, cpus);
    for p in run.dims().1 {
        let splits: Vec<&Vec<TimeSplit>> = run
            .of(arm, p)
            .into_iter()
            .filter_map(|r| r.time_ms_per_s.as_ref())
            .collect();
        let mean_of = |cs: &[usize]| {
            let mut sum = TimeSplit::default();
            let mut n = 0.0;
            for s in &splits {
                for t in cs.iter().filter_map(|&c| s.get(c)) {
                    sum.add(t);
                    n += 1.0;
                }
            }
            (n > 0.0).then(|| sum.scaled(1.0 / n))
        };
        for &c in &columns.named {
            if let Some(t) = mean_of(&[c]) {
                out.push((format!("CPU {c} {}", p.label()), t));
            }
        }
        if let Some(t) = mean_of(&columns.rest) {
            let n = columns.rest.len();
            out.push((format!("other {n} CPUs (mean) {}", p.label()), t));
        }
    }
    out
}

/// Where every CPU's time went, per arm: a table and a stacked chart.
fn time_section(o: &mut String, run: &RunDoc, arms: &[ArmName]) -> Result<()> {
    if run.runs.iter().all(|r| r.time_ms_per_s.is_none()) {
        return Ok(());
    }
    writeln!(o, "\n## Where every CPU's time went\n")?;
    writeln!(o, "ms per second of each CPU in the measured windows, mean over repetitions. Each nanosecond is counted once: /proc/stat gives the wall, idle and irq; the BPF softirq accounting gives NET_RX and the other vectors exactly; the server's and loader's time (read from /proc per thread) and the receive kthreads' (schedstat) share what is left, scaled down together where softirq ran inside them. In the lab, the loader column includes its veth's NAPI thread (the replies' receive, which a real set-up does on the loader's machine).\n")?;
    type Line = (ArmName, String, TimeSplit);
    let mut table = Table::new()
        .column("arm", |l: &Line| label(&l.0))
        .column("CPU", |l| l.1.clone());
    for (i, part) in PARTS.iter().enumerate() {
        table = table.column(*part, move |l: &Line| format!("{:.0}", l.2.parts()[i]));
    }
    let lines = arms
        .iter()
        .flat_map(|a| time_rows(run, *a).into_iter().map(move |(n, t)| (*a, n, t)));
    o.push_str(&table.render(lines));
    writeln!(o)?;
    for a in arms {
        if !time_rows(run, *a).is_empty() {
            writeln!(o, "![{} time per CPU](time-{a}.svg)", label(a))?;
        }
    }
    Ok(())
}

/// The verdict of every load, and per XDP mode and protocol one paragraph on what moved
/// where and whether it paid off, each sentence from the stored figures.
fn verdict_section(o: &mut String, run: &RunDoc, arms: &[ArmName], protos: &[Proto]) -> Result<()> {
    let verdicts: Vec<_> = run
        .runs
        .iter()
        .filter_map(|r| Some((r, r.verdict.as_ref()?)))
        .collect();
    if verdicts.is_empty() {
        return Ok(());
    }
    writeln!(o, "\n## What limited each load\n")?;
    writeln!(
        o,
        "A CPU busy {:.0} % or more of the window is saturated; the verdict names what took most of its time{}. Repetitions that agree on the limit and its CPUs share a row; its text is the first of them.\n",
        SATURATED * 100.0,
        if crate::capacity::searched(run) {
            " (for a capacity search: at the lowest rate the arm did not sustain)"
        } else {
            ""
        }
    )?;
    // (arm, protocol, limit) -> the repetitions that gave it, and the first one's text.
    let mut groups: Vec<(ArmName, Proto, String, Vec<u32>, &str)> = Vec::new();
    for (r, v) in &verdicts {
        let key = format!(
            "{}, CPU {}",
            v.bound,
            v.cpus
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("+")
        );
        match groups
            .iter_mut()
            .find(|g| g.0 == r.arm() && g.1 == r.proto && g.2 == key)
        {
            Some(g) => g.3.push(r.rep),
            None => groups.push((r.arm(), r.proto, key, vec![r.rep], v.text.as_str())),
        }
    }
    groups.sort_by_key(|g| (arms.iter().position(|a| *a == g.0), g.1.as_str()));
    let table = Table::new()
        .column("arm", |g: &&(ArmName, Proto, String, Vec<u32>, &str)| {
            label(&g.0)
        })
        .column("protocol", |g| g.1.label().to_string())
        .column("limit", |g| g.2.clone())
        .column("repetitions", |g| {
            g.3.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .column("what the CPUs did (first of them)", |g| g.4.to_string());
    o.push_str(&table.render(groups.iter()));
    writeln!(o, "\n## What moved where, and whether it paid off\n")?;
    for &p in protos {
        for a in arms.iter().filter(|a| !is_untuned(a)) {
            if let Some(text) = paragraph(run, *a, p) {
                writeln!(o, "**{} over {}.** {text}\n", label(a), p.label())?;
            }
        }
    }
    Ok(())
}

/// One arm against its untuned: where receive work and the stack moved, the ratio, and the
/// limit; `None` when the figures are not there.
fn paragraph(run: &RunDoc, arm: ArmName, proto: Proto) -> Option<String> {
    let mine = run.of(arm, proto);
    let untuned = run.of(base(&run.runs, arm), proto);
    if mine.is_empty() || untuned.is_empty() {
        return None;
    }
    let cpus = mine.iter().map(|r| r.receive_ms_per_s.len()).max()?;
    let before = mean_per_cpu(&untuned, |r| Some(&r.receive_ms_per_s), cpus);
    let after = mean_per_cpu(&mine, |r| Some(&r.receive_ms_per_s), cpus);
    let mut s = String::new();
    let (from, to) = (0..cpus).fold((0, 0), |(f, t), c| {
        let d = after[c] - before[c];
        (
            if d < after[f] - before[f] { c } else { f },
            if d > after[t] - before[t] { c } else { t },
        )
    });
    let _ = write!(
        s,
        "Receive work on CPU {from} went from {:.0} to {:.0} ms/s and on CPU {to} from {:.0} to {:.0} ms/s (untuned to this arm, mean of repetitions).",
        before[from], after[from], before[to], after[to]
    );
    let stack = mean_per_cpu(&mine, |r| r.stack_packets_per_s.as_deref(), cpus);
    let total: f64 = stack.iter().sum();
    if total > 0.0 {
        let (c, top) = stack
            .iter()
            .enumerate()
            .fold((0, 0.0), |b, (c, &v)| if v > b.1 { (c, v) } else { b });
        let _ = write!(
            s,
            " tc ingress saw {:.0} % of the stack's packets on CPU {c}: that is where the stack ran.",
            top / total * 100.0
        );
    }
    let v = run.ratios(arm, proto);
    if !v.is_empty() {
        let (m, (lo, hi)) = (median(&v), range(&v));
        // Within 2 % of untuned is read as no difference: closer than these runs repeat.
        let judged = if v.len() < 2 {
            "one repetition cannot tell a gain from noise"
        } else if lo > 1.02 {
            "it paid off in every repetition"
        } else if hi < 0.98 {
            "it cost throughput in every repetition"
        } else {
            "the repetitions disagree or stay within 2 % of untuned, so no gain or cost is shown"
        };
        let _ = write!(
            s,
            " It got {m:.2}x untuned's req/s (median of {}, range {lo:.2}-{hi:.2}): {judged}.",
            v.len()
        );
    }
    let bound = |rs: &[&Row]| -> Option<String> {
        let mut b: Vec<String> = rs
            .iter()
            .filter_map(|r| r.verdict.as_ref().map(|v| v.bound.clone()))
            .collect();
        b.sort();
        b.dedup();
        (!b.is_empty()).then(|| b.join(" / "))
    };
    if let (Some(u), Some(me)) = (bound(&untuned), bound(&mine)) {
        let _ = write!(s, " Untuned was {u}; this arm was {me}.");
        if let Some(t) = mine
            .iter()
            .find_map(|r| r.verdict.as_ref().map(|v| &v.text))
        {
            let _ = write!(s, " In repetition 0: {t}.");
        }
    }
    Some(s)
}
