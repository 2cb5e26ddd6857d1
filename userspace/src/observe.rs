//! Observing, shared by every command that observes (top, attach, lab): the flags, attaching
//! what counts where the driver received, the line that says observing has begun, and the
//! loop that samples every interval on a sampler thread into one sink: the live per-core view,
//! one JSON line or one plain line per interval.
use anyhow::{bail, Context, Result};
use rxsteer_records::{derived::DerivedLine, Observed, SampleLine};
use std::{
    io::IsTerminal,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc, Arc,
    },
    thread,
    time::{Duration, Instant},
};

use crate::{
    metrics::{BeforeScrape, Endpoint, Metrics},
    ports::{port_list, PortList},
    view,
};
use rxsteer_dataplane::{
    sampler::Sampler, Dataplane, FragsChoice, ObserveLevel, ObserverChoice, PortConfig, TcChoice,
    XdpModeChoice, RX_ACCOUNT,
};
use rxsteer_records::{BpfStatsChoice, Observer, Sample, TcAttached, XdpMode};

#[derive(clap::Args, Debug)]
pub struct ObserveArgs {
    /// Interface to observe (in the current network namespace).
    #[arg(long)]
    pub iface: String,
    /// Sampling interval (e.g. 1s, 500ms).
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// Print one JSON object per interval on stdout instead of the live view.
    #[arg(long)]
    pub json: bool,
    /// Stop after this many intervals, at least 1 (default: until Ctrl-C or SIGTERM).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,
    /// How to count where the driver received. auto: the receive tracepoints on the
    /// driver's CPU, no XDP program on the interface (cpumap steering counts with its own);
    /// xdp: the observe-only XDP program, which in skb mode makes the kernel skip GRO on the
    /// interface and copy every packet short of headroom (the cost is printed).
    #[arg(long, value_enum, default_value = "auto")]
    pub observer: ObserverChoice,
    /// XDP attach mode (of --observer xdp, and of cpumap steering): auto tries driver mode,
    /// then skb mode, and says which ran.
    #[arg(long, value_enum, default_value = "auto")]
    pub xdp_mode: XdpModeChoice,
    /// Multi-buffer aware XDP programs (auto: where the kernel accepts them). In skb mode
    /// the plain programs make the kernel linearise (copy) a nonlinear packet first.
    #[arg(long, value_enum, default_value = "auto")]
    pub xdp_frags: FragsChoice,
    /// The tc witnesses (where the stack ran, where replies left): TCX links where the
    /// kernel has them, else a clsact qdisc of rxsteer's own.
    #[arg(long, value_enum, default_value = "auto")]
    pub tc: TcChoice,
    /// What to watch beyond where the driver received and the softirq time per CPU.
    /// default: tc ingress (where the stack ran: the proof of RPS steering); full: tc egress
    /// too (where replies left, XPS), about as much again per packet; minimal: no tc program,
    /// for a production box. Each program's cost is shown while it runs.
    #[arg(long, value_enum, default_value = "default")]
    pub observe: ObserveLevel,
    /// The kernel's BPF run-time statistics, from which each program's cost is read: sampled
    /// holds them on for a tenth of each interval, in its middle (each program run costs two more
    /// clock reads while they are on), always for the whole run (every run counted).
    #[arg(long, value_enum, default_value = "sampled")]
    pub bpf_stats: BpfStatsChoice,
    /// TCP ports counted as HTTP (e.g. 8080,8081 or 8000-8010).
    #[arg(long, default_value = "8080", value_parser = port_list)]
    pub http_ports: PortList,
    /// TCP ports counted as ZAP.
    #[arg(long, default_value = "9653", value_parser = port_list)]
    pub zap_ports: PortList,
    /// Serve these figures as OpenMetrics for Prometheus at ADDR (`GET /metrics`): a bare PORT
    /// listens on loopback only, HOST:PORT where told. Off by default. Counters per CPU of
    /// receive packets, NET_RX and kthread time, interrupts, softnet drops, the NIC's drops and
    /// each BPF program's cost; on attach, whether the steering's values still hold.
    #[arg(long, value_name = "ADDR", value_parser = crate::metrics::parse_addr)]
    pub metrics: Option<std::net::SocketAddr>,
}

