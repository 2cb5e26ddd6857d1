//! Host tuning for rxsteer. So far: CPU lists as users and sysfs write them, and cpumasks in
//! the kernel's comma-grouped 32-bit form. Profiles, snapshot and revert build on these.
pub mod cpus;
