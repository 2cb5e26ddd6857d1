//! Debian's packages for the guests, through an apt configuration of the project's own
//! (target/vm/apt): its own sources (bookworm, bookworm-backports, trixie, trixie-backports,
//! for amd64 and arm64), lists and cache, so the host's apt never sees these suites or the
//! foreign architecture. Kernels are found by line (6.1, 6.12, ...) in those lists, never by a
//! version written here.
use anyhow::{Context, Result};
use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, SystemTime},
};

use super::Arch;
use crate::cmd;

/// The suites the kernels and the guest's userland come from.
const SOURCES: &str = "\
deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm-backports main
deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main
deb [arch=amd64,arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie-backports main
";

/// The lists are read again after this long.
const LISTS_FRESH: Duration = Duration::from_secs(24 * 3600);

pub struct Apt {
    dir: PathBuf,
}

impl Apt {
    /// The private configuration under `dir`, its lists brought up to date when stale.
    pub fn open(dir: &Path) -> Result<Self> {
        for sub in ["lists/partial", "cache/archives/partial", "debs"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        std::fs::write(dir.join("sources.list"), SOURCES)?;
        let apt = Self {
            dir: dir.to_path_buf(),
        };
        let stamp = dir.join("lists/updated");
        let fresh = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .is_ok_and(|t| SystemTime::now().duration_since(t).unwrap_or_default() < LISTS_FRESH);
        if !fresh {
            eprintln!("xtask vm: reading Debian's package lists (bookworm, trixie and backports; amd64, arm64)");
            cmd::run(
                "vm (apt-get update, private lists)",
                apt.command("apt-get").arg("update").arg("-q"),
            )?;
            std::fs::write(&stamp, b"")?;
        }
        Ok(apt)
    }

    fn command(&self, tool: &str) -> Command {
        let d = &self.dir;
        let mut c = Command::new(tool);
        for (k, v) in [
            ("Dir::Etc::SourceList", d.join("sources.list")),
            ("Dir::Etc::SourceParts", PathBuf::from("/dev/null")),
            ("Dir::Etc::Preferences", PathBuf::from("/dev/null")),
            ("Dir::Etc::PreferencesParts", PathBuf::from("/dev/null")),
            ("Dir::State::Lists", d.join("lists")),
            ("Dir::State::status", PathBuf::from("/dev/null")),
            ("Dir::Cache", d.join("cache")),
        ] {
            c.arg("-o").arg(format!("{k}={}", v.display()));
        }
        c.args([
            "-o",
            "APT::Architectures::=amd64",
            "-o",
            "APT::Architectures::=arm64",
            "-o",
            "Debug::NoLocking=1",
            // Downloads land in a folder the _apt user cannot write: said, not a problem.
            "-o",
            "APT::Sandbox::User=root",
        ]);
        c
    }

    /// Every generic-flavour kernel of `arch` the lists hold: (line, ABI), e.g. ("6.12",
    /// "6.12.111+deb12"). Only the generic flavour carries e1000, e1000e and 8139cp.
    pub fn kernels(&self, arch: Arch) -> Result<Vec<Kernel>> {
        let flavour = arch.debian();
        let out = cmd::output(
            "vm (apt-cache search kernels)",
            self.command("apt-cache")
                .args(["search", "--names-only"])
                .arg(format!("^linux-image-[0-9].*-{flavour}$")),
        )?;
        let mut found: Vec<Kernel> = out
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter_map(|name| {
                let abi = name
                    .strip_prefix("linux-image-")?
                    .strip_suffix(&format!("-{flavour}"))?;
                // cloud-, rt- and the like are other flavours.
                if abi.contains("-cloud") || abi.contains("-rt") || abi.ends_with("-unsigned") {
                    return None;
                }
                let mut parts = abi.split(['.', '-', '+']);
                let line = format!("{}.{}", parts.next()?, parts.next()?);
                Some(Kernel {
                    arch,
                    line,
                    abi: abi.to_string(),
                })
            })
            .collect();
        found.sort_by_key(|k| k.order());
        found.dedup_by(|a, b| a.abi == b.abi);
        Ok(found)
    }

    /// Downloads `packages` (name:arch) into the cache unless there; returns their files.
    pub fn download(&self, packages: &[String]) -> Result<Vec<PathBuf>> {
        let debs = self.dir.join("debs");
        let mut files = Vec::new();
        for p in packages {
            let (name, arch) = p.split_once(':').context("package without :arch")?;
            // name:arch/release: the release picks the version, the file is name_*_arch.deb.
            let arch = arch.split('/').next().unwrap_or(arch);
            let find = || -> Option<PathBuf> {
                std::fs::read_dir(&debs)
                    .ok()?
                    .flatten()
                    .map(|e| e.path())
                    .find(|f| {
                        let n = f
                            .file_name()
                            .unwrap_or_default()
                            .to_string_lossy()
                            .into_owned();
                        n.starts_with(&format!("{name}_")) && n.ends_with(&format!("_{arch}.deb"))
                    })
            };
            if let Some(f) = find() {
                files.push(f);
                continue;
            }
            cmd::run(
                &format!("vm (apt-get download {p})"),
                self.command("apt-get")
                    .arg("download")
                    .arg("-q")
                    .arg(p)
                    .current_dir(&debs),
            )?;
            files.push(find().with_context(|| format!("apt-get download {p} wrote no .deb"))?);
        }
        Ok(files)
    }

    /// What one package depends on, by name (the first of each alternative).
    pub fn depends(&self, package: &str) -> Result<Vec<String>> {
        let out = cmd::output(
            "vm (apt-cache show)",
            self.command("apt-cache")
                .args(["show", "--no-all-versions", package]),
        )?;
        Ok(out
            .lines()
            .find_map(|l| l.strip_prefix("Depends: "))
            .unwrap_or("")
            .split(',')
            .filter_map(|d| {
                d.split('|')
                    .next()?
                    .split_whitespace()
                    .next()
                    .map(String::from)
            })
            .collect())
    }
}

/// One Debian kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub arch: Arch,
    /// major.minor, what `--kernel` names.
    pub line: String,
    /// The package ABI: linux-image-<abi>-<flavour>.
    pub abi: String,
}

impl Kernel {
    /// Sorts by every number in the ABI: 6.1.0-50 after 6.1.0-47, 6.12.111 after 6.12.9.
    fn order(&self) -> Vec<u64> {
        self.abi
            .split(|c: char| !c.is_ascii_digit())
            .filter_map(|n| n.parse().ok())
            .collect()
    }

    pub fn image_package(&self) -> String {
        format!(
            "linux-image-{}-{}:{}",
            self.abi,
            self.arch.debian(),
            self.arch.debian()
        )
    }
}

/// The newest kernel of each line, oldest line first.
pub fn newest_per_line(all: &[Kernel]) -> Vec<Kernel> {
    let mut out: Vec<Kernel> = Vec::new();
    for k in all {
        match out.iter_mut().find(|o| o.line == k.line) {
            Some(o) if o.order() < k.order() => *o = k.clone(),
            Some(_) => {}
            None => out.push(k.clone()),
        }
    }
    out.sort_by_key(|k| k.order());
    out
}

/// `--kernel LINE` (or `newest`) among what exists; the error lists what does.
pub fn pick(all: &[Kernel], want: &str) -> Result<Kernel> {
    let lines = newest_per_line(all);
    let found = if want == "newest" {
        lines.last().cloned()
    } else {
        lines.iter().find(|k| k.line == want).cloned()
    };
    match found {
        Some(k) => Ok(k),
        None => Err(crate::cmd::BadValue(format!(
            "--kernel {want}: no such Debian kernel line for {}; these exist: {} (or newest)",
            all.first().map_or("this arch", |k| k.arch.rust()),
            lines
                .iter()
                .map(|k| k.line.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(abi: &str) -> Kernel {
        let mut p = abi.split(['.', '-', '+']);
        Kernel {
            arch: Arch::X86_64,
            line: format!("{}.{}", p.next().unwrap(), p.next().unwrap()),
            abi: abi.into(),
        }
    }

    #[test]
    fn the_newest_of_each_line_and_a_missing_line_lists_the_others() {
        let all = [
            k("6.1.0-47"),
            k("6.1.0-50"),
            k("6.12.9+deb12"),
            k("6.12.111+deb12"),
            k("7.3.4+deb13"),
        ];
        let lines = newest_per_line(&all);
        let abis: Vec<_> = lines.iter().map(|k| k.abi.as_str()).collect();
        assert_eq!(abis, ["6.1.0-50", "6.12.111+deb12", "7.3.4+deb13"]);
        assert_eq!(pick(&all, "newest").unwrap().abi, "7.3.4+deb13");
        let e = pick(&all, "9.99").unwrap_err();
        assert!(e.is::<crate::cmd::BadValue>(), "exits 2");
        let e = e.to_string();
        assert!(
            e.contains("--kernel 9.99") && e.contains("6.1, 6.12, 7.3"),
            "{e}"
        );
    }
}
