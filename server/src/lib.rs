//! The HTTP/1.1 and ZAP-HTTP servers behind `rxsteer serve` and every server test and bench.
//! One worker thread per CPU (optionally pinned), each with its own SO_REUSEPORT listener per
//! transport (xitca-web's shape) and its own engine: a tokio current-thread runtime over epoll
//! ([`epoll`]) or an io_uring ([`uring`]). Below both: [`config`], [`read_buf`], [`admit`],
//! [`batch::answer`] over the two [`framing`]s, and one set of [`handlers`] behind both
//! transports. Needs no privileges and no BPF.
pub mod admit;
pub mod batch;
pub mod busy_poll;
pub mod config;
pub mod epoll;
pub mod framing;
pub mod handlers;
pub mod read_buf;
pub mod uring;

use anyhow::{bail, Context, Result};
use std::{
    net::{SocketAddr, TcpListener},
    sync::{atomic::AtomicU64, Arc},
    time::Duration,
};

use config::ConnConfig;
pub use rxsteer_records::{PerProto, Proto, ServerIo};
use rxsteer_tune::pin::pin_current_thread;
use rxsteer_wire::http1::Limits;

/// Requests served, per transport, and connections turned away, for the whole server.
#[derive(Debug, Default)]
pub struct Served {
    /// Requests answered, per protocol (`of`).
    pub requests: PerProto<AtomicU64>,
    /// New connections closed at once because their worker held `max_connections`.
    pub refused: AtomicU64,
    /// Accepts that failed (out of descriptors or memory: accepting then pauses).
    pub accept_errors: AtomicU64,
}

impl Served {
    /// The count of `proto`'s requests.
    pub fn of(&self, proto: Proto) -> &AtomicU64 {
        &self.requests[proto]
    }
}

#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Where each protocol listens (`None`: not served).
    pub listen: PerProto<Option<SocketAddr>>,
    pub threads: usize,
    /// The I/O engine every worker runs.
    pub io: ServerIo,
    /// Pin worker i to `cpus[i % len]`.
    pub cpus: Option<Vec<u32>>,
    /// Busy polling, preferred over interrupts, in every worker's engine (`None`: off).
    pub busy_poll: Option<busy_poll::BusyPoll>,
    pub conn: ConnConfig,
    /// Run on each worker thread before it serves (tests use it to mark threads).
    pub on_worker_start: Option<fn()>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            listen: PerProto::each(|p| Some(SocketAddr::from(([0, 0, 0, 0], p.spec().port)))),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            io: ServerIo::Epoll,
            cpus: None,
            busy_poll: None,
            conn: ConnConfig {
                http: Limits::default(),
                max_frame: rxsteer_wire::zap::MAX_FRAME,
                idle: Duration::from_secs(60),
                request: Duration::from_secs(10),
                vectored_min: config::VECTORED_MIN,
                max_connections: admit::default_max_connections(
                    std::thread::available_parallelism().map_or(1, |n| n.get()),
                ),
            },
            on_worker_start: None,
        }
    }
}

/// A running server: its bound addresses and counters. Workers run until the process exits.
pub struct Server {
    /// Where each protocol was bound (port 0 resolved).
    pub addr: PerProto<Option<SocketAddr>>,
    pub served: Arc<Served>,
}

fn listener(addr: SocketAddr) -> Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())
        .with_context(|| format!("binding {addr}"))?;
    s.listen(4096)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

/// Binds every listener (port 0 resolved once, so all workers share it) and starts the workers.
pub fn start(cfg: ServeConfig) -> Result<Server> {
    if cfg.threads == 0 {
        bail!("a server needs at least one worker thread");
    }
    let mut bound: Vec<(Proto, SocketAddr)> = Vec::new();
    let mut first: Vec<(Proto, TcpListener)> = Vec::new();
    for (t, addr) in cfg.listen.iter() {
        if let Some(addr) = *addr {
            let l = listener(addr)?;
            bound.push((t, l.local_addr()?));
            first.push((t, l));
        }
    }
    if bound.is_empty() {
        bail!("nothing to serve: no address for any protocol");
    }
    let served = Arc::new(Served::default());
    let conn = Arc::new(cfg.conn.clone());
    let mut first = Some(first);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    for i in 0..cfg.threads {
        let listeners = match first.take() {
            Some(l) => l,
            None => bound
                .iter()
                .map(|&(t, a)| Ok((t, listener(a)?)))
                .collect::<Result<_>>()?,
        };
        let cpu = cfg.cpus.as_ref().map(|c| c[i % c.len()]);
        let (served, conn, hook) = (Arc::clone(&served), Arc::clone(&conn), cfg.on_worker_start);
        let (io, ready, bp) = (cfg.io, ready_tx.clone(), cfg.busy_poll);
        std::thread::Builder::new()
            .name(format!("rxsteer-serve-{i}"))
            .spawn(move || {
                let started = Started(Some(ready));
                let engine = Engine { io, busy_poll: bp };
                if let Err(e) = worker(listeners, cpu, engine, conn, served, hook, started) {
                    eprintln!("rxsteer serve: worker {i} stopped: {e:#}");
                }
            })?;
    }
    // Every worker says it is serving, or why it cannot, before `start` returns: an engine
    // the kernel refuses is one error here, not workers dying one by one later.
    drop(ready_tx);
    for _ in 0..cfg.threads {
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => bail!("{e}"),
            Err(_) => bail!("a server worker ended before it started serving"),
        }
    }
    Ok(Server {
        addr: PerProto::each(|t| bound.iter().find(|(bt, _)| *bt == t).map(|&(_, a)| a)),
        served,
    })
}

/// Tells `start` once whether a worker is serving (dropped unsaid: it ended early).
struct Started(Option<std::sync::mpsc::Sender<Result<(), String>>>);

impl Started {
    fn say(&mut self, r: &Result<()>) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(r.as_ref().map(|_| ()).map_err(|e| format!("{e:#}")));
        }
    }
}

/// Which engine a worker runs, and what it asks of it.
#[derive(Clone, Copy)]
struct Engine {
    io: ServerIo,
    busy_poll: Option<busy_poll::BusyPoll>,
}

fn worker(
    listeners: Vec<(Proto, TcpListener)>,
    cpu: Option<u32>,
    engine: Engine,
    conn: Arc<ConnConfig>,
    served: Arc<Served>,
    hook: Option<fn()>,
    mut started: Started,
) -> Result<()> {
    let set_up = (|| {
        if let Some(cpu) = cpu {
            pin_current_thread(cpu)?;
        }
        if let Some(h) = hook {
            h();
        }
        Ok(())
    })();
    if set_up.is_err() {
        // Said to `start`, which fails with it: nothing more to report here.
        started.say(&set_up);
        return Ok(());
    }
    let bp = engine.busy_poll;
    match engine.io {
        ServerIo::Epoll => epoll::worker(listeners, conn, served, bp, |r| started.say(r)),
        ServerIo::Uring => uring::worker(listeners, conn, served, bp, |r| started.say(r)),
    }
}
