//! The only place programs are loaded, attached and detached. Detach is RAII: XDP goes through
//! a bpf_link where the kernel has it, so even a SIGKILLed rxsteer leaves nothing attached
//! once its file descriptors close.
use anyhow::{anyhow, bail, Context, Result};
use aya::{
    maps::{Array, CpuMap, MapData, PerCpuArray},
    programs::{
        tc::{NlOptions, TcAttachOptions},
        FlowDissector, LinkOrder, RawTracePoint, SchedClassifier, TcAttachType, Xdp,
        XdpMode as AyaXdpMode,
    },
    Ebpf, EbpfLoader,
};
use rxsteer_common::{
    DriverWatch, RxStats, SoftirqStats, SteerConfig, XdpTraceStats, MAX_STEER_CPUS,
    PORT_CLASS_ENTRIES, PORT_HTTP, PORT_NONE, PORT_ZAP, STEER_HTTP, STEER_OTHER, STEER_ZAP,
};
use rxsteer_records::bpf_cost::ProgramRuns;
use rxsteer_tune::cpus::format_cpu_list;

/// The kernel programs, built by `cargo xtask build-ebpf` and embedded at compile time (empty
/// when the object was missing then: see build.rs).
pub static EBPF_OBJECT: &[u8] = aya::include_bytes_aligned!(env!("RXSTEER_EBPF_OBJ"));

/// The hash of the sources `EBPF_OBJECT` was built from (build.rs): which program this
/// binary loads, kept in every run.json.
pub const EBPF_SOURCES: &str = env!("RXSTEER_EBPF_SOURCES");

pub use rxsteer_common::names::program::{
    DRIVER_TRACEPOINTS, FRAGS_SUFFIX, LAB_UNHASH, ON_CPU, RPS_BY_SERVICE, RX_ACCOUNT,
    SOFTIRQ_RAISE, SOFTIRQ_TRACEPOINTS, STEER, TC_EGRESS, TC_INGRESS, XDP_PASS, XDP_TRACEPOINTS,
};
use rxsteer_common::names::{map, program, program::FRAGS as FRAGS_PROGRAMS};

/// Largest cpumap queue the kernel accepts.
pub const MAX_QSIZE: u32 = 16384;

/// Every program of the object, as the kernel names them (BPF_OBJ_NAME_LEN: 15 characters):
/// what a check that "no rxsteer program is loaded" looks for.
pub fn program_names() -> Vec<String> {
    rxsteer_common::names::program::all()
        .map(|n| n.chars().take(15).collect())
        .collect()
}

/// Which TCP ports are which service.
#[derive(Clone, Debug)]
pub struct PortConfig {
    pub http: Vec<u16>,
    pub zap: Vec<u16>,
}

impl PortConfig {
    /// The `PORT_CLASS` table the kernel programs read: one byte per TCP port.
    pub fn class_table(&self) -> Box<[u8; PORT_CLASS_ENTRIES]> {
        let mut t = Box::new([PORT_NONE; PORT_CLASS_ENTRIES]);
        for &p in &self.http {
            t[p as usize] = PORT_HTTP;
        }
        for &p in &self.zap {
            t[p as usize] = PORT_ZAP;
        }
        t
    }
}

impl Default for PortConfig {
    fn default() -> Self {
        Self {
            http: vec![8080],
            zap: vec![9653],
        }
    }
}

/// Which CPUs the steering program spreads each kind of traffic over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SteerSets {
    pub http: Vec<u32>,
    pub zap: Vec<u32>,
    /// Other TCP and IP traffic; empty = leave it on the receiving CPU.
    pub other: Vec<u32>,
}

/// One of the steering sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteerSet {
    Http,
    Zap,
    Other,
}

impl SteerSet {
    /// How the set reads in a sentence ("the HTTP set").
    pub fn words(self) -> &'static str {
        match self {
            SteerSet::Http => "the HTTP set",
            SteerSet::Zap => "the ZAP set",
            SteerSet::Other => "the set for other traffic",
        }
    }
}

