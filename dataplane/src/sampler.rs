//! Turns absolute counters (BPF maps, softnet_stat, receive-kthread run time) into per-CPU
//! deltas over one interval. The sampler owns the map handles and runs on its own thread; the
//! view only draws what it sends (bpftop's split).
use anyhow::Result;
use rxsteer_common::{
    RxStats, SoftirqStats, XdpTraceStats, N_CLASSES, N_ERRNO, N_SOFTIRQ, SOFTIRQ_NET_RX,
    SOFTIRQ_NET_TX,
};
use rxsteer_records::{
    bpf_cost::{BpfRuns, ProgramRuns},
    log2::Log2Ns,
    BpfStatsChoice,
};
use std::{
    collections::BTreeMap,
    os::fd::OwnedFd,
    time::{Duration, Instant},
};

use crate::{
    cputime::{self, CpuTimes},
    procfs::{self, KthreadKind, KthreadTime, Softnet},
    Counters,
};

pub use rxsteer_records::sample::{ClassPackets, CpuSample, Sample};

/// Absolute counters at one instant.
struct Snapshot {
    at: Instant,
    rx: Vec<RxStats>,
    softirq: Vec<SoftirqStats>,
    xdp: Vec<XdpTraceStats>,
    on_cpu: Vec<RxStats>,
    tc_ingress: Vec<RxStats>,
    tc_egress: Vec<RxStats>,
    softnet: BTreeMap<u32, Softnet>,
    kthreads: Vec<KthreadTime>,
    stat: BTreeMap<u32, CpuTimes>,
    nic_rx_packets: Option<u64>,
    nic_drops: Option<rxsteer_records::sample::NicDrops>,
    /// The interface's interrupts by CPU (empty where it raises none).
    nic_irqs: BTreeMap<u32, u64>,
    /// Our programs' run counts and times (None without BPF), and the moment they were
    /// read: the first read of a snapshot, so a window divided into their counts is timed
    /// from here.
    programs: Option<Vec<ProgramRuns>>,
    programs_at: Instant,
}

pub struct Sampler {
    /// None: no BPF loaded (`--observer off`); the BPF figures read as zero.
    counters: Option<Counters>,
    /// The observed interface: its NAPI kthreads are receive work, other interfaces' are not.
    iface: String,
    cpus: Vec<u32>,
    started: Instant,
    prev: Snapshot,
    /// The kernel's BPF run-time statistics, on while this is held, or why they are not.
    stats: StatsSwitch,
    /// How often the caller samples.
    interval: Duration,
}

/// `BPF_ENABLE_STATS`, held through the descriptor the kernel returns: the kernel counts
/// every BPF program's run time only while some process holds it on, and turns it off again
/// when the last descriptor closes, whatever ends this process. No sysctl
/// (`kernel.bpf_stats_enabled`) is written, so none can be left behind. On, each program run
/// costs two more clock reads (81 ns on this project's VM), so by default they are on only
/// for a window at the end of each interval.
pub enum StatsSwitch {
    /// On for the sampler's life (`--bpf-stats always`).
    Held(OwnedFd),
    /// On for `window` in the middle of each interval (`--bpf-stats sampled`): `open`, while
    /// the window runs, is the descriptor, when the window began and the programs' counts
    /// then (so what another holder of the statistics, a bpftop or a second rxsteer, had
    /// them count outside the window is not taken for the window's); `closed`, once it has
    /// ended, its length in seconds and the counts at either end, until the sample takes it.
    Windowed {
        window: Duration,
        open: Option<(OwnedFd, Instant, Vec<ProgramRuns>)>,
        closed: Option<(f64, Vec<ProgramRuns>, Vec<ProgramRuns>)>,
    },
    /// No BPF loaded: nothing to count.
    NotNeeded,
    /// The kernel keeps no run-time statistics (before 5.8) or refused: the reason.
    Unavailable(String),
}

