//! `serve --io uring`: one io_uring per worker thread, in place of tokio's epoll loop.
//!
//! - Each listener has one multishot accept; each connection one multishot receive, into a
//!   ring of buffers the kernel picks from (a provided-buffer ring), so an idle connection
//!   holds no receive buffer and a receive costs no submission.
//! - A receive's requests are answered straight from the kernel's buffer when nothing is
//!   buffered before them (the common case: whole requests); only a partial request's bytes are
//!   copied, into the connection's read buffer. The buffer goes back to the ring at once.
//! - Every response of a connection's batch goes out in one send (`SendMsg` with two iovecs
//!   when a large body follows the heads uncopied), and every connection's sends of a
//!   completion batch are submitted together: one kernel entry per batch submits them and reaps
//!   the next completions (SINGLE_ISSUER + DEFER_TASKRUN).
//! - While a send is in flight its bytes must stay put, so input arriving meanwhile waits in
//!   the connection's stash and is answered when the send completes: responses stay in order.
//! - Timeouts as in the epoll engine (idle; a request's deadline from its first byte), checked
//!   on a tick; an expired or refused connection is shut down, which ends its receive, and its
//!   descriptor closed when nothing of it is in flight.
//!
//! The answers come from [`crate::batch::answer`], the same function the epoll engine uses.
use anyhow::{Context, Result};
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use std::{
    net::TcpListener,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    sync::{atomic::Ordering, Arc},
    time::Duration,
};
use tokio::time::Instant;

use crate::{
    batch::{partial_since, Answered, End},
    config::ConnConfig,
    read_buf::ReadBuf,
    Proto, Served,
};

mod buf_ring;
mod connection;

use buf_ring::{BufRing, BUFS, BUF_GROUP, BUF_SIZE};
use connection::{answer_buffered, answer_in_place, flight, Conn, Life, Speaks};
const RING_ENTRIES: u32 = 1024;

const OP_ACCEPT: u64 = 1;
const OP_RECV: u64 = 2;
const OP_SEND: u64 = 3;
const OP_TICK: u64 = 4;
const OP_CANCEL: u64 = 5;
/// A listener's pause after an accept error is over: accept again.
const OP_RESUME: u64 = 6;

/// Input stashed behind a send in flight beyond this stops the connection's receive until the
/// send completes: the kernel's window, not our memory, then holds a fast sender back (the
/// epoll engine gets that for free by not reading while it writes).
const PAUSE_AT: usize = 64 << 10;
/// What a stopped receive may still deliver: the whole buffer ring.
const STASH_SLACK: usize = BUFS as usize * BUF_SIZE;

/// An operation's user data: the operation, the connection (or listener) slot, and the slot's
/// generation, so completions of a slot's earlier connection are told apart.
fn user_data(op: u64, slot: usize, generation: u32) -> u64 {
    ((generation as u64) << 32) | ((slot as u64) << 8) | op
}

fn parts(ud: u64) -> (u64, usize, u32) {
    (
        ud & 0xff,
        ((ud >> 8) & 0xff_ffff) as usize,
        (ud >> 32) as u32,
    )
}

struct Worker<'a> {
    ring: IoUring,
    bufs: BufRing,
    /// Open connections by slot (the slot is in every operation's user data).
    conns: slab::Slab<Box<Conn>>,
    /// The next connection's generation: a slot reused by a later connection is told apart.
    next_generation: u32,
    listeners: &'a [(Proto, TcpListener)],
    cfg: &'a ConnConfig,
    served: &'a Served,
    tick: types::Timespec,
    /// When the current completion batch was reaped: the clock every timeout reads.
    now: Instant,
    limit: Arc<crate::admit::Limit>,
    /// Per listener: its accept back-off, whether accepting is paused, and the pause's
    /// timespec (it must outlive the timeout operation).
    backoff: Vec<crate::admit::Backoff>,
    paused: Vec<bool>,
    pause: Vec<types::Timespec>,
}

