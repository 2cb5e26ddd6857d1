//! The comparison's flags, the values they take, and their checks.
use anyhow::{bail, Result};
use std::{path::PathBuf, time::Duration};

use super::{
    arm::{Arm, Watch},
    load::{self, LoaderArg},
    search,
    several::{several, Several},
};
use crate::observe::parse_interval;
use rxsteer_dataplane::{FragsChoice, ObserveLevel, ObserverChoice, TcChoice, XdpModeChoice};
use rxsteer_records::{LoaderIo, Mode, Proto, Scenario, ServerIo};

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Steering modes to compare.
    #[arg(long, default_value = "all", value_parser = several("all", "Every mode side by side", Mode::ALL, &[]))]
    pub steer: Several<Mode>,
    /// Protocols to drive in each mode.
    #[arg(long, default_value = "both", value_parser = several("both", "HTTP and ZAP", Proto::ALL, &[]))]
    pub proto: Several<Proto>,
    /// Request each connection sends (rpc: JSON over HTTP, the native record over ZAP).
    #[arg(long, value_enum, default_value = "health")]
    pub scenario: Scenario,
    /// Request body bytes for echo and upload (rxload's default otherwise: 64 KiB for
    /// upload, 16 for echo).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=64 << 20))]
    pub body_size: Option<u32>,
    /// Open loop: every load sends this many requests per second on a fixed schedule (rxload
    /// --rate; 1 to 10 million) instead of searching for each arm's capacity. For measuring a
    /// set load below saturation (how busy each CPU is at it), not the most a mode can serve.
    #[arg(long, value_parser = parse_rate, conflicts_with = "closed")]
    pub rate: Option<f64>,
    /// Closed loop: each load sends as fast as answers come back, for -d, instead of the
    /// capacity search (what runs before the search existed measured).
    #[arg(long)]
    pub closed: bool,
    /// The capacity search's latency bound: the highest rate each arm sustains with p99 at or
    /// under it (10us to 10s; default: 1 ms or 10x the unloaded p99, whichever is larger).
    #[arg(long, value_parser = parse_p99)]
    pub p99: Option<Duration>,
    /// The rates the capacity search may offer, LO..HI requests per second (e.g. 2k..2M):
    /// it climbs from LO (later loads from half the lowest knee found) and stops at HI.
    #[arg(long, default_value = "2k..2M", value_parser = search::parse_rates)]
    pub rates: search::RateRange,
    /// Measured time of each search step (200ms to 1h).
    #[arg(long, default_value = "500ms", value_parser = parse_measured)]
    pub step: Duration,
    /// Warm-up of each search step before its measured time.
    #[arg(long, default_value = "250ms", value_parser = parse_seconds)]
    pub step_warmup: Duration,
    /// XDP attach mode of every arm; both runs each steering mode in drv and in skb mode.
    #[arg(long, default_value = "auto", value_parser = several(
        "both",
        "Every steering mode in drv and in skb mode",
        &[XdpModeChoice::Drv, XdpModeChoice::Skb],
        &[],
    ))]
    pub xdp_mode: Several<XdpModeChoice>,
    /// How the untuned and RPS arms count where the driver received: auto and tracepoint use
    /// the receive tracepoints (no XDP program on the interface, as the user runs those
    /// set-ups); xdp attaches the observe-only XDP program in each arm's XDP mode, which in
    /// skb mode costs a copy of every packet. cpumap always counts with its own program. Every
    /// run also measures untuned with no BPF at all, so the observer's cost is in the report.
    /// all: untuned observed every way side by side (tracepoints, and XDP in each
    /// --xdp-mode), what `cargo xtask bench observer` measures.
    #[arg(long, default_value = "auto", value_parser = several(
        "all",
        "Untuned observed every way: tracepoints, and XDP in each --xdp-mode",
        &[ObserverChoice::Tracepoint, ObserverChoice::Xdp],
        // off is what the no-BPF arm runs, not a choice for all.
        &[ObserverChoice::Off],
    ))]
    pub observer: Several<ObserverChoice>,
    /// The tc witnesses of every arm (`attach --tc`): TCX links where the kernel has them,
    /// else a clsact qdisc of rxsteer's own; clsact forces the qdisc (kernels before 6.6).
    #[arg(long, value_enum, default_value = "auto")]
    pub tc: TcChoice,
    /// What every observed arm watches (`attach --observe`): default, tc ingress (where the
    /// stack ran); full, tc egress too (where replies left); minimal, no tc program. The
    /// report says which figures the level lacks.
    #[arg(long, value_enum, default_value = "default")]
    pub observe: ObserveLevel,
    /// Multi-buffer aware XDP programs (auto: where the kernel accepts them); both runs every
    /// arm with and without them.
    #[arg(long, default_value = "auto", value_parser = several(
        "both",
        "Every arm with the frags-aware programs and with the plain ones",
        // auto, not on: cpumap in skb mode falls back to the plain programs (attach says
        // why) instead of refusing, and each row records which ran.
        &[FragsChoice::Auto, FragsChoice::Off],
        &[],
    ))]
    pub xdp_frags: Several<FragsChoice>,
    /// Measured time per load (e.g. 5s, 500ms; a bare number is seconds), 200ms to 1h.
    #[arg(long, short = 'd', default_value = "5s", value_parser = parse_measured)]
    pub duration: Duration,
    /// Alternate the arms in short windows under one continuous load per protocol and
    /// repetition (A s B s C s, s: a settle window after each switch, dropped), instead of
    /// one load per arm with its own server: drift between arms cancels (0.18x the time for
    /// the same standard error in the stored A/A run). Every arm must switch in place under
    /// a running server (busy poll, which restarts the server, is left out and said); needs
    /// --closed or --rate (a capacity search is a sequence of rates) and one rxload of ours.
    #[arg(long)]
    pub interleave: bool,
    /// With --interleave: each arm's measured window per repetition (200ms to 1h).
    #[arg(long, default_value = "1s", value_parser = parse_measured, requires = "interleave", conflicts_with = "duration")]
    pub window: Duration,
    /// With --interleave: dropped after each switch, from the moment the arm is in place.
    #[arg(long, default_value = "1s", value_parser = parse_seconds, requires = "interleave")]
    pub settle: Duration,
    /// Warm-up before each load's measured window (excluded from every figure).
    #[arg(long, default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    /// Repetitions (the arm order rotates each time). auto (default): at least 5, then after
    /// each one every arm's interval is recomputed and settled arms stop running, until
    /// every answer is settled, --max-reps are done or --budget runs out. N: exactly N
    /// (below 5 the answer says "too few repetitions to decide" and deploys nothing).
    #[arg(long, default_value = "auto", value_parser = parse_reps)]
    pub reps: Reps,
    /// The confidence that every verdict of one protocol's answer is right at once (each
    /// arm's interval is corrected for the arms compared and, with --reps auto, the looks).
    #[arg(long, default_value = "0.95", value_parser = parse_confidence)]
    pub confidence: f64,
    /// With --reps auto: no repetition starts that would end past this (1m to 24h).
    #[arg(long, default_value = "10m", value_parser = parse_budget)]
    pub budget: Duration,
    /// With --reps auto: the most repetitions (5 to 100); the verdicts' level is derived for
    /// a look after each repetition up to this many.
    #[arg(long, default_value = "20", value_parser = clap::value_parser!(u32).range(5..=100))]
    pub max_reps: u32,
    /// rxload's I/O engine. tokio (default): exact latency timing. uring: about 1.16x the
    /// requests per load-generator CPU-second (README), so the loaders are less often the
    /// limit; a response can be timed up to 100 us late.
    #[arg(long, value_enum, default_value = "tokio")]
    pub loader_io: LoaderIo,
    /// The server's I/O engine (`rxsteer serve --io`): epoll (default) or uring, the cheaper
    /// server per request (README), which leaves more of each CPU to receive work.
    #[arg(long, value_enum, default_value = "epoll")]
    pub server_io: ServerIo,
    /// Connections of the load.
    #[arg(long, short = 'c', default_value = "32", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub connections: u32,
    /// Sampling interval of the per-CPU accounting.
    #[arg(long, default_value = "500ms", value_parser = parse_interval)]
    pub interval: Duration,
    /// Where to write the run (default: results/<date>-<host>-compare-<time>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// One line per interval instead of the live screen (also when stderr is not a terminal).
    #[arg(long)]
    pub no_tui: bool,
    /// Run even on a loaded machine (1-minute load above half the CPUs); every figure is then
    /// marked. Without it the run waits up to --quiet-wait for the load to fall, then refuses.
    #[arg(long)]
    pub force: bool,
    /// How long to wait for a loaded machine to quiet down before refusing.
    #[arg(long, default_value = "90s", value_parser = parse_seconds)]
    pub quiet_wait: Duration,
    /// A real interface instead of the lab: the servers run on this host, steering applies
    /// to IF, and the load comes from --loader.
    #[arg(long)]
    pub iface: Option<String>,
    /// With --iface: local (rxload on this host, to IF's address), netns:NAME (rxload in that
    /// network namespace of this host, which holds a NIC cabled to IF), ssh://[user@]host[:port]
    /// (rxload copied to that machine and run there; repeat for several loaders, merged), or
    /// external (someone else drives ports 8080/9653; rxsteer only observes each window).
    #[arg(long, value_parser = load::parse_loader)]
    pub loader: Vec<LoaderArg>,
    /// An ssh client config for the ssh:// loaders (identity, known hosts, ...): ssh -F FILE.
    #[arg(long)]
    pub ssh_config: Option<PathBuf>,
    /// With --iface: the address rxload targets (default: IF's first IPv4 address).
    #[arg(long)]
    pub target_ip: Option<std::net::Ipv4Addr>,
    /// With --iface: run the rps-dissector arm even where multipath routes, bonds or tc flower
    /// filters share the flow dissector it replaces (otherwise it is left out, said why).
    #[arg(long)]
    pub accept_dissector_reach: bool,
    /// With --iface: the CPUs the irq-affinity arm moves the interface's interrupt to
    /// (default: the highest-capacity CPU the server and the loader leave free, said at the
    /// start). The lab's veth has no interrupt, so there the arm says so and runs untuned.
    #[arg(long, value_parser = crate::lever_args::online_cpu_list, value_name = "CPUS")]
    pub irq_cpu: Option<crate::cpu_arg::CpuList>,
    #[command(flatten)]
    pub roles: crate::embedded_lab::RoleArgs,
}

