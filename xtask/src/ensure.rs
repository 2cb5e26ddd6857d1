//! `cargo xtask ensure`: every prerequisite of the eBPF build and the tests, installed when
//! missing, each step idempotent. A second run checks and says so in well under a second.
use anyhow::{bail, Context, Result};
use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::cmd::{self, on_path};

/// bpf-linker release built here, and the LLVM majors it supports (its cargo features).
const BPF_LINKER_VERSION: &str = "0.13.0";
const BPF_LINKER_LLVM_MAJORS: [u32; 3] = [21, 22, 23];
/// The toolchain that builds `ebpf/` (build-std needs nightly).
pub const EBPF_TOOLCHAIN: &str = "nightly";

/// Commands the tests and the lab use, and the Debian package of each.
const PACKAGES: [(&str, &str); 5] = [
    ("ip", "iproute2"),
    ("ethtool", "ethtool"),
    ("bpftool", "bpftool"),
    ("taskset", "util-linux"),
    // The client for ssh:// loaders.
    ("ssh", "openssh-client"),
];

/// What only the tests need: the ssh-loader test runs its own sshd in a namespace, with keys
/// it makes (ssh-keygen); CI reads the main job's run.json with jq; the install tests check
/// their units with systemd-analyze and enable them in an image with systemctl. Not installed
/// for `run`: a user's machine gets no sshd from rxsteer. The metrics test scrapes rxsteer's
/// endpoint with Debian's own Prometheus server and checks the exposition with its promtool.
pub const TEST_PACKAGES: [(&str, &str); 6] = [
    ("ssh-keygen", "openssh-client"),
    ("sshd", "openssh-server"),
    ("jq", "jq"),
    ("systemd-analyze", "systemd"),
    ("prometheus", "prometheus"),
    ("promtool", "prometheus"),
];

pub struct Paths {
    pub root: PathBuf,
    pub tools: PathBuf,
}

