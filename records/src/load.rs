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
