//! Who drives the load, and how rxload is started for one protocol: in the lab's client
//! namespace pinned to the loader CPUs, on this host (`--loader local`), or by someone else
//! (`--loader external`: rxsteer only observes for the measured time).
use anyhow::{bail, Context, Result};
use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use super::{
    session::{HTTP_PORT, ZAP_PORT},
    Proto, Scenario,
};
use crate::netns::Netns;
use rxsteer_tune::cpus::format_cpu_list;

pub enum Loader<'a> {
    /// rxload in the lab's client namespace, pinned to these CPUs.
    Lab { ns: &'a Netns, cpus: Vec<u32> },
    /// rxload on this host (pinned when CPUs are given).
    Local { cpus: Option<Vec<u32>> },
    /// Someone else drives the load; only observe.
    External,
}

/// The `--loader` flag's values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoaderArg {
    Local,
    External,
}

pub fn parse_loader(s: &str) -> Result<LoaderArg, String> {
    match s {
        "local" => Ok(LoaderArg::Local),
        "external" => Ok(LoaderArg::External),
        _ => Err(format!("--loader {s:?}: expected local or external")),
    }
}

/// What one load is: everything but where it runs.
pub struct LoadSpec<'a> {
    pub proto: Proto,
    pub scenario: Scenario,
    pub connections: u32,
    pub measure: Duration,
    pub warmup: Duration,
    pub target_ip: &'a str,
    /// rxload's --json, --hgrm and --live files.
    pub json: PathBuf,
    pub hgrm: PathBuf,
    pub live: PathBuf,
}

impl LoadSpec<'_> {
    pub fn url(&self) -> String {
        match self.proto {
            Proto::Http => format!("http://{}:{HTTP_PORT}", self.target_ip),
            Proto::Zap => format!("zap://{}:{ZAP_PORT}", self.target_ip),
        }
    }

    fn rxload_args(&self) -> Vec<String> {
        let secs = |d: Duration| format!("{}ms", d.as_millis());
        let mut a = vec![
            self.url(),
            "-c".into(),
            self.connections.to_string(),
            "-t".into(),
            "1".into(),
            "-d".into(),
            secs(self.measure),
            "--warmup".into(),
            secs(self.warmup),
            "--scenario".into(),
            self.scenario.as_str().into(),
            "--live-interval".into(),
            "500ms".into(),
        ];
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

/// The rxload binary: beside this executable (cargo builds both into one folder).
pub fn rxload_path() -> Result<PathBuf> {
    let me = std::env::current_exe()?;
    let p = me.with_file_name("rxload");
    if !p.is_file() {
        bail!(
            "rxload not found beside {} (build it: cargo build --release -p rxload)",
            me.display()
        );
    }
    Ok(p)
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
            Loader::External => "an external load (rxsteer only observes)".into(),
        }
    }

    /// Starts the load; `None` when someone else drives it.
    pub fn spawn(&self, spec: &LoadSpec) -> Result<Option<Child>> {
        let rxload = rxload_path()?;
        let mut cmd = match self {
            Loader::External => return Ok(None),
            Loader::Lab { ns, cpus } => {
                let mut c = ns.command("taskset");
                c.args(["-c", &format_cpu_list(cpus)]).arg(&rxload);
                c
            }
            Loader::Local { cpus: Some(cpus) } => {
                let mut c = Command::new("taskset");
                c.args(["-c", &format_cpu_list(cpus)]).arg(&rxload);
                c
            }
            Loader::Local { cpus: None } => Command::new(&rxload),
        };
        // The live file is followed from the start: it must not hold a previous run's lines.
        let _ = std::fs::remove_file(&spec.live);
        cmd.args(spec.rxload_args())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map(Some)
            .with_context(|| format!("starting {}", rxload.display()))
    }
}

/// rxload's stderr once it has exited, for an error message.
pub fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s.trim().to_string()
}

/// Reads rxload's JSON; a missing file means it never measured.
pub fn read_result(json: &Path) -> Result<serde_json::Value> {
    let bytes = std::fs::read(json).with_context(|| format!("reading {}", json.display()))?;
    serde_json::from_slice(&bytes)
        .with_context(|| format!("{} is not rxload's JSON", json.display()))
}
