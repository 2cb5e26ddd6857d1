//! The one queue's own levers as tuning settings: which CPU takes the interface's interrupt,
//! its ring sizes and coalescing, GRO/GSO/TSO, and each CPU's frequency governor.
//!
//! Each is a setting like any other (snapshot, write, revert byte for byte, crash restore).
//! Where the device or the machine has no such lever (a veth has no ring and no interrupt, a
//! VM no cpufreq, a driver refuses `ethtool -C`), the setting is skipped with its reason, one
//! line in the plan, and the rest goes on: never a silent zero.
use std::path::{Path, PathBuf};

use rxsteer_records::Tuning;

use crate::{
    cpus::format_cpu_list,
    ethtool, irq,
    knob::Knob,
    setting::{under, ProfileInput, Setting},
};

pub use crate::setting::{Asked, Ring};

/// Why NIC knobs are not sought in a test's tree: the ioctl reaches the running kernel's
/// devices, and a scratch name could be a real one.
const NOT_IN_SCRATCH: &str = "set over the ethtool ioctl: not in a scratch tree";

/// The CPU a mode that moves the interrupt takes when none is named, with the reason: the
/// pick with nobody known to be busy (a comparison names its own, knowing the server's and
/// the loader's CPUs). None for a mode that leaves the interrupt where it is. The one place
/// both the settings and the line that tells the user decide it.
pub fn unnamed_irq_cpu(tuning: &Tuning, root: &Path, cpus: &[u32]) -> Option<(u32, String)> {
    if !tuning.irq_move {
        return None;
    }
    let info = crate::topology::read(&under(root, Path::new("/sys")), cpus);
    irq::pick_cpu(&info, &[])
}

pub fn settings(tuning: &Tuning, input: &ProfileInput) -> Vec<Setting> {
    let mut out = Vec::new();
    let irq_cpus = input
        .levers
        .irq_cpus
        .clone()
        .or_else(|| unnamed_irq_cpu(tuning, &input.root, &input.cpus).map(|(c, _)| vec![c]));
    if let Some(cpus) = &irq_cpus {
        out.extend(interrupt_settings(input, cpus));
    }
    let ring = input.levers.ring.or(tuning.nic_levers.then_some(Ring::Max));
    if let Some(ring) = ring {
        out.push(ring_setting(input, ring));
    }
    if let Some(c) = &input.levers.coalesce {
        out.push(nic_setting(input, "coalescing", Knob::Coalesce, c.clone()));
    }
    if tuning.nic_levers {
        out.extend(offload_settings(input));
        out.extend(governor_settings(input));
    }
    for s in &mut out {
        if s.skipped.is_none() && matches!(s.knob, Knob::Ring | Knob::Coalesce | Knob::Offloads) {
            s.skipped = nic_skip(input, s);
        }
    }
    out
}

/// The interface's own directory: the path of its NIC knobs.
fn nic_dir(input: &ProfileInput) -> PathBuf {
    under(
        &input.root,
        Path::new(&format!("/sys/class/net/{}", input.iface)),
    )
}

fn nic_setting(input: &ProfileInput, what: &str, knob: Knob, value: String) -> Setting {
    Setting {
        name: format!("{} {what}", input.iface),
        path: nic_dir(input),
        knob,
        value,
        skipped: None,
    }
}

/// Why a NIC knob is skipped here, if it is: a scratch tree, or a driver without it.
fn nic_skip(input: &ProfileInput, s: &Setting) -> Option<String> {
    if input.root != Path::new("/") {
        return Some(NOT_IN_SCRATCH.into());
    }
    match s.knob.read(&s.path) {
        Err(e) if ethtool::unsupported(&e) => Some(format!(
            "the driver has no such setting ({e}): not applicable here"
        )),
        Err(e) => Some(format!("reading it failed: {e}")),
        Ok(_) => None,
    }
}

/// Each vector to `cpus`; one skipped line where the device has none or one cannot move.
fn interrupt_settings(input: &ProfileInput, cpus: &[u32]) -> Vec<Setting> {
    let vectors = irq::vectors(&input.root, &input.iface);
    if vectors.is_empty() {
        return vec![Setting {
            name: format!("{} interrupt's CPUs", input.iface),
            path: under(&input.root, Path::new("/proc/irq")),
            knob: Knob::File,
            value: format_cpu_list(cpus),
            skipped: Some(
                "the device has no interrupt of its own (a veth, or a virtual device): not \
                 applicable here"
                    .into(),
            ),
        }];
    }
    vectors
        .into_iter()
        .map(|v| Setting {
            name: format!("{} IRQ {v}'s CPUs", input.iface),
            path: irq::affinity_path(&input.root, v),
            knob: Knob::File,
            value: format_cpu_list(cpus),
            skipped: irq::unmovable(&input.root, v),
        })
        .collect()
}

/// The rings at the driver's maximum (TX as it is where the driver gives no TX maximum) or
/// at the size asked.
fn ring_setting(input: &ProfileInput, ring: Ring) -> Setting {
    let value = match ring {
        Ring::Size(n) => format!("rx={n} tx={n}"),
        Ring::Max if input.root != Path::new("/") => "rx=max tx=max".into(),
        Ring::Max => match ethtool::rings(&input.iface) {
            Ok(r) if r.tx_max > 0 => format!("rx={} tx={}", r.rx_max, r.tx_max),
            Ok(r) => format!("rx={}", r.rx_max),
            // Said by the skip check, which reads it again.
            Err(_) => "rx=max tx=max".into(),
        },
    };
    nic_setting(input, "rings", Knob::Ring, value)
}

