//! The small load `rxsteer lab` observes: a bounded closed-loop TCP echo inside the lab's
//! namespaces, one request in flight per connection, every exchange counted, stopping by
//! itself at the deadline. It keeps `lab` a self-contained look at where receive work lands,
//! needing neither `rxsteer serve` nor rxload; the measured comparison (`compare`) uses those.
use anyhow::{Context, Result};
use std::{
    io::{Read, Write},
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use crate::{embedded_lab::Roles, netns::VethLab};

pub const REQUEST_BYTES: usize = 64;

pub struct EchoLoad {
    threads: Vec<JoinHandle<Result<()>>>,
    pub exchanges: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl EchoLoad {
    /// One listener on `port` in the lab's server namespace, one accepting echo thread per
    /// connection spread over the server CPUs, and `connections` clients in the client
    /// namespace spread over the loader CPUs, until `deadline` or `stop`.
    pub fn start(
        lab: &VethLab,
        port: u16,
        roles: &Roles,
        connections: usize,
        deadline: Instant,
        stop: Arc<AtomicBool>,
    ) -> Result<Self> {
        let (server, client) = (&lab.server, &lab.client);
        let addr = (lab.server_ip, port);
        let (server_cpus, loader_cpus) = (&roles.server_cpus, &roles.loader_cpus);
        let exchanges = Arc::new(AtomicU64::new(0));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let listener_thread = server.spawn(Some(server_cpus[0]), move || {
            let l = TcpListener::bind(addr)?;
            ready_tx.send(l.try_clone()?).ok();
            Ok(())
        });
        listener_thread.join().expect("listener thread")?;
        let listener = ready_rx.recv()?;
        listener.set_nonblocking(true)?;
        let mut threads = Vec::new();
        for i in 0..connections {
            let l = listener.try_clone()?;
            let (st, s_stop) = (server_cpus[i % server_cpus.len()], Arc::clone(&stop));
            threads.push(server.spawn(Some(st), move || serve_one(&l, deadline, &s_stop)));
        }
        for i in 0..connections {
            let (lt, c_stop, n) = (
                loader_cpus[i % loader_cpus.len()],
                Arc::clone(&stop),
                Arc::clone(&exchanges),
            );
            threads.push(client.spawn(Some(lt), move || drive(addr, deadline, &c_stop, &n)));
        }
        Ok(Self {
            threads,
            exchanges,
            stop,
        })
    }

    /// Waits for every thread; the first error wins.
    pub fn join(self) -> Result<u64> {
        let mut first = Ok(());
        for t in self.threads {
            let r = t.join().expect("load thread panicked");
            if first.is_ok() {
                first = r;
            }
        }
        self.stop.store(true, Ordering::SeqCst);
        first.map(|_| self.exchanges.load(Ordering::SeqCst))
    }
}

fn running(deadline: Instant, stop: &AtomicBool) -> bool {
    Instant::now() < deadline && !stop.load(Ordering::SeqCst)
}

/// Servers outlive the clients' deadline by this much, so every client ends its last exchange
/// and closes first; a server still waiting then gives up.
const SERVER_GRACE: Duration = Duration::from_secs(3);

/// Echoes one connection until its client closes it. No read timeout: a timed-out
/// `read_exact` drops the bytes it had read and desynchronises the stream. Clients always close
/// (at the deadline or on error), which ends this loop.
fn serve_one(l: &TcpListener, deadline: Instant, stop: &AtomicBool) -> Result<()> {
    let hard_stop = deadline + SERVER_GRACE;
    let mut conn = loop {
        match l.accept() {
            Ok((c, _)) => break c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > hard_stop || stop.load(Ordering::SeqCst) {
                    return Ok(());
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e.into()),
        }
    };
    conn.set_nonblocking(false)?;
    conn.set_nodelay(true)?;
    let mut buf = [0u8; REQUEST_BYTES];
    loop {
        match conn.read_exact(&mut buf) {
            Ok(()) => conn.write_all(&buf).context("lab load: server write")?,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e).context("lab load: server read"),
        }
    }
}

fn drive(addr: (Ipv4Addr, u16), deadline: Instant, stop: &AtomicBool, n: &AtomicU64) -> Result<()> {
    let mut s = TcpStream::connect_timeout(&SocketAddr::from(addr), Duration::from_secs(2))
        .context("lab load: connect")?;
    s.set_nodelay(true)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let req = [b'q'; REQUEST_BYTES];
    let mut resp = [0u8; REQUEST_BYTES];
    while running(deadline, stop) {
        s.write_all(&req).context("lab load: client write")?;
        s.read_exact(&mut resp).context("lab load: client read")?;
        n.fetch_add(1, Ordering::Relaxed);
    }
    // Close first, with no request outstanding: the server sees EOF and ends cleanly.
    s.shutdown(std::net::Shutdown::Both).ok();
    Ok(())
}
