//! A Debian kernel unpacked for a guest: its vmlinuz, and the modules the checks need with
//! everything they depend on, decompressed (busybox's insmod reads plain .ko files). From 7.x
//! (6.19 in the backports) Debian splits a kernel into linux-binary (vmlinuz) and
//! linux-modules packages behind the linux-image one; both layouts are read.
use anyhow::{bail, Context, Result};
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
};

use super::apt::{Apt, Kernel};
use crate::cmd;

/// The modules a guest loads, by name: the NICs the matrix emulates, the clsact qdisc and
/// the BPF classifier (what tc falls back to before TCX), virtio's PCI transport, and veth (the
/// dataplane suites send their frames through a veth pair).
pub const WANTED: [&str; 8] = [
    "e1000",
    "e1000e",
    "8139cp",
    "virtio_pci",
    "virtio_net",
    "sch_ingress",
    "cls_bpf",
    "veth",
];

/// The wanted modules every guest loads whatever its NIC (the NIC's own come from the row).
pub const ALWAYS_LOADED: [&str; 3] = ["sch_ingress", "cls_bpf", "veth"];

pub struct Unpacked {
    pub vmlinuz: PathBuf,
    /// uname -r of the kernel.
    pub release: String,
    /// (path under lib/modules/<release>/, the plain .ko on the host), dependencies first.
    pub modules: Vec<(String, PathBuf)>,
    /// The kernel's config (what differs per kernel is read from it).
    pub config: String,
}

/// Downloads and unpacks `k` under `dir` (kept: the next run reuses it).
pub fn unpack(apt: &Apt, k: &Kernel, dir: &Path) -> Result<Unpacked> {
    let root = dir.join(format!("{}-{}", k.abi, k.arch.debian()));
    let done = root.join(".unpacked");
    if !done.exists() {
        let image = k.image_package();
        let name = image.split(':').next().unwrap_or_default().to_string();
        let mut packages = vec![image.clone()];
        for d in apt.depends(&format!("{name}:{}", k.arch.debian()))? {
            if ["linux-binary-", "linux-modules-", "linux-base-"]
                .iter()
                .any(|p| d.starts_with(p))
            {
                packages.push(format!("{d}:{}", k.arch.debian()));
            }
        }
        let debs = apt.download(&packages)?;
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root)?;
        for deb in &debs {
            cmd::run(
                "vm (dpkg-deb -x)",
                Command::new("dpkg-deb").arg("-x").arg(deb).arg(&root),
            )?;
        }
        std::fs::write(&done, b"")?;
    }
    let (vmlinuz, release) = find_vmlinuz(&root)?;
    let moddir = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|m| root.join(m).join(&release))
        .find(|p| p.is_dir())
        .context("no lib/modules/<release> in the kernel packages")?;
    // boot/config-<release> (6.x), or beside the modules (the split packages of 7.x).
    let config = [
        root.join(format!("boot/config-{release}")),
        moddir.join("config"),
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .unwrap_or_default();
    let modules = closure(&moddir, &root.join("plain"))?;
    Ok(Unpacked {
        vmlinuz,
        release,
        modules,
        config,
    })
}

/// The kernel image and its release: boot/vmlinuz-<release> in a linux-image package, or
/// usr/lib/modules/<release>/vmlinuz in the linux-binary package of a split kernel.
fn find_vmlinuz(root: &Path) -> Result<(PathBuf, String)> {
    let in_boot = std::fs::read_dir(root.join("boot"))
        .into_iter()
        .flatten()
        .flatten()
        .find_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("vmlinuz-")
                .map(|r| (e.path(), r.to_string()))
        });
    let beside_modules = || {
        ["lib/modules", "usr/lib/modules"].iter().find_map(|m| {
            std::fs::read_dir(root.join(m))
                .ok()?
                .flatten()
                .find_map(|e| {
                    let v = e.path().join("vmlinuz");
                    v.exists()
                        .then(|| (v, e.file_name().to_string_lossy().into_owned()))
                })
        })
    };
    in_boot.or_else(beside_modules).with_context(|| {
        format!(
            "{}: no vmlinuz in the kernel packages (boot/ or lib/modules/*/)",
            root.display()
        )
    })
}

