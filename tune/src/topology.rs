//! What kind each CPU is, from sysfs: arm64 big/little parts (GB10: 10 performance and 10
//! efficiency cores) give `cpu_capacity` and `topology/cluster_id`; x86 hybrid parts list their
//! cores under `devices/cpu_core` and `devices/cpu_atom`; every cpufreq driver gives the top
//! frequency. Read from a sysfs root given, so tests use a fake tree.
use rxsteer_records::run::CpuInfo;
use std::path::Path;

use crate::cpus::parse_cpu_list;

/// The sysfs of this machine.
const SYSFS: &str = "/sys";

/// `cpus`' kinds on this machine (its /sys).
pub fn of_this_machine(cpus: &[u32]) -> Vec<CpuInfo> {
    read(Path::new(SYSFS), cpus)
}

/// `cpus`' kinds as `sysfs` (a root like /sys) gives them; what a file does not say stays None.
pub fn read(sysfs: &Path, cpus: &[u32]) -> Vec<CpuInfo> {
    let text = |p: &Path| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let hybrid = |name: &str| {
        text(&sysfs.join("devices").join(name).join("cpus"))
            .and_then(|l| parse_cpu_list(&l).ok())
            .unwrap_or_default()
    };
    let (big, small) = (hybrid("cpu_core"), hybrid("cpu_atom"));
    cpus.iter()
        .map(|&cpu| {
            let dir = sysfs.join(format!("devices/system/cpu/cpu{cpu}"));
            CpuInfo {
                cpu,
                capacity: text(&dir.join("cpu_capacity")).and_then(|v| v.parse().ok()),
                cluster: text(&dir.join("topology/cluster_id")).and_then(|v| v.parse().ok()),
                max_khz: text(&dir.join("cpufreq/cpuinfo_max_freq")).and_then(|v| v.parse().ok()),
                core_type: if big.contains(&cpu) {
                    Some("core".into())
                } else if small.contains(&cpu) {
                    Some("atom".into())
                } else {
                    None
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::run::{core_kinds, CoreKind};

    /// A sysfs tree shaped like GB10: CPUs 0-9 efficiency (Cortex-A725 class, capacity 480,
    /// 2.6 GHz, cluster 0) and 10-19 performance (Cortex-X925 class, 1024, 3.9 GHz, cluster 1).
    /// The numbering of the real box may differ; the record says what it is.
    pub fn gb10_tree(root: &Path) {
        for cpu in 0..20 {
            let d = root.join(format!("devices/system/cpu/cpu{cpu}"));
            std::fs::create_dir_all(d.join("topology")).unwrap();
            std::fs::create_dir_all(d.join("cpufreq")).unwrap();
            let big = cpu >= 10;
            std::fs::write(d.join("cpu_capacity"), if big { "1024\n" } else { "480\n" }).unwrap();
            std::fs::write(
                d.join("topology/cluster_id"),
                if big { "1\n" } else { "0\n" },
            )
            .unwrap();
            std::fs::write(
                d.join("cpufreq/cpuinfo_max_freq"),
                if big { "3900000\n" } else { "2600000\n" },
            )
            .unwrap();
        }
    }

    fn temp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("rxsteer-sysfs-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn a_gb10_shaped_tree_gives_ten_cores_of_each_kind() {
        let root = temp("gb10");
        gb10_tree(&root);
        let cpus: Vec<u32> = (0..20).collect();
        let info = read(&root, &cpus);
        assert_eq!(info[3].capacity, Some(480));
        assert_eq!(info[12].cluster, Some(1));
        assert_eq!(info[12].max_khz, Some(3_900_000));
        let kinds = core_kinds(&info);
        assert_eq!(kinds[&0], CoreKind::Efficiency);
        assert_eq!(kinds[&19], CoreKind::Performance);
        assert_eq!(
            kinds
                .values()
                .filter(|k| **k == CoreKind::Performance)
                .count(),
            10
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn an_x86_hybrid_tree_and_a_plain_one() {
        let root = temp("hybrid");
        std::fs::create_dir_all(root.join("devices/cpu_core")).unwrap();
        std::fs::create_dir_all(root.join("devices/cpu_atom")).unwrap();
        std::fs::write(root.join("devices/cpu_core/cpus"), "0-7\n").unwrap();
        std::fs::write(root.join("devices/cpu_atom/cpus"), "8-15\n").unwrap();
        let cpus: Vec<u32> = (0..16).collect();
        let info = read(&root, &cpus);
        assert_eq!(info[9].core_type.as_deref(), Some("atom"));
        let kinds = core_kinds(&info);
        assert_eq!(
            (kinds[&7], kinds[&8]),
            (CoreKind::Performance, CoreKind::Efficiency)
        );
        // Nothing in sysfs (a VM): one kind, no labels.
        let plain = read(&temp("none"), &cpus);
        assert!(plain
            .iter()
            .all(|c| c.capacity.is_none() && c.core_type.is_none()));
        assert!(core_kinds(&plain).is_empty());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
