//! The steering modes, each defined once: its name, and everything the rest of rxsteer does
//! differently for it (the host tuning, the XDP program that steers, the CPUs it takes). The
//! tuning profile, `attach`, the comparison's arms, `install`'s unit and the report's
//! recommendation read a mode's [`Steering`]; none of them matches on the mode itself.
//!
//! A new mode is a variant of [`Mode`] and its entry in [`Mode::steering`] here; if it steers
//! with a program of its own, that program in `ebpf/src/` and its name in
//! `common/src/names.rs` (docs/architecture.md walks through it).
use rxsteer_common::names::program;

use crate::names::names;

names! {
    /// A steering mode: what `attach --steer` puts in place, a comparison's arm, a tuning
    /// profile, what `install` keeps in place.
    Mode, "steering mode" {
        /// Untuned: no tuning written (the host as found, kept tuning included); no XDP
        /// program (the receive tracepoints observe).
        None = "none",
        /// Kernel RPS/RFS/XPS and the reference sysctls; no XDP program (the receive
        /// tracepoints observe).
        Rps = "rps",
        /// RFS alone: each flow's packets to the CPU its reader last ran on; no RPS spreading
        /// of flows nobody reads yet, no XPS.
        Rfs = "rfs",
        /// Threaded NAPI: the interface's receive polling in kernel threads pinned to chosen
        /// CPUs, instead of softirq on whichever CPU took the interrupt; RPS and XPS off.
        NapiThread = "napi-thread",
        /// Busy polling preferred over interrupts: the server polls the receive queue itself
        /// while it waits, the device's interrupt deferred meanwhile.
        BusyPoll = "busy-poll",
        /// RPS/RFS/XPS on a kernel that runs the backlog in threads (booted with
        /// `thread_backlog_napi`): the packets RPS steers are processed in `backlog_napi/N`
        /// kthreads instead of NET_RX softirq. Refused on a kernel booted without it.
        BacklogThreads = "backlog-threads",
        /// RPS whose hash a BPF flow dissector takes per service: each service's flows hash
        /// alike, so each lands on one CPU of RPS's set; XPS on, RFS off.
        RpsDissector = "rps-dissector",
        /// XDP redirect into a BPF cpumap; RPS, RFS and XPS off.
        Cpumap = "cpumap",
        /// The reference tune.sh exactly: rings at their maximum, every CPU's governor
        /// `performance`, GRO/GSO/TSO on, then RPS/RFS/XPS over every CPU and its sysctls.
        Reference = "reference",
        /// Untuned but for the interrupt: the interface's vectors moved to one CPU
        /// (`--irq-cpu`, else the highest-capacity free core).
        IrqAffinity = "irq-affinity",
    }
}

/// What one steering mode is, for everything that acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steering {
    /// The name a reader sees (report, live screen).
    pub label: &'static str,
    /// What it puts in place, in a phrase (the unit's description).
    pub summary: &'static str,
    /// The host tuning it wants; `None`: nothing to apply, the host goes back to the
    /// snapshot (so it is not a `tune` profile).
    pub tuning: Option<Tuning>,
    /// The BPF program that steers, `None` where BPF only observes (if at all). A mode with
    /// one needs a process that holds it (`attach`); one without is a tuning that a oneshot
    /// applies and reverts.
    pub program: Option<Program>,
    /// Which CPUs it takes from the command line (every mode also takes `--irq-cpu`).
    pub cpus: CpuFlags,
    /// What it needs of the place it runs, beyond a kernel rxsteer runs on; where one is
    /// missing the mode is refused with one line saying which (a comparison goes on without
    /// it).
    pub needs: &'static [Need],
    /// What it asks of the server (the comparison starts `rxsteer serve` so).
    pub server: ServerHelp,
}

/// A mode's own BPF program, by its hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Program {
    /// On the interface's XDP hook (cpumap steering).
    Xdp(&'static str),
    /// The network namespace's flow dissector: it shapes the hash RPS picks a CPU by.
    FlowDissector(&'static str),
}

/// What a mode needs the server itself to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerHelp {
    Nothing,
    /// Busy-poll the receive queue for up to this many microseconds per wait, preferred over
    /// interrupts (`serve --busy-poll`).
    BusyPoll {
        usecs: u32,
    },
}

