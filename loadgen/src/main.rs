//! rxload: the HTTP/1.1 and ZAP load generator. Closed loop (one request in flight per
//! connection), warm-up excluded, HDR latency merged across threads, every response validated,
//! errors counted by kind, client allocations per request and the tool's own CPU time.
mod bind;
mod conn;
mod cputime;
mod hgrm;
mod live;
mod scenario;
mod stats;
mod target;
mod uring;

use anyhow::{bail, Context, Result};
use clap::Parser;
use std::{
    cell::RefCell,
    rc::Rc,
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use conn::Phase;
use scenario::{Custom, Scenario};
use stats::{Stats, ERROR_KINDS};

#[global_allocator]
static GLOBAL: rxsteer_alloc::Counting = rxsteer_alloc::Counting;

#[derive(Parser, Debug)]
#[command(
    name = "rxload",
    version,
    about = "HTTP/1.1 and ZAP load generator (closed loop, HDR latency, validated responses)"
)]
struct Args {
    /// http://host:port/path or zap://host:port/path
    target: String,
    /// Connections, one request in flight each.
    #[arg(short, long, default_value = "125", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    connections: u32,
    /// Threads (default: online CPUs, at most one per connection).
    #[arg(short, long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    threads: Option<u32>,
    /// Measured duration (default 10s). With -n it is the hard deadline: the run ends at N
    /// requests or at this time, whichever comes first (-n alone: 10 minutes).
    #[arg(short, long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// HTTP pipelining: this many requests written back to back per connection, their
    /// responses read in order (1 = one request in flight).
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pipeline: u32,
    /// Stop after this many measured requests, answered or failed.
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..))]
    requests: Option<u64>,
    /// The share of measured requests that may fail before the run exits non-zero, in
    /// percent (0-100; default 0: any failure). The error kinds and counts are printed and
    /// in --json either way.
    #[arg(long, default_value = "0", value_parser = parse_percent)]
    max_errors: f64,
    /// Open loop: this many requests per second in total, on a fixed schedule spread over
    /// the connections; latency counts from each request's intended send time.
    #[arg(long, value_parser = parse_rate)]
    rate: Option<f64>,
    /// Warm-up before measuring, excluded from every figure.
    #[arg(long, default_value = "1s", value_parser = parse_duration_zero)]
    warmup: Duration,
    #[arg(long, value_enum, default_value = "health")]
    scenario: Scenario,
    /// Echo or upload body: bytes, or tiny (16), small (256), chat (~800 B JSON), medium
    /// (4 KiB), large (64 KiB). Default: large for upload, tiny otherwise.
    #[arg(long, value_parser = scenario::body_size)]
    body_size: Option<usize>,
    /// Explicit method (the response is then only checked for a 2xx status).
    #[arg(short, long)]
    method: Option<String>,
    /// Extra header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_parser = parse_header)]
    headers: Vec<(String, String)>,
    /// Explicit body: a literal, or @file.
    #[arg(long)]
    body: Option<String>,
    /// Write every figure as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Write the latency distribution in HdrHistogram's percentile text format (ms).
    #[arg(long)]
    hgrm: Option<std::path::PathBuf>,
    /// Write one JSON line per interval while running (req/s, errors, p50/p99/max).
    #[arg(long)]
    live: Option<std::path::PathBuf>,
    /// Source addresses (and port ranges) to connect from, round-robin over the
    /// connections: ADDR[:LOW-HIGH],... (e.g. 10.0.0.2:40000-40999,10.0.0.3).
    #[arg(long, value_parser = bind::parse)]
    bind: Option<bind::Bind>,
    /// I/O engine: tokio (epoll; every mode) or uring (one io_uring per thread for the closed
    /// loop with one request in flight: fewer system calls per request).
    #[arg(long, value_enum, default_value = "tokio")]
    io: Io,
    /// Interval of --live lines and of the terminal progress line.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    live_interval: Duration,
}

use rxsteer_records::LoaderIo as Io;

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?;
    if d.is_zero() {
        return Err(format!("{s:?}: must be more than 0"));
    }
    Ok(d)
}

fn parse_duration_zero(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 100e6 => Ok(r),
        _ => Err(format!("--rate {s:?}: requests per second, more than 0")),
    }
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not 'Name: value'"))?;
    let k = k.trim();
    if k.is_empty()
        || k.bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err(format!("{s:?}: bad header name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

fn main() {
    match run(Args::parse()) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("rxload: {e:#}");
            std::process::exit(2);
        }
    }
}

