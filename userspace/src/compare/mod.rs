//! `rxsteer compare` (what `cargo xtask run` runs): untuned vs RPS vs cpumap, measured side by
//! side for HTTP/1.1 and ZAP. For each repetition (mode order rotated) and each mode:
//! `rxsteer attach` applies the mode and observes, `rxsteer serve` serves both transports, and
//! rxload drives each protocol in turn. Every load's req/s is a ratio to untuned from the same
//! repetition and protocol, next to where the receive work went per CPU in its measured
//! window. Without `--iface` it runs in the embedded veth lab; with it, on a real interface.
mod figures;
mod gate;
mod load;
mod merge;
mod screen;
mod session;
mod ssh;
mod watch;

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::{
    io::IsTerminal,
    path::{Path, PathBuf},
    sync::atomic::AtomicBool,
    time::Duration,
};

use crate::{
    lab::{EmbeddedLab, Roles},
    netns::Netns,
    privilege::{self, Cap},
    top::{parse_interval, stop_on_signals},
};
use load::{LoadSpec, Loader, LoaderArg};
use rxsteer_tune::cpus::{format_cpu_list, online_cpus};
use screen::{Done, Screen};
use session::ModeSession;
use watch::Ended;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    None,
    Rps,
    Cpumap,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Rps => "rps",
            Mode::Cpumap => "cpumap",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SteerArg {
    None,
    Rps,
    Cpumap,
    All,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Proto {
    Http,
    Zap,
}

impl Proto {
    pub fn as_str(self) -> &'static str {
        match self {
            Proto::Http => "http",
            Proto::Zap => "zap",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtoArg {
    Http,
    Zap,
    Both,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    Health,
    Rpc,
    Echo,
}

impl Scenario {
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Health => "health",
            Scenario::Rpc => "rpc",
            Scenario::Echo => "echo",
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Steering modes to compare (all: untuned, RPS, cpumap).
    #[arg(long, value_enum, default_value = "all")]
    pub steer: SteerArg,
    /// Protocols to drive in each mode.
    #[arg(long, value_enum, default_value = "both")]
    pub proto: ProtoArg,
    /// Request each connection sends (rpc: JSON over HTTP, the native record over ZAP).
    #[arg(long, value_enum, default_value = "health")]
    pub scenario: Scenario,
    /// Measured time per load (e.g. 5s, 500ms; a bare number is seconds).
    #[arg(long, short = 'd', default_value = "5s", value_parser = parse_seconds)]
    pub duration: Duration,
    /// Warm-up before each load's measured window (excluded from every figure).
    #[arg(long, default_value = "1s", value_parser = parse_seconds)]
    pub warmup: Duration,
    /// Repetitions (the mode order rotates each time).
    #[arg(long, default_value = "3", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub reps: u32,
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
    /// With --iface: local (rxload on this host, to IF's address), ssh://[user@]host[:port]
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
    #[command(flatten)]
    pub roles: crate::lab::RoleArgs,
}

fn parse_seconds(s: &str) -> Result<Duration, String> {
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

/// Where the server side runs: the interface steering applies to, the namespace (lab) or the
/// host, the CPUs, and the address to bind.
pub struct Site<'a> {
    ns: Option<&'a Netns>,
    pub server_dev: String,
    pub bind_ip: String,
    pub target_ip: String,
    pub server_cpus: Vec<u32>,
    pub steer_targets: Vec<u32>,
    pub xdp_mode: String,
}

impl Site<'_> {
    pub fn ns(&self) -> Option<&Netns> {
        self.ns
    }
}

impl CompareArgs {
    fn modes(&self) -> Vec<Mode> {
        match self.steer {
            SteerArg::None => vec![Mode::None],
            SteerArg::Rps => vec![Mode::Rps],
            SteerArg::Cpumap => vec![Mode::Cpumap],
            SteerArg::All => vec![Mode::None, Mode::Rps, Mode::Cpumap],
        }
    }

    fn protos(&self) -> Vec<Proto> {
        match self.proto {
            ProtoArg::Http => vec![Proto::Http],
            ProtoArg::Zap => vec![Proto::Zap],
            ProtoArg::Both => vec![Proto::Http, Proto::Zap],
        }
    }

    fn check(&self) -> Result<()> {
        if self.iface.is_none()
            && (!self.loader.is_empty() || self.target_ip.is_some() || self.ssh_config.is_some())
        {
            bail!("--loader, --target-ip and --ssh-config go with --iface (the lab has its own loader)");
        }
        load::ssh_dests(&self.loader)?;
        if self.duration < Duration::from_millis(200) {
            bail!("--duration {:?}: at least 200ms", self.duration);
        }
        Ok(())
    }
}

/// The mode order of one repetition: rotated by one each time, so no mode always runs first
/// (on a drifting machine the first slot is not like the last).
pub fn rotated(modes: &[Mode], rep: u32) -> Vec<Mode> {
    let n = modes.len();
    (0..n).map(|k| modes[(k + rep as usize) % n]).collect()
}

fn default_out() -> PathBuf {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let time: String = now[11..19].chars().filter(|c| *c != ':').collect();
    PathBuf::from(format!("results/{}-{host}-compare-{time}", &now[..10]))
}

pub fn run(args: &CompareArgs) -> Result<()> {
    // Handlers first: a Ctrl-C during setup still ends in the clean path below.
    let stop = stop_on_signals()?;
    args.check()?;
    let caps: &[Cap] = if args.iface.is_some() {
        &[Cap::NetAdmin, Cap::Bpf, Cap::Perfmon]
    } else {
        &[Cap::SysAdmin, Cap::NetAdmin, Cap::Bpf, Cap::Perfmon]
    };
    privilege::require("rxsteer compare", caps)?;
    load::rxload_path()?;
    let online = online_cpus()?;
    let roles = args.roles.choose(&online)?;
    let dir = args.out.clone().unwrap_or_else(default_out);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let tui = !args.no_tui && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    match &args.iface {
        None => run_lab(args, &roles, online.len(), &dir, tui, &stop),
        Some(iface) => run_iface(args, iface, &roles, &dir, tui, &stop),
    }
}

fn run_lab(
    args: &CompareArgs,
    roles: &Roles,
    cpus: usize,
    dir: &Path,
    tui: bool,
    stop: &AtomicBool,
) -> Result<()> {
    for n in EmbeddedLab::remove_leftovers()? {
        eprintln!("rxsteer: removed network namespace {n} left by an earlier run");
    }
    let caveat = roles.caveat(cpus);
    eprintln!("rxsteer compare: the embedded lab: {}", roles.describe());
    if let Some(c) = &caveat {
        eprintln!("rxsteer compare: note: {c}");
    }
    let lab = EmbeddedLab::create(roles)?;
    let targets = roles.steer_targets();
    let site = Site {
        ns: Some(&lab.veth.server),
        server_dev: lab.veth.server_dev.clone(),
        bind_ip: lab.veth.server_ip.to_string(),
        target_ip: lab.veth.server_ip.to_string(),
        server_cpus: roles.server_cpus.clone(),
        // With no free CPU (1-2 CPUs) steering can only go to the server CPUs themselves.
        steer_targets: if targets.is_empty() {
            roles.server_cpus.clone()
        } else {
            targets
        },
        xdp_mode: "drv".into(),
    };
    let loader = Loader::Lab {
        ns: &lab.veth.client,
        cpus: roles.loader_cpus.clone(),
    };
    let setup = json!({"kind": "lab", "roles": roles, "iface": lab.veth.server_dev,
        "steer_targets": site.steer_targets, "qsize": 2048,
        "nic": figures::iface_facts(Some(&lab.veth.server), &lab.veth.server_dev)});
    let result = measure(args, &site, &loader, setup, caveat, dir, tui, stop);
    drop(lab);
    result?;
    eprintln!("rxsteer compare: stored in {}; lab removed", dir.display());
    Ok(())
}

fn run_iface(
    args: &CompareArgs,
    iface: &str,
    roles: &Roles,
    dir: &Path,
    tui: bool,
    stop: &AtomicBool,
) -> Result<()> {
    crate::iface::require_up(iface)?;
    let external = args.loader == [LoaderArg::External];
    let target_ip = match args.target_ip {
        Some(ip) => ip.to_string(),
        None if external => "0.0.0.0".into(),
        None => crate::iface::ipv4_of(iface)?.to_string(),
    };
    let targets = roles.steer_targets();
    let site = Site {
        ns: None,
        server_dev: iface.into(),
        bind_ip: "0.0.0.0".into(),
        target_ip,
        server_cpus: roles.server_cpus.clone(),
        steer_targets: if targets.is_empty() {
            roles.server_cpus.clone()
        } else {
            targets
        },
        xdp_mode: "auto".into(),
    };
    let ssh = load::ssh_dests(&args.loader)?;
    let loader = if !ssh.is_empty() {
        // Checked and prepared before anything on this host changes.
        Loader::Ssh(ssh::SshLoaders::prepare(
            ssh,
            args.ssh_config.clone(),
            &load::rxload_path()?,
        )?)
    } else if external {
        Loader::External
    } else {
        Loader::Local {
            cpus: args.roles.loader_cpus.clone().map(|c| c.0),
        }
    };
    eprintln!(
        "rxsteer compare: interface {iface}: server CPUs {}, steering targets {}; load: {}",
        format_cpu_list(&site.server_cpus),
        format_cpu_list(&site.steer_targets),
        loader.describe()
    );
    if matches!(loader, Loader::Local { .. }) {
        eprintln!(
            "rxsteer compare: note: a local loader's traffic to {} stays on this host's \
             loopback path and never crosses {iface}'s receive queue; drive the load from \
             other machines (--loader ssh://host, or external) to measure the NIC",
            site.target_ip
        );
    }
    let setup = json!({"kind": "iface", "iface": iface, "server_cpus": site.server_cpus,
        "steer_targets": site.steer_targets, "loader": loader.describe(), "qsize": 2048,
        "nic": figures::iface_facts(None, iface)});
    measure(args, &site, &loader, setup, None, dir, tui, stop)?;
    eprintln!("rxsteer compare: stored in {}", dir.display());
    Ok(())
}

/// Every repetition, mode and protocol; then run.json and the report.
#[allow(clippy::too_many_arguments)]
fn measure(
    args: &CompareArgs,
    site: &Site,
    loader: &Loader,
    setup: Value,
    caveat: Option<String>,
    dir: &Path,
    tui: bool,
    stop: &AtomicBool,
) -> Result<()> {
    let loaded = gate::quiet_machine(args.force, args.quiet_wait, stop)?;
    let env_before = figures::environment();
    let mut screen = Screen::new(tui, caveat.clone());
    let mut rows: Vec<Value> = Vec::new();
    let modes = args.modes();
    for rep in 0..args.reps {
        for mode in rotated(&modes, rep) {
            let label = |p: Proto| {
                format!(
                    "rep {}/{}  {}  {}",
                    rep + 1,
                    args.reps,
                    mode.as_str(),
                    p.as_str()
                )
            };
            for proto in args.protos() {
                screen.begin(label(proto));
                let base = format!("{}-{}-rep{rep}", mode.as_str(), proto.as_str());
                let session = ModeSession::start(site, mode, proto, args.interval)?;
                let spec = LoadSpec {
                    proto,
                    scenario: args.scenario,
                    connections: args.connections,
                    measure: args.duration,
                    warmup: args.warmup,
                    target_ip: &site.target_ip,
                    json: dir.join(format!("rxload-{base}.json")),
                    hgrm: dir.join(format!("latency-{base}.hgrm")),
                    live: dir.join(format!("live-{base}.jsonl")),
                    base,
                };
                let mut children = loader.spawn(&spec)?;
                let mut tagged = Vec::new();
                let ended = watch::follow(
                    &mut children,
                    args.warmup + args.duration,
                    &spec.live,
                    &session.samples,
                    &mut screen,
                    stop,
                    &mut tagged,
                )?;
                if let Ended::Stopped = ended {
                    for c in &mut children {
                        let _ = c.kill();
                        let _ = c.wait();
                    }
                    drop(session);
                    drop(screen);
                    bail!(
                        "stopped before the end (q or a signal); everything was restored; \
                         partial files in {}",
                        dir.display()
                    );
                }
                let load = loader.collect(&spec, &mut children)?;
                session.stop()?;
                figures::store_samples(&dir.join(format!("samples-{}.jsonl", spec.base)), &tagged)?;
                let row = figures::row(rep, mode, proto, load.as_ref(), &tagged);
                let ratio = figures::ratio_to_untuned(&rows, &row);
                screen.on_done(Done {
                    label: label(proto),
                    req_per_s: row["req_per_s"].as_f64().unwrap_or(0.0),
                    p99_us: row["p99_us"].as_u64().unwrap_or(0),
                    ratio,
                });
                rows.push(row);
            }
        }
    }
    drop(screen);
    let doc = json!({
        "setup": setup, "cpus": online_cpus()?.len(), "steer": modes.iter().map(|m| m.as_str()).collect::<Vec<_>>(),
        "protos": args.protos().iter().map(|p| p.as_str()).collect::<Vec<_>>(), "scenario": args.scenario.as_str(),
        "seconds": args.duration.as_secs_f64(), "warmup_s": args.warmup.as_secs_f64(), "connections": args.connections,
        "reps": args.reps, "caveat": caveat, "loaded_machine": loaded,
        "environment": {"before": env_before, "after": figures::environment()},
        "runs": rows,
    });
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&doc)?)?;
    print!("{}", crate::report::summary(&doc)?);
    crate::report::run(dir)?;
    index_run(dir, &doc)?;
    Ok(())
}

