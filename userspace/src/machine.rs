//! The machine as a run finds it (kernel, CPUs, load average), and honest timing: before
//! anything is timed, the machine must be quiet (1-minute load average at most half its CPUs),
//! or the figures measure someone else's work too. The run waits a while for the load to
//! fall, then refuses; with `--force` it runs at once and every figure is marked as taken on a
//! loaded machine. `compare` and `selftest` both gate on it.
use anyhow::{bail, Result};
use rxsteer_records::run::{Build, Environment};
use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

/// The machine as the run found it: kernel, CPUs, load average.
pub fn environment() -> Environment {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let loadavg: Vec<f64> = read("/proc/loadavg")
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    let online = rxsteer_tune::cpus::online_cpus().unwrap_or_default();
    let cpu_model = read("/proc/cpuinfo")
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("CPU part"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    Environment {
        kernel: read("/proc/sys/kernel/osrelease"),
        hostname: read("/proc/sys/kernel/hostname"),
        cpu_model,
        rxsteer: Build {
            version: env!("CARGO_PKG_VERSION").into(),
            git: env!("RXSTEER_GIT").into(),
            ebpf_sources: Some(rxsteer_dataplane::EBPF_SOURCES.into()),
        },
        arch: std::env::consts::ARCH.into(),
        online_cpus: online.len(),
        loadavg,
        at: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        cpu_kinds: rxsteer_tune::topology::of_this_machine(&online),
    }
}

/// Waits up to `patience` for a quiet machine; `who` (the command) says so. Ok(None): quiet.
/// Ok(Some(mark)): loaded, run anyway (`force`), every figure marked. Err: still loaded,
/// refused.
pub fn quiet_machine(
    who: &str,
    force: bool,
    patience: Duration,
    stop: &AtomicBool,
) -> Result<Option<String>> {
    quiet_by(who, environment, force, patience, stop)
}

/// [`quiet_machine`] with the reading of the machine given (tests give fixed ones).
fn quiet_by(
    who: &str,
    read: impl Fn() -> Environment,
    force: bool,
    patience: Duration,
    stop: &AtomicBool,
) -> Result<Option<String>> {
    let started = Instant::now();
    let mut said = false;
    loop {
        let Some(why) = read().busy() else {
            return Ok(None);
        };
        if force {
            eprintln!("{who}: note: {why}; running anyway (--force): every figure is marked");
            return Ok(Some(format!(
                "taken on a loaded machine ({why} at the start)"
            )));
        }
        if started.elapsed() >= patience || stop.load(Ordering::SeqCst) {
            bail!(
                "{why}, above half the CPUs, after waiting {:.0} s: other work would be timed too. \
                 Stop it and run again, or pass --force to run anyway (every figure is then marked)",
                started.elapsed().as_secs_f64()
            );
        }
        if !said {
            eprintln!(
                "{who}: {why}: waiting up to {} s for it to fall to half the CPUs before timing",
                patience.as_secs()
            );
            said = true;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(load: f64) -> Environment {
        Environment {
            loadavg: vec![load],
            online_cpus: 2,
            ..Default::default()
        }
    }

    #[test]
    fn a_loaded_machine_is_refused_or_marked_and_a_quiet_one_runs() {
        let loaded = || env(1.9);
        let quiet = || env(0.3);
        let stop = AtomicBool::new(false);
        let e = quiet_by("test", loaded, false, Duration::ZERO, &stop).unwrap_err();
        assert!(
            e.to_string().contains("1.90 on 2 CPUs") && e.to_string().contains("--force"),
            "{e}"
        );
        let mark = quiet_by("test", loaded, true, Duration::ZERO, &stop)
            .unwrap()
            .unwrap();
        assert!(mark.starts_with("taken on a loaded machine"), "{mark}");
        assert_eq!(
            quiet_by("test", quiet, false, Duration::ZERO, &stop).unwrap(),
            None
        );
        // A load that falls while waiting lets the run go on.
        let n = std::cell::Cell::new(0);
        let falling = || {
            n.set(n.get() + 1);
            if n.get() < 2 {
                loaded()
            } else {
                quiet()
            }
        };
        assert_eq!(
            quiet_by("test", falling, false, Duration::from_secs(5), &stop).unwrap(),
            None
        );
    }
}
