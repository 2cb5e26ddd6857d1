//! The one queue's own levers as flags, for any steering mode: `--irq-cpu`, `--ring`,
//! `--coalesce`. attach, tune apply, install and compare take them alike; a value the machine
//! cannot take (an offline CPU, a field `ethtool -C` has no name for) is refused by the parser,
//! so before anything starts, with clap's exit status 2.
use rxsteer_tune::{
    cpus::{format_cpu_list, online_cpus},
    ethtool,
    levers::{Asked, Ring},
};

use crate::cpu_arg::{cpu_list, CpuList};

#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct LeverArgs {
    /// Any mode: move every interrupt vector of the interface to these CPUs, and put them
    /// back after (irq-affinity's default: the highest-capacity CPU the server and loader
    /// leave free). Refused while irqbalance runs, with what to run instead.
    #[arg(long, value_parser = online_cpu_list, value_name = "CPUS")]
    pub irq_cpu: Option<CpuList>,
    /// Any mode: the RX and TX ring sizes, `max` or a number of descriptors (the driver
    /// rounds it to what it takes; the reference mode's default is max).
    #[arg(long, value_name = "max|N")]
    pub ring: Option<Ring>,
    /// Any mode: interrupt coalescing as `ethtool -C` names it, comma-separated
    /// (`rx-usecs=8,rx-frames=32`); a field the driver refuses is skipped in one line.
    #[arg(long, value_parser = coalesce, value_name = "NAME=N,...")]
    pub coalesce: Option<String>,
}

/// A CPU list whose every CPU is online here.
pub fn online_cpu_list(s: &str) -> Result<CpuList, String> {
    let list = cpu_list(s)?;
    let online = online_cpus().map_err(|e| format!("reading the online CPUs: {e}"))?;
    match list.0.iter().find(|c| !online.contains(c)) {
        Some(c) => Err(format!(
            "CPU {c} is not online here (online: {})",
            format_cpu_list(&online)
        )),
        None => Ok(list),
    }
}

fn coalesce(s: &str) -> Result<String, String> {
    let value = s.replace(',', " ");
    ethtool::check_coalesce(&value)?;
    Ok(value)
}

impl LeverArgs {
    pub fn asked(&self) -> Asked {
        Asked {
            irq_cpus: self.irq_cpu.as_ref().map(|c| c.0.clone()),
            ring: self.ring,
            coalesce: self.coalesce.clone(),
        }
    }

    /// The flags as given, to pass on to the command that applies them (a unit's, attach's).
    pub fn flags(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(c) = &self.irq_cpu {
            out.push(("--irq-cpu", format_cpu_list(&c.0)));
        }
        if let Some(r) = self.ring {
            out.push(("--ring", r.to_string()));
        }
        if let Some(c) = &self.coalesce {
            out.push(("--coalesce", c.replace(' ', ",")));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        levers: LeverArgs,
    }

    #[test]
    fn levers_parse_and_round_trip_and_nonsense_is_refused_with_exit_2() {
        let cli = Cli::try_parse_from([
            "x",
            "--irq-cpu",
            "0",
            "--ring",
            "max",
            "--coalesce",
            "rx-usecs=8,rx-frames=32",
        ])
        .unwrap();
        assert_eq!(
            cli.levers.asked().coalesce.as_deref(),
            Some("rx-usecs=8 rx-frames=32")
        );
        let again: Vec<String> = std::iter::once("x".to_string())
            .chain(
                cli.levers
                    .flags()
                    .into_iter()
                    .flat_map(|(f, v)| [f.to_string(), v]),
            )
            .collect();
        assert_eq!(Cli::try_parse_from(again).unwrap().levers, cli.levers);
        for bad in [
            ["x", "--irq-cpu", "60000"],
            ["x", "--ring", "0"],
            ["x", "--coalesce", "rx-usec=8"],
        ] {
            let e = Cli::try_parse_from(bad).err().unwrap();
            assert_eq!(e.exit_code(), 2, "{bad:?}");
            assert!(e.to_string().contains(bad[1]), "{e}");
        }
    }
}