/// A run stored beside `results/README.md` gets a line in that index.
fn index_run(dir: &Path, doc: &Value) -> Result<()> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    let index = parent.join("README.md");
    if parent.file_name().is_none_or(|n| n != "results") || !index.is_file() {
        return Ok(());
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let command: Vec<String> = std::env::args().skip(1).collect();
    let what = format!(
        "the main job ({} over {}, {} repetitions{}{})",
        doc["steer"].as_array().map_or(String::new(), |m| m
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" / ")),
        doc["protos"].as_array().map_or(String::new(), |p| p
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" and ")),
        doc["reps"],
        if doc["setup"]["kind"] == "iface" {
            ", on a real interface"
        } else {
            ", in the lab"
        },
        if doc["loaded_machine"].is_string() {
            "; LOADED MACHINE, figures marked"
        } else {
            ""
        },
    );
    let line = format!(
        "| [{name}]({name}/report.md) | `rxsteer {}` | {what} |\n",
        command.join(" ")
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(&index)?;
    std::io::Write::write_all(&mut f, line.as_bytes())?;
    eprintln!("rxsteer compare: indexed in {}", index.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_order_rotates() {
        let all = [Mode::None, Mode::Rps, Mode::Cpumap];
        assert_eq!(rotated(&all, 0), all);
        assert_eq!(rotated(&all, 1), [Mode::Rps, Mode::Cpumap, Mode::None]);
        assert_eq!(rotated(&all, 3), all);
        assert_eq!(rotated(&[Mode::Rps], 2), [Mode::Rps]);
    }

    #[test]
    fn durations_take_bare_seconds_or_units() {
        assert_eq!(parse_seconds("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_seconds("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_seconds("five")
            .unwrap_err()
            .contains("not a duration"));
        assert!(parse_seconds("2h").unwrap_err().contains("at most"));
    }

    #[test]
    fn default_out_is_dated_under_results() {
        let p = default_out().display().to_string();
        assert!(
            p.starts_with("results/20") && p.contains("-compare-"),
            "{p}"
        );
    }
}
