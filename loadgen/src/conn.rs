//! One connection's closed loop: one request in flight, the response read and validated, its
//! latency recorded when it completed inside the measured window. Errors are counted by kind
//! and the connection is opened again. Nothing is allocated per request.
use std::{
    cell::RefCell,
    net::SocketAddr,
    rc::Rc,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::timeout,
};

use crate::{
    response::{grow_if_full, parse_one, settle, Answer, Parsed},
    scenario::Request,
    stats::{ErrorKind, Stats},
    target::Proto,
};

/// The run's clock, shared by every connection. Only the main thread sets `stop`, after it
/// has read the window's closing figures: connections keep looping (without counting) until
/// then, so nothing they do on their way out lands inside the measured window.
pub struct Phase {
    pub measure_from: Instant,
    pub measure_until: Instant,
    pub stop: AtomicBool,
    /// `-n`: send exactly this many measured requests (each takes a ticket from `issued`
    /// before it is sent), count each once it is answered or failed, then raise
    /// `limit_reached`. Requests sent in the warm-up take no ticket and are not counted.
    pub limit: Option<u64>,
    pub issued: AtomicU64,
    pub measured: AtomicU64,
    pub limit_reached: AtomicBool,
    /// Signalled by the main thread with `stop`.
    pub release: tokio::sync::Notify,
}

impl Phase {
    pub fn done(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Past the window (or the -n limit), or the main thread ended the run (a load thread
    /// died): send nothing more.
    pub fn finished(&self, now: Instant) -> bool {
        now >= self.measure_until || self.limit_reached.load(Ordering::Relaxed) || self.done()
    }

    /// Waits, sending nothing, until the main thread has closed the window. No timer: the
    /// waiter is registered before `stop` is checked (no lost wake-up), and waiting on an
    /// intrusive list allocates nothing.
    pub async fn idle_until_released(&self) {
        let released = self.release.notified();
        tokio::pin!(released);
        released.as_mut().enable();
        if !self.done() {
            released.await;
        }
    }

    /// The main thread's side: close the window and let every connection go.
    pub fn release_all(&self) {
        self.stop.store(true, Ordering::SeqCst);
        self.release.notify_waiters();
    }

    /// How many of `want` requests (a pipelined batch) may be sent now: none once the
    /// window is over or, with `-n`, once every ticket is taken; `ticketed` when they are
    /// measured ones (sent in the window under `-n`). So `-n N` sends exactly N measured
    /// requests over all connections, where each connection sending one more after the
    /// count was reached once sent up to N + connections - 1.
    pub fn admit(&self, now: Instant, want: usize) -> Admit {
        let none = Admit {
            send: 0,
            ticketed: false,
        };
        if self.finished(now) {
            return none;
        }
        let Some(limit) = self.limit else {
            return Admit {
                send: want,
                ticketed: false,
            };
        };
        if now < self.measure_from {
            return Admit {
                send: want,
                ticketed: false,
            };
        }
        let mut cur = self.issued.load(Ordering::Relaxed);
        loop {
            let grant = (limit.saturating_sub(cur)).min(want as u64);
            if grant == 0 {
                return none;
            }
            match self.issued.compare_exchange_weak(
                cur,
                cur + grant,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Admit {
                        send: grant as usize,
                        ticketed: true,
                    }
                }
                Err(now_issued) => cur = now_issued,
            }
        }
    }

    pub fn measuring(&self, now: Instant) -> bool {
        now >= self.measure_from
            && now < self.measure_until
            && !self.limit_reached.load(Ordering::Relaxed)
    }
}

/// What [`Phase::admit`] allows: how many requests to send, and whether they are `-n`'s
/// measured ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admit {
    pub send: usize,
    pub ticketed: bool,
}

pub const IO_TIMEOUT: Duration = Duration::from_secs(10);

/// What became of one request.
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    /// A whole response came back (right or wrong).
    Answered(Answer),
    /// None did: the kind of failure.
    Fail(ErrorKind),
}

impl Outcome {
    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Answered(a) if a.valid.is_ok())
    }
}

/// Reads until `buf[..filled]` starts with one whole response. Bytes after it (pipelined
/// responses) stay in the buffer for the next call.
async fn read_response(
    s: &mut TcpStream,
    proto: Proto,
    buf: &mut Vec<u8>,
    filled: &mut usize,
    drained: &mut bool,
) -> Result<Parsed, ErrorKind> {
    let filled_now = filled;
    let filled = &mut *filled_now;
    loop {
        if let Some(parsed) = parse_one(proto, &buf[..*filled])? {
            return Ok(parsed);
        }
        grow_if_full(buf, *filled)?;
        let space = buf.len() - *filled;
        match timeout(IO_TIMEOUT, s.read(&mut buf[*filled..])).await {
            Err(_) => return Err(ErrorKind::Timeout),
            Ok(Err(_)) => return Err(ErrorKind::Read),
            Ok(Ok(0)) => return Err(ErrorKind::Read),
            Ok(Ok(n)) => {
                *filled += n;
                *drained = n < space;
            }
        }
    }
}

