//! Where each CPU's time went, as the kernel accounts it: the per-CPU lines of /proc/stat, and
//! the user+system time of chosen processes (the server, the loader) by the CPU each thread
//! last ran on. Both are tick-sampled (USER_HZ); they are deltas over an interval, in ns.
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;

pub use rxsteer_records::sample::CpuTimes;

/// Nanoseconds per USER_HZ tick.
pub fn ns_per_tick() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    1_000_000_000 / if hz > 0 { hz as u64 } else { 100 }
}

/// /proc/stat's `cpuN` lines by CPU id.
pub fn proc_stat() -> Result<BTreeMap<u32, CpuTimes>> {
    let text = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    parse_proc_stat(&text, ns_per_tick())
}

fn parse_proc_stat(text: &str, tick_ns: u64) -> Result<BTreeMap<u32, CpuTimes>> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut cols = line.split_whitespace();
        let Some(cpu) = cols
            .next()
            .and_then(|c| c.strip_prefix("cpu"))
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        let cpu: u32 = cpu
            .parse()
            .with_context(|| format!("/proc/stat: {line:?}"))?;
        let v: Vec<u64> = cols
            .take(8)
            .map(|c| c.parse::<u64>().map(|t| t * tick_ns))
            .collect::<Result<_, _>>()
            .with_context(|| format!("/proc/stat: {line:?}"))?;
        if v.len() < 8 {
            bail!(
                "/proc/stat line has {} time columns, expected 8: {line:?}",
                v.len()
            );
        }
        out.insert(
            cpu,
            CpuTimes {
                user: v[0],
                nice: v[1],
                system: v[2],
                idle: v[3],
                iowait: v[4],
                irq: v[5],
                softirq: v[6],
                steal: v[7],
            },
        );
    }
    Ok(out)
}

/// Per thread of one process: (tid, CPU it last ran on, user+system ns so far).
fn threads(pid: u32, tick_ns: u64) -> Vec<(u32, u32, u64)> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| {
            let tid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
            let (cpu, ticks) = parse_task_stat(&stat)?;
            Some((tid, cpu, ticks * tick_ns))
        })
        .collect()
}

/// (processor, utime + stime) of a /proc/PID/stat line; fields counted after the last ')'
/// because the comm may hold spaces and parentheses.
fn parse_task_stat(s: &str) -> Option<(u32, u64)> {
    let f: Vec<&str> = s[s.rfind(')')? + 1..].split_whitespace().collect();
    // After the comm: field 3 (state) is index 0, utime (14) is 11, stime (15) is 12,
    // processor (39) is 36.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    let cpu: u32 = f.get(36)?.parse().ok()?;
    Some((cpu, utime + stime))
}

/// Follows the CPU time of a set of processes, per CPU, from one call to the next.
pub struct ProcessClock {
    pids: Vec<u32>,
    tick_ns: u64,
    last: BTreeMap<u32, u64>,
}

impl ProcessClock {
    pub fn new(pids: Vec<u32>) -> Self {
        let mut c = Self {
            pids,
            tick_ns: ns_per_tick(),
            last: BTreeMap::new(),
        };
        c.take();
        c
    }

    /// ns each CPU spent in these processes since the last call. A thread's time is put on
    /// the CPU it last ran on (the servers and lab loaders are pinned, so that is where it
    /// ran).
    pub fn take(&mut self) -> BTreeMap<u32, u64> {
        let mut by_cpu = BTreeMap::new();
        for &pid in &self.pids {
            for (tid, cpu, ns) in threads(pid, self.tick_ns) {
                let before = self.last.insert(tid, ns).unwrap_or(ns);
                *by_cpu.entry(cpu).or_default() += ns.saturating_sub(before);
            }
        }
        by_cpu
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_by_cpu() {
        let text = "cpu  19082 0 5528 42785 873 0 153 1653 0 0\n\
                    cpu0 8937 1 2487 22699 119 2 11 780 0 0\n\
                    cpu3 10 0 0 5 0 0 0 0 0 0\nintr 5 6\n";
        let m = parse_proc_stat(text, 10_000_000).unwrap();
        assert_eq!(m.keys().copied().collect::<Vec<_>>(), vec![0, 3]);
        let c = m[&0];
        assert_eq!(c.user, 8937 * 10_000_000);
        assert_eq!(
            (c.nice, c.irq, c.softirq),
            (10_000_000, 20_000_000, 110_000_000)
        );
        assert_eq!(
            c.total(),
            (8937 + 1 + 2487 + 22699 + 119 + 2 + 11 + 780) * 10_000_000
        );
        assert!(parse_proc_stat("cpu1 1 2\n", 1).is_err());
    }

    #[test]
    fn task_stat_fields() {
        let mut f: Vec<String> = (3..=52).map(|i| i.to_string()).collect();
        f[11] = "40".into();
        f[12] = "2".into();
        f[36] = "1".into();
        let line = format!("7 (rxsteer (w) 1) {}", f.join(" "));
        assert_eq!(parse_task_stat(&line), Some((1, 42)));
    }

    #[test]
    fn this_machine_reads() {
        let m = proc_stat().unwrap();
        for cpu in rxsteer_tune::cpus::online_cpus().unwrap() {
            assert!(m[&cpu].total() > 0, "CPU {cpu}");
        }
        let mut me = ProcessClock::new(vec![std::process::id()]);
        let t0 = std::time::Instant::now();
        while t0.elapsed() < std::time::Duration::from_millis(60) {
            std::hint::black_box(0u64);
        }
        let spent: u64 = me.take().values().sum();
        assert!(spent <= 1_000_000_000, "{spent}");
    }
}
