//! `rxsteer selftest`: rxsteer's figures checked against the kernel's own counts, on the
//! user's box. Without `--iface` it builds the lab and drives a short paced load of its own
//! (rxsteer's server, rxload sending an exact count); with `--iface` it only watches the
//! interface's live traffic. Either way it samples two spans, one with the BPF statistics
//! sampled (the default of every command) and one with them always on, reads the kernel's
//! counts either side of every sample, and prints each figure beside the kernel's with the
//! difference and the tolerance. Exit 1 when a figure is outside its tolerance.
mod checks;
mod kernel;
mod load;
mod sampled;

use anyhow::{bail, Context, Result};
use std::{
    fs::File,
    sync::{atomic::AtomicBool, atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use rxsteer_dataplane::{
    sampler::Sampler, Counters, Dataplane, ObserveLevel, ObserverChoice, PortConfig, TcChoice,
    XdpModeChoice,
};
use rxsteer_records::{
    selftest::{Check, Figure, Place, SelftestReport, Subject, Verdict},
    BpfStatsChoice, FragsChoice, Sample,
};

use crate::{
    embedded_lab::{EmbeddedLab, RoleArgs},
    observe::{attach_observer, use_frags},
    privilege::{self, Cap},
    signals::stop_on_signals,
};
use kernel::{KernelRead, KernelReader};
use load::PacedLoad;

#[derive(clap::Args, Debug)]
pub struct SelftestArgs {
    /// Watch this interface's live traffic instead of building the lab: read-only (the
    /// observe programs only, no tc witness, nothing steered or tuned).
    #[arg(long)]
    pub iface: Option<String>,
    /// How long each of the two spans is sampled (2s to 10m). A sampled count is judged
    /// from 10 windows on (10s at a 1s interval), shown below that.
    #[arg(long, short = 'd', default_value = "10s", value_parser = parse_span)]
    pub duration: Duration,
    /// Sampling interval, as `top` samples (the sampled statistics' window is a tenth of it).
    #[arg(long, default_value = "1s", value_parser = crate::observe::parse_interval)]
    pub interval: Duration,
    /// The lab's paced load, requests per second in all (100 to 100000).
    #[arg(long, default_value = "2000", conflicts_with = "iface",
          value_parser = clap::value_parser!(u32).range(100..=100_000))]
    pub rate: u32,
    /// The lab load's connections (1 to 256).
    #[arg(long, short = 'c', default_value = "4", conflicts_with = "iface",
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub connections: u32,
    /// How to count where the driver received, as `top --observer` (off checks nothing).
    #[arg(long, value_enum, default_value = "auto")]
    pub observer: ObserverChoice,
    /// The report as one JSON object on stdout (the table then goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Check even where the machine is too loaded to time on (the report says so).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub roles: RoleArgs,
    /// FIGURE:FACTOR multiplies one of rxsteer's figures before it is judged, so a test can
    /// see a bad figure fail (e.g. net_rx_runs:1.1).
    #[arg(long, hide = true, value_parser = parse_skew)]
    pub skew: Option<(Figure, f64)>,
}

fn parse_span(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?;
    if d < Duration::from_secs(2) || d > Duration::from_secs(600) {
        return Err(format!("duration {s:?} must be between 2s and 10m"));
    }
    Ok(d)
}

fn parse_skew(s: &str) -> Result<(Figure, f64), String> {
    let (f, k) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?}: expected FIGURE:FACTOR"))?;
    let figure: Figure = f.parse().map_err(|e| format!("{e}"))?;
    let k: f64 = k
        .parse()
        .ok()
        .filter(|k: &f64| k.is_finite() && *k > 0.0)
        .ok_or_else(|| format!("{s:?}: the factor must be a number above 0"))?;
    Ok((figure, k))
}

/// What attaching the observer needs; without it only the figures from /proc and sysfs are
/// checked, and the rest say why they were not.
const CAPS: &[Cap] = &[Cap::Bpf, Cap::NetAdmin, Cap::Perfmon];