/// Every module file under `moddir` by module name (dashes and underscores alike).
fn index(moddir: &Path) -> BTreeMap<String, PathBuf> {
    fn walk(dir: &Path, out: &mut BTreeMap<String, PathBuf>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if let Some(n) = p.file_name().map(|n| n.to_string_lossy().into_owned()) {
                if let Some(stem) = n.split(".ko").next().filter(|_| n.contains(".ko")) {
                    out.insert(stem.replace('-', "_"), p);
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(moddir, &mut out);
    out
}

/// The `depends=` field of a module's .modinfo section: NUL-separated `key=value` strings.
fn depends_of(ko: &[u8]) -> Vec<String> {
    ko.split(|&b| b == 0)
        .find_map(|s| s.strip_prefix(b"depends="))
        .map(|d| {
            String::from_utf8_lossy(d)
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.replace('-', "_"))
                .collect()
        })
        .unwrap_or_default()
}

/// A module file as plain .ko bytes (Debian compresses them with xz or zstd on newer kernels).
fn plain(path: &Path) -> Result<Vec<u8>> {
    let name = path.to_string_lossy();
    let tool = if name.ends_with(".xz") {
        Some("xz")
    } else if name.ends_with(".zst") {
        Some("zstd")
    } else {
        None
    };
    match tool {
        None => Ok(std::fs::read(path)?),
        Some(tool) => {
            let out = Command::new(tool)
                .args(["-dc"])
                .arg(path)
                .output()
                .with_context(|| format!("{tool} -dc {name} (apt-get install xz-utils zstd)"))?;
            if !out.status.success() {
                bail!(
                    "{tool} -dc {name}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Ok(out.stdout)
        }
    }
}

/// The wanted modules this kernel builds as modules, with their dependencies, dependencies
/// first, written as plain .ko files under `out`. A wanted module the kernel builds in (=y)
/// or lacks is left out here; the guest's checks say what they find.
fn closure(moddir: &Path, out: &Path) -> Result<Vec<(String, PathBuf)>> {
    let index = index(moddir);
    std::fs::create_dir_all(out)?;
    let mut order: Vec<(String, PathBuf)> = Vec::new();
    fn visit(
        name: &str,
        index: &BTreeMap<String, PathBuf>,
        moddir: &Path,
        out: &Path,
        order: &mut Vec<(String, PathBuf)>,
        depth: usize,
    ) -> Result<()> {
        if depth > 32
            || order
                .iter()
                .any(|(n, _)| n.ends_with(&format!("/{name}.ko")))
        {
            return Ok(());
        }
        let Some(src) = index.get(name) else {
            return Ok(());
        };
        let bytes = plain(src)?;
        for d in depends_of(&bytes) {
            visit(&d, index, moddir, out, order, depth + 1)?;
        }
        let rel = src
            .strip_prefix(moddir)
            .unwrap_or(src)
            .to_string_lossy()
            .into_owned();
        let rel = rel.split(".ko").next().unwrap_or(&rel).to_string() + ".ko";
        let dst = out.join(rel.replace('/', "__"));
        std::fs::write(&dst, &bytes)?;
        order.push((rel, dst));
        Ok(())
    }
    for m in WANTED {
        visit(m, &index, moddir, out, &mut order, 0)?;
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depends_are_read_from_the_modinfo_strings() {
        let ko =
            b"\x7fELF...\0license=GPL\0depends=virtio,virtio_ring,net-failover\0vermagic=6.1\0";
        assert_eq!(depends_of(ko), ["virtio", "virtio_ring", "net_failover"]);
        assert!(depends_of(b"\0license=GPL\0depends=\0").is_empty());
    }
}
