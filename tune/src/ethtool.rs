//! The NIC's own settings and counters over the ethtool ioctl (`SIOCETHTOOL`): RX/TX ring
//! sizes, interrupt coalescing, GRO/GSO/TSO, and the driver's statistics by name.
//!
//! Why the ioctl and not ethtool netlink: every kernel rxsteer runs on has it (netlink's
//! rings and coalescing came in 5.6/5.7), each request is one fixed C struct
//! (`include/uapi/linux/ethtool.h`) instead of nested attributes and bitsets, and the kernel
//! still serves it through the same driver callbacks netlink uses. Nothing here parses the
//! `ethtool` binary's text.
//!
//! Values are text, as every tuning value is (the state file stores them, revert writes them
//! back byte for byte): `rx=256 tx=256` for rings, `name=value` pairs in the struct's order for
//! coalescing, `gro=on gso=on tso=on` for offloads. A wanted value may name only some fields;
//! the others are left as they read.
use std::{io, os::fd::AsRawFd};

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const GCOALESCE: u32 = 0x0e;
const SCOALESCE: u32 = 0x0f;
const GRINGPARAM: u32 = 0x10;
const SRINGPARAM: u32 = 0x11;
const GSTRINGS: u32 = 0x1b;
const GSTATS: u32 = 0x1d;
const GSSET_INFO: u32 = 0x37;
const GFEATURES: u32 = 0x3a;
const ETH_SS_STATS: u32 = 1;
const ETH_SS_FEATURES: u32 = 4;
const ETH_GSTRING_LEN: usize = 32;

/// `struct ifreq` with its union as the `ifr_data` pointer (40 bytes on 64-bit, 32 on 32-bit).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    data: *mut libc::c_void,
    _pad: [u8; 24 - std::mem::size_of::<usize>()],
}

/// One ioctl on `buf`, whose first u32 is the command. ENODEV and the like come back as is.
fn call(iface: &str, buf: &mut [u32]) -> io::Result<()> {
    let bytes = iface.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{iface:?} is no interface name"),
        ));
    }
    // SAFETY: plain socket(2); owned right after.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket(2) and is owned by nothing else.
    let sock = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        data: buf.as_mut_ptr().cast(),
        _pad: [0; 24 - std::mem::size_of::<usize>()],
    };
    req.name[..bytes.len()].copy_from_slice(bytes);
    // SAFETY: req is a valid ifreq whose data points at buf, which is as long as the command's
    // struct (each caller sizes it so, the kernel writes no further).
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), SIOCETHTOOL as _, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether an error means the driver has no such setting (not applicable, not a failure).
pub fn unsupported(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EOPNOTSUPP) || e.raw_os_error() == Some(libc::EINVAL)
}

/// `struct ethtool_ringparam`, as the kernel lays it out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rings {
    pub rx_max: u32,
    pub rx_mini_max: u32,
    pub rx_jumbo_max: u32,
    pub tx_max: u32,
    pub rx: u32,
    pub rx_mini: u32,
    pub rx_jumbo: u32,
    pub tx: u32,
}

pub fn rings(iface: &str) -> io::Result<Rings> {
    let mut b = [0u32; 9];
    b[0] = GRINGPARAM;
    call(iface, &mut b)?;
    Ok(Rings {
        rx_max: b[1],
        rx_mini_max: b[2],
        rx_jumbo_max: b[3],
        tx_max: b[4],
        rx: b[5],
        rx_mini: b[6],
        rx_jumbo: b[7],
        tx: b[8],
    })
}

fn set_rings(iface: &str, r: &Rings) -> io::Result<()> {
    let mut b = [
        SRINGPARAM,
        r.rx_max,
        r.rx_mini_max,
        r.rx_jumbo_max,
        r.tx_max,
        r.rx,
        r.rx_mini,
        r.rx_jumbo,
        r.tx,
    ];
    call(iface, &mut b)
}

/// Named `u32` fields of a struct, parsed from and printed as `name=value` pairs.
fn parse_pairs(value: &str, names: &[&str]) -> io::Result<Vec<(usize, u32)>> {
    value
        .split_whitespace()
        .map(|item| {
            let bad = || {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{item:?} is not one of {} as name=number", names.join(", ")),
                )
            };
            let (k, v) = item.split_once('=').ok_or_else(bad)?;
            let at = names.iter().position(|n| *n == k).ok_or_else(bad)?;
            Ok((at, v.parse().map_err(|_| bad())?))
        })
        .collect()
}