/// `--reps`: a fixed count, or repetitions until the answer is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reps {
    Auto,
    Fixed(u32),
}

/// --reps: auto, or 1 to 100.
pub fn parse_reps(s: &str) -> Result<Reps, String> {
    if s == "auto" {
        return Ok(Reps::Auto);
    }
    match s.parse::<u32>() {
        Ok(n) if (1..=100).contains(&n) => Ok(Reps::Fixed(n)),
        _ => Err(format!("{s:?} is outside 1..=100 (or auto)")),
    }
}

/// --confidence: strictly between 0 and 1.
pub fn parse_confidence(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(c) if c > 0.0 && c < 1.0 => Ok(c),
        _ => Err(format!("{s:?} is outside (0, 1), e.g. 0.95")),
    }
}

/// --budget: 1 minute to 24 hours.
pub fn parse_budget(s: &str) -> Result<Duration, String> {
    let d = match s.parse::<u64>() {
        Ok(n) => Duration::from_secs(n),
        Err(_) => {
            humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?
        }
    };
    if !(Duration::from_secs(60)..=Duration::from_secs(24 * 3600)).contains(&d) {
        return Err(format!("{s:?} is outside 1m..=24h"));
    }
    Ok(d)
}

/// --p99: a duration from 10 us to 10 s.
pub fn parse_p99(s: &str) -> Result<Duration, String> {
    match humantime::parse_duration(s) {
        Ok(d) if (Duration::from_micros(10)..=Duration::from_secs(10)).contains(&d) => Ok(d),
        _ => Err(format!("{s:?} is outside 10us..=10s")),
    }
}