impl ServerHelp {
    /// What it asks of a server, in a phrase (the recommendation says it); `None`: nothing.
    pub fn phrase(self) -> Option<String> {
        match self {
            ServerHelp::Nothing => None,
            ServerHelp::BusyPoll { .. } => Some(
                "a server that busy-polls with the kernel's preference (rxsteer serve \
                 --busy-poll, or EPIOCSPARAMS / io_uring NAPI registration in yours)"
                    .to_string(),
            ),
        }
    }
}

impl Steering {
    /// Whether the mode can be put in place and taken down under a running server and load
    /// (a mask, a sysctl, a program attached): what `compare --interleave` alternates. One that
    /// asks something of the server itself needs the server restarted.
    pub fn switches_in_place(&self) -> bool {
        self.server == ServerHelp::Nothing
    }

    /// Everything keeping the mode in place takes beyond its command, in phrases: what it
    /// needs of the place, and what it asks of the server.
    pub fn needs_said(&self) -> Vec<String> {
        self.needs
            .iter()
            .map(|n| n.phrase())
            .chain(self.server.phrase())
            .collect()
    }
}

/// One thing a mode needs of the place it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// A global sysctl it cannot work without: global sysctls are written only from the
    /// root network namespace, so not in the lab (whose server side is a namespace).
    GlobalSysctl(&'static str),
    /// A kernel at least this version (major, minor), for what it uses.
    Kernel(u32, u32, &'static str),
    /// A kernel that runs the backlog in threads: booted with `thread_backlog_napi` (6.10+),
    /// or PREEMPT_RT. Taken at boot, so nothing at run time can meet it.
    BacklogThreads,
    /// No other user of the flow dissector in the namespace. A BPF flow dissector replaces the
    /// kernel's for every caller in its namespace, and a packet's hash is computed once and
    /// shared: multipath routing, bonding's layer3+4 hash, tc flower and fq/sfq see what it
    /// says too. Its context carries no device or caller to tell them apart by.
    SoleDissector,
}

/// What a flow-dissector arm reaches, in the words install and the report say it (one text).
pub const DISSECTOR_REACH: &str = "its BPF flow dissector serves everything in its network \
    namespace, not RPS alone: multipath routes, bonding's layer3+4 hash, tc flower filters and \
    fq/sfq on a forwarding box see every client of a service as one (docs/steering.md)";

/// The facts about a place that a mode's needs are checked against.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    /// The running kernel (major, minor).
    pub kernel: (u32, u32),
    /// Whether the steering is put in place from the root network namespace.
    pub root_netns: bool,
    /// Whether the kernel runs the backlog in threads (its `backlog_napi/N` kthreads exist).
    pub backlog_threads: bool,
    /// What else in the namespace hashes with the flow dissector, in words (`multipath route
    /// 10.0.0.0/24`, `bond bond0`, `flower filter on eth0`): empty where nothing does, or where
    /// the user accepted the reach (`--accept-dissector-reach`).
    pub dissector_users: Vec<String>,
}

impl Need {
    /// Why this place does not meet it, in words that name what is missing.
    pub fn unmet(self, at: &Place) -> Option<String> {
        match self {
            Need::GlobalSysctl(name) if !at.root_netns => Some(format!(
                "it needs {name}, a global sysctl written only from the root network namespace \
                 (the lab's server side is a namespace of its own); run it with --iface"
            )),
            Need::Kernel(major, minor, what) if at.kernel < (major, minor) => Some(format!(
                "it needs Linux {major}.{minor} or later ({what}); this kernel is {}.{}",
                at.kernel.0, at.kernel.1
            )),
            Need::BacklogThreads if !at.backlog_threads => Some(
                "it needs a kernel booted with thread_backlog_napi (Linux 6.10+; always on \
                 PREEMPT_RT), which runs the backlog in kthreads; this one was booted without \
                 it (no backlog_napi kthread runs)"
                    .to_string(),
            ),
            Need::SoleDissector if !at.dissector_users.is_empty() => Some(format!(
                "it replaces the flow dissector for everything in this network namespace, and \
                 here {} hash with it too (they would see every client of a service as one); \
                 --accept-dissector-reach runs it anyway",
                at.dissector_users.join(", ")
            )),
            Need::GlobalSysctl(_)
            | Need::Kernel(..)
            | Need::BacklogThreads
            | Need::SoleDissector => None,
        }
    }

