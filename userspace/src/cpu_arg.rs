//! CPU lists as command-line values (`0-3,8`). A newtype, so one flag occurrence holds the
//! whole list (clap would otherwise read a `Vec` as repeated values).
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
}

impl SteerCpus {
    /// The cpumap flags given, by name.
    pub fn cpumap_flags(&self) -> [(&'static str, &Option<CpuList>); 3] {
        [
            ("--http-cpus", &self.http_cpus),
            ("--zap-cpus", &self.zap_cpus),
            ("--other-cpus", &self.other_cpus),
        ]
    }

    /// `--cpus` as a slice, for the profile input.
    pub fn rps(&self) -> Option<&[u32]> {
        self.cpus.as_ref().map(|c| c.0.as_slice())
    }
}
