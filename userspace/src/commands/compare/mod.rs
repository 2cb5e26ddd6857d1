//! `rxsteer compare` (what `cargo xtask run` runs): every steering mode of records::steering
//! against untuned, measured side by side for HTTP/1.1 and ZAP. For each repetition (mode order rotated) and each mode:
//! `rxsteer attach` applies the mode and observes, `rxsteer serve` serves both transports, and
//! rxload drives each protocol in turn. Every load's req/s is a ratio to untuned from the same
//! repetition and protocol, next to where the receive work went per CPU in its measured
//! window. Without `--iface` it runs in the embedded veth lab; with it, on a real interface.
mod args;
mod arm;
mod figures;
mod interleave;
mod load;
mod merge;
mod screen;
mod search;
mod session;
mod several;
mod sites;
mod ssh;
mod watch;
mod witness;

pub use args::CompareArgs;
pub use arm::Arm;
pub use several::Several;
pub use sites::Site;

use anyhow::{bail, Context, Result};
use rxsteer_records::{
    run::{ratio_in, Environments},
    search::{Search, Step, StepKind, SUSTAINED_SHARE},
    LoadResult, Proto, Row, RunDoc,
};
use std::{
    io::IsTerminal,
    path::{Path, PathBuf},
    sync::atomic::AtomicBool,
};

use crate::{
    privilege::{self, Cap},
    signals::stop_on_signals,
};
use load::LoadSpec;
use rxsteer_tune::cpus::online_cpus;
use screen::{Done, Screen};
use session::ModeSession;
use watch::{Ended, Event};

/// The arm order of one repetition: rotated by one each time, so no arm always runs first
/// (on a drifting machine the first slot is not like the last).
pub fn rotated<T: Copy>(arms: &[T], rep: u32) -> Vec<T> {
    let n = arms.len();
    (0..n).map(|k| arms[(k + rep as usize) % n]).collect()
}

fn default_out() -> PathBuf {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let time: String = now[11..19].chars().filter(|c| *c != ':').collect();
    PathBuf::from(format!("results/{}-{host}-compare-{time}", &now[..10]))
}

pub fn run(args: &CompareArgs) -> Result<()> {
    // Handlers first: a Ctrl-C during setup still ends in the clean path below.
    let stop = stop_on_signals()?;
    args.check()?;
    let caps: &[Cap] = if args.iface.is_some() {
        &[Cap::NetAdmin, Cap::Bpf, Cap::Perfmon]
    } else {
        &[Cap::SysAdmin, Cap::NetAdmin, Cap::Bpf, Cap::Perfmon]
    };
    privilege::require("rxsteer compare", caps)?;
    crate::child::rxload_path()?;
    let online = online_cpus()?;
    let kinds = rxsteer_tune::topology::of_this_machine(&online);
    let roles = args.roles.choose(&online, &kinds)?;
    if let Some(why) = crate::embedded_lab::why_roles(&roles, &kinds) {
        eprintln!("rxsteer compare: {why}");
    }
    // The arms this place can run, decided before anything is built.
    let place = match &args.iface {
        None => rxsteer_records::Place {
            root_netns: false,
            // The lab's server namespace is rxsteer's own: nothing else there uses the
            // flow dissector.
            ..crate::host::place(true)?
        },
        Some(_) => crate::host::place(args.accept_dissector_reach)?,
    };
    let planned = runnable(args.arms(), &place, args.interleave)?;
    let dir = args.out.clone().unwrap_or_else(default_out);
    // Made only once the site's checks passed: a refused start leaves no empty folder.
    let make_dir =
        || std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()));
    let tui = !args.no_tui && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    match &args.iface {
        None => {
            let lab = sites::Lab::create(&roles, online.len())?;
            make_dir()?;
            let result = measure(args, &planned, lab.prepared(), &dir, tui, &stop);
            drop(lab);
            result?;
            eprintln!("rxsteer compare: stored in {}; lab removed", dir.display());
        }
        Some(iface) => {
            let site = sites::iface(args, iface, &roles)?;
            make_dir()?;
            measure(args, &planned, site, &dir, tui, &stop)?;
            eprintln!("rxsteer compare: stored in {}", dir.display());
        }
    }
    Ok(())
}