    /// What it needs, in a phrase (the recommendation says it).
    pub fn phrase(self) -> String {
        match self {
            Need::GlobalSysctl(name) => format!("{name} (set from the root network namespace)"),
            Need::Kernel(major, minor, what) => format!("Linux {major}.{minor}+ ({what})"),
            Need::BacklogThreads => {
                "the kernel booted with thread_backlog_napi (Linux 6.10+)".to_string()
            }
            Need::SoleDissector => "no multipath route, bond or tc flower filter in its \
                                    network namespace (it replaces their flow dissector too)"
                .to_string(),
        }
    }
}

/// What a tuning profile writes, beyond the reference sysctls every profile sets. Off means
/// written off (0, an empty mask), so a profile also undoes what another tool left on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Whether the queues' RPS/RFS/XPS (as the next three say) and the reference sysctls are
    /// written at all. Off (irq-affinity) leaves both as found, so that the arm differs from
    /// untuned by its lever alone.
    pub stack: bool,
    /// RPS: each RX queue's `rps_cpus` is the mask of the chosen CPUs.
    pub rps: bool,
    /// RFS: `rps_sock_flow_entries` and each RX queue's share in `rps_flow_cnt`.
    pub rfs: bool,
    /// XPS: each TX queue's `xps_cpus` is the mask of the chosen CPUs.
    pub xps: bool,
    /// Threaded NAPI: the interface's `threaded` on and its NAPI kthreads pinned to the chosen
    /// CPUs. Off means left alone, not written off: whether a box polls in threads is its
    /// admin's choice (and the lab's stand-in for an interrupt's CPU), not something the other
    /// profiles undo.
    pub napi_thread: bool,
    /// Interrupt deferral for busy polling: the device's `napi_defer_hard_irqs` and
    /// `gro_flush_timeout` set (so the interrupt stays off while the server polls), and from
    /// 6.13 each NAPI instance's `irq-suspend-timeout`. Off means left alone, as `napi_thread`.
    pub irq_deferral: bool,
    /// The reference tuning's NIC and CPU levers (tune.sh steps 1-3): the RX/TX rings at the
    /// driver's maximum, GRO/GSO/TSO on, every CPU's governor `performance`. Off means left
    /// alone (`--ring` and `--coalesce` still set theirs for any mode).
    pub nic_levers: bool,
    /// The interface's interrupt vectors moved to one CPU (`--irq-cpu`, else the
    /// highest-capacity CPU the server and loader leave free). Off means left alone unless
    /// `--irq-cpu` names a CPU, which every mode takes.
    pub irq_move: bool,
}

/// The CPU flags a mode takes (`attach`, `install`, a comparison's attach of the arm).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuFlags {
    /// None: nothing is spread.
    Nothing,
    /// `--cpus L`: the CPUs RPS and XPS may use.
    List,
    /// `--napi-cpu L`: the CPUs the interface's NAPI kthreads may run on.
    NapiCpus,
    /// `--http-cpus`, `--zap-cpus`, `--other-cpus` (cpumap's targets per traffic class) and
    /// `--qsize`; a comparison gives its protocol's flag the lab's steering targets.
    PerClass,
}

/// The reference tuning: RPS, RFS and XPS on. `rps` is it, and `backlog-threads` too (what
/// differs there is the boot, not the tuning).
const RPS_TUNING: Tuning = Tuning {
    stack: true,
    rps: true,
    rfs: true,
    xps: true,
    napi_thread: false,
    irq_deferral: false,
    nic_levers: false,
    irq_move: false,
};

