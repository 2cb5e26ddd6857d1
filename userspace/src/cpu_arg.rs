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
