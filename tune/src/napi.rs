//! The CPUs of an interface's threaded-NAPI kthreads, as a tuning value. Not a file: read from
//! /proc (each kthread's `Cpus_allowed_list`), written with sched_setaffinity.
//!
//! Its value:
//! - as a profile wants it, a CPU list (`2`, `0-3`): every NAPI kthread of the interface there;
//! - as read, and so as snapshotted, each kthread's `pid:list`, by pid, space-separated; empty
//!   where the interface has none (threaded NAPI off).
//!
//! Restoring a snapshot pins each kthread it names back (one that is gone is skipped). A
//! kthread it does not name was started by the change (`threaded` turned on): where the kernel
//! keeps it after `threaded` goes back off (before 6.15 or so; 6.18 stops it), it gets the CPUs
//! every new kthread starts with (kthreadd's), so nothing rxsteer chose is left pinned.
use std::{io, path::Path, time::Duration};

use crate::{
    cpus::{format_cpu_list, parse_cpu_list},
    pin::{affinity_of, kthreads_with_comm_prefix, napi_comm_prefix, pin_task},
};

/// A value of the knob, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Cpus {
    /// Every kthread on these CPUs (what a profile wants).
    All(Vec<u32>),
    /// Each kthread (pid) on its own CPUs (what was read); empty: no kthread.
    Each(Vec<(u32, Vec<u32>)>),
}

fn parse(value: &str) -> io::Result<Cpus> {
    let value = value.trim();
    let bad = |e: String| io::Error::new(io::ErrorKind::InvalidData, e);
    if value.is_empty() || value.contains(':') {
        let each = value
            .split_whitespace()
            .map(|item| {
                let (pid, list) = item
                    .split_once(':')
                    .ok_or_else(|| bad(format!("{item:?} is not pid:cpus")))?;
                let pid = pid.parse().map_err(|_| bad(format!("pid {pid:?}")))?;
                Ok((pid, parse_cpu_list(list).map_err(|e| bad(e.to_string()))?))
            })
            .collect::<io::Result<_>>()?;
        return Ok(Cpus::Each(each));
    }
    parse_cpu_list(value)
        .map(Cpus::All)
        .map_err(|e| bad(e.to_string()))
}

/// The device whose `threaded` file is `threaded`.
fn dev_of(threaded: &Path) -> io::Result<String> {
    // The file is how the device is found: gone with the device (a removed lab veth).
    std::fs::metadata(threaded)?;
    threaded
        .parent()
        .and_then(Path::file_name)
        .and_then(|d| d.to_str())
        .map(str::to_string)
        .ok_or_else(|| io::Error::other(format!("{} names no device", threaded.display())))
}

fn threads(dev: &str) -> io::Result<Vec<u32>> {
    let prefix = napi_comm_prefix(dev);
    Ok(kthreads_with_comm_prefix(&[&prefix])?
        .into_iter()
        .map(|(pid, _)| pid)
        .collect())
}

/// The NAPI kthreads of `dev`, once `threaded` has started them: turning it on starts them,
/// and the kernel may take a moment (up to a second here). None after that is an error.
pub fn started_threads(dev: &str) -> io::Result<Vec<u32>> {
    for _ in 0..50 {
        let pids = threads(dev)?;
        if !pids.is_empty() {
            return Ok(pids);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(io::Error::other(format!(
        "no NAPI kthread ({}*) runs for {dev}: is `threaded` on?",
        napi_comm_prefix(dev)
    )))
}

/// Each NAPI kthread of the device whose `threaded` file is given, with its CPUs.
pub fn read(threaded: &Path) -> io::Result<String> {
    let dev = dev_of(threaded)?;
    let mut each = Vec::new();
    for pid in threads(&dev)? {
        match affinity_of(pid) {
            Ok(cpus) => each.push(format!("{pid}:{}", format_cpu_list(&cpus))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(each.join(" "))
}

/// Puts the device's NAPI kthreads where `value` says.
pub fn write(threaded: &Path, value: &str) -> io::Result<()> {
    let dev = dev_of(threaded)?;
    match parse(value)? {
        Cpus::All(cpus) => started_threads(&dev)?
            .iter()
            .try_for_each(|&pid| pin(pid, &cpus)),
        Cpus::Each(each) => {
            let fresh = affinity_of(2)?;
            for pid in threads(&dev)? {
                let cpus = each
                    .iter()
                    .find(|(p, _)| *p == pid)
                    .map_or(&fresh, |(_, c)| c);
                pin(pid, cpus)?;
            }
            Ok(())
        }
    }
}

/// Pins one kthread; one that ended meanwhile is no failure.
fn pin(pid: u32, cpus: &[u32]) -> io::Result<()> {
    match pin_task(pid, cpus) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        other => other,
    }
}

/// Whether two values put the kthreads on the same CPUs (a list wanted against what was read).
pub fn same(a: &str, b: &str) -> bool {
    let (Ok(a), Ok(b)) = (parse(a), parse(b)) else {
        return a == b;
    };
    let set = |mut c: Vec<u32>| {
        c.sort_unstable();
        c.dedup();
        c
    };
    match (a, b) {
        (Cpus::All(x), Cpus::All(y)) => set(x) == set(y),
        (Cpus::Each(e), Cpus::All(x)) | (Cpus::All(x), Cpus::Each(e)) => {
            let x = set(x);
            !e.is_empty() && e.into_iter().all(|(_, c)| set(c) == x)
        }
        (Cpus::Each(x), Cpus::Each(y)) => {
            let norm = |v: Vec<(u32, Vec<u32>)>| {
                v.into_iter().map(|(p, c)| (p, set(c))).collect::<Vec<_>>()
            };
            norm(x) == norm(y)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wanted_list_matches_only_when_every_kthread_is_there() {
        assert!(same("7342:2", "2"));
        assert!(same("2", "7342:2 7343:2"));
        assert!(!same("7342:2 7343:0-1", "2"), "one kthread elsewhere");
        assert!(
            !same("", "2"),
            "no kthread yet: the list is still to be written"
        );
        assert!(same("", ""));
        assert!(same("7342:0-1", "7342:1,0"));
        assert!(!same("7342:0-1", "7343:0-1"), "another kthread");
        assert!(same("0-3", "3,2,1,0"));
    }

    #[test]
    fn values_parse_as_a_list_or_each_kthread() {
        assert_eq!(parse("2").unwrap(), Cpus::All(vec![2]));
        assert_eq!(parse("").unwrap(), Cpus::Each(vec![]));
        assert_eq!(
            parse("10:0-1 12:3\n").unwrap(),
            Cpus::Each(vec![(10, vec![0, 1]), (12, vec![3])])
        );
        assert!(parse("10:x").is_err());
        assert!(parse("ten:1").is_err());
    }

    #[test]
    fn a_comm_prefix_is_cut_as_the_kernel_cuts_comms() {
        assert_eq!(napi_comm_prefix("eth0"), "napi/eth0-");
        assert_eq!(napi_comm_prefix("enP7s7"), "napi/enP7s7-");
        assert_eq!(napi_comm_prefix("enp0s31f6np0"), "napi/enp0s31f6n");
    }
}
