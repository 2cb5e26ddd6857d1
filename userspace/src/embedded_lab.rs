//! The embedded lab: two network namespaces joined by a one-queue veth pair, set up so one CPU
//! plays the single-queue NIC's interrupt core.
//!
//! A plain veth does its receive work on the *sending* CPU, so there is no interrupt core to
//! relieve. With GRO on and threaded NAPI on the server veth, receive runs in a kernel thread
//! `napi/<veth>-<id>` that is pinned to `rx_cpu`, whatever CPU sends. The sender's TX checksum
//! offload is off: native-XDP cpumap redirect on veth drops TCP with partial checksums.
//!
//! The replies need the same care in the other direction, or the loader's receive of every
//! reply runs as NET_RX on the *server's* CPU (veth's backlog of the sending CPU), work a real
//! set-up does on the loader's machine. veth uses the peer's NAPI only for GRO-eligible skbs,
//! and a TSO skb is not one: so TSO is off on the server veth, and GRO plus threaded NAPI on
//! the loader veth, its kthread pinned to the loader CPUs (the recipe verified on 6.18 in the
//! project's steering notes).
//!
//! A veth also hands the server the flow hash the loader's sockets gave each packet, so RPS
//! would never dissect a frame; behind a NIC without RXHASH (the GB10's r8169) it dissects
//! every one on the receiving CPU. The loader veth drops that hash on its way out
//! (`lab_unhash`, TCX, 6.6), and the run records whether it could (`LabFrames`).
use anyhow::{bail, Context, Result};
use std::process::{Command, Stdio};

use crate::netns::{ip, VethLab};
use rxsteer_tune::cpus::format_cpu_list;
use rxsteer_tune::pin::pin_task;

/// The CPU roles as flags (`lab` and `compare`); unset ones are chosen from the machine.
#[derive(clap::Args, Clone, Debug)]
pub struct RoleArgs {
    /// CPU that runs the server veth's receive (NAPI) thread: the stand-in NIC interrupt core.
    #[arg(long)]
    pub rx_cpu: Option<u32>,
    /// CPUs for the server side (list, e.g. 1-3).
    #[arg(long, value_parser = crate::cpu_arg::cpu_list)]
    pub server_cpus: Option<crate::cpu_arg::CpuList>,
    /// CPUs for the load side (the lab's loader, and compare's --loader local).
    #[arg(long, value_parser = crate::cpu_arg::cpu_list)]
    pub loader_cpus: Option<crate::cpu_arg::CpuList>,
}

impl RoleArgs {
    /// The roles on this machine: its online CPUs and, where they differ, their kinds.
    pub fn choose(&self, online: &[u32], kinds: &[CpuInfo]) -> Result<Roles> {
        choose_roles(
            online,
            kinds,
            self.rx_cpu,
            self.server_cpus.clone().map(|c| c.0),
            self.loader_cpus.clone().map(|c| c.0),
        )
    }
}

use rxsteer_records::run::{core_kinds, CoreKind, CpuInfo};
pub use rxsteer_records::run::{LabFrames, LabSettings, Roles};