impl Mode {
    /// The mode's definition.
    pub const fn steering(self) -> &'static Steering {
        match self {
            Mode::None => &Steering {
                label: "untuned",
                summary: "nothing (the host as it was found)",
                tuning: None,
                program: None,
                cpus: CpuFlags::Nothing,
                needs: &[],
                server: ServerHelp::Nothing,
            },
            Mode::Rps => &Steering {
                label: "RPS/RFS/XPS",
                summary: "RPS/RFS/XPS and the reference sysctls",
                tuning: Some(RPS_TUNING),
                program: None,
                cpus: CpuFlags::List,
                needs: &[],
                server: ServerHelp::Nothing,
            },
            Mode::Cpumap => &Steering {
                label: "XDP cpumap",
                summary: "XDP cpumap steering (RPS, RFS and XPS off)",
                // With RPS on, packets cpumap already moved would be steered a second time.
                tuning: Some(Tuning {
                    stack: true,
                    rps: false,
                    rfs: false,
                    xps: false,
                    napi_thread: false,
                    irq_deferral: false,
                    nic_levers: false,
                    irq_move: false,
                }),
                program: Some(Program::Xdp(program::STEER)),
                cpus: CpuFlags::PerClass,
                needs: &[],
                server: ServerHelp::Nothing,
            },
            Mode::Rfs => &Steering {
                label: "RFS",
                summary: "RFS alone (each flow to its reader's CPU; RPS and XPS off)",
                // Flows the global table knows go to their reader's CPU; the rest stay where
                // the driver received them (no rps_cpus to spread them over).
                tuning: Some(Tuning {
                    stack: true,
                    rps: false,
                    rfs: true,
                    xps: false,
                    napi_thread: false,
                    irq_deferral: false,
                    nic_levers: false,
                    irq_move: false,
                }),
                program: None,
                cpus: CpuFlags::Nothing,
                needs: &[Need::GlobalSysctl("net.core.rps_sock_flow_entries")],
                server: ServerHelp::Nothing,
            },
            Mode::NapiThread => &Steering {
                label: "NAPI thread",
                summary: "threaded NAPI, its kthreads pinned (RPS and XPS off)",
                // The poll, GRO and the stack's receive run in the pinned kthread, so RPS
                // would only move them a second time.
                tuning: Some(Tuning {
                    stack: true,
                    rps: false,
                    rfs: false,
                    xps: false,
                    napi_thread: true,
                    irq_deferral: false,
                    nic_levers: false,
                    irq_move: false,
                }),
                program: None,
                cpus: CpuFlags::NapiCpus,
                needs: &[Need::Kernel(
                    5,
                    12,
                    "threaded NAPI: /sys/class/net/<iface>/threaded",
                )],
                server: ServerHelp::Nothing,
            },
            Mode::BacklogThreads => &Steering {
                label: "RPS, backlog in threads",
                summary: "RPS/RFS/XPS with the backlog in kthreads (a kernel booted with \
                          thread_backlog_napi)",
                // The same tuning as RPS: what differs is where the kernel runs the packets
                // RPS steers, which only the boot decides.
                tuning: Some(RPS_TUNING),
                program: None,
                cpus: CpuFlags::List,
                needs: &[Need::BacklogThreads],
                server: ServerHelp::Nothing,
            },
            Mode::RpsDissector => &Steering {
                label: "RPS by service",
                summary: "RPS hashed per service by a BPF flow dissector (XPS on, RFS off)",
                // RFS would send each service's one hash to whichever reader ran last.
                tuning: Some(Tuning {
                    stack: true,
                    rps: true,
                    rfs: false,
                    xps: true,
                    napi_thread: false,
                    irq_deferral: false,
                    nic_levers: false,
                    irq_move: false,
                }),
                program: Some(Program::FlowDissector(program::RPS_BY_SERVICE)),
                cpus: CpuFlags::List,
                needs: &[
                    Need::Kernel(
                        6,
                        1,
                        "a flow dissector that hands other packets back to the kernel's \
                         (BPF_FLOW_DISSECTOR_CONTINUE)",
                    ),
                    Need::SoleDissector,
                ],
                server: ServerHelp::Nothing,
            },
            Mode::BusyPoll => &Steering {
                label: "busy poll",
                summary: "busy polling preferred over interrupts, the interrupt deferred \
                          and, from 6.13, suspended while the server finds work (RPS and XPS \
                          off)",
                // The server's thread polls the queue: the poll, GRO and the stack run there,
                // on the server's CPU, while the interrupt stays off.
                tuning: Some(Tuning {
                    stack: true,
                    rps: false,
                    rfs: false,
                    xps: false,
                    napi_thread: false,
                    irq_deferral: true,
                    nic_levers: false,
                    irq_move: false,
                }),
                program: None,
                cpus: CpuFlags::Nothing,
                needs: &[Need::Kernel(
                    6,
                    9,
                    "busy polling set on epoll (EPIOCSPARAMS) and io_uring (NAPI registration)",
                )],
                server: ServerHelp::BusyPoll { usecs: 50 },
            },
            Mode::Reference => &Steering {
                label: "reference tuning",
                summary: "the reference tune.sh: rings at maximum, governor performance, \
                          GRO/GSO/TSO on, RPS/RFS/XPS and its sysctls",
                tuning: Some(Tuning {
                    nic_levers: true,
                    ..RPS_TUNING
                }),
                program: None,
                cpus: CpuFlags::List,
                needs: &[],
                server: ServerHelp::Nothing,
            },
            Mode::IrqAffinity => &Steering {
                label: "IRQ moved",
                summary: "the interface's interrupt moved to one CPU, nothing else tuned",
                // RPS, RFS and XPS stay as found: this arm asks what the interrupt's core
                // alone is worth.
                tuning: Some(Tuning {
                    stack: false,
                    rps: false,
                    rfs: false,
                    xps: false,
                    napi_thread: false,
                    irq_deferral: false,
                    nic_levers: false,
                    irq_move: true,
                }),
                program: None,
                cpus: CpuFlags::Nothing,
                needs: &[],
                server: ServerHelp::Nothing,
            },
        }
    }

    /// Why the mode cannot run at `at` (its first unmet need), if it cannot.
    pub fn refused_at(self, at: &Place) -> Option<String> {
        self.steering().needs.iter().find_map(|n| n.unmet(at))
    }

    /// The name a reader sees (report, live screen).
    pub fn label(self) -> &'static str {
        self.steering().label
    }

    /// Whether an XDP program of the mode's own steers (so XDP is on the interface whatever
    /// the observer).
    pub fn steers_with_xdp(self) -> bool {
        matches!(self.steering().program, Some(Program::Xdp(_)))
    }

    /// Whether a BPF program of the mode's own steers (XDP or a flow dissector): a process
    /// must hold it, and it cannot run without BPF.
    pub fn steers_with_bpf(self) -> bool {
        self.steering().program.is_some()
    }

    /// Whether the receive work the mode moves runs in one thread however many CPUs there
    /// are (threaded NAPI: one kthread per queue), rather than spread over CPUs.
    pub fn receive_in_one_thread(self) -> bool {
        self.steering().tuning.is_some_and(|t| t.napi_thread)
    }

    /// Whether each service's receive work, once moved, sits on one CPU however many RPS
    /// may use (a flow dissector that hashes every flow of a service alike).
    pub fn receive_per_service_on_one_cpu(self) -> bool {
        matches!(self.steering().program, Some(Program::FlowDissector(_)))
    }

    /// The untuned baseline: the host as it was found, what every arm's ratio is taken
    /// against. One name for it, so no reader has to know that `None` means that.
    pub const fn baseline() -> Mode {
        Mode::None
    }

    /// Whether this is the untuned baseline ([`Mode::baseline`]).
    pub fn is_baseline(self) -> bool {
        self == Mode::baseline()
    }

    /// The modes that are tuning profiles (`tune apply --profile`).
    pub fn profiles() -> impl Iterator<Item = Mode> {
        Mode::ALL
            .iter()
            .copied()
            .filter(|m| m.steering().tuning.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFS is refused where its global table cannot be set (a namespace), and a kernel need
    /// names the version.
    #[test]
    fn a_mode_is_refused_where_a_need_is_unmet() {
        let host = Place {
            kernel: (6, 1),
            root_netns: true,
            backlog_threads: false,
            dissector_users: vec![],
        };
        let lab = Place {
            root_netns: false,
            ..host.clone()
        };
        assert_eq!(Mode::Rfs.refused_at(&host), None);
        let why = Mode::Rfs.refused_at(&lab).unwrap();
        assert!(why.contains("net.core.rps_sock_flow_entries"), "{why}");
        for m in [Mode::None, Mode::Rps, Mode::Cpumap] {
            assert_eq!(m.refused_at(&lab), None, "{m}");
        }
        let old = Need::Kernel(6, 9, "EPIOCSPARAMS").unmet(&host).unwrap();
        assert_eq!(
            old,
            "it needs Linux 6.9 or later (EPIOCSPARAMS); this kernel is 6.1"
        );
        assert_eq!(Need::Kernel(6, 1, "x").unmet(&host), None);
        // Backlog threads are the boot's: refused on a kernel booted without them, naming the
        // option; run where its kthreads are.
        let why = Mode::BacklogThreads.refused_at(&host).unwrap();
        assert!(why.contains("thread_backlog_napi"), "{why}");
        let threaded = Place {
            backlog_threads: true,
            ..host.clone()
        };
        assert_eq!(Mode::BacklogThreads.refused_at(&threaded), None);
        assert_eq!(
            Mode::BacklogThreads.steering().needs_said(),
            ["the kernel booted with thread_backlog_napi (Linux 6.10+)"]
        );
        let five = Place {
            kernel: (5, 10),
            ..host.clone()
        };
        let why = Mode::NapiThread.refused_at(&five).unwrap();
        assert!(
            why.starts_with("it needs Linux 5.12 or later (threaded NAPI"),
            "{why}"
        );
        assert_eq!(
            Mode::NapiThread.refused_at(&lab),
            None,
            "the lab can run it"
        );
        // The flow dissector's reach: refused where others hash with it, naming them.
        assert_eq!(Mode::RpsDissector.refused_at(&host), None);
        let shared = Place {
            dissector_users: vec!["multipath route 10.9.0.0/24".into(), "bond bond0".into()],
            ..host.clone()
        };
        let why = Mode::RpsDissector.refused_at(&shared).unwrap();
        assert!(
            why.contains("here multipath route 10.9.0.0/24, bond bond0 hash with it")
                && why.contains("--accept-dissector-reach"),
            "{why}"
        );
        assert_eq!(Mode::Rps.refused_at(&shared), None, "only the dissector");
    }

    /// What keeping a mode takes is said once, from its needs and the help it asks of the
    /// server.
    #[test]
    fn a_modes_needs_and_its_servers_part_are_said_together() {
        let busy = Mode::BusyPoll.steering().needs_said();
        assert_eq!(busy.len(), 2, "{busy:?}");
        assert!(busy[0].starts_with("Linux 6.9+"), "{busy:?}");
        assert!(busy[1].contains("rxsteer serve --busy-poll"), "{busy:?}");
        assert_eq!(
            Mode::NapiThread.steering().needs_said(),
            ["Linux 5.12+ (threaded NAPI: /sys/class/net/<iface>/threaded)"]
        );
        assert!(Mode::Rps.steering().needs_said().is_empty());
    }

    /// Modes are names (`names!`): each round-trips, and an unknown one is refused with the
    /// accepted list.
    #[test]
    fn every_mode_round_trips_and_an_unknown_one_says_what_was_accepted() {
        for m in Mode::ALL {
            assert_eq!(m.as_str().parse::<Mode>(), Ok(*m));
            let json = serde_json::to_string(m).unwrap();
            assert_eq!(json, format!("\"{m}\""));
            assert_eq!(serde_json::from_str::<Mode>(&json).unwrap(), *m);
        }
        let e = "fast".parse::<Mode>().unwrap_err().to_string();
        assert_eq!(
            e,
            "\"fast\" is not a valid steering mode: expected one of none, rps, rfs, napi-thread, busy-poll, backlog-threads, rps-dissector, cpumap, reference, irq-affinity"
        );
    }

    #[test]
    fn every_mode_that_steers_with_xdp_takes_cpu_sets_and_turns_rps_off() {
        for m in Mode::ALL {
            let s = m.steering();
            if m.steers_with_xdp() {
                assert_eq!(s.cpus, CpuFlags::PerClass, "{m}");
                // XDP steering plus RPS would move each packet twice.
                assert!(s.tuning.is_some_and(|t| !t.rps), "{m}");
            }
            if let Some(Program::FlowDissector(_)) = s.program {
                // A dissector shapes RPS's hash: without RPS it would shape nothing.
                assert!(s.tuning.is_some_and(|t| t.rps && !t.rfs), "{m}");
            }
            if s.tuning.is_none() {
                assert_eq!(s.cpus, CpuFlags::Nothing, "{m}: nothing to spread");
            }
        }
        assert_eq!(
            Mode::profiles().collect::<Vec<_>>(),
            [
                Mode::Rps,
                Mode::Rfs,
                Mode::NapiThread,
                Mode::BusyPoll,
                Mode::BacklogThreads,
                Mode::RpsDissector,
                Mode::Cpumap,
                Mode::Reference,
                Mode::IrqAffinity
            ]
        );
    }

    /// The reference is RPS with the NIC's levers; irq-affinity writes nothing but the
    /// interrupt's CPUs (no masks, no sysctls), so it differs from untuned by that alone.
    #[test]
    fn the_reference_adds_the_levers_and_irq_affinity_only_moves_the_interrupt() {
        let reference = Mode::Reference.steering().tuning.unwrap();
        assert_eq!(
            Tuning {
                nic_levers: false,
                ..reference
            },
            RPS_TUNING
        );
        let irq = Mode::IrqAffinity.steering().tuning.unwrap();
        assert!(irq.irq_move && !irq.stack && !irq.nic_levers);
        for m in Mode::ALL.iter().filter(|m| **m != Mode::IrqAffinity) {
            assert!(
                m.steering().tuning.is_none_or(|t| t.stack && !t.irq_move),
                "{m}"
            );
        }
    }
}