impl Paths {
    pub fn new() -> Self {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("xtask lives in the workspace")
            .to_path_buf();
        // CI may point this at a cache outside the clone; the stamp keeps it honest.
        let tools = std::env::var_os("RXSTEER_TOOLS_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| root.join("target/tools"));
        Self { root, tools }
    }

    pub fn bpf_linker_bin(&self) -> PathBuf {
        self.tools.join("bin")
    }
}

pub fn ensure(paths: &Paths) -> Result<()> {
    let mut did = Vec::new();
    packages(&mut did)?;
    rust_src(&mut did)?;
    bpf_linker(paths, &mut did)?;
    mounts(&mut did)?;
    if did.is_empty() {
        eprintln!("xtask ensure: all prerequisites present, nothing to do");
    } else {
        eprintln!("xtask ensure: done ({})", did.join(", "));
    }
    Ok(())
}

fn packages(did: &mut Vec<String>) -> Result<()> {
    install_missing("packages", &PACKAGES, did)
}

/// Installs the Debian packages a task needs when their commands are missing.
pub fn packages_for(task: &str, wanted: &[(&str, &str)]) -> Result<()> {
    let mut did = Vec::new();
    install_missing(task, wanted, &mut did)
}

fn install_missing(step: &str, wanted: &[(&str, &str)], did: &mut Vec<String>) -> Result<()> {
    let missing: Vec<&str> = wanted
        .iter()
        .filter(|(bin, _)| !on_path(bin) && !Path::new("/usr/sbin").join(bin).exists())
        .map(|&(_, pkg)| pkg)
        .collect();
    apt_install(step, &missing, did)
}

/// Installs the Debian packages that dpkg does not list as installed (for packages that ship
/// no command to look for, such as a cross libc).
pub fn install_packages(step: &str, pkgs: &[&str]) -> Result<()> {
    let missing: Vec<&str> = pkgs
        .iter()
        .copied()
        .filter(|p| {
            !Command::new("dpkg")
                .args(["-s", p])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .collect();
    apt_install(step, &missing, &mut Vec::new())
}

fn apt_install(step: &str, missing: &[&str], did: &mut Vec<String>) -> Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    if !cmd::is_root() {
        bail!(
            "step {step}: missing Debian packages {}; run as root or install them: \
             apt-get install {}",
            missing.join(" "),
            missing.join(" ")
        );
    }
    eprintln!("xtask ensure: installing {}", missing.join(" "));
    apt_get("step packages (apt-get update)", &["update", "-qq"])?;
    apt_get_install("step packages (apt-get install)", missing)?;
    did.push(format!("installed {}", missing.join(" ")));
    Ok(())
}

/// `apt-get install` of `pkgs`, non-interactive, waiting for the dpkg lock.
fn apt_get_install(what: &str, pkgs: &[&str]) -> Result<()> {
    let mut args = vec!["install", "-y", "-qq", "--no-install-recommends"];
    args.extend_from_slice(pkgs);
    apt_get(what, &args)
}

/// apt-get with `args`, saying once when another apt or dpkg holds the lock; apt then waits
/// for it itself, bounded, instead of failing at once.
fn apt_get(what: &str, args: &[&str]) -> Result<()> {
    if let Some(notice) = lock_wait_notice() {
        eprintln!("{notice}");
    }
    let wait = format!("DPkg::Lock::Timeout={DPKG_LOCK_WAIT_S}");
    cmd::run(
        what,
        Command::new("apt-get")
            .args(["-o", &wait])
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// What ensure says while the dpkg lock is held by someone else; None when it is free.
fn lock_wait_notice() -> Option<String> {
    dpkg_lock_held().then(|| {
        format!(
            "xtask ensure: another apt or dpkg holds the dpkg lock (on a fresh box, often \
             unattended-upgrades): waiting for it, at most {DPKG_LOCK_WAIT_S} s"
        )
    })
}

/// How long apt may wait for another apt or dpkg to let go of the lock.
pub const DPKG_LOCK_WAIT_S: u32 = 600;
const DPKG_LOCK: &str = "/var/lib/dpkg/lock-frontend";

/// Whether another process holds dpkg's front-end lock: apt takes it as a POSIX (fcntl)
/// write lock, so ask with F_GETLK, which takes nothing.
pub fn dpkg_lock_held() -> bool {
    lock_held(Path::new(DPKG_LOCK))
}

/// Whether another process holds a POSIX write lock on `path`.
fn lock_held(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    else {
        return false;
    };
    // SAFETY: a zeroed flock asked about with F_GETLK on a descriptor this function owns.
    unsafe {
        let mut l: libc::flock = std::mem::zeroed();
        l.l_type = libc::F_WRLCK as libc::c_short;
        l.l_whence = libc::SEEK_SET as libc::c_short;
        libc::fcntl(f.as_raw_fd(), libc::F_GETLK, &mut l) == 0
            && l.l_type != libc::F_UNLCK as libc::c_short
    }
}

fn nightly_sysroot() -> Result<PathBuf> {
    let out = cmd::output(
        "step rust-src (nightly sysroot)",
        Command::new("rustc")
            .args([&format!("+{EBPF_TOOLCHAIN}"), "--print", "sysroot"])
            .env_remove("RUSTUP_TOOLCHAIN"),
    );
    match out {
        Ok(s) => Ok(PathBuf::from(s.trim())),
        Err(e) => bail!(
            "{e:#}\nThe eBPF crate needs a nightly toolchain: rustup toolchain install nightly \
             --profile minimal --component rust-src"
        ),
    }
}

/// The nightly's rust-src, which the eBPF crate's build-std needs: a rustup component, no
/// system package (what `cargo xtask lint` needs beyond the stable toolchain).
pub fn rust_src_only() -> Result<()> {
    rust_src(&mut Vec::new())
}

fn rust_src(did: &mut Vec<String>) -> Result<()> {
    let sysroot = nightly_sysroot()?;
    if sysroot.join("lib/rustlib/src/rust/library/core").is_dir() {
        return Ok(());
    }
    eprintln!("xtask ensure: adding rust-src to {EBPF_TOOLCHAIN}");
    cmd::run(
        "step rust-src",
        Command::new("rustup").args([
            "component",
            "add",
            "rust-src",
            "--toolchain",
            EBPF_TOOLCHAIN,
        ]),
    )?;
    did.push("added rust-src".into());
    Ok(())
}

/// The nightly's LLVM major version and its shared libLLVM, which bpf-linker links against.
fn nightly_llvm() -> Result<(u32, PathBuf)> {
    let vv = cmd::output(
        "step bpf-linker (rustc -vV)",
        Command::new("rustc")
            .args([&format!("+{EBPF_TOOLCHAIN}"), "-vV"])
            .env_remove("RUSTUP_TOOLCHAIN"),
    )?;
    let major = vv
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .and_then(|v| v.split('.').next()?.parse::<u32>().ok())
        .context("step bpf-linker: `rustc +nightly -vV` printed no LLVM version")?;
    let lib = nightly_sysroot()?.join("lib");
    let so = std::fs::read_dir(&lib)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("libLLVM.so.{major}")))
        })
        .with_context(|| {
            format!(
                "step bpf-linker: no libLLVM.so.{major}* in {}",
                lib.display()
            )
        })?;
    Ok((major, so))
}

