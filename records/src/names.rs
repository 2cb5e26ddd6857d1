//! The names every file and command line shares: one enum per concept, each with one
//! `as_str` (the spelling in files and flags), `FromStr`, `Display` and serde as that string.
//!
//! One small macro of our own, not strum's and serde's derives: it gives every name the one
//! error, [`UnknownName`], that says which concept was misspelled and what it accepts
//! (`"quic" is not a valid protocol: expected one of http, zap`), in a run.json field (with
//! its path) and on a command line alike; strum's `ParseError` names neither, and serde's
//! derive would word the same mistake its own way in files.

/// An unknown name: what was given and what would have been accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    pub what: &'static str,
    pub given: String,
    pub accepted: &'static [&'static str],
}

impl std::fmt::Display for UnknownName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} is not a valid {}: expected one of {}",
            self.given,
            self.what,
            self.accepted.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}

/// Defines one name enum (see the module's opening); `steering.rs` uses it for `Mode`.
macro_rules! names {
    ($(#[$meta:meta])* $name:ident, $what:literal { $($(#[$vmeta:meta])* $variant:ident = $s:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
        pub enum $name {
            $($(#[$vmeta])* #[cfg_attr(feature = "clap", value(name = $s))] $variant),+
        }

        impl $name {
            /// Every value, in canonical order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            const NAMES: &'static [&'static str] = &[$($s),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $s),+
                }
            }
        }

        /// The first value (the plainest: untuned, HTTP, /health, ...).
        impl Default for $name {
            fn default() -> Self {
                Self::ALL[0]
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::names::UnknownName;
            fn from_str(s: &str) -> Result<Self, $crate::names::UnknownName> {
                match s {
                    $($s => Ok($name::$variant),)+
                    _ => Err($crate::names::UnknownName { what: $what, given: s.to_string(), accepted: Self::NAMES }),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use names;

names! {
    /// The transport a load speaks.
    Proto, "protocol" {
        Http = "http",
        Zap = "zap",
    }
}

/// What every part of rxsteer needs to know of a protocol, in one row: the server's framing
/// (`server/src/framing.rs`), rxload's codec (`loadgen/src/protocol.rs`) and, for a protocol
/// the kernel programs count apart, its class (`common/`) are the only other places.
#[derive(Clone, Copy, Debug)]
pub struct ProtoSpec {
    /// What a reader sees (report tables, charts).
    pub label: &'static str,
    /// Its short name in counts ("served 3 HTTP and 4 ZAP requests").
    pub short: &'static str,
    /// rxload's URL scheme (`http://`, `zap://`).
    pub scheme: &'static str,
    /// The port it is served on unless told otherwise.
    pub port: u16,
    /// attach's flag for the CPUs cpumap steers it to: its kernel class's set, or
    /// `--other-cpus` for a protocol the kernel programs do not count apart.
    pub cpus_flag: &'static str,
}

impl Proto {
    pub fn spec(self) -> ProtoSpec {
        match self {
            Proto::Http => ProtoSpec {
                label: "HTTP/1.1",
                short: "HTTP",
                scheme: "http",
                port: 8080,
                cpus_flag: "--http-cpus",
            },
            Proto::Zap => ProtoSpec {
                label: "ZAP",
                short: "ZAP",
                scheme: "zap",
                port: 9653,
                cpus_flag: "--zap-cpus",
            },
        }
    }

    pub fn label(self) -> &'static str {
        self.spec().label
    }
}

/// One value per protocol, indexed by [`Proto`]: what a struct would otherwise hold as one
/// named field per protocol, so a new protocol needs no new field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerProto<T>([T; Proto::ALL.len()]);

impl<T> PerProto<T> {
    /// Each protocol's value from `f`.
    pub fn each(mut f: impl FnMut(Proto) -> T) -> Self {
        Self(std::array::from_fn(|i| f(Proto::ALL[i])))
    }

    /// Every protocol with its value, in canonical order.
    pub fn iter(&self) -> impl Iterator<Item = (Proto, &T)> {
        Proto::ALL.iter().copied().zip(self.0.iter())
    }
}

impl<T> std::ops::Index<Proto> for PerProto<T> {
    type Output = T;
    fn index(&self, p: Proto) -> &T {
        &self.0[p as usize]
    }
}

impl<T> std::ops::IndexMut<Proto> for PerProto<T> {
    fn index_mut(&mut self, p: Proto) -> &mut T {
        &mut self.0[p as usize]
    }
}

names! {
    /// What each request is.
    Scenario, "scenario" {
        /// GET /health: the smallest request and response.
        Health = "health",
        /// POST /rpc: the rpc record (native ZAP, or JSON over HTTP).
        Rpc = "rpc",
        /// POST /echo: the body back.
        Echo = "echo",
        /// A POST of --body-size bytes answered with a short body (the byte count): a load
        /// whose limit is the receiving side, the seed's condition.
        Upload = "upload",
    }
}

names! {
    /// The XDP attach mode that ran.
    XdpMode, "XDP mode" {
        /// Native (driver) XDP.
        Drv = "drv",
        /// Generic (skb) XDP.
        Skb = "skb",
    }
}

impl XdpMode {
    /// What this mode means for steering, in one line (live screen, report).
    pub fn meaning(self) -> &'static str {
        match self {
            XdpMode::Drv => {
                "driver mode: XDP runs on the raw frame before an skb exists, so cpumap moves \
                 skb building, GRO and the stack off the RX core"
            }
            XdpMode::Skb => {
                "skb mode: XDP runs after the RX core has built each packet's skb, and with a \
                 generic XDP program on the interface the kernel skips GRO, so every frame \
                 reaches the stack as its own skb; cpumap moves only the stack (the work RPS \
                 moves), one skb per frame, plus an XDP run and an enqueue"
            }
        }
    }

    /// The long name, for prose.
    pub fn long_name(self) -> &'static str {
        match self {
            XdpMode::Drv => "driver (native)",
            XdpMode::Skb => "skb (generic)",
        }
    }
}

names! {
    /// How an arm, `top` or `attach` saw where the driver received: what ran on the
    /// interface besides the user's own set-up.
    Observer, "observer" {
        /// Receive tracepoints on the driver's CPU (`rx_driver_*`): no XDP program on the
        /// interface, so nothing copies a packet.
        Tracepoint = "tracepoint",
        /// The observe-only XDP program (`rx_account`), or in cpumap mode the steering
        /// program itself. In skb mode the kernel skips GRO on the interface while it is
        /// attached and copies every packet short of headroom for it.
        Xdp = "xdp",
        /// No BPF program at all: /proc only (the no-BPF baseline of every comparison).
        Off = "off",
    }
}

impl Observer {
    /// What it costs, in one line (live screen, report).
    pub fn meaning(self) -> &'static str {
        match self {
            Observer::Tracepoint => {
                "receive tracepoints on the driver's CPU, no XDP program on the interface"
            }
            Observer::Xdp => "an XDP program on the interface",
            Observer::Off => "no BPF program: CPU time from /proc only",
        }
    }
}

names! {
    /// rxload's I/O engine.
    LoaderIo, "I/O engine" {
        Tokio = "tokio",
        Uring = "uring",
    }
}

names! {
    /// The server's I/O engine (`serve --io`, `compare --server-io`).
    ServerIo, "server I/O engine" {
        /// tokio over epoll: one read and one write per batch of a connection's requests.
        Epoll = "epoll",
        /// io_uring: multishot accept and receive into a provided-buffer ring, every
        /// connection's responses of a completion batch submitted in one kernel entry.
        Uring = "uring",
    }
}

names! {
    /// Where the load generator runs on a predicted machine (`predict --loader`).
    LoaderPlace, "loader place" {
        /// Other machines: its CPU and its receive of the replies cost this box nothing.
        Remote = "remote",
        /// On the box itself, sharing its CPUs.
        Local = "local",
    }
}

names! {
    /// Which part of a load a line or sample belongs to.
    Phase, "phase" {
        Warmup = "warmup",
        Measure = "measure",
    }
}

names! {
    /// `--observer`: how to count where the driver received (what ran is [`Observer`]).
    ObserverChoice, "observer choice" {
        /// The receive tracepoints, unless steering itself runs XDP (cpumap): no XDP program is
        /// ever attached only to observe; without the tracepoints, XDP in driver mode (said).
        Auto = "auto",
        /// The receive tracepoints, or refuse.
        Tracepoint = "tracepoint",
        /// The observe-only XDP program (cheap in driver mode on a real NIC; in skb mode the
        /// kernel skips GRO on the interface and copies every packet short of headroom).
        Xdp = "xdp",
        /// No BPF program at all: CPU time, softnet and kthread time from /proc only (the
        /// baseline a comparison measures the observer against). Not with cpumap steering.
        Off = "off",
    }
}

names! {
    /// `--observe`: how much the observer watches beyond where the driver received and the
    /// softirq time per CPU. Each program's cost is in every run (`runs[].bpf`); the levels
    /// trade figures for that cost, and a run says which figures its level lacks.
    ObserveLevel, "observe level" {
        /// tc ingress (where the stack ran, per class: the proof of RPS steering), not tc
        /// egress (where replies left), which cost as much again per packet (the observer
        /// matrix, results/2026-12-04-vm-observer-matrix).
        Default = "default",
        /// No tc program at all: where the driver received and the softirq and kthread time
        /// per CPU only, for a production box.
        Minimal = "minimal",
        /// tc ingress and egress (where replies left: XPS), as every run before levels.
        Full = "full",
    }
}

impl ObserveLevel {
    /// Whether tc ingress counts where the stack ran.
    pub fn counts_stack(self) -> bool {
        self != ObserveLevel::Minimal
    }

    /// Whether tc egress counts where replies left.
    pub fn counts_tx(self) -> bool {
        self == ObserveLevel::Full
    }

    /// Whether NET_RX's wait from raise to run is timed (`softirq_raise`, which runs on
    /// every raise of any vector); its run-time histogram is kept at every level.
    pub fn times_net_rx_waits(self) -> bool {
        self == ObserveLevel::Full
    }

    /// The level of a record from before levels existed: everything was watched.
    pub fn of_record(stored: Option<ObserveLevel>) -> ObserveLevel {
        stored.unwrap_or(ObserveLevel::Full)
    }

    /// The figures this level does not count, each with the level that does; empty at full.
    pub fn lacks(self) -> Vec<&'static str> {
        let mut lacks = Vec::new();
        if !self.counts_stack() {
            lacks.push("where the stack ran per CPU (tc ingress; --observe default counts it)");
        }
        if !self.counts_tx() {
            lacks.push("where replies left per CPU (tc egress, XPS; --observe full counts it)");
        }
        lacks
    }
}

names! {
    /// `--bpf-stats`: how long the kernel's BPF run-time statistics are held on. Each
    /// program run costs two more clock reads while they are on: 81 ns per run on this
    /// project's VM (results/2026-12-04-vm-bpf-stats-overhead), more than most of our programs.
    BpfStatsChoice, "BPF statistics choice" {
        /// On for a tenth of each interval, in its middle, and each program's runs and run time of
        /// that window scaled to the interval: a tenth of the statistics' cost.
        Sampled = "sampled",
        /// On for the whole run: every run counted (tests, short bursts), at the full cost.
        Always = "always",
    }
}

names! {
    /// `--xdp-mode`: the XDP attach mode asked for (what ran is [`XdpMode`]).
    XdpModeChoice, "XDP mode choice" {
        /// Driver (native) mode if the driver supports it, else skb (generic) mode.
        Auto = "auto",
        /// Native (driver) XDP; refused on an interface without it.
        Drv = "drv",
        /// Generic (skb) XDP: after the RX core built each packet's skb, with GRO skipped on the
        /// interface, as on a NIC whose driver has no native XDP (the GB10's r8169).
        Skb = "skb",
    }
}

names! {
    /// `--xdp-frags`: whether to use the multi-buffer aware programs.
    FragsChoice, "frags choice" {
        /// The frags-aware programs where the kernel accepts them, else the plain ones.
        Auto = "auto",
        /// The frags-aware programs, or refuse.
        On = "on",
        /// The plain programs (skb mode then linearises every non-linear packet first).
        Off = "off",
    }
}

names! {
    /// `--tc`: how to attach the tc witnesses (what ran is [`crate::TcAttached`]).
    TcChoice, "tc choice" {
        /// TCX links where the kernel has them (6.6+), else a clsact qdisc of rxsteer's own; and
        /// without either, observe on without tc counts (said in one line).
        Auto = "auto",
        /// TCX links, or refuse.
        Tcx = "tcx",
        /// Netlink filters on a clsact qdisc rxsteer adds (and deletes, also after a crash).
        Clsact = "clsact",
        /// No tc witnesses.
        Off = "off",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_through_its_string_and_serde() {
        for s in Scenario::ALL {
            assert_eq!(s.as_str().parse::<Scenario>(), Ok(*s));
            let json = serde_json::to_string(s).unwrap();
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<Scenario>(&json).unwrap(), *s);
        }
        assert_eq!("skb".parse::<XdpMode>(), Ok(XdpMode::Skb));
    }

    #[test]
    fn each_protocol_has_its_own_place() {
        let mut m = PerProto::each(|p| p.as_str().to_string());
        for (p, v) in m.iter() {
            assert_eq!(v, p.as_str());
        }
        m[Proto::Zap].push('!');
        assert_eq!(m[Proto::Zap], "zap!");
        assert_eq!(m[Proto::Http], "http");
    }

    #[test]
    fn an_unknown_name_says_what_was_accepted() {
        let e = "quic".parse::<Proto>().unwrap_err().to_string();
        assert_eq!(
            e,
            "\"quic\" is not a valid protocol: expected one of http, zap"
        );
        assert!(serde_json::from_str::<Proto>("\"quic\"").is_err());
    }
}
