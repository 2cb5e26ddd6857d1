//! The interface's interrupt vectors: which they are, where the kernel delivers them, and who
//! else moves them (irqbalance).
//!
//! A vector's CPUs are the file `/proc/irq/N/smp_affinity_list` (a tuning value like any file:
//! snapshot, write, revert byte for byte); where the kernel actually delivers it is
//! `effective_affinity_list`, which may be one CPU of the set. The vectors are the device's
//! MSI/MSI-X interrupts (`device/msi_irqs/`) or its legacy line (`device/irq`), looked up on
//! the device and, for a virtio NIC, on the PCI function it sits on.
use std::path::{Path, PathBuf};

use rxsteer_records::run::CpuInfo;

use crate::{cpus::parse_cpu_list, setting::under};

/// The interface's interrupt vectors, sorted; empty for a device with none (a veth, lo).
pub fn vectors(root: &Path, iface: &str) -> Vec<u32> {
    let device = under(root, Path::new(&format!("/sys/class/net/{iface}/device")));
    // A virtio NIC's device is the virtio device; its vectors belong to the PCI function
    // above it.
    for dir in [device.clone(), device.join("..")] {
        let mut found: Vec<u32> = std::fs::read_dir(dir.join("msi_irqs"))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default();
        if found.is_empty() {
            if let Some(n) = std::fs::read_to_string(dir.join("irq"))
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .filter(|n| *n != 0)
            {
                found.push(n);
            }
        }
        if !found.is_empty() {
            found.sort_unstable();
            // Only vectors the kernel has a directory for can be moved or read.
            found.retain(|n| affinity_path(root, *n).exists());
            return found;
        }
    }
    Vec::new()
}

/// The file that holds the vector's CPUs.
pub fn affinity_path(root: &Path, irq: u32) -> PathBuf {
    under(
        root,
        Path::new(&format!("/proc/irq/{irq}/smp_affinity_list")),
    )
}

/// The CPUs the kernel delivers the vector to now (`effective_affinity_list`, 4.15+; the
/// asked-for set where the kernel does not say).
pub fn effective(root: &Path, irq: u32) -> Option<Vec<u32>> {
    let dir = under(root, Path::new(&format!("/proc/irq/{irq}")));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let list = read("effective_affinity_list")
        .filter(|s| !s.trim().is_empty())
        .or_else(|| read("smp_affinity_list"))?;
    parse_cpu_list(list.trim()).ok()
}

/// Why a vector cannot be moved, if it cannot: the kernel manages its affinity (a managed
/// MSI-X vector refuses every write with EIO) or it is per-CPU. Found by writing the vector's
/// own CPUs back, which changes nothing where the write is taken.
pub fn unmovable(root: &Path, irq: u32) -> Option<String> {
    let path = affinity_path(root, irq);
    let current = match std::fs::read_to_string(&path) {
        Ok(c) => c,
        Err(e) => return Some(format!("its CPUs cannot be read: {e}")),
    };
    match std::fs::write(&path, &current) {
        Ok(()) => None,
        Err(e) if e.raw_os_error() == Some(libc::EIO) => Some(
            "the kernel manages this vector's affinity (a managed or per-CPU interrupt \
             refuses every move)"
                .into(),
        ),
        Err(e) => Some(format!("writing its own CPUs back was refused: {e}")),
    }
}

/// The running irqbalance daemon's pid, if one runs (it moves vectors every 10 s by default
/// and would undo a move mid-run).
pub fn irqbalance() -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        (comm.trim() == "irqbalance").then_some(pid)
    })
}

/// What to do about a running irqbalance before a vector is moved, in one line.
pub fn irqbalance_refusal(pid: u32, vectors: &[u32]) -> String {
    let ban: Vec<String> = vectors.iter().map(|v| format!("--banirq={v}")).collect();
    format!(
        "irqbalance (pid {pid}) runs and would move IRQ {} back within seconds; stop it for \
         the run (systemctl stop irqbalance) or start it with {}, then run this again",
        vectors
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        ban.join(" ")
    )
}

