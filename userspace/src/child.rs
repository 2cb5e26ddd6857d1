//! Child processes rxsteer starts and must not leave behind: started where the server side
//! lives (a namespace or this host), tied to rxsteer's life, read until ready, and stopped
//! with a grace period.
use anyhow::{bail, Context, Result};
use std::{
    io::{BufRead, BufReader},
    process::{Child, Command},
    time::{Duration, Instant},
};

/// Runs `c` to its end and returns its stdout. Fails with `starting` as the context when it
/// cannot start, and with `"{what} failed: <its stderr>"` when it exits non-zero.
pub fn output_of(c: &mut Command, starting: &str, what: impl std::fmt::Display) -> Result<String> {
    let out = c.output().with_context(|| starting.to_string())?;
    if !out.status.success() {
        bail!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The child gets SIGTERM when rxsteer dies, however it dies (SIGKILL included): attach then
/// reverts the mode and the server and load generators stop, instead of steering on as
/// orphans. (The setting survives the exec of `ip netns exec` and of the program.)
pub fn die_with_parent(c: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec here.
    unsafe {
        c.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// SIGTERM, then up to 10 s for a clean exit (attach reverts tuning), then SIGKILL.
pub fn terminate(c: &mut Child) -> std::process::ExitStatus {
    if let Ok(Some(s)) = c.try_wait() {
        return s;
    }
    unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match c.try_wait() {
            Ok(Some(s)) => return s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = c.kill();
                return c.wait().expect("wait after kill");
            }
        }
    }
}

/// Waits for the child's readiness line on `pipe` (at most 30 s), and keeps draining its
/// stderr meanwhile and after, so the child never blocks on a full pipe; where it is not
/// ready, the error carries what it said. Returns the line (what it bound or watches).
pub fn ready(child: &mut Child, pipe: crate::ready::Pipe) -> Result<String> {
    let err = child.stderr.take().context("stderr")?;
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let keep = said.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            if let Ok(mut s) = keep.lock() {
                // What it said before it was ready, for the error; a bounded tail after.
                if s.len() < 16 * 1024 {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        }
    });
    pipe.wait(Duration::from_secs(30)).map_err(|e| {
        // Its last words reach the drain a moment after the pipe ends.
        std::thread::sleep(Duration::from_millis(100));
        let said = said
            .lock()
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        if said.is_empty() {
            e
        } else {
            anyhow::anyhow!("{e:#}: {said}")
        }
    })
}

/// The rxload binary: beside this executable (cargo builds both into one folder).
pub fn rxload_path() -> Result<std::path::PathBuf> {
    let me = std::env::current_exe()?;
    let p = me.with_file_name("rxload");
    if !p.is_file() {
        bail!(
            "rxload not found beside {} (build it: cargo build --release -p rxload)",
            me.display()
        );
    }
    Ok(p)
}

/// A child's stderr once it has exited, for an error message.
pub fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s.trim().to_string()
}
