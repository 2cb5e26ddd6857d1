//! The names of the kernel programs, maps and globals: the identifiers `ebpf/` gives its
//! functions and statics (aya names each after its identifier), and what userspace looks up.
//! One list for both sides; `dataplane`'s test `every_name_is_in_the_object` reads the built
//! object and fails naming any name here that it does not hold.

/// Programs.
pub mod program {
    /// XDP: the observe-only program, a pass-through, cpumap steering, and what runs on each
    /// cpumap entry's CPU.
    pub const RX_ACCOUNT: &str = "rx_account";
    pub const XDP_PASS: &str = "xdp_pass";
    pub const STEER: &str = "steer";
    pub const ON_CPU: &str = "on_cpu";
    /// The XDP programs the loader verifies at load (a steering mode's own program is one:
    /// records' `steering.rs` names it).
    pub const XDP: [&str; 4] = [RX_ACCOUNT, XDP_PASS, STEER, ON_CPU];
    /// The multi-buffer aware twins of the three (`<name>_frags`, section `xdp.frags`).
    pub const FRAGS_SUFFIX: &str = "_frags";
    pub const FRAGS: [&str; 3] = ["rx_account_frags", "steer_frags", "on_cpu_frags"];
    /// tc: where the stack ran (ingress) and where replies left (egress).
    pub const TC_INGRESS: &str = "tc_ingress";
    pub const TC_EGRESS: &str = "tc_egress";
    /// The flow dissector of the rps-dissector arm (attached to a network namespace), and the
    /// lab's wire: tc egress on the loader's veth, which drops the sender's hash as a NIC
    /// without RXHASH would.
    pub const RPS_BY_SERVICE: &str = "rps_by_service";
    pub const LAB_UNHASH: &str = "lab_unhash";
    /// Raw tracepoint programs, each attached to the tracepoint of the same name.
    pub const SOFTIRQ_TRACEPOINTS: [&str; 2] = ["softirq_entry", "softirq_exit"];
    /// NET_RX's raise, for its wait histogram: attached at `--observe full` only.
    pub const SOFTIRQ_RAISE: &str = "softirq_raise";
    pub const XDP_TRACEPOINTS: [&str; 4] = [
        "xdp_cpumap_kthread",
        "xdp_cpumap_enqueue",
        "xdp_redirect_err",
        "xdp_exception",
    ];
    /// The receive tracepoints that count where the driver received without XDP: program
    /// name, and the kernel tracepoint it attaches to (see ebpf/src/rx_driver.rs).
    pub const DRIVER_TRACEPOINTS: [(&str, &str); 2] = [
        ("rx_driver_poll", "napi_poll"),
        ("rx_driver_netif_rx", "netif_rx"),
    ];

    /// Every program of the object.
    pub fn all() -> impl Iterator<Item = &'static str> {
        XDP.into_iter()
            .chain([TC_INGRESS, TC_EGRESS])
            .chain([RPS_BY_SERVICE, LAB_UNHASH])
            .chain(FRAGS)
            .chain(SOFTIRQ_TRACEPOINTS)
            .chain([SOFTIRQ_RAISE])
            .chain(XDP_TRACEPOINTS)
            .chain(DRIVER_TRACEPOINTS.into_iter().map(|(p, _)| p))
    }
}

/// Maps and the globals userspace sets before load.
pub mod map {
    pub const RX_STATS: &str = "RX_STATS";
    pub const SOFTIRQ_STATS: &str = "SOFTIRQ_STATS";
    pub const XDP_TRACE: &str = "XDP_TRACE";
    pub const ON_CPU_STATS: &str = "ON_CPU_STATS";
    pub const TC_INGRESS_STATS: &str = "TC_INGRESS_STATS";
    pub const TC_EGRESS_STATS: &str = "TC_EGRESS_STATS";
    pub const CPUMAP: &str = "CPUMAP";
    pub const CPUMAP_FRAGS: &str = "CPUMAP_FRAGS";
    pub const DRIVER_WATCH: &str = "DRIVER_WATCH";
    /// Every map above.
    pub const ALL: [&str; 9] = [
        RX_STATS,
        SOFTIRQ_STATS,
        XDP_TRACE,
        ON_CPU_STATS,
        TC_INGRESS_STATS,
        TC_EGRESS_STATS,
        CPUMAP,
        CPUMAP_FRAGS,
        DRIVER_WATCH,
    ];
    /// Read-only globals, set at load time (`EbpfLoader::override_global`).
    pub const PORT_CLASS: &str = "PORT_CLASS";
    pub const STEER: &str = "STEER";
}
