//! Where every CPU's time went, each nanosecond counted once, and the bottleneck verdict that
//! follows from it.
//!
//! Sources: /proc/stat per CPU (the wall, idle, irq), the BPF softirq accounting (NET_RX and
//! the other vectors, exact), the receive kthreads' run time (schedstat, exact) and the
//! server's and loader's user+system time per CPU (tick-sampled).
//!
//! /proc/stat is tick-sampled, and on a VM its ticks bunch: a CPU's columns over 500 ms add
//! up to anything from 450 to 520 ms here. So the columns are scaled to the interval's wall
//! time first (they give the shares), while the exact figures keep their nanoseconds.
//!
//! The overlap rule: softirq work that runs in a task's context (on `local_bh_enable` in a
//! cpumap or NAPI kthread, or on return from an interrupt in the server thread) is also in
//! that task's time when the kernel has no IRQ_TIME_ACCOUNTING, as on this project's
//! machines. So softirq and irq are taken first, and the tasks share what is left of the
//! CPU's busy time: their claims are scaled down together when they add up to more. The parts
//! then sum to /proc/stat's wall exactly, and busy parts to its busy time unless the exact
//! softirq figure is above the tick-sampled busy time (then softirq wins; off by at most a
//! tick per interval).
use serde::{Deserialize, Serialize};

use crate::sample::CpuTimes;

/// One CPU's time by what it was spent on. In ns for one interval, or in ms per second of
/// the measured window (`rate`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimeSplit {
    /// The server process (`rxsteer serve`), user and system.
    pub server: f64,
    /// The load generator, and in the lab its veth's receive kthread (work a real set-up
    /// does on the loader's machine).
    pub loader: f64,
    /// NET_RX softirq.
    pub net_rx: f64,
    /// Receive kthreads of the observed interface: cpumap targets and threaded NAPI.
    pub receive_kthread: f64,
    /// Every other softirq vector.
    pub other_softirq: f64,
    pub irq: f64,
    /// Everything else that ran: other processes, the kernel, and hypervisor steal.
    pub other: f64,
    pub idle: f64,
}

/// The parts' names, in the order `parts` gives them (and the charts stack them).
pub const PARTS: [&str; 8] = [
    "server",
    "loader",
    "NET_RX softirq",
    "receive kthread",
    "other softirq",
    "irq",
    "other",
    "idle",
];

/// What one CPU's tasks claimed over an interval, in ns.
#[derive(Clone, Copy, Debug, Default)]
pub struct Claims {
    pub net_rx: u64,
    pub other_softirq: u64,
    pub receive_kthread: u64,
    pub loader_kthread: u64,
    pub server: u64,
    pub loader: u64,
}

impl TimeSplit {
    /// One CPU's interval of `wall_ns`: /proc/stat's columns scaled to it, with the exact
    /// claims fitted in. The parts add up to `wall_ns`.
    pub fn of(wall_ns: f64, stat: &CpuTimes, c: &Claims) -> TimeSplit {
        let k = if stat.total() > 0 {
            wall_ns / stat.total() as f64
        } else {
            0.0
        };
        let wall = if stat.total() > 0 { wall_ns } else { 0.0 };
        let idle = (stat.idle + stat.iowait) as f64 * k;
        let busy = wall - idle;
        let irq = (stat.irq as f64 * k).min(busy);
        // Exact softirq first, within what the CPU was busy.
        let softirq_claim = (c.net_rx + c.other_softirq) as f64;
        let softirq = softirq_claim.min(busy - irq);
        let soft_scale = if softirq_claim > 0.0 {
            softirq / softirq_claim
        } else {
            0.0
        };
        let tasks = busy - irq - softirq;
        let task_claims = [
            c.server as f64,
            (c.loader + c.loader_kthread) as f64,
            c.receive_kthread as f64,
        ];
        let claimed: f64 = task_claims.iter().sum();
        let task_scale = if claimed > tasks && claimed > 0.0 {
            tasks / claimed
        } else {
            1.0
        };
        let [server, loader, receive_kthread] = task_claims.map(|x| x * task_scale);
        TimeSplit {
            server,
            loader,
            net_rx: c.net_rx as f64 * soft_scale,
            receive_kthread,
            other_softirq: c.other_softirq as f64 * soft_scale,
            irq,
            other: (tasks - server - loader - receive_kthread).max(0.0),
            idle,
        }
    }