/// Every repetition, mode and protocol; then run.json and the report.
fn measure(
    args: &CompareArgs,
    planned: &Planned,
    prepared: sites::Prepared,
    dir: &Path,
    tui: bool,
    stop: &AtomicBool,
) -> Result<()> {
    let sites::Prepared {
        site,
        loader,
        setup,
        caveat,
    } = prepared;
    let loaded =
        crate::machine::quiet_machine("rxsteer compare", args.force, args.quiet_wait, stop)?;
    let env_before = crate::machine::environment();
    let mut screen = Screen::new(tui, caveat.clone());
    let mut rows: Vec<Row> = Vec::new();
    let run = Run {
        args,
        site: &site,
        loader: &loader,
        dir,
        stop,
    };
    let mut plans = search::Plans::new(args.rates, args.p99.map(|d| d.as_micros() as u64));
    let mut reps = Repetitions::new(args);
    let mut incomplete = None;
    // Interleaved: one server for the whole run, every arm switched in place under it.
    let server = match args.interleave {
        true => Some(session::Server::start(
            &site,
            args.server_io,
            rxsteer_records::ServerHelp::Nothing,
        )?),
        false => None,
    };
    'reps: while let Some(rep) = reps.next() {
        if let Some(server) = &server {
            for proto in args.protos() {
                let arms: Vec<Arm> = rotated(&planned.arms, rep)
                    .into_iter()
                    .filter(|a| reps.runs(a, proto))
                    .collect();
                if arms.is_empty() {
                    continue;
                }
                match run.cycle(rep, proto, &arms, server, &mut screen, &mut rows) {
                    Ok(()) => {}
                    Err(e) if stop.load(std::sync::atomic::Ordering::SeqCst) => {
                        incomplete = Some(format!("{e:#}"));
                        break 'reps;
                    }
                    Err(e) => return Err(e),
                }
            }
            screen.on_look(reps.look(&rows));
            continue;
        }
        for arm in rotated(&planned.arms, rep) {
            for proto in args.protos() {
                if !reps.runs(&arm, proto) {
                    continue;
                }
                let row = match run.load(rep, &arm, proto, &mut screen, &mut plans) {
                    Ok(row) => row,
                    // Ctrl-C, SIGTERM or q: what was measured is still written, marked.
                    Err(e) if stop.load(std::sync::atomic::Ordering::SeqCst) => {
                        incomplete = Some(format!("{e:#}"));
                        break 'reps;
                    }
                    Err(e) => return Err(e),
                };
                let (req_per_s, p99_us) = (row.req_per_s.unwrap_or(0.0), row.p99_us.unwrap_or(0));
                rows.push(row);
                screen.on_done(Done {
                    label: load_label(args, rep, &arm, proto),
                    req_per_s,
                    p99_us,
                    ratio: ratio_in(&rows, rep, arm.key(), proto),
                });
            }
        }
        screen.on_look(reps.look(&rows));
    }
    drop(screen);
    if let Some(server) = server {
        server.stop()?;
    }
    if let (Some(why), true) = (&incomplete, rows.is_empty()) {
        // Stopped inside the first load: nothing measured to write.
        bail!("{why}");
    }
    let mut doc = run_doc(args, planned, setup, caveat, loaded, env_before, rows)?;
    if let Some(s) = doc.setup.as_mut() {
        s.levers_after = site.levers_now();
    }
    doc.reps = reps.next;
    doc.sequential = reps.sequential;
    doc.incomplete = incomplete.clone();
    rxsteer_report::files::write_replacing(
        dir.join("run.json"),
        serde_json::to_string_pretty(&doc)?,
    )?;
    print!("{}", rxsteer_report::summary(&doc)?);
    rxsteer_report::run(dir)?;
    if let Some(why) = incomplete {
        bail!(
            "{why}; the intervals measured so far are in {}",
            dir.join("report.md").display()
        );
    }
    index_run(dir, &doc)?;
    Ok(())
}

