//! The systemd unit that keeps a steering in place at every boot: its name, its commands and
//! its text. One unit per interface.
//!
//! What kind of unit follows from the mode's steering (records' `steering.rs`):
//!
//! - a tuning (`rps`): a oneshot with `RemainAfterExit`: `ExecStart` is `rxsteer tune apply`
//!   (snapshot, then the profile's values), `ExecStop` is `rxsteer tune revert` (the snapshot
//!   back, byte for byte). Nothing stays running.
//! - a mode that steers with an XDP program (`cpumap`): a long-running `rxsteer attach
//!   --steer cpumap` without a view, one summary line a minute to the journal. Chosen over an
//!   XDP link pinned in bpffs by a oneshot because attach already owns everything cpumap
//!   needs and undoes it on SIGTERM (the tuning, the XDP and tc programs, the cpumap): a
//!   pinned link would outlive a crash with nobody to report on it or take it back, where a
//!   crashed attach is restarted by systemd and its next start restores what the crash left
//!   (the state file), and the journal shows where the frames went minute by minute.
use rxsteer_records::Mode;

/// Where the unit file goes (systemd's directory for units the administrator installs).
pub const UNIT_DIR: &str = "/etc/systemd/system";
/// The copy of rxsteer the unit runs: a build directory can go away, a boot must not fail.
pub const BINARY: &str = "/usr/local/libexec/rxsteer/rxsteer";
/// How often the cpumap unit's attach logs a line.
pub const LOG_EVERY: &str = "60s";

/// What the unit may do, and no more (`systemd-analyze security`: 9.6 UNSAFE without it, the
/// score with it stored in results/2026-12-07-unit-hardening):
/// - the capabilities rxsteer's commands use: NET_ADMIN (queue files, sysctls, XDP, tc,
///   ethtool), SYS_ADMIN (BPF statistics, sysctls), BPF and PERFMON (programs, tracepoints),
///   SYS_NICE (pinning NAPI kthreads), IPC_LOCK (BPF maps' memlock on kernels before memcg
///   accounting); no new privileges for anything it runs (`tc`, `ethtool`);
/// - the file system read-only but for /run/rxsteer (its state files and locks; kept across
///   stop, since the oneshot's ExecStop reads them) and the API trees /proc and /sys it tunes,
///   which is why ProtectKernelTunables stays off;
/// - no home, private /tmp and devices, no module loading, clock, hostname or kernel log
///   access, no set-uid files, realtime, personality changes or writable-executable memory,
///   native system calls only, and sockets of the four families it opens (netlink for tc,
///   XDP and genl; inet for ethtool's ioctls and the loads; unix).
///
/// No system-call filter: attach needs bpf(2) and perf_event_open(2), which sit in the groups
/// (`@privileged`, `@debug`) a filter would take away.
const HARDENING: &str = "\
CapabilityBoundingSet=CAP_NET_ADMIN CAP_SYS_ADMIN CAP_BPF CAP_PERFMON CAP_SYS_NICE CAP_IPC_LOCK
NoNewPrivileges=yes
ProtectSystem=strict
RuntimeDirectory=rxsteer
RuntimeDirectoryMode=0700
RuntimeDirectoryPreserve=yes
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectClock=yes
ProtectHostname=yes
ProtectControlGroups=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
RestrictNamespaces=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
RestrictAddressFamilies=AF_UNIX AF_NETLINK AF_INET AF_INET6
UMask=0077
";

/// What an install asks for, checked: the steering, its interface and CPU lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    pub iface: String,
    pub steer: Mode,
    /// rps: `--cpus`; cpumap: `--http-cpus`, `--zap-cpus`, `--other-cpus`, `--qsize`, as
    /// given (flag, value): handed to the unit's command unchanged.
    pub flags: Vec<(&'static str, String)>,
    /// rps-dissector: `--accept-dissector-reach`, handed to the unit's attach.
    pub accept_dissector_reach: bool,
}