pub fn parse_interval(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?;
    if d < Duration::from_millis(50) || d > Duration::from_secs(3600) {
        return Err(format!("interval {s:?} must be between 50ms and 1h"));
    }
    Ok(d)
}

/// Attaches what counts where the driver received when steering does not count itself:
/// the receive tracepoints, or (asked for, or when the kernel lacks the tracepoints) the
/// observe-only XDP program. Never XDP in skb mode unless asked for by name.
pub fn attach_observer(
    dp: &mut Dataplane,
    iface: &str,
    choice: ObserverChoice,
    xdp: XdpModeChoice,
    frags: bool,
) -> Result<(Observer, Option<XdpMode>)> {
    let observe_with_xdp = |dp: &mut Dataplane, mode: XdpModeChoice| {
        let m = dp
            .attach_xdp(RX_ACCOUNT, frags, iface, mode)
            .map_err(xdp_mode_error(mode))?;
        if m == XdpMode::Skb {
            eprintln!(
                "rxsteer: --observer xdp in skb mode: the kernel skips GRO on the interface while \
                 it is attached and copies every packet short of headroom before the program \
                 runs; last measured cost: {}",
                rxsteer_report::OBSERVER_COST
            );
        }
        Ok::<_, anyhow::Error>((Observer::Xdp, Some(m)))
    };
    match choice {
        ObserverChoice::Xdp => observe_with_xdp(dp, xdp),
        ObserverChoice::Off => bail!("--observer off attaches nothing (see observe_only)"),
        ObserverChoice::Tracepoint => {
            dp.attach_driver_tracepoints(iface)?;
            Ok((Observer::Tracepoint, None))
        }
        ObserverChoice::Auto => match dp.attach_driver_tracepoints(iface) {
            Ok(()) => Ok((Observer::Tracepoint, None)),
            Err(e) => {
                eprintln!(
                    "rxsteer: --observer auto: {e:#}; observing with the XDP program in \
                     driver mode instead"
                );
                observe_with_xdp(dp, XdpModeChoice::Drv).map_err(|x| {
                    x.context(
                        "--observer auto: no receive tracepoints and no native XDP on this \
                         interface; --observer xdp --xdp-mode skb observes at the cost of a \
                         copy of every packet",
                    )
                })
            }
        },
    }
}

/// How the driver side was observed, for the line that says observing has begun.
fn observed_with(how: &Observed, program: &str) -> String {
    match (how.observer, how.xdp_mode) {
        (Observer::Xdp, Some(m)) => format!(
            "{program}{} in {} mode",
            if how.xdp_frags { " (frags)" } else { "" },
            m.long_name()
        ),
        (Observer::Off, _) => "no BPF program (CPU time from /proc only)".into(),
        _ => "the receive tracepoints (no XDP program on the interface)".into(),
    }
}

/// Says on stderr what runs where (one line), and what is missing or what the mode means.
pub fn say_observed(
    how: &Observed,
    iface: &str,
    program: &str,
    asked: XdpModeChoice,
    steering: &str,
) {
    // What the --observe level leaves out, in the same line: whoever reads only the first
    // line (a script waiting for "observing") must not break the pipe before a second.
    let lacks = match how.observer {
        Observer::Off => String::new(),
        _ => how
            .level
            .lacks()
            .iter()
            .map(|l| format!("; --observe {}: not counting {l}", how.level))
            .collect(),
    };
    eprintln!(
        "rxsteer: observing {iface} with {}{}, steering {steering}{lacks}",
        observed_with(how, program),
        match (&how.tc, how.level.counts_tx()) {
            (TcAttached::Tcx, true) => ", tc ingress/egress as TCX",
            (TcAttached::Tcx, false) => ", tc ingress as TCX",
            (TcAttached::Clsact, true) => ", tc ingress/egress on a clsact qdisc",
            (TcAttached::Clsact, false) => ", tc ingress on a clsact qdisc",
            (TcAttached::Unavailable(_), _) => "",
        },
    );

    if let TcAttached::Unavailable(why) = &how.tc {
        eprintln!("rxsteer: {why}");
    }
    if how.xdp_mode == Some(XdpMode::Skb) {
        if asked == XdpModeChoice::Auto {
            eprintln!("rxsteer: --xdp-mode auto: {iface} has no native XDP, so skb mode");
        }
        eprintln!("rxsteer: {}", XdpMode::Skb.meaning());
    }
}

