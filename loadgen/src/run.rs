//! One run: the request and its checks from the flags, one thread per share of the
//! connections, the measured window watched from the main thread (allocations and CPU time
//! between its edges), then every thread's figures merged, printed and stored.
use anyhow::{bail, Context, Result};
use std::{
    cell::RefCell,
    rc::Rc,
    sync::{atomic::Ordering, Arc},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crate::{
    bind,
    cli::{Args, Io},
    conn::{self, Phase},
    cputime, hgrm, live,
    output::{error_summary, Report},
    scenario::{self, Custom, Request},
    stats::Stats,
    target::{self, Target},
    uring,
};

/// What the flags ask for, checked before any connection opens.
struct Plan {
    target: Target,
    request: Request,
    /// The request repeated `--pipeline` times.
    batch: Vec<u8>,
    threads: u32,
    duration: Duration,
    bind: Option<Arc<bind::Bind>>,
}

fn plan(args: &Args) -> Result<Plan> {
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
    if let Some(b) = &args.bind {
        b.check(target.addr, args.connections)
            .map_err(anyhow::Error::msg)?;
    }
    if args.io == Io::Uring && (args.pipeline > 1 || args.rate.is_some() || args.bind.is_some()) {
        bail!("--io uring runs the closed loop with one request in flight: it does not take --pipeline, --rate or --bind");
    }
    if args.rate.is_some() && args.duration.is_none() {
        bail!("--rate needs -d: an open-loop run is timed");
    }
    if args.pipeline > 1 && args.rate.is_some() {
        bail!("--pipeline with --rate: an open-loop schedule is per request; use one or the other");
    }
    if args.pipeline > 1 && target.proto == target::Proto::Zap {
        bail!("--pipeline is for HTTP: the ZAP reference client keeps one request in flight");
    }
    Ok(Plan {
        request,
        batch,
        threads: args.threads.unwrap_or(online).min(args.connections),
        duration: match (args.duration, args.requests) {
            (Some(d), _) => d,
            (None, Some(_)) => Duration::from_secs(600),
            (None, None) => Duration::from_secs(10),
        },
        bind: args.bind.clone().map(Arc::new),
        target,
    })
}

/// Thread `t`'s connections: their source addresses (`--bind`) and open-loop schedules.
struct Share {
    sources: Vec<Option<bind::Source>>,
    schedules: Vec<Option<conn::Schedule>>,
}

fn share(args: &Args, plan: &Plan, t: u32, start: Instant) -> Share {
    let threads = plan.threads;
    let conns = args.connections / threads + u32::from(t < args.connections % threads);
    let index = |j: u32| t as u64 + j as u64 * threads as u64;
    Share {
        sources: (0..conns)
            .map(|j| {
                plan.bind.as_ref().map(|b| bind::Source {
                    bind: b.clone(),
                    index: index(j),
                    connections: args.connections as u64,
                })
            })
            .collect(),
        // Open loop: each connection sends every `c / rate` seconds, the connections
        // staggered evenly so the total is `rate` per second.
        schedules: (0..conns)
            .map(|j| {
                args.rate.map(|rate| conn::Schedule {
                    first: start + Duration::from_secs_f64(index(j) as f64 / rate),
                    every: Duration::from_secs_f64(args.connections as f64 / rate),
                })
            })
            .collect(),
    }
}

/// One load thread on tokio: a task per connection on a current-thread runtime.
fn tokio_thread(
    share: Share,
    req: Request,
    batch: Vec<u8>,
    pipeline: usize,
    addr: std::net::SocketAddr,
    phase: Arc<Phase>,
    live: Option<Arc<live::LiveCounters>>,
) -> Result<Stats> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let stats = Rc::new(RefCell::new(Stats::new()));
    let req = Rc::new(req);
    let batch: Rc<[u8]> = Rc::from(batch);
    local.block_on(&rt, async {
        let tasks: Vec<_> = share
            .schedules
            .into_iter()
            .zip(share.sources)
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
        // The deadline is hard: once the window has closed, a connection still waiting on
        // the network (a connect or read that would only time out in 10 s) gets 200 ms, then
        // is dropped with the LocalSet.
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
}

/// A test hook: `RXLOAD_INJECT_PANIC_MS=N` makes load thread 0 panic N ms after it starts,
/// so the tests can check that a dead thread ends the run. Read once per thread, before any
/// connection: nothing per request.
const INJECT_PANIC: &str = "RXLOAD_INJECT_PANIC_MS";

fn injected_failure(t: u32) -> Option<Duration> {
    let ms = std::env::var(INJECT_PANIC).ok()?.parse().ok()?;
    (t == 0).then(|| Duration::from_millis(ms))
}

fn spawn_thread(
    args: &Args,
    plan: &Plan,
    t: u32,
    start: Instant,
    phase: &Arc<Phase>,
    live: Option<Arc<live::LiveCounters>>,
) -> Result<JoinHandle<Result<Stats>>> {
    let share = share(args, plan, t, start);
    let (req, batch, phase, addr) = (
        plan.request.clone(),
        plan.batch.clone(),
        phase.clone(),
        plan.target.addr,
    );
    let (io, pipeline) = (args.io, args.pipeline as usize);
    Ok(std::thread::Builder::new()
        .name(format!("rxload-{t}"))
        .spawn(move || -> Result<Stats> {
            if let Some(after) = injected_failure(t) {
                std::thread::sleep(after);
                panic!("injected failure ({INJECT_PANIC}): load thread {t} stops");
            }
            if io == Io::Uring {
                let stats = RefCell::new(Stats::new());
                let n = share.schedules.len();
                uring::run(n, addr, &req, &phase, &stats, live.as_deref())?;
                return Ok(stats.into_inner());
            }
            tokio_thread(share, req, batch, pipeline, addr, phase, live)
        })?)
}

/// What the measured window cost this process: allocations, CPU seconds, wall seconds.
struct Window {
    allocated: rxsteer_alloc::Counts,
    cpu_s: f64,
    elapsed_s: f64,
}

/// Watches the window from the main thread: opens it at the end of the warm-up (or when
/// `-n` is reached first), closes it at its end or at `-n`; the live reporter ticks at
/// interval boundaries throughout, allocating nothing.
fn watch_window(
    phase: &Phase,
    reporter: &mut live::Reporter,
    args: &Args,
    start: Instant,
    threads: &[JoinHandle<Result<Stats>>],
) -> Result<Window> {
    let mut next_tick = start + args.live_interval;
    let mut opened: Option<(rxsteer_alloc::Counts, f64, Instant)> = None;
    loop {
        let now = Instant::now();
        let limit = phase.limit_reached.load(Ordering::Relaxed);
        if opened.is_none() && (now >= phase.measure_from || limit) {
            opened = Some((rxsteer_alloc::totals(), cputime::cpu_seconds(), now));
        }
        // A load thread that ended before the window did died (a panic or an error): the
        // run ends now, and `run` says which and why.
        if now >= phase.measure_until || limit || threads.iter().any(|h| h.is_finished()) {
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
    // A thread that died during the warm-up closes a window that never opened: empty.
    let (a0, cpu0, t0) = opened.unwrap_or_else(|| {
        (
            rxsteer_alloc::totals(),
            cputime::cpu_seconds(),
            Instant::now(),
        )
    });
    Ok(Window {
        allocated: rxsteer_alloc::totals().since(a0),
        cpu_s: cputime::cpu_seconds() - cpu0,
        elapsed_s: t0.elapsed().as_secs_f64(),
    })
}

/// The run; its exit code: 0, or 1 when more requests failed than `--max-errors` allows.
pub fn run(args: Args) -> Result<i32> {
    let plan = plan(&args)?;
    let start = Instant::now();
    let phase = Arc::new(Phase {
        measure_from: start + args.warmup,
        measure_until: start + args.warmup + plan.duration,
        stop: Default::default(),
        limit: args.requests,
        issued: Default::default(),
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
    let counters: Vec<Arc<live::LiveCounters>> = (0..plan.threads)
        .map(|_| live::LiveCounters::new())
        .collect();
    // Live counters cost a lock per request: kept only when someone reads them.
    // SAFETY: isatty has no preconditions.
    let shown = args.live.is_some() || unsafe { libc::isatty(2) } == 1;
    let handles = (0..plan.threads)
        .map(|t| {
            let live = shown.then(|| counters[t as usize].clone());
            spawn_thread(&args, &plan, t, start, &phase, live)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut reporter = live::Reporter::new(counters, live_file, start);
    let window = watch_window(&phase, &mut reporter, &args, start, &handles)?;
    phase.release_all();
    reporter.finish();
    let mut total = Stats::new();
    let mut died = Vec::new();
    for (t, h) in handles.into_iter().enumerate() {
        match h.join() {
            Ok(Ok(stats)) => total.merge(&stats),
            Ok(Err(e)) => died.push(format!("load thread {t} failed: {e:#}")),
            Err(panic) => died.push(format!("load thread {t} panicked: {}", panic_text(&*panic))),
        }
    }
    let code = report(&args, &plan, &total, &window)?;
    if died.is_empty() {
        return Ok(code);
    }
    // The figures above are the surviving threads'; the run itself failed.
    eprintln!(
        "rxload: {}; the figures above are from the other {} of {} threads",
        died.join("; "),
        plan.threads as usize - died.len(),
        plan.threads
    );
    Ok(EXIT_THREAD_DIED)
}

/// The exit code of a run a load thread did not finish (1: too many failed requests; 2: the
/// run could not start).
pub const EXIT_THREAD_DIED: i32 = 3;

fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(no message)")
}

/// Prints and stores the figures; the exit code.
fn report(args: &Args, plan: &Plan, total: &Stats, w: &Window) -> Result<i32> {
    let report = Report {
        args,
        target: &plan.target,
        threads: plan.threads,
        stats: total,
        elapsed: w.elapsed_s,
        allocated: w.allocated,
        cpu: w.cpu_s,
        request_bytes: plan.request.bytes.len(),
    };
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
            error_summary(total)
        );
        return Ok(1);
    }
    Ok(0)
}
