//! `rxsteer serve`: the HTTP/1.1 and ZAP-HTTP servers. One worker thread per CPU (pinned with
//! `--cpus`), each with its own current-thread runtime and its own SO_REUSEPORT listener per
//! transport (xitca-web's shape); one set of handlers behind both transports.
pub mod conn;
pub mod handlers;

use anyhow::{bail, Context, Result};
use std::{
    net::{SocketAddr, TcpListener},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use crate::{cpu_arg::CpuList, netns::pin_current_thread};
use conn::ConnConfig;
use rxsteer_wire::http1::Limits;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Http,
    Zap,
}

/// Requests served, per transport, for the whole server.
#[derive(Debug, Default)]
pub struct Served {
    pub http: AtomicU64,
    pub zap: AtomicU64,
}

#[derive(Clone, Debug)]
pub struct ServeConfig {
    pub http: Option<SocketAddr>,
    pub zap: Option<SocketAddr>,
    pub threads: usize,
    /// Pin worker i to `cpus[i % len]`.
    pub cpus: Option<Vec<u32>>,
    pub conn: ConnConfig,
    /// Run on each worker thread before it serves (tests use it to mark threads).
    pub on_worker_start: Option<fn()>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            http: Some(SocketAddr::from(([0, 0, 0, 0], 8080))),
            zap: Some(SocketAddr::from(([0, 0, 0, 0], 9653))),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpus: None,
            conn: ConnConfig {
                http: Limits::default(),
                max_frame: rxsteer_wire::zap::MAX_FRAME,
                idle: Duration::from_secs(60),
                request: Duration::from_secs(10),
                vectored_min: conn::VECTORED_MIN,
            },
            on_worker_start: None,
        }
    }
}

/// A running server: its bound addresses and counters. Workers run until the process exits.
pub struct Server {
    pub http: Option<SocketAddr>,
    pub zap: Option<SocketAddr>,
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
        bail!("--threads must be at least 1");
    }
    let mut bound: Vec<(Transport, SocketAddr)> = Vec::new();
    let mut first: Vec<(Transport, TcpListener)> = Vec::new();
    for (t, addr) in [(Transport::Http, cfg.http), (Transport::Zap, cfg.zap)] {
        if let Some(addr) = addr {
            let l = listener(addr)?;
            bound.push((t, l.local_addr()?));
            first.push((t, l));
        }
    }
    if bound.is_empty() {
        bail!("nothing to serve: give --http and/or --zap");
    }
    let served = Arc::new(Served::default());
    let conn = Arc::new(cfg.conn.clone());
    let mut first = Some(first);
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
        std::thread::Builder::new()
            .name(format!("rxsteer-serve-{i}"))
            .spawn(move || {
                if let Err(e) = worker(listeners, cpu, conn, served, hook) {
                    eprintln!("rxsteer serve: worker {i} stopped: {e:#}");
                }
            })?;
    }
    let addr_of = |t| bound.iter().find(|(bt, _)| *bt == t).map(|&(_, a)| a);
    Ok(Server {
        http: addr_of(Transport::Http),
        zap: addr_of(Transport::Zap),
        served,
    })
}

fn worker(
    listeners: Vec<(Transport, TcpListener)>,
    cpu: Option<u32>,
    conn: Arc<ConnConfig>,
    served: Arc<Served>,
    hook: Option<fn()>,
) -> Result<()> {
    if let Some(cpu) = cpu {
        pin_current_thread(cpu)?;
    }
    if let Some(h) = hook {
        h();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    rt.block_on(async move {
        for (t, l) in listeners {
            let l = tokio::net::TcpListener::from_std(l)?;
            let (conn, served) = (Arc::clone(&conn), Arc::clone(&served));
            tokio::spawn(async move {
                loop {
                    let Ok((s, _)) = l.accept().await else {
                        continue;
                    };
                    let _ = s.set_nodelay(true);
                    let (conn, served) = (Arc::clone(&conn), Arc::clone(&served));
                    tokio::spawn(async move {
                        let _ = match t {
                            Transport::Http => conn::serve_http(s, &conn, &served.http).await,
                            Transport::Zap => conn::serve_zap(s, &conn, &served.zap).await,
                        };
                    });
                }
            });
        }
        std::future::pending::<Result<()>>().await
    })
}

/// `:8080` means every address, port 8080; otherwise `host:port`.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let full = if s.starts_with(':') {
        format!("0.0.0.0{s}")
    } else {
        s.to_string()
    };
    full.parse()
        .map_err(|_| format!("{s:?} is not an address like :8080 or 127.0.0.1:8080"))
}