impl ObserveArgs {
    /// Attaches the tc witnesses its `--observe` level asks for, and says what observes
    /// (`observer` in `xdp_mode`, where the driver received) with them.
    pub fn attach_witnesses(
        &self,
        dp: &mut Dataplane,
        observer: Observer,
        xdp_mode: Option<XdpMode>,
        frags: bool,
    ) -> Result<Observed> {
        Ok(Observed {
            observer,
            xdp_mode,
            xdp_frags: frags && xdp_mode.is_some(),
            tc: dp.attach_tc(&self.iface, self.tc, self.observe)?,
            level: self.observe,
        })
    }

    /// The `--metrics` socket, bound now: before anything is attached, so that a port in use
    /// is refused with nothing to undo.
    pub fn open_metrics(&self) -> Result<Option<Endpoint>> {
        self.metrics.map(Endpoint::bind).transpose()
    }

    /// [`observe`] as these flags ask: their interval, count, interface and output, and the
    /// endpoint `exporter` serves while it runs.
    pub fn show(
        &self,
        sampler: Sampler,
        how: Observed,
        stop: &Arc<AtomicBool>,
        exporter: Option<Exporter>,
    ) -> Result<()> {
        let metrics = exporter.map(|e| {
            let metrics = Arc::new(e.metrics);
            eprintln!(
                "rxsteer: OpenMetrics for Prometheus at http://{}/metrics",
                e.endpoint.addr
            );
            e.endpoint.serve(Arc::clone(&metrics), e.before_scrape);
            metrics
        });
        let output = Output {
            iface: &self.iface,
            how,
            json: self.json,
        };
        observe(sampler, self.interval, self.count, &output, stop, metrics)
    }
}

/// What `--metrics` serves: the bound socket, the figures the sampler adds to, and what runs
/// before each scrape (attach's check that its values still hold).
pub struct Exporter {
    endpoint: Endpoint,
    metrics: Metrics,
    before_scrape: Option<BeforeScrape>,
}

impl Exporter {
    /// The exporter of `endpoint`, naming what is observed: the interface, the observer, the
    /// steering.
    pub fn new(endpoint: Endpoint, iface: &str, how: &Observed, steer: &str) -> Self {
        let what = vec![
            ("iface".to_string(), iface.to_string()),
            ("observer".to_string(), how.observer.as_str().to_string()),
            ("steer".to_string(), steer.to_string()),
        ];
        Self {
            endpoint,
            metrics: Metrics::new(what, how.level.times_net_rx_waits()),
            before_scrape: None,
        }
    }

    /// With the steering gauges: each scrape reads back the values a session wrote, so
    /// irqbalance moving the vector or another tool rewriting a mask shows as
    /// `rxsteer_steering_in_place` falling to 0.
    pub fn watching(self, written: Vec<rxsteer_tune::apply::Change>) -> Self {
        Self {
            metrics: self.metrics.with_steering(),
            before_scrape: Some(Box::new(move |m| {
                m.set_drifted(crate::host::drifted(&written).len())
            })),
            ..self
        }
    }
}

