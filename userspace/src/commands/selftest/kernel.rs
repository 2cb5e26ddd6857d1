//! The kernel's own counts, read by the self-check beside the sampler: each through another
//! file or interface than the figure it checks (/proc/softirqs for the softirq tracepoints'
//! runs, /proc/stat for their time, /proc/net/dev for the packets, the IRQs'
//! `per_cpu_count` for /proc/interrupts, prog info for the sampled program statistics).
//! One read is a [`KernelRead`]; two, either side of the sampler's, bound what the kernel
//! counted over the sampler's span.
use anyhow::{bail, Context, Result};
use std::{
    collections::BTreeMap,
    fs::File,
    io::{Read, Seek, SeekFrom},
};

use rxsteer_dataplane::{
    cputime,
    procfs::{self, BACKLOG_THREADS},
};
use rxsteer_records::bpf_cost::ProgramRuns;

/// The kernel's counts at one moment.
#[derive(Clone, Debug, Default)]
pub struct KernelRead {
    /// /proc/softirqs NET_RX, by CPU.
    pub net_rx: BTreeMap<u32, u64>,
    /// /proc/stat's softirq column, ns, by CPU.
    pub softirq_ns: BTreeMap<u32, u64>,
    /// The summed run time (schedstat) of the observed interface's NAPI threads, and of the
    /// backlog threads.
    pub napi_ns: u64,
    pub backlog_ns: u64,
    /// The interface's received packets in /proc/net/dev of its namespace.
    pub rx_packets: u64,
    /// The device's IRQs' per_cpu_count, summed, by CPU.
    pub irqs: BTreeMap<u32, u64>,
    /// rxsteer's programs' prog info (None without BPF).
    pub programs: Option<Vec<ProgramRuns>>,
}

/// What is read, found once at the start: the threads, the device's IRQs, and the
/// interface's /proc/net/dev opened in its own namespace (a /proc/net file keeps the
/// namespace it was opened in, so the lab's server veth is read from this thread too).
pub struct KernelReader {
    iface: String,
    net_dev: File,
    pub napi_pids: Vec<u32>,
    pub backlog_pids: Vec<u32>,
    pub irqs: Vec<u32>,
}

impl KernelReader {
    /// `net_dev`: /proc/thread-self/net/dev opened where the interface lives.
    pub fn new(iface: &str, net_dev: File) -> Result<Self> {
        let napi = rxsteer_tune::pin::napi_comm_prefix(iface);
        let pids = |prefix: &str| -> Result<Vec<u32>> {
            Ok(procfs::kthreads_with_comm_prefix(&[prefix])?
                .into_iter()
                .map(|(pid, _)| pid)
                .collect())
        };
        let reader = Self {
            iface: iface.to_string(),
            net_dev,
            napi_pids: pids(&napi)?,
            backlog_pids: pids(BACKLOG_THREADS)?,
            irqs: procfs::device_irqs(iface),
        };
        reader.rx_packets()?;
        Ok(reader)
    }

    /// Everything, once. `programs`: the prog-info read (the sampler's handles hold the
    /// programs' ids).
    pub fn read(
        &mut self,
        programs: impl FnOnce() -> Result<Option<Vec<ProgramRuns>>>,
    ) -> Result<KernelRead> {
        let mut irqs: BTreeMap<u32, u64> = BTreeMap::new();
        for &irq in &self.irqs {
            for (cpu, n) in procfs::irq_per_cpu_count(irq)? {
                *irqs.entry(cpu).or_default() += n;
            }
        }
        Ok(KernelRead {
            net_rx: procfs::proc_softirqs("NET_RX")?,
            softirq_ns: cputime::proc_stat()?
                .into_iter()
                .map(|(cpu, t)| (cpu, t.softirq))
                .collect(),
            napi_ns: run_ns(&self.napi_pids),
            backlog_ns: run_ns(&self.backlog_pids),
            rx_packets: self.rx_packets()?,
            irqs,
            programs: programs()?,
        })
    }

    fn rx_packets(&self) -> Result<u64> {
        let mut text = String::new();
        let mut f = &self.net_dev;
        f.seek(SeekFrom::Start(0))?;
        f.read_to_string(&mut text)
            .context("reading /proc/net/dev")?;
        match net_dev_rx_packets(&text, &self.iface) {
            Some(n) => Ok(n),
            None => bail!(
                "{} is gone from its network namespace (/proc/net/dev no longer lists it)",
                self.iface
            ),
        }
    }
}

/// The tasks' summed run time (/proc/PID/schedstat); a task gone since is left out.
fn run_ns(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
                .ok()?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// The received packets of `iface` in /proc/net/dev's text (`  eth0: bytes packets ...`).
fn net_dev_rx_packets(text: &str, iface: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (name, counts) = l.split_once(':')?;
        (name.trim() == iface).then(|| counts.split_whitespace().nth(1)?.parse().ok())?
    })
}

/// What the kernel counted between two of the sampler's reads, bounded by reads of its own
/// either side of each: at least `end.before - start.after`, at most `end.after -
/// start.before`.
pub struct Span<'a> {
    pub start: (&'a KernelRead, &'a KernelRead),
    pub end: (&'a KernelRead, &'a KernelRead),
}

impl Span<'_> {
    /// The bounds of one counter, `of` picking it from a read.
    pub fn bounds(&self, of: impl Fn(&KernelRead) -> u64) -> (f64, f64) {
        let low = of(self.end.0).saturating_sub(of(self.start.1));
        let high = of(self.end.1).saturating_sub(of(self.start.0));
        (low as f64, high as f64)
    }
}

/// One CPU's value of a per-CPU read (0 where the CPU is not listed).
pub fn on(map: &BTreeMap<u32, u64>, cpu: u32) -> u64 {
    map.get(&cpu).copied().unwrap_or_default()
}

/// One program's runs and run time in a read (0 where it never ran).
pub fn program(read: &KernelRead, name: &str) -> (u64, u64) {
    read.programs
        .iter()
        .flatten()
        .find(|p| p.name == name)
        .map_or((0, 0), |p| (p.runs, p.ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_dev_is_read_by_the_interfaces_name() {
        let text = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:    1000      10    0    0    0     0          0         0     1000      10    0    0    0     0       0          0
rxs-lab-s: 987654  4321    0    0    0     0          0         0   123456     999    0    0    0     0       0          0
  eth0:12345678  777    0    0    0     0          0         0        0       0    0    0    0     0       0          0
";
        assert_eq!(net_dev_rx_packets(text, "rxs-lab-s"), Some(4321));
        assert_eq!(net_dev_rx_packets(text, "eth0"), Some(777));
        assert_eq!(net_dev_rx_packets(text, "eth1"), None);
    }

    #[test]
    fn a_span_is_bounded_by_the_reads_either_side() {
        let at = |n: u64| KernelRead {
            rx_packets: n,
            ..Default::default()
        };
        let (a, b, c, d) = (at(100), at(102), at(200), at(203));
        let span = Span {
            start: (&a, &b),
            end: (&c, &d),
        };
        assert_eq!(span.bounds(|r| r.rx_packets), (98.0, 103.0));
    }
}
