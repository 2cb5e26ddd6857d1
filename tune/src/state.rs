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
    /// The owner's start time (clock ticks after boot), so that a reused pid is not taken for
    /// it. `None` in files written before rxsteer kept it: then the pid alone is judged.
    #[serde(default)]
    pub session_start: Option<u64>,
    pub iface: String,
    pub profile: String,
    pub entries: Vec<Entry>,
}

impl StateFile {
    /// A state file for `profile` on `iface`; `session`: owned by this process (reverted when
    /// it ends), else kept until reverted.
    pub fn new(netns_inode: u64, iface: &str, profile: &str, session: bool) -> Self {
        Self {
            version: 1,
            netns_inode,
            session_pid: session.then(std::process::id),
            session_start: session.then(crate::task::own_start_time).flatten(),
            iface: iface.to_string(),
            profile: profile.to_string(),
            entries: Vec::new(),
        }
    }

    /// The kept tuning of one network namespace: what `tune apply` (and the unit `install`
    /// writes, which runs it) put in place, kept until `tune revert` or `restore`.
    pub fn path_in(dir: &Path, netns_inode: u64) -> PathBuf {
        dir.join(format!("tune-netns-{netns_inode}.json"))
    }

    /// A session's own layer over the kept tuning: its originals are the values it found
    /// (the kept tuning's, where there is one), so its revert puts the kept tuning back.
    pub fn session_path_in(dir: &Path, netns_inode: u64) -> PathBuf {
        dir.join(format!("session-netns-{netns_inode}.json"))
    }

    /// The lock every change of one network namespace's tuning is made under (see
    /// [`crate::lock`]).
    pub fn lock_path_in(dir: &Path, netns_inode: u64) -> PathBuf {
        dir.join(format!("tune-netns-{netns_inode}.lock"))
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

    /// Writes atomically with mode 0600 in a 0700 directory (see [`write_private`]).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        write_private(path, serde_json::to_string_pretty(self)?.as_bytes())
    }

    pub fn original_of(&self, path: &Path, knob: Knob) -> Option<&str> {
        self.entries
            .iter()
            .find(|e| e.path == path && e.knob == knob)
            .map(|e| e.original.as_str())
    }

    /// The owning session's pid while it still runs (never this process): the same pid with
    /// the same start time.
    pub fn live_owner(&self) -> Option<u32> {
        self.session_pid
            .filter(|&p| p != std::process::id() && crate::task::alive(p, self.session_start))
    }

    /// Left by a session that did not exit cleanly.
    pub fn crashed(&self) -> bool {
        self.session_pid
            .is_some_and(|p| p != std::process::id() && !crate::task::alive(p, self.session_start))
    }
}

/// Writes `bytes` to `path` atomically with mode 0600, creating its directory 0700: a temporary
/// file of its own (created new, so never one another writer or a planted symlink holds), then
/// a rename over `path`, which replaces a symlink there rather than writing through it.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_safe_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("rxsteer-state-{}", std::process::id()));
        let path = StateFile::path_in(&dir, 42);
        let mut s = StateFile::new(42, "eth0", "rps", true);
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
        let mut dead = StateFile::new(42, "eth0", "rps", true);
        dead.session_pid = Some(u32::MAX - 1);
        assert!(dead.crashed());
        assert!(!StateFile::new(42, "eth0", "rps", false).crashed());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left beside it"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(StateFile::load(&path).unwrap(), None);
    }

    /// A crashed session's pid reused by a live process (here pid 1) is not its owner: the start
    /// time tells them apart, so the next start restores instead of refusing for good.
    #[test]
    fn a_reused_pid_is_a_crashed_owner() {
        let mut s = StateFile::new(7, "eth0", "rps", true);
        s.session_pid = Some(1);
        s.session_start = Some(crate::task::Stat::of(1).unwrap().start_time + 999);
        assert_eq!(s.live_owner(), None);
        assert!(s.crashed());
        s.session_start = Some(crate::task::Stat::of(1).unwrap().start_time);
        assert_eq!(s.live_owner(), Some(1));
        assert!(!s.crashed());
    }

    /// Two writers of one file each write a temporary file of their own: neither renames the
    /// other's away, and a symlink planted at the path is replaced, not written through.
    #[test]
    fn saves_never_share_a_temporary_file_or_follow_a_symlink() {
        let dir = std::env::temp_dir().join(format!("rxsteer-save-{}", std::process::id()));
        let path = dir.join("tune-netns-9.json");
        std::thread::scope(|sc| {
            for i in 0..4 {
                let path = &path;
                sc.spawn(move || {
                    for _ in 0..50 {
                        StateFile::new(9, &format!("eth{i}"), "rps", false)
                            .save(path)
                            .unwrap();
                    }
                });
            }
        });
        assert!(StateFile::load(&path).unwrap().is_some());
        let target = dir.join("victim");
        std::fs::write(&target, "keep").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        StateFile::new(9, "eth0", "rps", false).save(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        std::fs::remove_dir_all(&dir).unwrap();
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
