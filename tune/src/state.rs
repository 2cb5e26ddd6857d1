//! The state file: every original value, written before the first change, so that revert,
//! `rxsteer restore` and the next start can put the machine back after any kind of exit.
use serde::{Deserialize, Serialize};

use crate::knob::Knob;
use std::{
    io::Write,
    os::unix::fs::{DirBuilderExt, OpenOptionsExt},
    path::{Path, PathBuf},
};

/// Where state files live: tmpfs, so a reboot (which resets these values anyway) clears them.
pub const STATE_DIR: &str = "/run/rxsteer";

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// `net.core.somaxconn` or `rx-0/rps_cpus`: what the user sees.
    pub name: String,
    pub path: PathBuf,
    /// How the path is read and written (state files before knobs hold files only).
    #[serde(default)]
    pub knob: Knob,
    /// The value read before rxsteer first wrote it, exactly as read (trailing newline included).
    pub original: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateFile {
    pub version: u32,
    /// The network namespace the values belong to.
    pub netns_inode: u64,
    /// The rxsteer session that owns the changes and reverts them when it ends; a dead owner
    /// means it crashed, and the next start restores. `None`: an explicit `tune apply`, kept
    /// until `tune revert` or `restore`.
    pub session_pid: Option<u32>,
    pub iface: String,
    pub profile: String,
    pub entries: Vec<Entry>,
}

impl StateFile {
    pub fn new(netns_inode: u64, iface: &str, profile: &str, session_pid: Option<u32>) -> Self {
        Self {
            version: 1,
            netns_inode,
            session_pid,
            iface: iface.to_string(),
            profile: profile.to_string(),
            entries: Vec::new(),
        }
    }

    /// The state file for one network namespace.
    pub fn path_in(dir: &Path, netns_inode: u64) -> PathBuf {
        dir.join(format!("tune-netns-{netns_inode}.json"))
    }

    pub fn load(path: &Path) -> std::io::Result<Option<Self>> {
        match std::fs::read_to_string(path) {
            Ok(s) => serde_json::from_str(&s).map(Some).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: {e}", path.display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes atomically (temp file + rename) with mode 0600 in a 0700 directory.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let tmp = path.with_extension("json.tmp");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(serde_json::to_string_pretty(self)?.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    }

    pub fn original_of(&self, path: &Path, knob: Knob) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.path == path && e.knob == knob)
            .map(|e| e.original.as_str())
    }

    /// The owning session's pid while it still runs (never this process).
    pub fn live_owner(&self) -> Option<u32> {
        self.session_pid
            .filter(|&p| p != std::process::id() && Path::new(&format!("/proc/{p}")).exists())
    }

    /// Left by a session that did not exit cleanly.
    pub fn crashed(&self) -> bool {
        self.session_pid
            .is_some_and(|p| p != std::process::id() && !Path::new(&format!("/proc/{p}")).exists())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_safe_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("rxsteer-state-{}", std::process::id()));
        let path = StateFile::path_in(&dir, 42);
        let mut s = StateFile::new(42, "eth0", "rps", Some(std::process::id()));
        s.entries.push(Entry {
            name: "a".into(),
            path: "/x".into(),
            knob: Knob::File,
            original: "1\t2".into(),
        });
        s.save(&path).unwrap();
        assert_eq!(StateFile::load(&path).unwrap(), Some(s.clone()));
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
            0o700
        );
        assert_eq!(s.original_of(Path::new("/x"), Knob::File), Some("1\t2"));
        assert_eq!(s.live_owner(), None, "this process is not another owner");
        assert!(!s.crashed());
        let dead = StateFile::new(42, "eth0", "rps", Some(u32::MAX - 1));
        assert!(dead.crashed());
        assert!(!StateFile::new(42, "eth0", "rps", None).crashed());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(StateFile::load(&path).unwrap(), None);
    }

    /// A state file written before knobs (a session that crashed under the older rxsteer)
    /// still restores: its entries are files.
    #[test]
    fn entries_without_a_knob_are_files() {
        let old = r#"{"version":1,"netns_inode":7,"session_pid":null,"iface":"eth0",
            "profile":"rps","entries":[{"name":"a","path":"/x","original":"1"}]}"#;
        let s: StateFile = serde_json::from_str(old).unwrap();
        assert_eq!(s.entries[0].knob, Knob::File);
        assert_eq!(s.original_of(Path::new("/x"), Knob::File), Some("1"));
        assert_eq!(s.original_of(Path::new("/x"), Knob::NapiThreadCpus), None);
    }
}