/// A timeout: a duration from 100 ms to 24 h (0 would close every connection at once).
pub fn parse_timeout(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(24 * 3600) {
        return Err(format!("{s:?} is outside 100ms..=24h"));
    }
    Ok(d)
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// HTTP/1.1 address (default :8080 when neither --http nor --zap is given).
    #[arg(long, value_parser = parse_addr)]
    pub http: Option<SocketAddr>,
    /// ZAP-HTTP address (default :9653 when neither is given).
    #[arg(long, value_parser = parse_addr)]
    pub zap: Option<SocketAddr>,
    /// Worker threads (default: one per online CPU).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Option<usize>,
    /// Pin workers to these CPUs.
    #[arg(long, value_parser = crate::cpu_arg::cpu_list)]
    pub cpus: Option<CpuList>,
    /// Largest ZAP frame in bytes (16, the message header, up to 64 MiB); a larger length
    /// prefix closes the connection.
    #[arg(long, default_value_t = rxsteer_wire::zap::MAX_FRAME,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(16..=rxsteer_wire::zap::MAX_FRAME as u64))]
    pub max_frame: usize,
    /// Largest HTTP request body in bytes, up to 1 GiB (413 above).
    #[arg(long, default_value_t = Limits::default().max_body,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=1 << 30))]
    pub max_body: usize,
    /// Close connections idle this long (100ms to 24h).
    #[arg(long, default_value = "60s", value_parser = parse_timeout)]
    pub idle_timeout: Duration,
    /// A request must arrive whole within this long of its first byte (slow clients that
    /// trickle bytes are closed; 100ms to 24h).
    #[arg(long, default_value = "10s", value_parser = parse_timeout)]
    pub request_timeout: Duration,
}

pub fn run(args: &ServeArgs) -> Result<()> {
    let online = rxsteer_tune::cpus::online_cpus()?;
    if let Some(c) = args
        .cpus
        .as_ref()
        .and_then(|c| c.0.iter().find(|c| !online.contains(c)))
    {
        bail!("CPU {c} in --cpus is not online on this machine");
    }
    let mut cfg = ServeConfig::default();
    if args.http.is_some() || args.zap.is_some() {
        cfg.http = args.http;
        cfg.zap = args.zap;
    }
    cfg.threads = args
        .threads
        .unwrap_or_else(|| args.cpus.as_ref().map_or(online.len(), |c| c.0.len()));
    cfg.cpus = args.cpus.clone().map(|c| c.0);
    cfg.conn.max_frame = args.max_frame;
    cfg.conn.http.max_body = args.max_body;
    cfg.conn.idle = args.idle_timeout;
    cfg.conn.request = args.request_timeout;
    // Handlers before the ready line: a SIGTERM sent as soon as it is seen must find them.
    let stop = crate::top::stop_on_signals()?;
    let server = start(cfg.clone())?;
    let show = |a: Option<SocketAddr>| a.map_or("off".to_string(), |a| a.to_string());
    eprintln!(
        "rxsteer serve: HTTP on {}, ZAP on {}, {} worker thread(s){}",
        show(server.http),
        show(server.zap),
        cfg.threads,
        cfg.cpus.as_ref().map_or(String::new(), |c| format!(
            " pinned to CPUs {}",
            rxsteer_tune::cpus::format_cpu_list(c)
        ))
    );
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    eprintln!(
        "rxsteer serve: served {} HTTP and {} ZAP requests",
        server.served.http.load(Ordering::Relaxed),
        server.served.zap.load(Ordering::Relaxed)
    );
    Ok(())
}
