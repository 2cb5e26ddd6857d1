//! The only place programs are loaded, attached and detached. Detach is RAII: XDP goes through
//! a bpf_link where the kernel has it, so even a SIGKILLed rxsteer leaves nothing attached
//! once its file descriptors close.
use anyhow::{anyhow, bail, Context, Result};
use aya::{
    maps::{CpuMap, MapData, PerCpuArray},
    programs::{RawTracePoint, Xdp, XdpMode},
    Ebpf, EbpfLoader,
};
use rxsteer_common::{
    RxStats, SoftirqStats, SteerConfig, XdpTraceStats, MAX_STEER_CPUS, PORT_CLASS_ENTRIES,
    PORT_HTTP, PORT_NONE, PORT_ZAP, STEER_HTTP, STEER_OTHER, STEER_ZAP,
};
use rxsteer_tune::cpus::format_cpu_list;
use serde::{Deserialize, Serialize};

/// The kernel programs, built by `cargo xtask build-ebpf` and embedded at compile time.
pub static EBPF_OBJECT: &[u8] = aya::include_bytes_aligned!(env!("RXSTEER_EBPF_OBJ"));

/// XDP programs in the object.
pub const RX_ACCOUNT: &str = "rx_account";
pub const XDP_PASS: &str = "xdp_pass";
pub const STEER: &str = "steer";
/// Runs on each cpumap entry's CPU.
pub const ON_CPU: &str = "on_cpu";
/// Largest cpumap queue the kernel accepts.
pub const MAX_QSIZE: u32 = 16384;
/// Raw tracepoint programs, each attached to the tracepoint of the same name.
pub const SOFTIRQ_TRACEPOINTS: [&str; 2] = ["softirq_entry", "softirq_exit"];
pub const XDP_TRACEPOINTS: [&str; 4] = [
    "xdp_cpumap_kthread",
    "xdp_cpumap_enqueue",
    "xdp_redirect_err",
    "xdp_exception",
];

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

impl SteerSets {
    /// Every set within the online CPUs and the size limit; HTTP and ZAP sets disjoint; at
    /// least one set non-empty.
    pub fn validate(&self, online: &[u32]) -> Result<()> {
        for (flag, set) in [
            ("--http-cpus", &self.http),
            ("--zap-cpus", &self.zap),
            ("--other-cpus", &self.other),
        ] {
            if let Some(c) = set.iter().find(|c| !online.contains(c)) {
                bail!(
                    "CPU {c} in {flag} is not online on this machine (online: {})",
                    format_cpu_list(online)
                );
            }
            if set.len() > MAX_STEER_CPUS {
                bail!("{flag} names {} CPUs; at most {MAX_STEER_CPUS}", set.len());
            }
        }
        if let Some(c) = self.http.iter().find(|c| self.zap.contains(c)) {
            bail!("CPU {c} is in both --http-cpus and --zap-cpus: give each service its own CPUs");
        }
        if self.http.is_empty() && self.zap.is_empty() && self.other.is_empty() {
            bail!("every steering set is empty: nothing would be steered");
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
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible")?;
    let cpus = rxsteer_tune::cpus::parse_cpu_list(&s)?;
    Ok(cpus.last().map_or(1, |c| c + 1))
}

/// `--xdp-mode`: what the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum XdpModeChoice {
    /// Driver (native) mode if the driver supports it, else skb (generic) mode.
    Auto,
    Drv,
    Skb,
}

/// The mode that actually ran; stored with every result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttachedMode {
    Drv,
    Skb,
}

impl std::fmt::Display for AttachedMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AttachedMode::Drv => "driver (native)",
            AttachedMode::Skb => "skb (generic)",
        })
    }
}

pub struct Dataplane {
    ebpf: Ebpf,
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
        let classes = ports.class_table();
        let steer_cfg = steer.config();
        let mut ebpf = EbpfLoader::new()
            .override_global("PORT_CLASS", &*classes, true)
            .override_global("STEER", &*steer_cfg, true)
            .map_max_entries("CPUMAP", nr_cpu_ids()?)
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
        for name in [RX_ACCOUNT, XDP_PASS, STEER, ON_CPU] {
            xdp_mut(&mut ebpf, name)?
                .load()
                .with_context(|| format!("verifying XDP program {name}"))?;
        }
        for name in SOFTIRQ_TRACEPOINTS.iter().chain(&XDP_TRACEPOINTS) {
            raw_tp_mut(&mut ebpf, name)?
                .load()
                .with_context(|| format!("verifying tracepoint program {name}"))?;
        }
        Ok(Self { ebpf })
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

