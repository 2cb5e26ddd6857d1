//! One arm of the comparison (a steering mode as one XDP mode, frags choice and observer run
//! it) and what every observed arm watches with.
use rxsteer_dataplane::{FragsChoice, ObserveLevel, ObserverChoice, TcChoice, XdpModeChoice};
use rxsteer_records::{
    run::{ArmName, NO_BPF_ARM},
    Mode, XdpMode,
};

/// One arm of the comparison: a steering mode in one XDP attach mode, with or without the
/// frags-aware programs, observed as `observer` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arm {
    pub mode: Mode,
    pub xdp: XdpModeChoice,
    pub frags: FragsChoice,
    /// `attach --observer` of the arm (cpumap counts with its own steering program).
    pub observer: ObserverChoice,
    /// The run compares XDP modes, so the arm's name carries its XDP mode.
    pub per_xdp_mode: bool,
    /// The run compares frags-aware and plain programs, so the name says which.
    pub per_frags: bool,
}

impl Arm {
    /// The arm's name in run.json and file names: the steering mode, then what the run
    /// varies besides (`cpumap`, `cpumap-skb`, `cpumap-skb-plain`). Its untuned peer has the
    /// same suffix.
    pub fn key(&self) -> ArmName {
        if self.observer == ObserverChoice::Off {
            return NO_BPF_ARM;
        }
        let mut arm = ArmName::of(self.mode);
        // Without an XDP program the XDP mode and frags choice change nothing in the arm.
        if !self.runs_xdp() {
            return arm;
        }
        if self.per_xdp_mode {
            // Compared XDP modes are the two real ones (`--xdp-mode both`).
            arm.variant.xdp = match self.xdp {
                XdpModeChoice::Skb => Some(XdpMode::Skb),
                _ => Some(XdpMode::Drv),
            };
        }
        if self.per_frags {
            arm.variant.frags = Some(self.frags != FragsChoice::Off);
        }
        arm
    }

    /// Whether an XDP program is on the interface in this arm: a mode that steers with one
    /// (cpumap); the others only with `--observer xdp`.
    pub fn runs_xdp(&self) -> bool {
        self.mode.steers_with_xdp() || self.observer == ObserverChoice::Xdp
    }

    /// The untuned arm with no BPF at all, which every comparison runs.
    pub fn no_bpf() -> Self {
        Self {
            mode: Mode::baseline(),
            xdp: XdpModeChoice::Auto,
            frags: FragsChoice::Auto,
            observer: ObserverChoice::Off,
            per_xdp_mode: false,
            per_frags: false,
        }
    }
}

/// What every observed arm watches with: `--tc` and `--observe` as the comparison was given.
#[derive(Clone, Copy, Debug)]
pub struct Watch {
    pub tc: TcChoice,
    pub observe: ObserveLevel,
}