/// The kernel's BPF run-time statistics, on while the descriptor is held (see
/// [`StatsSwitch`]), or why the kernel keeps none.
pub fn hold_run_time_stats() -> std::result::Result<OwnedFd, String> {
    aya::sys::enable_stats(aya::sys::Stats::RunTime).map_err(|e| {
        format!("the kernel keeps no BPF run-time statistics here (BPF_ENABLE_STATS, 5.8+): {e}")
    })
}

impl StatsSwitch {
    fn enable() -> std::result::Result<OwnedFd, String> {
        hold_run_time_stats()
    }

    /// Tried once now, so a kernel without them is known (and said) from the first sample.
    fn turn_on(choice: BpfStatsChoice, interval: Duration) -> Self {
        match (Self::enable(), choice) {
            (Err(why), _) => StatsSwitch::Unavailable(why),
            (Ok(fd), BpfStatsChoice::Always) => StatsSwitch::Held(fd),
            (Ok(_), BpfStatsChoice::Sampled) => StatsSwitch::Windowed {
                window: interval / 10,
                open: None,
                closed: None,
            },
        }
    }

    fn unavailable(&self) -> Option<&str> {
        match self {
            StatsSwitch::Unavailable(why) => Some(why),
            _ => None,
        }
    }
}

impl Sampler {
    /// `interval`: how often the caller samples (the statistics' window is a tenth of it).
    pub fn new(
        counters: Option<Counters>,
        iface: &str,
        stats: BpfStatsChoice,
        interval: Duration,
    ) -> Result<Self> {
        let cpus = rxsteer_tune::cpus::online_cpus()?;
        let stats = if counters.is_some() {
            StatsSwitch::turn_on(stats, interval)
        } else {
            StatsSwitch::NotNeeded
        };
        let prev = snapshot(counters.as_ref(), iface)?;
        Ok(Self {
            counters,
            iface: iface.to_string(),
            cpus,
            started: prev.at,
            prev,
            stats,
            interval,
        })
    }

    /// The kernel's own prog-info counts of rxsteer's programs now (None without BPF): what
    /// `rxsteer selftest`, holding the statistics on itself, compares the sampled figures with.
    pub fn program_runs_now(&self) -> Result<Option<Vec<ProgramRuns>>> {
        self.counters
            .as_ref()
            .map(Counters::program_runs)
            .transpose()
    }

    /// The map handles back, for a sampler of another kind over the same programs.
    pub fn into_counters(self) -> Option<Counters> {
        self.counters
    }

    /// How long before each sample the statistics should be turned on (None: they need no
    /// turning on).
    pub fn stats_window(&self) -> Option<Duration> {
        match &self.stats {
            StatsSwitch::Windowed { window, .. } => Some(*window),
            _ => None,
        }
    }

    /// When the statistics' window of the interval that ends at `due` opens and closes: a
    /// tenth of the interval in its middle, away from the sample at its end, whose reads
    /// (milliseconds of /proc on a busy CPU) and whatever the caller then does would
    /// otherwise fall inside it and change what it counts. None: no window to keep.
    pub fn stats_window_around(&self, due: Instant) -> Option<(Instant, Instant)> {
        let w = self.stats_window()?;
        let opens = due.checked_sub(self.interval / 2 + w / 2)?;
        Some((opens, opens + w))
    }

    /// Turns the statistics on for this interval's window (once; a no-op unless sampled, or
    /// once the window has closed). The caller does this at [`stats_window_around`]'s
    /// opening, and [`close_stats_window`] at its close.
    ///
    /// [`stats_window_around`]: Self::stats_window_around
    /// [`close_stats_window`]: Self::close_stats_window
    pub fn open_stats_window(&mut self) -> Result<()> {
        let Some(c) = self.counters.as_ref() else {
            return Ok(());
        };
        if let StatsSwitch::Windowed {
            open: open @ None,
            closed: None,
            ..
        } = &mut self.stats
        {
            match StatsSwitch::enable() {
                Ok(fd) => {
                    // The window opens where its first counts are read.
                    let (runs, at) = timed(|| c.program_runs())?;
                    *open = Some((fd, at, runs))
                }
                Err(why) => self.stats = StatsSwitch::Unavailable(why),
            }
        }
        Ok(())
    }