    /// Creates a cpumap entry (a `qsize`-frame ring and its kthread, running `on_cpu`) for
    /// every CPU of `steer`. Call before attaching the steering program.
    pub fn fill_cpumap(&mut self, steer: &SteerSets, qsize: u32) -> Result<()> {
        if qsize == 0 || qsize > MAX_QSIZE {
            bail!("--qsize {qsize} is out of range (1-{MAX_QSIZE})");
        }
        let on_cpu = xdp_mut(&mut self.ebpf, ON_CPU)?.fd()?.try_clone()?;
        let map = self
            .ebpf
            .map_mut("CPUMAP")
            .ok_or_else(|| anyhow!("map CPUMAP missing"))?;
        let mut cpumap: CpuMap<_> = CpuMap::try_from(map)?;
        for cpu in steer.all_cpus() {
            cpumap.set(cpu, qsize, Some(&on_cpu), 0).with_context(|| {
                format!("creating the cpumap entry for CPU {cpu} (qsize {qsize})")
            })?;
        }
        Ok(())
    }

    /// Attaches XDP program `program` to `iface` in the requested mode.
    pub fn attach_xdp(
        &mut self,
        program: &str,
        iface: &str,
        choice: XdpModeChoice,
    ) -> Result<AttachedMode> {
        let prog = xdp_mut(&mut self.ebpf, program)?;
        let attach = |prog: &mut Xdp, mode: AttachedMode| {
            let flags = match mode {
                AttachedMode::Drv => XdpMode::Driver,
                AttachedMode::Skb => XdpMode::Skb,
            };
            prog.attach(iface, flags)
                .with_context(|| format!("attaching {program} to {iface} in {mode} mode"))
        };
        match choice {
            XdpModeChoice::Drv => attach(prog, AttachedMode::Drv).map(|_| AttachedMode::Drv),
            XdpModeChoice::Skb => attach(prog, AttachedMode::Skb).map(|_| AttachedMode::Skb),
            XdpModeChoice::Auto => match attach(prog, AttachedMode::Drv) {
                Ok(_) => Ok(AttachedMode::Drv),
                Err(drv) => attach(prog, AttachedMode::Skb)
                    .map(|_| AttachedMode::Skb)
                    .map_err(|skb| anyhow!("{drv:#}; and then {skb:#}")),
            },
        }
    }

    /// An XDP program, for BPF_PROG_TEST_RUN.
    pub fn xdp(&mut self, name: &str) -> Result<&mut Xdp> {
        xdp_mut(&mut self.ebpf, name)
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
            rx: PerCpuArray::try_from(take("RX_STATS")?)?,
            softirq: PerCpuArray::try_from(take("SOFTIRQ_STATS")?)?,
            xdp: PerCpuArray::try_from(take("XDP_TRACE")?)?,
            on_cpu: PerCpuArray::try_from(take("ON_CPU_STATS")?)?,
        })
    }
}

/// Read side of the per-CPU counter maps. Vectors are indexed by possible-CPU id.
pub struct Counters {
    rx: PerCpuArray<MapData, RxStats>,
    softirq: PerCpuArray<MapData, SoftirqStats>,
    xdp: PerCpuArray<MapData, XdpTraceStats>,
    on_cpu: PerCpuArray<MapData, RxStats>,
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
}

fn xdp_mut<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut Xdp> {
    let prog = ebpf
        .program_mut(name)
        .ok_or_else(|| anyhow!("program {name} missing from the eBPF object"))?;
    match prog.try_into() {
        Ok(p) => Ok(p),
        Err(_) => bail!("program {name} is not an XDP program"),
    }
}

fn raw_tp_mut<'a>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut RawTracePoint> {
    let prog = ebpf
        .program_mut(name)
        .ok_or_else(|| anyhow!("program {name} missing from the eBPF object"))?;
    match prog.try_into() {
        Ok(p) => Ok(p),
        Err(_) => bail!("program {name} is not a raw tracepoint program"),
    }
}