/// What is wrong with steering sets; [`SetError::describe`] names the sets as a caller calls
/// them (the command line: its flags), `Display` in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SetError {
    NotOnline {
        set: SteerSet,
        cpu: u32,
        online: Vec<u32>,
    },
    TooMany {
        set: SteerSet,
        n: usize,
    },
    InBoth {
        cpu: u32,
    },
    Empty,
}

impl SetError {
    pub fn describe(&self, name: impl Fn(SteerSet) -> &'static str) -> String {
        match self {
            SetError::NotOnline { set, cpu, online } => format!(
                "CPU {cpu} in {} is not online on this machine (online: {})",
                name(*set),
                format_cpu_list(online)
            ),
            SetError::TooMany { set, n } => {
                format!("{} names {n} CPUs; at most {MAX_STEER_CPUS}", name(*set))
            }
            SetError::InBoth { cpu } => format!(
                "CPU {cpu} is in both {} and {}: give each service its own CPUs",
                name(SteerSet::Http),
                name(SteerSet::Zap)
            ),
            SetError::Empty => "every steering set is empty: nothing would be steered".into(),
        }
    }
}

impl std::fmt::Display for SetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe(SteerSet::words))
    }
}

impl std::error::Error for SetError {}

impl SteerSets {
    /// The CPUs of one set.
    pub fn set(&self, s: SteerSet) -> &[u32] {
        match s {
            SteerSet::Http => &self.http,
            SteerSet::Zap => &self.zap,
            SteerSet::Other => &self.other,
        }
    }

    /// Every set within the online CPUs and the size limit; HTTP and ZAP sets disjoint; at
    /// least one set non-empty.
    pub fn validate(&self, online: &[u32]) -> Result<(), SetError> {
        for (set, cpus) in [
            (SteerSet::Http, &self.http),
            (SteerSet::Zap, &self.zap),
            (SteerSet::Other, &self.other),
        ] {
            if let Some(&cpu) = cpus.iter().find(|c| !online.contains(c)) {
                let online = online.to_vec();
                return Err(SetError::NotOnline { set, cpu, online });
            }
            if cpus.len() > MAX_STEER_CPUS {
                return Err(SetError::TooMany { set, n: cpus.len() });
            }
        }
        if let Some(&cpu) = self.http.iter().find(|c| self.zap.contains(c)) {
            return Err(SetError::InBoth { cpu });
        }
        if self.http.is_empty() && self.zap.is_empty() && self.other.is_empty() {
            return Err(SetError::Empty);
        }
        Ok(())
    }

    /// The read-only global the steering program reads.
    pub fn config(&self) -> Box<SteerConfig> {
        let mut c = Box::new(SteerConfig::EMPTY);
        for (i, set) in [
            (STEER_HTTP, &self.http),
            (STEER_ZAP, &self.zap),
            (STEER_OTHER, &self.other),
        ] {
            c.len[i] = set.len() as u32;
            c.cpus[i][..set.len()].copy_from_slice(set);
        }
        c
    }

    /// Every CPU any set names: each needs a cpumap entry.
    pub fn all_cpus(&self) -> Vec<u32> {
        let mut all: Vec<u32> = self
            .http
            .iter()
            .chain(&self.zap)
            .chain(&self.other)
            .copied()
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Highest possible CPU id + 1: the largest cpumap the kernel accepts.
pub fn nr_cpu_ids() -> Result<u32> {
    Ok(rxsteer_tune::cpus::nr_cpu_ids_under(std::path::Path::new(
        "/",
    ))?)
}

/// The running kernel's (major, minor), as aya reads it (the distribution's own version where
/// `uname` shows a different one, as on Ubuntu).
pub fn kernel_version() -> Result<(u32, u32)> {
    let code = aya::util::KernelVersion::current()
        .map_err(|e| anyhow!("reading the kernel's version: {e}"))?
        .code();
    Ok((code >> 16, (code >> 8) & 0xff))
}

/// Refuses, before anything changes, a tc attachment this kernel cannot do.
pub fn check_tc(choice: TcChoice) -> Result<()> {
    let tcx = kernel_version().is_ok_and(|v| v >= (6, 6));
    if choice == TcChoice::Tcx && !tcx {
        bail!("this kernel has no TCX (it needs Linux 6.6 or later); a clsact qdisc of rxsteer's own works on it");
    }
    Ok(())
}

pub use rxsteer_records::{
    FragsChoice, ObserveLevel, ObserverChoice, TcAttached, TcChoice, XdpMode, XdpModeChoice,
};

pub struct Dataplane {
    ebpf: Ebpf,
    /// The clsact qdisc the tc programs hang on, when they are not TCX links. Declared after
    /// `ebpf`, so the filters go first, then the qdisc.
    clsact: Option<crate::clsact::ClsactGuard>,
    /// The kernel programs' log records (aya-log), until the sampler takes them.
    logs: Option<aya_log::EbpfLogger<&'static dyn log::Log>>,
    /// Why the frags-aware programs did not load (None: they did).
    frags_refused: Option<String>,
}

/// True when an error comes from a missing bpf(2) (ENOSYS) rather than a refused program.
fn no_bpf_syscall(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.raw_os_error() == Some(libc::ENOSYS))
    })
}