    /// Ends the open window where its last counts are read, and the statistics with it
    /// (unless another process holds them on too); the next sample scales its runs.
    pub fn close_stats_window(&mut self) -> Result<()> {
        let Some(c) = self.counters.as_ref() else {
            return Ok(());
        };
        if let StatsSwitch::Windowed { open, closed, .. } = &mut self.stats {
            if let Some((fd, since, at_open)) = open.take() {
                let (runs, at) = timed(|| c.program_runs())?;
                drop(fd);
                *closed = Some((window_s(since, at), at_open, runs));
            }
        }
        Ok(())
    }

    /// Counters since the previous call (or since `new`); the kernel's log records since
    /// then go to `log` on the way. With sampled statistics whose window the caller did not
    /// keep, it opens one and waits it out first (closed at the sample).
    pub fn sample(&mut self) -> Result<Sample> {
        if let StatsSwitch::Windowed {
            window,
            open: None,
            closed: None,
        } = self.stats
        {
            self.open_stats_window()?;
            std::thread::sleep(window);
        }
        if let Some(c) = self.counters.as_mut() {
            c.flush_logs();
        }
        let now = snapshot(self.counters.as_ref(), &self.iface)?;
        let mut sample = delta(&self.prev, &now, &self.cpus, self.started);
        // Sampled: the window's runs, counted from its start to its close (or, left open, to
        // here), scaled to the interval. A window still open closes here, and the
        // statistics with it (unless another process holds them on too).
        let window = match &mut self.stats {
            StatsSwitch::Windowed { open, closed, .. } => closed.take().or_else(|| {
                open.take().and_then(|(_fd, since, at_open)| {
                    let at_close = now.programs.clone()?;
                    Some((window_s(since, now.programs_at), at_open, at_close))
                })
            }),
            _ => None,
        };
        sample.bpf = match (self.stats.unavailable(), &self.prev.programs, &now.programs) {
            (Some(why), _, Some(_)) => Some(BpfRuns::Unavailable(why.to_string())),
            (None, Some(p), Some(n)) => Some(BpfRuns::Measured(match &window {
                Some((w, at_open, at_close)) if *w > 0.0 => {
                    scaled(program_deltas(at_open, at_close), sample.interval_s / w)
                }
                _ => program_deltas(p, n),
            })),
            _ => None,
        };
        sample.bpf_window_s = window.map(|(w, ..)| w);
        self.prev = now;
        Ok(sample)
    }
}

/// The span a sampled window's counts cover: from where they were read as it opened to where
/// they were read as it closed.
fn window_s(opened: Instant, closed: Instant) -> f64 {
    closed.saturating_duration_since(opened).as_secs_f64()
}

/// A window's program runs as estimates for the whole interval (`k` = interval / window).
fn scaled(runs: Vec<ProgramRuns>, k: f64) -> Vec<ProgramRuns> {
    runs.into_iter()
        .map(|p| ProgramRuns {
            runs: (p.runs as f64 * k).round() as u64,
            ns: (p.ns as f64 * k).round() as u64,
            ..p
        })
        .collect()
}

/// One map's per-CPU values, or none without BPF (they then read as zero).
fn maps<T>(c: Option<&Counters>, read: fn(&Counters) -> Result<Vec<T>>) -> Result<Vec<T>> {
    c.map_or(Ok(vec![]), read)
}

/// `read`'s value and the moment it stands for: the midpoint of two clock reads around it.
/// A count divided by a window must be divided by the span the counts cover, not by one
/// stamped before other reads that took milliseconds (#53: sampled program costs read 1-8 %
/// high that way).
fn timed<T>(read: impl FnOnce() -> Result<T>) -> Result<(T, Instant)> {
    let before = Instant::now();
    let value = read()?;
    let after = Instant::now();
    Ok((value, before + (after - before) / 2))
}