/// Loads and attaches what `args.observer` says (nothing at all for `off`), and takes the
/// sampler's baseline before the caller says observing has begun: whatever arrives after that
/// line is in the first sample.
pub fn observe_only(
    args: &ObserveArgs,
    ports: &PortConfig,
) -> Result<(Option<Dataplane>, Observed, Sampler)> {
    if args.observer == ObserverChoice::Off {
        let sampler = Sampler::new(None, &args.iface, args.bpf_stats, args.interval)?;
        return Ok((None, Observed::no_bpf(), sampler));
    }
    let mut dp = Dataplane::load(ports)?;
    dp.attach_tracepoints()?;
    if args.observe.times_net_rx_waits() {
        dp.attach_softirq_raise()?;
    }
    let frags = use_frags(&dp, args.xdp_frags)?;
    let (observer, xdp_mode) =
        attach_observer(&mut dp, &args.iface, args.observer, args.xdp_mode, frags)?;
    let how = args.attach_witnesses(&mut dp, observer, xdp_mode, frags)?;
    let sampler = Sampler::new(
        Some(dp.take_counters()?),
        &args.iface,
        args.bpf_stats,
        args.interval,
    )?;
    Ok((Some(dp), how, sampler))
}

/// An XDP attach's error with the flag that asked for the mode, and for drv the way out.
pub fn xdp_mode_error(mode: XdpModeChoice) -> impl FnOnce(anyhow::Error) -> anyhow::Error {
    move |e| match mode {
        XdpModeChoice::Drv => anyhow::anyhow!(
            "--xdp-mode drv: {e:#}; --xdp-mode skb runs it in generic mode, auto picks what works"
        ),
        m => e.context(format!("--xdp-mode {m}")),
    }
}

/// `--tc` checked against this kernel before anything changes (the flag named).
pub fn check_tc(choice: TcChoice) -> Result<()> {
    rxsteer_dataplane::check_tc(choice).with_context(|| format!("--tc {choice}"))
}

/// Whether the frags-aware programs are used under `--xdp-frags` (the flag named when it
/// asks for what the kernel refused).
pub fn use_frags(dp: &Dataplane, choice: FragsChoice) -> Result<bool> {
    dp.use_frags(choice)
        .with_context(|| format!("--xdp-frags {choice}"))
}

/// Where samples go: JSON lines on stdout or the live view.
pub struct Output<'a> {
    pub iface: &'a str,
    pub how: Observed,
    pub json: bool,
}

/// Samples every `interval` on a sampler thread (from the baseline `sampler` took when it was
/// made) and shows each sample, until `count` samples, `stop`, or the user quits the view.
pub fn observe(
    sampler: Sampler,
    interval: Duration,
    count: Option<u64>,
    output: &Output,
    stop: &Arc<AtomicBool>,
    metrics: Option<Arc<Metrics>>,
) -> Result<()> {
    let (tx, rx) = mpsc::channel();
    let sampler_thread = spawn_sampler(sampler, interval, Arc::clone(stop), tx, metrics);
    let terminal = std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    let shown = if output.json {
        print_json(&rx, output.iface, &output.how, count, stop)
    } else if terminal {
        view::run(&rx, output.iface, &output.how, count, stop)
    } else {
        // From a script, cron, nohup or `ssh host rxsteer top` without -t: plain lines.
        eprintln!(
            "rxsteer: stdout or stdin is not a terminal: one line per interval (--json for JSON)"
        );
        print_text(&rx, count, stop)
    };
    stop.store(true, Ordering::SeqCst);
    let sampled = sampler_thread.join().expect("sampler thread panicked");
    shown.and(sampled)
}

fn spawn_sampler(
    mut sampler: Sampler,
    interval: Duration,
    stop: Arc<AtomicBool>,
    tx: mpsc::Sender<Sample>,
    metrics: Option<Arc<Metrics>>,
) -> thread::JoinHandle<Result<()>> {
    thread::spawn(move || {
        let mut next = Instant::now() + interval;
        while !stop.load(Ordering::SeqCst) {
            // Short sleeps so Ctrl-C is seen quickly; deadlines keep intervals from drifting.
            // The statistics' window (sampled) is kept in the middle of each interval.
            let now = Instant::now();
            let mut wake = next;
            if let Some((opens, closes)) = sampler.stats_window_around(next) {
                if now >= closes {
                    sampler.close_stats_window()?;
                } else if now >= opens {
                    sampler.open_stats_window()?;
                    wake = closes;
                } else {
                    wake = opens;
                }
            }
            if now < next {
                thread::sleep((wake.max(now) - now).min(Duration::from_millis(50)));
                continue;
            }
            next += interval;
            let sample = sampler.sample()?;
            if let Some(m) = &metrics {
                m.record(&sample);
            }
            if tx.send(sample).is_err() {
                break;
            }
        }
        Ok(())
    })
}