impl Dataplane {
    /// Loads every program into the kernel (nothing attached yet), no steering sets.
    pub fn load(ports: &PortConfig) -> Result<Self> {
        Self::load_with(ports, &SteerSets::default())
    }

    /// Loads every program with the port classes and steering sets baked into their
    /// read-only data, and the cpumap sized to this machine's possible CPUs.
    pub fn load_with(ports: &PortConfig, steer: &SteerSets) -> Result<Self> {
        if EBPF_OBJECT.is_empty() {
            bail!(
                "this rxsteer was built without its kernel programs (the eBPF object was missing \
                 at build time): `cargo xtask build` builds them and rxsteer; rxsteer serve, \
                 report and rxload work without them"
            );
        }
        let classes = ports.class_table();
        let steer_cfg = steer.config();
        let mut ebpf = EbpfLoader::new()
            .override_global(map::PORT_CLASS, &*classes, true)
            .override_global(map::STEER, &*steer_cfg, true)
            .map_max_entries(map::CPUMAP, nr_cpu_ids()?)
            .map_max_entries(map::CPUMAP_FRAGS, nr_cpu_ids()?)
            .load(EBPF_OBJECT)
            .map_err(|e| {
                let e = anyhow::Error::from(e);
                if no_bpf_syscall(&e) {
                    e.context(
                        "the bpf(2) system call is not available here (ENOSYS): an emulator such \
                         as qemu-user, or a kernel built without BPF. rxsteer's kernel side needs \
                         a Linux kernel with BPF; rxsteer serve and rxload run without it",
                    )
                } else {
                    e.context("loading the eBPF object into the kernel")
                }
            })?;
        for name in program::XDP {
            xdp_mut(&mut ebpf, name)?
                .load()
                .with_context(|| format!("verifying XDP program {name}"))?;
        }
        // Kernels before 5.18 refuse BPF_F_XDP_HAS_FRAGS: the plain programs then serve.
        let mut frags_refused = None;
        for name in FRAGS_PROGRAMS {
            if let Err(e) = xdp_mut(&mut ebpf, name)?.load() {
                frags_refused = Some(format!("this kernel refused {name} (xdp.frags): {e}"));
                break;
            }
        }
        for name in [TC_INGRESS, TC_EGRESS] {
            classifier_mut(&mut ebpf, name)?
                .load()
                .with_context(|| format!("verifying tc program {name}"))?;
        }
        // Without the ring (an object built without aya-log) the programs simply log nothing.
        let logs = aya_log::EbpfLogger::init(&mut ebpf).ok();
        let driver = DRIVER_TRACEPOINTS.iter().map(|(p, _)| p);
        for name in SOFTIRQ_TRACEPOINTS
            .iter()
            .chain(&[SOFTIRQ_RAISE])
            .chain(&XDP_TRACEPOINTS)
            .chain(driver)
        {
            raw_tp_mut(&mut ebpf, name)?
                .load()
                .with_context(|| format!("verifying tracepoint program {name}"))?;
        }
        Ok(Self {
            ebpf,
            clsact: None,
            logs,
            frags_refused,
        })
    }

