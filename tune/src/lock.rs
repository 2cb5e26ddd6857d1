//! One owner at a time: an exclusive flock on a file beside the state files, held by a session
//! for as long as it may change the host. The kernel drops a flock when its holder dies,
//! however it dies, so a held lock is a live owner and a dead one never blocks the next start.
use std::{
    fs::File,
    io::{self, Read, Seek, Write},
    os::{
        fd::AsRawFd,
        unix::fs::{MetadataExt, OpenOptionsExt},
    },
    path::{Path, PathBuf},
};

/// Who holds a lock, as the holder wrote it on taking it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub pid: Option<u32>,
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "{} (pid {pid})", self.command),
            None => write!(f, "another rxsteer (still starting)"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{0} holds {1}")]
    Held(Holder, PathBuf),
    #[error("lock {0}: {1}")]
    Io(PathBuf, io::Error),
}

/// A held lock; dropping it releases it and removes its file, so a host is left with no file
/// of rxsteer's once every session has ended. A process that dies holding it releases it too
/// (the kernel's doing) and leaves the file, which the next taker reuses.
#[derive(Debug)]
pub struct HostLock {
    file: File,
    pub path: PathBuf,
}

impl Drop for HostLock {
    /// Unlinked while still held: a taker that opened the old file is either refused now or,
    /// locking it after this, finds it unlinked and opens the path again (see [`HostLock::take`]).
    fn drop(&mut self) {
        if same_file(&self.file, &self.path) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl HostLock {
    /// Takes the lock at `path` without waiting, and writes this process's pid and `command`
    /// into it for whoever is refused next. Never follows a symlink at `path`.
    pub fn take(path: &Path, command: &str) -> Result<Self, LockError> {
        let io_err = |e| LockError::Io(path.to_path_buf(), e);
        loop {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(path)
                .map_err(io_err)?;
            // SAFETY: flock on a descriptor this function owns; no memory is passed.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                    return Err(LockError::Held(holder_of(&mut file), path.to_path_buf()));
                }
                return Err(io_err(e));
            }
            // The file may have been removed (an orphan's cleanup) between open and flock:
            // a lock on an unlinked file guards nothing, so open the path again.
            if !same_file(&file, path) {
                continue;
            }
            file.set_len(0).map_err(io_err)?;
            file.rewind().map_err(io_err)?;
            // One write, so a reader sees nothing or all of it.
            file.write_all(format!("{}\n{command}\n", std::process::id()).as_bytes())
                .map_err(io_err)?;
            return Ok(Self {
                file,
                path: path.to_path_buf(),
            });
        }
    }

    /// Removes the lock file at `path` if nobody holds it (a namespace that is gone): taken
    /// first, so that no holder loses its lock to the unlink.
    pub fn remove_unheld(path: &Path) -> Result<bool, LockError> {
        match Self::take(path, "rxsteer (removing an orphaned lock)") {
            // Dropped at once: its file goes with it.
            Ok(_) => Ok(true),
            Err(LockError::Held(..)) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

fn same_file(file: &File, path: &Path) -> bool {
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// What the holder wrote: its pid, then its command. A holder between its flock and its write
/// has written nothing yet, so the read is tried again for up to 200 ms before the refusal
/// says only that it is starting.
fn holder_of(file: &mut File) -> Holder {
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(200);
    loop {
        let mut text = String::new();
        let _ = file.rewind().and_then(|()| file.read_to_string(&mut text));
        let mut lines = text.lines();
        let pid = lines.next().and_then(|l| l.trim().parse().ok());
        if let (Some(pid), Some(command)) = (pid, lines.next()) {
            return Holder {
                pid: Some(pid),
                command: command.to_string(),
            };
        }
        if std::time::Instant::now() >= deadline {
            return Holder {
                pid,
                command: "rxsteer".to_string(),
            };
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rxsteer-lock-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    /// A second taker is refused with the first's pid and command, and gets the lock once the
    /// first lets go. flock conflicts between two opens even within one process, which is
    /// what lets this test stand in for two sessions.
    #[test]
    fn one_holder_at_a_time_and_the_refusal_names_it() {
        let d = dir("one");
        let path = d.join("tune-netns-1.lock");
        let first = HostLock::take(&path, "rxsteer attach --steer rps").unwrap();
        match HostLock::take(&path, "rxsteer tune apply") {
            Err(LockError::Held(h, p)) => {
                assert_eq!(h.pid, Some(std::process::id()));
                assert_eq!(h.command, "rxsteer attach --steer rps");
                assert_eq!(p, path);
                assert!(h.to_string().contains("(pid "), "{h}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(!HostLock::remove_unheld(&path).unwrap(), "held: kept");
        drop(first);
        assert!(!path.exists(), "released: its file is gone");
        drop(HostLock::take(&path, "rxsteer tune apply").unwrap());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A holder killed outright leaves its file and no lock: the next taker gets it at once,
    /// and an orphan's cleanup removes the file.
    #[test]
    fn a_killed_holder_blocks_nobody() {
        use std::io::BufRead;
        let d = dir("killed");
        let path = d.join("tune-netns-4.lock");
        // flock(1) holds the lock on a file it creates and runs the shell, which says so; -o:
        // the shell does not inherit it, so killing flock(1) kills the holder.
        let mut holder = std::process::Command::new("flock")
            .args(["-n", "-o"])
            .arg(&path)
            .args(["sh", "-c", "echo held $$ && exec sleep 30"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("flock(1) from util-linux");
        let mut said = String::new();
        std::io::BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut said)
            .unwrap();
        let shell: i32 = said.trim().strip_prefix("held ").unwrap().parse().unwrap();
        assert!(matches!(
            HostLock::take(&path, "x"),
            Err(LockError::Held(..))
        ));
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(path.exists(), "a killed holder leaves its file");
        // Its shell still sleeps, holding nothing; the test ends it.
        // SAFETY: a signal to the child's own child, by the pid it gave.
        unsafe { libc::kill(shell, libc::SIGKILL) };
        let lock = HostLock::take(&path, "rxsteer restore").unwrap();
        drop(lock);
        assert!(!path.exists());
        std::fs::write(&path, "").unwrap();
        assert!(HostLock::remove_unheld(&path).unwrap());
        assert!(!path.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Many threads race for one lock: at every moment at most one holds it.
    #[test]
    fn racing_takers_never_both_hold_it() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let d = dir("race");
        let path = d.join("tune-netns-2.lock");
        let holders = AtomicU32::new(0);
        let won = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..200 {
                        if let Ok(lock) = HostLock::take(&path, "racer") {
                            assert_eq!(holders.fetch_add(1, Ordering::SeqCst), 0);
                            won.fetch_add(1, Ordering::SeqCst);
                            holders.fetch_sub(1, Ordering::SeqCst);
                            drop(lock);
                        }
                    }
                });
            }
        });
        assert!(won.load(Ordering::SeqCst) > 0);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_symlink_is_not_followed() {
        let d = dir("link");
        let target = d.join("elsewhere");
        std::fs::write(&target, "keep").unwrap();
        let path = d.join("tune-netns-3.lock");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        assert!(matches!(
            HostLock::take(&path, "x"),
            Err(LockError::Io(_, e)) if e.raw_os_error() == Some(libc::ELOOP)
        ));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