fn run(args: Args) -> Result<i32> {
    let target = target::parse(&args.target)?;
    let body = match args.body.as_deref() {
        Some(b) => Some(match b.strip_prefix('@') {
            Some(path) => std::fs::read(path).with_context(|| format!("--body @{path}"))?,
            None => b.as_bytes().to_vec(),
        }),
        None => None,
    };
    let custom = Custom {
        method: args.method.as_deref(),
        headers: &args.headers,
        body,
    };
    let body_size = args
        .body_size
        .unwrap_or_else(|| scenario::default_body_size(args.scenario));
    let request = scenario::build(&target, args.scenario, body_size, &custom)?;
    let batch: Vec<u8> = request.bytes.repeat(args.pipeline as usize);
    let online = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let threads = args.threads.unwrap_or(online).min(args.connections);
    if let Some(b) = &args.bind {
        b.check(target.addr, args.connections)
            .map_err(anyhow::Error::msg)?;
    }
    let bind = args.bind.clone().map(Arc::new);
    if args.io == Io::Uring && (args.pipeline > 1 || args.rate.is_some() || args.bind.is_some()) {
        bail!("--io uring runs the closed loop with one request in flight: it does not take --pipeline, --rate or --bind");
    }
    let io = args.io;
    let duration = match (args.duration, args.requests) {
        (Some(d), _) => d,
        (None, Some(_)) => Duration::from_secs(600),
        (None, None) => Duration::from_secs(10),
    };
    if args.rate.is_some() && args.duration.is_none() {
        bail!("--rate needs -d: an open-loop run is timed");
    }
    if args.pipeline > 1 && args.rate.is_some() {
        bail!("--pipeline with --rate: an open-loop schedule is per request; use one or the other");
    }
    if args.pipeline > 1 && target.proto == target::Proto::Zap {
        bail!("--pipeline is for HTTP: the ZAP reference client keeps one request in flight");
    }

    let start = Instant::now();
    let phase = Arc::new(Phase {
        measure_from: start + args.warmup,
        measure_until: start + args.warmup + duration,
        stop: Default::default(),
        limit: args.requests,
        measured: Default::default(),
        limit_reached: Default::default(),
        release: Default::default(),
    });
    let live_file = match &args.live {
        Some(p) => {
            Some(std::fs::File::create(p).with_context(|| format!("--live {}", p.display()))?)
        }
        None => None,
    };
    let counters: Vec<Arc<live::LiveCounters>> =
        (0..threads).map(|_| live::LiveCounters::new()).collect();
    let mut handles = Vec::new();
    for t in 0..threads {
        // Live counters cost a lock per request: kept only when someone reads them.
        let live = (args.live.is_some() || unsafe { libc::isatty(2) } == 1)
            .then(|| counters[t as usize].clone());
        let conns = args.connections / threads + u32::from(t < args.connections % threads);
        let (req, phase, addr) = (request.clone(), phase.clone(), target.addr);
        let (batch, pipeline) = (batch.clone(), args.pipeline as usize);
        let sources: Vec<Option<bind::Source>> = (0..conns)
            .map(|j| {
                bind.as_ref().map(|b| bind::Source {
                    bind: b.clone(),
                    index: t as u64 + j as u64 * threads as u64,
                    connections: args.connections as u64,
                })
            })
            .collect();
        // Open loop: each connection sends every `c / rate` seconds, the connections
        // staggered evenly so the total is `rate` per second.
        let schedules: Vec<Option<conn::Schedule>> = (0..conns)
            .map(|j| {
                args.rate.map(|rate| {
                    let index = t as u64 + j as u64 * threads as u64;
                    let every = Duration::from_secs_f64(args.connections as f64 / rate);
                    conn::Schedule {
                        first: start + Duration::from_secs_f64(index as f64 / rate),
                        every,
                    }
                })
            })
            .collect();
        handles.push(
            std::thread::Builder::new()
                .name(format!("rxload-{t}"))
                .spawn(move || -> Result<Stats> {
                    if io == Io::Uring {
                        let stats = RefCell::new(Stats::new());
                        let n = schedules.len();
                        uring::run(n, addr, &req, &phase, &stats, live.as_deref())?;
                        return Ok(stats.into_inner());
                    }
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_io()
                        .enable_time()
                        .build()?;
                    let local = tokio::task::LocalSet::new();
                    let stats = Rc::new(RefCell::new(Stats::new()));
                    let req = Rc::new(req);
                    let batch: Rc<[u8]> = Rc::from(batch);
                    local.block_on(&rt, async {
                        let tasks: Vec<_> = schedules
                            .into_iter()
                            .zip(sources)
                            .map(|(sch, source)| {
                                tokio::task::spawn_local(conn::run(
                                    req.clone(),
                                    batch.clone(),
                                    pipeline,
                                    addr,
                                    phase.clone(),
                                    stats.clone(),
                                    sch,
                                    live.clone(),
                                    source,
                                ))
                            })
                            .collect();
                        let all = async {
                            for task in tasks {
                                // A connection task that panicked is a bug: fail the run.
                                if let Err(e) = task.await {
                                    if e.is_panic() {
                                        std::panic::resume_unwind(e.into_panic());
                                    }
                                }
                            }
                        };
                        // The deadline is hard: once the window has closed, a connection
                        // still waiting on the network (a connect or read that would only
                        // time out in 10 s) gets 200 ms, then is dropped with the LocalSet.
                        let released = async {
                            phase.idle_until_released().await;
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        };
                        tokio::select! {
                            _ = all => {}
                            _ = released => {}
                        }
                    });
                    drop(local);
                    Ok(Rc::try_unwrap(stats)
                        .map_err(|_| anyhow::anyhow!("stats still shared"))?
                        .into_inner())
                })?,
        );
    }
    // The measured window: allocations and CPU time between its edges. The live reporter
    // ticks at interval boundaries throughout, allocating nothing.
    let mut reporter = live::Reporter::new(counters, live_file, start);
    let mut next_tick = start + args.live_interval;
    let mut opened: Option<(rxsteer_alloc::Counts, f64, Instant)> = None;
    loop {
        let now = Instant::now();
        let limit = phase.limit_reached.load(Ordering::Relaxed);
        if opened.is_none() && (now >= phase.measure_from || limit) {
            opened = Some((rxsteer_alloc::totals(), cputime::cpu_seconds(), now));
        }
        if now >= phase.measure_until || limit {
            break;
        }
        if reporter.active() && now >= next_tick {
            reporter.tick(now, opened.is_some())?;
            next_tick += args.live_interval;
        }
        let until = [phase.measure_until, next_tick, phase.measure_from]
            .into_iter()
            .filter(|t| *t > now)
            .min()
            .unwrap_or(now);
        std::thread::sleep(
            until
                .saturating_duration_since(now)
                .min(Duration::from_millis(5)),
        );
    }
    let (a0, cpu0, t0) = opened.expect("the window opens before it closes");
    let (a1, cpu1, elapsed) = (
        rxsteer_alloc::totals(),
        cputime::cpu_seconds(),
        t0.elapsed().as_secs_f64(),
    );
    phase.release_all();
    reporter.finish();
    let mut total = Stats::new();
    for h in handles {
        total.merge(&h.join().expect("load thread panicked")?);
    }
    let report = Report::new(
        &args,
        &target,
        threads,
        &total,
        elapsed,
        a1.since(a0),
        cpu1 - cpu0,
        request.bytes.len(),
    );
    print!("{}", report.human());
    if let Some(path) = &args.hgrm {
        std::fs::write(path, hgrm::percentile_distribution(&total.latency_us))
            .with_context(|| format!("--hgrm {}", path.display()))?;
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report.json())?)
            .with_context(|| format!("--json {}", path.display()))?;
    }
    let failed: u64 = total.errors.iter().sum();
    let share = failed as f64 * 100.0 / (failed + total.ok).max(1) as f64;
    if total.ok == 0 || share > args.max_errors {
        eprintln!(
            "rxload: {failed} of {} measured requests failed ({share:.2} %, --max-errors {} %): {}",
            failed + total.ok,
            args.max_errors,
            error_summary(&total)
        );
        return Ok(1);
    }
    Ok(0)
}