    /// Whether the frags-aware programs are used under `choice`; `On` on a kernel that
    /// refused them is an error naming it.
    pub fn use_frags(&self, choice: FragsChoice) -> Result<bool> {
        match (choice, &self.frags_refused) {
            (FragsChoice::Off, _) => Ok(false),
            (_, None) => Ok(true),
            (FragsChoice::Auto, Some(_)) => Ok(false),
            (FragsChoice::On, Some(why)) => bail!("the frags-aware programs are required: {why}"),
        }
    }

    /// Attaches the tc witnesses `level` watches with (tc_ingress; tc_egress too at full) to
    /// `iface` as `choice` says. TCX links detach when the Dataplane drops, or when a killed
    /// rxsteer's descriptors close; a clsact qdisc is deleted by its guard, or after a crash
    /// by the next start (see `clsact`). Under auto a failure is a reason, not an error,
    /// because tc only witnesses.
    pub fn attach_tc(
        &mut self,
        iface: &str,
        choice: TcChoice,
        level: ObserveLevel,
    ) -> Result<TcAttached> {
        if !level.counts_stack() {
            return Ok(TcAttached::Unavailable(format!(
                "no tc witnesses at --observe {level}"
            )));
        }
        let hooks: &[_] = if level.counts_tx() {
            &[
                (TC_INGRESS, TcAttachType::Ingress),
                (TC_EGRESS, TcAttachType::Egress),
            ]
        } else {
            &[(TC_INGRESS, TcAttachType::Ingress)]
        };
        let tcx = |dp: &mut Self| {
            dp.attach_tc_as(iface, hooks, || {
                TcAttachOptions::TcxOrder(LinkOrder::default())
            })
        };
        match choice {
            TcChoice::Off => Ok(TcAttached::Unavailable(
                "tc accounting off, as asked".into(),
            )),
            TcChoice::Tcx => tcx(self).map(|_| TcAttached::Tcx),
            TcChoice::Clsact => self.attach_clsact(iface, hooks).map(|_| TcAttached::Clsact),
            TcChoice::Auto => match tcx(self) {
                Ok(()) => Ok(TcAttached::Tcx),
                Err(t) => match self.attach_clsact(iface, hooks) {
                    Ok(()) => Ok(TcAttached::Clsact),
                    Err(c) => Ok(TcAttached::Unavailable(format!(
                        "tc accounting off: no TCX ({t:#}) and no clsact qdisc of our own ({c:#})"
                    ))),
                },
            },
        }
    }

    fn attach_clsact(&mut self, iface: &str, hooks: &[(&str, TcAttachType)]) -> Result<()> {
        let guard = crate::clsact::ClsactGuard::add(iface)?;
        self.attach_tc_as(iface, hooks, || {
            TcAttachOptions::Netlink(NlOptions::default())
        })?;
        self.clsact = Some(guard);
        Ok(())
    }

    fn attach_tc_as(
        &mut self,
        iface: &str,
        hooks: &[(&str, TcAttachType)],
        how: impl Fn() -> TcAttachOptions,
    ) -> Result<()> {
        for &(name, hook) in hooks {
            classifier_mut(&mut self.ebpf, name)?
                .attach_with_options(iface, hook, how())
                .with_context(|| format!("attaching {name} to {iface}"))?;
        }
        Ok(())
    }

    /// Attaches the softirq and xdp:* tracepoint programs.
    pub fn attach_tracepoints(&mut self) -> Result<()> {
        for name in SOFTIRQ_TRACEPOINTS.iter().chain(&XDP_TRACEPOINTS) {
            raw_tp_mut(&mut self.ebpf, name)?
                .attach(name)
                .map_err(|e| {
                    anyhow!("this kernel has no usable tracepoint {name} (attach failed: {e})")
                })?;
        }
        Ok(())
    }

    /// NET_RX's wait histogram (raise to entry): the `softirq_raise` tracepoint, which runs on
    /// every raise of any vector, so only `--observe full` pays for it.
    pub fn attach_softirq_raise(&mut self) -> Result<()> {
        raw_tp_mut(&mut self.ebpf, SOFTIRQ_RAISE)?
            .attach(SOFTIRQ_RAISE)
            .map_err(|e| {
                anyhow!("this kernel has no usable tracepoint {SOFTIRQ_RAISE} (attach failed: {e})")
            })?;
        Ok(())
    }