/// Which repetition comes next and which loads it runs: every load while the count is
/// fixed or below the first look; with `--reps auto`, after each repetition from the fifth
/// only the arms whose answer is not settled (and untuned for their protocols), until none
/// is open, --max-reps are done or the next repetition would end past --budget.
struct Repetitions {
    planned: u32,
    budget: std::time::Duration,
    started: std::time::Instant,
    /// When the last repetition began, and how long it took.
    rep_started: std::time::Instant,
    last_took: std::time::Duration,
    next: u32,
    sequential: Option<rxsteer_records::reps::Sequential>,
    confidence: Option<f64>,
    /// Open (arm, protocol) pairs after the last look; None: every load runs.
    open: Option<Vec<(rxsteer_records::run::ArmName, Proto)>>,
}

impl Repetitions {
    fn new(args: &CompareArgs) -> Self {
        let now = std::time::Instant::now();
        Self {
            planned: args.planned_reps(),
            budget: args.budget,
            started: now,
            rep_started: now,
            last_took: std::time::Duration::ZERO,
            next: 0,
            sequential: args.sequential(),
            confidence: args.confidence_stored(),
            open: None,
        }
    }

    /// The next repetition, or None when the run is done (and why, for a sequential run).
    fn next(&mut self) -> Option<u32> {
        let now = std::time::Instant::now();
        if self.next > 0 {
            self.last_took = now - self.rep_started;
        }
        let ended = if self.next >= self.planned {
            Some(rxsteer_records::reps::Ended::MaxReps)
        } else if self.open.as_ref().is_some_and(Vec::is_empty) {
            Some(rxsteer_records::reps::Ended::Settled)
        } else if self.sequential.is_some()
            && self.next > 0
            && now - self.started + self.last_took > self.budget
        {
            Some(rxsteer_records::reps::Ended::Budget)
        } else {
            None
        };
        if let Some(e) = ended {
            if let Some(s) = &mut self.sequential {
                s.ended = e;
            }
            return None;
        }
        self.rep_started = now;
        self.next += 1;
        Some(self.next - 1)
    }

    /// Whether this repetition runs `arm` over `proto`: untuned runs for a protocol while
    /// any arm of it is open, since every ratio is taken to it.
    fn runs(&self, arm: &Arm, proto: Proto) -> bool {
        let Some(open) = &self.open else {
            return true;
        };
        let key = arm.key();
        if key.mode.is_baseline() && key != rxsteer_records::run::NO_BPF_ARM {
            return open.iter().any(|(_, p)| *p == proto);
        }
        open.contains(&(key, proto))
    }

    /// After a repetition: each arm's interval and verdict so far (the lines the screen
    /// shows); with --reps auto, from the first look on, which arms stay open.
    fn look(&mut self, rows: &[Row]) -> Vec<String> {
        let doc = RunDoc {
            runs: rows.to_vec(),
            sequential: self.sequential.clone(),
            confidence: self.confidence,
            reps: self.next,
            ..Default::default()
        };
        if self.sequential.is_some() && self.next >= rxsteer_report::decide::MIN_REPS {
            self.open = Some(rxsteer_report::decide::unsettled(&doc));
        }
        rxsteer_report::decide::look_lines(&doc, self.next)
    }
}

