//! The per-NAPI IRQ suspension timeout (`irq-suspend-timeout`, Linux 6.13) as a tuning value.
//! It has no file: it is read and set NAPI instance by instance over the netdev
//! generic-netlink family. The setting's path is the device's `ifindex` file, which names the
//! device and holds the index netlink asks for.
//!
//! While a server busy-polls with epoll's `prefer_busy_poll` and finds events, the kernel keeps
//! the device's interrupt and softirq processing off for up to this long; a poll that finds
//! nothing ends it early, and `napi_defer_hard_irqs`/`gro_flush_timeout` take over.
//!
//! Its value:
//! - as a profile wants it, one number of ns for every NAPI instance of the device;
//! - as read, and so as snapshotted, each instance's `id:ns`, space-separated.
//!
//! Restoring a snapshot sets each instance it names back (one gone is skipped). One it does not
//! name started since (XDP attached, the device reset) and gets 0, what every instance starts
//! with, so nothing rxsteer chose is left behind.
use std::{io, path::Path};

use crate::genl::{self, Socket};

const FAMILY: &str = "netdev";
const FAMILY_VERSION: u8 = 1;
const CMD_NAPI_GET: u8 = 11;
const CMD_NAPI_SET: u8 = 14;
const A_NAPI_IFINDEX: u16 = 1;
const A_NAPI_ID: u16 = 2;
const A_NAPI_IRQ_SUSPEND_TIMEOUT: u16 = 7;

/// What a busy-polling arm wants: far longer than one loop of our servers, as the kernel's
/// documentation asks (much larger than `gro_flush_timeout`), so that the interrupt stays off
/// while the server keeps finding work.
pub const WANTED_NS: u64 = 20_000_000;

/// The netdev family on one generic-netlink socket, for a read and the writes that follow.
struct Netdev {
    sock: Socket,
    family: u16,
}

impl Netdev {
    fn open() -> io::Result<Self> {
        let mut sock = Socket::open()?;
        let family = sock.family(FAMILY)?.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel has no netdev netlink family (Linux 6.5)",
            )
        })?;
        Ok(Self { sock, family })
    }

    /// The device's NAPI instances: (id, timeout; None where this kernel has no such
    /// setting), by id.
    fn instances(&mut self, ifindex_file: &Path) -> io::Result<Vec<(u32, Option<u64>)>> {
        let ifindex: u32 = std::fs::read_to_string(ifindex_file)?
            .trim()
            .parse()
            .map_err(|_| io::Error::other(format!("{} holds no index", ifindex_file.display())))?;
        let replies = self.sock.request(
            self.family,
            CMD_NAPI_GET,
            FAMILY_VERSION,
            genl::DUMP,
            &[(A_NAPI_IFINDEX, &ifindex.to_ne_bytes())],
        )?;
        let mut out: Vec<(u32, Option<u64>)> = replies
            .iter()
            .filter_map(|attrs| {
                let find = |t| attrs.iter().find(|(k, _)| *k == t).map(|(_, v)| v);
                let id = genl::uint(find(A_NAPI_ID)?)? as u32;
                Some((
                    id,
                    find(A_NAPI_IRQ_SUSPEND_TIMEOUT).and_then(|v| genl::uint(v)),
                ))
            })
            .collect();
        out.sort_unstable();
        Ok(out)
    }

    fn set(&mut self, id: u32, ns: u64) -> io::Result<()> {
        self.sock
            .request(
                self.family,
                CMD_NAPI_SET,
                FAMILY_VERSION,
                0,
                &[
                    (A_NAPI_ID, &id.to_ne_bytes()),
                    (A_NAPI_IRQ_SUSPEND_TIMEOUT, &ns.to_ne_bytes()),
                ],
            )
            .map(drop)
    }
}

fn instances(ifindex_file: &Path) -> io::Result<Vec<(u32, Option<u64>)>> {
    Netdev::open()?.instances(ifindex_file)
}

