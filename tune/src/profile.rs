//! Profiles: what each steering mode wants the host to look like, from its
//! [`Tuning`](rxsteer_records::Tuning) (records' `steering.rs`).
//!
//! - RPS on every RX queue (mask of the chosen CPUs), RFS (`rps_flow_cnt` per queue,
//!   `rps_sock_flow_entries`) and XPS on every TX queue where the mode turns them on, else
//!   off (0, an empty mask); then the reference sysctls. `rps` is the reference tune.sh; cpumap
//!   turns all three off.
//! - Interrupt deferral where the mode busy-polls (`busy-poll`): the device's
//!   `napi_defer_hard_irqs` and `gro_flush_timeout`, and each NAPI instance's
//!   `irq-suspend-timeout` (netlink, 6.13); other modes leave them alone.
//! - Threaded NAPI where the mode wants it (`napi-thread`): the interface's `threaded` on and
//!   its NAPI kthreads on the chosen CPUs; other modes leave both alone.
//! - The NIC's and CPUs' own levers (`levers.rs`): the interrupt's CPU where the mode moves
//!   it or `--irq-cpu` names one, rings and coalescing where the mode or `--ring` /
//!   `--coalesce` ask, GRO/GSO/TSO and the governor where the mode is the reference.
//! - A mode with no tuning (`none`) has nothing to apply: the host stays as found.
use std::path::{Path, PathBuf};

use crate::{
    cpus::{cpumask, format_cpu_list},
    irq_suspend,
    knob::Knob,
    sysctl::{self, Scope, REFERENCE, RFS_FLOW_ENTRIES, RPS_SOCK_FLOW_ENTRIES},
};

/// A profile is named by the steering mode it sets up (`none`: nothing to set).
use rxsteer_records::{Mode, Tuning};

pub use crate::setting::{under, ProfileInput, Setting};

/// The device's interrupt deferral for busy polling: `napi_defer_hard_irqs` (empty polls
/// before the interrupt is re-armed) and `gro_flush_timeout` (ns).
pub const IRQ_DEFERRAL: [(&str, &str); 2] = [
    ("napi_defer_hard_irqs", "2"),
    ("gro_flush_timeout", "200000"),
];

/// The queue directories (`rx-0`, `rx-1`, ... or `tx-*`) of the interface, sorted.
pub fn queues(input: &ProfileInput, prefix: &str) -> Vec<String> {
    let dir = under(
        &input.root,
        Path::new(&format!("/sys/class/net/{}/queues", input.iface)),
    );
    let mut q: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .filter(|n| n.starts_with(prefix))
                .collect()
        })
        .unwrap_or_default();
    q.sort_by_key(|n| n[prefix.len()..].parse::<u32>().unwrap_or(u32::MAX));
    q
}