fn bpf_linker(paths: &Paths, did: &mut Vec<String>) -> Result<()> {
    let (major, so) = nightly_llvm()?;
    if !BPF_LINKER_LLVM_MAJORS.contains(&major) {
        bail!(
            "step bpf-linker: the nightly uses LLVM {major}; bpf-linker {BPF_LINKER_VERSION} \
             supports LLVM {BPF_LINKER_LLVM_MAJORS:?}. Install a matching nightly."
        );
    }
    let stamp_path = paths.tools.join("bpf-linker.stamp");
    let stamp = format!("{BPF_LINKER_VERSION} {}\n", so.display());
    let bin = paths.bpf_linker_bin().join("bpf-linker");
    if bin.is_file() && std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(&stamp) {
        return Ok(());
    }
    eprintln!(
        "xtask ensure: building bpf-linker {BPF_LINKER_VERSION} against the nightly's LLVM \
         {major} into {} (about 2-3 minutes, once)",
        paths.tools.display()
    );
    // LLVM_PREFIX/lib must hold libLLVM.so; the binary keeps a RUNPATH to this folder.
    let llvm = paths.tools.join(format!("llvm-{major}"));
    let lib = llvm.join("lib");
    std::fs::create_dir_all(&lib)?;
    for name in [so.file_name().unwrap().to_os_string(), "libLLVM.so".into()] {
        let link = lib.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&so, &link)
            .with_context(|| format!("step bpf-linker: symlink {}", link.display()))?;
    }
    cmd::run(
        "step bpf-linker (cargo install)",
        cmd::cargo(Some("stable"))
            .args([
                "install",
                "bpf-linker",
                "--version",
                BPF_LINKER_VERSION,
                "--locked",
                "--force",
            ])
            .args([
                "--no-default-features",
                "--features",
                &format!("llvm-{major}"),
            ])
            .arg("--root")
            .arg(&paths.tools)
            .env("LLVM_PREFIX", &llvm),
    )?;
    std::fs::write(&stamp_path, stamp)?;
    did.push(format!("built bpf-linker for LLVM {major}"));
    Ok(())
}

fn is_mounted(path: &str, fstype: &str) -> bool {
    std::fs::read_to_string("/proc/self/mounts").is_ok_and(|m| {
        m.lines().any(|l| {
            let mut f = l.split_whitespace();
            let (_, at, ty) = (f.next(), f.next(), f.next());
            at == Some(path) && ty == Some(fstype)
        })
    })
}

fn mounts(did: &mut Vec<String>) -> Result<()> {
    for (path, fstype, source) in [
        ("/sys/fs/bpf", "bpf", "bpf"),
        ("/sys/kernel/tracing", "tracefs", "nodev"),
    ] {
        if is_mounted(path, fstype) {
            continue;
        }
        if !cmd::is_root() {
            bail!("step mounts: {fstype} is not mounted at {path}; as root: mount -t {fstype} {source} {path}");
        }
        cmd::run(
            "step mounts",
            Command::new("mount").args(["-t", fstype, source, path]),
        )?;
        did.push(format!("mounted {fstype} at {path}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A python3 holding `path` with fcntl (lockf), as apt holds lock-frontend, for `secs`;
    /// returned once it holds it.
    fn hold_lock(path: &Path, secs: u32) -> std::process::Child {
        let mut holder = Command::new("python3")
            .args([
                "-c",
                "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.lockf(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(float(sys.argv[2]))",
            ])
            .arg(path)
            .arg(secs.to_string())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "held");
        holder
    }

    #[test]
    #[ignore = "needs root: holds the real dpkg lock and runs apt-get install"]
    fn with_the_dpkg_lock_held_ensure_says_so_waits_and_proceeds_once_released() {
        // Held for 3 s, as unattended-upgrades holds it on a freshly booted box.
        let mut holder = hold_lock(Path::new(DPKG_LOCK), 3);
        let notice = lock_wait_notice().expect("the held lock is seen");
        assert!(notice.contains("waiting for it, at most 600 s"), "{notice}");
        // A package every Debian box has, never upgraded: apt takes the lock for it, has
        // nothing to install, and the host stays as it was.
        let t0 = std::time::Instant::now();
        apt_get(
            "test (apt-get install --no-upgrade dpkg)",
            &["install", "-y", "-qq", "--no-upgrade", "dpkg"],
        )
        .expect("proceeds once the lock is released");
        let waited = t0.elapsed();
        holder.wait().unwrap();
        assert!(
            waited >= std::time::Duration::from_millis(2500),
            "apt-get returned after {waited:?}: it did not wait for the lock"
        );
        assert!(lock_wait_notice().is_none(), "and the lock is free after");
    }

    #[test]
    fn a_lock_held_the_way_apt_holds_it_is_seen() {
        let path = std::env::temp_dir().join(format!("rxsteer-lock-{}", std::process::id()));
        std::fs::write(&path, b"").unwrap();
        assert!(!lock_held(&path));
        // Held by another process with fcntl (lockf), as apt holds lock-frontend.
        let mut holder = hold_lock(&path, 30);
        assert!(lock_held(&path), "the other process's lock is seen");
        holder.kill().unwrap();
        holder.wait().unwrap();
        assert!(!lock_held(&path), "and its release");
        let _ = std::fs::remove_file(&path);
    }
}