/// The arms this place can run, and the rest with why not (each said in one line): a mode
/// whose need is unmet here (RFS in the lab) is left out and the comparison goes on.
fn runnable(asked: Vec<Arm>, place: &rxsteer_records::Place, interleave: bool) -> Result<Planned> {
    let (mut arms, mut not_run) = (Vec::new(), Vec::new());
    for arm in asked {
        let restarts = interleave && !arm.mode.steering().switches_in_place();
        let why = match arm.mode.refused_at(place) {
            None if restarts => Some(format!(
                "it needs {}: the server starts with it, and --interleave switches arms under \
                 one running server; measure it without --interleave",
                arm.mode.steering().server.phrase().unwrap_or_default()
            )),
            why => why,
        };
        match why {
            Some(why) => {
                eprintln!("rxsteer compare: --steer {}: not run here: {why}", arm.mode);
                not_run.push(rxsteer_records::run::NotRun {
                    arm: arm.key(),
                    why,
                });
            }
            None => arms.push(arm),
        }
    }
    if arms.is_empty() {
        bail!("no arm asked for can run here (see above)");
    }
    Ok(Planned { arms, not_run })
}

/// The arms a run measures, and those it was asked for and cannot run here.
struct Planned {
    arms: Vec<Arm>,
    not_run: Vec<rxsteer_records::run::NotRun>,
}

/// "rep 2/7  rps  http  (no XDP)": what the screen names a load by.
fn load_label(args: &CompareArgs, rep: u32, arm: &Arm, p: Proto) -> String {
    format!(
        "rep {}/{}{}  {}  {}  ({})",
        rep + 1,
        args.planned_reps(),
        if args.reps == args::Reps::Auto {
            " at most"
        } else {
            ""
        },
        arm.key(),
        p.as_str(),
        match arm.observer {
            _ if arm.runs_xdp() => format!("XDP {}", arm.xdp.as_str()),
            rxsteer_dataplane::ObserverChoice::Off => "no BPF".to_string(),
            _ => "no XDP".to_string(),
        }
    )
}

/// What every load of a run shares.
struct Run<'a> {
    args: &'a CompareArgs,
    site: &'a sites::Site<'a>,
    loader: &'a load::Loader<'a>,
    dir: &'a Path,
    stop: &'a AtomicBool,
}

