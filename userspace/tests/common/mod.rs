//! Helpers shared by the privileged tests: unique lab names and bounded traffic sources.
#![allow(dead_code)]
use std::{
    io::{Read, Write},
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket},
    sync::atomic::{AtomicU32, Ordering},
    time::Duration,
};

use anyhow::Result;
use rxsteer::netns::{Netns, VethLab};

/// What a command that had to succeed printed.
pub struct Said {
    pub stdout: String,
    pub stderr: String,
}

/// Runs `c` to its end and returns what it printed; fails the test, showing both streams,
/// unless it exits 0.
pub fn succeed(c: &mut std::process::Command) -> Said {
    let out = c.output().unwrap_or_else(|e| panic!("starting {c:?}: {e}"));
    let said = Said {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    assert!(
        out.status.success(),
        "{c:?}: {}\nstdout: {}\nstderr: {}",
        out.status,
        said.stdout,
        said.stderr
    );
    said
}

/// A lab whose names are unique to this process and call.
pub fn lab(letter: char) -> VethLab {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let tag = format!("{letter}{}{n}", std::process::id() % 10000);
    VethLab::create(&tag, 1).expect("creating the veth lab (needs root and iproute2)")
}

/// A lab whose sending side has TX checksum offload off, as a NIC stand-in for native-XDP
/// cpumap redirect (on veth, redirected TCP with partial checksums is dropped otherwise).
pub fn nic_lab(letter: char) -> VethLab {
    let lab = lab(letter);
    succeed(
        lab.client
            .command("ethtool")
            .args(["-K", &lab.client_dev, "tx", "off"]),
    );
    lab
}

/// `rxsteer compare --force --iface <the lab's server veth>`, run in the server namespace,
/// with each of `loaders` as a `--loader`; callers add the rest of the run's flags.
pub fn compare_on_iface(lab: &VethLab, loaders: &[&str]) -> std::process::Command {
    let mut c = lab.server.command(env!("CARGO_BIN_EXE_rxsteer"));
    c.args(["compare", "--force", "--iface", &lab.server_dev]);
    for l in loaders {
        c.args(["--loader", l]);
    }
    c
}

/// Waits, from inside `ns`, until `target` accepts TCP connections; panics naming `what`
/// when it does not within `within`.
pub fn wait_listening(ns: &Netns, target: SocketAddr, within: Duration, what: &str) {
    let what = what.to_string();
    ns.spawn(None, move || {
        let deadline = std::time::Instant::now() + within;
        while TcpStream::connect_timeout(&target, Duration::from_millis(200)).is_err() {
            anyhow::ensure!(
                std::time::Instant::now() < deadline,
                "{what} never listened on {target}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    })
    .join()
    .unwrap()
    .unwrap();
}

/// Sends `count` UDP datagrams from `ns`, on `cpu`, to `to:port`. Bounded: no retries.
pub fn udp_burst(ns: &Netns, cpu: u32, to: Ipv4Addr, port: u16, count: u32) {
    ns.spawn(Some(cpu), move || {
        let sock = UdpSocket::bind("0.0.0.0:0")?;
        for i in 0..count {
            sock.send_to(&i.to_be_bytes(), SocketAddr::from((to, port)))?;
            if i % 64 == 63 {
                // Let the receive side drain so the veth ring never overflows.
                std::thread::sleep(Duration::from_micros(500));
            }
        }
        Ok(())
    })
    .join()
    .unwrap()
    .expect("udp burst");
}

/// `flows` UDP flows (a socket, so a source port, each) from `ns` on `cpu` to `to:port`, each
/// sending `per_flow` datagrams, interleaved.
pub fn udp_flows(ns: &Netns, cpu: u32, to: Ipv4Addr, port: u16, flows: u32, per_flow: u32) {
    ns.spawn(Some(cpu), move || {
        let socks = (0..flows)
            .map(|_| UdpSocket::bind("0.0.0.0:0"))
            .collect::<std::io::Result<Vec<_>>>()?;
        for i in 0..per_flow {
            for s in &socks {
                s.send_to(&i.to_be_bytes(), SocketAddr::from((to, port)))?;
            }
            // Let the receive side drain so the veth ring never overflows.
            std::thread::sleep(Duration::from_micros(500));
        }
        Ok(())
    })
    .join()
    .unwrap()
    .expect("udp flows");
}

/// An echo server in `ns` on `cpu`, port `port`, for exactly one connection.
pub fn echo_server(
    ns: &Netns,
    cpu: u32,
    ip: Ipv4Addr,
    port: u16,
) -> std::thread::JoinHandle<Result<()>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = ns.spawn(Some(cpu), move || {
        let l = TcpListener::bind((ip, port))?;
        tx.send(()).unwrap();
        let (mut c, _) = l.accept()?;
        let mut buf = [0u8; 4096];
        loop {
            let n = c.read(&mut buf)?;
            if n == 0 {
                return Ok(());
            }
            c.write_all(&buf[..n])?;
        }
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("echo server listening");
    h
}

/// `rounds` request/response exchanges of `size` bytes from `ns` on `cpu`.
pub fn tcp_exchanges(ns: &Netns, cpu: u32, to: Ipv4Addr, port: u16, rounds: u32, size: usize) {
    ns.spawn(Some(cpu), move || {
        let mut s =
            TcpStream::connect_timeout(&SocketAddr::from((to, port)), Duration::from_secs(5))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        let req = vec![b'r'; size];
        let mut resp = vec![0u8; size];
        for _ in 0..rounds {
            s.write_all(&req)?;
            s.read_exact(&mut resp)?;
        }
        Ok(())
    })
    .join()
    .unwrap()
    .expect("tcp exchanges");
}

pub fn online_cpus() -> Vec<u32> {
    rxsteer_tune::cpus::online_cpus().unwrap()
}

/// What rxsteer may change on the host, as text: namespaces, XDP in this namespace, every
/// RPS/RFS/XPS file, the global sysctls the tuning profiles touch, and rxsteer's state files.
/// Equal before and after = the host was left as found.
pub fn host_state() -> Vec<String> {
    let run = |prog: &str, args: &[&str]| {
        String::from_utf8_lossy(
            &std::process::Command::new(prog)
                .args(args)
                .output()
                .unwrap()
                .stdout,
        )
        .into_owned()
    };
    let mut state = vec![
        format!("netns: {}", run("ip", &["netns", "list"])),
        format!(
            "xdp: {}",
            run("ip", &["-o", "link", "show"])
                .lines()
                .filter(|l| l.contains(" xdp"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
    ];
    let mut files: Vec<String> = Vec::new();
    for dev in std::fs::read_dir("/sys/class/net").unwrap().flatten() {
        let queues = dev.path().join("queues");
        for q in std::fs::read_dir(&queues).into_iter().flatten().flatten() {
            for f in ["rps_cpus", "rps_flow_cnt", "xps_cpus"] {
                files.push(q.path().join(f).display().to_string());
            }
        }
    }
    for k in [
        "netdev_max_backlog",
        "rps_sock_flow_entries",
        "netdev_budget",
        "netdev_budget_usecs",
        "rmem_max",
        "wmem_max",
        "somaxconn",
    ] {
        files.push(format!("/proc/sys/net/core/{k}"));
    }
    files.sort();
    for f in files {
        if let Ok(v) = std::fs::read_to_string(&f) {
            state.push(format!("{f} = {}", v.trim()));
        }
    }
    let mut runs: Vec<String> = std::fs::read_dir("/run/rxsteer")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    state.push(format!("state files: {runs:?}"));
    state
}

/// A TCP upload of `bytes` from the client namespace (pinned to `sender`) to a receiver on
/// port 8080 in the server namespace (pinned to `receiver`), within 5 s to connect; the bytes
/// that arrived.
pub fn tcp_upload(lab: &VethLab, sender: u32, receiver: u32, bytes: usize) -> usize {
    let ip = lab.server_ip;
    let (tx, rx) = std::sync::mpsc::channel();
    let sink = lab.server.spawn(Some(receiver), move || {
        let l = TcpListener::bind((ip, 8080))?;
        tx.send(()).unwrap();
        let (mut c, _) = l.accept()?;
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0usize;
        loop {
            match c.read(&mut buf)? {
                0 => return Ok(total),
                n => total += n,
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(5)).unwrap();
    lab.client
        .spawn(Some(sender), move || {
            let mut s =
                TcpStream::connect_timeout(&SocketAddr::from((ip, 8080)), Duration::from_secs(5))?;
            let chunk = vec![7u8; 1 << 16];
            for _ in 0..bytes / chunk.len() {
                s.write_all(&chunk)?;
            }
            Ok(())
        })
        .join()
        .unwrap()
        .expect("the upload");
    sink.join().unwrap().unwrap()
}

/// Every file the rps/cpumap profiles may touch inside the lab's server namespace, with its
/// bytes as read: equal before and after = the tuning was reverted byte for byte.
pub fn profile_values(lab: &VethLab) -> Vec<(String, Vec<u8>)> {
    profile_values_in(&lab.server, &lab.server_dev)
}

/// [`profile_values`] of `dev` in `ns` (the lab's loader side: its client namespace).
pub fn profile_values_in(ns: &Netns, dev: &str) -> Vec<(String, Vec<u8>)> {
    let mut paths: Vec<String> = ["rx-0/rps_cpus", "rx-0/rps_flow_cnt", "tx-0/xps_cpus"]
        .iter()
        .map(|f| format!("/sys/class/net/{dev}/queues/{f}"))
        .collect();
    for (name, _, scope) in rxsteer_tune::sysctl::REFERENCE {
        if scope == rxsteer_tune::sysctl::Scope::PerNetns {
            paths.push(rxsteer_tune::sysctl::path(name).display().to_string());
        }
    }
    paths
        .into_iter()
        .map(|p| {
            let o = ns.command("cat").arg(&p).output().unwrap();
            assert!(o.status.success(), "cat {p}");
            (p, o.stdout)
        })
        .collect()
}

/// One HTTP/1.0 GET from inside `ns` (1.0: the reply is never chunked): its status and body.
pub fn http_get(ns: &Netns, addr: &str, path: &str, accept: &str) -> (u16, String) {
    let (addr, request) = (
        addr.parse::<SocketAddr>().unwrap(),
        format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: {accept}\r\n\r\n"),
    );
    ns.spawn(None, move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(request.as_bytes())?;
        let mut reply = String::new();
        s.read_to_string(&mut reply)?;
        let (head, body) = reply.split_once("\r\n\r\n").unwrap_or((&reply, ""));
        let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
        Ok((status, body.to_string()))
    })
    .join()
    .unwrap()
    .unwrap()
}

/// Waits for `child` to exit, failing the test after `limit` (a timeout is not an exit).
pub fn wait_with_timeout(
    child: &mut std::process::Child,
    limit: Duration,
) -> std::process::ExitStatus {
    let start = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "it did not stop within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// SIGTERM to `child`: the clean ending of every long-running rxsteer command.
pub fn sigterm(child: &std::process::Child) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
}