    /// Counts where the driver received on `iface` with the receive tracepoints: the skb
    /// layout from the kernel's BTF, the interface's index, then every tracepoint. A
    /// tracepoint this kernel lacks is an error naming it; whatever attached before it
    /// detaches when the Dataplane drops.
    pub fn attach_driver_tracepoints(&mut self, iface: &str) -> Result<()> {
        let btf = crate::btf::Btf::of_kernel()?;
        let watch = DriverWatch {
            ifindex: ifindex(iface)?,
            netns_inum: netns_inum()?,
            napi_dev: btf.member_offset("napi_struct", "dev")?,
            skb_dev: btf.member_offset("sk_buff", "dev")?,
            dev_ifindex: btf.member_offset("net_device", "ifindex")?,
            dev_nd_net: btf.member_offset("net_device", "nd_net")?,
            net_ns_inum: btf.member_offset("net", "ns")?
                + btf.member_offset("ns_common", "inum")?,
            _pad: 0,
        };
        let map = self
            .ebpf
            .map_mut(map::DRIVER_WATCH)
            .ok_or_else(|| anyhow!("map DRIVER_WATCH missing"))?;
        Array::<_, DriverWatch>::try_from(map)?.set(0, watch, 0)?;
        let mut attached = Vec::new();
        for (name, tracepoint) in DRIVER_TRACEPOINTS {
            match raw_tp_mut(&mut self.ebpf, name)?.attach(tracepoint) {
                Ok(link) => attached.push((name, link)),
                Err(e) => {
                    // Nothing half-attached stays: a fallback observer must not count twice.
                    for (name, link) in attached {
                        raw_tp_mut(&mut self.ebpf, name)?.detach(link)?;
                    }
                    bail!("this kernel has no usable receive tracepoint {tracepoint} (attach failed: {e})");
                }
            }
        }
        Ok(())
    }

    /// Creates a cpumap entry (a `qsize`-frame ring and its kthread, running `on_cpu`) for
    /// every CPU of `steer`. Call before attaching the steering program.
    pub fn fill_cpumap(&mut self, steer: &SteerSets, qsize: u32, frags: bool) -> Result<()> {
        if qsize == 0 || qsize > MAX_QSIZE {
            bail!("a cpumap ring of {qsize} frames is out of range (1-{MAX_QSIZE})");
        }
        let on_cpu = xdp_mut(&mut self.ebpf, &program_name(ON_CPU, frags))?
            .fd()?
            .try_clone()?;
        let name = if frags {
            map::CPUMAP_FRAGS
        } else {
            map::CPUMAP
        };
        let map = self
            .ebpf
            .map_mut(name)
            .ok_or_else(|| anyhow!("map {name} missing"))?;
        let mut cpumap: CpuMap<_> = CpuMap::try_from(map)?;
        for cpu in steer.all_cpus() {
            cpumap.set(cpu, qsize, Some(&on_cpu), 0).with_context(|| {
                format!("creating the cpumap entry for CPU {cpu} (qsize {qsize})")
            })?;
        }
        Ok(())
    }

    /// Attaches XDP program `program` (its frags-aware twin with `frags`) to `iface` in the
    /// requested mode.
    pub fn attach_xdp(
        &mut self,
        program: &str,
        frags: bool,
        iface: &str,
        choice: XdpModeChoice,
    ) -> Result<XdpMode> {
        let name = program_name(program, frags);
        let program = name.as_str();
        let prog = xdp_mut(&mut self.ebpf, program)?;
        let attach = |prog: &mut Xdp, mode: XdpMode| {
            let flags = match mode {
                XdpMode::Drv => AyaXdpMode::Driver,
                XdpMode::Skb => AyaXdpMode::Skb,
            };
            prog.attach(iface, flags)
                .with_context(|| format!("attaching {program} to {iface} in {mode} mode"))
        };
        match choice {
            XdpModeChoice::Drv => attach(prog, XdpMode::Drv)
                .map(|_| XdpMode::Drv)
                .map_err(|e| {
                    e.context(format!("{iface} has no native (driver) XDP for {program}"))
                }),
            XdpModeChoice::Skb => attach(prog, XdpMode::Skb).map(|_| XdpMode::Skb),
            XdpModeChoice::Auto => match attach(prog, XdpMode::Drv) {
                Ok(_) => Ok(XdpMode::Drv),
                Err(drv) => attach(prog, XdpMode::Skb)
                    .map(|_| XdpMode::Skb)
                    .map_err(|skb| anyhow!("{drv:#}; and then {skb:#}")),
            },
        }
    }