impl Run<'_> {
    /// One load: the arm in place (checked against what the kernel shows), then its capacity
    /// search, or one closed-loop or fixed-rate window; every figure stored; its row.
    fn load(
        &self,
        rep: u32,
        arm: &Arm,
        proto: Proto,
        screen: &mut Screen,
        plans: &mut search::Plans,
    ) -> Result<Row> {
        let args = self.args;
        let label = load_label(args, rep, arm, proto);
        screen.begin(label.clone());
        let base = format!("{}-{}-rep{rep}", arm.key(), proto.as_str());
        if arm.observer == rxsteer_dataplane::ObserverChoice::Off {
            witness::wait_unloaded(std::time::Duration::from_secs(5))?;
        }
        // A search step is short: two samples of it at least.
        let interval = if args.searches() {
            args.interval.min(args.step / 2)
        } else {
            args.interval
        };
        let session = ModeSession::start(
            self.site,
            *arm,
            proto,
            interval,
            args.server_io,
            args.watch(),
        )?;
        let attached = witness::read(self.site)?;
        witness::check(arm, &self.site.server_dev, &attached)?;
        let mut all = Vec::new();
        let mut at = At {
            session: &session,
            rep,
            arm,
            proto,
            screen,
            all: &mut all,
        };
        let mut row = if args.searches() {
            self.search(&mut at, &label, &base, plans)?
        } else {
            let w = Window {
                rate: args.rate,
                measure: args.duration,
                warmup: args.warmup,
                base: base.clone(),
            };
            self.window(&mut at, &w)?.0
        };
        session.stop()?;
        figures::store_samples(&self.dir.join(format!("samples-{base}.jsonl")), &all)?;
        row.attached = Some(attached);
        Ok(row)
    }

    /// The capacity search of one load: the unloaded step (which sets the protocol's bound
    /// on its first load), then the planner's rates until it is done. The row is the knee
    /// step's, its verdict that of the lowest rate not sustained.
    fn search(
        &self,
        at: &mut At,
        label: &str,
        base: &str,
        plans: &mut search::Plans,
    ) -> Result<Row> {
        let args = self.args;
        let window = |k: usize, rate: f64| Window {
            rate: Some(rate),
            measure: args.step,
            warmup: args.step_warmup,
            base: format!("{base}-step{k}"),
        };
        at.screen.begin(format!(
            "{label}  step 0 (unloaded): {:.0} req/s offered",
            search::UNLOADED_RATE
        ));
        let (row, load) = self.window(at, &window(0, search::UNLOADED_RATE))?;
        if row.failed.is_some() {
            // Not even the unloaded rate: the arm ends here with its reason, and sets no
            // bound for the protocol's other arms.
            let mut found = Search {
                steps: vec![step_of(
                    StepKind::Unloaded,
                    search::UNLOADED_RATE,
                    &row,
                    load.as_ref(),
                    0,
                )],
                ..Default::default()
            };
            // Nothing sustained: its reason is the unloaded step's.
            found.finish(false);
            let mut row = row;
            row.search = Some(found);
            return Ok(row);
        }
        let unloaded = row.p99_us.unwrap_or(0);
        let (bound_us, bound_from) = plans.bound(at.proto, unloaded)?;
        let mut found = Search {
            bound_us,
            bound_from,
            unloaded_p99_us: row.p99_us,
            ..Default::default()
        };
        let mut rows = vec![row.clone()];
        found.steps.push(step_of(
            StepKind::Unloaded,
            search::UNLOADED_RATE,
            &row,
            load.as_ref(),
            bound_us,
        ));
        let mut planner = search::Planner::new(plans.range(), plans.start(at.proto));
        while let Some((kind, rate)) = planner.next() {
            let k = found.steps.len();
            at.screen.begin(format!(
                "{label}  step {k} ({}): {} req/s offered, p99 bound {}",
                step_name(kind),
                rxsteer_records::breakdown::rate_text(rate),
                rxsteer_records::search::ms(bound_us)
            ));
            let (row, load) = self.window(at, &window(k, rate))?;
            let step = step_of(kind, rate, &row, load.as_ref(), bound_us);
            planner.record(kind, rate, step.sustained);
            found.steps.push(step);
            rows.push(row);
        }
        found.finish(planner.at_ceiling());
        plans.found(at.proto, found.capacity());
        // No knee: the figures of the lowest rate it failed (what it could not sustain).
        let at_row = found
            .knee
            .or_else(|| {
                let failed = found.first_failed()?;
                found.steps.iter().position(|s| std::ptr::eq(s, failed))
            })
            .unwrap_or(0);
        let mut row = rows.swap_remove(at_row);
        if let Some(v) = found.limit() {
            row.verdict = Some(v);
        }
        row.search = Some(found);
        Ok(row)
    }

    /// One rxload window inside the session, followed to its end: its row and rxload's result.
    fn window(&self, at: &mut At, w: &Window) -> Result<(Row, Option<LoadResult>)> {
        let args = self.args;
        let dir = self.dir;
        let spec = LoadSpec {
            proto: at.proto,
            scenario: args.scenario,
            body_size: args.body_size,
            rate: w.rate,
            connections: args.connections,
            io: args.loader_io,
            measure: w.measure,
            warmup: w.warmup,
            target_ip: &self.site.target_ip,
            json: dir.join(format!("rxload-{}.json", w.base)),
            hgrm: dir.join(format!("latency-{}.hgrm", w.base)),
            live: dir.join(format!("live-{}.jsonl", w.base)),
            base: w.base.clone(),
            live_every: None,
        };
        let mut children = self.loader.spawn(&spec)?;
        let mut tagged = Vec::new();
        if let Ended::Stopped = self.follow(at, &spec, &mut children, &mut tagged)? {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            // The session, dropped on the way out, takes the arm down.
            bail!(
                "stopped before the end (q or a signal); everything was restored; \
                 partial files in {}",
                dir.display()
            );
        }
        let load::Collected { load, failed } = self.loader.collect(&spec, &mut children)?;
        let mut row = figures::row(at.rep, *at.arm, at.proto, load.as_ref(), &tagged);
        row.levers = self.site.levers_now();
        if let Some(why) = failed {
            at.screen.note(format!("{}: {why}", w.base));
            row.fail(why);
        }
        at.all.extend(tagged);
        Ok((row, load))
    }

    /// Follows the loaders and the session's samples to the end of the window, drawing each
    /// on the screen; the samples go into `tagged`.
    fn follow(
        &self,
        at: &mut At,
        spec: &LoadSpec,
        children: &mut [std::process::Child],
        tagged: &mut Vec<watch::Tagged>,
    ) -> Result<Ended> {
        let mut clocks = watch::Clocks::new(
            at.session.serve_pid(),
            children.iter().map(std::process::Child::id).collect(),
        );
        let screen = &mut *at.screen;
        watch::follow(
            children,
            spec.warmup + spec.measure,
            &spec.live,
            &at.session.samples,
            &mut clocks,
            &mut |e| match e {
                Event::Live(l) => {
                    screen.on_live(l);
                    Ok(false)
                }
                Event::Sample(s) => {
                    screen.on_sample(&s.sample);
                    if let Some(m) = s.xdp_mode {
                        screen.on_attached(m);
                    }
                    Ok(false)
                }
                Event::Idle => screen.tick(),
            },
            self.stop,
            tagged,
        )
    }
}

