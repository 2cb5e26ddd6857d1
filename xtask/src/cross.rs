//! Cross builds of rxsteer and rxload (aarch64 for the GB10 box). The eBPF object is the same
//! for every architecture (bpfel); only the userspace binaries are built per target.
use anyhow::{bail, Result};
use std::{path::PathBuf, process::Command};

use crate::{cmd, ensure::Paths};

pub const AARCH64: &str = "aarch64-unknown-linux-gnu";

/// Installs what a cross build for `target` needs, builds, and returns the binaries' folder.
pub fn build(paths: &Paths, target: &str) -> Result<PathBuf> {
    if target != AARCH64 {
        bail!("--target {target}: the cross build knows {AARCH64} (GB10); build other targets with cargo");
    }
    crate::ensure::packages_for(
        "cross build (aarch64)",
        &[
            ("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
            ("qemu-aarch64", "qemu-user"),
        ],
    )?;
    // The start files the linker needs come only with the -dev package; libc.so.6 alone (the
    // runtime, which the compiler package pulls in) does not link a program.
    if !std::path::Path::new("/usr/aarch64-linux-gnu/lib/Scrt1.o").exists() {
        crate::ensure::install_packages("cross build (aarch64 libc)", &["libc6-dev-arm64-cross"])?;
    }
    let sysroot = cmd::output(
        "cross build (stable sysroot)",
        // The default toolchain: the one `cargo(None)` builds with.
        Command::new("rustc")
            .args(["--print", "sysroot"])
            .env_remove("RUSTUP_TOOLCHAIN")
            .env_remove("RUSTC"),
    )?;
    if !PathBuf::from(sysroot.trim())
        .join("lib/rustlib")
        .join(target)
        .is_dir()
    {
        eprintln!("xtask: adding the rust target {target}");
        cmd::run(
            "cross build (rustup target add)",
            Command::new("rustup").args(["target", "add", target]),
        )?;
    }
    cmd::run(
        &format!("build rxsteer and rxload for {target}"),
        cmd::cargo(None)
            .args(["build", "--release", "--target", target])
            .args(["-p", "rxsteer", "-p", "rxload"])
            .current_dir(&paths.root),
    )?;
    let dir = paths.root.join("target").join(target).join("release");
    eprintln!("xtask: {target} binaries in {}", dir.display());
    Ok(dir)
}
