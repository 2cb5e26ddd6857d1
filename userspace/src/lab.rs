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
    pub fn choose(&self, online: &[u32]) -> Result<Roles> {
        choose_roles(
            online,
            self.rx_cpu,
            self.server_cpus.clone().map(|c| c.0),
            self.loader_cpus.clone().map(|c| c.0),
        )
    }
}

pub use rxsteer_records::run::{LabSettings, Roles};

/// Roles from the user's choices, defaults filled in from the machine's online CPUs.
pub fn choose_roles(
    online: &[u32],
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
    let rx = rx_cpu.unwrap_or(online[0]);
    check("--rx-cpu", &[rx])?;
    let n = online.len();
    let others: Vec<u32> = online.iter().copied().filter(|&c| c != rx).collect();
    // Loaders take the top quarter of the CPUs (at least one); servers the rest. On two
    // CPUs the loader shares the receive core, as in the measured 2-vCPU baseline.
    let default_loader: Vec<u32> = match n {
        1 => vec![rx],
        2 => vec![rx],
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
    pub veth: VethLab,
    pub napi_pid: u32,
}

/// Frames each lab veth may queue for transmit (its pfifo qdisc).
pub const TX_QUEUE: u32 = 1000;

impl EmbeddedLab {
    /// Removes namespaces an earlier, killed run left behind. Returns their names.
    pub fn remove_leftovers() -> Result<Vec<String>> {
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
        Ok(Self { veth, napi_pid })
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
        }
    }
}

fn ethtool(ns: &str, args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "ethtool"])
        .args(args)
        .output()
        .context("running ethtool")?;
    if !out.status.success() {
        bail!(
            "ethtool {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
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

/// The pid of the threaded-NAPI kthread of `dev` (comm `napi/<dev>-<id>`).
fn napi_thread(dev: &str) -> Result<u32> {
    let prefix = format!("napi/{dev}-");
    for _ in 0..50 {
        if let Some(&(pid, _)) =
            rxsteer_dataplane::procfs::pids_with_comm_prefix(&[&prefix])?.first()
        {
            return Ok(pid);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    bail!("no threaded NAPI kthread {prefix}* appeared after enabling threaded NAPI on {dev}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_roles_by_cpu_count() {
        let r = choose_roles(&[0, 1], None, None, None).unwrap();
        assert_eq!(
            (r.rx_cpu, r.server_cpus.clone(), r.loader_cpus.clone()),
            (0, vec![1], vec![0])
        );
        assert_eq!(r.steer_targets(), vec![1]);
        assert!(rxsteer_records::small_machine_caveat(2)
            .unwrap()
            .contains("not a gain like the seed's"));
        let r = choose_roles(&[0, 1, 2, 3], None, None, None).unwrap();
        assert_eq!(
            (r.rx_cpu, r.server_cpus.clone(), r.loader_cpus.clone()),
            (0, vec![1, 2], vec![3])
        );
        assert!(rxsteer_records::small_machine_caveat(4).is_none());
        let twenty: Vec<u32> = (0..20).collect();
        let r = choose_roles(&twenty, None, None, None).unwrap();
        assert_eq!(r.loader_cpus, (15..20).collect::<Vec<_>>());
        assert_eq!(r.server_cpus, (1..15).collect::<Vec<_>>());
    }

    #[test]
    fn roles_must_fit_the_machine() {
        let err = choose_roles(&[0, 1], Some(5), None, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "CPU 5 in --rx-cpu is not online on this machine (online: 0-1)"
        );
        let err = choose_roles(&[0, 1], None, Some(vec![1, 2]), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("CPU 2 in --server-cpus"), "{err}");
        let err = choose_roles(&[0, 1], None, Some(vec![]), None)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "--server-cpus is empty");
    }
}
