//! What a setting's path names, and how its value is read, written and compared: most are
//! files (sysfs, sysctls); the CPUs of an interface's NAPI kthreads are tasks' affinity; the
//! per-NAPI IRQ suspension timeout is netlink's.
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{cpus::parse_cpumask, irq_suspend, napi};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Knob {
    /// A sysfs file or a sysctl, read and written as the file at the path.
    #[default]
    File,
    /// The CPUs of the NAPI kthreads of the interface whose `threaded` file is the path.
    NapiThreadCpus,
    /// The IRQ suspension timeout of each NAPI instance of the interface whose `ifindex` file
    /// is the path (netdev netlink, Linux 6.13).
    NapiIrqSuspend,
}

impl Knob {
    /// The value exactly as read (a file's newline included), so revert can restore it byte
    /// for byte.
    pub fn read(self, path: &Path) -> std::io::Result<String> {
        match self {
            Knob::File => std::fs::read_to_string(path),
            Knob::NapiThreadCpus => napi::read(path),
            Knob::NapiIrqSuspend => irq_suspend::read(path),
        }
    }

    pub fn write(self, path: &Path, value: &str) -> std::io::Result<()> {
        match self {
            Knob::File => std::fs::write(path, value).map_err(|e| explain(path, e)),
            Knob::NapiThreadCpus => napi::write(path, value),
            Knob::NapiIrqSuspend => irq_suspend::write(path, value),
        }
    }

    /// Whether two values mean the same: whitespace-separated fields alike (`4096\t131072` =
    /// `4096 131072`), cpumasks as CPU sets (`0` = `00000000`), NAPI kthreads on the same CPUs.
    pub fn same(self, path: &Path, a: &str, b: &str) -> bool {
        match self {
            Knob::NapiThreadCpus => return napi::same(a, b),
            Knob::NapiIrqSuspend => return irq_suspend::same(a, b),
            Knob::File => {}
        }
        let is_mask = path
            .file_name()
            .and_then(|f| f.to_str())
            .is_some_and(|f| f.ends_with("_cpus"));
        if is_mask {
            if let (Ok(x), Ok(y)) = (parse_cpumask(a), parse_cpumask(b)) {
                return x == y;
            }
        }
        a.split_whitespace().eq(b.split_whitespace())
    }
}

/// A write error with what it means where the kernel's word alone would puzzle: `threaded`
/// refuses with EOPNOTSUPP on a device that polls without NAPI at the moment.
fn explain(path: &Path, e: std::io::Error) -> std::io::Error {
    if path.file_name().is_some_and(|f| f == "threaded")
        && e.raw_os_error() == Some(libc::EOPNOTSUPP)
    {
        return std::io::Error::new(
            e.kind(),
            "the device has no NAPI instance to thread now (a veth has one only with GRO or \
             XDP on)",
        );
    }
    e
}