/// GRO, GSO and TSO on: those the driver lets change in one setting; one skipped line for
/// each it holds fixed off.
fn offload_settings(input: &ProfileInput) -> Vec<Setting> {
    let all = || {
        ethtool::OFFLOADS
            .iter()
            .map(|o| format!("{}=on", o.name))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if input.root != Path::new("/") {
        return vec![nic_setting(input, "offloads", Knob::Offloads, all())];
    }
    let (Ok(changeable), Ok(current)) = (
        ethtool::changeable_offloads(&input.iface),
        ethtool::read_offloads(&input.iface),
    ) else {
        // The skip check reads it again and says why.
        return vec![nic_setting(input, "offloads", Knob::Offloads, all())];
    };
    let mut out = Vec::new();
    let mut wanted = Vec::new();
    for o in &ethtool::OFFLOADS {
        let on = current
            .split_whitespace()
            .any(|f| f == format!("{}=on", o.name));
        if changeable.contains(&o.name) {
            wanted.push(format!("{}=on", o.name));
        } else if !on {
            out.push(Setting {
                skipped: Some("the driver holds it off (not among its changeable features)".into()),
                ..nic_setting(input, o.name, Knob::Offloads, format!("{}=on", o.name))
            });
        }
    }
    if !wanted.is_empty() {
        out.insert(
            0,
            nic_setting(input, "offloads", Knob::Offloads, wanted.join(" ")),
        );
    }
    out
}

/// Every chosen CPU's governor `performance`; global, so only from the root namespace.
fn governor_settings(input: &ProfileInput) -> Vec<Setting> {
    input
        .cpus
        .iter()
        .map(|c| {
            let dir = under(
                &input.root,
                Path::new(&format!("/sys/devices/system/cpu/cpu{c}/cpufreq")),
            );
            let available = std::fs::read_to_string(dir.join("scaling_available_governors"));
            let skipped = if !input.root_netns {
                Some("a CPU's governor is global: left alone inside a network namespace".into())
            } else if !dir.exists() {
                Some("no cpufreq on this CPU (a VM, or the firmware sets the clock)".into())
            } else if available.is_ok_and(|a| !a.split_whitespace().any(|g| g == "performance")) {
                Some("its cpufreq driver has no performance governor".into())
            } else {
                None
            };
            Setting {
                name: format!("cpu{c} governor"),
                path: dir.join("scaling_governor"),
                knob: Knob::File,
                value: "performance".into(),
                skipped,
            }
        })
        .collect()
}

/// Every lever of `iface` as it reads now (`cpus`: whose governors), each one that cannot be
/// read said in `missing` with why. Reads only: ioctls, /proc/irq and cpufreq's files.
pub fn read(iface: &str, cpus: &[u32]) -> rxsteer_records::levers::LeversRead {
    use rxsteer_records::levers::{IrqRead, LeversRead};
    let mut out = LeversRead::default();
    let why = |e: std::io::Error| match ethtool::unsupported(&e) {
        true => format!("the driver has none ({e})"),
        false => format!("unreadable ({e})"),
    };
    match ethtool::rings(iface) {
        Ok(r) => {
            out.rings = Some(format!("rx={} tx={}", r.rx, r.tx));
            out.rings_max = Some(format!("rx={} tx={}", r.rx_max, r.tx_max));
        }
        Err(e) => out.missing.push(format!("rings: {}", why(e))),
    }
    match ethtool::read_coalesce(iface) {
        Ok(c) => out.coalesce = Some(c),
        Err(e) => out.missing.push(format!("coalescing: {}", why(e))),
    }
    match ethtool::read_offloads(iface) {
        Ok(o) => out.offloads = Some(o),
        Err(e) => out.missing.push(format!("offloads: {}", why(e))),
    }
    let root = Path::new("/");
    out.irqs = irq::vectors(root, iface)
        .into_iter()
        .filter_map(|n| {
            let cpus = std::fs::read_to_string(irq::affinity_path(root, n)).ok()?;
            Some(IrqRead {
                irq: n,
                cpus: cpus.trim().to_string(),
                effective: irq::effective(root, n).map(|c| format_cpu_list(&c)),
            })
        })
        .collect();
    if out.irqs.is_empty() {
        out.missing
            .push("interrupts: the device has no interrupt of its own".into());
    }
    for &c in cpus {
        let p = format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor");
        if let Ok(g) = std::fs::read_to_string(p) {
            out.governors.insert(c, g.trim().to_string());
        }
    }
    if out.governors.is_empty() {
        out.missing
            .push("governors: no cpufreq (a VM, or the firmware sets the clock)".into());
    }
    out
}

/// Whether a setting is one of these levers (its skip is said in attach's output: a place
/// without the lever, not a profile's choice).
pub fn is_lever(knob: Knob, path: &Path) -> bool {
    matches!(knob, Knob::Ring | Knob::Coalesce | Knob::Offloads)
        || path.starts_with(Path::new("/proc/irq"))
        || path.ends_with("scaling_governor")
}

/// The interrupt vectors the settings move (those not skipped).
pub fn moved_vectors(settings: &[Setting]) -> Vec<u32> {
    settings
        .iter()
        .filter(|s| s.skipped.is_none() && s.path.ends_with("smp_affinity_list"))
        .filter_map(|s| s.path.parent()?.file_name()?.to_str()?.parse().ok())
        .collect()
}
