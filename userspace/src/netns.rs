//! Network namespaces and veth pairs for the lab and the tests. Each namespace is deleted when
//! its guard drops, which also destroys every interface inside it, so nothing is left behind.
//! Names and addresses are passed to `ip` as separate arguments, never through a shell.
use anyhow::{Context, Result};
use std::{net::Ipv4Addr, os::fd::AsRawFd, process::Command};

use crate::iface::validate_name;

/// Runs `ip ARGS...`, failing with its stderr.
pub fn ip(args: &[&str]) -> Result<String> {
    crate::child::output_of(
        Command::new("ip").args(args),
        "running ip (package iproute2)",
        format_args!("ip {}", args.join(" ")),
    )
}

/// A program run where the server side lives: in the lab's server namespace, or on this host.
pub fn command_at(ns: Option<&Netns>, program: &std::path::Path) -> Command {
    let mut c = match ns {
        Some(ns) => ns.command(&program.display().to_string()),
        None => Command::new(program),
    };
    crate::child::die_with_parent(&mut c);
    c
}

/// A network namespace created by us, deleted on drop.
pub struct Netns {
    name: String,
}

impl Netns {
    pub fn create(name: &str) -> Result<Self> {
        validate_name(name)?;
        ip(&["netns", "add", name])?;
        let ns = Self {
            name: name.to_string(),
        };
        ns.ip(&["link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `ip -n NAME ARGS...`
    pub fn ip(&self, args: &[&str]) -> Result<String> {
        let mut all = vec!["-n", &self.name];
        all.extend_from_slice(args);
        ip(&all)
    }

    /// A command run inside the namespace (`ip netns exec NAME PROGRAM`).
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name, program]);
        c
    }

    /// Runs `f` on a new thread that has joined this namespace (and, if given, is pinned to
    /// `cpu`). Sockets and netlink calls made there belong to the namespace.
    pub fn spawn<T: Send + 'static>(
        &self,
        cpu: Option<u32>,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> std::thread::JoinHandle<Result<T>> {
        let path = format!("/run/netns/{}", self.name);
        std::thread::spawn(move || {
            enter(&path)?;
            if let Some(cpu) = cpu {
                rxsteer_tune::pin::pin_current_thread(cpu)?;
            }
            f()
        })
    }

    /// Interface statistics counter (e.g. "rx_packets") of `dev` in this namespace.
    pub fn link_stat(&self, dev: &str, counter: &str) -> Result<u64> {
        let json = self.ip(&["-j", "-s", "link", "show", "dev", dev])?;
        let v: serde_json::Value = serde_json::from_str(&json)?;
        let (dir, field) = counter.split_once('_').context("counter like rx_packets")?;
        v[0]["stats64"][dir][field]
            .as_u64()
            .with_context(|| format!("no {counter} for {dev} in `ip -s link` output"))
    }

    /// The XDP attach state `ip link` reports for `dev` ("xdp", "xdpgeneric", ...), if any.
    pub fn xdp_attached(&self, dev: &str) -> Result<Option<String>> {
        Ok(xdp_word(&self.ip(&["-o", "link", "show", "dev", dev])?))
    }
}

/// The XDP attachment (`xdp`, `xdpgeneric`) `ip -o link` shows on `dev` in this process's
/// network namespace, if any.
pub fn xdp_attached_here(dev: &str) -> Result<Option<String>> {
    Ok(xdp_word(&ip(&["-o", "link", "show", "dev", dev])?))
}

fn xdp_word(ip_link: &str) -> Option<String> {
    ip_link
        .split_whitespace()
        .find(|w| w.starts_with("xdp"))
        .map(str::to_string)
}

impl Drop for Netns {
    fn drop(&mut self) {
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!(
                "rxsteer: could not delete network namespace {}: {e:#}",
                self.name
            );
        }
    }
}

fn enter(path: &str) -> Result<()> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {path}"))?;
    // SAFETY: f is an open namespace file; setns only affects the calling thread.
    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("setns {path}"));
    }
    Ok(())
}

/// Two namespaces joined by a veth pair with one address each, IPv6 off and static neighbours,
/// so the only frames on the wire are the ones a test sends.
pub struct VethLab {
    pub server: Netns,
    pub client: Netns,
    pub server_dev: String,
    pub client_dev: String,
    pub server_ip: Ipv4Addr,
    pub client_ip: Ipv4Addr,
}

impl VethLab {
    /// `tag` keeps concurrent labs apart (names stay within 15 bytes).
    pub fn create(tag: &str, subnet: u8) -> Result<Self> {
        let server = Netns::create(&format!("rxs-{tag}-s"))?;
        let client = Netns::create(&format!("rxs-{tag}-c"))?;
        let (server_dev, client_dev) = (format!("rxs{tag}s"), format!("rxs{tag}c"));
        let (server_ip, client_ip) = (
            Ipv4Addr::new(10, 77, subnet, 1),
            Ipv4Addr::new(10, 77, subnet, 2),
        );
        server.ip(&[
            "link",
            "add",
            &server_dev,
            "address",
            "02:00:00:00:00:01",
            "type",
            "veth",
            "peer",
            "name",
            &client_dev,
            "address",
            "02:00:00:00:00:02",
            "netns",
            client.name(),
        ])?;
        for (ns, dev, me, peer, peer_mac) in [
            (
                &server,
                &server_dev,
                server_ip,
                client_ip,
                "02:00:00:00:00:02",
            ),
            (
                &client,
                &client_dev,
                client_ip,
                server_ip,
                "02:00:00:00:00:01",
            ),
        ] {
            ns.ip(&["link", "set", dev, "up"])?;
            ns.ip(&["addr", "add", &format!("{me}/24"), "dev", dev])?;
            ns.ip(&[
                "neigh",
                "replace",
                &peer.to_string(),
                "lladdr",
                peer_mac,
                "dev",
                dev,
                "nud",
                "permanent",
            ])?;
            let dev = dev.clone();
            // IPv6 would add router solicitations and MLD reports to the counts. Net sysctls
            // resolve against the writing thread's namespace.
            ns.spawn(None, move || {
                std::fs::write(format!("/proc/sys/net/ipv6/conf/{dev}/disable_ipv6"), "1")
                    .context("disabling IPv6 on the lab veth")
            })
            .join()
            .expect("sysctl thread")?;
        }
        Ok(Self {
            server,
            client,
            server_dev,
            client_dev,
            server_ip,
            client_ip,
        })
    }
}