    /// The parts in `PARTS` order.
    pub fn parts(&self) -> [f64; 8] {
        [
            self.server,
            self.loader,
            self.net_rx,
            self.receive_kthread,
            self.other_softirq,
            self.irq,
            self.other,
            self.idle,
        ]
    }

    pub fn total(&self) -> f64 {
        self.parts().iter().sum()
    }

    pub fn busy(&self) -> f64 {
        self.total() - self.idle
    }

    /// Receive work: NET_RX softirq plus the receive kthreads.
    pub fn receive(&self) -> f64 {
        self.net_rx + self.receive_kthread
    }

    pub fn add(&mut self, o: &TimeSplit) {
        self.server += o.server;
        self.loader += o.loader;
        self.net_rx += o.net_rx;
        self.receive_kthread += o.receive_kthread;
        self.other_softirq += o.other_softirq;
        self.irq += o.irq;
        self.other += o.other;
        self.idle += o.idle;
    }

    /// ns summed over `seconds` of wall time → ms per second, rounded to 0.1.
    pub fn rate(&self, seconds: f64) -> TimeSplit {
        self.scaled(1.0 / 1e6 / seconds.max(1e-9))
    }

    /// Every part times `k`, rounded to 0.1 (a mean: `k` = 1 / count).
    pub fn scaled(&self, k: f64) -> TimeSplit {
        let f = |x: f64| (x * k * 10.0).round() / 10.0;
        TimeSplit {
            server: f(self.server),
            loader: f(self.loader),
            net_rx: f(self.net_rx),
            receive_kthread: f(self.receive_kthread),
            other_softirq: f(self.other_softirq),
            irq: f(self.irq),
            other: f(self.other),
            idle: f(self.idle),
        }
    }
}

/// What limited a load, from its CPUs' time splits (ms per second each).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Receive-bound, server-bound, loader-bound, ... or not CPU-bound.
    pub bound: String,
    /// The saturated CPUs (busy >= `SATURATED`), or the busiest one when none is.
    pub cpus: Vec<u32>,
    /// Idle capacity left over the window, in CPUs (1.0 = one whole CPU idle).
    pub idle_cpus: f64,
    /// The plain sentence: per named CPU, how busy and on what.
    pub text: String,
}

/// Busy share at which a CPU counts as saturated.
pub const SATURATED: f64 = 0.9;

/// What the load itself says of its limit when no CPU is saturated: a closed loop of
/// `connections` can serve at most connections / mean latency (Little's law); an open loop
/// serves what it is offered.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LoadShape {
    pub connections: u32,
    pub mean_us: Option<f64>,
    pub req_per_s: Option<f64>,
    /// Open loop: the offered rate (requests per second).
    pub rate: Option<f64>,
}

/// A closed loop's req/s within this share of connections / mean latency is latency-bound.
const LITTLE_SLACK: f64 = 0.2;

/// "91k" / "950": a request rate for a sentence.
pub fn rate_text(r: f64) -> String {
    if r >= 10_000.0 {
        format!("{:.0}k", r / 1000.0)
    } else {
        format!("{r:.0}")
    }
}