/// Serves `listeners` on this thread until the process exits.
pub fn worker(
    listeners: Vec<(Proto, TcpListener)>,
    cfg: Arc<ConnConfig>,
    served: Arc<Served>,
    bp: Option<crate::busy_poll::BusyPoll>,
    ready: impl FnOnce(&Result<()>),
) -> Result<()> {
    let built = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_cqsize(RING_ENTRIES * 8)
        .build(RING_ENTRIES)
        .context("io_uring is not available (kernel.io_uring_disabled, a seccomp filter, or a kernel before 6.1)")
        .and_then(|ring| {
            if let Some(bp) = bp {
                crate::busy_poll::on_uring(&ring, bp)?;
            }
            Ok((BufRing::register(&ring)?, ring))
        });
    let (bufs, ring) = match built {
        Ok(b) => {
            ready(&Ok(()));
            b
        }
        Err(e) => {
            // `start` fails with it; the thread just ends.
            ready(&Err(e));
            return Ok(());
        }
    };
    let tick = (cfg.idle.min(cfg.request) / 8)
        .clamp(Duration::from_millis(10), Duration::from_millis(250));
    let mut w = Worker {
        ring,
        bufs,
        conns: slab::Slab::new(),
        next_generation: 0,
        listeners: &listeners,
        cfg: &cfg,
        served: &served,
        tick: types::Timespec::from(tick),
        now: Instant::now(),
        limit: Arc::new(crate::admit::Limit::new(cfg.max_connections)),
        backoff: listeners.iter().map(|_| Default::default()).collect(),
        paused: vec![false; listeners.len()],
        pause: vec![types::Timespec::new(); listeners.len()],
    };
    w.run()
}