/// One plain line per interval: per CPU, driver-side (rx) and stack packets/s, NET_RX and kthread share,
/// busy share.
fn print_text(rx: &mpsc::Receiver<Sample>, count: Option<u64>, stop: &AtomicBool) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) && count.is_none_or(|c| n < c) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(s) => {
                writeln!(out, "{}", text_line(&s))?;
                out.flush()?;
                n += 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(())
}

/// CPUs a plain line names one by one; past that, the busiest of them and a count of the rest.
const TEXT_CPUS: usize = 8;

fn text_line(s: &Sample) -> String {
    let per_s = |n: u64| n as f64 / s.interval_s.max(1e-9);
    let pct = |ns: u64| ns as f64 / (s.interval_s.max(1e-9) * 1e7);
    // Receive work ranks the CPUs (ns, so it dominates); the busy share (0..1) breaks ties.
    let busy: Vec<f64> = s
        .cpus
        .iter()
        .map(|c| c.receive_ns() as f64 + c.time.busy() as f64 / c.time.total().max(1) as f64)
        .collect();
    let shown = if s.cpus.len() <= TEXT_CPUS {
        (0..s.cpus.len()).collect()
    } else {
        view::busiest(&busy, TEXT_CPUS)
    };
    let mut cpus: Vec<String> = shown
        .iter()
        .map(|&i| &s.cpus[i])
        .map(|c| {
            format!(
                "cpu{} rx {:.0}/s stack {:.0}/s NET_RX {:.1}% kthr {:.1}% busy {:.0}%",
                c.cpu,
                per_s(c.packets),
                per_s(c.stack_packets),
                pct(c.net_rx_ns),
                pct(c.kthread_ns()),
                c.time.busy() as f64 / c.time.total().max(1) as f64 * 100.0
            )
        })
        .collect();
    if shown.len() < s.cpus.len() {
        cpus.push(format!(
            "+{} quieter CPUs (--json has every CPU)",
            s.cpus.len() - shown.len()
        ));
    }
    if let Some(cost) = s.bpf_cost() {
        cpus.push(cost.line());
    }
    format!("t {:>6.1}s  {}", s.t_s, cpus.join("  |  "))
}

fn print_json(
    rx: &mpsc::Receiver<Sample>,
    iface: &str,
    how: &Observed,
    count: Option<u64>,
    stop: &AtomicBool,
) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) && count.is_none_or(|c| n < c) {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(sample) => {
                // The raw columns and the derived figures run.json carries, by one function.
                let line = DerivedLine::of(SampleLine::new(iface, how, sample));
                serde_json::to_writer(&mut out, &line)?;
                out.write_all(b"\n")?;
                out.flush()?;
                n += 1;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_line_per_interval() {
        let s = Sample {
            t_s: 1.5,
            interval_s: 0.5,
            cpus: vec![rxsteer_dataplane::sampler::CpuSample {
                cpu: 3,
                packets: 50,
                stack_packets: 25,
                net_rx_ns: 50_000_000,
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            text_line(&s),
            "t    1.5s  cpu3 rx 100/s stack 50/s NET_RX 10.0% kthr 0.0% busy 0%"
        );
    }

    /// The ports counted by default are the ports each protocol is served on by default.
    #[test]
    fn default_ports_are_each_protocols_own() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            o: ObserveArgs,
        }
        let a = <Cli as clap::Parser>::try_parse_from(["top", "--iface", "lo"]).unwrap();
        assert_eq!(a.o.http_ports.0, [rxsteer_records::Proto::Http.spec().port]);
        assert_eq!(a.o.zap_ports.0, [rxsteer_records::Proto::Zap.spec().port]);
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_interval("250ms").unwrap(), Duration::from_millis(250));
        assert!(parse_interval("0s").unwrap_err().contains("between"));
        assert!(parse_interval("soon").unwrap_err().contains("\"soon\""));
    }
}