pub fn run(args: &SelftestArgs) -> Result<()> {
    if args.observer == ObserverChoice::Off {
        bail!("--observer off: selftest checks the observer's figures; choose auto, tracepoint or xdp");
    }
    if args.interval * 2 > args.duration {
        bail!(
            "--interval {:?} leaves fewer than two samples in --duration {:?}",
            args.interval,
            args.duration
        );
    }
    // Refused before anything starts, the wait for a quiet machine included.
    if args.iface.is_none() {
        privilege::require(
            "rxsteer selftest (the lab; --iface watches without one)",
            &[Cap::SysAdmin, Cap::NetAdmin, Cap::Bpf, Cap::Perfmon],
        )?;
    }
    let stop = stop_on_signals()?;
    let loaded = crate::machine::quiet_machine(
        "rxsteer selftest",
        args.force,
        Duration::from_secs(60),
        &stop,
    )?;
    let mut report = match &args.iface {
        None => in_lab(args, &stop)?,
        Some(iface) => watching(args, iface, &stop)?,
    };
    report.loaded = loaded;
    if args.json {
        // The table still goes to the terminal (stderr), for whoever watches the run.
        println!("{}", serde_json::to_string(&report)?);
        eprint!("{}", table(&report));
    } else {
        print!("{}", table(&report));
    }
    let failed = report.failed().count();
    if failed > 0 {
        eprintln!(
            "rxsteer selftest: {failed} of {} figures outside their tolerance",
            report.checks.len() - report.skipped()
        );
        std::process::exit(1);
    }
    if report.passed() == 0 {
        eprintln!("rxsteer selftest: no figure could be checked (each says why it was skipped)");
        std::process::exit(1);
    }
    Ok(())
}

/// The lab under a paced load of its own.
fn in_lab(args: &SelftestArgs, stop: &Arc<AtomicBool>) -> Result<SelftestReport> {
    let online = rxsteer_tune::cpus::online_cpus()?;
    let kinds = rxsteer_tune::topology::of_this_machine(&online);
    let roles = args.roles.choose(&online, &kinds)?;
    for n in EmbeddedLab::remove_leftovers()? {
        eprintln!("rxsteer: removed network namespace {n} left by an earlier run");
    }
    let lab = EmbeddedLab::create(&roles)?;
    let dev = lab.veth.server_dev.clone();
    let observer = args.observer;
    let (dp, counters, net_dev) = lab
        .veth
        .server
        .spawn(None, move || {
            let mut dp = Dataplane::load(&PortConfig::default())?;
            dp.attach_tracepoints()?;
            let frags = use_frags(&dp, FragsChoice::Auto)?;
            attach_observer(&mut dp, &dev, observer, XdpModeChoice::Auto, frags)?;
            dp.attach_tc(&dev, TcChoice::Auto, ObserveLevel::Default)?;
            let counters = dp.take_counters()?;
            // Opened here, it reads the server namespace's interfaces from any thread.
            let net_dev = File::open("/proc/thread-self/net/dev")?;
            Ok((dp, counters, net_dev))
        })
        .join()
        .expect("attach thread")?;
    let mut reader = KernelReader::new(&lab.veth.server_dev, net_dev)?;
    // The load runs past both spans: a second to start, both spans, a second to spare.
    let spans = args.duration * 2 + Duration::from_secs(2);
    let requests = (args.rate as f64 * spans.as_secs_f64()).round() as u64;
    eprintln!(
        "rxsteer selftest: the lab, {requests} requests at {}/s over {} connections; two spans of {:?}",
        args.rate, args.connections, args.duration
    );
    let load = PacedLoad::start(&lab, &roles, requests, args.rate, args.connections)?;
    std::thread::sleep(Duration::from_secs(1));
    let cx = Setting {
        cpus: &online,
        no_bpf: None,
        virtual_iface: true,
    };
    let measured = spans_of(
        args,
        &lab.veth.server_dev,
        Some(counters),
        &mut reader,
        &cx,
        stop,
    );
    let mut checks = match measured {
        Ok(c) => c,
        Err(e) => {
            load.stop();
            return Err(e);
        }
    };
    let (result, served) = load.finish()?;
    checks.extend(loader_checks(&result, served, requests, args.skew));
    drop(dp);
    let iface = lab.veth.server_dev.clone();
    drop(lab);
    let place = Place::Lab {
        requests,
        rate_per_s: args.rate as f64,
        connections: args.connections,
    };
    Ok(report(args, place, iface, checks))
}

/// An interface of this host, watched only.
fn watching(args: &SelftestArgs, iface: &str, stop: &Arc<AtomicBool>) -> Result<SelftestReport> {
    crate::iface::require_exists(iface)?;
    let online = rxsteer_tune::cpus::online_cpus()?;
    let (dp, counters, no_bpf) = match privilege::require("the BPF figures", CAPS) {
        Err(e) => (
            None,
            None,
            Some(format!("{e:#}: no BPF program was loaded")),
        ),
        Ok(()) => {
            let mut dp = Dataplane::load(&PortConfig::default())?;
            dp.attach_tracepoints()?;
            let frags = use_frags(&dp, FragsChoice::Auto)?;
            attach_observer(&mut dp, iface, args.observer, XdpModeChoice::Auto, frags)?;
            let counters = dp.take_counters()?;
            (Some(dp), Some(counters), None)
        }
    };
    let net_dev = File::open("/proc/thread-self/net/dev").context("opening /proc/net/dev")?;
    let mut reader = KernelReader::new(iface, net_dev)?;
    eprintln!(
        "rxsteer selftest: watching {iface}'s live traffic (nothing sent, steered or tuned); two spans of {:?}",
        args.duration
    );
    let cx = Setting {
        cpus: &online,
        no_bpf: no_bpf.as_deref(),
        virtual_iface: is_veth(iface),
    };
    let mut checks = spans_of(args, iface, counters, &mut reader, &cx, stop)?;
    checks.push(
        Subject::new(Figure::LoaderSent, "requests", "rxload")
            .skipped("--iface watches live traffic: no load of rxsteer's to count"),
    );
    drop(dp);
    let place = Place::Iface {
        name: iface.to_string(),
    };
    Ok(report(args, place, iface.to_string(), checks))
}

