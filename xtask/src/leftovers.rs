//! After the tests: the machine must be as the tests found it. Fails naming whatever the tests
//! left behind: their network namespaces, XDP programs on this namespace's interfaces, tuning
//! state files (a change not reverted).
use anyhow::{bail, Result};
use std::process::Command;

pub fn check() -> Result<()> {
    let mut left = Vec::new();
    let netns = Command::new("ip").args(["netns", "list"]).output()?;
    for name in String::from_utf8_lossy(&netns.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
    {
        if name.starts_with("rxs-") {
            left.push(format!("network namespace {name}"));
        }
    }
    let links = Command::new("ip").args(["-o", "link", "show"]).output()?;
    for line in String::from_utf8_lossy(&links.stdout).lines() {
        if line.split_whitespace().any(|w| w.starts_with("xdp")) {
            let dev = line.split(": ").nth(1).unwrap_or("?");
            left.push(format!("an XDP program on {dev}"));
        }
    }
    if let Ok(dir) = std::fs::read_dir("/run/rxsteer") {
        for f in dir.flatten() {
            left.push(format!(
                "tuning state file {} (run `rxsteer restore`)",
                f.path().display()
            ));
        }
    }
    if !left.is_empty() {
        bail!("the tests left the machine changed: {}", left.join(", "));
    }
    eprintln!("xtask test: no namespace or XDP program left behind");
    Ok(())
}
