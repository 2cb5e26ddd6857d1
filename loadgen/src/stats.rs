//! Per-thread statistics, merged at the end: an HDR latency histogram (microseconds), counts,
//! status codes and errors by kind. Recording allocates nothing.
use hdrhistogram::Histogram;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Connect,
    Timeout,
    Read,
    Write,
    /// A response that does not parse (bad framing, bad ZAP length, not HTTP).
    Protocol,
    /// A status other than the one the request should get.
    Status,
    /// The right status with the wrong body.
    Body,
    /// A response rxload does not read: a streamed ZAP response (ResponseHead, Data..., End).
    Unsupported,
}

pub const ERROR_KINDS: [&str; 8] = [
    "connect",
    "timeout",
    "read",
    "write",
    "protocol",
    "status",
    "body",
    "unsupported",
];

pub struct Stats {
    pub latency_us: Histogram<u64>,
    pub ok: u64,
    pub bytes_out: u64,
    pub bytes_in: u64,
    /// Responses by status code (index = code), counted for every parsed response.
    pub status: Box<[u64; 600]>,
    pub errors: [u64; 8],
    /// Connections opened again after an error (each after a back-off).
    pub reconnects: u64,
    /// Requests sent (a failed connect counts as one), in every part of the run.
    pub sent: u64,
    /// Outcomes counted outside the measured figures: of requests sent in the warm-up, and
    /// of requests whose outcome came after the window closed.
    pub warmup: Outcomes,
    pub after_window: Outcomes,
}

pub use rxsteer_records::load::Outcomes;

impl Stats {
    pub fn new() -> Self {
        Self {
            latency_us: Histogram::new_with_bounds(1, 60_000_000, 3).expect("histogram bounds"),
            ok: 0,
            bytes_out: 0,
            bytes_in: 0,
            status: Box::new([0; 600]),
            errors: [0; 8],
            reconnects: 0,
            sent: 0,
            warmup: Outcomes::default(),
            after_window: Outcomes::default(),
        }
    }

    pub fn error(&mut self, kind: ErrorKind) {
        self.errors[kind as usize] += 1;
    }

    pub fn merge(&mut self, o: &Stats) {
        self.latency_us
            .add(&o.latency_us)
            .expect("same histogram bounds");
        self.ok += o.ok;
        self.bytes_out += o.bytes_out;
        self.bytes_in += o.bytes_in;
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += b;
        }
        self.reconnects += o.reconnects;
        for (a, b) in self.errors.iter_mut().zip(o.errors) {
            *a += b;
        }
        self.sent += o.sent;
        for (a, b) in [
            (&mut self.warmup, &o.warmup),
            (&mut self.after_window, &o.after_window),
        ] {
            a.answered += b.answered;
            a.failed += b.failed;
        }
    }

    /// Every request sent, by where its outcome fell; what has none was in flight at the end.
    pub fn accounting(&self) -> rxsteer_records::load::Accounting {
        let measured = Outcomes {
            answered: self.ok,
            failed: self.total_errors(),
        };
        let finished = self.warmup.total() + measured.total() + self.after_window.total();
        rxsteer_records::load::Accounting {
            sent: self.sent,
            warmup: self.warmup,
            measured,
            after_window: self.after_window,
            unanswered_at_end: self.sent.saturating_sub(finished),
        }
    }

    pub fn total_errors(&self) -> u64 {
        self.errors.iter().sum()
    }
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_everything_and_keeps_percentiles() {
        let (mut a, mut b) = (Stats::new(), Stats::new());
        for v in 1..=100 {
            a.latency_us.record(v).unwrap();
        }
        for v in 901..=1000 {
            b.latency_us.record(v).unwrap();
        }
        a.ok = 100;
        b.ok = 100;
        a.status[200] = 100;
        b.status[200] = 99;
        b.status[500] = 1;
        b.error(ErrorKind::Status);
        a.merge(&b);
        assert_eq!(
            (a.ok, a.status[200], a.status[500], a.total_errors()),
            (200, 199, 1, 1)
        );
        assert_eq!(a.latency_us.len(), 200);
        assert_eq!(a.latency_us.value_at_quantile(0.5), 100);
        assert!(a.latency_us.value_at_quantile(0.99) >= 990);
    }
}
