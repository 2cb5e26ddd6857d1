//! Who gets in, for both engines: a worker's connection limit (nginx's `worker_connections`)
//! and the back-off after an accept that failed for want of resources.
//!
//! Out of descriptors (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM), an accept fails at once
//! for as long as the condition lasts: retried at once, it spins a core the clients need.
//! nginx stops accepting for 500 ms; here the pause starts at 10 ms and doubles to 1 s while
//! the errors go on, and one line a second says how many there were. Connections already
//! open keep being served; accepting resumes by itself.
use std::{
    io,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

/// The first pause after a resource error, and the longest.
pub const FIRST_PAUSE: Duration = Duration::from_millis(10);
pub const MAX_PAUSE: Duration = Duration::from_secs(1);

/// Descriptors kept back from the limit for everything that is not a connection (listeners,
/// the ring or epoll, stdio, the runtime's own).
pub const FD_HEADROOM: u64 = 64;

/// Whether an accept error means "no resources now" (pause) rather than one failed
/// connection (ECONNABORTED and the like: go on at once).
pub fn is_exhaustion(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// The per-worker connection limit that fits this process's descriptor limit: what
/// RLIMIT_NOFILE leaves after the headroom, shared by `workers`, at least 1.
pub fn default_max_connections(workers: usize) -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0 {
        lim.rlim_cur
    } else {
        1024
    };
    // A small limit keeps a quarter back rather than nothing for connections.
    let headroom = FD_HEADROOM.min(soft / 4);
    (soft.saturating_sub(headroom) / workers.max(1) as u64).max(1) as usize
}

/// One worker's accept back-off. The pause doubles while errors go on and starts over after
/// a connection is accepted.
#[derive(Debug)]
pub struct Backoff {
    pause: Duration,
    /// Errors since the last line said.
    unsaid: u64,
    said_at: Option<Instant>,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            pause: FIRST_PAUSE,
            unsaid: 0,
            said_at: None,
        }
    }
}

impl Backoff {
    /// After an accept error at `now`: how long to stop accepting (None: go on at once), and
    /// the line to print, once a second at most.
    pub fn on_error(&mut self, e: &io::Error, now: Instant) -> (Option<Duration>, Option<String>) {
        if !is_exhaustion(e) {
            return (None, None);
        }
        let pause = self.pause;
        self.pause = (self.pause * 2).min(MAX_PAUSE);
        self.unsaid += 1;
        let due = self
            .said_at
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1));
        let line = due.then(|| {
            let n = std::mem::take(&mut self.unsaid);
            self.said_at = Some(now);
            format!(
                "rxsteer serve: accept failed {n} time(s) ({e}); not accepting for {} ms, \
                 open connections are still served",
                pause.as_millis()
            )
        });
        (Some(pause), line)
    }

    /// A connection was accepted: the next error starts from the first pause again.
    pub fn on_accept(&mut self) {
        self.pause = FIRST_PAUSE;
    }
}

/// A worker's open connections against its limit; the refusals and accept errors go to the
/// server-wide counters.
#[derive(Debug)]
pub struct Limit {
    pub max: usize,
    open: AtomicUsize,
}

impl Limit {
    pub fn new(max: usize) -> Self {
        Self {
            max,
            open: AtomicUsize::new(0),
        }
    }

    /// Takes a place for a new connection, or None at the limit (the caller closes it at once;
    /// counted in `refused`).
    pub fn admit(self: &Arc<Self>, refused: &AtomicU64) -> Option<Admitted> {
        if self.open.fetch_add(1, Ordering::Relaxed) >= self.max {
            self.open.fetch_sub(1, Ordering::Relaxed);
            refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(Admitted(Arc::clone(self)))
    }

    pub fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }
}

/// Closes a connection refused at the limit with a reset (SO_LINGER 0), not a FIN: the
/// client learns at once, and the worker leaves no FIN_WAIT / TIME_WAIT socket behind for each
/// one of a flood.
pub fn refuse(s: impl std::os::fd::AsFd) {
    let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
}

/// A place taken; given back on drop, however the connection ends.
#[derive(Debug)]
pub struct Admitted(Arc<Limit>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_errors_pause_doubling_to_a_second_and_say_so_once_a_second() {
        let mut b = Backoff::default();
        let t0 = Instant::now();
        let emfile = io::Error::from_raw_os_error(libc::EMFILE);
        let (p, line) = b.on_error(&emfile, t0);
        assert_eq!(p, Some(Duration::from_millis(10)));
        assert!(line.unwrap().contains("accept failed 1 time(s)"));
        let mut pauses = vec![];
        for i in 1..10 {
            let (p, line) = b.on_error(&emfile, t0 + Duration::from_millis(i));
            assert!(line.is_none(), "at most one line a second");
            pauses.push(p.unwrap().as_millis());
        }
        assert_eq!(pauses, [20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        let (_, line) = b.on_error(&emfile, t0 + Duration::from_secs(1));
        assert!(line.unwrap().contains("accept failed 10 time(s)"));
        b.on_accept();
        let (p, _) = b.on_error(&io::Error::from_raw_os_error(libc::ENFILE), t0);
        assert_eq!(p, Some(FIRST_PAUSE));
        let aborted = io::Error::from_raw_os_error(libc::ECONNABORTED);
        assert_eq!(b.on_error(&aborted, t0), (None, None));
    }

    #[test]
    fn past_the_limit_connections_are_refused_and_counted() {
        let (limit, refused) = (Arc::new(Limit::new(2)), AtomicU64::new(0));
        let a = limit.admit(&refused).unwrap();
        let b = limit.admit(&refused).unwrap();
        assert!(limit.admit(&refused).is_none());
        assert_eq!((limit.open(), refused.load(Ordering::Relaxed)), (2, 1));
        drop(a);
        let _c = limit.admit(&refused).unwrap();
        drop(b);
        assert_eq!(limit.open(), 1);
        assert!(default_max_connections(4) >= 1);
    }
}