    /// The mode `choice` will attach in on `iface`: auto tries driver mode with the empty
    /// program (attached and detached at once: a trial, as xdp-tools do without netlink
    /// xdp-features), so what depends on the mode can be decided before anything changes.
    pub fn resolve_xdp_mode(&mut self, iface: &str, choice: XdpModeChoice) -> Result<XdpMode> {
        if choice == XdpModeChoice::Skb {
            return Ok(XdpMode::Skb);
        }
        // A trial attach of a pass-all program in driver mode: auto learns what works, and drv
        // is refused here, before anything is tuned or attached (a driver without native XDP,
        // such as e1000 or r8169, answers EOPNOTSUPP).
        let prog = xdp_mut(&mut self.ebpf, XDP_PASS)?;
        match (prog.attach(iface, AyaXdpMode::Driver), choice) {
            (Ok(link), _) => {
                prog.detach(link)?;
                Ok(XdpMode::Drv)
            }
            (Err(_), XdpModeChoice::Auto) => Ok(XdpMode::Skb),
            // The kernel's reason (EOPNOTSUPP) is the source: kept in the one line.
            (Err(e), _) => Err(anyhow::Error::from(e).context(format!(
                "{iface} has no native (driver) XDP: attaching in drv mode failed"
            ))),
        }
    }

    /// An XDP program, for BPF_PROG_TEST_RUN.
    pub fn xdp(&mut self, name: &str) -> Result<&mut Xdp> {
        xdp_mut(&mut self.ebpf, name)
    }

    /// Attaches flow dissector `name` (a steering mode's, rps-dissector's) to the calling
    /// thread's network namespace, for as long as this Dataplane lives (a bpf_link: a killed rxsteer leaves
    /// nothing behind once its descriptors close). In the root namespace it dissects for
    /// every namespace of the box (the kernel asks the root's first).
    pub fn attach_flow_dissector(&mut self, name: &str) -> Result<()> {
        let netns = std::fs::File::open("/proc/thread-self/ns/net")
            .context("opening this thread's network namespace")?;
        let prog: &mut FlowDissector = program_of(&mut self.ebpf, name, "a flow dissector")?;
        prog.load()
            .with_context(|| format!("verifying flow dissector {name}"))?;
        prog.attach(netns).map_err(|e| {
            let busy = std::error::Error::source(&e)
                .and_then(|s| s.downcast_ref::<std::io::Error>())
                .is_some_and(|io| io.raw_os_error() == Some(libc::EEXIST));
            if busy {
                anyhow!(
                    "another BPF flow dissector is attached to this network namespace (one \
                     per namespace): bpftool net shows it"
                )
            } else {
                anyhow!("attaching flow dissector {name}: {e}")
            }
        })?;
        Ok(())
    }

    /// A raw tracepoint program, for BPF_PROG_TEST_RUN.
    pub fn raw_tracepoint(&mut self, name: &str) -> Result<&mut RawTracePoint> {
        raw_tp_mut(&mut self.ebpf, name)
    }

    /// Moves the counter maps out so a sampler thread can own them; programs stay here.
    pub fn take_counters(&mut self) -> Result<Counters> {
        let mut take = |name: &str| {
            self.ebpf
                .take_map(name)
                .ok_or_else(|| anyhow!("map {name} missing (or already taken)"))
        };
        Ok(Counters {
            rx: PerCpuArray::try_from(take(map::RX_STATS)?)?,
            softirq: PerCpuArray::try_from(take(map::SOFTIRQ_STATS)?)?,
            xdp: PerCpuArray::try_from(take(map::XDP_TRACE)?)?,
            on_cpu: PerCpuArray::try_from(take(map::ON_CPU_STATS)?)?,
            tc_ingress: PerCpuArray::try_from(take(map::TC_INGRESS_STATS)?)?,
            tc_egress: PerCpuArray::try_from(take(map::TC_EGRESS_STATS)?)?,
            logs: self.logs.take(),
            // A program the kernel refused (the frags twins on an old kernel) has no id.
            programs: self
                .ebpf
                .programs()
                .filter_map(|(name, p)| Some((p.info().ok()?.id(), name.to_string())))
                .collect(),
        })
    }
}