/// Roles from the user's choices, defaults filled in from the machine's online CPUs and their
/// kinds. On a machine of one kind: the RX core is the first CPU, the loader the top quarter,
/// the server the rest. With two kinds (GB10: 10 performance, 10 efficiency): the RX core and
/// the server (so the steering targets) are the highest-capacity cores, the loader the others.
pub fn choose_roles(
    online: &[u32],
    kinds: &[CpuInfo],
    rx_cpu: Option<u32>,
    server: Option<Vec<u32>>,
    loader: Option<Vec<u32>>,
) -> Result<Roles> {
    let check = |what: &str, cpus: &[u32]| -> Result<()> {
        if cpus.is_empty() {
            bail!("{what} is empty");
        }
        if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
            bail!(
                "CPU {c} in {what} is not online on this machine (online: {})",
                format_cpu_list(online)
            );
        }
        Ok(())
    };
    let rank = |c: u32| {
        kinds
            .iter()
            .find(|k| k.cpu == c)
            .map_or((0, 0), CpuInfo::rank)
    };
    let two_kinds = !core_kinds(kinds).is_empty();
    let top = online.iter().map(|&c| rank(c)).max();
    // The best core first; among equals the lower id (so one kind keeps CPU order).
    let mut by_rank = online.to_vec();
    by_rank.sort_by(|&a, &b| rank(b).cmp(&rank(a)).then(a.cmp(&b)));
    let rx = rx_cpu.unwrap_or(by_rank[0]);
    check("--rx-cpu", &[rx])?;
    let n = online.len();
    let others: Vec<u32> = online.iter().copied().filter(|&c| c != rx).collect();
    let big_others: Vec<u32> = others
        .iter()
        .copied()
        .filter(|&c| Some(rank(c)) == top)
        .collect();
    // Loaders take the top quarter of the CPUs (at least one); servers the rest. On two
    // CPUs the loader shares the receive core, as in the measured 2-vCPU baseline. With two
    // kinds of core, and a big core besides the RX core, the loader takes the small ones.
    let default_loader: Vec<u32> = match n {
        1 | 2 => vec![rx],
        _ if two_kinds && !big_others.is_empty() => others
            .iter()
            .copied()
            .filter(|c| !big_others.contains(c))
            .collect(),
        _ => others[others.len() - n.div_ceil(4).min(others.len() - 1)..].to_vec(),
    };
    let loader = loader.unwrap_or(default_loader);
    check("--loader-cpus", &loader)?;
    let server = server.unwrap_or_else(|| {
        let s: Vec<u32> = others
            .iter()
            .copied()
            .filter(|c| !loader.contains(c))
            .collect();
        if s.is_empty() {
            vec![*others.first().unwrap_or(&rx)]
        } else {
            s
        }
    });
    check("--server-cpus", &server)?;
    Ok(Roles {
        rx_cpu: rx,
        server_cpus: server,
        loader_cpus: loader,
    })
}

/// Why the default roles are what they are, when the CPUs are of two kinds (one line).
pub fn why_roles(roles: &Roles, kinds: &[CpuInfo]) -> Option<String> {
    let k = core_kinds(kinds);
    let big: Vec<u32> = k
        .iter()
        .filter(|(_, v)| **v == CoreKind::Performance)
        .map(|(c, _)| *c)
        .collect();
    if big.is_empty() {
        return None;
    }
    let kind = |c: u32| k.get(&c).map_or('?', |v| v.letter());
    Some(format!(
        "two kinds of core (performance: {}): receive CPU {} ({}), server CPUs {} ({}), loader CPUs {} ({}); \
         the receive core and the steering targets go on the highest-capacity cores",
        format_cpu_list(&big),
        roles.rx_cpu,
        kind(roles.rx_cpu),
        format_cpu_list(&roles.server_cpus),
        kinds_of(&roles.server_cpus, &kind),
        format_cpu_list(&roles.loader_cpus),
        kinds_of(&roles.loader_cpus, &kind),
    ))
}

/// "P", "E" or "P+E" for a set of CPUs.
fn kinds_of(cpus: &[u32], kind: &dyn Fn(u32) -> char) -> String {
    let mut k: Vec<char> = cpus.iter().map(|&c| kind(c)).collect();
    k.sort_unstable();
    k.dedup();
    k.iter().map(char::to_string).collect::<Vec<_>>().join("+")
}

/// The roles in one line, for the start of a run.
pub fn describe(roles: &Roles) -> String {
    format!(
        "receive (NAPI) CPU {}, server CPUs {}, loader CPUs {}, steering targets {}",
        roles.rx_cpu,
        format_cpu_list(&roles.server_cpus),
        format_cpu_list(&roles.loader_cpus),
        match roles.steer_targets() {
            t if t.is_empty() => "none".to_string(),
            t => format_cpu_list(&t),
        }
    )
}

/// Tag of the embedded lab: fixed, so a lab left by a crashed run is found and removed.
pub const LAB_TAG: &str = "lab";

