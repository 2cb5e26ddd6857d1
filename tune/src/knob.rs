//! What a setting's path names, and how its value is read, written and compared: most are
//! files (sysfs, sysctls); the CPUs of an interface's NAPI kthreads are tasks' affinity; the
//! per-NAPI IRQ suspension timeout is netlink's.
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{
    cpus::{parse_cpu_list, parse_cpumask},
    ethtool, irq_suspend, napi,
};

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
    /// The RX/TX ring sizes of the interface whose `/sys/class/net/<iface>` directory is the
    /// path (ethtool ioctl): `rx=N tx=N`.
    Ring,
    /// The interface's interrupt coalescing (ethtool ioctl): `rx-usecs=N rx-frames=N ...`.
    Coalesce,
    /// The interface's GRO, GSO and TSO (ethtool ioctl): `gro=on gso=on tso=on`.
    Offloads,
}

/// The interface a NIC knob's path (`/sys/class/net/<iface>`) names.
fn iface_of(path: &Path) -> std::io::Result<&str> {
    path.file_name().and_then(|f| f.to_str()).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no interface", path.display()),
        )
    })
}

impl Knob {
    /// The value exactly as read (a file's newline included), so revert can restore it byte
    /// for byte.
    pub fn read(self, path: &Path) -> std::io::Result<String> {
        match self {
            Knob::File => std::fs::read_to_string(path),
            Knob::NapiThreadCpus => napi::read(path),
            Knob::NapiIrqSuspend => irq_suspend::read(path),
            Knob::Ring => ethtool::read_rings(iface_of(path)?),
            Knob::Coalesce => ethtool::read_coalesce(iface_of(path)?),
            Knob::Offloads => ethtool::read_offloads(iface_of(path)?),
        }
    }

    pub fn write(self, path: &Path, value: &str) -> std::io::Result<()> {
        match self {
            Knob::File => std::fs::write(path, value).map_err(|e| explain(path, e)),
            Knob::NapiThreadCpus => napi::write(path, value),
            Knob::NapiIrqSuspend => irq_suspend::write(path, value),
            Knob::Ring => ethtool::write_rings(iface_of(path)?, value),
            Knob::Coalesce => ethtool::write_coalesce(iface_of(path)?, value),
            Knob::Offloads => ethtool::write_offloads(iface_of(path)?, value),
        }
    }

    /// Whether two values mean the same: whitespace-separated fields alike (`4096\t131072` =
    /// `4096 131072`), cpumasks as CPU sets (`0` = `00000000`), NAPI kthreads on the same CPUs.
    pub fn same(self, path: &Path, a: &str, b: &str) -> bool {
        match self {
            Knob::NapiThreadCpus => return napi::same(a, b),
            Knob::NapiIrqSuspend => return irq_suspend::same(a, b),
            Knob::Ring => return ethtool::same_rings(a, b),
            Knob::Coalesce => return ethtool::same_coalesce(a, b),
            Knob::Offloads => return ethtool::same_offloads(a, b),
            Knob::File => {}
        }
        let file = path.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if file.ends_with("_cpus") {
            if let (Ok(x), Ok(y)) = (parse_cpumask(a), parse_cpumask(b)) {
                return x == y;
            }
        }
        // An interrupt's CPUs: `0-1` = `0,1`.
        if file.ends_with("affinity_list") {
            if let (Ok(x), Ok(y)) = (parse_cpu_list(a.trim()), parse_cpu_list(b.trim())) {
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
