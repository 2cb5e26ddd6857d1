//! The measuring method every comparing bench shares (README, "How the benches measure"):
//! - efficiency is requests per CPU-second of the process judged, its CPU read from outside
//!   (/proc/PID/stat of the server's thread or process; the kernel's RUSAGE_CHILDREN for a
//!   load generator, which is its /proc stat at exit) over exactly the load's window, for
//!   every arm alike, with no warm-up left out for one arm and counted for another;
//! - at least 7 repetitions, arms rotated, ratios taken per repetition, median and range;
//! - an arm whose spread (max / min over the repetitions) exceeds 1.5x makes the run noisy,
//!   which the output and the JSON say; the run is stored all the same.
#![allow(dead_code)]
use std::time::Duration;

pub const REPS: usize = 7;
pub const NOISY_SPREAD: f64 = 1.5;

/// utime + stime of a task (`/proc/.../stat`), in seconds.
pub fn cpu_seconds(stat_path: &str) -> f64 {
    let (user, sys) = user_sys_seconds(stat_path);
    user + sys
}

/// (utime, stime) of a task, in seconds: its own code's time and the kernel's on its behalf.
pub fn user_sys_seconds(stat_path: &str) -> (f64, f64) {
    let s = std::fs::read_to_string(stat_path).unwrap();
    let after = &s[s.rfind(')').unwrap() + 1..];
    let f: Vec<u64> = after
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    assert!(f.len() > 12, "{stat_path}: {s:?}");
    // Fields 14 and 15 of /proc/PID/stat, counted from the state field (3) after ')'.
    (f[11] as f64 / 100.0, f[12] as f64 / 100.0) // USER_HZ
}

/// CPU seconds of this process's waited-for children so far (a child's whole life).
pub fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The /proc stat paths of this process's threads named `name`.
pub fn own_threads(name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for t in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            found.push(t.path().join("stat").display().to_string());
        }
    }
    found.sort();
    found
}