/// Where one load's windows run: its session, arm and protocol, the screen, and every
/// sample so far (stored once the load ends).
struct At<'a> {
    session: &'a ModeSession,
    rep: u32,
    arm: &'a Arm,
    proto: Proto,
    screen: &'a mut Screen,
    all: &'a mut Vec<watch::Tagged>,
}

/// One rxload window: open loop at `rate`, or closed.
struct Window {
    rate: Option<f64>,
    measure: std::time::Duration,
    warmup: std::time::Duration,
    /// File-name stem of its rxload files.
    base: String,
}

fn step_name(k: StepKind) -> &'static str {
    match k {
        StepKind::Unloaded => "unloaded",
        StepKind::Coarse => "coarse",
        StepKind::Bisect => "bisect",
    }
}

/// One search step from its window's row: judged against the bound.
fn step_of(
    kind: StepKind,
    offered: f64,
    row: &Row,
    load: Option<&LoadResult>,
    bound_us: u64,
) -> Step {
    let busy = row
        .time_ms_per_s
        .iter()
        .flatten()
        .map(|t| {
            let total = t.total();
            if total > 0.0 {
                (t.busy() / total * 1000.0).round() / 1000.0
            } else {
                0.0
            }
        })
        .collect();
    let loader_cpu = load.map_or(0.0, |l| {
        l.client.cpu_s / l.measured_s.max(1e-9) / f64::from(l.loader_count().max(1))
    });
    let mut s = Step {
        kind,
        offered_per_s: offered,
        req_per_s: row.req_per_s.unwrap_or(0.0),
        p50_us: row.p50_us.unwrap_or(0),
        p99_us: row.p99_us.unwrap_or(0),
        errors: row.error_total,
        busy,
        loader_cpu: (loader_cpu * 1000.0).round() / 1000.0,
        verdict: row.verdict.clone(),
        ..Default::default()
    };
    // The unloaded step sets the bound; it is not judged against it.
    if let Some(why) = &row.failed {
        s.sustained = false;
        s.why_not = Some(why.clone());
    } else if kind == StepKind::Unloaded {
        s.sustained = s.errors == 0 && s.req_per_s >= SUSTAINED_SHARE * offered;
    } else {
        s.judge(bound_us);
    }
    s
}