/// A file that exists but cannot be read because what it shows is missing (ENOENT).
fn unreadable(path: &Path) -> bool {
    std::fs::read(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

pub fn profile(p: Mode, input: &ProfileInput) -> Vec<Setting> {
    let Some(tuning) = p.steering().tuning else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if tuning.stack {
        out.extend(queue_settings(&tuning, input));
    }
    out.extend(napi_settings(&tuning, input));
    if tuning.stack {
        out.extend(sysctl_settings(&tuning, input));
    }
    // The governor and the NIC before RPS and the sysctls would be tune.sh's order; here they
    // come last so that a refused ring or offload rolls back nothing else. Either order
    // reaches the same state.
    out.extend(crate::levers::settings(&tuning, input));
    for s in &mut out {
        if s.skipped.is_none() && s.knob == Knob::NapiIrqSuspend {
            // Netlink reaches the running kernel's devices, never a test's tree.
            s.skipped = if input.root != Path::new("/") {
                Some("set over netlink: not in a scratch tree".to_string())
            } else {
                irq_suspend::unsupported(&s.path)
            };
        } else if s.skipped.is_none() && !s.path.exists() {
            s.skipped = Some("not present on this kernel or device".to_string());
        } else if s.skipped.is_none() && unreadable(&s.path) {
            // The file is there but the device does not implement it (lo's xps_cpus: ENOENT
            // on read): nothing to snapshot, nothing to set.
            s.skipped = Some("not supported by this device (reading it fails)".to_string());
        }
    }
    out
}

/// A value of the interface's own, at `rel` under `/sys/class/net/<iface>/`.
pub(crate) fn device_setting(
    input: &ProfileInput,
    rel: &str,
    knob: Knob,
    value: String,
) -> Setting {
    let abs = PathBuf::from(format!("/sys/class/net/{}/{rel}", input.iface));
    Setting {
        name: format!("{} {rel}", input.iface),
        path: under(&input.root, &abs),
        knob,
        value,
        skipped: None,
    }
}

/// RPS, RFS's share and XPS on every queue: the mask of the chosen CPUs where the mode turns
/// them on, else off.
fn queue_settings(tuning: &Tuning, input: &ProfileInput) -> Vec<Setting> {
    let mask_if = |on: bool| cpumask(if on { &input.cpus } else { &[] }, input.nr_cpu_ids);
    let rx = queues(input, "rx-");
    // The kernel's advice: the global flow table divided among the RX queues.
    let flow_cnt = if tuning.rfs {
        (RFS_FLOW_ENTRIES / rx.len().max(1) as u32).min(65536)
    } else {
        0
    };
    // Named without `queues/`, as users know them (`eth0 rx-0/rps_cpus`).
    let file = |q: &str, f: &str, value| Setting {
        name: format!("{} {q}/{f}", input.iface),
        ..device_setting(input, &format!("queues/{q}/{f}"), Knob::File, value)
    };
    let mut out = Vec::new();
    for q in &rx {
        out.push(file(q, "rps_cpus", mask_if(tuning.rps)));
        out.push(file(q, "rps_flow_cnt", flow_cnt.to_string()));
    }
    for q in queues(input, "tx-") {
        out.push(file(&q, "xps_cpus", mask_if(tuning.xps)));
    }
    out
}

/// Threaded NAPI and interrupt deferral, where the mode wants them (else left alone).
fn napi_settings(tuning: &Tuning, input: &ProfileInput) -> Vec<Setting> {
    let mut out = Vec::new();
    if tuning.napi_thread {
        // `threaded` first: turning it on starts the kthreads the next setting pins (and on
        // revert, turning it back off stops them before their CPUs would be restored).
        out.push(device_setting(input, "threaded", Knob::File, "1".into()));
        let cpus = format_cpu_list(&input.cpus);
        out.push(Setting {
            name: format!("{} NAPI kthreads' CPUs", input.iface),
            ..device_setting(input, "threaded", Knob::NapiThreadCpus, cpus)
        });
    }
    if tuning.irq_deferral {
        // The kernel's advice for preferred busy polling (Documentation/networking/napi.rst):
        // a few empty polls before the interrupt comes back, and a timer that reschedules
        // NAPI meanwhile, so an application that keeps polling keeps the interrupt off.
        for (f, value) in IRQ_DEFERRAL {
            out.push(device_setting(input, f, Knob::File, value.to_string()));
        }
        // IRQ suspension (6.13): while the server's preferred busy polls find events, the
        // interrupt stays off this long; the two values above are its safety net.
        out.push(Setting {
            name: format!("{} NAPI irq-suspend-timeout", input.iface),
            ..device_setting(
                input,
                "ifindex",
                Knob::NapiIrqSuspend,
                irq_suspend::WANTED_NS.to_string(),
            )
        });
    }
    out
}

/// RFS's global table and the reference sysctls; global ones are left alone inside a network
/// namespace.
fn sysctl_settings(tuning: &Tuning, input: &ProfileInput) -> Vec<Setting> {
    let rfs = if tuning.rfs { RFS_FLOW_ENTRIES } else { 0 };
    std::iter::once((RPS_SOCK_FLOW_ENTRIES, rfs.to_string(), Scope::Global))
        .chain(REFERENCE.iter().map(|&(n, v, s)| (n, v.to_string(), s)))
        .map(|(name, value, scope)| Setting {
            name: name.to_string(),
            path: under(&input.root, &sysctl::path(name)),
            knob: Knob::File,
            value,
            skipped: (scope == Scope::Global && !input.root_netns)
                .then(|| "global sysctl: left alone inside a network namespace".to_string()),
        })
        .collect()
}
