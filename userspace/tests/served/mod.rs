//! `rxsteer serve` as its own process, for tests that watch it from outside: its memory
//! (VmRSS, VmHWM) and descriptors from /proc, its ready line's addresses, a clean SIGTERM.
//! And rxload runs against it, pinned, with their JSON figures.
#![allow(dead_code)]
use serde_json::Value;
use std::{
    io::{BufRead, BufReader},
    net::SocketAddr,
    process::{Child, Command, Stdio},
};

pub const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

/// `serve` on loopback ports the kernel picks, one worker.
pub const SERVE_ARGS: [&str; 7] = [
    "serve",
    "--http",
    "127.0.0.1:0",
    "--zap",
    "127.0.0.1:0",
    "--threads",
    "1",
];

pub struct Served {
    child: Child,
    pub http: SocketAddr,
    pub zap: SocketAddr,
    /// What it printed after its ready line, gathered until it exits.
    said: Option<std::thread::JoinHandle<String>>,
}

fn addr_after(line: &str, key: &str) -> SocketAddr {
    let rest = &line[line.find(key).unwrap_or_else(|| panic!("{line}")) + key.len()..];
    rest.split([',', ' ']).next().unwrap().parse().unwrap()
}

impl Served {
    /// One worker on `cpu` (when the machine has it), loopback ports chosen by the kernel.
    pub fn start(cpu: u32, extra: &[&str]) -> Self {
        let mut c = Command::new(RXSTEER);
        c.args(SERVE_ARGS);
        if rxsteer_tune::cpus::online_cpus().unwrap().contains(&cpu) {
            c.args(["--cpus", &cpu.to_string()]);
        }
        c.args(extra);
        Self::spawn(c)
    }

    /// A server started by `c` (e.g. under setpriv or qemu), ready once it names its ports.
    pub fn spawn(mut c: Command) -> Self {
        let mut child = c.stderr(Stdio::piped()).spawn().unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        err.read_line(&mut line).unwrap();
        let said = std::thread::spawn(move || {
            let mut all = String::new();
            for l in err.lines().map_while(Result::ok) {
                all.push_str(&l);
                all.push('\n');
            }
            all
        });
        Self {
            http: addr_after(&line, "HTTP on "),
            zap: addr_after(&line, "ZAP on "),
            child,
            said: Some(said),
        }
    }

    /// SIGTERM, then everything it printed after its ready line (the exit summary last).
    pub fn stop(mut self) -> String {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
        self.said
            .take()
            .map_or(String::new(), |h| h.join().unwrap())
    }

    fn status_kib(&self, key: &str) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap()
    }

    pub fn rss_kib(&self) -> u64 {
        self.status_kib("VmRSS:")
    }

    pub fn peak_rss_kib(&self) -> u64 {
        self.status_kib("VmHWM:")
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .count()
    }

    /// What each open descriptor is (socket:[inode], anon_inode:[eventpoll], ...).
    pub fn fd_kinds(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_link(e.path()).ok())
            .map(|l| l.display().to_string())
            .collect();
        v.sort();
        v
    }

    /// Open sockets (the listeners, plus one per live connection).
    pub fn sockets(&self) -> usize {
        self.fd_kinds()
            .iter()
            .filter(|k| k.starts_with("socket:"))
            .count()
    }

    /// Waits up to `within` for `count` to fall to `baseline`; returns the last count.
    pub fn settle(
        &self,
        count: fn(&Self) -> usize,
        baseline: usize,
        within: std::time::Duration,
    ) -> usize {
        let deadline = std::time::Instant::now() + within;
        loop {
            let n = count(self);
            if n <= baseline || std::time::Instant::now() > deadline {
                return n;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// rxload against `url`, pinned to `cpu` when the machine has it; its JSON.
pub fn rxload(url: &str, cpu: u32, args: &[&str]) -> Value {
    let json = std::env::temp_dir().join(format!(
        "rxload-{}-{}.json",
        std::process::id(),
        url.replace([':', '/', '.'], "_")
    ));
    let rxload = std::path::Path::new(RXSTEER).with_file_name("rxload");
    let mut c = if rxsteer_tune::cpus::online_cpus().unwrap().contains(&cpu) {
        let mut c = Command::new("taskset");
        c.args(["-c", &cpu.to_string()]).arg(rxload);
        c
    } else {
        Command::new(rxload)
    };
    let out = c
        .arg(url)
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c <= 1),
        "rxload {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    v
}

pub fn errors(v: &Value) -> u64 {
    v["errors"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .sum()
}

pub fn p99(v: &Value) -> u64 {
    v["latency_us"]["quantiles"]["p99"].as_u64().unwrap()
}
