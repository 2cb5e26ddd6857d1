//! The root test suites that load BPF, run inside each guest: the dataplane crate's tests
//! (every kernel program through the verifier, the JIT and BPF_PROG_TEST_RUN of the guest's
//! kernel, real frames through a veth redirected into cpumap, the tracepoints' arguments), built for the
//! guest's architecture with the eBPF object embedded, so they need nothing beside them.
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use super::Arch;
use crate::{cmd, ensure::Paths};

/// The crates whose tests run in a guest: what talks to the kernel's BPF, and nothing else
/// (the userspace suites need a veth lab and tools the guest does not carry).
const PACKAGES: [&str; 1] = ["rxsteer-dataplane"];

/// One line of cargo's `--message-format json` that matters here: a built test executable.
#[derive(Deserialize)]
struct Message {
    reason: String,
    #[serde(default)]
    executable: Option<PathBuf>,
    #[serde(default)]
    profile: Option<Profile>,
    #[serde(default)]
    target: Option<Target>,
}

#[derive(Deserialize)]
struct Profile {
    test: bool,
}

#[derive(Deserialize)]
struct Target {
    name: String,
}

/// Builds the suites for `arch` (release: TCG runs them several times faster), strips them
/// into `out` and returns (name, path) of each.
pub fn build(paths: &Paths, arch: Arch, out: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut c = cmd::cargo(None);
    // Diagnostics rendered on stderr; stdout keeps only the JSON of the artifacts.
    c.args([
        "test",
        "--release",
        "--no-run",
        "--message-format",
        "json-render-diagnostics",
    ]);
    for p in PACKAGES {
        c.args(["-p", p]);
    }
    let strip = match arch {
        Arch::X86_64 => "strip",
        Arch::Aarch64 => {
            c.args(["--target", crate::cross::AARCH64]);
            "aarch64-linux-gnu-strip"
        }
    };
    let done = c
        .current_dir(&paths.root)
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo test --no-run")?;
    if !done.status.success() {
        bail!("building the test suites for {} failed", arch.rust());
    }
    std::fs::create_dir_all(out)?;
    let mut suites = Vec::new();
    for line in String::from_utf8_lossy(&done.stdout).lines() {
        let Ok(m) = serde_json::from_str::<Message>(line) else {
            continue;
        };
        let (Some(exe), Some(p), Some(t)) = (m.executable, m.profile, m.target) else {
            continue;
        };
        if m.reason != "compiler-artifact" || !p.test {
            continue;
        }
        let dst = out.join(&t.name);
        cmd::run(
            "vm (strip a test suite)",
            Command::new(strip)
                .arg("--strip-debug")
                .arg("-o")
                .arg(&dst)
                .arg(&exe),
        )?;
        suites.push((t.name, dst));
    }
    if suites.is_empty() {
        bail!("cargo test --no-run built no test executable");
    }
    Ok(suites)
}