/// Requests per second for --rate: 1 to 10 million.
pub fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(r) if (1.0..=1e7).contains(&r) => Ok(r),
        _ => Err(format!("{s:?} is outside 1..=10000000 requests per second")),
    }
}

/// A measured window: [`parse_seconds`], at least 200 ms (shorter holds too few samples).
pub fn parse_measured(s: &str) -> Result<Duration, String> {
    let d = parse_seconds(s)?;
    if d < Duration::from_millis(200) {
        return Err(format!("{s:?} is outside 200ms..=1h"));
    }
    Ok(d)
}

pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    let d = match s.parse::<u64>() {
        Ok(n) => Duration::from_secs(n),
        Err(_) => {
            humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?
        }
    };
    if d > Duration::from_secs(3600) {
        return Err(format!("{s:?}: at most 1h"));
    }
    Ok(d)
}

impl CompareArgs {
    pub fn modes(&self) -> Vec<Mode> {
        self.steer.0.clone()
    }

    pub fn xdp_modes(&self) -> Vec<XdpModeChoice> {
        self.xdp_mode.0.clone()
    }

    pub fn frags(&self) -> Vec<FragsChoice> {
        self.xdp_frags.0.clone()
    }

    /// Every arm: each steering mode in each XDP mode, with each frags choice, where that
    /// changes the arm (without an XDP program it does not, so untuned and RPS run once), and
    /// last (where the run has untuned) the untuned arm with no BPF at all.
    pub fn arms(&self) -> Vec<Arm> {
        let (xdp, frags) = (self.xdp_modes(), self.frags());
        let (per_xdp_mode, per_frags) = (xdp.len() > 1, frags.len() > 1);
        let mut arms: Vec<Arm> = Vec::new();
        for &observer in &self.observer.0 {
            for &x in &xdp {
                for &f in &frags {
                    for mode in self.modes() {
                        let arm = Arm {
                            mode,
                            xdp: x,
                            frags: f,
                            observer,
                            per_xdp_mode,
                            per_frags,
                        };
                        if !arms.iter().any(|a| a.key() == arm.key()) {
                            arms.push(arm);
                        }
                    }
                }
            }
        }
        // The observer's cost is untuned with it over untuned without any BPF: measured
        // wherever the run has an untuned arm and drives the load itself (an external load's
        // req/s is not known here).
        let external = self.loader.iter().any(|l| matches!(l, LoaderArg::External));
        if self.modes().contains(&Mode::baseline()) && !external {
            arms.push(Arm::no_bpf());
        }
        arms
    }

