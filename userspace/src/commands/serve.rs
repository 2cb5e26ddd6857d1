//! `rxsteer serve`: the command line of the servers in `rxsteer-server`.
use anyhow::{bail, Result};
use rxsteer_server::{start, PerProto, Proto, ServeConfig, ServerIo};
use rxsteer_wire::http1::Limits;
use std::{net::SocketAddr, sync::atomic::Ordering, time::Duration};

use crate::cpu_arg::CpuList;

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

/// `PROTO=ADDR` (`zap=:9653`): any protocol's address by its name.
pub fn parse_listen(s: &str) -> Result<(Proto, SocketAddr), String> {
    let (name, addr) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not PROTO=ADDR (e.g. zap=:9653)"))?;
    let proto = name.parse::<Proto>().map_err(|e| e.to_string())?;
    Ok((proto, parse_addr(addr)?))
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
    /// HTTP/1.1 address (default: every protocol on its own port, :8080 and :9653, when no
    /// address is given).
    #[arg(long, value_parser = parse_addr)]
    pub http: Option<SocketAddr>,
    /// ZAP-HTTP address.
    #[arg(long, value_parser = parse_addr)]
    pub zap: Option<SocketAddr>,
    /// Any protocol's address as PROTO=ADDR (http=:8080, zap=:9653), repeatable: the same as
    /// its own flag, and the only one a protocol added later needs.
    #[arg(long = "listen", value_name = "PROTO=ADDR", value_parser = parse_listen)]
    pub listen: Vec<(Proto, SocketAddr)>,
    /// Worker threads (default: one per online CPU).
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024))]
    pub threads: Option<usize>,
    /// The I/O engine. epoll (default): tokio, one read and one write per connection's batch.
    /// uring: io_uring with multishot accept and receive into a provided-buffer ring, every
    /// connection's responses of a completion batch submitted in one kernel entry (Linux 6.1
    /// or later; refused in one line where the kernel does not allow it).
    #[arg(long, value_enum, default_value = "epoll")]
    pub io: ServerIo,
    /// Write one line to this descriptor once serving (`serving http=ADDR zap=ADDR`), then
    /// close it: how a parent that started the server learns it is ready (rxsteer compare).
    #[arg(long, value_parser = crate::ready::parse_fd, hide = true)]
    pub ready_fd: Option<std::os::fd::RawFd>,
    /// Pin workers to these CPUs.
    #[arg(long, value_parser = crate::cpu_arg::cpu_list)]
    pub cpus: Option<CpuList>,
    /// Run as UID:GID from the start (root only; supplementary groups dropped): how compare
    /// --iface runs the server without root. The drop is the server's own, not the parent's
    /// (`Command::uid`), so the binary may sit where only root can reach it (a 0700 folder).
    #[arg(long, value_name = "UID:GID", value_parser = parse_user, hide = true)]
    pub user: Option<(u32, u32)>,
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
    /// Connections each worker holds at most (nginx's worker_connections, 1 to 1048576);
    /// a new one past it is closed at once and counted. Default: the descriptor limit
    /// (RLIMIT_NOFILE) less 64 for everything else, shared by the workers.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 20))]
    pub max_connections: Option<usize>,
    /// Busy-poll the receive queue for up to this many microseconds while a worker waits
    /// (1-10000), preferred over interrupts: epoll through EPIOCSPARAMS, io_uring through its
    /// NAPI registration (Linux 6.9; refused in one line before). Pair it with the device's
    /// `napi_defer_hard_irqs` and `gro_flush_timeout` (`--steer busy-poll` sets them).
    #[arg(long, value_name = "USECS", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub busy_poll: Option<u32>,
    /// Packets one busy poll may take (1-64: above NAPI's weight the kernel wants
    /// CAP_NET_ADMIN).
    #[arg(long, default_value_t = rxsteer_server::busy_poll::DEFAULT_BUDGET,
          value_parser = clap::value_parser!(u16).range(1..=64), requires = "busy_poll")]
    pub busy_poll_budget: u16,
    /// Print the served, refused and failed-accept counts every this often (e.g. 1s).
    #[arg(long, value_parser = parse_timeout)]
    pub stats: Option<Duration>,
}

impl ServeArgs {
    /// The addresses given, per protocol: `--listen PROTO=ADDR` (the last for a protocol), or
    /// the protocol's own flag.
    fn addresses(&self) -> PerProto<Option<SocketAddr>> {
        let mut given = PerProto::each(|p| {
            self.listen
                .iter()
                .rev()
                .find(|(q, _)| *q == p)
                .map(|&(_, a)| a)
        });
        for (p, own) in [(Proto::Http, self.http), (Proto::Zap, self.zap)] {
            given[p] = own.or(given[p]);
        }
        given
    }
}

/// `UID:GID`, both numbers.
pub fn parse_user(s: &str) -> Result<(u32, u32), String> {
    let parsed = s
        .split_once(':')
        .and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)));
    parsed.ok_or_else(|| format!("{s:?} is not UID:GID (two numbers)"))
}