/// `connect 3, status 12`: the kinds that occurred.
fn error_summary(s: &Stats) -> String {
    let kinds: Vec<String> = ERROR_KINDS
        .iter()
        .zip(s.errors)
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if kinds.is_empty() {
        "no errors, but no request succeeded".into()
    } else {
        kinds.join(", ")
    }
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("{s:?}: a percentage from 0 to 100"));
    }
    Ok(v)
}

struct Report<'a> {
    args: &'a Args,
    target: &'a target::Target,
    threads: u32,
    stats: &'a Stats,
    elapsed: f64,
    allocated: rxsteer_alloc::Counts,
    cpu: f64,
    request_bytes: usize,
}

impl<'a> Report<'a> {
    #[allow(clippy::too_many_arguments)]
    fn new(
        args: &'a Args,
        target: &'a target::Target,
        threads: u32,
        stats: &'a Stats,
        elapsed: f64,
        allocated: rxsteer_alloc::Counts,
        cpu: f64,
        request_bytes: usize,
    ) -> Self {
        Self {
            args,
            target,
            threads,
            stats,
            elapsed,
            allocated,
            cpu,
            request_bytes,
        }
    }

    /// Open loop: did the run deliver at least 95 % of the target rate?
    fn rate_reached(&self) -> bool {
        self.args.rate.is_none_or(|r| self.rps() >= 0.95 * r)
    }