/// A thread named `name` not in `known` (waits for it to start).
pub fn new_thread(name: &str, known: &[String]) -> String {
    for _ in 0..100 {
        if let Some(t) = own_threads(name).into_iter().find(|t| !known.contains(t)) {
            return t;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no new {name} thread");
}

/// /proc/PID/stat of nginx's worker process (the master's child).
pub fn nginx_worker(master: u32) -> String {
    for _ in 0..100 {
        let kids = std::fs::read_to_string(format!("/proc/{master}/task/{master}/children"))
            .unwrap_or_default();
        if let Some(pid) = kids.split_whitespace().next() {
            return format!("/proc/{pid}/stat");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("nginx started no worker");
}

#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Summary {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "median {:.2}, range {:.2}-{:.2}",
            self.median, self.min, self.max
        )
    }
}

pub fn summary(v: &[f64]) -> Summary {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    Summary {
        median: v[v.len() / 2],
        min: v[0],
        max: v[v.len() - 1],
    }
}

/// Per-repetition ratios `a[i] / b[i]`, summarised.
pub fn ratio(a: &[f64], b: &[f64]) -> Summary {
    let r: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
    summary(&r)
}

/// "NOISY: ..." when an arm's repetitions spread more than [`NOISY_SPREAD`].
pub fn noisy(arm: &str, what: &str, v: &[f64]) -> Option<String> {
    let s = summary(v);
    let spread = s.max / s.min.max(1e-9);
    (spread > NOISY_SPREAD).then(|| {
        format!("NOISY: {arm} {what} spread {spread:.2}x (max/min over the repetitions) exceeds {NOISY_SPREAD}x")
    })
}

/// A target the README quotes, judged on a ratio's median: met, or by how much not, and what
/// bounds it where a floor does.
#[derive(Debug, serde::Serialize)]
pub struct Target {
    pub what: String,
    pub want: f64,
    pub median: f64,
    pub met: bool,
    /// What the floors say: the most any server of that kind reaches, where measured.
    pub bound: Option<String>,
}

impl Target {
    pub fn new(what: &str, s: Summary, want: f64, bound: Option<String>) -> Self {
        Self {
            what: what.to_string(),
            want,
            median: s.median,
            met: s.median >= want,
            bound,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "target: {} >= {:.2}: ", self.what, self.want)?;
        if self.met {
            write!(f, "met (median {:.2})", self.median)?;
        } else {
            write!(
                f,
                "NOT met: median {:.2}, short by {:.2}",
                self.median,
                self.want - self.median
            )?;
        }
        match &self.bound {
            Some(b) => write!(f, "; {b}"),
            None => Ok(()),
        }
    }
}

/// Prints the noisy marks, or that there were none.
pub fn say_noise(noise: &[String]) {
    for n in noise {
        println!("{n}");
    }
    if noise.is_empty() {
        println!("every arm within {NOISY_SPREAD}x over the repetitions");
    }
}

/// The kernel-side counters of one task over `window`, from `perf stat` (software events and
/// the syscall tracepoint: this VM has no hardware counters). Run apart from the timed
/// repetitions, since counting every system call slows the task counted.
pub fn perf_counts(target: PerfTarget, window: Duration) -> Option<(f64, f64)> {
    let (flag, id) = match target {
        PerfTarget::Thread(tid) => ("-t", tid),
        PerfTarget::Process(pid) => ("-p", pid),
    };
    let out = std::process::Command::new("perf")
        .args([
            "stat",
            "-x,",
            "-e",
            "context-switches,raw_syscalls:sys_enter",
        ])
        .args([flag, &id.to_string(), "--", "sleep"])
        .arg(format!("{}", window.as_secs_f64()))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    let count = |event: &str| {
        text.lines()
            .find(|l| l.contains(event))
            .and_then(|l| l.split(',').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    Some((count("context-switches")?, count("raw_syscalls:sys_enter")?))
}

#[derive(Clone, Copy)]
pub enum PerfTarget {
    Thread(u32),
    Process(u32),
}

/// The task id in a /proc/.../stat path.
pub fn task_id(stat_path: &str) -> u32 {
    stat_path
        .trim_end_matches("/stat")
        .rsplit('/')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// One arm's figures in one repetition: req/s, requests per CPU-second of what is judged, and
/// its raw record (`rep` and `order` are added).
pub struct Measured {
    pub req_per_s: f64,
    pub per_cpu_s: f64,
    pub raw: serde_json::Value,
}

/// Every arm measured [`REPS`] times, per arm and repetition.
pub struct Rotated {
    pub rps: Vec<Vec<f64>>,
    pub eff: Vec<Vec<f64>>,
    pub raw: Vec<serde_json::Value>,
}

/// Measures `n` arms [`REPS`] times with `run(rep, arm)`, the order rotated each repetition,
/// and prints one line per repetition: `label` then each arm's `cell(arm, req/s, per CPU-s)`.
pub fn rotate(
    n: usize,
    label: impl Fn(usize) -> String,
    mut run: impl FnMut(usize, usize) -> Measured,
    cell: impl Fn(usize, f64, f64) -> String,
    sep: &str,
) -> Rotated {
    let mut r = Rotated {
        rps: vec![vec![0f64; REPS]; n],
        eff: vec![vec![0f64; REPS]; n],
        raw: Vec::new(),
    };
    for rep in 0..REPS {
        for k in 0..n {
            let i = (k + rep) % n;
            let mut m = run(rep, i);
            r.rps[i][rep] = m.req_per_s;
            r.eff[i][rep] = m.per_cpu_s;
            if let Some(o) = m.raw.as_object_mut() {
                o.insert("rep".into(), rep.into());
                o.insert("order".into(), k.into());
            }
            r.raw.push(m.raw);
        }
        let cells: Vec<String> = (0..n)
            .map(|i| cell(i, r.rps[i][rep], r.eff[i][rep]))
            .collect();
        println!("{}: {}", label(rep), cells.join(sep));
    }
    r
}

/// Writes the run's JSON where `cargo xtask bench` asked (RXSTEER_BENCH_JSON), if it did.
pub fn write_json(doc: &serde_json::Value) {
    if let Some(path) = std::env::var_os("RXSTEER_BENCH_JSON") {
        std::fs::write(path, serde_json::to_string_pretty(doc).unwrap()).unwrap();
    }
}