impl Worker<'_> {
    fn push(&mut self, e: &squeue::Entry) {
        // SAFETY: every entry points into memory that outlives its operation: the listeners
        // and the buffer ring live as long as the worker, a connection's Box until its last
        // operation completed (see `release`), the tick's timespec in the worker.
        while unsafe { self.ring.submission().push(e) }.is_err() {
            self.ring.submit().expect("io_uring_enter");
        }
    }

    fn arm_accept(&mut self, i: usize) {
        let fd = self.listeners[i].1.as_raw_fd();
        let e = opcode::AcceptMulti::new(types::Fd(fd))
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(user_data(OP_ACCEPT, i, 0));
        self.push(&e);
    }

    fn arm_tick(&mut self) {
        let e = opcode::Timeout::new(&self.tick)
            .build()
            .user_data(user_data(OP_TICK, 0, 0));
        self.push(&e);
    }

    fn arm_recv(&mut self, slot: usize) {
        let c = &mut self.conns[slot];
        c.receiving = true;
        let e = opcode::RecvMulti::new(types::Fd(c.fd.as_raw_fd()), BUF_GROUP)
            .build()
            .user_data(user_data(OP_RECV, slot, c.generation));
        self.push(&e);
    }

    fn run(&mut self) -> Result<()> {
        for i in 0..self.listeners.len() {
            self.arm_accept(i);
        }
        self.arm_tick();
        let mut done: Vec<(u64, i32, u32)> = Vec::with_capacity((RING_ENTRIES * 8) as usize);
        loop {
            // One kernel entry submits every queued operation and waits for the next
            // completion. (Waiting for more, an eighth of the connections for at most 100 us as
            // rxload does, bought nothing measurable per request here: the time is TCP's.)
            match self.ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e).context("io_uring_enter"),
            }
            self.now = Instant::now();
            done.clear();
            done.extend(
                self.ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            for &(ud, res, flags) in &done {
                let (op, slot, generation) = parts(ud);
                match op {
                    OP_ACCEPT => self.accepted(slot, res, flags),
                    OP_RESUME => {
                        self.paused[slot] = false;
                        self.arm_accept(slot);
                    }
                    OP_TICK => self.on_tick(),
                    OP_CANCEL => {}
                    _ if self.is_current(slot, generation) => match op {
                        OP_RECV => self.received(slot, res, flags),
                        _ => self.sent(slot, res),
                    },
                    // A provided buffer is given back even for a connection now gone.
                    _ => {
                        if let Some(bid) = cqueue::buffer_select(flags) {
                            self.bufs.give_back(bid);
                        }
                    }
                }
            }
            self.bufs.publish();
        }
    }

    fn is_current(&self, slot: usize, generation: u32) -> bool {
        self.conns
            .get(slot)
            .is_some_and(|c| c.generation == generation)
    }

    /// Out of descriptors or memory: stop accepting on `listener` for the back-off's pause
    /// (cancelling a multishot accept still armed), then `OP_RESUME` arms it again.
    fn pause_accept(&mut self, listener: usize, pause: Duration, armed: bool) {
        self.paused[listener] = true;
        if armed {
            let e = opcode::AsyncCancel::new(user_data(OP_ACCEPT, listener, 0))
                .build()
                .user_data(user_data(OP_CANCEL, listener, 0));
            self.push(&e);
        }
        self.pause[listener] = types::Timespec::from(pause);
        let e = opcode::Timeout::new(&self.pause[listener])
            .build()
            .user_data(user_data(OP_RESUME, listener, 0));
        self.push(&e);
    }

    fn accepted(&mut self, listener: usize, res: i32, flags: u32) {
        let armed = cqueue::more(flags);
        if res < 0 {
            let e = std::io::Error::from_raw_os_error(-res);
            if res != -libc::ECANCELED {
                self.served.accept_errors.fetch_add(1, Ordering::Relaxed);
            }
            let (pause, line) = self.backoff[listener].on_error(&e, std::time::Instant::now());
            if let Some(line) = line {
                eprintln!("{line}");
            }
            match pause {
                Some(p) if !self.paused[listener] => self.pause_accept(listener, p, armed),
                _ if !armed && !self.paused[listener] => self.arm_accept(listener),
                _ => {}
            }
            return;
        }
        if !armed && !self.paused[listener] {
            self.arm_accept(listener);
        }
        self.backoff[listener].on_accept();
        // SAFETY: the accept just returned this descriptor, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(res) };
        // Past the worker's limit: reset at once (the drop closes it), counted in `refused`.
        let Some(place) = self.limit.admit(&self.served.refused) else {
            crate::admit::refuse(&fd);
            return;
        };
        let _ = socket2::SockRef::from(&fd).set_tcp_nodelay(true);
        let generation = self.next_generation;
        self.next_generation = generation.wrapping_add(1);
        let speaks = Speaks::of(self.listeners[listener].0);
        let slot = self.conns.insert(Box::new(Conn {
            fd,
            speaks,
            generation,
            rd: ReadBuf::new(speaks.read_limit(self.cfg)),
            stash: Vec::new(),
            out: Vec::with_capacity(BUF_SIZE),
            scratch: Vec::with_capacity(1024),
            flight: None,
            life: Life::Open,
            receiving: false,
            paused: false,
            last_input: self.now,
            partial_since: None,
            _place: place,
        }));
        self.arm_recv(slot);
    }

    fn received(&mut self, slot: usize, res: i32, flags: u32) {
        let more = cqueue::more(flags);
        let bid = cqueue::buffer_select(flags);
        let cfg = self.cfg;
        let c = &mut self.conns[slot];
        if !more {
            c.receiving = false;
        }
        if res == -libc::ECANCELED {
            // Our pause (only a pause cancels a receive). If the send completed in the
            // meantime, the pause is over: receive again now.
            if !c.paused && c.life == Life::Open {
                self.arm_recv(slot);
            }
            self.release(slot);
            return;
        }
        if res <= 0 {
            if let Some(bid) = bid {
                self.bufs.give_back(bid);
            }
            // Out of buffers: receive again (they are back at this batch's end).
            if res == -libc::ENOBUFS && c.life.answers() {
                if !c.paused {
                    self.arm_recv(slot);
                }
            } else {
                // The peer is done sending (its requests are still answered), or a reset, or
                // our shutdown came through.
                if res == 0 {
                    c.peer_done();
                } else {
                    c.close();
                }
                self.release(slot);
            }
            return;
        }
        let bid = bid.expect("a multishot receive completion names its buffer");
        let data = self.bufs.buffer(bid, res as usize);
        c.last_input = self.now;
        let answered = if !c.life.answers() {
            Ok(None)
        } else if c.flight.is_some() {
            // Answered after the send in flight, in order. The pause below bounds it: what
            // was already received when the receive stopped (at most the buffer ring) is all
            // that comes after PAUSE_AT; beyond that the peer is not one this code knows.
            if c.stash.len() + data.len() <= PAUSE_AT + c.read_limit(cfg) + STASH_SLACK {
                c.stash.extend_from_slice(data);
                Ok(None)
            } else {
                Err(())
            }
        } else if c.rd.data().is_empty() {
            answer_in_place(c, data, cfg).map(Some)
        } else {
            c.rd.append(data)
                .map(|()| Some(answer_buffered(c, cfg)))
                .map_err(drop)
        };
        self.bufs.give_back(bid);
        match answered {
            Ok(Some(a)) => self.respond(slot, a),
            Ok(None) => {}
            Err(()) => self.conns[slot].shut_down(),
        }
        let c = &mut self.conns[slot];
        if c.flight.is_some() && c.stash.len() >= PAUSE_AT && !c.paused && c.life.answers() {
            c.paused = true;
            if more {
                let e = opcode::AsyncCancel::new(user_data(OP_RECV, slot, c.generation))
                    .build()
                    .user_data(user_data(OP_CANCEL, slot, c.generation));
                self.push(&e);
            }
        } else if !more && c.life.answers() && !c.paused {
            self.arm_recv(slot);
        }
        self.release(slot);
    }

    fn sent(&mut self, slot: usize, res: i32) {
        let c = &mut self.conns[slot];
        let f = c
            .flight
            .as_mut()
            .expect("a send completion for a send in flight");
        if res <= 0 {
            c.flight = None;
            c.shut_down();
            self.release(slot);
            return;
        }
        let mut n = res as usize;
        for v in &mut f.iov {
            let k = n.min(v.iov_len);
            // SAFETY: advancing within the iovec's own bytes.
            v.iov_base = unsafe { v.iov_base.cast::<u8>().add(k) }.cast();
            v.iov_len -= k;
            n -= k;
        }
        if f.iov.iter().any(|v| v.iov_len > 0) {
            self.submit_flight(slot);
            return;
        }
        let f = c.flight.take().unwrap();
        c.out.clear();
        c.rd.consume(f.consumed);
        let resume = std::mem::take(&mut c.paused);
        if f.close {
            c.shut_down();
        } else if c.life.answers() {
            self.answer_stash(slot);
        }
        let c = &mut self.conns[slot];
        if resume && c.life == Life::Open {
            if c.flight.is_some() {
                // Still behind a send: stay paused until it completes.
                c.paused = true;
            } else if !c.receiving {
                self.arm_recv(slot);
            }
        }
        self.release(slot);
    }

    /// Answers what waited behind the send that just completed: moved into the read buffer as
    /// far as one request's limit allows, answered, and again, until a send is in flight or the
    /// stash is empty. A read buffer full at its limit with no whole request in it is a request
    /// larger than allowed: closed, as the epoll engine does.
    fn answer_stash(&mut self, slot: usize) {
        let cfg = self.cfg;
        loop {
            let c = &mut self.conns[slot];
            let n = c
                .stash
                .len()
                .min(c.read_limit(cfg).saturating_sub(c.rd.data().len()));
            if n == 0 && !c.stash.is_empty() {
                c.shut_down();
                return;
            }
            if c.rd.append(&c.stash[..n]).is_err() {
                c.shut_down();
                return;
            }
            c.stash.drain(..n);
            let a = answer_buffered(c, cfg);
            self.respond(slot, a);
            let c = &self.conns[slot];
            if c.flight.is_some() || !c.life.answers() || c.stash.is_empty() {
                return;
            }
        }
    }

    /// After answering from the read buffer: count, send what was encoded (with a body to go
    /// out uncopied), and restart the partial request's clock as the epoll engine does.
    fn respond(&mut self, slot: usize, a: Answered) {
        self.served_count(self.conns[slot].speaks.transport, a.n);
        let c = &mut self.conns[slot];
        let body: &[u8] = match &a.end {
            End::Body { at, .. } => at.bytes(c.rd.data(), &c.scratch),
            _ => &[],
        };
        let close = matches!(a.end, End::Close | End::Body { close: true, .. });
        if a.end == End::Partial {
            let left = c.rd.data().len() > a.used;
            c.partial_since = partial_since(left, a.n > 0, c.partial_since, || self.now);
        }
        if !c.out.is_empty() || !body.is_empty() {
            c.flight = Some(flight(&c.out, body, a.used, close));
            self.submit_flight(slot);
        } else if close {
            c.shut_down();
        } else {
            c.rd.consume(a.used);
        }
    }

    fn submit_flight(&mut self, slot: usize) {
        let c = &mut self.conns[slot];
        let fd = types::Fd(c.fd.as_raw_fd());
        let f = c.flight.as_mut().unwrap();
        f.msg.msg_iov = f.iov.as_mut_ptr();
        let e = if f.iov[1].iov_len == 0 {
            opcode::Send::new(fd, f.iov[0].iov_base.cast(), f.iov[0].iov_len as u32).build()
        } else {
            opcode::SendMsg::new(fd, &f.msg).build()
        };
        let e = e.user_data(user_data(OP_SEND, slot, c.generation));
        self.push(&e);
    }

    fn served_count(&self, t: Proto, n: u64) {
        if n > 0 {
            self.served.of(t).fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Closes a connection that is done (closing, or the peer sent its last byte and every
    /// answer went out) once neither its receive nor a send is in flight.
    fn release(&mut self, slot: usize) {
        let c = &self.conns[slot];
        if c.life != Life::Open && !c.receiving && c.flight.is_none() {
            self.conns.remove(slot);
        }
    }

    fn on_tick(&mut self) {
        let now = self.now;
        let cfg = self.cfg;
        for (_, c) in self.conns.iter_mut() {
            let idle = now.duration_since(c.last_input) >= cfg.idle;
            let slow = c
                .partial_since
                .is_some_and(|t| now.duration_since(t) >= cfg.request);
            if (idle || slow) && c.life != Life::Shut {
                c.shut_down();
            }
        }
        self.arm_tick();
    }
}
