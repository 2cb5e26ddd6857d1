//! After the tests: the machine must be as the tests found it. Fails naming whatever the tests
//! left behind: their network namespaces, XDP programs on this namespace's interfaces, tuning
//! state files (a change not reverted), files of `rxsteer install`, each with the command that
//! removes it.
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
            left.push(format!("network namespace {name} (ip netns del {name})"));
        }
    }
    let links = Command::new("ip").args(["-o", "link", "show"]).output()?;
    for line in String::from_utf8_lossy(&links.stdout).lines() {
        if line.split_whitespace().any(|w| w.starts_with("xdp")) {
            let dev = line.split(": ").nth(1).unwrap_or("?");
            let dev = dev.split('@').next().unwrap_or(dev);
            left.push(format!(
                "an XDP program on {dev} (ip link set dev {dev} xdp off)"
            ));
        }
    }
    if let Ok(dir) = std::fs::read_dir(rxsteer_tune::state::STATE_DIR) {
        for f in dir.flatten() {
            left.push(format!(
                "tuning state file {} (`rxsteer restore` in its network namespace)",
                f.path().display()
            ));
        }
    }
    // What `rxsteer install` writes on a live box (the tests install into image trees only).
    for path in [
        "/etc/rxsteer",
        "/usr/local/libexec/rxsteer",
        "/etc/systemd/system/rxsteer-",
        "/etc/systemd/system/multi-user.target.wants/rxsteer-",
    ] {
        let (dir, prefix) = path.rsplit_once('/').unwrap();
        for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = f.file_name();
            if name.to_string_lossy().starts_with(prefix) {
                left.push(format!(
                    "{} written by rxsteer install (`rxsteer uninstall`)",
                    f.path().display()
                ));
            }
        }
    }
    if !left.is_empty() {
        bail!("the tests left the machine changed: {}", left.join(", "));
    }
    eprintln!("xtask test: no namespace or XDP program left behind");
    Ok(())
}

#[cfg(test)]
mod outside {
    /// No build, test or xtask path may read beside the checkout (a user's clone has nothing
    /// there): every tracked source, manifest and CI file is searched for such a path.
    #[test]
    fn nothing_reads_outside_the_repository() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out = std::process::Command::new("git")
            .args(["ls-files", "*.rs", "*.toml", ".ci/*", "*.sh"])
            .current_dir(&root)
            .output()
            .expect("git ls-files");
        let files = String::from_utf8(out.stdout).unwrap();
        assert!(files.lines().count() > 50, "the tracked files: {files}");
        // Spelt in pieces, so this file does not match what it looks for.
        let outside = [concat!("..", "/shared"), concat!("/wo", "rk/")];
        let mut found = Vec::new();
        for f in files.lines() {
            let text = std::fs::read_to_string(root.join(f)).unwrap_or_default();
            for (n, line) in text.lines().enumerate() {
                if outside.iter().any(|p| line.contains(p)) {
                    found.push(format!("{f}:{}: {}", n + 1, line.trim()));
                }
            }
        }
        assert!(found.is_empty(), "paths outside the repository: {found:#?}");
    }
}