impl LoadShape {
    /// The limit and its sentence, when no CPU was saturated.
    fn limit(&self) -> (String, String) {
        let served = self.req_per_s.unwrap_or(0.0);
        if let Some(rate) = self.rate {
            return if served >= 0.95 * rate {
                (
                    "offered-load-bound".into(),
                    format!(
                        "offered-load-bound: the open loop asked for {} req/s and got {}; \
                         raise --rate to find the limit",
                        rate_text(rate),
                        rate_text(served)
                    ),
                )
            } else {
                (
                    "wait-bound".into(),
                    format!(
                        "wait-bound: {} of the {} req/s offered were served with no CPU \
                         saturated: the server's own wait or the network held them back",
                        rate_text(served),
                        rate_text(rate)
                    ),
                )
            };
        }
        match self.mean_us.filter(|m| *m > 0.0 && self.connections > 0) {
            Some(mean) => {
                let allowed = self.connections as f64 / (mean / 1e6);
                let bound = if (served - allowed).abs() <= LITTLE_SLACK * allowed {
                    "latency-bound"
                } else {
                    "wait-bound"
                };
                (
                    bound.into(),
                    format!(
                        "{bound}: {} connections x {:.2} ms mean latency allow {} req/s \
                         (Little's law; served {}); raise -c or use --rate",
                        self.connections,
                        mean / 1000.0,
                        rate_text(allowed),
                        rate_text(served)
                    ),
                )
            }
            None => ("not CPU-bound".into(), "not CPU-bound".into()),
        }
    }
}

pub fn verdict(cpus: &[(u32, TimeSplit)], load: &LoadShape) -> Option<Verdict> {
    let busiest = cpus
        .iter()
        .filter(|(_, t)| t.total() > 0.0)
        .max_by(|a, b| share(&a.1).total_cmp(&share(&b.1)))?;
    let saturated: Vec<&(u32, TimeSplit)> = cpus
        .iter()
        .filter(|(_, t)| t.total() > 0.0 && share(t) >= SATURATED)
        .collect();
    let named = if saturated.is_empty() {
        vec![busiest]
    } else {
        saturated
    };
    let idle_cpus: f64 = cpus
        .iter()
        .filter(|(_, t)| t.total() > 0.0)
        .map(|(_, t)| t.idle / t.total())
        .sum();
    let mut sentences = Vec::new();
    let mut bounds = Vec::new();
    for (cpu, t) in &named {
        let (top, what) = largest(t);
        let busy = t.busy().max(1e-9);
        let mut parts: Vec<(&str, f64)> = kinds(t).filter(|(_, v)| *v > 0.0).collect();
        parts.sort_by(|a, b| b.1.total_cmp(&a.1));
        let listed: Vec<String> = parts
            .iter()
            .take(2)
            .map(|(k, v)| format!("{:.0} % {k}", v / busy * 100.0))
            .collect();
        sentences.push(format!(
            "CPU {cpu}: {:.0} % busy, {} of it",
            share(t) * 100.0,
            listed.join(", ")
        ));
        if top > 0.0 {
            bounds.push(what);
        }
    }
    bounds.dedup();
    let (bound, said) = if share(&busiest.1) < SATURATED {
        load.limit()
    } else {
        let b = bounds
            .iter()
            .map(|b| format!("{b}-bound"))
            .collect::<Vec<_>>()
            .join(" and ");
        (b.clone(), b)
    };
    let text = format!(
        "{} → {said}; {idle_cpus:.2} CPU(s) of idle capacity left",
        sentences.join("; ")
    );
    Some(Verdict {
        bound,
        cpus: named.iter().map(|(c, _)| *c).collect(),
        idle_cpus: (idle_cpus * 100.0).round() / 100.0,
        text,
    })
}

fn share(t: &TimeSplit) -> f64 {
    t.busy() / t.total().max(1e-9)
}

/// The busy parts (all but idle) by name.
fn kinds(t: &TimeSplit) -> impl Iterator<Item = (&'static str, f64)> {
    PARTS.into_iter().zip(t.parts()).take(PARTS.len() - 1)
}

