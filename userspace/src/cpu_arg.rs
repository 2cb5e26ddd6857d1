//! CPU lists as command-line values (`0-3,8`). A newtype, so one flag occurrence holds the
//! whole list (clap would otherwise read a `Vec` as repeated values). And the CPU flags of
//! `attach` and `install`, each refused where the steering mode does not take it (a mode's
//! `CpuFlags` says which it takes); and the profile flag of `tune` and `install`.
use rxsteer_records::{CpuFlags, Mode, Steering};

/// A profile that sets something: a mode with a tuning (rps, cpumap).
pub fn steering_profile(s: &str) -> Result<Mode, String> {
    match s.parse::<Mode>() {
        Ok(m) if m.steering().tuning.is_some() => Ok(m),
        _ => Err(format!(
            "{s:?} is not a profile: expected {}",
            Mode::profiles()
                .map(Mode::as_str)
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuList(pub Vec<u32>);

/// clap value parser for [`CpuList`].
pub fn cpu_list(s: &str) -> Result<CpuList, String> {
    rxsteer_tune::cpus::parse_cpu_list(s)
        .map(CpuList)
        .map_err(|e| e.to_string())
}

/// Where steering may put work, as `attach` and `install` take it: the RPS/XPS CPUs, or
/// cpumap's sets per traffic class.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SteerCpus {
    /// cpumap: CPUs HTTP flows are spread over (default: every online CPU not in --zap-cpus).
    #[arg(long, value_parser = cpu_list)]
    pub http_cpus: Option<CpuList>,
    /// cpumap: CPUs ZAP flows are spread over (default: not steered).
    #[arg(long, value_parser = cpu_list)]
    pub zap_cpus: Option<CpuList>,
    /// cpumap: CPUs for all other IP traffic (default: not steered).
    #[arg(long, value_parser = cpu_list)]
    pub other_cpus: Option<CpuList>,
    /// rps: CPUs RPS and XPS may use (default: every online CPU, like tune.sh).
    #[arg(long, value_parser = cpu_list)]
    pub cpus: Option<CpuList>,
    /// napi-thread: CPUs the interface's NAPI kthreads run on (default: every online CPU,
    /// where the scheduler places them).
    #[arg(long, value_parser = cpu_list)]
    pub napi_cpu: Option<CpuList>,
}

impl SteerCpus {
    /// Each flag, the modes that take it, and whether it was given.
    fn given(&self) -> [(&'static str, CpuFlags, bool); 5] {
        [
            ("--cpus", CpuFlags::List, self.cpus.is_some()),
            ("--napi-cpu", CpuFlags::NapiCpus, self.napi_cpu.is_some()),
            ("--http-cpus", CpuFlags::PerClass, self.http_cpus.is_some()),
            ("--zap-cpus", CpuFlags::PerClass, self.zap_cpus.is_some()),
            (
                "--other-cpus",
                CpuFlags::PerClass,
                self.other_cpus.is_some(),
            ),
        ]
    }

    /// Refuses a CPU flag `mode` does not take, naming the modes that do.
    pub fn check_for(&self, mode: Mode) -> Result<(), String> {
        refuse_flags_not_taken(mode, &self.given())
    }

    /// The CPUs the profile's list names (`--cpus` or `--napi-cpu`, whichever the mode takes),
    /// for the profile input; `None`: the default, every online CPU.
    pub fn profile_cpus(&self) -> Option<&[u32]> {
        profile_cpus(self.cpus.as_ref(), self.napi_cpu.as_ref())
    }
}

/// The list a tuning profile reads from the two flags that name one (a mode takes at most one
/// of them, checked by [`refuse_flags_not_taken`]).
pub fn profile_cpus<'a>(
    cpus: Option<&'a CpuList>,
    napi_cpu: Option<&'a CpuList>,
) -> Option<&'a [u32]> {
    cpus.or(napi_cpu).map(|c| c.0.as_slice())
}

/// Refuses the first given CPU flag that `mode` does not take, naming the flags it takes and
/// the modes that take the one given. `given`: each flag, the modes' kind that takes it, and
/// whether it was given.
pub fn refuse_flags_not_taken(
    mode: Mode,
    given: &[(&'static str, CpuFlags, bool)],
) -> Result<(), String> {
    let takes = mode.steering().cpus;
    let Some(&(flag, kind, _)) = given.iter().find(|&&(_, k, g)| g && k != takes) else {
        return Ok(());
    };
    let its: Vec<&str> = given
        .iter()
        .filter(|&&(_, k, _)| k == takes)
        .map(|&(f, _, _)| f)
        .collect();
    let its = match its.as_slice() {
        [] => "no CPU flag".to_string(),
        flags => flags.join(", "),
    };
    Err(format!(
        "{flag} only applies to --steer {}; --steer {mode} takes {its}",
        modes_where(|s| s.cpus == kind)
    ))
}

/// The names of the modes whose steering is `pick`, for "only applies to --steer ...".
pub fn modes_where(pick: impl Fn(&Steering) -> bool) -> String {
    let names: Vec<&str> = Mode::ALL
        .iter()
        .filter(|m| pick(m.steering()))
        .map(|m| m.as_str())
        .collect();
    names.join(" or ")
}