/// The report of a self-check at `place` on `iface`, as the machine and the flags were.
fn report(args: &SelftestArgs, place: Place, iface: String, checks: Vec<Check>) -> SelftestReport {
    let machine = crate::machine::environment();
    SelftestReport {
        place,
        iface,
        kernel: machine.kernel,
        online_cpus: machine.online_cpus,
        span_s: args.duration.as_secs_f64(),
        interval_s: args.interval.as_secs_f64(),
        loaded: None,
        skewed: args.skew.map(|(f, k)| format!("{f} x {k}")),
        checks,
    }
}

/// What the spans' checks need of the place.
struct Setting<'a> {
    cpus: &'a [u32],
    no_bpf: Option<&'a str>,
    virtual_iface: bool,
}

/// Both spans: sampled statistics (the programs' figures), then always on (the programs'
/// again, and every other figure). The
/// kernel's statistics are held on by this check throughout, so prog info counts every run.
fn spans_of(
    args: &SelftestArgs,
    iface: &str,
    mut counters: Option<Counters>,
    reader: &mut KernelReader,
    place: &Setting,
    stop: &AtomicBool,
) -> Result<Vec<Check>> {
    let held = counters
        .as_ref()
        .map(|_| rxsteer_dataplane::sampler::hold_run_time_stats());
    let no_prog_info = match &held {
        Some(Err(why)) => Some(why.as_str()),
        _ => None,
    };
    let irq_time_accounting = checks::irq_time_accounting();
    let mut out = Vec::new();
    for stats in [BpfStatsChoice::Sampled, BpfStatsChoice::Always] {
        let (samples, start, end, back) = span(args, iface, counters.take(), stats, reader, stop)?;
        counters = back;
        let cx = checks::Context {
            cpus: place.cpus,
            stats,
            no_bpf: place.no_bpf,
            no_prog_info,
            virtual_iface: place.virtual_iface,
            irq_time_accounting,
            skew: args.skew,
        };
        let span = checks::span(&start, &end);
        out.extend(checks::programs(&samples, &span, &cx));
        if stats == BpfStatsChoice::Always {
            out.extend(checks::figures(&samples, &span, &cx));
        }
    }
    out.push(
        Subject::new(Figure::Cpumap, "frames", "cpumap tracepoints")
            .skipped("selftest steers nothing, so no cpumap runs"),
    );
    drop(held);
    Ok(out)
}

type Bracket = (KernelRead, KernelRead);

/// One span: the kernel's reads either side of the sampler's baseline and of each sample.
fn span(
    args: &SelftestArgs,
    iface: &str,
    counters: Option<Counters>,
    stats: BpfStatsChoice,
    reader: &mut KernelReader,
    stop: &AtomicBool,
) -> Result<(Vec<Sample>, Bracket, Bracket, Option<Counters>)> {
    let before = reader.read(|| counters.as_ref().map(Counters::program_runs).transpose())?;
    let mut sampler = Sampler::new(counters, iface, stats, args.interval)?;
    let after = reader.read(|| sampler.program_runs_now())?;
    let start = (before, after);
    let t0 = Instant::now();
    let n = (args.duration.as_secs_f64() / args.interval.as_secs_f64()).floor() as u32;
    let mut samples = Vec::new();
    let mut end = None;
    // The kernel is read at the span's two ends only, right around the sampler's reads:
    // the sampled window, in the middle of each interval, is over by then (a read inside
    // it would be work the window times).
    for i in 1..=n {
        let due = t0 + args.interval * i;
        if let Some((opens, closes)) = sampler.stats_window_around(due) {
            sleep_until(opens, stop)?;
            sampler.open_stats_window()?;
            sleep_until(closes, stop)?;
            sampler.close_stats_window()?;
        }
        sleep_until(due, stop)?;
        if i < n {
            samples.push(sampler.sample()?);
            continue;
        }
        let a = reader.read(|| sampler.program_runs_now())?;
        samples.push(sampler.sample()?);
        end = Some((a, reader.read(|| sampler.program_runs_now())?));
    }
    let end = end.expect("at least two samples (checked with the flags)");
    Ok((samples, start, end, sampler.into_counters()))
}

