//! A nanosecond histogram in log2 buckets, as the kernel programs count it (bucket `i` holds
//! [2^i, 2^(i+1)) ns; see `rxsteer_common::SoftirqStats::net_rx_run_log2`): per interval in a
//! sample, summed over a load. Stored with its trailing empty buckets left off.
use rxsteer_common::N_LOG2;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Log2Ns(pub Vec<u64>);

impl Log2Ns {
    /// Each bucket's growth from `prev` to `now` (a counter that went backwards reads 0).
    pub fn delta(now: &[u64; N_LOG2], prev: &[u64; N_LOG2]) -> Self {
        let mut v: Vec<u64> = now
            .iter()
            .zip(prev)
            .map(|(n, p)| n.saturating_sub(*p))
            .collect();
        while v.last() == Some(&0) {
            v.pop();
        }
        Self(v)
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&n| n == 0)
    }

    pub fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `other`'s buckets to these.
    pub fn add(&mut self, other: &Log2Ns) {
        if self.0.len() < other.0.len() {
            self.0.resize(other.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a += b;
        }
    }

    /// The upper edge of bucket `i`, in ns: what a value counted there is below.
    pub fn upper_ns(i: usize) -> u64 {
        1u64 << (i + 1).min(63)
    }

    /// The upper edge of the bucket that holds the `q` quantile (0 < q <= 1): the value is
    /// below it and at least half of it. None with nothing counted.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = (q * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in self.0.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(Self::upper_ns(i));
            }
        }
        Some(Self::upper_ns(self.0.len() - 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_trim_and_quantiles_name_the_bucket_edge() {
        let mut now = [0u64; N_LOG2];
        let prev = [0u64; N_LOG2];
        now[10] = 90; // [1024, 2048) ns
        now[14] = 9; // [16 us, 32 us)
        now[20] = 1; // [1 ms, 2 ms)
        let h = Log2Ns::delta(&now, &prev);
        assert_eq!(h.0.len(), 21);
        assert_eq!(h.count(), 100);
        assert_eq!(h.quantile_ns(0.5), Some(2048));
        assert_eq!(h.quantile_ns(0.99), Some(32768));
        assert_eq!(h.quantile_ns(1.0), Some(2 << 20));
        let mut sum = Log2Ns::default();
        sum.add(&h);
        sum.add(&Log2Ns(vec![1]));
        assert_eq!(sum.count(), 101);
        assert!(Log2Ns::default().quantile_ns(0.99).is_none());
        assert!(Log2Ns::delta(&prev, &now).is_empty(), "backwards reads 0");
    }

    #[test]
    fn the_kernel_side_bucket_agrees_with_the_edges() {
        for (ns, b) in [
            (0, 0),
            (1, 0),
            (2, 1),
            (3, 1),
            (1023, 9),
            (1024, 10),
            (u64::MAX, 31),
        ] {
            assert_eq!(rxsteer_common::log2_bucket(ns), b, "{ns}");
            if b < N_LOG2 - 1 {
                assert!(ns < Log2Ns::upper_ns(b), "{ns} below bucket {b}'s edge");
            }
        }
    }
}

/// NET_RX's distributions over a load's measured window, per CPU: what a run.json row keeps
/// (the samples' histograms added up).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetRxLog2 {
    /// NET_RX's runs by length, by CPU id.
    pub run: std::collections::BTreeMap<u32, Log2Ns>,
    /// Its waits from first raise to run, by CPU id; None where they were not timed (below
    /// `--observe full`), so absent, not zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<std::collections::BTreeMap<u32, Log2Ns>>,
}

impl NetRxLog2 {
    /// The CPU whose NET_RX ran most often: the receive core the tail is asked about.
    pub fn busiest(&self) -> Option<u32> {
        self.run
            .iter()
            .max_by_key(|(cpu, h)| (h.count(), std::cmp::Reverse(**cpu)))
            .filter(|(_, h)| h.count() > 0)
            .map(|(cpu, _)| *cpu)
    }
}
