//! One steering mode in place for the time of one protocol's load: `rxsteer attach --steer MODE` (which
//! applies the mode, observes, and reverts on SIGTERM) and `rxsteer serve` (both transports),
//! each a child process in the server's namespace. A reader thread turns attach's JSON lines
//! into samples for the watcher.
use anyhow::{bail, Context, Result};
use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use super::{Arm, Site};
use rxsteer_records::SampleLine;
use rxsteer_records::{Mode, Proto};
use rxsteer_tune::cpus::format_cpu_list;

pub const HTTP_PORT: u16 = 8080;
pub const ZAP_PORT: u16 = 9653;

/// A program run where the server side lives: in the lab's server namespace, or on this host.
pub fn command_at(ns: Option<&crate::netns::Netns>, program: &Path) -> Command {
    let mut c = match ns {
        Some(ns) => ns.command(&program.display().to_string()),
        None => Command::new(program),
    };
    die_with_parent(&mut c);
    c
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

pub struct ModeSession {
    attach: Child,
    serve: Child,
    pub samples: mpsc::Receiver<SampleLine>,
}

impl ModeSession {
    /// cpumap steers only `proto`'s class: the service CPU sets must be disjoint, and only
    /// that protocol's load runs in this session.
    pub fn start(site: &Site, arm: Arm, proto: Proto, interval: Duration) -> Result<Self> {
        let mode = arm.mode;
        let me = std::env::current_exe()?;
        let targets = format_cpu_list(&site.steer_targets);
        let mut args: Vec<String> = vec![
            "attach".into(),
            "--iface".into(),
            site.server_dev.clone(),
            "--steer".into(),
            mode.as_str().into(),
            "--json".into(),
            "--xdp-mode".into(),
            arm.xdp.as_str().into(),
            "--xdp-frags".into(),
            arm.frags.as_str().into(),
            "--interval".into(),
            format!("{}ms", interval.as_millis()),
        ];
        match mode {
            Mode::Cpumap => args.extend([
                match proto {
                    Proto::Http => "--http-cpus".into(),
                    Proto::Zap => "--zap-cpus".into(),
                },
                targets,
            ]),
            Mode::Rps => args.extend(["--cpus".into(), targets]),
            Mode::None => {}
        }
        let mut attach = command_at(site.ns(), &me)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting rxsteer attach")?;
        if let Err(e) = wait_for(&mut attach, "observing") {
            let _ = attach.kill();
            let _ = attach.wait();
            return Err(e.context(format!("rxsteer attach --steer {}", mode.as_str())));
        }
        let samples = spawn_reader(&mut attach)?;
        let serve = command_at(site.ns(), &me)
            .args(["serve", "--http"])
            .arg(format!("{}:{HTTP_PORT}", site.bind_ip))
            .arg("--zap")
            .arg(format!("{}:{ZAP_PORT}", site.bind_ip))
            .args(["--cpus", &format_cpu_list(&site.server_cpus)])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let serve = match serve {
            Ok(s) => s,
            Err(e) => {
                terminate(&mut attach);
                return Err(anyhow::Error::from(e).context("starting rxsteer serve"));
            }
        };
        // From here on, Drop stops both children whatever fails.
        let mut session = Self {
            attach,
            serve,
            samples,
        };
        wait_for(&mut session.serve, "ZAP on").context("rxsteer serve")?;
        Ok(session)
    }

    /// The server's pid (its CPU time is the server's share of each CPU).
    pub fn serve_pid(&self) -> u32 {
        self.serve.id()
    }

    /// Stops the server, then attach (which reverts the mode), and checks both ended cleanly.
    pub fn stop(mut self) -> Result<()> {
        let served = terminate(&mut self.serve);
        let attached = terminate(&mut self.attach);
        if !attached.success() {
            bail!("rxsteer attach exited with {attached} (the mode may not be reverted: run `rxsteer restore`)");
        }
        if !served.success() {
            bail!("rxsteer serve exited with {served}");
        }
        Ok(())
    }
}

impl Drop for ModeSession {
    /// On any early exit (error, the user's q) the children still stop and revert.
    fn drop(&mut self) {
        for c in [&mut self.serve, &mut self.attach] {
            if c.try_wait().ok().flatten().is_none() {
                terminate(c);
            }
        }
    }
}

/// SIGTERM, then up to 10 s for a clean exit (attach reverts tuning), then SIGKILL.
fn terminate(c: &mut Child) -> std::process::ExitStatus {
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

/// Waits for a line containing `needle` on the child's stderr (at most 30 s), then keeps
/// draining the rest so the child never blocks on a full pipe.
pub fn wait_for(child: &mut Child, needle: &str) -> Result<()> {
    let err = child.stderr.take().context("stderr")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            if tx.send(line).is_err() {
                // Nobody listens any more: keep draining.
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return Ok(()),
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                bail!("did not say {needle:?} within 30 s: {}", seen.trim())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                bail!("exited before it was ready: {}", seen.trim())
            }
        }
    }
}

fn spawn_reader(attach: &mut Child) -> Result<mpsc::Receiver<SampleLine>> {
    let out = attach.stdout.take().context("attach stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
            let Ok(sample) = serde_json::from_str::<SampleLine>(&line) else {
                continue;
            };
            if tx.send(sample).is_err() {
                break;
            }
        }
    });
    Ok(rx)
}