/// The CPU the interrupt goes to when none is named: the highest-capacity CPU of `cpus`
/// ([`CpuInfo::rank`]: `cpu_capacity`, a hybrid part's kind, the top frequency: the big cores)
/// outside `busy` (the server's and the loader's), the lowest-numbered among equals; with the
/// reason, said to the user.
pub fn pick_cpu(cpus: &[CpuInfo], busy: &[u32]) -> Option<(u32, String)> {
    let free: Vec<&CpuInfo> = cpus.iter().filter(|c| !busy.contains(&c.cpu)).collect();
    let pool: Vec<&CpuInfo> = if free.is_empty() {
        cpus.iter().collect()
    } else {
        free.clone()
    };
    let best = pool
        .into_iter()
        .max_by_key(|c| (c.rank(), std::cmp::Reverse(c.cpu)))?;
    let measure = match (best.capacity, best.max_khz) {
        (Some(c), _) => format!("capacity {c}"),
        (None, Some(k)) => format!("{} MHz", k / 1000),
        (None, None) => "every CPU alike: this kernel gives no capacity or frequency".into(),
    };
    let why = if busy.is_empty() {
        format!(
            "CPU {} ranks highest ({measure}) of the online CPUs",
            best.cpu
        )
    } else if free.is_empty() {
        format!(
            "CPU {} has the highest rank ({measure}); every CPU runs the server or the loader",
            best.cpu
        )
    } else {
        format!(
            "CPU {} ranks highest ({measure}) of the CPUs that run neither the server nor the \
             loader",
            best.cpu
        )
    };
    Some((best.cpu, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_device_has_msi_vectors_or_a_legacy_line_and_a_veth_none() {
        let root = std::env::temp_dir().join(format!("rxsteer-irq-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dev = root.join("sys/class/net/eth9/device");
        fs::create_dir_all(dev.join("msi_irqs/41")).unwrap();
        fs::create_dir_all(dev.join("msi_irqs/40")).unwrap();
        for n in [40, 41, 11] {
            let d = root.join(format!("proc/irq/{n}"));
            fs::create_dir_all(&d).unwrap();
            fs::write(d.join("smp_affinity_list"), "0-1\n").unwrap();
            fs::write(d.join("effective_affinity_list"), "1\n").unwrap();
        }
        assert_eq!(vectors(&root, "eth9"), [40, 41]);
        let legacy = root.join("sys/class/net/eth8/device");
        fs::create_dir_all(&legacy).unwrap();
        fs::write(legacy.join("irq"), "11\n").unwrap();
        assert_eq!(vectors(&root, "eth8"), [11]);
        fs::create_dir_all(root.join("sys/class/net/veth0")).unwrap();
        assert!(vectors(&root, "veth0").is_empty());
        assert_eq!(effective(&root, 40), Some(vec![1]));
        assert_eq!(unmovable(&root, 40), None);
        assert_eq!(
            fs::read_to_string(affinity_path(&root, 40)).unwrap(),
            "0-1\n",
            "the probe wrote back what it read"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn the_pick_is_the_biggest_free_core() {
        let info = |cpu, capacity| CpuInfo {
            cpu,
            capacity,
            cluster: None,
            max_khz: None,
            core_type: None,
        };
        let gb10 = [
            info(0, Some(480)),
            info(1, Some(1024)),
            info(2, Some(1024)),
            info(3, Some(480)),
        ];
        assert_eq!(pick_cpu(&gb10, &[1]).unwrap().0, 2);
        assert_eq!(pick_cpu(&gb10, &[]).unwrap().0, 1);
        let vm = [info(0, None), info(1, None)];
        let (cpu, why) = pick_cpu(&vm, &[0, 1]).unwrap();
        assert_eq!(cpu, 0);
        assert!(why.contains("every CPU runs"), "{why}");
        let (cpu, why) = pick_cpu(&vm, &[0]).unwrap();
        assert_eq!(cpu, 1);
        assert!(why.contains("no capacity"), "{why}");
        assert_eq!(pick_cpu(&[], &[]), None);
    }

    #[test]
    fn the_refusal_says_what_to_run() {
        let line = irqbalance_refusal(77, &[40, 41]);
        assert!(line.contains("--banirq=40 --banirq=41"), "{line}");
        assert!(line.contains("systemctl stop irqbalance"), "{line}");
    }
}
