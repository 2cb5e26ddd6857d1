//! rxsteer: where receive work lands on a Linux host, and what steering it buys.
//!
//! Two floors. `commands` holds one module per command (top, attach, tune, lab, serve,
//! install, compare, selftest); no command imports another. Everything else is the machinery they
//! share (observe, view, host, iface, netns, child, ...), which imports no command. This file
//! is the top: the command line and its dispatch. `tests/layers.rs` in xtask holds it.
pub mod attach_args;
pub mod child;
pub mod commands;
pub mod cpu_arg;
pub mod dissector_reach;
pub mod embedded_lab;
pub mod host;
pub mod iface;
pub mod lever_args;
pub mod machine;
pub mod metrics;
pub mod netns;
pub mod observe;
pub mod ports;
pub mod privilege;
pub mod ready;
pub mod refused;
pub mod screenshot;
pub mod signals;
pub mod traffic;
pub mod view;

use clap::{Parser, Subcommand};
use commands::{attach, compare, install, serve, top, tune};
use rxsteer_records::Mode;

#[derive(Parser)]
#[command(
    name = "rxsteer",
    version,
    about = "Where receive work lands on each CPU, and which steering gets the most requests through"
)]
pub struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Attach the observe programs to an interface and show, per CPU and over time, where the
    /// receive work runs: NET_RX softirq time, receive-kthread time, packets.
    Top(observe::ObserveArgs),
    /// Build the embedded veth lab (two namespaces, one CPU as the receive core), observe it
    /// under a bounded load, and tear it down.
    Lab(commands::lab::LabArgs),
    /// Put one steering mode in place, exclusively, observe it, and undo it all on exit (the
    /// modes are named from the steering table: [`Cli::command`]).
    Attach(attach_args::AttachArgs),
    /// Host tuning profiles with snapshot and revert.
    #[command(subcommand)]
    Tune(tune::TuneCmd),
    /// Put back whatever rxsteer changed in this network namespace (after a crash).
    Restore,
    /// The steering modes side by side, each against untuned (named from the steering table:
    /// [`Cli::command`]).
    Compare(Box<compare::CompareArgs>),
    /// Render report.md from a comparison's run directory (its run.json).
    Report(commands::report::ReportArgs),
    /// PREDICT what each arm of a stored run would serve on more CPUs, from its measured costs
    /// per request and stage (writes RUN_DIR/predict-<N>cpus.md and .svg).
    Predict(commands::predict::PredictArgs),
    /// Keep a steering in place at every boot (named from the steering table:
    /// [`Cli::command`]).
    Install(install::InstallArgs),
    /// What rxsteer installed, what is applied now, and whether the live values still match
    /// (exit 3 when something installed is not in place).
    Status(install::InstalledArgs),
    /// Stop, disable and remove what `install` wrote: the host as it was before install.
    Uninstall(install::InstalledArgs),
    /// Check rxsteer's figures against the kernel's own counts on this box: in the lab under a
    /// paced load of its own, or (--iface) watching live traffic only. Exit 1 when a figure is
    /// outside its tolerance.
    Selftest(commands::selftest::SelftestArgs),
    /// Serve HTTP/1.1 and ZAP-HTTP (GET /health, POST /rpc, POST /echo, POST /upload). Needs no privileges.
    Serve(serve::ServeArgs),
    /// Write man pages and bash, zsh and fish completions for rxsteer and rxload into a folder
    /// (what `cargo xtask dist` installs).
    Generate(commands::generate::GenerateArgs),
}

impl Cli {
    /// The command line. Whatever names the steering modes (an about line, a flag's help) is
    /// written here from the steering table, so no help text keeps a list of its own to go
    /// stale; `--steer`'s values and their help come from the same table through clap.
    pub fn command() -> clap::Command {
        use clap::CommandFactory;
        let names = |modes: &mut dyn Iterator<Item = Mode>| {
            modes.map(Mode::as_str).collect::<Vec<_>>().join(", ")
        };
        let all = names(&mut Mode::ALL.iter().copied());
        let kept = names(&mut Mode::profiles());
        let each_kept = Mode::profiles()
            .map(|m| format!("{m}: {}", m.steering().summary))
            .collect::<Vec<_>>()
            .join("; ");
        <Cli as CommandFactory>::command()
            .mut_subcommand("attach", |c| {
                c.about(format!(
                    "Put one steering mode in place ({all}), exclusively, observe it, and undo \
                     it all on exit"
                ))
            })
            .mut_subcommand("compare", |c| {
                c.about(format!(
                    "The steering modes ({all}) side by side, each against untuned, in the \
                     embedded lab or on --iface: rxsteer serve driven by rxload, per mode and \
                     repetition, with where the receive work went per CPU"
                ))
            })
            .mut_subcommand("install", |c| {
                c.about(format!(
                    "Keep a steering ({kept}) in place at every boot: a systemd unit that \
                     applies it at start and takes it back at stop"
                ))
                .mut_arg("steer", |a| {
                    a.help(format!("The steering to keep: {each_kept}"))
                })
            })
    }

