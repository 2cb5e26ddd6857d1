//! Who drives the load, and how rxload is started for one protocol: in the lab's client
//! namespace pinned to the loader CPUs, on this host (`--loader local`), in a network
//! namespace of this host that holds a NIC wired to the interface (`--loader netns:NAME`),
//! on other machines
//! over ssh (`--loader ssh://...`, several at once, merged), or by someone else (`--loader
//! external`: rxsteer only observes for the measured time).
use anyhow::{bail, Context, Result};
use rxsteer_records::LoadResult;
use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use super::{
    merge::merge,
    ssh::{parse_dest, SshDest, SshLoaders},
};
use crate::{
    child::{die_with_parent, rxload_path, stderr_of},
    netns::Netns,
};
use rxsteer_records::{LoaderIo, Proto, Scenario};
use rxsteer_tune::cpus::format_cpu_list;

pub enum Loader<'a> {
    /// rxload in the lab's client namespace, pinned to these CPUs.
    Lab { ns: &'a Netns, cpus: Vec<u32> },
    /// rxload on this host (pinned when CPUs are given).
    Local { cpus: Option<Vec<u32>> },
    /// rxload in an existing network namespace of this host (one we did not create, so it
    /// is not ours to delete): a second NIC there, cabled to the interface, carries the load
    /// across its receive queue, as a VM's two NICs on one wire do.
    Netns {
        name: String,
        cpus: Option<Vec<u32>>,
    },
    /// rxload on other machines, over ssh.
    Ssh(SshLoaders),
    /// Someone else drives the load; only observe.
    External,
}

/// One `--loader` value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoaderArg {
    Local,
    External,
    Netns(String),
    Ssh(SshDest),
}

pub fn parse_loader(s: &str) -> Result<LoaderArg, String> {
    match s {
        "local" => Ok(LoaderArg::Local),
        "external" => Ok(LoaderArg::External),
        _ if s.starts_with("ssh://") => parse_dest(s).map(LoaderArg::Ssh),
        _ if s.starts_with("netns:") => {
            let name = &s["netns:".len()..];
            // ip netns keeps a namespace as /run/netns/NAME: one path component.
            let ok = !name.is_empty()
                && name != "."
                && name != ".."
                && name.len() <= 255
                && !name
                    .bytes()
                    .any(|b| b == b'/' || b.is_ascii_whitespace() || b == 0);
            if ok {
                Ok(LoaderArg::Netns(name.to_string()))
            } else {
                Err(format!("--loader {s:?}: netns:NAME needs a namespace name (as `ip netns list` shows it)"))
            }
        }
        _ => Err(format!(
            "--loader {s:?}: expected local, external, netns:NAME or ssh://[user@]host[:port]"
        )),
    }
}

/// The ssh destinations of the --loader values; local, netns and external stand alone.
pub fn ssh_dests(args: &[LoaderArg]) -> Result<Vec<SshDest>> {
    let ssh: Vec<SshDest> = args
        .iter()
        .filter_map(|a| match a {
            LoaderArg::Ssh(d) => Some(d.clone()),
            _ => None,
        })
        .collect();
    if !ssh.is_empty() && ssh.len() != args.len() {
        bail!("--loader local, netns or external cannot be mixed with ssh:// loaders");
    }
    if ssh.is_empty() && args.len() > 1 {
        bail!("--loader local, netns or external is given once");
    }
    Ok(ssh)
}

/// What one load is: everything but where it runs.
pub struct LoadSpec<'a> {
    pub proto: Proto,
    pub scenario: Scenario,
    /// rxload's --body-size, when given.
    pub body_size: Option<u32>,
    /// Open loop at this many requests per second (rxload --rate), else closed loop.
    pub rate: Option<f64>,
    pub connections: u32,
    pub io: LoaderIo,
    pub measure: Duration,
    pub warmup: Duration,
    pub target_ip: &'a str,
    /// File-name stem of this load's files (`<mode>-<proto>-rep<N>`).
    pub base: String,
    /// rxload's live interval where the caller cuts windows of its own from the live lines
    /// (`--interleave`); None: [`live_interval`] of the warm-up and measured time.
    pub live_every: Option<Duration>,
    /// rxload's --json, --hgrm and --live files, here.
    pub json: PathBuf,
    pub hgrm: PathBuf,
    pub live: PathBuf,
}

/// A test hook: a load whose file stem starts with `RXSTEER_INJECT_LOAD_FAILURE`'s value
/// (`rps-http`) is sent to a port nothing listens on, as if its server had fallen over: every
/// connection is refused, no request succeeds, and rxload exits 1.
const INJECT_LOAD_FAILURE: &str = "RXSTEER_INJECT_LOAD_FAILURE";

/// A port no server of the comparison listens on (the discard port).
const NOBODY_PORT: u16 = 9;

