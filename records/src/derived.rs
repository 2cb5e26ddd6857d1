//! The per-CPU figures a reader derives from one sample, computed once: the live JSON line
//! (`top --json`, `attach --json`) carries them beside its raw columns, and a comparison's
//! run.json sums the same claims and time split over its windows. A consumer of the live line
//! need not derive receive ms/s or the time split again, nor risk counting kthread time
//! twice (the split counts each nanosecond once).
use serde::{Deserialize, Serialize};

use crate::{
    breakdown::{Claims, TimeSplit},
    sample::{CpuSample, Sample, SampleLine},
};

/// What one CPU's tasks claimed in a sample: the exact softirq and kthread figures, and the
/// judged processes' time where the caller knows them (`server_ns`, `loader_ns`; 0 in a live
/// line, which judges no process, so their time is in `other`).
pub fn claims(c: &CpuSample, server_ns: u64, loader_ns: u64) -> Claims {
    Claims {
        net_rx: c.net_rx_ns,
        other_softirq: c.softirq_ns.iter().sum::<u64>().saturating_sub(c.net_rx_ns),
        receive_kthread: c.kthread_ns(),
        loader_kthread: c.other_napi_kthread_ns,
        server: server_ns,
        loader: loader_ns,
    }
}

/// One CPU's time over an interval of `interval_s`, each nanosecond once.
pub fn time_split(c: &CpuSample, interval_s: f64, server_ns: u64, loader_ns: u64) -> TimeSplit {
    TimeSplit::of(interval_s * 1e9, &c.time, &claims(c, server_ns, loader_ns))
}

/// One CPU's derived figures, in ms per second of the interval.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuDerived {
    pub cpu: u32,
    /// NET_RX softirq plus the receive kthreads ([`CpuSample::receive_ns`]).
    pub receive_ms_per_s: f64,
    pub net_rx_ms_per_s: f64,
    pub kthread_ms_per_s: f64,
    /// Where the CPU's time went (`server` and `loader` are 0: no process is judged live).
    pub time_ms_per_s: TimeSplit,
}

impl CpuDerived {
    pub fn of(c: &CpuSample, interval_s: f64) -> Self {
        let per_s = |ns: u64| ns as f64 / 1e6 / interval_s.max(1e-9);
        Self {
            cpu: c.cpu,
            receive_ms_per_s: per_s(c.receive_ns()),
            net_rx_ms_per_s: per_s(c.net_rx_ns),
            kthread_ms_per_s: per_s(c.kthread_ns()),
            time_ms_per_s: time_split(c, interval_s, 0, 0).rate(interval_s),
        }
    }
}

/// A live JSON line: the sample line and every CPU's derived figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DerivedLine {
    #[serde(flatten)]
    pub line: SampleLine,
    pub derived: Vec<CpuDerived>,
}

impl DerivedLine {
    pub fn of(line: SampleLine) -> Self {
        let derived = per_cpu(&line.sample);
        Self { line, derived }
    }
}

/// Every CPU's derived figures of one sample.
pub fn per_cpu(s: &Sample) -> Vec<CpuDerived> {
    s.cpus
        .iter()
        .map(|c| CpuDerived::of(c, s.interval_s))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::CpuTimes;
    use rxsteer_common::SOFTIRQ_NET_RX;

    /// A CPU busy 600 of 1000 ms: 200 ms NET_RX, 50 ms other softirq, 300 ms NAPI kthread. The
    /// kthread's time is also in /proc/stat's system column; the split counts it once.
    #[test]
    fn a_live_lines_figures_count_each_nanosecond_once() {
        let mut softirq_ns = [0u64; rxsteer_common::N_SOFTIRQ];
        softirq_ns[SOFTIRQ_NET_RX] = 200_000_000;
        softirq_ns[1] = 50_000_000;
        let c = CpuSample {
            cpu: 3,
            net_rx_ns: 200_000_000,
            softirq_ns,
            napi_kthread_ns: 300_000_000,
            time: CpuTimes {
                system: 350_000_000,
                softirq: 250_000_000,
                idle: 400_000_000,
                ..Default::default()
            },
            ..Default::default()
        };
        let d = CpuDerived::of(&c, 1.0);
        assert_eq!(d.cpu, 3);
        assert_eq!(d.receive_ms_per_s, 500.0);
        assert_eq!(d.kthread_ms_per_s, 300.0);
        let t = d.time_ms_per_s;
        assert_eq!(
            (t.net_rx, t.other_softirq, t.receive_kthread),
            (200.0, 50.0, 300.0)
        );
        assert_eq!((t.other, t.idle, t.total()), (50.0, 400.0, 1000.0));
        let line = DerivedLine::of(SampleLine {
            sample: Sample {
                interval_s: 1.0,
                cpus: vec![c],
                ..Default::default()
            },
            ..Default::default()
        });
        let text = serde_json::to_string(&line).unwrap();
        assert!(
            text.contains(r#""derived":[{"cpu":3,"receive_ms_per_s":500.0"#),
            "{text}"
        );
        // A reader of the plain sample line still reads it.
        let back: SampleLine = serde_json::from_str(&text).unwrap();
        assert_eq!(back, line.line);
    }
}
