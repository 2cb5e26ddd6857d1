//! `--io uring`: the closed loop (one request in flight per connection) on one io_uring per
//! thread. A request is one linked pair of entries: the send (MSG_WAITALL, its success posting
//! no completion) and the receive, which waits for data first instead of trying a read that
//! can only find the socket empty (IORING_RECVSEND_POLL_FIRST). So a request costs one entry
//! pair and one completion, and a thread enters the kernel once for all the completions that
//! are ready instead of once per socket operation (epoll, read, write), which is most of a
//! load generator's own cost on loopback. Responses
//! are parsed, validated and recorded exactly as the tokio loop does (`conn::parse_one`,
//! `settle`, `record`); nothing is allocated per request. The ring defers completion work to
//! the thread's own kernel entries (SINGLE_ISSUER, DEFER_TASKRUN), and each entry waits for
//! an eighth of the operations in flight, at most 100 us: a response can be timed up to that
//! much late, which the tokio engine (default) does not do.
use anyhow::{bail, Context, Result};
use io_uring::{opcode, squeue, types, IoUring};
use std::{
    cell::RefCell,
    io,
    net::{SocketAddr, TcpStream},
    os::fd::AsRawFd,
    time::{Duration, Instant},
};

use crate::{
    conn::{backoff_delay, record, Outcome, Phase, IO_TIMEOUT},
    live::LiveCounters,
    response::{grow_if_full, parse_one, settle},
    scenario::Request,
    stats::{ErrorKind, Stats},
};

/// The longest a batch waits for its completions (see the loop).
const BATCH_WAIT: Duration = Duration::from_micros(100);

const SEND: u64 = 1;
const RECV: u64 = 2;

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// The request's send and the receive linked to it are in flight.
    Receiving,
    /// No connection: open one at `retry_at`.
    Closed,
    /// The window is over for this connection.
    Finished,
}

struct Conn {
    stream: Option<TcpStream>,
    buf: Vec<u8>,
    filled: usize,
    sent_at: Instant,
    /// The request in flight is one of `-n`'s measured ones.
    ticketed: bool,
    state: State,
    /// Bumped at each reconnect: completions of an older socket are ignored.
    generation: u64,
    retry_at: Instant,
    /// Errors in a row: the back-off before the next connection grows with them.
    failures: u32,
}

impl Conn {
    /// Drops the socket and opens a new one on the next pass; completions of the old one
    /// are ignored from now on.
    fn reopen(&mut self, stats: &RefCell<Stats>) {
        self.stream = None;
        self.state = State::Closed;
        self.retry_at = Instant::now() + backoff_delay(self.failures);
        self.failures += 1;
        self.generation += 1;
        stats.borrow_mut().reconnects += 1;
    }
}

/// An operation's user data: the operation, the connection, and its generation (the same
/// order as the server's io_uring engine packs them).
fn user_data(op: u64, idx: usize, generation: u64) -> u64 {
    (generation << 40) | ((idx as u64) << 8) | op
}

fn parts(ud: u64) -> (u64, usize, u64) {
    (ud & 0xff, ((ud >> 8) & 0xffff_ffff) as usize, ud >> 40)
}

/// One thread's ring and connections, and what every request is recorded against.
struct Driver<'a> {
    ring: IoUring,
    conns: Vec<Conn>,
    /// Receives in flight: each request has exactly one, which always completes.
    in_flight: usize,
    /// Completions are copied out before they are handled (handling pushes new entries);
    /// allocated once, as large as the completion queue.
    completions: Vec<(u64, i32)>,
    addr: SocketAddr,
    req: &'a Request,
    phase: &'a Phase,
    stats: &'a RefCell<Stats>,
    live: Option<&'a LiveCounters>,
}