    /// `--tc` and `--observe`, which every observed arm's attach is given.
    pub fn watch(&self) -> Watch {
        Watch {
            tc: self.tc,
            observe: self.observe,
        }
    }

    /// `--observer` as given, for run.json.
    pub fn observer_name(&self) -> String {
        match self.observer.0.as_slice() {
            [one] => one.as_str().to_string(),
            _ => "all".to_string(),
        }
    }

    /// Whether each load is a capacity search (neither --closed nor --rate).
    pub fn searches(&self) -> bool {
        let external = self.loader.iter().any(|l| matches!(l, LoaderArg::External));
        !self.closed && self.rate.is_none() && !external
    }

    pub fn protos(&self) -> Vec<Proto> {
        self.proto.0.clone()
    }

    /// The repetitions planned: the fixed count, or --max-reps for auto.
    pub fn planned_reps(&self) -> u32 {
        match self.reps {
            Reps::Fixed(n) => n,
            Reps::Auto => self.max_reps,
        }
    }

    /// --confidence as run.json keeps it: absent at the default.
    pub fn confidence_stored(&self) -> Option<f64> {
        (self.confidence != rxsteer_report::decide::CONFIDENCE).then_some(self.confidence)
    }

    /// `--reps auto`'s looks, as run.json keeps them (why it ended is set at the end).
    pub fn sequential(&self) -> Option<rxsteer_records::reps::Sequential> {
        (self.reps == Reps::Auto).then(|| rxsteer_records::reps::Sequential {
            min: rxsteer_report::decide::MIN_REPS,
            max: self.max_reps,
            budget_s: self.budget.as_secs_f64(),
            ended: Default::default(),
        })
    }