    /// The command line of this process, parsed by [`Cli::command`]; exits as clap does on a
    /// bad one (2) or on --help.
    pub fn from_command_line() -> Self {
        use clap::FromArgMatches;
        let matches = Self::command().get_matches();
        Self::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// Runs the command the line asked for.
    pub fn run(self) -> anyhow::Result<()> {
        match self.cmd {
            Cmd::Top(args) => top::run(&args),
            Cmd::Lab(args) => commands::lab::run(&args),
            Cmd::Attach(args) => attach::run(&args),
            Cmd::Tune(cmd) => tune::run(&cmd),
            Cmd::Restore => tune::restore(),
            Cmd::Serve(args) => serve::run(&args),
            Cmd::Generate(args) => commands::generate::run(&args),
            Cmd::Selftest(args) => commands::selftest::run(&args),
            Cmd::Install(args) => install::install(&args),
            Cmd::Uninstall(args) => install::uninstall(&args),
            Cmd::Status(args) => install::status(&args).map(|in_place| {
                if !in_place {
                    std::process::exit(3);
                }
            }),
            Cmd::Compare(args) => compare::run(&args),
            Cmd::Report(args) => commands::report::run(&args),
            Cmd::Predict(args) => commands::predict::run(&args),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every mode that can be installed gets a unit whose commands rxsteer takes: a new
    /// mode's unit needs no edit here.
    #[test]
    fn every_profiles_unit_runs_commands_rxsteer_takes() {
        for mode in Mode::profiles() {
            let ask = commands::install::unit::Ask {
                iface: "eth0".into(),
                steer: mode,
                flags: Vec::new(),
                // The switch is taken too: every unit may carry it.
                accept_dissector_reach: mode.receive_per_service_on_one_cpu(),
            };
            let commands = std::iter::once(ask.exec_start()).chain(ask.exec_stop());
            for argv in commands {
                let line = std::iter::once("rxsteer".to_string()).chain(argv.clone());
                if let Err(e) = <Cli as clap::Parser>::try_parse_from(line) {
                    panic!("{mode}: {argv:?}: {e}");
                }
            }
            assert!(ask.unit_text().contains(mode.steering().summary));
        }
    }

    /// The help a user reads names exactly the steering table's modes: `--steer`'s values
    /// (attach, compare) and every parenthesized list of them in an about line or a flag's help
    /// (attach, compare, install). A list of its own in a help text, or a mode the table
    /// gained that a help text misses, fails here.
    #[test]
    fn help_names_exactly_the_steering_tables_modes() {
        let table: Vec<&str> = Mode::ALL.iter().map(|m| m.as_str()).collect();
        let kept: Vec<&str> = Mode::profiles().map(Mode::as_str).collect();
        let mut cli = Cli::command();
        let overview = cli.render_long_help().to_string();
        for (sub, listed) in [("attach", &table), ("compare", &table), ("install", &kept)] {
            let help = cli
                .find_subcommand_mut(sub)
                .unwrap()
                .render_long_help()
                .to_string();
            // The about line, in the overview and atop the command's own help.
            let about = |text: &str| -> Vec<String> {
                let start = text.find('(').expect("a list of modes in parentheses") + 1;
                let end = start + text[start..].find(')').unwrap();
                text[start..end].split(", ").map(str::to_string).collect()
            };
            let line = overview
                .lines()
                .find(|l| l.trim_start().starts_with(sub))
                .unwrap();
            assert_eq!(&about(line), listed, "rxsteer --help, {sub}: {line}");
            assert_eq!(&about(&help), listed, "rxsteer {sub} --help:\n{help}");
            // --steer's possible values ("- name: help"), where clap lists them.
            let option = |l: &str| {
                let l = l.trim_start();
                l.starts_with("--") || (l.starts_with('-') && l.chars().nth(2) == Some(','))
            };
            let values: Vec<&str> = help
                .lines()
                .skip_while(|l| !l.trim_start().starts_with("--steer <"))
                .skip(1)
                .take_while(|l| !option(l))
                .filter_map(|l| l.trim_start().strip_prefix("- "))
                .filter_map(|l| l.split(':').next())
                .map(str::trim)
                .collect();
            let expected: Vec<&str> = match sub {
                "compare" => table.iter().copied().chain(["all"]).collect(),
                "attach" => table.clone(),
                _ => vec![], // install parses a profile itself; its help lists them instead
            };
            assert_eq!(values, expected, "rxsteer {sub} --help, --steer:\n{help}");
            if sub == "install" {
                for m in &kept {
                    assert!(help.contains(&format!("{m}: ")), "{m} in:\n{help}");
                }
            }
        }
        // The words of a list that was once written by hand.
        assert!(!overview.contains("Untuned vs RPS vs cpumap"), "{overview}");
    }
}
