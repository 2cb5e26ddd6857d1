//! One value a profile wants, and what profiles are computed from: the types every part of
//! tuning shares (the profile, the NIC's levers, the interrupts), kept apart from all of them.
use std::path::{Path, PathBuf};

use crate::knob::Knob;

/// One value a profile wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// `net.core.somaxconn` or `eth0 rx-0/rps_cpus`.
    pub name: String,
    pub path: PathBuf,
    /// How the path is read and written.
    pub knob: Knob,
    pub value: String,
    /// Why this setting is not applied here (a global sysctl inside a namespace, a file this
    /// kernel or device does not have).
    pub skipped: Option<String>,
}

/// What a profile is computed from.
#[derive(Clone, Debug)]
pub struct ProfileInput {
    pub iface: String,
    /// The CPUs the mode's CPU flag names: where RPS and XPS may spread (`--cpus`), or where
    /// the NAPI kthreads run (`--napi-cpu`).
    pub cpus: Vec<u32>,
    /// Number of CPU ids (highest possible + 1): the width of the masks the kernel prints.
    pub nr_cpu_ids: u32,
    /// True in the root network namespace: only there are global sysctls written.
    pub root_netns: bool,
    /// `/` on a real machine; a scratch tree in tests.
    pub root: PathBuf,
    /// The NIC's and CPUs' own levers asked for on the command line, for any mode.
    pub levers: Asked,
}

/// `abs` (a path as the booted box sees it) inside the tree rooted at `root`.
pub fn under(root: &Path, abs: &Path) -> PathBuf {
    root.join(abs.strip_prefix("/").unwrap_or(abs))
}

/// The levers asked for on the command line, for any mode (an installed unit's record keeps
/// them, so its status recomputes the same profile).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Asked {
    /// `--irq-cpu L`: the CPUs every interrupt vector of the interface goes to. A mode that
    /// moves the interrupt (irq-affinity) gets the caller's pick when none is named.
    pub irq_cpus: Option<Vec<u32>>,
    /// `--ring`: `max`, or a size for RX and TX both.
    pub ring: Option<Ring>,
    /// `--coalesce`: `rx-usecs=N rx-frames=N ...` (checked by [`ethtool::check_coalesce`]).
    pub coalesce: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ring {
    Max,
    Size(u32),
}

impl std::fmt::Display for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Ring::Max => f.write_str("max"),
            Ring::Size(n) => write!(f, "{n}"),
        }
    }
}

impl std::str::FromStr for Ring {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "max" => Ok(Ring::Max),
            n => match n.parse::<u32>() {
                Ok(v) if (1..=1 << 20).contains(&v) => Ok(Ring::Size(v)),
                _ => Err(format!("{s:?} is not max or a ring size 1-1048576")),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_flags_parse() {
        assert_eq!("max".parse::<Ring>(), Ok(Ring::Max));
        assert_eq!("80".parse::<Ring>(), Ok(Ring::Size(80)));
        assert!("0".parse::<Ring>().is_err());
        assert!("big".parse::<Ring>().is_err());
    }
}
