//! What a run prints and stores: the human summary (wrk's shape), the JSON record
//! (`rxsteer_records::LoadResult`), and the one line naming the errors that failed it.
use crate::{
    cli::Args,
    stats::{Stats, ERROR_KINDS},
    target,
};

/// `connect 3, status 12`: the kinds that occurred.
pub fn error_summary(s: &Stats) -> String {
    let kinds: Vec<String> = ERROR_KINDS
        .iter()
        .zip(s.errors)
        .filter(|(_, n)| *n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if kinds.is_empty() {
        "no errors, but no request succeeded".into()
    } else {
        kinds.join(", ")
    }
}

/// A run's figures, as printed and stored.
pub struct Report<'a> {
    pub args: &'a Args,
    pub target: &'a target::Target,
    pub threads: u32,
    pub stats: &'a Stats,
    /// The measured window, in seconds.
    pub elapsed: f64,
    pub allocated: rxsteer_alloc::Counts,
    /// This process's CPU seconds over the window.
    pub cpu: f64,
    pub request_bytes: usize,
}

impl<'a> Report<'a> {
    /// Open loop: did the run deliver at least 95 % of the target rate?
    fn rate_reached(&self) -> bool {
        self.args.rate.is_none_or(|r| self.rps() >= 0.95 * r)
    }

    fn rps(&self) -> f64 {
        self.stats.ok as f64 / self.elapsed.max(1e-9)
    }

    fn per_request(&self, v: u64) -> f64 {
        v as f64 / self.stats.ok.max(1) as f64
    }

    fn quantiles(&self) -> Vec<(&'static str, u64)> {
        let h = &self.stats.latency_us;
        let q = |p: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(p)
            }
        };
        vec![
            ("p50", q(0.5)),
            ("p90", q(0.9)),
            ("p99", q(0.99)),
            ("p99.9", q(0.999)),
            ("p99.99", q(0.9999)),
            ("max", h.max()),
        ]
    }

    pub fn human(&self) -> String {
        let s = self.stats;
        let mut o = format!(
            "{:?} {} {:?} c={} t={} measured {:.2}s (warm-up {:?} excluded)\n",
            self.target.proto,
            self.args.target,
            self.args.scenario,
            self.args.connections,
            self.threads,
            self.elapsed,
            self.args.warmup
        );
        o += &format!(
            "Reqs/sec   {:.0}\nRequests   {} ok, {} errors, {} reconnects\n",
            self.rps(),
            s.ok,
            s.total_errors(),
            s.reconnects
        );
        let a = s.accounting();
        o += &format!(
            "Sent       {}: {} measured, {} in the warm-up ({} failed), {} after the window ({} failed), {} unanswered at the end\n",
            a.sent,
            a.measured.total(),
            a.warmup.total(),
            a.warmup.failed,
            a.after_window.total(),
            a.after_window.failed,
            a.unanswered_at_end
        );
        if let Some(rate) = self.args.rate {
            let verdict = if self.rate_reached() {
                "reached"
            } else {
                "NOT reached"
            };
            o += &format!("Rate       open loop, target {rate:.0}/s: {verdict} (latency from intended send times)\n");
        }
        o += &format!(
            "Transfer   {:.2} MB/s in, {:.2} MB/s out\n",
            s.bytes_in as f64 / self.elapsed / 1e6,
            s.bytes_out as f64 / self.elapsed / 1e6
        );
        o += &format!("Latency    mean {:.0}us", s.latency_us.mean());
        for (name, v) in self.quantiles() {
            o += &format!("  {name} {v}us");
        }
        o += "\nStatus    ";
        for (code, n) in s.status.iter().enumerate().filter(|(_, n)| **n > 0) {
            o += &format!(" {code}: {n}");
        }
        o += "\nErrors    ";
        for (kind, n) in ERROR_KINDS.iter().zip(s.errors) {
            o += &format!(" {kind} {n}");
        }
        o += &format!(
            "\nClient     {:.3} allocs/req, {:.1} B/req, {:.2} CPU-s ({:.0} req per CPU-s), {} B per request on the wire\n",
            self.per_request(self.allocated.allocs),
            self.per_request(self.allocated.bytes),
            self.cpu,
            s.ok as f64 / self.cpu.max(1e-9),
            self.request_bytes
        );
        o
    }

    /// The latency histogram's recorded buckets as [value_us, count] pairs: what another
    /// program needs to merge several loaders' histograms exactly (same precision, 3 digits).
    fn buckets(&self) -> Vec<[u64; 2]> {
        self.stats
            .latency_us
            .iter_recorded()
            .map(|v| [v.value_iterated_to(), v.count_at_value()])
            .collect()
    }

    pub fn json(&self) -> rxsteer_records::LoadResult {
        use rxsteer_records::load::{Client, Latency, LoadResult, OpenLoop, Quantiles};
        let s = self.stats;
        let q: std::collections::BTreeMap<&str, u64> = self.quantiles().into_iter().collect();
        LoadResult {
            target: self.args.target.clone(),
            proto: Some(self.target.proto),
            scenario: Some(self.args.scenario),
            connections: self.args.connections,
            threads: self.threads,
            measured_s: self.elapsed,
            io: Some(self.args.io),
            warmup_s: self.args.warmup.as_secs_f64(),
            requests: s.ok,
            req_per_s: self.rps(),
            open_loop: self.args.rate.map(|r| OpenLoop {
                target_per_s: r,
                reached: self.rate_reached(),
            }),
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            request_wire_bytes: self.request_bytes as u64,
            latency_us: Latency {
                mean: s.latency_us.mean(),
                quantiles: Quantiles {
                    p50: q["p50"],
                    p90: q["p90"],
                    p99: q["p99"],
                    p999: q["p99.9"],
                    p9999: q["p99.99"],
                    max: q["max"],
                },
                histogram: self.buckets(),
            },
            status: s
                .status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(c, n)| (c as u16, *n))
                .collect(),
            errors: ERROR_KINDS
                .iter()
                .zip(s.errors)
                .map(|(k, n)| (k.to_string(), n))
                .collect(),
            reconnects: s.reconnects,
            max_errors_percent: self.args.max_errors,
            client: Client {
                allocs_per_request: self.per_request(self.allocated.allocs),
                bytes_per_request: self.per_request(self.allocated.bytes),
                cpu_s: self.cpu,
                requests_per_cpu_s: s.ok as f64 / self.cpu.max(1e-9),
            },
            loaders: None,
            accounting: Some(s.accounting()),
        }
    }
}