    pub fn check(&self) -> Result<()> {
        if self.interleave {
            if self.searches() {
                bail!(
                    "--interleave: a capacity search is a sequence of rates and cannot be cut into \
                     windows; add --closed or --rate R"
                );
            }
            let ssh = load::ssh_dests(&self.loader)?.len();
            if self.loader.iter().any(|l| matches!(l, LoaderArg::External)) || ssh > 1 {
                bail!(
                    "--interleave: the windows are cut from one rxload's live lines; give one \
                     loader (the lab's, local, netns:NAME or one ssh://)"
                );
            }
        }
        if self.iface.is_none()
            && (!self.loader.is_empty() || self.target_ip.is_some() || self.ssh_config.is_some())
        {
            bail!("--loader, --target-ip and --ssh-config go with --iface (the lab has its own loader)");
        }
        load::ssh_dests(&self.loader)?;
        if self.searches() && self.loader_io == LoaderIo::Uring {
            bail!(
                "--loader-io uring: rxload's io_uring engine has no open loop, so it cannot \
                 search for each arm's capacity; add --closed, or leave --loader-io at tokio"
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::run::NO_BPF_ARM;

    #[test]
    fn both_xdp_modes_make_an_arm_each() {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            c: CompareArgs,
        }
        let parse = |a: &[&str]| {
            <Cli as clap::Parser>::try_parse_from(
                std::iter::once("compare").chain(a.iter().copied()),
            )
            .unwrap()
            .c
        };
        let keys = |c: &CompareArgs| {
            c.arms()
                .iter()
                .map(|a| a.key().to_string())
                .collect::<Vec<_>>()
        };
        let no_bpf = NO_BPF_ARM.to_string();
        let no_bpf = no_bpf.as_str();
        assert_eq!(
            keys(&parse(&[])),
            [
                "none",
                "rps",
                "rfs",
                "napi-thread",
                "busy-poll",
                "backlog-threads",
                "rps-dissector",
                "cpumap",
                "reference",
                "irq-affinity",
                no_bpf
            ]
        );
        assert_eq!(
            keys(&parse(&["--xdp-mode", "both", "--steer", "cpumap"])),
            ["cpumap-drv", "cpumap-skb"]
        );
        // The tunings carry no XDP program, so they run once whatever the XDP modes.
        let both = parse(&["--xdp-mode", "both"]);
        assert_eq!(
            keys(&both),
            [
                "none",
                "rps",
                "rfs",
                "napi-thread",
                "busy-poll",
                "backlog-threads",
                "rps-dissector",
                "cpumap-drv",
                "reference",
                "irq-affinity",
                "cpumap-skb",
                no_bpf
            ]
        );
        assert_eq!(both.arms()[10].xdp, XdpModeChoice::Skb);
        assert!(!both.arms()[6].runs_xdp() && both.arms()[7].runs_xdp());
        // With the XDP observer they are arms of each XDP mode again, as in older runs.
        assert_eq!(
            keys(&parse(&["--xdp-mode", "both", "--observer", "xdp"])),
            [
                "none-drv",
                "rps-drv",
                "rfs-drv",
                "napi-thread-drv",
                "busy-poll-drv",
                "backlog-threads-drv",
                "rps-dissector-drv",
                "cpumap-drv",
                "reference-drv",
                "irq-affinity-drv",
                "none-skb",
                "rps-skb",
                "rfs-skb",
                "napi-thread-skb",
                "busy-poll-skb",
                "backlog-threads-skb",
                "rps-dissector-skb",
                "cpumap-skb",
                "reference-skb",
                "irq-affinity-skb",
                no_bpf
            ]
        );
        assert_eq!(
            keys(&parse(&[
                "--xdp-mode",
                "skb",
                "--xdp-frags",
                "both",
                "--steer",
                "rps",
                "--observer",
                "xdp"
            ])),
            ["rps-frags", "rps-plain"]
        );
        let off = <Cli as clap::Parser>::try_parse_from(["compare", "--observer", "off"]);
        assert!(off.is_err());
        // The observer bench: untuned observed every way, and with no BPF.
        assert_eq!(
            keys(&parse(&[
                "--steer",
                "none",
                "--xdp-mode",
                "both",
                "--observer",
                "all"
            ])),
            ["none", "none-drv", "none-skb", no_bpf]
        );
    }

    #[test]
    fn durations_take_bare_seconds_or_units() {
        assert_eq!(parse_seconds("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_seconds("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_seconds("five")
            .unwrap_err()
            .contains("not a duration"));
        assert!(parse_seconds("2h").unwrap_err().contains("at most"));
        assert!(parse_measured("100ms")
            .unwrap_err()
            .contains("outside 200ms..=1h"));
        assert_eq!(parse_measured("1").unwrap(), Duration::from_secs(1));
    }

    #[test]
    fn reps_take_auto_or_a_count_and_budgets_a_sane_span() {
        assert_eq!(parse_reps("auto").unwrap(), Reps::Auto);
        assert_eq!(parse_reps("7").unwrap(), Reps::Fixed(7));
        assert!(parse_reps("0").unwrap_err().contains("outside 1..=100"));
        assert!(parse_reps("many").is_err());
        assert_eq!(parse_budget("20m").unwrap(), Duration::from_secs(1200));
        assert!(parse_budget("0").unwrap_err().contains("outside 1m..=24h"));
        assert!(parse_budget("2d").unwrap_err().contains("outside"));
        assert_eq!(parse_confidence("0.9").unwrap(), 0.9);
        for bad in ["0", "1", "1.5", "-0.1", "ninety"] {
            assert!(parse_confidence(bad)
                .unwrap_err()
                .contains("outside (0, 1)"));
        }
    }
}