/// Runs `n` connections to `addr` until the main thread releases the phase.
pub fn run(
    n: usize,
    addr: SocketAddr,
    req: &Request,
    phase: &Phase,
    stats: &RefCell<Stats>,
    live: Option<&LiveCounters>,
) -> Result<()> {
    let ring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build((2 * n as u32).next_power_of_two().max(8))
        .context("io_uring_setup (--io uring needs a kernel that allows io_uring)")?;
    let now = Instant::now();
    let conns: Vec<Conn> = (0..n)
        .map(|_| Conn {
            stream: None,
            buf: vec![0u8; (req.bytes.len() * 2).max(16 << 10)],
            filled: 0,
            sent_at: now,
            ticketed: false,
            state: State::Closed,
            generation: 0,
            retry_at: now,
            failures: 0,
        })
        .collect();
    let completions = Vec::with_capacity(ring.params().cq_entries() as usize);
    let mut d = Driver {
        ring,
        conns,
        in_flight: 0,
        completions,
        addr,
        req,
        phase,
        stats,
        live,
    };
    loop {
        d.open_due()?;
        if d.conns.iter().all(|c| c.state == State::Finished) {
            break;
        }
        d.wait()?;
        d.completions.clear();
        let done = d
            .ring
            .completion()
            .map(|cqe| (cqe.user_data(), cqe.result()));
        d.completions.extend(done);
        for i in 0..d.completions.len() {
            let (ud, res) = d.completions[i];
            d.completed(ud, res)?;
        }
        d.time_out_stalled();
        if d.phase.finished(Instant::now()) {
            d.abandon_in_flight();
        }
    }
    d.drain();
    drop(d);
    // As the tokio loop: stay until the main thread has read the window's figures.
    while !phase.done() {
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}

impl Driver<'_> {
    fn fail(&mut self, idx: usize, kind: ErrorKind) {
        let c = &mut self.conns[idx];
        record(
            self.phase,
            self.stats,
            self.live,
            self.req,
            c.sent_at,
            c.ticketed,
            Outcome::Fail(kind),
        );
        c.reopen(self.stats);
    }

    /// Opens what is closed (and due), then starts its request.
    fn open_due(&mut self) -> Result<()> {
        let now = Instant::now();
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            if c.state != State::Closed || now < c.retry_at {
                continue;
            }
            if self.phase.finished(now) {
                c.state = State::Finished;
                continue;
            }
            match TcpStream::connect_timeout(&self.addr, IO_TIMEOUT) {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    c.stream = Some(s);
                    c.filled = 0;
                    self.next_request(i)?;
                }
                Err(_) => {
                    // Counted as a failed request (toward -n too, so a run against a dead
                    // server ends), then tried again; not once nothing more may be sent.
                    let admit = self.phase.admit(now, 1);
                    if admit.send == 0 {
                        c.state = State::Finished;
                        continue;
                    }
                    self.stats.borrow_mut().sent += 1;
                    let connect = Outcome::Fail(ErrorKind::Connect);
                    let ticketed = admit.ticketed;
                    record(
                        self.phase, self.stats, self.live, self.req, now, ticketed, connect,
                    );
                    self.stats.borrow_mut().reconnects += 1;
                    c.retry_at = now + Duration::from_millis(20);
                }
            }
        }
        Ok(())
    }

    /// Enters the kernel once for several completions: an eighth of what is in flight,
    /// waiting at most BATCH_WAIT for them (a completion can sit that long before it is
    /// timed, the price of the batching). With one or none in flight, waits for one for up
    /// to 100 ms (to open connections that are due and to notice stalls).
    fn wait(&mut self) -> Result<()> {
        let want = (self.in_flight / 8).max(1);
        let ts = if want > 1 {
            types::Timespec::from(BATCH_WAIT)
        } else {
            types::Timespec::new().nsec(100_000_000)
        };
        match self
            .ring
            .submitter()
            .submit_with_args(want, &types::SubmitArgs::new().timespec(&ts))
        {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => Ok(()),
            Err(e) => Err(e).context("io_uring_enter"),
        }
    }

    fn completed(&mut self, ud: u64, res: i32) -> Result<()> {
        let (op, idx, generation) = parts(ud);
        // A send's rare completion is extra; every receive completes once.
        if op == RECV {
            self.in_flight -= 1;
        }
        if generation != self.conns[idx].generation {
            return Ok(());
        }
        match (op, res) {
            // A send completes only when it failed or came up short (MSG_WAITALL retries
            // partial sends itself); its linked receive is then cancelled, and that
            // completion belongs to the old generation after this reopen.
            (SEND, _) => self.fail(idx, ErrorKind::Write),
            (RECV, r) if r <= 0 => self.fail(idx, ErrorKind::Read),
            (RECV, r) => self.received(idx, r as usize)?,
            _ => bail!("unexpected io_uring completion {ud:#x}"),
        }
        Ok(())
    }

    /// `n` more bytes of connection `idx`'s response: recorded once whole, then the next
    /// request (or a new connection when the framing may be lost).
    fn received(&mut self, idx: usize, n: usize) -> Result<()> {
        let (req, stats) = (self.req, self.stats);
        let c = &mut self.conns[idx];
        c.filled += n;
        match parse_one(req.proto, &c.buf[..c.filled]) {
            Err(kind) => self.fail(idx, kind),
            Ok(None) => match grow_if_full(&mut c.buf, c.filled) {
                Err(kind) => self.fail(idx, kind),
                Ok(()) => push_recv(&mut self.ring, idx, c, 0, &mut self.in_flight)?,
            },
            Ok(Some(parsed)) => {
                let outcome =
                    Outcome::Answered(settle(&req.check, &mut c.buf, &mut c.filled, parsed));
                if outcome.is_ok() {
                    c.failures = 0;
                }
                if record(
                    self.phase, stats, self.live, req, c.sent_at, c.ticketed, outcome,
                ) {
                    // Framing may be lost: start over on a new connection.
                    c.reopen(stats);
                } else {
                    self.next_request(idx)?;
                }
            }
        }
        Ok(())
    }

    /// Connection `idx`'s next request, if one may be sent (the window is on and, with -n,
    /// a ticket is left); otherwise the connection is done.
    fn next_request(&mut self, idx: usize) -> Result<()> {
        let c = &mut self.conns[idx];
        let admit = self.phase.admit(Instant::now(), 1);
        if admit.send == 0 {
            c.state = State::Finished;
            return Ok(());
        }
        c.ticketed = admit.ticketed;
        self.stats.borrow_mut().sent += 1;
        start_request(&mut self.ring, idx, c, &self.req.bytes, &mut self.in_flight)?;
        Ok(())
    }

    /// A server that stops answering: a timeout. shutdown() ends the pending receive, whose
    /// completion then belongs to an old generation and is ignored.
    fn time_out_stalled(&mut self) {
        let now = Instant::now();
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            if c.state == State::Receiving && now.duration_since(c.sent_at) > IO_TIMEOUT {
                if let Some(s) = &c.stream {
                    let _ = s.shutdown(std::net::Shutdown::Both);
                }
                self.fail(idx, ErrorKind::Timeout);
            }
        }
    }

    /// The run is over (its deadline, or -n's last outcome): a request still awaiting its
    /// response is abandoned, unanswered at the end (sent, with no outcome), as the tokio
    /// engine's are when its runtime stops. Its pending receive is ended by shutdown() and
    /// its completion, of an old generation, ignored.
    fn abandon_in_flight(&mut self) {
        for c in &mut self.conns {
            if c.state == State::Receiving {
                if let Some(s) = &c.stream {
                    let _ = s.shutdown(std::net::Shutdown::Both);
                }
                c.generation += 1;
                c.state = State::Finished;
            }
        }
    }

    /// The kernel may still hold a receive ended by a timeout: let it complete before the
    /// buffers it points into are freed.
    fn drain(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.in_flight > 0 && Instant::now() < deadline {
            let ts = types::Timespec::new().nsec(10_000_000);
            let _ = self
                .ring
                .submitter()
                .submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
            let done = self
                .ring
                .completion()
                .filter(|cqe| cqe.user_data() & 0xff == RECV)
                .count();
            self.in_flight = self.in_flight.saturating_sub(done);
        }
    }
}