/// Drops to `uid:gid` for good, groups first, then the group, then the user (the order in
/// which each step is still allowed), and checks that root cannot be taken back.
fn drop_to(uid: u32, gid: u32) -> Result<()> {
    // SAFETY: plain credential calls on this process; glibc applies them to every thread.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0
            || libc::setgid(gid) != 0
            || libc::setuid(uid) != 0
        {
            bail!(
                "--user {uid}:{gid}: dropping root: {}",
                std::io::Error::last_os_error()
            );
        }
        if uid != 0 && libc::setuid(0) == 0 {
            bail!("--user {uid}:{gid}: root could be taken back");
        }
    }
    Ok(())
}

pub fn run(args: &ServeArgs) -> Result<()> {
    if let Some((uid, gid)) = args.user {
        drop_to(uid, gid)?;
    }
    let online = rxsteer_tune::cpus::online_cpus()?;
    if let Some(c) = args
        .cpus
        .as_ref()
        .and_then(|c| c.0.iter().find(|c| !online.contains(c)))
    {
        bail!("CPU {c} in --cpus is not online on this machine");
    }
    let mut cfg = ServeConfig::default();
    let given = args.addresses();
    if given.iter().any(|(_, a)| a.is_some()) {
        cfg.listen = given;
    }
    cfg.threads = args
        .threads
        .unwrap_or_else(|| args.cpus.as_ref().map_or(online.len(), |c| c.0.len()));
    cfg.cpus = args.cpus.clone().map(|c| c.0);
    cfg.io = args.io;
    cfg.busy_poll = args
        .busy_poll
        .map(|usecs| rxsteer_server::busy_poll::BusyPoll {
            usecs,
            budget: args.busy_poll_budget,
        });
    cfg.conn.max_frame = args.max_frame;
    cfg.conn.http.max_body = args.max_body;
    cfg.conn.idle = args.idle_timeout;
    cfg.conn.request = args.request_timeout;
    cfg.conn.max_connections = args
        .max_connections
        .unwrap_or_else(|| rxsteer_server::admit::default_max_connections(cfg.threads));
    // Handlers before the ready line: a SIGTERM sent as soon as it is seen must find them.
    let stop = crate::signals::stop_on_signals()?;
    let server = start(cfg.clone())?;
    let on: Vec<String> = server
        .addr
        .iter()
        .map(|(p, a)| {
            let a = a.map_or("off".to_string(), |a| a.to_string());
            format!("{} on {a}", p.spec().short)
        })
        .collect();
    eprintln!(
        "rxsteer serve: {}, {} worker thread(s) on {}, at most {} connections each{}{}",
        on.join(", "),
        cfg.threads,
        cfg.io,
        cfg.conn.max_connections,
        cfg.cpus.as_ref().map_or(String::new(), |c| format!(
            " pinned to CPUs {}",
            rxsteer_tune::cpus::format_cpu_list(c)
        )),
        cfg.busy_poll.map_or(String::new(), |b| format!(
            "; busy polling, preferred over interrupts: {} us, budget {}",
            b.usecs, b.budget
        ))
    );
    let bound: Vec<String> = server
        .addr
        .iter()
        .filter_map(|(p, a)| a.map(|a| format!("{p}={a}")))
        .collect();
    crate::ready::announce(args.ready_fd, &format!("serving {}", bound.join(" ")))?;
    let mut next_stats = args.stats.map(|d| std::time::Instant::now() + d);
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
        if let (Some(at), Some(every)) = (next_stats, args.stats) {
            if std::time::Instant::now() >= at {
                eprintln!("{}", counts(&server.served));
                next_stats = Some(at + every);
            }
        }
    }
    eprintln!("{}", counts(&server.served));
    Ok(())
}

/// The served, refused and failed-accept counts, one line (exit summary and `--stats`).
fn counts(s: &rxsteer_server::Served) -> String {
    let served: Vec<String> = rxsteer_server::Proto::ALL
        .iter()
        .map(|&p| format!("{} {}", s.of(p).load(Ordering::Relaxed), p.spec().short))
        .collect();
    format!(
        "rxsteer serve: served {} requests; refused {} connection(s) at the limit; {} failed accept(s)",
        served.join(" and "),
        s.refused.load(Ordering::Relaxed),
        s.accept_errors.load(Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addresses(args: &[&str]) -> PerProto<Option<SocketAddr>> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            a: ServeArgs,
        }
        let argv = std::iter::once("serve").chain(args.iter().copied());
        <Cli as clap::Parser>::try_parse_from(argv)
            .unwrap()
            .a
            .addresses()
    }

    /// A protocol's address by its name (`--listen`) or by its own flag, which wins.
    #[test]
    fn every_protocol_takes_its_address_by_name_or_its_own_flag() {
        let a = addresses(&[
            "--listen",
            "zap=:9000",
            "--listen",
            "http=:1",
            "--http",
            "127.0.0.1:2",
        ]);
        assert_eq!(a[Proto::Zap], Some("0.0.0.0:9000".parse().unwrap()));
        assert_eq!(a[Proto::Http], Some("127.0.0.1:2".parse().unwrap()));
        assert!(addresses(&[]).iter().all(|(_, a)| a.is_none()));
        let e = parse_listen("quic=:1").unwrap_err();
        assert!(e.contains("not a valid protocol"), "{e}");
        assert!(parse_listen(":1").unwrap_err().contains("PROTO=ADDR"));
    }
}