impl LoadSpec<'_> {
    pub fn url(&self) -> String {
        let injected = std::env::var(INJECT_LOAD_FAILURE)
            .is_ok_and(|stem| !stem.is_empty() && self.base.starts_with(&stem));
        let port = |p: u16| if injected { NOBODY_PORT } else { p };
        let spec = self.proto.spec();
        format!("{}://{}:{}", spec.scheme, self.target_ip, port(spec.port))
    }

    /// rxload's arguments, without where its files go.
    fn rxload_args(&self) -> Vec<String> {
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let mut a = vec![
            self.url(),
            "-c".into(),
            self.connections.to_string(),
            "-t".into(),
            "1".into(),
            "-d".into(),
            ms(self.measure),
            "--warmup".into(),
            ms(self.warmup),
            "--scenario".into(),
            self.scenario.as_str().into(),
            "--io".into(),
            self.io.as_str().into(),
            // Samples are tagged measured from the first measured live line on: a short
            // window (a search step) needs lines closer together than 500 ms.
            "--live-interval".into(),
            ms(self
                .live_every
                .unwrap_or_else(|| live_interval(self.warmup, self.measure))),
            // The comparison records every error by kind and judges the load itself; a
            // failed request must not abort the whole run.
            "--max-errors".into(),
            "100".into(),
        ];
        if let Some(b) = self.body_size {
            a.extend(["--body-size".into(), b.to_string()]);
        }
        if let Some(r) = self.rate {
            a.extend(["--rate".into(), format!("{r}")]);
        }
        a
    }

    fn local_files(&self) -> Vec<String> {
        let mut a = Vec::new();
        for (flag, p) in [
            ("--json", &self.json),
            ("--hgrm", &self.hgrm),
            ("--live", &self.live),
        ] {
            a.push(flag.into());
            a.push(p.display().to_string());
        }
        a
    }
}

/// rxload's live interval for a window: 500 ms, or less where the warm-up or a third of the
/// measured time is shorter (never under 50 ms).
pub fn live_interval(warmup: Duration, measure: Duration) -> Duration {
    let mut i = Duration::from_millis(500).min(measure / 3);
    if !warmup.is_zero() {
        i = i.min(warmup);
    }
    Duration::from_millis(i.as_millis() as u64).max(Duration::from_millis(50))
}

impl Loader<'_> {
    pub fn describe(&self) -> String {
        match self {
            Loader::Lab { cpus, .. } => {
                format!(
                    "rxload in the lab's client namespace on CPUs {}",
                    format_cpu_list(cpus)
                )
            }
            Loader::Local { cpus: Some(c) } => {
                format!("rxload on this host on CPUs {}", format_cpu_list(c))
            }
            Loader::Local { cpus: None } => "rxload on this host".into(),
            Loader::Netns { name, cpus } => format!(
                "rxload in network namespace {name} of this host{}",
                cpus.as_ref().map_or(String::new(), |c| format!(
                    " on CPUs {}",
                    format_cpu_list(c)
                ))
            ),
            Loader::Ssh(s) => format!(
                "rxload over ssh on {}",
                s.dests
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Loader::External => "an external load (rxsteer only observes)".into(),
        }
    }

    /// Starts the load: every rxload of it (none when someone else drives it).
    pub fn spawn(&self, spec: &LoadSpec) -> Result<Vec<Child>> {
        // The live file is followed from the start: it must not hold a previous run's lines.
        let _ = std::fs::remove_file(&spec.live);
        let rxload = rxload_path()?;
        let local = |mut cmd: Command| -> Result<Vec<Child>> {
            die_with_parent(&mut cmd);
            cmd.args(spec.rxload_args())
                .args(spec.local_files())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map(|c| vec![c])
                .with_context(|| format!("starting {}", rxload.display()))
        };
        match self {
            Loader::External => Ok(vec![]),
            Loader::Lab { ns, cpus } => {
                let mut c = ns.command("taskset");
                c.args(["-c", &format_cpu_list(cpus)]).arg(&rxload);
                local(c)
            }
            Loader::Local { cpus: Some(cpus) } => {
                let mut c = Command::new("taskset");
                c.args(["-c", &format_cpu_list(cpus)]).arg(&rxload);
                local(c)
            }
            Loader::Local { cpus: None } => local(Command::new(&rxload)),
            Loader::Netns { name, cpus } => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", name]);
                if let Some(cpus) = cpus {
                    c.args(["taskset", "-c", &format_cpu_list(cpus)]);
                }
                c.arg(&rxload);
                local(c)
            }
            Loader::Ssh(s) => s
                .dests
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    // Live lines come back on ssh's stderr: the first loader's feed the screen.
                    let live = if i == 0 {
                        spec.live.clone()
                    } else {
                        loader_file(&spec.live, i)
                    };
                    let mut args = spec.rxload_args();
                    args.extend([
                        "--json".into(),
                        s.remote_json(i, &spec.base),
                        "--live".into(),
                        "/dev/stderr".into(),
                    ]);
                    let remote = s.remote_rxload(i);
                    let mut all: Vec<&str> = vec![&remote];
                    all.extend(args.iter().map(String::as_str));
                    let mut c = s.ssh(d, &all);
                    die_with_parent(&mut c);
                    c.stdout(Stdio::null())
                        .stderr(std::fs::File::create(&live)?)
                        .spawn()
                        .with_context(|| format!("starting rxload on {d}"))
                })
                .collect(),
        }
    }

    /// After the load: each rxload's exit checked, its result read (fetched and merged for
    /// ssh loaders), and the merged result stored as `spec.json`. No result for an external
    /// load. rxload's exit 1 (no request succeeded: the comparison passes `--max-errors 100`)
    /// is the load's failure, not the run's: its result, written before it exited, is kept
    /// with the reason. Any other failure (a bad flag, a dead load thread, a lost ssh
    /// connection) ends the run.
    pub fn collect(&self, spec: &LoadSpec, children: &mut [Child]) -> Result<Collected> {
        let mut failed = None;
        for (i, c) in children.iter_mut().enumerate() {
            let status = c.wait()?;
            if !status.success() {
                let why = match self {
                    Loader::Ssh(_) => {
                        let f = if i == 0 {
                            spec.live.clone()
                        } else {
                            loader_file(&spec.live, i)
                        };
                        std::fs::read_to_string(f)
                            .unwrap_or_default()
                            .lines()
                            .filter(|l| !l.starts_with('{'))
                            .collect::<Vec<_>>()
                            .join(" ")
                    }
                    _ => stderr_of(c),
                };
                if status.code() != Some(1) {
                    bail!("rxload ({}) failed with {status}: {why}", spec.base);
                }
                failed = Some(why.trim().trim_start_matches("rxload: ").to_string());
            }
        }
        let load = match self {
            Loader::External => None,
            Loader::Ssh(s) => {
                let mut all = Vec::new();
                for (i, d) in s.dests.iter().enumerate() {
                    let v = s.fetch(d, &s.remote_json(i, &spec.base))?;
                    rxsteer_report::files::write_replacing(
                        loader_file(&spec.json, i),
                        serde_json::to_vec_pretty(&v)?,
                    )?;
                    all.push(v);
                }
                let merged = merge(&all)?;
                rxsteer_report::files::write_replacing(
                    &spec.json,
                    serde_json::to_vec_pretty(&merged)?,
                )?;
                Some(merged)
            }
            _ => Some(read_result(&spec.json)?),
        };
        Ok(Collected { load, failed })
    }
}

