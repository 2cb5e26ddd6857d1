//! `rxsteer lab`: build the embedded lab, observe its receive path under a bounded load, tear
//! it down. The steering comparison (every mode of records::steering) builds on this.
use anyhow::Result;
use std::{
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use rxsteer_dataplane::{Dataplane, PortConfig};

use crate::{
    embedded_lab::{EmbeddedLab, RoleArgs},
    observe::{observe, parse_interval, Output},
    privilege::{self, Cap},
    signals::stop_on_signals,
    traffic::EchoLoad,
};
use rxsteer_tune::cpus::online_cpus;

#[derive(clap::Args, Debug)]
pub struct LabArgs {
    /// How long to drive load (bounded; the run stops by itself).
    #[arg(long, short = 'd', default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,
    /// Sampling interval.
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// One JSON line per interval instead of the live view.
    #[arg(long, alias = "no-tui")]
    pub json: bool,
    #[command(flatten)]
    pub roles: RoleArgs,
    /// Concurrent connections, one request in flight each.
    #[arg(long, short = 'c', default_value = "16", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub connections: u16,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{s:?} is not a duration: {e}"))?;
    if d < Duration::from_secs(1) || d > Duration::from_secs(3600) {
        return Err(format!("duration {s:?} must be between 1s and 1h"));
    }
    Ok(d)
}

/// Port of the lab's load (counted as HTTP by rx_account).
const LAB_PORT: u16 = 8080;

/// The lab's roles from the flags and this machine's CPUs, said with what the run will be
/// and anything an earlier run left.
fn roles_said(args: &LabArgs) -> Result<crate::embedded_lab::Roles> {
    let online = online_cpus()?;
    let kinds = rxsteer_tune::topology::of_this_machine(&online);
    let roles = args.roles.choose(&online, &kinds)?;
    if let Some(why) = crate::embedded_lab::why_roles(&roles, &kinds) {
        eprintln!("rxsteer lab: {why}");
    }
    for n in EmbeddedLab::remove_leftovers()? {
        eprintln!("rxsteer: removed network namespace {n} left by an earlier run");
    }
    eprintln!("rxsteer lab: {}", crate::embedded_lab::describe(&roles));
    if let Some(c) = rxsteer_records::small_machine_caveat(online.len()) {
        eprintln!("rxsteer lab: note: {c}");
    }
    Ok(roles)
}

pub fn run(args: &LabArgs) -> Result<()> {
    privilege::require(
        "rxsteer lab",
        &[Cap::SysAdmin, Cap::NetAdmin, Cap::Bpf, Cap::Perfmon],
    )?;
    // Handlers first: a Ctrl-C or SIGTERM during setup must still end in a clean exit that
    // detaches and reverts, not the default death.
    let stop = stop_on_signals()?;
    let roles = roles_said(args)?;
    let lab = EmbeddedLab::create(&roles)?;
    let dev = lab.veth.server_dev.clone();
    let (dp, counters) = lab
        .veth
        .server
        .spawn(None, move || {
            let mut dp = Dataplane::load(&PortConfig::default())?;
            dp.attach_tracepoints()?;
            dp.attach_driver_tracepoints(&dev)?;
            let counters = dp.take_counters()?;
            Ok((dp, counters))
        })
        .join()
        .expect("attach thread")?;
    // The baseline before the load starts and the line says so.
    let sampler = rxsteer_dataplane::sampler::Sampler::new(
        Some(counters),
        &lab.veth.server_dev,
        rxsteer_records::BpfStatsChoice::Sampled,
        args.interval,
    )?;
    eprintln!(
        "rxsteer lab: observing {} (receive tracepoints, no XDP), NAPI thread {} pinned to CPU {}; load: \
         {} connections of 64-byte TCP request/response for {:?} (a built-in echo load; \
         `rxsteer compare` drives the real servers with rxload, mode by mode)",
        lab.veth.server_dev, lab.napi_pid, roles.rx_cpu, args.connections, args.duration
    );
    let start = Instant::now();
    let load = EchoLoad::start(
        &lab.veth,
        LAB_PORT,
        &roles,
        args.connections as usize,
        start + args.duration,
        Arc::clone(&stop),
    )?;
    let intervals = (args.duration.as_secs_f64() / args.interval.as_secs_f64()).floor() as u64;
    let output = Output {
        iface: &lab.veth.server_dev,
        how: rxsteer_records::Observed {
            observer: rxsteer_records::Observer::Tracepoint,
            xdp_mode: None,
            xdp_frags: false,
            tc: rxsteer_dataplane::TcAttached::Unavailable("not attached by rxsteer lab".into()),
            level: rxsteer_records::ObserveLevel::Minimal,
        },
        json: args.json,
    };
    let observed = observe(
        sampler,
        args.interval,
        Some(intervals.max(1)),
        &output,
        &stop,
        None,
    );
    stop.store(true, Ordering::SeqCst);
    let exchanges = load.join();
    let elapsed = start.elapsed().as_secs_f64();
    drop(dp);
    drop(lab);
    observed?;
    let exchanges = exchanges?;
    eprintln!(
        "rxsteer lab: {exchanges} request/response exchanges in {elapsed:.1} s = {:.0} per second; lab removed",
        exchanges as f64 / elapsed
    );
    Ok(())
}