fn snapshot(c: Option<&Counters>, iface: &str) -> Result<Snapshot> {
    // The programs' counts first: a sampled window closes here, before the milliseconds of
    // map and /proc reads below, whose own work on a busy CPU would otherwise fall inside
    // the window and lengthen the runs it times.
    let (programs, programs_at) = timed(|| c.map(Counters::program_runs).transpose())?;
    let at = Instant::now();
    Ok(Snapshot {
        at,
        rx: maps(c, Counters::rx)?,
        softirq: maps(c, Counters::softirq)?,
        xdp: maps(c, Counters::xdp_trace)?,
        on_cpu: maps(c, Counters::on_cpu)?,
        tc_ingress: maps(c, Counters::tc_ingress)?,
        tc_egress: maps(c, Counters::tc_egress)?,
        softnet: procfs::softnet_stat()?,
        kthreads: procfs::receive_kthreads(iface)?,
        stat: cputime::proc_stat()?,
        nic_rx_packets: procfs::nic_rx_packets(iface),
        nic_drops: procfs::nic_drops(iface),
        nic_irqs: procfs::nic_interrupts(iface)?,
        programs,
        programs_at,
    })
}

/// Each program's runs and run time in the interval; one that did not run is left out.
fn program_deltas(prev: &[ProgramRuns], now: &[ProgramRuns]) -> Vec<ProgramRuns> {
    now.iter()
        .filter_map(|n| {
            let p = prev.iter().find(|p| p.name == n.name);
            let runs = n.runs.saturating_sub(p.map_or(0, |p| p.runs));
            (runs > 0).then(|| ProgramRuns {
                name: n.name.clone(),
                runs,
                ns: n.ns.saturating_sub(p.map_or(0, |p| p.ns)),
            })
        })
        .collect()
}

fn at<T: Copy>(v: &[T], cpu: u32, zero: T) -> T {
    v.get(cpu as usize).copied().unwrap_or(zero)
}

fn delta(prev: &Snapshot, now: &Snapshot, cpus: &[u32], started: Instant) -> Sample {
    let kthread_ns = kthread_deltas(&prev.kthreads, &now.kthreads);
    let mut sample = Sample {
        t_s: now.at.duration_since(started).as_secs_f64(),
        interval_s: now.at.duration_since(prev.at).as_secs_f64(),
        nic_rx_packets: prev
            .nic_rx_packets
            .zip(now.nic_rx_packets)
            .map(|(a, b)| b.saturating_sub(a)),
        nic_drops: prev
            .nic_drops
            .as_ref()
            .zip(now.nic_drops.as_ref())
            .map(|(a, b)| b.delta(a)),
        ..Default::default()
    };
    // The redirect errors and XDP exceptions are the machine's: summed over the CPUs.
    let mut errno = [0u64; N_ERRNO];
    for &cpu in cpus {
        let (x0, x1) = (
            at(&prev.xdp, cpu, XdpTraceStats::ZERO),
            at(&now.xdp, cpu, XdpTraceStats::ZERO),
        );
        for (e, slot) in errno.iter_mut().enumerate() {
            *slot += x1.redirect_err_by_errno[e].saturating_sub(x0.redirect_err_by_errno[e]);
        }
        sample.redirect_err += x1.redirect_err.saturating_sub(x0.redirect_err);
        sample.xdp_exceptions += x1.exceptions().saturating_sub(x0.exceptions());
        let k = kthread_ns.get(&cpu).copied().unwrap_or_default();
        sample.cpus.push(cpu_delta(prev, now, cpu, k));
    }
    sample.redirect_err_by_errno = errno
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(e, &n)| (e.to_string(), n))
        .collect();
    sample
}