/// Queues the request's send and, linked behind it, the receive of its response.
fn start_request(
    ring: &mut IoUring,
    idx: usize,
    c: &mut Conn,
    bytes: &[u8],
    in_flight: &mut usize,
) -> io::Result<()> {
    c.sent_at = Instant::now();
    c.state = State::Receiving;
    let fd = c.stream.as_ref().expect("an open connection").as_raw_fd();
    let send = opcode::Send::new(types::Fd(fd), bytes.as_ptr(), bytes.len() as u32)
        .flags(libc::MSG_WAITALL)
        .build()
        .flags(squeue::Flags::IO_LINK | squeue::Flags::SKIP_SUCCESS)
        .user_data(user_data(SEND, idx, c.generation));
    // A link is formed only within one submission: keep the pair in the same one. (Split,
    // it would still be correct, the receive waiting for data that needs the send, just
    // not ordered by the kernel.)
    let sq = ring.submission();
    let free = sq.capacity() - sq.len();
    drop(sq);
    if free < 2 {
        ring.submit()?;
    }
    push(ring, &send)?;
    push_recv(ring, idx, c, POLL_FIRST, in_flight)
}

/// The response is never there yet when the receive is first issued: wait for data instead
/// of trying a read that can only fail with EAGAIN.
/// IORING_RECVSEND_POLL_FIRST (linux/io_uring.h; the crate does not re-export it), 5.19+.
const POLL_FIRST: u16 = 1 << 0;

fn push_recv(
    ring: &mut IoUring,
    idx: usize,
    c: &mut Conn,
    ioprio: u16,
    in_flight: &mut usize,
) -> io::Result<()> {
    let fd = c.stream.as_ref().expect("an open connection").as_raw_fd();
    let space = &mut c.buf[c.filled..];
    let sqe = opcode::Recv::new(types::Fd(fd), space.as_mut_ptr(), space.len() as u32)
        .ioprio(ioprio)
        .build()
        .user_data(user_data(RECV, idx, c.generation));
    push(ring, &sqe)?;
    *in_flight += 1;
    Ok(())
}

fn push(ring: &mut IoUring, sqe: &squeue::Entry) -> io::Result<()> {
    loop {
        // SAFETY: each entry points into memory that outlives its completion: the request
        // bytes live for the whole run, a connection's buffer is neither resized nor freed
        // while its one operation is in flight, and the ring is drained (or dropped) before
        // the connections are.
        if unsafe { ring.submission().push(sqe) }.is_ok() {
            return Ok(());
        }
        // A full submission queue: hand what is queued to the kernel, then queue this one.
        ring.submit()?;
    }
}