    fn rps(&self) -> f64 {
        self.stats.ok as f64 / self.elapsed.max(1e-9)
    }

    fn per_request(&self, v: u64) -> f64 {
        v as f64 / self.stats.ok.max(1) as f64
    }

    fn quantiles(&self) -> Vec<(&'static str, u64)> {
        let h = &self.stats.latency_us;
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        vec![
            ("p50", q(0.5)),
            ("p90", q(0.9)),
            ("p99", q(0.99)),
            ("p99.9", q(0.999)),
            ("p99.99", q(0.9999)),
            ("max", h.max()),
        ]
    }

    fn human(&self) -> String {
        let s = self.stats;
        let mut o = format!(
            "{:?} {} {:?} c={} t={} measured {:.2}s (warm-up {:?} excluded)\n",
            self.target.proto,
            self.args.target,
            self.args.scenario,
            self.args.connections,
            self.threads,
            self.elapsed,
            self.args.warmup
        );
        o += &format!(
            "Reqs/sec   {:.0}\nRequests   {} ok, {} errors, {} reconnects\n",
            self.rps(),
            s.ok,
            s.total_errors(),
            s.reconnects
        );
        if let Some(rate) = self.args.rate {
            let verdict = if self.rate_reached() {
                "reached"
            } else {
                "NOT reached"
            };
            o += &format!("Rate       open loop, target {rate:.0}/s: {verdict} (latency from intended send times)\n");
        }
        o += &format!(
            "Transfer   {:.2} MB/s in, {:.2} MB/s out\n",
            s.bytes_in as f64 / self.elapsed / 1e6,
            s.bytes_out as f64 / self.elapsed / 1e6
        );
        o += &format!("Latency    mean {:.0}us", s.latency_us.mean());
        for (name, v) in self.quantiles() {
            o += &format!("  {name} {v}us");
        }
        o += "\nStatus    ";
        for (code, n) in s.status.iter().enumerate().filter(|(_, n)| **n > 0) {
            o += &format!(" {code}: {n}");
        }
        o += "\nErrors    ";
        for (kind, n) in ERROR_KINDS.iter().zip(s.errors) {
            o += &format!(" {kind} {n}");
        }
        o += &format!(
            "\nClient     {:.3} allocs/req, {:.1} B/req, {:.2} CPU-s ({:.0} req per CPU-s), {} B per request on the wire\n",
            self.per_request(self.allocated.allocs),
            self.per_request(self.allocated.bytes),
            self.cpu,
            s.ok as f64 / self.cpu.max(1e-9),
            self.request_bytes
        );
        o
    }

    /// The latency histogram's recorded buckets as [value_us, count] pairs: what another
    /// program needs to merge several loaders' histograms exactly (same precision, 3 digits).
    fn buckets(&self) -> Vec<[u64; 2]> {
        self.stats
            .latency_us
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect()
    }

    fn json(&self) -> rxsteer_records::LoadResult {
        use rxsteer_records::load::{Client, Latency, LoadResult, OpenLoop, Quantiles};
        let s = self.stats;
        let q: std::collections::BTreeMap<&str, u64> = self.quantiles().into_iter().collect();
        LoadResult {
            target: self.args.target.clone(),
            proto: Some(self.target.proto),
            scenario: Some(self.args.scenario),
            connections: self.args.connections,
            threads: self.threads,
            measured_s: self.elapsed,
            io: Some(self.args.io),
            warmup_s: self.args.warmup.as_secs_f64(),
            requests: s.ok,
            req_per_s: self.rps(),
            open_loop: self.args.rate.map(|r| OpenLoop {
                target_per_s: r,
                reached: self.rate_reached(),
            }),
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            request_wire_bytes: self.request_bytes as u64,
            latency_us: Latency {
                mean: s.latency_us.mean(),
                quantiles: Quantiles {
                    p50: q["p50"],
                    p90: q["p90"],
                    p99: q["p99"],
                    p999: q["p99.9"],
                    p9999: q["p99.99"],
                    max: q["max"],
                },
                histogram: self.buckets(),
            },
            status: s
                .status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(c, n)| (c as u16, *n))
                .collect(),
            errors: ERROR_KINDS
                .iter()
                .zip(s.errors)
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
            reconnects: s.reconnects,
            max_errors_percent: self.args.max_errors,
            client: Client {
                allocs_per_request: self.per_request(self.allocated.allocs),
                bytes_per_request: self.per_request(self.allocated.bytes),
                cpu_s: self.cpu,
                requests_per_cpu_s: s.ok as f64 / self.cpu.max(1e-9),
            },
            loaders: None,
        }
    }
}