/// Open loop: this connection's fixed schedule. Request k is intended at `first + k * every`;
/// a late send goes out at once, and its latency still counts from the intended time
/// (coordinated-omission correction, as wrk2 does).
#[derive(Clone, Copy, Debug)]
pub struct Schedule {
    pub first: Instant,
    pub every: Duration,
}

/// Runs one connection until the phase ends. `batch` is the request repeated `pipeline`
/// times (HTTP pipelining; 1 = one request in flight).
#[allow(clippy::too_many_arguments)]
pub async fn run(
    req: Rc<Request>,
    batch: Rc<[u8]>,
    pipeline: usize,
    addr: SocketAddr,
    phase: Arc<Phase>,
    stats: Rc<RefCell<Stats>>,
    schedule: Option<Schedule>,
    live: Option<Arc<crate::live::LiveCounters>>,
    source: Option<crate::bind::Source>,
) {
    let load = Load {
        req: &req,
        batch: &batch,
        pipeline,
        phase: &phase,
        stats: &stats,
        live: live.as_deref(),
        schedule,
    };
    let mut buf = vec![0u8; (batch.len() * 2).max(16 << 10)];
    let mut next = schedule.map(|s| s.first);
    let mut attempt = 0u64;
    let mut backoff = Backoff::default();
    while !phase.done() {
        if phase.finished(Instant::now()) {
            return phase.idle_until_released().await;
        }
        if attempt > 0 {
            // Opened again after an error: wait first, longer each time it fails again.
            stats.borrow_mut().reconnects += 1;
            backoff.wait(&phase).await;
        }
        attempt += 1;
        let Some(mut s) = connect(&load, addr, source.as_ref(), attempt - 1).await else {
            continue;
        };
        if exchange(&load, &mut s, &mut buf, &mut next, &mut backoff).await {
            // The last requests in flight are done; the server has answered at most this
            // batch more than was counted. Idle until released, so no exit path runs inside
            // the measured window.
            return phase.idle_until_released().await;
        }
    }
}

/// What one connection task sends and where it records what came back.
struct Load<'a> {
    req: &'a Request,
    /// The request repeated `pipeline` times.
    batch: &'a [u8],
    pipeline: usize,
    phase: &'a Phase,
    stats: &'a RefCell<Stats>,
    live: Option<&'a crate::live::LiveCounters>,
    schedule: Option<Schedule>,
}

/// A new connection (from `source`'s next address when binding), bounded by IO_TIMEOUT; a
/// failure is recorded as a failed request.
async fn connect(
    load: &Load<'_>,
    addr: SocketAddr,
    source: Option<&crate::bind::Source>,
    attempt: u64,
) -> Option<TcpStream> {
    let connect = async {
        match source {
            None => TcpStream::connect(addr).await,
            Some(src) => src.socket(addr, attempt)?.connect(addr).await,
        }
    };
    match timeout(IO_TIMEOUT, connect).await {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Some(s)
        }
        Ok(Err(_)) | Err(_) => {
            // A failed connect counts as a failed request (toward -n too, so a run against
            // a dead server ends), when it may be sent at all.
            let now = Instant::now();
            let admit = load.phase.admit(now, 1);
            if admit.send > 0 {
                load.stats.borrow_mut().sent += 1;
                let failed = Outcome::Fail(ErrorKind::Connect);
                record(
                    load.phase,
                    load.stats,
                    load.live,
                    load.req,
                    now,
                    admit.ticketed,
                    failed,
                );
            }
            None
        }
    }
}

