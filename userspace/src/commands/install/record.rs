//! What `rxsteer install` wrote, kept so that `status` can say what is installed and
//! `uninstall` can take back exactly that: the files, and the directories it had to create.
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use rxsteer_records::Mode;

/// Where install records live.
pub const RECORD_DIR: &str = "/etc/rxsteer";

/// The tree units are written into: `/` on a live box, or an image's root (`--root`, as
/// `systemctl --root`), where nothing is started.
#[derive(Clone, Debug)]
pub struct Layout {
    pub root: PathBuf,
}

impl Layout {
    pub fn new(root: Option<&Path>) -> Self {
        Self {
            root: root.map_or_else(|| "/".into(), Path::to_path_buf),
        }
    }

    /// `abs` (a path as the booted box sees it) inside this tree.
    pub fn host(&self, abs: &Path) -> PathBuf {
        rxsteer_tune::profile::under(&self.root, abs)
    }

    pub fn is_image(&self) -> bool {
        self.root != Path::new("/")
    }

    /// The record of `iface`'s unit.
    pub fn record_path(&self, iface: &str) -> PathBuf {
        self.host(&record_of(iface))
    }

    /// Every record in this tree, sorted by interface. A record that does not parse is an
    /// error naming it, never skipped.
    pub fn installed(&self) -> Result<Vec<Installed>> {
        let dir = self.host(Path::new(RECORD_DIR));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                let text = std::fs::read_to_string(&p)
                    .with_context(|| format!("reading {}", p.display()))?;
                let rec: Installed = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not an rxsteer install record", p.display()))?;
                out.push(rec);
            }
        }
        out.sort_by(|a, b| a.iface.cmp(&b.iface));
        Ok(out)
    }
}

/// The record of `iface`'s unit, as the booted box sees it.
pub fn record_of(iface: &str) -> PathBuf {
    Path::new(RECORD_DIR).join(format!("{iface}.json"))
}

/// One installed unit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    pub version: u32,
    pub iface: String,
    pub steer: Mode,
    /// `rxsteer-enP7s7.service`.
    pub unit: String,
    /// The unit's commands after the binary (ExecStart; ExecStop where it has one).
    pub exec_start: Vec<String>,
    pub exec_stop: Option<Vec<String>>,
    /// The profile's CPU list (rps: `--cpus`, napi-thread: `--napi-cpu`), None for every
    /// online CPU.
    pub cpus: Option<Vec<u32>>,
    /// The levers its command sets (`--irq-cpu`, `--ring`, `--coalesce`); none in a record
    /// from before they existed.
    #[serde(default)]
    pub levers: rxsteer_tune::levers::Asked,
    /// Files written, as the booted box sees them, this record's own last.
    pub files: Vec<PathBuf>,
    /// Directories install created, outermost first: uninstall removes them when empty.
    pub created_dirs: Vec<PathBuf>,
}

impl Installed {
    /// Whether `state` (this namespace's tuning snapshot) is this unit's steering applied.
    pub fn applied_in(&self, state: &rxsteer_tune::StateFile) -> bool {
        state.iface == self.iface && state.profile == self.steer.as_str()
    }

    /// Whether the unit runs a session (`attach`, its tuning in the session layer while it
    /// runs) rather than a `tune apply` (the kept tuning).
    pub fn is_session(&self) -> bool {
        self.exec_start.first().is_some_and(|c| c == "attach")
    }
}

/// Creates `abs`'s missing directories in `layout`, appending each it made to `created`.
pub fn create_dirs(layout: &Layout, abs: &Path, created: &mut Vec<PathBuf>) -> Result<()> {
    let mut missing = Vec::new();
    let mut at = Some(abs);
    while let Some(p) = at {
        if layout.host(p).exists() {
            break;
        }
        missing.push(p.to_path_buf());
        at = p.parent();
    }
    for p in missing.into_iter().rev() {
        std::fs::create_dir(layout.host(&p))
            .with_context(|| format!("creating {}", layout.host(&p).display()))?;
        created.push(p);
    }
    Ok(())
}

/// Writes `bytes` to `abs` in `layout` with `mode`, refusing to replace a file that is there.
pub fn write_new(layout: &Layout, abs: &Path, bytes: &[u8], mode: u32) -> Result<()> {
    use std::{io::Write, os::unix::fs::OpenOptionsExt};
    let path = layout.host(abs);
    let mut f = match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            bail!(
                "{} is already there and rxsteer did not write it: left alone",
                path.display()
            )
        }
        Err(e) => return Err(e).with_context(|| format!("writing {}", path.display())),
    };
    f.write_all(bytes)
        .and_then(|()| f.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// Removes what `rec` lists: its files, then the directories it created when they are empty.
/// Returns what it removed.
pub fn remove(layout: &Layout, rec: &Installed) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for f in &rec.files {
        match std::fs::remove_file(layout.host(f)) {
            Ok(()) => removed.push(f.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", f.display())),
        }
    }
    for d in rec.created_dirs.iter().rev() {
        // Not empty: something else put files there since; it stays.
        if std::fs::remove_dir(layout.host(d)).is_ok() {
            removed.push(d.clone());
        }
    }
    Ok(removed)
}
