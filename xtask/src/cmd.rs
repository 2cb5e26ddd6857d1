//! Running commands with errors that say which step failed.
use anyhow::{bail, Context, Result};
use std::process::Command;

/// Runs `cmd` to completion, inheriting stdio; fails naming `step` and the command.
pub fn run(step: &str, cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("{step}: could not start {cmd:?}"))?;
    if !status.success() {
        bail!("{step} failed: {cmd:?} exited with {status}");
    }
    Ok(())
}

/// Runs a `cargo test`, passing its output through, and says at the end which tests did not
/// run and why (libtest's `ignored, REASON` lines), or that none was skipped.
pub fn run_tests(cmd: &mut Command) -> Result<()> {
    use std::io::{BufRead, BufReader};
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("test: could not start {cmd:?}"))?;
    let mut skipped = Vec::new();
    for line in BufReader::new(child.stdout.take().context("test stdout")?)
        .lines()
        .map_while(|l| l.ok())
    {
        println!("{line}");
        if let Some(rest) = line.strip_prefix("test ") {
            if let Some((name, why)) = rest.split_once(" ... ignored") {
                skipped.push(format!("{name}{why}"));
            }
        }
    }
    let status = child.wait()?;
    if skipped.is_empty() {
        println!("xtask test: nothing skipped");
    } else {
        println!("xtask test: skipped {} test(s):", skipped.len());
        for s in &skipped {
            println!("  {s}");
        }
    }
    if !status.success() {
        bail!("test failed: {cmd:?} exited with {status}");
    }
    Ok(())
}

/// Runs `cmd` and returns its stdout; fails naming `step`.
pub fn output(step: &str, cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("{step}: could not start {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{step} failed: {cmd:?} exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// True when `name` is an executable on PATH.
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| {
            let p = dir.join(name);
            p.is_file()
                && std::fs::metadata(&p).is_ok_and(|m| {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                })
        })
    })
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A cargo invocation for a given toolchain, cleaned of the variables the outer cargo set for
/// xtask itself (they would point the inner build at the wrong compiler or target).
pub fn cargo(toolchain: Option<&str>) -> Command {
    let mut c = Command::new("cargo");
    if let Some(tc) = toolchain {
        c.arg(format!("+{tc}"));
    }
    for var in [
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTDOC",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTUP_TOOLCHAIN",
    ] {
        c.env_remove(var);
    }
    c
}

/// A flag given a value that does not exist (xtask exits 2 with it, as for clap's refusals).
#[derive(Debug)]
pub struct BadValue(pub String);

impl std::fmt::Display for BadValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadValue {}