/// One CPU's figures between two snapshots; `k` its receive kthreads' time.
fn cpu_delta(prev: &Snapshot, now: &Snapshot, cpu: u32, k: KthreadNs) -> CpuSample {
    let (r0, r1) = (
        at(&prev.rx, cpu, RxStats::ZERO),
        at(&now.rx, cpu, RxStats::ZERO),
    );
    let (s0, s1) = (
        at(&prev.softirq, cpu, SoftirqStats::ZERO),
        at(&now.softirq, cpu, SoftirqStats::ZERO),
    );
    let (x0, x1) = (
        at(&prev.xdp, cpu, XdpTraceStats::ZERO),
        at(&now.xdp, cpu, XdpTraceStats::ZERO),
    );
    let rx_of = |p: &[RxStats], n: &[RxStats]| {
        class_delta(&at(p, cpu, RxStats::ZERO), &at(n, cpu, RxStats::ZERO))
    };
    let class = class_delta(&r0, &r1);
    let arrived = rx_of(&prev.on_cpu, &now.on_cpu);
    let stack = rx_of(&prev.tc_ingress, &now.tc_ingress);
    let tx = rx_of(&prev.tc_egress, &now.tc_egress);
    let steered: u64 = (0..N_CLASSES)
        .map(|i| r1.redirected[i].saturating_sub(r0.redirected[i]))
        .sum();
    let mut softirq_ns = [0u64; N_SOFTIRQ];
    let mut softirq_runs = [0u64; N_SOFTIRQ];
    for v in 0..N_SOFTIRQ {
        softirq_ns[v] = s1.ns[v].saturating_sub(s0.ns[v]);
        softirq_runs[v] = s1.count[v].saturating_sub(s0.count[v]);
    }
    let softnet = match (prev.softnet.get(&cpu), now.softnet.get(&cpu)) {
        (Some(p), Some(n)) => n.delta(p),
        _ => Softnet::default(),
    };
    let time = match (prev.stat.get(&cpu), now.stat.get(&cpu)) {
        (Some(p), Some(n)) => n.delta(p),
        _ => CpuTimes::default(),
    };
    CpuSample {
        cpu,
        packets: r1.total_packets().saturating_sub(r0.total_packets()),
        bytes: r1.total_bytes().saturating_sub(r0.total_bytes()),
        class_packets: ClassPackets::from_array(&class),
        ipv4: r1.ipv4.saturating_sub(r0.ipv4),
        ipv6: r1.ipv6.saturating_sub(r0.ipv6),
        vlan: r1.vlan.saturating_sub(r0.vlan),
        net_rx_ns: softirq_ns[SOFTIRQ_NET_RX],
        net_rx_runs: softirq_runs[SOFTIRQ_NET_RX],
        net_rx_run_log2: Log2Ns::delta(&s1.net_rx_run_log2, &s0.net_rx_run_log2),
        net_rx_wait_log2: Log2Ns::delta(&s1.net_rx_wait_log2, &s0.net_rx_wait_log2),
        net_rx_wait_ns: s1.net_rx_wait_ns.saturating_sub(s0.net_rx_wait_ns),
        net_tx_ns: softirq_ns[SOFTIRQ_NET_TX],
        net_tx_runs: softirq_runs[SOFTIRQ_NET_TX],
        softirq_ns,
        softirq_runs,
        cpumap_kthread_ns: k.cpumap,
        napi_kthread_ns: k.napi,
        other_napi_kthread_ns: k.other_napi,
        backlog_kthread_ns: k.backlog,
        cpumap_processed: x1.kthread_processed.saturating_sub(x0.kthread_processed),
        cpumap_drops: x1.kthread_drops.saturating_sub(x0.kthread_drops),
        enqueue_frames: x1.enqueue_frames.saturating_sub(x0.enqueue_frames),
        enqueue_drops: x1.enqueue_drops.saturating_sub(x0.enqueue_drops),
        arrived_packets: arrived.iter().sum(),
        arrived_class: ClassPackets::from_array(&arrived),
        steered_packets: steered,
        steer_fallback: r1.redirect_fallback.saturating_sub(r0.redirect_fallback),
        softnet,
        stack_packets: stack.iter().sum(),
        stack_class: ClassPackets::from_array(&stack),
        tx_packets: tx.iter().sum(),
        tx_class: ClassPackets::from_array(&tx),
        time,
        nic_irqs: (now.nic_irqs.get(&cpu).copied().unwrap_or(0))
            .saturating_sub(prev.nic_irqs.get(&cpu).copied().unwrap_or(0)),
    }
}