/// Read side of the per-CPU counter maps. Vectors are indexed by possible-CPU id.
pub struct Counters {
    rx: PerCpuArray<MapData, RxStats>,
    softirq: PerCpuArray<MapData, SoftirqStats>,
    xdp: PerCpuArray<MapData, XdpTraceStats>,
    on_cpu: PerCpuArray<MapData, RxStats>,
    tc_ingress: PerCpuArray<MapData, RxStats>,
    tc_egress: PerCpuArray<MapData, RxStats>,
    logs: Option<aya_log::EbpfLogger<&'static dyn log::Log>>,
    /// Every loaded program's kernel id and name, for its run-time statistics.
    programs: Vec<(u32, String)>,
}

impl Counters {
    pub fn rx(&self) -> Result<Vec<RxStats>> {
        Ok(self.rx.get(&0, 0)?.iter().copied().collect())
    }

    pub fn softirq(&self) -> Result<Vec<SoftirqStats>> {
        Ok(self.softirq.get(&0, 0)?.iter().copied().collect())
    }

    pub fn xdp_trace(&self) -> Result<Vec<XdpTraceStats>> {
        Ok(self.xdp.get(&0, 0)?.iter().copied().collect())
    }

    /// What `on_cpu` counted arriving on each cpumap target CPU.
    pub fn on_cpu(&self) -> Result<Vec<RxStats>> {
        Ok(self.on_cpu.get(&0, 0)?.iter().copied().collect())
    }

    /// What tc ingress counted on each CPU: where the stack processed packets.
    pub fn tc_ingress(&self) -> Result<Vec<RxStats>> {
        Ok(self.tc_ingress.get(&0, 0)?.iter().copied().collect())
    }

    /// Hands the kernel programs' log records to `log` (they are rare: see ebpf/src/diag.rs).
    pub fn flush_logs(&mut self) {
        if let Some(l) = self.logs.as_mut() {
            l.flush();
        }
    }

    /// What tc egress counted on each CPU: where packets were transmitted.
    pub fn tc_egress(&self) -> Result<Vec<RxStats>> {
        Ok(self.tc_egress.get(&0, 0)?.iter().copied().collect())
    }

    /// Each of our programs' run count and run time so far, as the kernel keeps them (they
    /// grow only while run-time statistics are on: see `sampler::StatsSwitch`).
    pub fn program_runs(&self) -> Result<Vec<ProgramRuns>> {
        let mut out = Vec::with_capacity(self.programs.len());
        for info in kernel_programs() {
            let info = info?;
            if let Some((_, name)) = self.programs.iter().find(|(id, _)| *id == info.id()) {
                out.push(ProgramRuns {
                    name: name.clone(),
                    runs: info.run_count(),
                    ns: info.run_time().as_nanos() as u64,
                });
            }
        }
        Ok(out)
    }
}

/// The inode number of this thread's network namespace (what the kernel keeps as
/// `net->ns.inum`): the thread's, as the lab loads from a thread it moved into a namespace.
fn netns_inum() -> Result<u32> {
    let ino = rxsteer_tune::sysctl::netns_inode("thread-self")
        .context("reading this thread's network namespace")?;
    u32::try_from(ino).context("network namespace inode above 32 bits")
}

/// The index of `iface` in this network namespace.
fn ifindex(iface: &str) -> Result<u32> {
    let name = std::ffi::CString::new(iface)?;
    // SAFETY: a NUL-terminated string; the call only reads it.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => bail!("no interface {iface} in this network namespace"),
        i => Ok(i),
    }
}

fn xdp_mut<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut Xdp> {
    program_of(ebpf, name, "an XDP program")
}