/// Requests on one connection, batch after batch, until the window is over (true) or the
/// connection must start over (false: an error, or framing that may be lost).
async fn exchange(
    load: &Load<'_>,
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    next: &mut Option<Instant>,
    backoff: &mut Backoff,
) -> bool {
    let (mut filled, mut drained) = (0usize, false);
    let request_len = load.batch.len() / load.pipeline.max(1);
    loop {
        // Closed loop: send now. Open loop: wait for the intended time, never sooner.
        let sent = match (next.as_mut(), load.schedule) {
            (Some(intended), Some(sch)) => {
                let at = *intended;
                *intended += sch.every;
                if at > Instant::now() {
                    tokio::time::sleep_until(at.into()).await;
                }
                at
            }
            _ => Instant::now(),
        };
        // Every response read and the socket empty at the last read: clear tokio's
        // readiness rather than let the next read return EAGAIN (one system call per
        // request saved). Race-free: try_io clears only the readiness it observed.
        if filled == 0 && drained {
            let _ = s.try_io(tokio::io::Interest::READABLE, || {
                Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
            });
        }
        // Past the window, or -n's last ticket taken: nothing more is sent.
        let admit = load.phase.admit(Instant::now(), load.pipeline);
        if admit.send == 0 {
            return true;
        }
        load.stats.borrow_mut().sent += admit.send as u64;
        // No timer on the write: requests go into the socket buffer at once, and a server
        // that stops answering trips the read timeout below.
        let wrote = s
            .write_all(&load.batch[..admit.send * request_len])
            .await
            .is_ok();
        for _ in 0..admit.send {
            let outcome = if !wrote {
                Outcome::Fail(ErrorKind::Write)
            } else {
                match read_response(s, load.req.proto, buf, &mut filled, &mut drained).await {
                    Err(kind) => Outcome::Fail(kind),
                    Ok(parsed) => {
                        Outcome::Answered(settle(&load.req.check, buf, &mut filled, parsed))
                    }
                }
            };
            if outcome.is_ok() {
                backoff.reset();
            }
            let ticketed = admit.ticketed;
            if record(
                load.phase, load.stats, load.live, load.req, sent, ticketed, outcome,
            ) {
                return false;
            }
        }
        if load.phase.finished(Instant::now()) {
            return true;
        }
    }
}

/// Records one response (or failure) of a request sent at `sent`, `ticketed` when it was
/// one of `-n`'s measured requests; true when the connection must start over. The stats
/// borrow lives only here, never across an await (other connections on this thread use it).
pub fn record(
    phase: &Phase,
    stats: &RefCell<Stats>,
    live: Option<&crate::live::LiveCounters>,
    req: &Request,
    sent: Instant,
    ticketed: bool,
    outcome: Outcome,
) -> bool {
    let now = Instant::now();
    let us = now.duration_since(sent).as_micros().clamp(1, 60_000_000) as u64;
    if let Some(live) = live {
        match outcome.is_ok() {
            true => live.record_ok(us),
            false => live.record_error(),
        }
    }
    // With -n, exactly the `limit` ticketed requests are counted, failed ones too (a
    // server that only fails still ends the run), and the window closes when the last one
    // is. Without it, what completes inside the window. Anything else (the warm-up's) is
    // counted nowhere, its status included.
    let counted = match phase.limit {
        Some(limit) => {
            ticketed && {
                let m = phase.measured.fetch_add(1, Ordering::Relaxed) + 1;
                if m >= limit {
                    phase.limit_reached.store(true, Ordering::Relaxed);
                }
                true
            }
        }
        None => phase.measuring(now),
    };
    let failed = match outcome {
        Outcome::Answered(a) => a.valid.err(),
        Outcome::Fail(kind) => Some(kind),
    };
    if !counted {
        // Kept apart, so every request sent is accounted for: the warm-up's by when it was
        // sent, the rest came after the window closed.
        let mut st = stats.borrow_mut();
        let part = if sent < phase.measure_from {
            &mut st.warmup
        } else {
            &mut st.after_window
        };
        match failed {
            None => part.answered += 1,
            Some(_) => part.failed += 1,
        }
    }
    if counted {
        let mut st = stats.borrow_mut();
        if let Outcome::Answered(a) = outcome {
            st.status[(a.status as usize).min(599)] += 1;
            st.bytes_in += a.bytes as u64;
        }
        match failed {
            None => {
                st.ok += 1;
                st.bytes_out += req.bytes.len() as u64;
                let _ = st.latency_us.record(us);
            }
            Some(kind) => st.error(kind),
        }
    }
    failed.is_some()
}

/// The wait before opening a connection again after `failures` errors in a row: 10 ms,
/// doubling up to 1 s (both engines).
pub fn backoff_delay(failures: u32) -> Duration {
    (Duration::from_millis(10) * 2u32.pow(failures.min(7))).min(Duration::from_secs(1))
}

/// The tokio engine's back-off: back to the first step after a success, cut short when the
/// run ends.
#[derive(Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    fn reset(&mut self) {
        self.failures = 0;
    }

    async fn wait(&mut self, phase: &Phase) {
        let d = backoff_delay(self.failures);
        self.failures += 1;
        let released = phase.release.notified();
        tokio::pin!(released);
        released.as_mut().enable();
        if !phase.done() {
            let _ = timeout(d, released).await;
        }
    }
}