fn class_delta(a: &RxStats, b: &RxStats) -> [u64; N_CLASSES] {
    let mut d = [0u64; N_CLASSES];
    for (i, c) in d.iter_mut().enumerate() {
        *c = b.packets[i].saturating_sub(a.packets[i]);
    }
    d
}

/// Receive kthread run time on one CPU in one interval, by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct KthreadNs {
    cpumap: u64,
    napi: u64,
    other_napi: u64,
    backlog: u64,
}

/// Per CPU: kthread ns run in the interval. A thread that appeared mid-interval counts from
/// zero; one that vanished is dropped.
fn kthread_deltas(prev: &[KthreadTime], now: &[KthreadTime]) -> BTreeMap<u32, KthreadNs> {
    let mut out: BTreeMap<u32, KthreadNs> = BTreeMap::new();
    for k in now {
        let before = prev.iter().find(|p| p.pid == k.pid).map_or(0, |p| p.run_ns);
        let d = k.run_ns.saturating_sub(before);
        let slot = out.entry(k.cpu).or_default();
        match k.kind {
            KthreadKind::Cpumap => slot.cpumap += d,
            KthreadKind::Napi => slot.napi += d,
            KthreadKind::OtherNapi => slot.other_napi += d,
            KthreadKind::Backlog => slot.backlog += d,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kt(pid: u32, kind: KthreadKind, cpu: u32, run_ns: u64) -> KthreadTime {
        KthreadTime {
            pid,
            kind,
            cpu,
            run_ns,
        }
    }

    #[test]
    fn a_program_counts_what_it_ran_in_the_interval_and_one_that_did_not_is_left_out() {
        let r = |name: &str, runs, ns| ProgramRuns {
            name: name.into(),
            runs,
            ns,
        };
        let prev = [r("tc_ingress", 10, 1000), r("steer", 5, 500)];
        let now = [
            r("tc_ingress", 30, 3000),
            r("steer", 5, 500),
            r("rx_driver_poll", 2, 80),
        ];
        assert_eq!(
            program_deltas(&prev, &now),
            vec![r("tc_ingress", 20, 2000), r("rx_driver_poll", 2, 80)]
        );
    }

    /// The sampled window is timed where its counts are read: a slow read before them (the
    /// maps and /proc, milliseconds on a busy box) moves the stamp with it, and the midpoint
    /// of a read stands for it.
    #[test]
    fn a_reading_is_stamped_where_it_was_read() {
        let opened = Instant::now();
        let (v, at) = timed(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            Ok(7)
        })
        .unwrap();
        assert_eq!(v, 7);
        let mid = at.duration_since(opened).as_secs_f64();
        assert!((0.009..0.015).contains(&mid), "{mid}");
        // A window whose close was read 10 ms after its nominal end counts those 10 ms.
        let closed = opened + std::time::Duration::from_millis(110);
        assert!((window_s(opened, closed) - 0.110).abs() < 1e-9);
        assert_eq!(window_s(closed, opened), 0.0);
    }

    #[test]
    fn kthread_time_is_attributed_to_its_cpu() {
        let prev = [
            kt(10, KthreadKind::Cpumap, 1, 100),
            kt(11, KthreadKind::Napi, 0, 50),
        ];
        let now = [
            kt(10, KthreadKind::Cpumap, 1, 400),
            kt(11, KthreadKind::Napi, 0, 60),
            kt(12, KthreadKind::Cpumap, 0, 5),
            kt(13, KthreadKind::OtherNapi, 0, 7),
            kt(14, KthreadKind::Backlog, 1, 9),
        ];
        let d = kthread_deltas(&prev, &now);
        let ns = |cpumap, napi, other_napi, backlog| KthreadNs {
            cpumap,
            napi,
            other_napi,
            backlog,
        };
        assert_eq!(d[&1], ns(300, 0, 0, 9));
        assert_eq!(d[&0], ns(5, 10, 7, 0));
    }

    #[test]
    fn deltas_per_cpu() {
        let started = Instant::now();
        let mut rx1 = RxStats::ZERO;
        rx1.packets[0] = 7;
        rx1.bytes[0] = 700;
        rx1.ipv4 = 7;
        let mut si1 = SoftirqStats::ZERO;
        si1.count[SOFTIRQ_NET_RX] = 3;
        si1.ns[SOFTIRQ_NET_RX] = 9000;
        let mut x1 = XdpTraceStats::ZERO;
        x1.redirect_err = 2;
        x1.redirect_err_by_errno[28] = 2;
        let snap = |rx, si, x, nic| Snapshot {
            at: started,
            rx: vec![RxStats::ZERO, rx],
            softirq: vec![SoftirqStats::ZERO, si],
            xdp: vec![XdpTraceStats::ZERO, x],
            on_cpu: vec![],
            tc_ingress: vec![RxStats::ZERO, rx],
            tc_egress: vec![],
            softnet: BTreeMap::new(),
            kthreads: vec![],
            stat: BTreeMap::new(),
            nic_rx_packets: nic,
            nic_drops: nic.map(|n| rxsteer_records::sample::NicDrops {
                counters: BTreeMap::from([("rx_missed_errors".into(), n / 250)]),
                driver: BTreeMap::from([("rx_no_buffer_count".into(), n / 125)]),
            }),
            nic_irqs: BTreeMap::from([(1, nic.unwrap_or(0) / 10)]),
            programs: None,
            programs_at: started,
        };
        let prev = snap(
            RxStats::ZERO,
            SoftirqStats::ZERO,
            XdpTraceStats::ZERO,
            Some(1000),
        );
        let now = snap(rx1, si1, x1, Some(1250));
        let s = delta(&prev, &now, &[0, 1], started);
        assert_eq!(
            s.nic_rx_packets,
            Some(250),
            "the interface's own count, as a delta"
        );
        // The NIC's own losses, as deltas of each counter (4 then 5 missed, 8 then 10 no
        // buffer); none where the interface was not read.
        let drops = s.nic_drops.clone().unwrap();
        assert_eq!((drops.total(), drops.driver_max(), drops.lost()), (1, 2, 2));
        let unread = snap(rx1, si1, x1, None);
        assert_eq!(delta(&prev, &unread, &[0, 1], started).nic_rx_packets, None);
        assert_eq!(delta(&prev, &unread, &[0, 1], started).nic_drops, None);
        assert_eq!(s.cpus[0].packets, 0);
        assert_eq!(
            (
                s.cpus[1].packets,
                s.cpus[1].bytes,
                s.cpus[1].class_packets.http
            ),
            (7, 700, 7)
        );
        assert_eq!((s.cpus[1].net_rx_runs, s.cpus[1].net_rx_ns), (3, 9000));
        // The interface's interrupts, per CPU, as deltas (100 then 125 on CPU 1).
        assert_eq!((s.cpus[0].nic_irqs, s.cpus[1].nic_irqs), (0, 25));
        assert_eq!(
            (s.cpus[1].stack_packets, s.cpus[1].stack_class.http),
            (7, 7)
        );
        assert_eq!(s.redirect_err, 2);
        assert_eq!(s.redirect_err_by_errno.get("28"), Some(&2));
    }
}