/// systemd's escaping of a path into a unit name (`systemd-escape --path`): `/` becomes `-`,
/// and every byte but ASCII letters, digits, `:`, `_` and `.` (and a leading `.`) `\xNN`.
pub fn escape_path(path: &str) -> String {
    let trimmed = path.trim_matches('/');
    let mut out = String::new();
    for (i, b) in trimmed.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || b == b':' || b == b'_' || b == b'.' => {
                out.push(b as char)
            }
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The unit's name: `rxsteer-enP7s7.service`.
pub fn unit_name(iface: &str) -> String {
    format!("rxsteer-{}.service", escape_path(iface))
}

/// Where the unit file `unit` goes, as the booted box sees it.
pub fn unit_file(unit: &str) -> std::path::PathBuf {
    std::path::Path::new(UNIT_DIR).join(unit)
}

/// The device unit systemd makes for the interface.
pub fn device_unit(iface: &str) -> String {
    format!(
        "{}.device",
        escape_path(&format!("/sys/subsystem/net/devices/{iface}"))
    )
}

impl Ask {
    /// Whether the steering needs a process that holds it: a mode that steers with its own
    /// BPF program (XDP, a flow dissector) runs `attach` for as long as the unit is up; a
    /// tuning is applied once.
    fn long_running(&self) -> bool {
        self.steer.steers_with_bpf()
    }

    /// The unit's main command, after the binary.
    pub fn exec_start(&self) -> Vec<String> {
        let (iface, mode) = (self.iface.as_str(), self.steer.as_str());
        let command: &[&str] = if self.long_running() {
            &["attach", "--iface", iface, "--steer", mode]
        } else {
            &["tune", "apply", "--iface", iface, "--profile", mode]
        };
        let mut argv: Vec<String> = command.iter().map(|a| a.to_string()).collect();
        for (flag, value) in &self.flags {
            argv.push(flag.to_string());
            argv.push(value.clone());
        }
        if self.accept_dissector_reach {
            argv.push("--accept-dissector-reach".into());
        }
        if self.long_running() {
            argv.extend(["--interval".into(), LOG_EVERY.into()]);
        }
        argv
    }

    /// The command that takes it back: a tuning's revert; attach undoes itself on the
    /// SIGTERM systemd sends.
    pub fn exec_stop(&self) -> Option<Vec<String>> {
        (!self.long_running()).then(|| vec!["tune".into(), "revert".into()])
    }

    /// The unit file's text.
    pub fn unit_text(&self) -> String {
        let dev = device_unit(&self.iface);
        let line = |argv: &[String]| {
            let words: Vec<String> = argv.iter().map(|a| exec_word(a)).collect();
            format!("{BINARY} {}", words.join(" "))
        };
        let what = self.steer.steering().summary;
        let mut s = format!(
            "# Written by `rxsteer install`; `rxsteer uninstall` removes it. Do not edit: install\n\
             # again with other flags instead.\n\
             [Unit]\n\
             Description=rxsteer: {what} on {iface}\n\
             BindsTo={dev}\n\
             After={dev} network-online.target\n\
             Wants=network-online.target\n\
             {limit}\
             \n\
             [Service]\n",
            iface = self.iface.replace('%', "%%"),
            // A service that keeps failing (cpumap on an interface that refuses it) stops
            // being restarted after three tries in a minute, instead of every 5 s for ever.
            limit = if self.exec_stop().is_none() {
                "StartLimitIntervalSec=60\nStartLimitBurst=3\n"
            } else {
                ""
            }
        );
        match self.exec_stop() {
            Some(stop) => {
                s.push_str("Type=oneshot\nRemainAfterExit=yes\n");
                s.push_str(&format!("ExecStart={}\n", line(&self.exec_start())));
                s.push_str(&format!("ExecStop={}\n", line(&stop)));
            }
            None => {
                s.push_str("Type=simple\n");
                s.push_str(&format!("ExecStart={}\n", line(&self.exec_start())));
                // attach restores on SIGTERM; a crash is restarted, and the next start puts
                // back what the crash left.
                s.push_str("KillSignal=SIGTERM\nTimeoutStopSec=30s\n");
                s.push_str("Restart=on-failure\nRestartSec=5s\n");
            }
        }
        s.push_str(HARDENING);
        s.push_str("\n[Install]\nWantedBy=multi-user.target\n");
        s
    }
}

/// One word of an `ExecStart=` line as systemd reads it back (systemd.service, "Command
/// lines"): `%` and `$` doubled (no specifier or variable is expanded), and a word holding a
/// blank, a quote, a backslash or a `;` (or none at all) in double quotes, with `\` and `"`
/// escaped. An interface may be named `a"b` or `x$y`: such a name stays one literal word.
fn exec_word(arg: &str) -> String {
    let plain = arg.replace('%', "%%").replace('$', "$$");
    let needs_quotes = arg.is_empty()
        || arg
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | '\\' | ';'));
    if !needs_quotes {
        return plain;
    }
    let mut q = String::from("\"");
    for c in plain.chars() {
        if matches!(c, '"' | '\\') {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_words_are_quoted_by_systemds_rules() {
        assert_eq!(exec_word("enP7s7"), "enP7s7");
        assert_eq!(exec_word("a\"b"), r#""a\"b""#);
        assert_eq!(exec_word("x$y"), "x$$y");
        assert_eq!(exec_word("c\\d"), r#""c\\d""#);
        assert_eq!(exec_word("50%"), "50%%");
        assert_eq!(exec_word("a;b"), r#""a;b""#);
        assert_eq!(exec_word(""), r#""""#);
    }

    #[test]
    fn names_are_escaped_as_systemd_escapes_them() {
        assert_eq!(unit_name("enP7s7"), "rxsteer-enP7s7.service");
        assert_eq!(unit_name("veth-a.1"), "rxsteer-veth\\x2da.1.service");
        assert_eq!(unit_name(".x"), "rxsteer-\\x2ex.service");
        assert_eq!(
            device_unit("enP7s7"),
            "sys-subsystem-net-devices-enP7s7.device"
        );
    }

    #[test]
    fn rps_is_a_oneshot_that_reverts_and_bpf_steering_a_service_that_logs() {
        let rps = Ask {
            iface: "eth0".into(),
            steer: Mode::Rps,
            flags: vec![("--cpus", "1-3".into())],
            accept_dissector_reach: false,
        };
        let t = rps.unit_text();
        assert!(t.contains("Type=oneshot\nRemainAfterExit=yes\n"), "{t}");
        assert!(t.contains(&format!(
            "ExecStart={BINARY} tune apply --iface eth0 --profile rps --cpus 1-3\n"
        )));
        assert!(
            t.contains(&format!("ExecStop={BINARY} tune revert\n")),
            "{t}"
        );
        let cpumap = Ask {
            iface: "eth0".into(),
            steer: Mode::Cpumap,
            flags: vec![("--http-cpus", "2".into())],
            accept_dissector_reach: false,
        };
        let t = cpumap.unit_text();
        assert!(t.contains(&format!(
            "ExecStart={BINARY} attach --iface eth0 --steer cpumap --http-cpus 2 --interval 60s\n"
        )));
        assert!(
            !t.contains("ExecStop") && t.contains("Restart=on-failure"),
            "{t}"
        );
        assert!(t.contains("BindsTo=sys-subsystem-net-devices-eth0.device"));
        // A flow dissector is a BPF program too: a service holds it, as it holds cpumap's.
        let dissector = Ask {
            iface: "eth0".into(),
            steer: Mode::RpsDissector,
            flags: vec![("--cpus", "1-3".into())],
            accept_dissector_reach: false,
        };
        let t = dissector.unit_text();
        assert!(
            t.contains(&format!(
                "ExecStart={BINARY} attach --iface eth0 --steer rps-dissector --cpus 1-3 \
                 --interval 60s\n"
            )),
            "{t}"
        );
        assert!(!t.contains("ExecStop") && t.contains("Restart=on-failure"));
    }
}
