//! rxload's result (`--json`): one loader's, or several merged into one (`loaders` > 1).
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::names::{LoaderIo, Proto, Scenario};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    pub target: String,
    pub proto: Option<Proto>,
    pub scenario: Option<Scenario>,
    pub connections: u32,
    pub threads: u32,
    pub measured_s: f64,
    #[serde(default)]
    pub io: Option<LoaderIo>,
    pub warmup_s: f64,
    /// Requests answered correctly in the measured window.
    pub requests: u64,
    pub req_per_s: f64,
    #[serde(default)]
    pub open_loop: Option<OpenLoop>,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub request_wire_bytes: u64,
    pub latency_us: Latency,
    /// Responses by HTTP (or ZAP) status.
    pub status: BTreeMap<u16, u64>,
    /// Failed requests by kind (connect, timeout, read, write, status, body, protocol, ...).
    pub errors: BTreeMap<String, u64>,
    #[serde(default)]
    pub reconnects: u64,
    #[serde(default)]
    pub max_errors_percent: f64,
    pub client: Client,
    /// How many loaders' results were merged into this one (absent: one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaders: Option<u32>,
    /// Every request sent, by where its outcome fell (absent from results before it was
    /// kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accounting: Option<Accounting>,
}

/// Answered and failed requests of one part of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcomes {
    pub answered: u64,
    pub failed: u64,
}

impl Outcomes {
    pub fn total(&self) -> u64 {
        self.answered + self.failed
    }
}

/// Every request a loader sent, each in one place: sent = warm-up + measured + after the
/// window + unanswered at the end. The warm-up's are those sent before the window opened and
/// finished outside it; after the window, those sent in it whose outcome came after it
/// closed; unanswered, those still in flight when the run ended (their connections were
/// closed). `measured` is the result's own `requests` and errors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    pub sent: u64,
    pub warmup: Outcomes,
    pub measured: Outcomes,
    pub after_window: Outcomes,
    pub unanswered_at_end: u64,
}

impl Accounting {
    /// Whether every sent request is in exactly one place.
    pub fn balances(&self) -> bool {
        self.sent
            == self.warmup.total()
                + self.measured.total()
                + self.after_window.total()
                + self.unanswered_at_end
    }

    /// Several loaders' accounts added up.
    pub fn add(&mut self, o: &Accounting) {
        let add = |a: &mut Outcomes, b: &Outcomes| {
            a.answered += b.answered;
            a.failed += b.failed;
        };
        self.sent += o.sent;
        add(&mut self.warmup, &o.warmup);
        add(&mut self.measured, &o.measured);
        add(&mut self.after_window, &o.after_window);
        self.unanswered_at_end += o.unanswered_at_end;
    }
}

impl LoadResult {
    /// Every failed request, whatever its kind.
    pub fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }

    pub fn loader_count(&self) -> u32 {
        self.loaders.unwrap_or(1)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenLoop {
    pub target_per_s: f64,
    /// At least 95 % of the target rate was delivered.
    pub reached: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub quantiles: Quantiles,
    /// The recorded buckets as [value_us, count] (absent from the first rxload versions): what merging several loaders' histograms
    /// exactly needs (3 significant digits, 1 us to 60 s).
    #[serde(default)]
    pub histogram: Vec<[u64; 2]>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quantiles {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    #[serde(rename = "p99.9")]
    pub p999: u64,
    #[serde(rename = "p99.99")]
    pub p9999: u64,
    pub max: u64,
}

/// The loader's own cost, over the measured window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Client {
    pub allocs_per_request: f64,
    #[serde(default)]
    pub bytes_per_request: f64,
    #[serde(default)]
    pub cpu_s: f64,
    #[serde(default)]
    pub requests_per_cpu_s: f64,
}