/// The run's document: what was asked, where, on what machine, and every load's row.
fn run_doc(
    args: &CompareArgs,
    planned: &Planned,
    setup: rxsteer_records::run::Setup,
    caveat: Option<String>,
    loaded: Option<String>,
    env_before: rxsteer_records::run::Environment,
    rows: Vec<Row>,
) -> Result<RunDoc> {
    Ok(RunDoc {
        setup: Some(setup),
        cpus: online_cpus()?.len(),
        steer: args.modes(),
        arms: planned.arms.iter().map(Arm::key).collect(),
        xdp_mode: Some(format!("{:?}", args.xdp_mode).to_lowercase()),
        xdp_frags: Some(format!("{:?}", args.xdp_frags).to_lowercase()),
        observer: Some(args.observer_name()),
        observe: Some(args.observe),
        body_size: args.body_size,
        rate: args.rate,
        search: args.searches().then(|| rxsteer_records::search::Asked {
            p99_us: args.p99.map(|d| d.as_micros() as u64),
            rates: [args.rates.lo, args.rates.hi],
            step_s: args.step.as_secs_f64(),
            step_warmup_s: args.step_warmup.as_secs_f64(),
        }),
        protos: args.protos(),
        scenario: args.scenario,
        seconds: args.duration.as_secs_f64(),
        warmup_s: Some(args.warmup.as_secs_f64()),
        connections: args.connections,
        loader_io: Some(args.loader_io),
        server_io: Some(args.server_io),
        reps: args.planned_reps(),
        sequential: args.sequential(),
        incomplete: None,
        interleaved: interleave::record(args),
        confidence: args.confidence_stored(),
        caveat,
        loaded_machine: loaded,
        environment: Some(Environments {
            before: env_before,
            after: crate::machine::environment(),
        }),
        roles: None,
        not_run: planned.not_run.clone(),
        runs: rows,
    })
}