/// Program `name` of the object, as the program type `T` (`kind` names it in the error).
fn program_of<'a, T>(ebpf: &'a mut Ebpf, name: &str, kind: &str) -> Result<&'a mut T>
where
    &'a mut aya::programs::Program: TryInto<&'a mut T>,
{
    let prog = ebpf
        .program_mut(name)
        .ok_or_else(|| anyhow!("program {name} missing from the eBPF object"))?;
    prog.try_into()
        .map_err(|_| anyhow!("program {name} is not {kind}"))
}

/// `program`, or its frags-aware twin.
fn program_name(program: &str, frags: bool) -> String {
    if frags {
        format!("{program}{FRAGS_SUFFIX}")
    } else {
        program.to_string()
    }
}

fn classifier_mut<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut SchedClassifier> {
    program_of(ebpf, name, "a tc classifier")
}

fn raw_tp_mut<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut RawTracePoint> {
    program_of(ebpf, name, "a raw tracepoint program")
}

/// The kernel's loaded BPF programs. A program freed between the kernel naming its id and
/// our asking for it (ENOENT) is not loaded and is left out: the kernel frees a cpumap's
/// `on_cpu` programs asynchronously after a session ends, so a listing taken while one
/// unloads meets exactly that (a fresh-clone CI run failed on it: its no-BPF arm's check
/// returned the listing's error instead of waiting).
fn kernel_programs() -> impl Iterator<Item = Result<aya::programs::ProgramInfo>> {
    aya::programs::loaded_programs().filter_map(|info| match info {
        Err(aya::programs::ProgramError::SyscallError(e))
            if e.io_error.raw_os_error() == Some(libc::ENOENT) =>
        {
            None
        }
        other => Some(other.context("listing the kernel's BPF programs")),
    })
}

/// rxsteer's programs loaded in the kernel now, by any process (names as the kernel keeps
/// them): what the no-BPF arm checks is empty instead of assuming it. The lab's wire
/// (`lab_unhash`) is not among them: it runs on the loader's side in every arm, the no-BPF
/// one too, as the lab's stand-in for a NIC.
pub fn loaded_rxsteer_programs() -> Result<Vec<String>> {
    let ours: Vec<String> = program_names()
        .into_iter()
        .filter(|n| n != LAB_UNHASH)
        .collect();
    let mut found = Vec::new();
    for info in kernel_programs() {
        let info = info?;
        if let Some(name) = info.name_as_str() {
            if ours.iter().any(|o| o == name) {
                found.push(name.to_string());
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod names_in_the_object {
    use super::*;

    #[test]
    #[ignore = "needs the eBPF object, which `cargo xtask test` builds (a plain cargo test has none)"]
    fn every_name_is_in_the_object() {
        assert!(
            !EBPF_OBJECT.is_empty(),
            "this build has no eBPF object: `cargo xtask build-ebpf` first"
        );
        let obj = aya_obj::Object::parse(EBPF_OBJECT).expect("the object parses");
        let programs: Vec<&str> = rxsteer_common::names::program::all().collect();
        let missing: Vec<&str> = programs
            .iter()
            .copied()
            .filter(|p| !obj.programs.contains_key(*p))
            .chain(
                map::ALL
                    .iter()
                    .copied()
                    .filter(|m| !obj.maps.contains_key(*m)),
            )
            .collect();
        assert!(
            missing.is_empty(),
            "named in common::names, not in the object: {missing:?}"
        );
        assert_eq!(program_names().len(), programs.len());
        // The globals are symbols: their names sit NUL-delimited in the string table.
        for g in [map::PORT_CLASS, map::STEER] {
            let needle = [b"\0", g.as_bytes(), b"\0"].concat();
            assert!(
                EBPF_OBJECT.windows(needle.len()).any(|w| w == needle),
                "global {g} is not in the object"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    /// The version the needs and the TCX check compare against is the running kernel's.
    #[test]
    fn the_kernel_version_is_the_running_kernels() {
        let (major, minor) = super::kernel_version().unwrap();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
        assert!(
            release.starts_with(&format!("{major}.{minor}.")),
            "{major}.{minor} vs {release}"
        );
    }
}
