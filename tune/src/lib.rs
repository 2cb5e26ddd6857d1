//! Host tuning for rxsteer: the reference tune.sh done so that it can be undone.
//!
//! A profile is a list of [`Setting`]s (a sysfs file or sysctl and the value it should hold).
//! Before anything is written, every original value goes into a state file; revert writes them
//! back byte for byte. Only this crate writes sysfs and sysctls.
pub mod apply;
pub mod cpus;
pub mod ethtool;
pub mod genl;
pub mod irq;
pub mod irq_suspend;
pub mod knob;
pub mod levers;
pub mod lock;
pub mod napi;
pub mod pin;
pub mod profile;
pub mod setting;
pub mod state;
pub mod sysctl;
pub mod task;
pub mod topology;

pub use apply::{apply, revert, show, Change, Plan, TuneError};

/// The root of the system tree tuning reads its CPU lists from and writes its files under:
/// `/`, or `RXSTEER_TUNE_ROOT` when set. The variable exists for tests, which point it at a
/// fake sysfs tree to drive `attach` with CPU counts this machine does not have (masks past 64
/// CPUs). XDP, the sampler and the view always use the real machine.
pub fn tune_root() -> std::path::PathBuf {
    std::env::var_os("RXSTEER_TUNE_ROOT").map_or_else(|| "/".into(), Into::into)
}
pub use profile::{profile, ProfileInput};
pub use state::StateFile;
