//! Readiness through a descriptor, not a sentence (#51): a parent that starts `serve` or
//! `attach` gives it the write end of a pipe as `--ready-fd N`; the child writes one line
//! there once it serves or observes (what it bound, what it watches) and closes it. No one
//! reads a child's messages for its state, so rewording one cannot break a comparison (as
//! systemd's notify socket and s6's readiness descriptor).
use anyhow::{bail, Context, Result};
use std::{
    fs::File,
    io::{Read, Write},
    os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd},
    process::Command,
    time::{Duration, Instant},
};

/// The parent's side: the pipe, until the child has said it is ready.
pub struct Pipe {
    read: File,
    write: Option<OwnedFd>,
}

impl Pipe {
    /// Both ends close on exec, so no other child inherits either; [`Pipe::pass_to`] keeps
    /// the write end open in the one child it is for.
    pub fn new() -> Result<Self> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: pipe2 writes two descriptors into the array it is given.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error()).context("creating the readiness pipe");
        }
        // SAFETY: both are fresh descriptors this process owns from here on.
        let (read, write) = unsafe { (File::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Self {
            read,
            write: Some(write),
        })
    }

    /// Hands the write end to `c` under its own number (kept open across `c`'s exec, and
    /// across `ip netns exec`'s), and returns the flag that names it.
    pub fn pass_to(&self, c: &mut Command) -> [String; 2] {
        use std::os::unix::process::CommandExt;
        let fd = self.write.as_ref().map_or(-1, AsRawFd::as_raw_fd);
        // SAFETY: fcntl is async-signal-safe; it only clears close-on-exec on our descriptor.
        unsafe {
            c.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        ["--ready-fd".to_string(), fd.to_string()]
    }

    /// After the child started: the parent's copy of the write end closed (so the child's
    /// exit reads as the end of the pipe), then the child's line, within `within`.
    pub fn wait(mut self, within: Duration) -> Result<String> {
        drop(self.write.take());
        let deadline = Instant::now() + within;
        let mut got = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            if let Some(end) = got.iter().position(|&b| b == b'\n') {
                return Ok(String::from_utf8_lossy(&got[..end]).into_owned());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("not ready within {:.1} s", within.as_secs_f64());
            }
            let mut p = libc::pollfd {
                fd: self.read.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one pollfd, ours, for the time left.
            let n = unsafe { libc::poll(&mut p, 1, ms) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e).context("waiting for the readiness line");
            }
            if n == 0 {
                continue;
            }
            match self.read.read(&mut buf) {
                Ok(0) => bail!("exited or closed its readiness descriptor before it was ready"),
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context("reading the readiness line"),
            }
        }
    }
}

/// The child's side: `line` written to the descriptor `--ready-fd` named, which is then
/// closed. Nothing where no descriptor was given.
pub fn announce(fd: Option<RawFd>, line: &str) -> Result<()> {
    let Some(fd) = fd else {
        return Ok(());
    };
    // SAFETY: the parent passed this descriptor for this one write; we own it from here.
    let mut f = unsafe { File::from_raw_fd(fd) };
    writeln!(f, "{line}").with_context(|| format!("--ready-fd {fd}: writing the ready line"))
}

/// `--ready-fd N`: a descriptor number a parent passed, at least 3 (0-2 are stdio).
pub fn parse_fd(s: &str) -> Result<RawFd, String> {
    match s.parse::<RawFd>() {
        Ok(fd) if fd >= 3 => Ok(fd),
        _ => Err(format!("{s:?}: expected a descriptor number of 3 or more")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_says_ready_through_the_descriptor_and_its_exit_ends_the_wait() {
        let pipe = Pipe::new().unwrap();
        let mut c = Command::new("sh");
        let [flag, fd] = pipe.pass_to(&mut c);
        assert_eq!(flag, "--ready-fd");
        c.args([
            "-c",
            &format!("echo 'serving http=127.0.0.1:1' >&{fd}; sleep 0.2"),
        ]);
        let mut child = c.spawn().unwrap();
        assert_eq!(
            pipe.wait(Duration::from_secs(5)).unwrap(),
            "serving http=127.0.0.1:1"
        );
        child.wait().unwrap();

        // A child that exits without a word: the end of the pipe, at once, not a timeout.
        let pipe = Pipe::new().unwrap();
        let mut c = Command::new("true");
        pipe.pass_to(&mut c);
        let mut child = c.spawn().unwrap();
        let started = Instant::now();
        let e = pipe.wait(Duration::from_secs(20)).unwrap_err().to_string();
        assert!(e.contains("before it was ready"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(5));
        child.wait().unwrap();

        // One that says nothing and stays: the time limit.
        let pipe = Pipe::new().unwrap();
        let mut c = Command::new("sleep");
        c.arg("3");
        pipe.pass_to(&mut c);
        let mut child = c.spawn().unwrap();
        let e = pipe
            .wait(Duration::from_millis(300))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not ready within"), "{e}");
        let _ = child.kill();
        child.wait().unwrap();
        assert!(parse_fd("2").is_err() && parse_fd("x").is_err() && parse_fd("7") == Ok(7));
    }
}
