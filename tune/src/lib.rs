//! Host tuning for rxsteer: the reference tune.sh done so that it can be undone.
//!
//! A profile is a list of [`Setting`]s (a sysfs file or sysctl and the value it should hold).
//! Before anything is written, every original value goes into a state file; revert writes them
//! back byte for byte. Only this crate writes sysfs and sysctls.
pub mod apply;
pub mod cpus;
pub mod pin;
pub mod profile;
pub mod state;
pub mod sysctl;
pub mod topology;

pub use apply::{apply, revert, show, Change, Plan, TuneError};
pub use profile::{profile, ProfileInput};
pub use state::StateFile;
