//! `rxsteer tune apply|revert|show` (explicit tuning that stays until reverted) and
//! `rxsteer restore` (put back whatever rxsteer changed in this network namespace).
use anyhow::{bail, Result};
use clap::Subcommand;
use std::io::Write;

use crate::{
    cpu_arg::{cpu_list, profile_cpus, refuse_flags_not_taken, steering_profile, CpuList},
    host, iface, privilege,
    privilege::Cap,
};
use rxsteer_records::{CpuFlags, Mode};
use rxsteer_tune::{apply, profile, revert, show, sysctl, StateFile};

#[derive(clap::Args, Debug)]
pub struct TuneTarget {
    #[arg(long)]
    pub iface: String,
    /// A steering mode with a tuning: any but none (which is `tune revert`).
    #[arg(long, value_parser = steering_profile)]
    pub profile: Mode,
    /// rps: CPUs RPS and XPS may use (default: every online CPU).
    #[arg(long, value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    /// napi-thread: CPUs the interface's NAPI kthreads run on (default: every online CPU).
    #[arg(long, value_parser = cpu_list)]
    pub napi_cpu: Option<CpuList>,
    #[command(flatten)]
    pub levers: crate::lever_args::LeverArgs,
}

impl TuneTarget {
    /// The profile's input, its CPU flag checked against the profile first.
    fn input(&self) -> Result<rxsteer_tune::ProfileInput> {
        refuse_flags_not_taken(
            self.profile,
            &[
                ("--cpus", CpuFlags::List, self.cpus.is_some()),
                ("--napi-cpu", CpuFlags::NapiCpus, self.napi_cpu.is_some()),
            ],
        )
        .map_err(anyhow::Error::msg)?;
        host::profile_input(
            &self.iface,
            profile_cpus(self.cpus.as_ref(), self.napi_cpu.as_ref()),
            host::with_irq_pick(self.profile, &self.iface, self.levers.asked())?,
        )
    }
}

#[derive(Subcommand, Debug)]
pub enum TuneCmd {
    /// Apply a profile (snapshot first); it stays until `tune revert` or `restore`.
    Apply {
        #[command(flatten)]
        target: TuneTarget,
        /// Print what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Put every value back as it was before the first apply.
    Revert,
    /// Current value, profile value and snapshot side by side.
    Show {
        #[command(flatten)]
        target: TuneTarget,
    },
}

const TUNE_CAPS: &[Cap] = &[Cap::NetAdmin, Cap::SysAdmin];

pub fn run(cmd: &TuneCmd) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match cmd {
        TuneCmd::Apply { target, dry_run } => {
            iface::require_up(&target.iface)?;
            // A tuning attaches no flow dissector: its reach is not this command's.
            host::refuse_unmet(target.profile, "--profile", true)?;
            let input = target.input()?;
            let settings = profile(target.profile, &input);
            host::refuse_irqbalance(&settings)?;
            // Held until this arm returns, past the last write.
            let _lock = match dry_run {
                true => None,
                false => {
                    privilege::require("rxsteer tune apply", TUNE_CAPS)?;
                    Some(host::take_over(&format!(
                        "rxsteer tune apply --profile {} on {}",
                        target.profile, target.iface
                    ))?)
                }
            };
            let fresh = StateFile::new(
                sysctl::netns_inode("self")?,
                &target.iface,
                target.profile.as_str(),
                false,
            );
            let plan = apply(&settings, &host::state_path()?, fresh, *dry_run)?;
            let verb = if *dry_run { "would change" } else { "changed" };
            writeln!(out, "{}", host::writes_said(verb, "", &plan))?;
            for c in plan.changes.iter().filter(|c| c.skipped.is_some()) {
                writeln!(
                    out,
                    "  skipped {}: {}",
                    c.name,
                    c.skipped.as_deref().unwrap_or_default()
                )?;
            }
            Ok(())
        }
        TuneCmd::Revert => {
            drop(out);
            restore()
        }
        TuneCmd::Show { target } => {
            iface::require_up(&target.iface)?;
            let input = target.input()?;
            let state = StateFile::load(&host::state_path()?)?;
            let plan = show(&profile(target.profile, &input), state.as_ref())?;
            writeln!(
                out,
                "{:<44} {:<26} {:<26} snapshot",
                "setting", "current", "profile"
            )?;
            for c in &plan.changes {
                let note = c
                    .skipped
                    .as_deref()
                    .map(|s| format!("  ({s})"))
                    .unwrap_or_default();
                writeln!(
                    out,
                    "{:<44} {:<26} {:<26} {}{note}",
                    c.name,
                    c.current.trim(),
                    c.target,
                    c.snapshot.as_deref().map(str::trim).unwrap_or("-")
                )?;
            }
            Ok(())
        }
    }
}

/// `rxsteer restore`: revert this namespace's state file, unless a live session owns it.
pub fn restore() -> Result<()> {
    privilege::require("rxsteer restore", TUNE_CAPS)?;
    let _lock = host::lock("rxsteer restore")?;
    let mut out = std::io::stdout().lock();
    host::remove_orphaned_state()?;
    rxsteer_dataplane::clsact::recover_crashed()?;
    // A killed `lab` or `compare` leaves its namespaces (its owner is gone: see embedded_lab.rs).
    let labs = match crate::embedded_lab::LabOwner::live() {
        Some(pid) => {
            writeln!(
                out,
                "the embedded lab is in use by rxsteer (pid {pid}): left to it"
            )?;
            vec![]
        }
        None => crate::embedded_lab::EmbeddedLab::remove_leftovers()?,
    };
    for n in &labs {
        writeln!(
            out,
            "removed network namespace {n} left by a killed lab or compare"
        )?;
    }
    // The session layer first, so that what comes back under it is the kept tuning, then that.
    let mut restored_any = false;
    for path in [host::session_path()?, host::state_path()?] {
        let Some(state) = StateFile::load(&path)? else {
            continue;
        };
        if let Some(pid) = state.live_owner() {
            bail!(
                "rxsteer (pid {pid}) is running and will restore its own changes; stop it instead"
            );
        }
        let restored = revert(&path)?;
        let on = format!(" ({} on {})", state.profile, state.iface);
        writeln!(out, "{}", host::changes_said("restored", &on, &restored))?;
        restored_any = true;
    }
    if !restored_any && labs.is_empty() {
        writeln!(
            out,
            "nothing to restore: rxsteer has no changes recorded in this network namespace"
        )?;
    }
    Ok(())
}