/// The embedded lab, torn down (namespaces, veths, NAPI thread) when dropped.
pub struct EmbeddedLab {
    /// The loader veth's hash drop (the lab's wire), detached before the namespaces go.
    wire: Result<rxsteer_dataplane::lab_wire::LabWire, String>,
    pub veth: VethLab,
    pub napi_pid: u32,
    /// The lab's owner file, removed after the namespaces (fields drop in order).
    _owner: LabOwner,
}

/// Which rxsteer process owns the lab's namespaces: a start or `rxsteer restore` removes
/// them only when no live process holds this lock (see rxsteer_tune::lock: a killed owner's
/// lock is gone with it, and a reused pid never holds it).
const LAB_LOCK: &str = "/run/rxsteer/lab.lock";

/// The lab's lock, held for as long as its namespaces exist.
pub struct LabOwner {
    _lock: rxsteer_tune::lock::HostLock,
}

impl LabOwner {
    fn take() -> Result<Self> {
        use rxsteer_tune::lock::{HostLock, LockError};
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create("/run/rxsteer")
            .context("creating /run/rxsteer")?;
        match HostLock::take(std::path::Path::new(LAB_LOCK), "rxsteer (the embedded lab)") {
            Ok(lock) => Ok(Self { _lock: lock }),
            Err(LockError::Held(holder, _)) => {
                bail!("the embedded lab is in use by {holder}: one lab at a time")
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The pid of a live rxsteer (not this one) that owns the lab, if any.
    pub fn live() -> Option<u32> {
        use rxsteer_tune::lock::{HostLock, LockError};
        match HostLock::take(
            std::path::Path::new(LAB_LOCK),
            "rxsteer (a look at the lab)",
        ) {
            Err(LockError::Held(holder, _)) => {
                let pid = holder.pid.unwrap_or(0);
                (pid != std::process::id()).then_some(pid)
            }
            _ => None,
        }
    }
}

/// Frames each lab veth may queue for transmit (its pfifo qdisc).
pub const TX_QUEUE: u32 = 1000;

impl EmbeddedLab {
    /// Removes namespaces an earlier, killed run left behind. Returns their names. A lab whose
    /// owner still runs is refused, not removed under it.
    pub fn remove_leftovers() -> Result<Vec<String>> {
        if let Some(pid) = LabOwner::live() {
            bail!("the embedded lab is in use by rxsteer (pid {pid}): one lab at a time");
        }
        let listed = ip(&["netns", "list"])?;
        let ours: Vec<String> = listed
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| *n == format!("rxs-{LAB_TAG}-s") || *n == format!("rxs-{LAB_TAG}-c"))
            .map(str::to_string)
            .collect();
        for n in &ours {
            ip(&["netns", "del", n])?;
        }
        Ok(ours)
    }

    pub fn create(roles: &Roles) -> Result<Self> {
        let owner = LabOwner::take()?;
        let veth = VethLab::create(LAB_TAG, 1)?;
        let (server, client) = (veth.server.name(), veth.client.name());
        ethtool(server, &["-K", &veth.server_dev, "gro", "on", "tso", "off"])?;
        ethtool(client, &["-K", &veth.client_dev, "tx", "off", "gro", "on"])?;
        for (ns, dev) in [(server, &veth.server_dev), (client, &veth.client_dev)] {
            write_sysfs(ns, &format!("/sys/class/net/{dev}/threaded"), "1")?;
        }
        // veth has no queue of its own (noqueue): a sender that outruns the peer's 256-frame
        // NAPI ring loses frames, then waits out TCP's 200 ms retransmit timeout, which a
        // wire-paced NIC would not do. With a real qdisc, veth pushes back instead of dropping.
        for (ns, dev) in [
            (&veth.server, &veth.server_dev),
            (&veth.client, &veth.client_dev),
        ] {
            ns.command("tc")
                .args(["qdisc", "replace", "dev", dev, "root", "pfifo", "limit"])
                .arg(TX_QUEUE.to_string())
                .output()
                .context("running tc")
                .and_then(|o| {
                    if o.status.success() {
                        Ok(())
                    } else {
                        bail!(
                            "tc qdisc replace dev {dev} root pfifo: {}",
                            String::from_utf8_lossy(&o.stderr).trim()
                        )
                    }
                })?;
        }
        let napi_pid = napi_thread(&veth.server_dev)?;
        pin_task(napi_pid, &[roles.rx_cpu])?;
        // The loader veth's NAPI kthread: the replies' receive, on the loader's CPUs.
        pin_task(napi_thread(&veth.client_dev)?, &roles.loader_cpus)?;
        // Frames as from a NIC without RXHASH: the loader's veth drops its sockets' hash.
        let wire = rxsteer_dataplane::lab_wire::LabWire::attach(
            &format!("/run/netns/{client}"),
            &veth.client_dev,
        )
        .map_err(|e| format!("{e:#}"));
        Ok(Self {
            wire,
            veth,
            napi_pid,
            _owner: owner,
        })
    }

    /// What `create` set, as stored with a run.
    pub fn settings(&self, roles: &Roles) -> LabSettings {
        LabSettings {
            server_gro: true,
            server_tso: false,
            server_napi_threaded: true,
            server_napi_cpu: roles.rx_cpu,
            loader_tx_checksum: false,
            loader_gro: true,
            loader_napi_threaded: true,
            loader_napi_cpus: roles.loader_cpus.clone(),
            tx_qdisc_pfifo: TX_QUEUE,
            frames: Some(match &self.wire {
                Ok(_) => LabFrames::Unhashed,
                Err(why) => LabFrames::SenderHash { why: why.clone() },
            }),
        }
    }
}

fn ethtool(ns: &str, args: &[&str]) -> Result<()> {
    crate::child::output_of(
        Command::new("ip")
            .args(["netns", "exec", ns, "ethtool"])
            .args(args),
        "running ethtool",
        format_args!("ethtool {}", args.join(" ")),
    )
    .map(drop)
}

/// Writes a sysfs file of a device inside `ns`: sysfs shows the devices of the namespace it
/// was mounted in, so the write goes through `ip netns exec` (which mounts the right one).
fn write_sysfs(ns: &str, path: &str, value: &str) -> Result<()> {
    use std::io::Write;
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "tee", path])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("running tee")?;
    child.stdin.take().unwrap().write_all(value.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "writing {value} to {path}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The pid of the threaded-NAPI kthread of `dev` (comm `napi/<dev>-<id>`; a veth has one).
fn napi_thread(dev: &str) -> Result<u32> {
    let pids = rxsteer_tune::napi::started_threads(dev)
        .with_context(|| format!("after enabling threaded NAPI on {dev}"))?;
    Ok(pids[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_roles_by_cpu_count() {
        let r = choose_roles(&[0, 1], &[], None, None, None).unwrap();
        assert_eq!(
            (r.rx_cpu, r.server_cpus.clone(), r.loader_cpus.clone()),
            (0, vec![1], vec![0])
        );
        assert_eq!(r.steer_targets(), vec![1]);
        assert!(rxsteer_records::small_machine_caveat(2)
            .unwrap()
            .contains("not a gain like the seed's"));
        let r = choose_roles(&[0, 1, 2, 3], &[], None, None, None).unwrap();
        assert_eq!(
            (r.rx_cpu, r.server_cpus.clone(), r.loader_cpus.clone()),
            (0, vec![1, 2], vec![3])
        );
        assert!(rxsteer_records::small_machine_caveat(4).is_none());
        let twenty: Vec<u32> = (0..20).collect();
        let r = choose_roles(&twenty, &[], None, None, None).unwrap();
        assert_eq!(r.loader_cpus, (15..20).collect::<Vec<_>>());
        assert_eq!(r.server_cpus, (1..15).collect::<Vec<_>>());
    }

    /// Roles that make sense: the RX core alone (not a loader or server CPU past 2 CPUs),
    /// steering targets disjoint from the loader, nothing offline, no role empty.
    fn sensible(online: &[u32], r: &Roles) {
        let n = online.len();
        assert!(
            !r.server_cpus.is_empty() && !r.loader_cpus.is_empty(),
            "{r:?}"
        );
        for c in r.server_cpus.iter().chain(&r.loader_cpus) {
            assert!(online.contains(c), "{r:?}");
        }
        if n >= 3 {
            assert!(!r.loader_cpus.contains(&r.rx_cpu), "RX core alone: {r:?}");
            assert!(!r.server_cpus.contains(&r.rx_cpu), "RX core alone: {r:?}");
            assert!(!r.steer_targets().is_empty(), "{r:?}");
            for t in r.steer_targets() {
                assert!(
                    !r.loader_cpus.contains(&t),
                    "target {t} is a loader CPU: {r:?}"
                );
            }
        }
    }

    #[test]
    fn default_roles_make_sense_at_4_8_16_20_and_64_cpus() {
        for n in [4u32, 8, 16, 20, 64] {
            let online: Vec<u32> = (0..n).collect();
            let r = choose_roles(&online, &[], None, None, None).unwrap();
            sensible(&online, &r);
            assert_eq!(r.rx_cpu, 0);
            assert_eq!(
                r.loader_cpus.len(),
                n.div_ceil(4) as usize,
                "a quarter loads at {n}"
            );
            assert_eq!(
                r.server_cpus.len() + r.loader_cpus.len() + 1,
                n as usize,
                "every CPU has a role at {n}"
            );
            assert!(why_roles(&r, &[]).is_none(), "one kind: nothing to explain");
        }
    }

    fn kinds(big: &[u32], small: &[u32]) -> Vec<CpuInfo> {
        let info = |cpu, capacity| CpuInfo {
            cpu,
            capacity: Some(capacity),
            ..Default::default()
        };
        let mut v: Vec<CpuInfo> = big.iter().map(|&c| info(c, 1024)).collect();
        v.extend(small.iter().map(|&c| info(c, 480)));
        v.sort_by_key(|c| c.cpu);
        v
    }

    #[test]
    fn on_a_gb10_shape_the_receive_core_and_targets_are_performance_cores() {
        // As the fake GB10 sysfs tree in tune::topology: 0-9 efficiency, 10-19 performance.
        let online: Vec<u32> = (0..20).collect();
        let k = kinds(&(10..20).collect::<Vec<_>>(), &(0..10).collect::<Vec<_>>());
        let r = choose_roles(&online, &k, None, None, None).unwrap();
        sensible(&online, &r);
        assert_eq!(r.rx_cpu, 10);
        assert_eq!(r.server_cpus, (11..20).collect::<Vec<_>>());
        assert_eq!(r.loader_cpus, (0..10).collect::<Vec<_>>());
        let why = why_roles(&r, &k).unwrap();
        assert!(
            why.contains("receive CPU 10 (P), server CPUs 11-19 (P), loader CPUs 0-9 (E)"),
            "{why}"
        );
        // The user's choice still wins.
        let r = choose_roles(&online, &k, Some(0), None, None).unwrap();
        assert_eq!(r.rx_cpu, 0);
    }

    #[test]
    fn hybrid_and_lopsided_machines() {
        // x86-like: 8 performance then 8 efficiency.
        let online: Vec<u32> = (0..16).collect();
        let k = kinds(&(0..8).collect::<Vec<_>>(), &(8..16).collect::<Vec<_>>());
        let r = choose_roles(&online, &k, None, None, None).unwrap();
        sensible(&online, &r);
        assert_eq!((r.rx_cpu, r.server_cpus.clone()), (0, (1..8).collect()));
        // One big core and three little: the big one receives; the rest split as on one kind.
        let online: Vec<u32> = (0..4).collect();
        let k = kinds(&[3], &[0, 1, 2]);
        let r = choose_roles(&online, &k, None, None, None).unwrap();
        sensible(&online, &r);
        assert_eq!(r.rx_cpu, 3);
    }

    #[test]
    fn roles_must_fit_the_machine() {
        let err = choose_roles(&[0, 1], &[], Some(5), None, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "CPU 5 in --rx-cpu is not online on this machine (online: 0-1)"
        );
        let err = choose_roles(&[0, 1], &[], None, Some(vec![1, 2]), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("CPU 2 in --server-cpus"), "{err}");
        let err = choose_roles(&[0, 1], &[], None, Some(vec![]), None)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "--server-cpus is empty");
    }
}