/// What one load window left: rxload's result (none for an external load) and, when no
/// request succeeded, why.
pub struct Collected {
    pub load: Option<LoadResult>,
    pub failed: Option<String>,
}

/// `x.json` -> `x-loader<i>.json`: one loader's own file beside the merged one.
fn loader_file(p: &Path, i: usize) -> PathBuf {
    let stem = p.file_stem().unwrap_or_default().to_string_lossy();
    let ext = p
        .extension()
        .map_or(String::new(), |e| format!(".{}", e.to_string_lossy()));
    p.with_file_name(format!("{stem}-loader{i}{ext}"))
}

/// Reads rxload's JSON; a missing file means it never measured.
fn read_result(json: &Path) -> Result<LoadResult> {
    let bytes = std::fs::read(json).with_context(|| format!("reading {}", json.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not rxload's JSON", json.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loader_values_and_mixes() {
        assert_eq!(parse_loader("local").unwrap(), LoaderArg::Local);
        assert!(matches!(
            parse_loader("ssh://h").unwrap(),
            LoaderArg::Ssh(_)
        ));
        assert!(parse_loader("ftp://h")
            .unwrap_err()
            .contains("expected local, external, netns:NAME"));
        assert_eq!(
            parse_loader("netns:client").unwrap(),
            LoaderArg::Netns("client".into())
        );
        for bad in ["netns:", "netns:a/b", "netns:..", "netns:a b"] {
            assert!(
                parse_loader(bad).unwrap_err().contains("netns:NAME"),
                "{bad}"
            );
        }
        let ssh = |h: &str| parse_loader(&format!("ssh://{h}")).unwrap();
        assert!(ssh_dests(&[LoaderArg::Netns("n".into()), ssh("a")]).is_err());
        assert_eq!(ssh_dests(&[ssh("a"), ssh("b")]).unwrap().len(), 2);
        assert!(ssh_dests(&[LoaderArg::Local, ssh("a")]).is_err());
        assert!(ssh_dests(&[LoaderArg::Local, LoaderArg::External]).is_err());
        assert!(ssh_dests(&[LoaderArg::External]).unwrap().is_empty());
    }

    #[test]
    fn short_windows_get_live_lines_closer_together() {
        let ms = Duration::from_millis;
        assert_eq!(live_interval(ms(1000), ms(5000)), ms(500));
        assert_eq!(live_interval(ms(250), ms(500)), ms(166));
        assert_eq!(live_interval(ms(200), ms(300)), ms(100));
        assert_eq!(live_interval(Duration::ZERO, ms(60_000)), ms(500));
        assert_eq!(live_interval(ms(10), ms(200)), ms(50));
    }

    #[test]
    fn per_loader_files_sit_beside_the_merged_one() {
        assert_eq!(
            loader_file(Path::new("/r/rxload-none-http-rep0.json"), 1),
            Path::new("/r/rxload-none-http-rep0-loader1.json")
        );
    }
}
