//! Up-front privilege checks: say which capability is missing before touching the kernel.
use anyhow::{bail, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cap {
    NetAdmin = 12,
    SysAdmin = 21,
    Perfmon = 38,
    Bpf = 39,
}

impl Cap {
    fn name(self) -> &'static str {
        match self {
            Cap::NetAdmin => "CAP_NET_ADMIN",
            Cap::SysAdmin => "CAP_SYS_ADMIN",
            Cap::Perfmon => "CAP_PERFMON",
            Cap::Bpf => "CAP_BPF",
        }
    }
}

/// Effective capability set of this process, from /proc/self/status.
pub fn effective_caps() -> Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    parse_cap_eff(&status).ok_or_else(|| anyhow::anyhow!("no CapEff line in /proc/self/status"))
}

fn parse_cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// What attaching XDP and tracepoint programs needs. CAP_SYS_ADMIN stands in for CAP_BPF and
/// CAP_PERFMON, as the kernel allows.
pub const OBSERVE: &[Cap] = &[Cap::Bpf, Cap::NetAdmin, Cap::Perfmon];

/// Fails with one line naming every missing capability.
pub fn require(what: &str, caps: &[Cap]) -> Result<()> {
    let eff = effective_caps()?;
    let has = |c: Cap| eff & (1u64 << c as u32) != 0;
    // CAP_SYS_ADMIN covers CAP_BPF and CAP_PERFMON (kernels before 5.8 had only it).
    let covered = |c: Cap| has(c) || (c != Cap::NetAdmin && has(Cap::SysAdmin));
    let missing: Vec<&str> = caps
        .iter()
        .filter(|&&c| !covered(c))
        .map(|c| c.name())
        .collect();
    if !missing.is_empty() {
        bail!(
            "{what} needs root or {}; missing: {}",
            caps.iter().map(|c| c.name()).collect::<Vec<_>>().join(", "),
            missing.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_effective_set() {
        let s = "Name:\tx\nCapPrm:\t0000000000000000\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(s), Some(0x1ff_ffff_ffff));
        assert_eq!(parse_cap_eff("Name: x\n"), None);
    }
}