fn sleep_until(t: Instant, stop: &AtomicBool) -> Result<()> {
    while Instant::now() < t {
        if stop.load(Ordering::SeqCst) {
            bail!("rxsteer selftest: interrupted; nothing judged");
        }
        std::thread::sleep((t - Instant::now()).min(Duration::from_millis(50)));
    }
    Ok(())
}

/// The loader's count against what it was asked for, and against the server's.
fn loader_checks(
    r: &rxsteer_records::LoadResult,
    served: u64,
    asked: u64,
    skew: Option<(Figure, f64)>,
) -> Vec<Check> {
    let skewed = |f: Figure, v: f64| checks::skewed(skew, f, v);
    let finished = (r.requests + r.error_total()) as f64;
    let exact = rxsteer_records::selftest::Allowance::exact();
    vec![
        Subject::new(Figure::LoaderSent, "requests", "-n asked of rxload").judge(
            skewed(Figure::LoaderSent, finished),
            asked as f64,
            asked as f64,
            exact,
        ),
        // A failed request may or may not have reached the server.
        Subject::new(Figure::LoaderAnswered, "requests", "the server's count").judge(
            skewed(Figure::LoaderAnswered, r.requests as f64),
            served.saturating_sub(r.error_total()) as f64,
            served as f64,
            exact,
        ),
    ]
}

fn is_veth(iface: &str) -> bool {
    std::fs::read_link(format!("/sys/class/net/{iface}/device")).is_err()
}

/// The report as a table: one line a figure, the verdict last.
fn table(r: &SelftestReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let place = match &r.place {
        Place::Lab {
            requests,
            rate_per_s,
            connections,
        } => format!(
            "the lab ({}), {requests} requests at {rate_per_s}/s over {connections} connections",
            r.iface
        ),
        Place::Iface { name } => format!("{name}, live traffic watched"),
    };
    let _ = writeln!(
        out,
        "rxsteer selftest on {place}; Linux {}, {} CPUs; spans of {} s sampled every {} s",
        r.kernel, r.online_cpus, r.span_s, r.interval_s
    );
    if let Some(l) = &r.loaded {
        let _ = writeln!(out, "note: {l}");
    }
    if let Some(s) = &r.skewed {
        let _ = writeln!(out, "note: skewed on purpose: {s}");
    }
    let _ = writeln!(
        out,
        "{:<20} {:<26} {:>12} {:>12} {:>9} {:>9} {:<8} reference from",
        "figure", "cpu / of", "rxsteer", "reference", "diff", "±tol", "verdict"
    );
    for c in &r.checks {
        let what = match (c.cpu, c.of.as_str()) {
            (Some(cpu), _) => format!("CPU {cpu}"),
            (None, of) => of.to_string(),
        };
        // The figures' columns ("-" where nothing was compared), the verdict, what follows.
        let figures = || {
            let diff = c.difference_share().map_or_else(
                || number(c.difference, &c.unit),
                |s| format!("{:+.2}%", s * 100.0),
            );
            [
                number(c.rxsteer, &c.unit),
                number(c.reference, &c.unit),
                diff,
            ]
        };
        let dashes = || ["-".to_string(), "-".to_string(), "-".to_string()];
        let (shown, tolerance, verdict, tail) = match &c.verdict {
            Verdict::Skipped(why) if c.is_shown() => (
                figures(),
                "-".to_string(),
                "shown",
                format!("{} ({why})", c.source),
            ),
            Verdict::Skipped(why) => (dashes(), "-".to_string(), "skipped", why.clone()),
            v => (
                figures(),
                percent_or(c.tolerance, c.reference, &c.unit),
                if *v == Verdict::Pass { "pass" } else { "FAIL" },
                format!("{} ({})", c.source, c.allowed),
            ),
        };
        let [rxsteer, reference, diff] = shown;
        let line = format!(
            "{:<20} {:<26} {rxsteer:>12} {reference:>12} {diff:>9} {tolerance:>9} {verdict:<8} {tail}",
            c.figure.as_str(),
            what,
        );
        let _ = writeln!(out, "{line}");
    }
    let _ = writeln!(
        out,
        "{} passed, {} failed, {} skipped",
        r.passed(),
        r.failed().count(),
        r.skipped()
    );
    out
}

fn number(v: f64, unit: &str) -> String {
    if unit == "ms" {
        format!("{v:.2} ms")
    } else {
        format!("{v:.0}")
    }
}

fn percent_or(tol: f64, reference: f64, unit: &str) -> String {
    if reference != 0.0 {
        format!("{:.2}%", tol / reference.abs() * 100.0)
    } else {
        number(tol, unit)
    }
}
