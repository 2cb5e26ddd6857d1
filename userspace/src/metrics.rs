//! `--metrics ADDR`: an OpenMetrics endpoint for Prometheus, on `top` and `attach` (and the
//! unit `install` writes for a long-running mode). Off by default; a bare port listens on
//! loopback only.
//!
//! The sampler thread adds each interval's figures to counters ([`Metrics::record`]): the
//! endpoint exports what the observer already reads, and reads nothing more of the kernel per
//! packet. Scrapes are served on the endpoint's own threads ([`Endpoint::serve`]): an accept
//! thread hands connections to a bounded queue with two workers, each connection with short
//! read and write timeouts, and the queue's overflow is closed at once. A scraper that never
//! reads, or a flood of connections, costs those threads and never the sampling or steering.
use crate::refused::FlagRefused;
use anyhow::Result;
use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet},
    metrics::{
        counter::Counter, family::Family, gauge::Gauge, info::Info, MetricType, TypedMetric,
    },
    registry::{Registry, Unit},
};
use rxsteer_common::N_LOG2;
use rxsteer_records::{log2::Log2Ns, Sample};
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpListener, TcpStream},
    sync::{atomic::AtomicU64, mpsc, Arc, Mutex},
    thread,
    time::Duration,
};

/// `--metrics`'s value: `PORT` (loopback), `HOST:PORT` or `[V6]:PORT`.
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    s.parse::<SocketAddr>()
        .map_err(|_| format!("{s:?} is not a port (1-65535, on loopback) or an address HOST:PORT"))
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OnCpu {
    cpu: u32,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClassOnCpu {
    cpu: u32,
    class: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ThreadOnCpu {
    cpu: u32,
    thread: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NicCounter {
    counter: String,
    /// `interface`: the standard statistics every interface has; `driver`: its ethtool ones.
    source: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OfProgram {
    program: String,
}

type Seconds = Counter<f64, AtomicU64>;

/// A histogram as the kernel counts it, in log2 ns buckets added per interval, exposed in
/// seconds: buckets up to 1.024 us merged into the first, the kernel's last (2.1 s and more)
/// as `+Inf`.
#[derive(Debug, Default)]
struct Log2Seconds(Mutex<(Log2Ns, u64)>);

/// The kernel bucket whose upper edge is the exposition's first bound (2^10 ns).
const FIRST_BUCKET: usize = 9;

impl Log2Seconds {
    fn add(&self, h: &Log2Ns, sum_ns: u64) {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        held.0.add(h);
        held.1 += sum_ns;
    }
}

impl TypedMetric for Log2Seconds {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Log2Seconds {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (h, sum_ns) = self.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let at = |i: usize| h.0.get(i).copied().unwrap_or(0);
        let mut buckets = vec![(
            Log2Ns::upper_ns(FIRST_BUCKET) as f64 / 1e9,
            (0..=FIRST_BUCKET).map(at).sum(),
        )];
        for i in FIRST_BUCKET + 1..N_LOG2 - 1 {
            buckets.push((Log2Ns::upper_ns(i) as f64 / 1e9, at(i)));
        }
        buckets.push((f64::INFINITY, at(N_LOG2 - 1)));
        encoder.encode_histogram::<NoLabelSet>(sum_ns as f64 / 1e9, h.count(), &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// What runs on the endpoint's thread before each scrape is rendered (attach's read-back of
/// the values it wrote).
pub type BeforeScrape = Box<dyn Fn(&Metrics) + Send + Sync>;

/// The exported figures, added to from each sample. Counters count from the start of this
/// process, as Prometheus expects of a `_total` (its `rate()` handles the restart).
pub struct Metrics {
    registry: Registry,
    samples: Counter,
    received: Family<OnCpu, Counter>,
    stack: Family<ClassOnCpu, Counter>,
    net_rx: Family<OnCpu, Seconds>,
    net_rx_run: Family<OnCpu, Log2Seconds>,
    /// Only where the observer times NET_RX's waits (`--observe full`): absent, not empty,
    /// below it.
    net_rx_wait: Option<Family<OnCpu, Log2Seconds>>,
    kthread: Family<ThreadOnCpu, Seconds>,
    interrupts: Family<OnCpu, Counter>,
    softnet_dropped: Family<OnCpu, Counter>,
    squeezed: Family<OnCpu, Counter>,
    nic_dropped: Family<NicCounter, Counter>,
    nic_read: Gauge,
    program_runs: Family<OfProgram, Counter<f64, AtomicU64>>,
    program_time: Family<OfProgram, Seconds>,
    steering_in_place: Gauge,
    drifted: Gauge,
}

impl Metrics {
    /// `what` goes into the `rxsteer_observing` info metric (iface, observer, steer);
    /// `waits`: whether NET_RX's waits are timed (their histogram is exported).
    pub fn new(what: Vec<(String, String)>, waits: bool) -> Self {
        let mut registry = Registry::default();
        let mut labels = what;
        labels.push(("version".into(), env!("CARGO_PKG_VERSION").into()));
        registry.register(
            "rxsteer_observing",
            "What this rxsteer observes and steers",
            Info::new(labels),
        );
        let m = Self {
            registry,
            samples: Counter::default(),
            received: Family::default(),
            stack: Family::default(),
            net_rx: Family::default(),
            net_rx_run: Family::default(),
            net_rx_wait: waits.then(Family::default),
            kthread: Family::default(),
            interrupts: Family::default(),
            softnet_dropped: Family::default(),
            squeezed: Family::default(),
            nic_dropped: Family::default(),
            nic_read: Gauge::default(),
            program_runs: Family::default(),
            program_time: Family::default(),
            steering_in_place: Gauge::default(),
            drifted: Gauge::default(),
        };
        m.register()
    }

    fn register(mut self) -> Self {
        let r = &mut self.registry;
        r.register(
            "rxsteer_samples",
            "Sampling intervals taken",
            self.samples.clone(),
        );
        r.register(
            "rxsteer_receive_packets",
            "Frames counted where the driver received them, by CPU (the receive tracepoints \
             count packets in no class: the class is counted where the stack ran)",
            self.received.clone(),
        );
        r.register(
            "rxsteer_stack_packets",
            "Packets tc ingress saw, by the CPU the stack processed them on (after RPS or \
             cpumap) and traffic class",
            self.stack.clone(),
        );
        r.register_with_unit(
            "rxsteer_net_rx",
            "NET_RX softirq time, by CPU",
            Unit::Seconds,
            self.net_rx.clone(),
        );
        r.register_with_unit(
            "rxsteer_net_rx_run",
            "NET_RX softirq runs by length, by CPU (the kernel's log2 buckets)",
            Unit::Seconds,
            self.net_rx_run.clone(),
        );
        if let Some(wait) = &self.net_rx_wait {
            r.register_with_unit(
                "rxsteer_net_rx_wait",
                "NET_RX's wait from its first raise to the run that served it, by CPU (the \
                 kernel's log2 buckets; --observe full)",
                Unit::Seconds,
                wait.clone(),
            );
        }
        r.register_with_unit(
            "rxsteer_receive_kthread",
            "Run time of the receive kthreads (cpumap, the interface's threaded NAPI, backlog), by CPU",
            Unit::Seconds,
            self.kthread.clone(),
        );
        r.register(
            "rxsteer_interrupts",
            "Interrupts the observed interface raised, by CPU (/proc/interrupts)",
            self.interrupts.clone(),
        );
        r.register(
            "rxsteer_softnet_dropped",
            "Packets dropped on a full backlog queue (softnet_stat), by CPU",
            self.softnet_dropped.clone(),
        );
        r.register(
            "rxsteer_softnet_time_squeeze",
            "NET_RX runs that ended with work left (softnet_stat), by CPU",
            self.squeezed.clone(),
        );
        r.register(
            "rxsteer_nic_dropped_packets",
            "Packets the interface lost before any CPU saw them, by counter",
            self.nic_dropped.clone(),
        );
        r.register(
            "rxsteer_nic_drops_readable",
            "1 where the interface's drop counters could be read, 0 where not (then no \
             rxsteer_nic_dropped_packets means unknown, not zero)",
            self.nic_read.clone(),
        );
        r.register(
            "rxsteer_program_runs",
            "Runs of each of rxsteer's BPF programs (kernel statistics; with --bpf-stats \
             sampled, scaled from a tenth of each interval)",
            self.program_runs.clone(),
        );
        r.register_with_unit(
            "rxsteer_program_run",
            "Run time of each of rxsteer's BPF programs: what observing and steering cost",
            Unit::Seconds,
            self.program_time.clone(),
        );
        self
    }

    /// The steering gauges, on a session that tuned: `attach` says whether every value it
    /// wrote still holds.
    pub fn with_steering(mut self) -> Self {
        self.registry.register(
            "rxsteer_steering_in_place",
            "1 while every value the steering wrote still holds, 0 once another tool changed one",
            self.steering_in_place.clone(),
        );
        self.registry.register(
            "rxsteer_steering_drifted_values",
            "Values the steering wrote that read differently now",
            self.drifted.clone(),
        );
        self
    }

    /// Sets the steering gauges from the values that drifted (none: in place).
    pub fn set_drifted(&self, drifted: usize) {
        self.steering_in_place.set(i64::from(drifted == 0));
        self.drifted.set(drifted as i64);
    }

    /// Adds one interval's figures.
    pub fn record(&self, s: &Sample) {
        self.samples.inc();
        for c in &s.cpus {
            let on = OnCpu { cpu: c.cpu };
            self.received.get_or_create(&on).inc_by(c.packets);
            let k = c.stack_class;
            for (class, n) in [
                ("http", k.http),
                ("zap", k.zap),
                ("tcp", k.tcp),
                ("ip", k.ip),
                ("non_ip", k.non_ip),
                ("malformed", k.malformed),
            ] {
                let labels = ClassOnCpu { cpu: c.cpu, class };
                self.stack.get_or_create(&labels).inc_by(n);
            }
            self.net_rx
                .get_or_create(&on)
                .inc_by(c.net_rx_ns as f64 / 1e9);
            self.net_rx_run
                .get_or_create(&on)
                .add(&c.net_rx_run_log2, c.net_rx_ns);
            if let Some(wait) = &self.net_rx_wait {
                wait.get_or_create(&on)
                    .add(&c.net_rx_wait_log2, c.net_rx_wait_ns);
            }
            for (thread, ns) in [
                ("cpumap", c.cpumap_kthread_ns),
                ("napi", c.napi_kthread_ns),
                ("backlog", c.backlog_kthread_ns),
            ] {
                let labels = ThreadOnCpu { cpu: c.cpu, thread };
                self.kthread.get_or_create(&labels).inc_by(ns as f64 / 1e9);
            }
            self.interrupts.get_or_create(&on).inc_by(c.nic_irqs);
            self.softnet_dropped
                .get_or_create(&on)
                .inc_by(c.softnet.dropped);
            self.squeezed
                .get_or_create(&on)
                .inc_by(c.softnet.time_squeeze);
        }
        self.nic_read.set(i64::from(s.nic_drops.is_some()));
        if let Some(d) = &s.nic_drops {
            for (source, counters) in [("interface", &d.counters), ("driver", &d.driver)] {
                for (name, n) in counters {
                    let labels = NicCounter {
                        counter: name.clone(),
                        source,
                    };
                    self.nic_dropped.get_or_create(&labels).inc_by(*n);
                }
            }
        }
        if let Some(rxsteer_records::bpf_cost::BpfRuns::Measured(programs)) = &s.bpf {
            for p in programs {
                let labels = OfProgram {
                    program: p.name.clone(),
                };
                self.program_runs
                    .get_or_create(&labels)
                    .inc_by(p.runs as f64);
                self.program_time
                    .get_or_create(&labels)
                    .inc_by(p.ns as f64 / 1e9);
            }
        }
    }

    /// The exposition, OpenMetrics text.
    pub fn render(&self) -> String {
        let mut out = String::new();
        encode(&mut out, &self.registry).expect("writing into a String cannot fail");
        out
    }
}

/// OpenMetrics text as Prometheus's classic text format (0.0.4), for a client that did not ask
/// for OpenMetrics (curl, promtool, an older scraper): there a counter's family is named with
/// its `_total`, an info is a gauge named `_info`, and there is no `# UNIT` or `# EOF`. The
/// samples are the same lines.
pub fn classic_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<(&str, &str)> = None;
    for line in openmetrics.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest.split_once(' ').unwrap_or((rest, "")));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                k => (name.to_string(), k),
            };
            if let Some((_, text)) = help.take() {
                out.push_str(&format!("# HELP {name} {text}\n"));
            }
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Connections waiting for a worker; more are closed at once.
const QUEUE: usize = 8;
const WORKERS: usize = 2;
/// How long a connection may take to send its request, or to take the reply.
const IO_TIMEOUT: Duration = Duration::from_secs(1);
/// The most a request's head may be.
const MAX_REQUEST: usize = 8192;

/// The bound listening socket: bound before anything is attached, so a port in use is refused
/// with nothing to undo.
pub struct Endpoint {
    listener: TcpListener,
    pub addr: SocketAddr,
}

impl Endpoint {
    pub fn bind(addr: SocketAddr) -> Result<Self> {
        let listener = TcpListener::bind(addr).map_err(|e| {
            anyhow::Error::new(FlagRefused(format!(
                "--metrics {addr}: cannot listen there: {e} (another exporter on that port? \
                 pick another)"
            )))
        })?;
        let addr = listener.local_addr()?;
        Ok(Self { listener, addr })
    }

    /// Serves `GET /metrics` until the process exits: the accept thread blocks in accept(2),
    /// so an idle endpoint never wakes (a scrape after sampling ended reads the final
    /// counters). `before_scrape` runs before each rendering (the steering check); it is the
    /// endpoint thread's to pay.
    pub fn serve(
        self,
        metrics: Arc<Metrics>,
        before_scrape: Option<BeforeScrape>,
    ) -> thread::JoinHandle<()> {
        let (tx, rx) = mpsc::sync_channel::<TcpStream>(QUEUE);
        let rx = Arc::new(std::sync::Mutex::new(rx));
        let before_scrape = Arc::new(before_scrape);
        for i in 0..WORKERS {
            let (rx, metrics, before) =
                (Arc::clone(&rx), Arc::clone(&metrics), before_scrape.clone());
            thread::Builder::new()
                .name(format!("{THREAD}-{i}"))
                .spawn(move || loop {
                    let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                    let Ok(stream) = next else { return };
                    let _ = answer(stream, &metrics, before.as_ref().as_ref());
                })
                .expect("starting a metrics worker");
        }
        thread::Builder::new()
            .name(THREAD.into())
            .spawn(move || {
                for stream in self.listener.incoming() {
                    match stream {
                        // A full queue: this connection is closed (dropped) now.
                        Ok(stream) => drop(tx.try_send(stream)),
                        // Out of descriptors, say: wait instead of spinning on the error.
                        Err(_) => thread::sleep(Duration::from_millis(50)),
                    }
                }
            })
            .expect("starting the metrics endpoint")
    }
}

/// The endpoint's threads' name (its workers add `-N`): what a cost measurement finds in
/// /proc/PID/task.
pub const THREAD: &str = "rxs-metrics";

/// One request, one reply, then the connection is closed.
fn answer(
    mut stream: TcpStream,
    metrics: &Metrics,
    before: Option<&BeforeScrape>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let line = head.lines().next().unwrap_or_default();
    let mut words = line.split_ascii_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    // Prometheus asks for OpenMetrics in its Accept header; anything else gets the classic
    // text format, which promtool and curl read.
    let openmetrics = head.lines().any(|l| {
        let l = l.to_ascii_lowercase();
        l.starts_with("accept:") && l.contains("application/openmetrics-text")
    });
    let (status, kind, body) = match (method, path) {
        ("GET", "/metrics") => {
            if let Some(check) = before {
                check(metrics);
            }
            let text = metrics.render();
            if openmetrics {
                (
                    "200 OK",
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                    text,
                )
            } else {
                (
                    "200 OK",
                    "text/plain; version=0.0.4; charset=utf-8",
                    classic_text(&text),
                )
            }
        }
        ("GET", _) => ("404 Not Found", "text/plain", "only /metrics here\n".into()),
        _ => (
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics only\n".into(),
        ),
    };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

/// The request's head, up to the blank line (a body, which GET has none of, is not read).
fn read_head(stream: &mut TcpStream) -> std::io::Result<String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk)?;
        if n == 0 || buf.len() + n > MAX_REQUEST {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::sample::{CpuSample, NicDrops};

    #[test]
    fn a_bare_port_is_loopback_and_nonsense_is_refused() {
        assert_eq!(parse_addr("9464").unwrap().to_string(), "127.0.0.1:9464");
        assert_eq!(
            parse_addr("0.0.0.0:9464").unwrap().to_string(),
            "0.0.0.0:9464"
        );
        assert_eq!(parse_addr("[::1]:9464").unwrap().to_string(), "[::1]:9464");
        for bad in ["", "70000", "localhost", "1.2.3.4"] {
            let e = parse_addr(bad).unwrap_err();
            assert!(e.contains("is not a port"), "{bad}: {e}");
        }
    }

    fn sample() -> Sample {
        let mut c = CpuSample {
            cpu: 1,
            net_rx_ns: 250_000_000,
            nic_irqs: 7,
            packets: 100,
            ..Default::default()
        };
        c.stack_class.http = 90;
        // 4 runs of [1, 2) us, 1 of [16, 32) us; 2 waits of [64, 128) us.
        c.net_rx_run_log2 = Log2Ns(vec![0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1]);
        c.net_rx_wait_log2 = Log2Ns(vec![0; 16].into_iter().chain([2]).collect());
        c.net_rx_wait_ns = 200_000;
        c.softnet.dropped = 3;
        Sample {
            interval_s: 1.0,
            cpus: vec![CpuSample::default(), c],
            nic_drops: Some(NicDrops {
                counters: [("rx_missed_errors".to_string(), 5)].into(),
                driver: [("rx_no_buffer_count".to_string(), 4)].into(),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn counters_add_each_interval_under_prometheus_names() {
        let m = Metrics::new(vec![("iface".into(), "eth0".into())], true).with_steering();
        m.record(&sample());
        m.record(&sample());
        m.set_drifted(0);
        let text = m.render();
        for line in [
            "rxsteer_samples_total 2",
            "rxsteer_receive_packets_total{cpu=\"1\"} 200",
            "rxsteer_stack_packets_total{cpu=\"1\",class=\"http\"} 180",
            "rxsteer_net_rx_seconds_total{cpu=\"1\"} 0.5",
            "rxsteer_interrupts_total{cpu=\"1\"} 14",
            "rxsteer_softnet_dropped_total{cpu=\"1\"} 6",
            "rxsteer_nic_dropped_packets_total{counter=\"rx_missed_errors\",source=\"interface\"} 10",
            "rxsteer_nic_dropped_packets_total{counter=\"rx_no_buffer_count\",source=\"driver\"} 8",
            "rxsteer_nic_drops_readable 1",
            "rxsteer_steering_in_place 1",
            "# TYPE rxsteer_net_rx_run_seconds histogram",
            "rxsteer_net_rx_run_seconds_count{cpu=\"1\"} 10",
            "rxsteer_net_rx_run_seconds_sum{cpu=\"1\"} 0.5",
            "rxsteer_net_rx_run_seconds_bucket{le=\"0.000001024\",cpu=\"1\"} 0",
            "rxsteer_net_rx_run_seconds_bucket{le=\"0.000002048\",cpu=\"1\"} 8",
            "rxsteer_net_rx_run_seconds_bucket{le=\"0.000032768\",cpu=\"1\"} 10",
            "rxsteer_net_rx_run_seconds_bucket{le=\"+Inf\",cpu=\"1\"} 10",
            "rxsteer_net_rx_wait_seconds_count{cpu=\"1\"} 4",
            "rxsteer_net_rx_wait_seconds_bucket{le=\"0.000131072\",cpu=\"1\"} 4",
            "# TYPE rxsteer_net_rx_seconds counter",
            "# UNIT rxsteer_net_rx_seconds seconds",
            "# EOF",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(
            text.contains("rxsteer_observing_info{iface=\"eth0\",version="),
            "{text}"
        );
        m.set_drifted(2);
        assert!(m
            .render()
            .lines()
            .any(|l| l == "rxsteer_steering_in_place 0"));
    }

    #[test]
    fn the_classic_format_names_families_as_their_samples() {
        let m = Metrics::new(vec![("iface".into(), "eth0".into())], false);
        m.record(&sample());
        let text = classic_text(&m.render());
        for line in [
            "# TYPE rxsteer_net_rx_seconds_total counter",
            "# HELP rxsteer_net_rx_seconds_total NET_RX softirq time, by CPU.",
            "rxsteer_net_rx_seconds_total{cpu=\"1\"} 0.25",
            "# TYPE rxsteer_observing_info gauge",
            "# TYPE rxsteer_nic_drops_readable gauge",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(
            !text.contains("# UNIT") && !text.contains("# EOF"),
            "{text}"
        );
    }

    #[test]
    fn an_unread_interface_says_so_instead_of_zero_drops() {
        let m = Metrics::new(Vec::new(), false);
        m.record(&Sample {
            nic_drops: None,
            ..sample()
        });
        let text = m.render();
        assert!(text.contains("rxsteer_nic_drops_readable 0"), "{text}");
        assert!(
            !text.contains("rxsteer_nic_dropped_packets_total{"),
            "{text}"
        );
        assert!(
            !text.contains("rxsteer_net_rx_wait"),
            "no waits timed, none shown: {text}"
        );
    }
}
