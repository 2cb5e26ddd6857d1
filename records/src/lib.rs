//! rxsteer's file formats as types, each defined once: rxload's result and live line, the
//! per-interval sample, and a comparison's run.json. loadgen and the sampler write them; the
//! comparison, merge and the report read them. Derived figures (receive work, the time split
//! and its verdict, imbalance, the ratio to untuned) are methods and functions here, each
//! written once and tested. Std and serde only: no BPF, no I/O.
pub mod bpf_cost;
pub mod breakdown;
pub mod derived;
pub mod levers;
pub mod live;
pub mod load;
pub mod log2;
pub mod names;
pub mod reps;
pub mod run;
pub mod sample;
pub mod search;
pub mod selftest;
pub mod steering;

pub use live::LiveLine;
pub use load::LoadResult;
pub use names::{
    BpfStatsChoice, FragsChoice, LoaderIo, LoaderPlace, ObserveLevel, Observer, ObserverChoice,
    PerProto, Phase, Proto, Scenario, ServerIo, TcChoice, XdpMode, XdpModeChoice,
};
pub use run::{Row, RunDoc};
pub use sample::{CpuSample, Observed, Sample, SampleLine, TcAttached};
// Steering modes are names too (`names!`), defined with what each does in `steering.rs`.
pub use steering::{CpuFlags, Mode, Need, Place, Program, ServerHelp, Steering, Tuning};

/// With fewer than 4 CPUs no CPU is free of the receive core, the server and the loader, so
/// steering can only move receive work onto a CPU that also does one of those. Whether that
/// pays depends on that CPU's idle time, which each load's verdict reports. The one text of
/// it: the lab, compare and the report (which derives it from a run's CPU count) all use this.
pub fn small_machine_caveat(online: usize) -> Option<String> {
    (online < 4).then(|| {
        format!(
            "this machine has {online} CPUs: no CPU is free to steer to, so receive work can only \
             move onto a CPU that also runs the server or the loader; that pays only where that \
             CPU had idle time (each load's verdict says), so this is not a gain like the seed's, \
             which needs >= 4 CPUs"
        )
    })
}
