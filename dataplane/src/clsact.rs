//! The clsact qdisc the tc witnesses need on kernels without TCX (before 6.6).
//!
//! A TCX link disappears with its descriptor; a netlink tc filter and its qdisc do not. So the
//! qdisc is only ever one rxsteer added itself (an interface that already has one belongs to
//! someone else's tc programs, and is not shared), and a marker file is written before it is
//! added: the guard deletes the qdisc (and with it the filters) and the marker on every exit;
//! after a SIGKILL the next start, or `rxsteer restore`, finds the marker of a dead session and
//! deletes the qdisc it names.
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::{
    path::{Path, PathBuf},
    process::Command,
};

use rxsteer_tune::{state::STATE_DIR, sysctl};

/// What the marker records: which interface's qdisc, added by which process.
#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    iface: String,
    pid: u32,
}

/// This network namespace's marker.
fn marker_path() -> Result<PathBuf> {
    Ok(Path::new(STATE_DIR).join(format!(
        "clsact-netns-{}.json",
        sysctl::netns_inode("self")?
    )))
}

/// The clsact qdisc rxsteer added to an interface; deleted when dropped.
pub struct ClsactGuard {
    iface: String,
    marker: PathBuf,
}

impl ClsactGuard {
    /// Adds a clsact qdisc to `iface`, the marker first. Refused when the interface already
    /// has one, or when another live session's marker is here.
    pub fn add(iface: &str) -> Result<Self> {
        let marker = marker_path()?;
        if let Some(m) = read(&marker)? {
            if alive(m.pid) {
                bail!(
                    "rxsteer (pid {}) holds a clsact qdisc on {} in this network namespace",
                    m.pid,
                    m.iface
                );
            }
            remove_qdisc(&m.iface);
        }
        if has_clsact(iface)? {
            bail!(
                "{iface} already has a clsact qdisc (someone else's tc programs): not sharing it"
            );
        }
        std::fs::create_dir_all(STATE_DIR).with_context(|| format!("creating {STATE_DIR}"))?;
        let json = serde_json::to_vec(&Marker {
            iface: iface.to_string(),
            pid: std::process::id(),
        })?;
        std::fs::write(&marker, json).with_context(|| format!("writing {}", marker.display()))?;
        if let Err(e) = aya::programs::tc::qdisc_add_clsact(iface) {
            let _ = std::fs::remove_file(&marker);
            bail!("adding a clsact qdisc to {iface}: {e}");
        }
        Ok(Self {
            iface: iface.to_string(),
            marker,
        })
    }
}

impl Drop for ClsactGuard {
    fn drop(&mut self) {
        remove_qdisc(&self.iface);
        let _ = std::fs::remove_file(&self.marker);
    }
}

/// Deletes the clsact qdisc a session that died left (said in one line); nothing otherwise.
pub fn recover_crashed() -> Result<()> {
    let marker = marker_path()?;
    if let Some(m) = read(&marker)? {
        if !alive(m.pid) {
            remove_qdisc(&m.iface);
            std::fs::remove_file(&marker)?;
            eprintln!(
                "rxsteer: removed the clsact qdisc on {} left by rxsteer pid {}, which did not exit cleanly",
                m.iface, m.pid
            );
        }
    }
    Ok(())
}

fn read(path: &Path) -> Result<Option<Marker>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(serde_json::from_slice(&b).with_context(|| {
            format!("{} is not a clsact marker", path.display())
        })?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Whether `iface` has a clsact qdisc now (`tc qdisc show dev IF`).
fn has_clsact(iface: &str) -> Result<bool> {
    let out = Command::new("tc")
        .args(["qdisc", "show", "dev", iface])
        .output()
        .context("running tc (iproute2)")?;
    Ok(String::from_utf8_lossy(&out.stdout).contains("qdisc clsact"))
}

fn alive(pid: u32) -> bool {
    pid != std::process::id() && Path::new(&format!("/proc/{pid}")).exists()
}

/// `tc qdisc del dev IF clsact`: the filters on it go with it. An interface or qdisc that is
/// already gone is not an error.
fn remove_qdisc(iface: &str) {
    let _ = Command::new("tc")
        .args(["qdisc", "del", "dev", iface, "clsact"])
        .output();
}
