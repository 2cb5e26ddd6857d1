//! rxload's command line: the flags, their parsers (one line naming flag, value and range
//! on a bad value), and what they name.
use clap::Parser;
use std::time::Duration;

use crate::{
    bind,
    scenario::{self, Scenario},
};

#[derive(Parser, Debug)]
#[command(
    name = "rxload",
    version,
    about = "HTTP/1.1 and ZAP load generator (closed loop, HDR latency, validated responses)",
    after_help = "Exit status: 0 the run passed; 1 more measured requests failed than \
                  --max-errors allows, or none succeeded; 2 a bad flag or the run could not \
                  start; 3 a load thread died (the figures printed are the other threads')."
)]
pub struct Args {
    /// http://host:port/path or zap://host:port/path
    pub target: String,
    /// Connections, one request in flight each.
    #[arg(short, long, default_value = "125", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub connections: u32,
    /// Threads (default: online CPUs, at most one per connection).
    #[arg(short, long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Measured duration (default 10s). With -n it is the hard deadline: the run ends at N
    /// requests or at this time, whichever comes first (-n alone: 10 minutes).
    #[arg(short, long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// HTTP pipelining: this many requests written back to back per connection, their
    /// responses read in order (1 = one request in flight).
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub pipeline: u32,
    /// Stop after this many measured requests, answered or failed.
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,
    /// The share of measured requests that may fail before the run exits non-zero, in
    /// percent (0-100; default 0: any failure). A run with no successful response exits 1
    /// whatever this allows: it measured nothing. The error kinds and counts are printed and
    /// in --json either way.
    #[arg(long, default_value = "0", value_parser = parse_percent)]
    pub max_errors: f64,
    /// Open loop: this many requests per second in total, on a fixed schedule spread over
    /// the connections; latency counts from each request's intended send time.
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,
    /// Warm-up before measuring, excluded from every figure.
    #[arg(long, default_value = "1s", value_parser = parse_duration_zero)]
    pub warmup: Duration,
    #[arg(long, value_enum, default_value = "health")]
    pub scenario: Scenario,
    /// Echo or upload body: bytes, or tiny (16), small (256), chat (~800 B JSON), medium
    /// (4 KiB), large (64 KiB). Default: large for upload, tiny otherwise.
    #[arg(long, value_parser = scenario::body_size)]
    pub body_size: Option<usize>,
    /// Explicit method (the response is then only checked for a 2xx status).
    #[arg(short, long)]
    pub method: Option<String>,
    /// Extra header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,
    /// Explicit body: a literal, or @file.
    #[arg(long)]
    pub body: Option<String>,
    /// Write every figure as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Write the latency distribution in HdrHistogram's percentile text format (ms).
    #[arg(long)]
    pub hgrm: Option<std::path::PathBuf>,
    /// Write one JSON line per interval while running (req/s, errors, p50/p99/max).
    #[arg(long)]
    pub live: Option<std::path::PathBuf>,
    /// Source addresses (and port ranges) to connect from, round-robin over the
    /// connections: ADDR[:LOW-HIGH],... (e.g. 10.0.0.2:40000-40999,10.0.0.3).
    #[arg(long, value_parser = bind::parse)]
    pub bind: Option<bind::Bind>,
    /// I/O engine: tokio (epoll; every mode) or uring (one io_uring per thread for the closed
    /// loop with one request in flight: fewer system calls per request).
    #[arg(long, value_enum, default_value = "tokio")]
    pub io: Io,
    /// Interval of --live lines and of the terminal progress line.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub live_interval: Duration,
}

pub use rxsteer_records::LoaderIo as Io;

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?;
    if d.is_zero() {
        return Err(format!("{s:?}: must be more than 0"));
    }
    Ok(d)
}

fn parse_duration_zero(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 100e6 => Ok(r),
        _ => Err(format!("--rate {s:?}: requests per second, more than 0")),
    }
}

fn parse_header(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not 'Name: value'"))?;
    let k = k.trim();
    if k.is_empty()
        || k.bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err(format!("{s:?}: bad header name"));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

fn parse_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("{s:?} is not a percentage"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("{s:?}: a percentage from 0 to 100"));
    }
    Ok(v)
}
