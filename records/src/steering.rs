//! The steering modes, each defined once: its name, and everything the rest of rxsteer does
//! differently for it (the host tuning, the XDP program that steers, the CPUs it takes). The
//! tuning profile, `attach`, the comparison's arms, `install`'s unit and the report's
//! recommendation read a mode's [`Steering`]; none of them matches on the mode itself.
//!
//! A new mode is a variant of [`Mode`] and its entry in [`Mode::steering`] here; if it steers
//! with a program of its own, that program in `ebpf/src/` and its name in
//! `common/src/names.rs` (docs/architecture.md walks through it).
use rxsteer_common::names::program;

use crate::names::names;

names! {
    /// A steering mode: what `attach --steer` puts in place, a comparison's arm, a tuning
    /// profile, what `install` keeps in place.
    Mode, "steering mode" {
        /// Everything back to the snapshot; XDP only observes.
        None = "none",
        /// Kernel RPS/RFS/XPS and the reference sysctls; XDP only observes.
        Rps = "rps",
        /// XDP redirect into a BPF cpumap; RPS, RFS and XPS off.
        Cpumap = "cpumap",
    }
}

/// What one steering mode is, for everything that acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steering {
    /// The name a reader sees (report, live screen).
    pub label: &'static str,
    /// What it puts in place, in a phrase (the unit's description).
    pub summary: &'static str,
    /// The host tuning it wants; `None`: nothing to apply, the host goes back to the
    /// snapshot (so it is not a `tune` profile).
    pub tuning: Option<Tuning>,
    /// The XDP program that steers, `None` where XDP only observes (if at all). A mode with
    /// one needs a process that holds it (`attach`); one without is a tuning that a oneshot
    /// applies and reverts.
    pub xdp_program: Option<&'static str>,
    /// Which CPUs it takes from the command line.
    pub cpus: CpuFlags,
}

/// What a tuning profile writes, beyond the reference sysctls every profile sets. Off means
/// written off (0, an empty mask), so a profile also undoes what another tool left on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// RPS: each RX queue's `rps_cpus` is the mask of the chosen CPUs.
    pub rps: bool,
    /// RFS: `rps_sock_flow_entries` and each RX queue's share in `rps_flow_cnt`.
    pub rfs: bool,
    /// XPS: each TX queue's `xps_cpus` is the mask of the chosen CPUs.
    pub xps: bool,
}

/// The CPU flags a mode takes (`attach`, `install`, a comparison's attach of the arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuFlags {
    /// None: nothing is spread.
    Nothing,
    /// `--cpus L`: the CPUs RPS and XPS may use.
    List,
    /// `--http-cpus`, `--zap-cpus`, `--other-cpus` (cpumap's targets per traffic class) and
    /// `--qsize`; a comparison gives its protocol's flag the lab's steering targets.
    PerClass,
}

impl Mode {
    /// The mode's definition.
    pub const fn steering(self) -> &'static Steering {
        match self {
            Mode::None => &Steering {
                label: "untuned",
                summary: "nothing (the host as it was found)",
                tuning: None,
                xdp_program: None,
                cpus: CpuFlags::Nothing,
            },
            Mode::Rps => &Steering {
                label: "RPS/RFS/XPS",
                summary: "RPS/RFS/XPS and the reference sysctls",
                tuning: Some(Tuning {
                    rps: true,
                    rfs: true,
                    xps: true,
                }),
                xdp_program: None,
                cpus: CpuFlags::List,
            },
            Mode::Cpumap => &Steering {
                label: "XDP cpumap",
                summary: "XDP cpumap steering (RPS, RFS and XPS off)",
                // With RPS on, packets cpumap already moved would be steered a second time.
                tuning: Some(Tuning {
                    rps: false,
                    rfs: false,
                    xps: false,
                }),
                xdp_program: Some(program::STEER),
                cpus: CpuFlags::PerClass,
            },
        }
    }

    /// The name a reader sees (report, live screen).
    pub fn label(self) -> &'static str {
        self.steering().label
    }

    /// Whether an XDP program of the mode's own steers (so XDP is on the interface whatever
    /// the observer).
    pub fn steers_with_xdp(self) -> bool {
        self.steering().xdp_program.is_some()
    }

    /// The untuned baseline: the host as it was found, what every arm's ratio is taken
    /// against. One name for it, so no reader has to know that `None` means that.
    pub const fn baseline() -> Mode {
        Mode::None
    }

    /// Whether this is the untuned baseline ([`Mode::baseline`]).
    pub fn is_baseline(self) -> bool {
        self == Mode::baseline()
    }

    /// The modes that are tuning profiles (`tune apply --profile`).
    pub fn profiles() -> impl Iterator<Item = Mode> {
        Mode::ALL
            .iter()
            .copied()
            .filter(|m| m.steering().tuning.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Modes are names (`names!`): each round-trips, and an unknown one is refused with the
    /// accepted list.
    #[test]
    fn every_mode_round_trips_and_an_unknown_one_says_what_was_accepted() {
        for m in Mode::ALL {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(*m));
            let json = serde_json::to_string(m).unwrap();
            assert_eq!(json, format!("\"{m}\""));
            assert_eq!(serde_json::from_str::<Mode>(&json).unwrap(), *m);
        }
        let e = "fast".parse::<Mode>().unwrap_err().to_string();
        assert_eq!(
            e,
            "\"fast\" is not a valid steering mode: expected one of none, rps, cpumap"
        );
    }

    #[test]
    fn every_mode_that_steers_with_xdp_takes_cpu_sets_and_turns_rps_off() {
        for m in Mode::ALL {
            let s = m.steering();
            if s.xdp_program.is_some() {
                assert_eq!(s.cpus, CpuFlags::PerClass, "{m}");
                // XDP steering plus RPS would move each packet twice.
                assert!(s.tuning.is_some_and(|t| !t.rps), "{m}");
            }
            if s.tuning.is_none() {
                assert_eq!(s.cpus, CpuFlags::Nothing, "{m}: nothing to spread");
            }
        }
        assert_eq!(
            Mode::profiles().collect::<Vec<_>>(),
            [Mode::Rps, Mode::Cpumap]
        );
    }
}
