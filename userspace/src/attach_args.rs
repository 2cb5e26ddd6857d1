//! The flags of `rxsteer attach`, shared by the commands that run it: install writes them into
//! a unit and checks them as attach will at boot, compare starts attach with them.
use anyhow::{bail, Result};
use rxsteer_dataplane::{SteerSet, SteerSets, MAX_QSIZE};
use rxsteer_records::{CpuFlags, Mode};
use rxsteer_tune::cpus::online_cpus;

use crate::{
    cpu_arg::SteerCpus, lever_args::LeverArgs, observe::ObserveArgs, ports::check_disjoint,
};

#[derive(clap::Args, Debug)]
pub struct AttachArgs {
    #[command(flatten)]
    pub observe: ObserveArgs,
    /// Steering mode.
    #[arg(long, value_enum)]
    pub steer: Mode,
    #[command(flatten)]
    pub cpus: SteerCpus,
    #[command(flatten)]
    pub levers: LeverArgs,
    /// cpumap: ring size per target CPU, in frames (1-16384, the kernel's limit).
    #[arg(long, default_value = "2048", value_parser = clap::value_parser!(u32).range(1..=MAX_QSIZE as i64))]
    pub qsize: u32,
    /// rps-dissector: run even where multipath routes, bonds or tc flower filters share the
    /// flow dissector it replaces (they see each service's clients as one; docs/steering.md).
    #[arg(long)]
    pub accept_dissector_reach: bool,
    /// Write one line to this descriptor once observing (`observing IFACE steer MODE`), then
    /// close it: how a parent that started attach learns it is ready (rxsteer compare).
    #[arg(long, value_parser = crate::ready::parse_fd, hide = true)]
    pub ready_fd: Option<std::os::fd::RawFd>,
}

/// Every flag checked against the machine before anything on it changes.
pub fn validate(args: &AttachArgs) -> Result<SteerSets> {
    let o = &args.observe;
    check_disjoint(&o.http_ports.0, &o.zap_ports.0)?;
    let online = online_cpus()?;
    args.cpus
        .check_for(args.steer)
        .map_err(anyhow::Error::msg)?;
    if args.steer.steering().cpus != CpuFlags::PerClass {
        return Ok(SteerSets::default());
    }
    if args.qsize == 0 || args.qsize > MAX_QSIZE {
        bail!("--qsize {} is out of range (1-{MAX_QSIZE})", args.qsize);
    }
    let zap = args.cpus.zap_cpus.clone().map(|c| c.0).unwrap_or_default();
    let sets = SteerSets {
        // The sets are disjoint, so HTTP's default is every online CPU not given to ZAP
        // (`--zap-cpus` alone must not collide with a default the user never chose).
        http: args.cpus.http_cpus.clone().map_or_else(
            || {
                online
                    .iter()
                    .copied()
                    .filter(|c| !zap.contains(c))
                    .collect()
            },
            |c| c.0,
        ),
        zap,
        other: args
            .cpus
            .other_cpus
            .clone()
            .map(|c| c.0)
            .unwrap_or_default(),
    };
    sets.validate(&online)
        .map_err(|e| anyhow::anyhow!(e.describe(set_flag)))?;
    Ok(sets)
}

/// The command-line flag of a steering set.
pub fn set_flag(set: SteerSet) -> &'static str {
    match set {
        SteerSet::Http => "--http-cpus",
        SteerSet::Zap => "--zap-cpus",
        SteerSet::Other => "--other-cpus",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        attach: AttachArgs,
    }

    fn sets(flags: &[&str]) -> Result<SteerSets> {
        let mut argv = vec!["attach", "--iface", "lo", "--steer", "cpumap"];
        argv.extend_from_slice(flags);
        validate(&Cli::try_parse_from(argv).unwrap().attach)
    }

    #[test]
    fn http_defaults_to_the_cpus_zap_was_not_given() {
        let online = online_cpus().unwrap();
        assert_eq!(sets(&[]).unwrap().http, online);
        let last = *online.last().unwrap();
        let s = sets(&["--zap-cpus", &last.to_string()]).unwrap();
        assert_eq!(s.zap, vec![last]);
        assert!(!s.http.contains(&last), "{:?}", s.http);
        assert_eq!(s.http.len(), online.len() - 1);
        let both = sets(&["--http-cpus", "0", "--zap-cpus", "0"]).unwrap_err();
        assert!(both.to_string().contains("CPU 0 is in both"), "{both}");
    }
}
