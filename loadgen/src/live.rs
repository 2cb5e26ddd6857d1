//! Live figures while the run goes on: per-thread counters and an interval histogram that the
//! main thread reads, merges and resets each interval. It writes one JSON line per interval
//! (`--live FILE`, for scripts and `cargo xtask run`) and a progress line on a terminal.
//! Everything is preallocated: the main thread must not allocate inside the measured window,
//! whose allocations are the client's figure.
use hdrhistogram::Histogram;
use rxsteer_records::{LiveLine, Phase};
use std::{
    io::Write,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Instant,
};

/// One load thread's live counters.
pub struct LiveCounters {
    pub ok: AtomicU64,
    pub errors: AtomicU64,
    pub interval: Mutex<Histogram<u64>>,
}

impl LiveCounters {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            ok: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            interval: Mutex::new(Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds")),
        })
    }

    pub fn record_ok(&self, us: u64) {
        self.ok.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut h) = self.interval.lock() {
            let _ = h.record(us);
        }
    }

    pub fn record_error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }
}

/// The main thread's side.
pub struct Reporter {
    threads: Vec<Arc<LiveCounters>>,
    merged: Histogram<u64>,
    last: (Instant, u64, u64),
    start: Instant,
    buf: Vec<u8>,
    out: Option<std::fs::File>,
    tty: bool,
}

impl Reporter {
    pub fn new(
        threads: Vec<Arc<LiveCounters>>,
        out: Option<std::fs::File>,
        start: Instant,
    ) -> Self {
        // SAFETY: isatty has no preconditions.
        let tty = unsafe { libc::isatty(2) } == 1;
        Self {
            threads,
            merged: Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds"),
            last: (start, 0, 0),
            start,
            buf: Vec::with_capacity(512),
            out,
            tty,
        }
    }

    pub fn active(&self) -> bool {
        self.out.is_some() || self.tty
    }

    /// Emits the interval since the last call.
    pub fn tick(&mut self, now: Instant, measuring: bool) -> std::io::Result<()> {
        let (ok, errors) = self.threads.iter().fold((0, 0), |(o, e), t| {
            (
                o + t.ok.load(Ordering::Relaxed),
                e + t.errors.load(Ordering::Relaxed),
            )
        });
        self.merged.reset();
        for t in &self.threads {
            if let Ok(mut h) = t.interval.lock() {
                let _ = self.merged.add(&*h);
                h.reset();
            }
        }
        let dt = now.duration_since(self.last.0).as_secs_f64().max(1e-9);
        let q = |p: f64| {
            if self.merged.is_empty() {
                0
            } else {
                self.merged.value_at_quantile(p)
            }
        };
        let line = LiveLine {
            t_s: now.duration_since(self.start).as_secs_f64(),
            phase: if measuring {
                Phase::Measure
            } else {
                Phase::Warmup
            },
            req_per_s: (ok - self.last.1) as f64 / dt,
            errors: errors - self.last.2,
            p50_us: q(0.5),
            p99_us: q(0.99),
            max_us: self.merged.max(),
        };
        self.last = (now, ok, errors);
        if let Some(f) = &mut self.out {
            self.buf.clear();
            serde_json::to_writer(&mut self.buf, &line).map_err(std::io::Error::other)?;
            self.buf.push(b'\n');
            f.write_all(&self.buf)?;
        }
        if self.tty {
            eprint!(
                "\r{:>6.1}s {:<7} {:>9.0} req/s  p99 {:>7}us  errors {:<6}",
                line.t_s, line.phase, line.req_per_s, line.p99_us, line.errors
            );
        }
        Ok(())
    }

    pub fn finish(&self) {
        if self.tty {
            eprintln!();
        }
    }
}
