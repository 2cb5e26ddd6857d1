//! Loaders on other machines, reached with the OpenSSH client: `--loader
//! ssh://[user@]host[:port]` (repeatable). Each is checked first (reachable, same
//! architecture); this host's rxload is copied to a private folder there and removed after
//! the run. A remote rxload writes its live lines to its stderr, which ssh brings back into a
//! local file; its JSON is fetched after each load. Only fixed commands of ours run remotely:
//! paths we made, numbers, a parsed IPv4 target; user and host are validated.
use anyhow::{bail, Context, Result};
use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SshDest {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

impl std::fmt::Display for SshDest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ssh://")?;
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        write!(f, "{}", self.host)?;
        if let Some(p) = self.port {
            write!(f, ":{p}")?;
        }
        Ok(())
    }
}

/// `ssh://[user@]host[:port]`, with a user and host that cannot be read as options or carry
/// anything but a name.
pub fn parse_dest(s: &str) -> Result<SshDest, String> {
    let bad = |why: &str| format!("--loader {s:?}: {why} (expected ssh://[user@]host[:port])");
    let rest = s
        .strip_prefix("ssh://")
        .ok_or_else(|| bad("not an ssh:// address"))?;
    let (user, hostport) = match rest.split_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, rest),
    };
    if let Some(u) = user {
        let ok = !u.is_empty()
            && !u.starts_with('-')
            && u.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !ok {
            return Err(bad("bad user name"));
        }
    }
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (
            h,
            Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| bad("bad port"))?,
            ),
        ),
        None => (hostport, None),
    };
    let ok = !host.is_empty()
        && !host.starts_with(['-', '.'])
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.".contains(&b));
    if !ok {
        return Err(bad("bad host name"));
    }
    Ok(SshDest {
        user: user.map(str::to_string),
        host: host.to_string(),
        port,
    })
}

/// The ssh loaders of one run, each with its remote folder (removed when dropped).
pub struct SshLoaders {
    pub dests: Vec<SshDest>,
    config: Option<PathBuf>,
    /// Each prepared loader's folder, in `dests` order: made there by `mktemp -d` (0700, a
    /// name nobody can guess or plant beforehand).
    remote_dirs: Vec<String>,
}

impl SshLoaders {
    /// A command on `d`: `ssh [-F config] -o BatchMode=yes ... -- [user@]host ARGS`.
    pub fn ssh(&self, d: &SshDest, remote: &[&str]) -> Command {
        let mut c = Command::new("ssh");
        if let Some(f) = &self.config {
            c.arg("-F").arg(f);
        }
        c.args([
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=5",
            "-o",
            "LogLevel=ERROR",
        ]);
        if let Some(p) = d.port {
            c.args(["-p", &p.to_string()]);
        }
        c.arg("--");
        c.arg(match &d.user {
            Some(u) => format!("{u}@{}", d.host),
            None => d.host.clone(),
        });
        c.args(remote);
        c.stdin(Stdio::null());
        c
    }

    fn run(&self, d: &SshDest, remote: &[&str], stdin: Option<&Path>) -> Result<String> {
        let mut c = self.ssh(d, remote);
        if let Some(p) = stdin {
            c.stdin(std::fs::File::open(p)?);
        }
        crate::child::output_of(
            &mut c,
            "running ssh (is the OpenSSH client installed?)",
            format_args!("loader {d}: `{}`", remote.join(" ")),
        )
    }

    /// Checks every loader and copies this host's rxload to each, before anything changes.
    pub fn prepare(dests: Vec<SshDest>, config: Option<PathBuf>, rxload: &Path) -> Result<Self> {
        let mut me = Self {
            dests,
            config,
            remote_dirs: Vec::new(),
        };
        for d in me.dests.clone() {
            let arch = me.run(&d, &["uname", "-m"], None).map_err(|e| {
                e.context(format!(
                    "loader {d} is not reachable over ssh (BatchMode: keys only)"
                ))
            })?;
            if arch.trim() != std::env::consts::ARCH {
                bail!(
                    "loader {d} is {} and this host is {}: rxload cannot be copied there; \
                     build it for that machine (cargo xtask build --target ...)",
                    arch.trim(),
                    std::env::consts::ARCH
                );
            }
            let copy = "umask 077 && d=$(mktemp -d \"${TMPDIR:-/tmp}/rxsteer-loader.XXXXXXXXXX\") \
                        && cat > \"$d/rxload\" && chmod 700 \"$d/rxload\" && echo \"$d\"";
            let dir = me.run(&d, &[copy], Some(rxload))?;
            let dir = remote_dir_said(&dir)
                .with_context(|| format!("loader {d}: mktemp -d answered {:?}", dir.trim()))?;
            me.remote_dirs.push(dir);
        }
        Ok(me)
    }

    /// rxload on loader `i`.
    pub fn remote_rxload(&self, i: usize) -> String {
        format!("{}/rxload", self.remote_dirs[i])
    }

    /// The remote file of one load's JSON on loader `i`.
    pub fn remote_json(&self, i: usize, base: &str) -> String {
        format!("{}/rxload-{base}.json", self.remote_dirs[i])
    }

    /// Fetches a remote JSON result.
    pub fn fetch(&self, d: &SshDest, path: &str) -> Result<rxsteer_records::LoadResult> {
        let text = self.run(d, &["cat", path], None)?;
        serde_json::from_str(&text)
            .with_context(|| format!("loader {d}: {path} is not rxload's JSON"))
    }
}

/// The folder `mktemp -d` printed, if it is one: an absolute path of plain characters (it goes
/// into later remote command lines).
fn remote_dir_said(out: &str) -> Result<String> {
    let dir = out.trim();
    let plain = dir
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-'));
    if !dir.starts_with('/') || !plain || dir.contains("..") {
        bail!("not a folder rxsteer made");
    }
    Ok(dir.to_string())
}

impl Drop for SshLoaders {
    /// Leaves each loader as found: the copied rxload and its results go.
    fn drop(&mut self) {
        for (d, dir) in self.dests.iter().zip(&self.remote_dirs) {
            if let Err(e) = self.run(d, &["rm", "-rf", dir], None) {
                eprintln!("rxsteer: could not clean {dir} on {d}: {e:#}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_plain_absolute_folder_from_mktemp_is_used() {
        assert_eq!(
            remote_dir_said("/tmp/rxsteer-loader.Ab3dE9xYz1\n").unwrap(),
            "/tmp/rxsteer-loader.Ab3dE9xYz1"
        );
        for bad in [
            "",
            "tmp/x",
            "/tmp/a b",
            "/tmp/$(reboot)",
            "/tmp/../etc",
            "/tmp/x;rm",
        ] {
            assert!(remote_dir_said(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn destinations_parse_and_hostile_ones_are_refused() {
        assert_eq!(
            parse_dest("ssh://root@10.0.0.2:2222").unwrap(),
            SshDest {
                user: Some("root".into()),
                host: "10.0.0.2".into(),
                port: Some(2222)
            }
        );
        let d = parse_dest("ssh://loader-1.lab").unwrap();
        assert_eq!((d.user, d.port), (None, None));
        assert_eq!(
            parse_dest("ssh://u@h:22").unwrap().to_string(),
            "ssh://u@h:22"
        );
        for bad in [
            "http://x",
            "ssh://",
            "ssh://-oProxyCommand=x",
            "ssh://h;rm -rf /",
            "ssh://u$(id)@h",
            "ssh://h:0",
            "ssh://h:99999",
            "ssh://@h",
            "ssh://h h",
        ] {
            assert!(parse_dest(bad).is_err(), "{bad}");
        }
    }
}
