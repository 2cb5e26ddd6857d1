//! The sysctls the profiles touch, and where each one lives. Per-network-namespace sysctls can
//! be set inside the lab's namespace; global ones exist (writable) only in the root namespace,
//! and are never written from inside another one (they would change the whole machine, or are
//! read-only mirrors there).
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Each network namespace has its own value.
    PerNetns,
    /// One value for the machine: written only from the root network namespace.
    Global,
}

/// (name, reference value from tune.sh, scope). Values are the reference script's.
pub const REFERENCE: [(&str, &str, Scope); 20] = [
    ("net.core.rmem_max", "268435456", Scope::Global),
    ("net.core.wmem_max", "268435456", Scope::Global),
    ("net.core.rmem_default", "16777216", Scope::Global),
    ("net.core.wmem_default", "16777216", Scope::Global),
    ("net.core.optmem_max", "65536", Scope::PerNetns),
    ("net.core.netdev_max_backlog", "300000", Scope::Global),
    ("net.core.netdev_budget", "60000", Scope::Global),
    ("net.core.netdev_budget_usecs", "8000", Scope::Global),
    ("net.core.somaxconn", "65535", Scope::PerNetns),
    ("net.core.busy_read", "0", Scope::Global),
    ("net.core.busy_poll", "0", Scope::Global),
    (
        "net.ipv4.tcp_rmem",
        "4096 262144 268435456",
        Scope::PerNetns,
    ),
    (
        "net.ipv4.tcp_wmem",
        "4096 262144 268435456",
        Scope::PerNetns,
    ),
    ("net.ipv4.tcp_max_syn_backlog", "65535", Scope::PerNetns),
    ("net.ipv4.tcp_tw_reuse", "1", Scope::PerNetns),
    ("net.ipv4.tcp_fin_timeout", "10", Scope::PerNetns),
    (
        "net.ipv4.ip_local_port_range",
        "1024 65535",
        Scope::PerNetns,
    ),
    ("net.ipv4.tcp_mtu_probing", "1", Scope::PerNetns),
    ("net.ipv4.tcp_slow_start_after_idle", "0", Scope::PerNetns),
    ("net.ipv4.tcp_no_metrics_save", "1", Scope::PerNetns),
];

/// RFS's global flow table: set by the `rps` profile (tune.sh: 1048576), zeroed by `cpumap`.
pub const RPS_SOCK_FLOW_ENTRIES: &str = "net.core.rps_sock_flow_entries";
pub const RFS_FLOW_ENTRIES: u32 = 1_048_576;

pub fn scope_of(name: &str) -> Option<Scope> {
    if name == RPS_SOCK_FLOW_ENTRIES {
        return Some(Scope::Global);
    }
    REFERENCE
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|&(_, _, s)| s)
}

/// `net.core.somaxconn` -> `/proc/sys/net/core/somaxconn`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from("/proc/sys").join(name.replace('.', "/"))
}

/// Inode of this process's network namespace.
pub fn netns_inode(pid: &str) -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt;
    Ok(std::fs::metadata(format!("/proc/{pid}/ns/net"))?.ino())
}

/// True when this process is in the initial network namespace. Compared with kthreadd
/// (pid 2): kernel threads always live there, and sandboxes that hide pid 1's namespace files
/// still show its. If even that is hidden: only the initial namespace has the global
/// `netdev_max_backlog` sysctl.
pub fn in_root_netns() -> std::io::Result<bool> {
    match netns_inode("2") {
        Ok(init) => Ok(netns_inode("self")? == init),
        Err(_) => Ok(std::path::Path::new("/proc/sys/net/core/netdev_max_backlog").exists()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_runs_in_the_root_namespace() {
        assert!(in_root_netns().unwrap());
    }

    #[test]
    fn paths_and_scopes() {
        assert_eq!(
            path("net.ipv4.tcp_rmem"),
            PathBuf::from("/proc/sys/net/ipv4/tcp_rmem")
        );
        assert_eq!(scope_of("net.core.netdev_max_backlog"), Some(Scope::Global));
        assert_eq!(scope_of("net.core.somaxconn"), Some(Scope::PerNetns));
        assert_eq!(scope_of("net.nope"), None);
        // Every net.ipv4 sysctl is per namespace; buffers' maxima are global.
        for (n, _, s) in REFERENCE {
            if n.starts_with("net.ipv4.") {
                assert_eq!(s, Scope::PerNetns, "{n}");
            }
        }
    }
}