fn largest(t: &TimeSplit) -> (f64, &'static str) {
    [
        (t.receive(), "receive"),
        (t.server, "server"),
        (t.loader, "loader"),
        (t.other_softirq + t.irq, "interrupt"),
        (t.other, "other-work"),
    ]
    .into_iter()
    .max_by(|a, b| a.0.total_cmp(&b.0))
    .unwrap_or((0.0, "receive"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn stat(user: u64, system: u64, softirq: u64, idle: u64) -> CpuTimes {
        CpuTimes {
            user: user * MS,
            system: system * MS,
            softirq: softirq * MS,
            idle: idle * MS,
            ..Default::default()
        }
    }

    #[test]
    fn parts_sum_to_the_wall_and_busy_time() {
        // 500 ms wall: 300 busy. The server claims 250 ms (ticks), the kthread 100 ms, and
        // NET_RX ran 80 ms inside them: 430 ms of claims for 300 ms of busy time.
        let s = stat(150, 130, 20, 200);
        let c = Claims {
            net_rx: 80 * MS,
            server: 250 * MS,
            receive_kthread: 100 * MS,
            ..Default::default()
        };
        let t = TimeSplit::of(500e6, &s, &c);
        assert!((t.total() - s.total() as f64).abs() < 1.0, "{t:?}");
        assert!((t.busy() - s.busy() as f64).abs() < 1.0, "{t:?}");
        assert_eq!(t.net_rx, 80e6);
        // 220 ms left for tasks, shared 250:100.
        assert!((t.server - 220e6 * 250.0 / 350.0).abs() < 1.0);
        assert!((t.receive_kthread - 220e6 * 100.0 / 350.0).abs() < 1.0);
        assert!(t.other.abs() < 1.0, "{t:?}");
    }

    #[test]
    fn a_cpu_never_sums_above_its_wall() {
        // Exact softirq above the tick-sampled busy time: capped at busy.
        let s = stat(0, 10, 0, 490);
        let c = Claims {
            net_rx: 40 * MS,
            other_softirq: 10 * MS,
            server: 30 * MS,
            ..Default::default()
        };
        let t = TimeSplit::of(500e6, &s, &c);
        assert!(t.total() <= s.total() as f64 + 1.0, "{t:?}");
        assert_eq!((t.net_rx, t.other_softirq, t.server), (8e6, 2e6, 0.0));
        // Nothing claimed: all busy time is other.
        let t = TimeSplit::of(500e6, &stat(100, 100, 0, 300), &Claims::default());
        assert_eq!((t.other, t.idle), (200e6, 300e6));
        // Ticks that bunched: 460 ms of columns for 500 ms of wall. Shares are kept, the
        // parts fill the wall, and the exact NET_RX stays exact.
        let c = Claims {
            net_rx: 50 * MS,
            ..Default::default()
        };
        let t = TimeSplit::of(500e6, &stat(230, 0, 0, 230), &c);
        assert!((t.total() - 500e6).abs() < 1.0, "{t:?}");
        assert_eq!((t.idle, t.net_rx), (250e6, 50e6));
        assert!((t.other - 200e6).abs() < 1.0, "{t:?}");
        // A CPU with no reading at all contributes nothing.
        assert_eq!(TimeSplit::of(500e6, &CpuTimes::default(), &c).total(), 0.0);
    }

    fn split(server: f64, net_rx: f64, kthread: f64, idle: f64) -> TimeSplit {
        TimeSplit {
            server,
            net_rx,
            receive_kthread: kthread,
            idle,
            ..Default::default()
        }
    }

    #[test]
    fn verdicts_on_crafted_cpus() {
        // CPU 0: 980 busy, 700 of it receive; CPU 1 half idle.
        let closed = LoadShape::default();
        let v = verdict(
            &[
                (0, split(280.0, 500.0, 200.0, 20.0)),
                (1, split(500.0, 0.0, 0.0, 500.0)),
            ],
            &closed,
        )
        .unwrap();
        assert_eq!(v.bound, "receive-bound");
        assert_eq!(v.cpus, vec![0]);
        assert!((v.idle_cpus - 0.52).abs() < 1e-9, "{v:?}");
        assert!(
            v.text
                .starts_with("CPU 0: 98 % busy, 51 % NET_RX softirq, 29 % server of it"),
            "{}",
            v.text
        );
        // Server-bound: 580 server, 300 kthread.
        let v = verdict(
            &[
                (1, split(580.0, 0.0, 300.0, 10.0)),
                (0, split(100.0, 0.0, 0.0, 900.0)),
            ],
            &closed,
        )
        .unwrap();
        assert_eq!(v.bound, "server-bound");
        assert!(v.text.contains("→ server-bound"), "{}", v.text);
        // Two saturated CPUs with different limits.
        let v = verdict(
            &[
                (0, split(0.0, 950.0, 0.0, 50.0)),
                (1, split(990.0, 0.0, 0.0, 10.0)),
            ],
            &closed,
        )
        .unwrap();
        assert_eq!(v.bound, "receive-bound and server-bound");
        assert_eq!(v.cpus, vec![0, 1]);
        // Nothing saturated, and nothing said of the load.
        let v = verdict(&[(0, split(300.0, 100.0, 0.0, 600.0))], &closed).unwrap();
        assert_eq!(v.bound, "not CPU-bound");
        assert!(verdict(&[], &closed).is_none());
    }

    #[test]
    fn a_load_with_no_cpu_saturated_names_its_own_limit() {
        let quiet = [
            (0, split(300.0, 100.0, 0.0, 600.0)),
            (1, split(200.0, 0.0, 0.0, 800.0)),
        ];
        // 32 connections at 0.35 ms mean: at most 91k req/s, and 90k were served.
        let closed = LoadShape {
            connections: 32,
            mean_us: Some(350.0),
            req_per_s: Some(90_000.0),
            rate: None,
        };
        let v = verdict(&quiet, &closed).unwrap();
        assert_eq!(v.bound, "latency-bound");
        assert!(
            v.text.contains(
                "→ latency-bound: 32 connections x 0.35 ms mean latency allow 91k req/s \
                 (Little's law; served 90k); raise -c or use --rate; 1.40 CPU(s)"
            ),
            "{}",
            v.text
        );
        // Served far below what the latency allows: something waited besides the requests.
        let v = verdict(
            &quiet,
            &LoadShape {
                req_per_s: Some(20_000.0),
                ..closed
            },
        )
        .unwrap();
        assert_eq!(v.bound, "wait-bound");
        // An open loop that got what it asked for, and one that did not.
        let open = LoadShape {
            rate: Some(5000.0),
            req_per_s: Some(4990.0),
            ..closed
        };
        let v = verdict(&quiet, &open).unwrap();
        assert_eq!(v.bound, "offered-load-bound");
        assert!(
            v.text.contains("asked for 5000 req/s and got 4990"),
            "{}",
            v.text
        );
        let v = verdict(
            &quiet,
            &LoadShape {
                req_per_s: Some(3000.0),
                ..open
            },
        )
        .unwrap();
        assert!(
            v.text
                .contains("wait-bound: 3000 of the 5000 req/s offered"),
            "{}",
            v.text
        );
    }

    #[test]
    fn a_saturated_loader_is_loader_bound() {
        let loader = TimeSplit {
            loader: 700.0,
            net_rx: 150.0,
            idle: 20.0,
            server: 130.0,
            ..Default::default()
        };
        let v = verdict(
            &[(0, loader), (1, split(400.0, 0.0, 0.0, 600.0))],
            &LoadShape::default(),
        )
        .unwrap();
        assert_eq!(
            (v.bound.as_str(), v.cpus.as_slice()),
            ("loader-bound", &[0][..])
        );
        assert!(
            v.text.contains("CPU 0: 98 % busy, 71 % loader"),
            "{}",
            v.text
        );
    }
}
