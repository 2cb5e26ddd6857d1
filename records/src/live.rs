//! rxload's `--live` line: one per interval while a load runs, what `cargo xtask run` follows.
use serde::{Deserialize, Serialize};

use crate::names::Phase;

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveLine {
    /// Seconds since the load started.
    pub t_s: f64,
    pub phase: Phase,
    pub req_per_s: f64,
    /// Failed requests in this interval.
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
}
