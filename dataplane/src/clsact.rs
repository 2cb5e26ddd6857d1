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

/// What the marker records: which interface's qdisc, added by which process (its pid and
/// start time: a reused pid is not the owner).
#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    iface: String,
    pid: u32,
    #[serde(default)]
    start: Option<u64>,
}

impl Marker {
    fn alive(&self) -> bool {
        self.pid != std::process::id() && rxsteer_tune::task::alive(self.pid, self.start)
    }
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
            if m.alive() {
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
        let json = serde_json::to_vec(&Marker {
            iface: iface.to_string(),
            pid: std::process::id(),
            start: rxsteer_tune::task::own_start_time(),
        })?;
        // Atomic and 0600, as the state files: a reader sees no marker or a whole one.
        rxsteer_tune::state::write_private(&marker, &json)
            .with_context(|| format!("writing {}", marker.display()))?;
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
        if !m.alive() {
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

/// The marker, if there is one. One that does not parse (written by hand, or damaged) names
/// no qdisc to remove and no owner to wait for: it is removed, said in one line, rather than
/// blocking every later start.
fn read(path: &Path) -> Result<Option<Marker>> {
    match std::fs::read(path) {
        Ok(b) => match serde_json::from_slice(&b) {
            Ok(m) => Ok(Some(m)),
            Err(e) => {
                std::fs::remove_file(path)
                    .with_context(|| format!("removing {}", path.display()))?;
                eprintln!(
                    "rxsteer: removed {}, which is not a clsact marker ({e}); a clsact qdisc it \
                     named, if any, stays (`tc qdisc del dev IF clsact`)",
                    path.display()
                );
                Ok(None)
            }
        },
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

/// `tc qdisc del dev IF clsact`: the filters on it go with it. An interface or qdisc that is
/// already gone is not an error.
fn remove_qdisc(iface: &str) {
    let _ = Command::new("tc")
        .args(["qdisc", "del", "dev", iface, "clsact"])
        .output();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A truncated marker once blocked every later attach; now it is removed, and a whole one
    /// written by a process that is gone (or a reused pid) is not a live owner.
    #[test]
    fn a_damaged_marker_is_removed_and_a_dead_owner_is_not_alive() {
        let dir = std::env::temp_dir().join(format!("rxsteer-clsact-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("clsact-netns-1.json");
        std::fs::write(&path, br#"{"iface":"eth0","pi"#).unwrap();
        assert!(read(&path).unwrap().is_none());
        assert!(!path.exists());
        let reused = Marker {
            iface: "eth0".into(),
            pid: 1,
            start: Some(rxsteer_tune::task::Stat::of(1).unwrap().start_time + 77),
        };
        rxsteer_tune::state::write_private(&path, &serde_json::to_vec(&reused).unwrap()).unwrap();
        let m = read(&path).unwrap().unwrap();
        assert!(!m.alive(), "pid 1 with another start time");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