/// Why the device's IRQ suspension cannot be tuned here, if it cannot: the kernel predates it
/// (6.13), or the device has no NAPI instance now.
pub fn unsupported(ifindex_file: &Path) -> Option<String> {
    match instances(ifindex_file) {
        Err(e) if e.kind() == io::ErrorKind::Unsupported => Some(format!("needs Linux 6.13: {e}")),
        Err(e) => Some(format!("its NAPI instances cannot be read: {e}")),
        Ok(list) if list.is_empty() => Some("the device has no NAPI instance now".into()),
        Ok(list) if list.iter().any(|(_, ns)| ns.is_none()) => Some(
            "needs Linux 6.13: this kernel's NAPI instances have no irq-suspend-timeout".into(),
        ),
        Ok(_) => None,
    }
}

/// Each NAPI instance's timeout, `id:ns`.
pub fn read(ifindex_file: &Path) -> io::Result<String> {
    Ok(instances(ifindex_file)?
        .into_iter()
        .filter_map(|(id, ns)| Some(format!("{id}:{}", ns?)))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Sets the instances as `value` says.
pub fn write(ifindex_file: &Path, value: &str) -> io::Result<()> {
    let wanted = parse(value)?;
    let mut netdev = Netdev::open()?;
    for (id, _) in netdev.instances(ifindex_file)? {
        let ns = match &wanted {
            Timeout::All(ns) => *ns,
            Timeout::Each(each) => each.iter().find(|(i, _)| *i == id).map_or(0, |(_, ns)| *ns),
        };
        match netdev.set(id, ns) {
            // An instance that went away meanwhile (the device reset) is no failure.
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("setting NAPI {id}'s irq-suspend-timeout: {e}"),
                ))
            }
            Ok(()) => {}
        }
    }
    Ok(())
}

#[derive(Debug, PartialEq)]
enum Timeout {
    All(u64),
    Each(Vec<(u32, u64)>),
}

fn parse(value: &str) -> io::Result<Timeout> {
    let bad = |v: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{v:?} is not ns or id:ns"),
        )
    };
    let value = value.trim();
    if !value.is_empty() && !value.contains(':') {
        return value.parse().map(Timeout::All).map_err(|_| bad(value));
    }
    value
        .split_whitespace()
        .map(|item| {
            let (id, ns) = item.split_once(':').ok_or_else(|| bad(item))?;
            Ok((
                id.parse().map_err(|_| bad(item))?,
                ns.parse().map_err(|_| bad(item))?,
            ))
        })
        .collect::<io::Result<_>>()
        .map(Timeout::Each)
}

/// Whether two values set the instances alike (one wanted number against what was read).
pub fn same(a: &str, b: &str) -> bool {
    let (Ok(a), Ok(b)) = (parse(a), parse(b)) else {
        return a == b;
    };
    match (a, b) {
        (Timeout::All(x), Timeout::All(y)) => x == y,
        (Timeout::All(x), Timeout::Each(e)) | (Timeout::Each(e), Timeout::All(x)) => {
            !e.is_empty() && e.iter().all(|(_, ns)| *ns == x)
        }
        (Timeout::Each(mut x), Timeout::Each(mut y)) => {
            x.sort_unstable();
            y.sort_unstable();
            x == y
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_as_one_timeout_or_each_instance() {
        assert_eq!(parse("20000000").unwrap(), Timeout::All(20_000_000));
        assert_eq!(parse("").unwrap(), Timeout::Each(vec![]));
        assert_eq!(
            parse("8193:0 8194:5\n").unwrap(),
            Timeout::Each(vec![(8193, 0), (8194, 5)])
        );
        assert!(parse("8193:x").is_err());
        assert!(parse("x").is_err());
    }

    #[test]
    fn a_wanted_timeout_matches_only_when_every_instance_has_it() {
        assert!(same("5", "8193:5 8194:5"));
        assert!(!same("5", "8193:5 8194:0"));
        assert!(!same("5", ""), "no instance: nothing set yet");
        assert!(same("8194:0 8193:5", "8193:5 8194:0"));
        assert!(!same("8193:5", "8194:5"));
    }
}