fn print_pairs(names: &[&str], values: &[u32]) -> String {
    names
        .iter()
        .zip(values)
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `wanted` (some fields) holds in `current` (all of them), both as pairs.
fn pairs_hold(names: &[&str], wanted: &str, current: &str) -> bool {
    match (parse_pairs(wanted, names), parse_pairs(current, names)) {
        (Ok(w), Ok(c)) => w
            .iter()
            .all(|(i, v)| c.iter().any(|(j, x)| i == j && v == x)),
        _ => wanted == current,
    }
}

pub const RING_FIELDS: [&str; 2] = ["rx", "tx"];

/// The RX and TX ring sizes as a value: `rx=256 tx=256`.
pub fn read_rings(iface: &str) -> io::Result<String> {
    let r = rings(iface)?;
    Ok(print_pairs(&RING_FIELDS, &[r.rx, r.tx]))
}

/// Sets the ring sizes `value` names; the others (and the mini and jumbo rings) stay. Some
/// drivers reset the device to resize (e1000 takes its link down and up): then this waits for
/// the carrier, so that nothing is timed over a dead link, and says that it happened.
pub fn write_rings(iface: &str, value: &str) -> io::Result<()> {
    let mut r = rings(iface)?;
    for (i, v) in parse_pairs(value, &RING_FIELDS)? {
        match i {
            0 => r.rx = v,
            _ => r.tx = v,
        }
    }
    let bounces = carrier_changes(iface);
    set_rings(iface, &r)?;
    if carrier_changes(iface) != bounces {
        let took = wait_for_carrier(iface, std::time::Duration::from_secs(20))?;
        eprintln!(
            "rxsteer: {iface}'s link went down with the ring change and was up again after \
             {:.1} s",
            took.as_secs_f64()
        );
    }
    Ok(())
}

/// How often the interface's carrier changed since it appeared (None: not shown here).
fn carrier_changes(iface: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/class/net/{iface}/carrier_changes"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Waits until the interface has its carrier again; how long it took, or an error naming the
/// wait where it never came.
fn wait_for_carrier(iface: &str, within: std::time::Duration) -> io::Result<std::time::Duration> {
    let start = std::time::Instant::now();
    loop {
        let up = std::fs::read_to_string(format!("/sys/class/net/{iface}/carrier"))
            .is_ok_and(|c| c.trim() == "1");
        if up {
            return Ok(start.elapsed());
        }
        if start.elapsed() > within {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{iface}'s link went down with the ring change and had no carrier after {} s",
                    within.as_secs()
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether two ring values agree on every field either names.
pub fn same_rings(a: &str, b: &str) -> bool {
    pairs_hold(&RING_FIELDS, a, b) || pairs_hold(&RING_FIELDS, b, a)
}

/// `struct ethtool_coalesce` after its command, in order, by the names `ethtool -C` takes.
pub const COALESCE_FIELDS: [&str; 22] = [
    "rx-usecs",
    "rx-frames",
    "rx-usecs-irq",
    "rx-frames-irq",
    "tx-usecs",
    "tx-frames",
    "tx-usecs-irq",
    "tx-frames-irq",
    "stats-block-usecs",
    "adaptive-rx",
    "adaptive-tx",
    "pkt-rate-low",
    "rx-usecs-low",
    "rx-frames-low",
    "tx-usecs-low",
    "tx-frames-low",
    "pkt-rate-high",
    "rx-usecs-high",
    "rx-frames-high",
    "tx-usecs-high",
    "tx-frames-high",
    "sample-interval",
];

fn coalesce(iface: &str) -> io::Result<[u32; 23]> {
    let mut b = [0u32; 23];
    b[0] = GCOALESCE;
    call(iface, &mut b)?;
    Ok(b)
}

/// Every coalescing value, `rx-usecs=3 rx-frames=0 ...`, so that revert restores them all.
pub fn read_coalesce(iface: &str) -> io::Result<String> {
    Ok(print_pairs(&COALESCE_FIELDS, &coalesce(iface)?[1..]))
}

/// Sets the coalescing values `value` names; the rest stay as they read.
pub fn write_coalesce(iface: &str, value: &str) -> io::Result<()> {
    let mut b = coalesce(iface)?;
    for (i, v) in parse_pairs(value, &COALESCE_FIELDS)? {
        b[1 + i] = v;
    }
    b[0] = SCOALESCE;
    call(iface, &mut b)
}

/// Whether two coalescing values agree on every field the shorter names (a wanted value
/// names a few, a read one all).
pub fn same_coalesce(a: &str, b: &str) -> bool {
    pairs_hold(&COALESCE_FIELDS, a, b) || pairs_hold(&COALESCE_FIELDS, b, a)
}

/// Checks a `--coalesce` value before anything starts: names and numbers.
pub fn check_coalesce(value: &str) -> Result<(), String> {
    match parse_pairs(value, &COALESCE_FIELDS) {
        Ok(p) if !p.is_empty() => Ok(()),
        Ok(_) => Err("names no value".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// The offloads the reference tuning turns on, by the legacy commands that get and set each
/// one (the kernel maps them onto its feature bits), and by the names the kernel gives the
/// feature bits that decide whether the driver lets it change.
pub const OFFLOADS: [Offload; 3] = [
    Offload {
        name: "gro",
        get: 0x2b,
        set: 0x2c,
        features: &["rx-gro"],
    },
    Offload {
        name: "gso",
        get: 0x23,
        set: 0x24,
        features: &["tx-generic-segmentation"],
    },
    Offload {
        name: "tso",
        get: 0x1e,
        set: 0x1f,
        features: &[
            "tx-tcp-segmentation",
            "tx-tcp-ecn-segmentation",
            "tx-tcp-mangleid-segmentation",
            "tx-tcp6-segmentation",
        ],
    },
];

#[derive(Clone, Copy, Debug)]
pub struct Offload {
    pub name: &'static str,
    get: u32,
    set: u32,
    features: &'static [&'static str],
}

/// The offloads as a value: `gro=on gso=on tso=off`.
pub fn read_offloads(iface: &str) -> io::Result<String> {
    let mut out = Vec::new();
    for o in &OFFLOADS {
        let mut b = [o.get, 0];
        call(iface, &mut b)?;
        out.push(format!(
            "{}={}",
            o.name,
            if b[1] != 0 { "on" } else { "off" }
        ));
    }
    Ok(out.join(" "))
}

fn parse_offloads(value: &str) -> io::Result<Vec<(&'static Offload, bool)>> {
    value
        .split_whitespace()
        .map(|item| {
            let bad = || {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{item:?} is not gro, gso or tso =on|off"),
                )
            };
            let (k, v) = item.split_once('=').ok_or_else(bad)?;
            let o = OFFLOADS.iter().find(|o| o.name == k).ok_or_else(bad)?;
            let on = match v {
                "on" => true,
                "off" => false,
                _ => return Err(bad()),
            };
            Ok((o, on))
        })
        .collect()
}

/// Sets the offloads `value` names, each only where it differs.
pub fn write_offloads(iface: &str, value: &str) -> io::Result<()> {
    let current = read_offloads(iface)?;
    let current = parse_offloads(&current)?;
    for (o, on) in parse_offloads(value)? {
        if current
            .iter()
            .any(|(c, was)| c.name == o.name && *was == on)
        {
            continue;
        }
        let mut b = [o.set, u32::from(on)];
        call(iface, &mut b).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("turning {} {}: {e}", o.name, if on { "on" } else { "off" }),
            )
        })?;
    }
    Ok(())
}

/// Whether two offload values agree on every offload the shorter names.
pub fn same_offloads(a: &str, b: &str) -> bool {
    let holds = |w: &str, c: &str| match (parse_offloads(w), parse_offloads(c)) {
        (Ok(w), Ok(c)) => w
            .iter()
            .all(|(o, on)| c.iter().any(|(x, was)| x.name == o.name && was == on)),
        _ => w == c,
    };
    holds(a, b) || holds(b, a)
}

/// The offloads the driver lets change (its `hw_features`), by name: GRO is usually one,
/// a veth's TSO too, a fixed feature is not.
pub fn changeable_offloads(iface: &str) -> io::Result<Vec<&'static str>> {
    let names = strings(iface, ETH_SS_FEATURES)?;
    let blocks = names.len().div_ceil(32);
    let mut b = vec![0u32; 2 + 4 * blocks];
    b[0] = GFEATURES;
    b[1] = blocks as u32;
    call(iface, &mut b)?;
    let available = |bit: usize| b[2 + 4 * (bit / 32)] & (1 << (bit % 32)) != 0;
    Ok(OFFLOADS
        .iter()
        .filter(|o| {
            names
                .iter()
                .enumerate()
                .any(|(bit, n)| o.features.contains(&n.as_str()) && available(bit))
        })
        .map(|o| o.name)
        .collect())
}

/// The names of a string set (`ETH_SS_*`) of the device.
fn strings(iface: &str, set: u32) -> io::Result<Vec<String>> {
    // struct ethtool_sset_info: cmd, reserved, sset_mask (u64), then one u32 per set asked.
    let mut info = [GSSET_INFO, 0, 1 << set, 0, 0];
    call(iface, &mut info)?;
    // The kernel clears a set's bit where the device has none.
    let count = if info[2] & (1 << set) != 0 {
        info[4]
    } else {
        0
    } as usize;
    if count == 0 {
        return Ok(Vec::new());
    }
    let mut b = vec![0u32; 3 + count * ETH_GSTRING_LEN / 4];
    b[0] = GSTRINGS;
    b[1] = set;
    b[2] = count as u32;
    call(iface, &mut b)?;
    let bytes: Vec<u8> = b[3..].iter().flat_map(|w| w.to_ne_bytes()).collect();
    Ok(bytes
        .chunks(ETH_GSTRING_LEN)
        .map(|c| {
            let end = c.iter().position(|&x| x == 0).unwrap_or(c.len());
            String::from_utf8_lossy(&c[..end]).into_owned()
        })
        .collect())
}

/// The driver's own statistics (`ethtool -S`), by name. Empty where the driver has none.
pub fn driver_stats(iface: &str) -> io::Result<Vec<(String, u64)>> {
    let names = strings(iface, ETH_SS_STATS)?;
    if names.is_empty() {
        return Ok(Vec::new());
    }
    // struct ethtool_stats: cmd, n_stats, then n_stats u64s.
    let mut b = vec![0u32; 2 + 2 * names.len()];
    b[0] = GSTATS;
    b[1] = names.len() as u32;
    call(iface, &mut b)?;
    let n = (b[1] as usize).min(names.len());
    Ok(names
        .into_iter()
        .take(n)
        .enumerate()
        .map(|(i, name)| {
            let lo = b[2 + 2 * i].to_ne_bytes();
            let hi = b[3 + 2 * i].to_ne_bytes();
            (
                name,
                u64::from_ne_bytes([lo, hi].concat().try_into().unwrap()),
            )
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structs_are_the_kernels_size() {
        assert_eq!(std::mem::size_of::<IfReq>(), 40);
        // ethtool_coalesce is 23 u32s: the command and 22 values.
        assert_eq!(COALESCE_FIELDS.len() + 1, 23);
    }

    #[test]
    fn values_name_some_fields_and_hold_against_all() {
        let all = "rx-usecs=3 rx-frames=0 tx-usecs=0";
        assert!(same_coalesce("rx-usecs=3", all));
        assert!(same_coalesce(all, "rx-usecs=3"));
        assert!(!same_coalesce("rx-usecs=8", all));
        assert!(check_coalesce("rx-usecs=8 rx-frames=64").is_ok());
        assert!(check_coalesce("rx-usecs=x").is_err());
        assert!(check_coalesce("rx-usec=8").is_err());
        assert!(check_coalesce("").is_err());
        assert!(same_rings("rx=4096 tx=4096", "rx=4096 tx=4096"));
        assert!(!same_rings("rx=4096 tx=4096", "rx=256 tx=4096"));
        assert!(same_offloads("gro=on", "gro=on gso=on tso=off"));
        assert!(!same_offloads("gro=on tso=on", "gro=on gso=on tso=off"));
        assert!(parse_offloads("gro=maybe").is_err());
    }

    /// Every kernel has lo, which answers the offload commands and has no ring: a read
    /// that runs unprivileged.
    #[test]
    fn lo_has_offloads_and_no_ring() {
        let o = read_offloads("lo").unwrap();
        assert!(o.starts_with("gro="), "{o}");
        assert!(rings("lo").is_err_and(|e| unsupported(&e)));
        assert!(call("x".repeat(20).as_str(), &mut [GRINGPARAM, 0]).is_err());
    }
}