/// A run stored beside `results/README.md` gets a line in that index.
fn index_run(dir: &Path, doc: &RunDoc) -> Result<()> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    let index = parent.join("README.md");
    if parent.file_name().is_none_or(|n| n != "results") || !index.is_file() {
        return Ok(());
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let command: Vec<String> = std::env::args().skip(1).collect();
    let what = format!(
        "the main job ({} over {}, {} repetitions{}{})",
        doc.arms
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(" / "),
        doc.protos
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(" and "),
        doc.reps,
        if doc.is_iface() {
            ", on a real interface"
        } else {
            ", in the lab"
        },
        if doc.loaded_machine.is_some() {
            "; LOADED MACHINE, figures marked"
        } else {
            ""
        },
    );
    let line = format!(
        "| [{name}]({name}/report.md) | `rxsteer {}` | {what} |\n",
        command.join(" ")
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(&index)?;
    std::io::Write::write_all(&mut f, line.as_bytes())?;
    eprintln!("rxsteer compare: indexed in {}", index.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::Mode;

    fn args(a: &[&str]) -> CompareArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            c: CompareArgs,
        }
        <Cli as clap::Parser>::try_parse_from(std::iter::once("compare").chain(a.iter().copied()))
            .unwrap()
            .c
    }

    /// A row of `arm` over HTTP in `rep` at `rps`.
    fn row(rep: u32, arm: &str, rps: f64) -> Row {
        let name: rxsteer_records::run::ArmName = arm.parse().unwrap();
        Row {
            rep,
            arm: Some(name),
            mode: name.mode,
            proto: Proto::Http,
            req_per_s: Some(rps),
            observer: Some(rxsteer_records::Observer::Tracepoint),
            ..Default::default()
        }
    }

    /// --reps auto: every load until the fifth repetition, then only the open arms and
    /// untuned beside them; done when none is open.
    #[test]
    fn auto_repetitions_drop_settled_arms_and_stop_when_none_is_open() {
        let a = args(&["--steer", "all", "--proto", "http"]);
        let mut reps = Repetitions::new(&a);
        let arm = |m| Arm {
            mode: m,
            observer: rxsteer_dataplane::ObserverChoice::Auto,
            ..Arm::no_bpf()
        };
        let (none, rps, cpumap) = (arm(Mode::None), arm(Mode::Rps), arm(Mode::Cpumap));
        let mut rows = Vec::new();
        for k in 0..5 {
            assert_eq!(reps.next(), Some(k));
            assert!(reps.runs(&rps, Proto::Http) && reps.runs(&cpumap, Proto::Http));
            // untuned near 100, RPS clearly better, cpumap all over the place.
            let noise = [1.0, 1.1, 0.9, 1.05, 0.95][k as usize];
            let wild = [0.6, 1.5, 0.8, 1.3, 1.0][k as usize];
            rows.extend([
                row(k, "none", 100.0 * noise),
                row(k, "rps", 150.0 * noise),
                row(k, &cpumap.key().to_string(), 100.0 * wild),
            ]);
            let lines = reps.look(&rows);
            assert!(lines.iter().any(|l| l.contains("RPS/RFS/XPS")), "{lines:?}");
        }
        // After the fifth look: RPS settled (better), cpumap open, untuned runs for it.
        assert_eq!(reps.next(), Some(5));
        assert!(!reps.runs(&rps, Proto::Http));
        assert!(reps.runs(&cpumap, Proto::Http));
        assert!(reps.runs(&none, Proto::Http));
        assert!(!reps.runs(&none, Proto::Zap), "no ZAP arm is open");
        // Nothing open: the run ends, said as settled.
        reps.open = Some(vec![]);
        assert_eq!(reps.next(), None);
        assert_eq!(
            reps.sequential.unwrap().ended,
            rxsteer_records::reps::Ended::Settled
        );
    }

    #[test]
    fn a_fixed_count_runs_every_load_and_ends_at_it() {
        let mut reps = Repetitions::new(&args(&["--reps", "2"]));
        assert_eq!(reps.sequential, None);
        assert_eq!(
            (reps.next(), reps.next(), reps.next()),
            (Some(0), Some(1), None)
        );
    }

    #[test]
    fn mode_order_rotates() {
        let all = [Mode::None, Mode::Rps, Mode::Cpumap];
        assert_eq!(rotated(&all, 0), all);
        assert_eq!(rotated(&all, 1), [Mode::Rps, Mode::Cpumap, Mode::None]);
        assert_eq!(rotated(&all, 3), all);
        assert_eq!(rotated(&[Mode::Rps], 2), [Mode::Rps]);
    }

    /// An arm whose mode needs what this place lacks is left out, said and recorded; the
    /// others run. Nothing left to run is an error.
    #[test]
    fn arms_this_place_cannot_run_are_left_out_with_why() {
        let arm = |mode| Arm {
            mode,
            ..Arm::no_bpf()
        };
        let lab = rxsteer_records::Place {
            kernel: (6, 18),
            root_netns: false,
            backlog_threads: false,
            dissector_users: vec![],
        };
        let planned = runnable(vec![arm(Mode::None), arm(Mode::Rfs)], &lab, false).unwrap();
        assert_eq!(planned.arms.len(), 1);
        assert_eq!(planned.not_run.len(), 1);
        assert_eq!(planned.not_run[0].arm, arm(Mode::Rfs).key());
        assert!(planned.not_run[0].why.contains("rps_sock_flow_entries"));
        let host = rxsteer_records::Place {
            root_netns: true,
            ..lab.clone()
        };
        assert_eq!(
            runnable(vec![arm(Mode::Rfs)], &host, false)
                .unwrap()
                .arms
                .len(),
            1
        );
        // Interleaved, an arm that restarts the server is left out, said why.
        let planned = runnable(vec![arm(Mode::None), arm(Mode::BusyPoll)], &host, true).unwrap();
        assert_eq!(planned.arms, [arm(Mode::None)]);
        assert!(
            planned.not_run[0].why.contains("without --interleave"),
            "{}",
            planned.not_run[0].why
        );
        let none = runnable(vec![arm(Mode::Rfs)], &lab, false)
            .map(|_| ())
            .unwrap_err();
        assert!(none.to_string().contains("no arm asked for can run here"));
    }

    #[test]
    fn default_out_is_dated_under_results() {
        let p = default_out().display().to_string();
        assert!(
            p.starts_with("results/20") && p.contains("-compare-"),
            "{p}"
        );
    }
}
