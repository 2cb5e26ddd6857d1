//! `cargo xtask dist [--install] [--prefix DIR]`: the release binaries built, then their man
//! pages and shell completions written by `rxsteer generate` (from the real command lines)
//! into target/dist; with --install, copied where man and the shells look under the prefix.
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

use crate::{cmd, ensure::Paths};

#[derive(clap::Args)]
pub struct DistArgs {
    /// Also copy the pages and completions under --prefix (man/man1, bash-completion, zsh
    /// site-functions, fish vendor completions).
    #[arg(long)]
    install: bool,
    /// Where --install puts them.
    #[arg(long, default_value = "/usr/local")]
    prefix: PathBuf,
}

/// Where each generated folder goes under the prefix.
const PLACES: [(&str, &str); 4] = [
    ("man/man1", "share/man/man1"),
    ("completions/bash", "share/bash-completion/completions"),
    ("completions/zsh", "share/zsh/site-functions"),
    ("completions/fish", "share/fish/vendor_completions.d"),
];

pub fn run(paths: &Paths, args: &DistArgs) -> Result<()> {
    let out = paths.root.join("target/dist");
    cmd::run(
        "rxsteer generate",
        std::process::Command::new(paths.root.join("target/release/rxsteer"))
            .arg("generate")
            .arg("--out")
            .arg(&out),
    )?;
    if !args.install {
        println!(
            "xtask dist: man pages and completions in {} (man -M {} rxsteer-compare); \
             --install puts them under {}",
            out.display(),
            out.join("man").display(),
            args.prefix.display()
        );
        return Ok(());
    }
    for (from, to) in PLACES {
        let copied = copy_files(&out.join(from), &args.prefix.join(to))?;
        println!(
            "xtask dist: {copied} file(s) into {}",
            args.prefix.join(to).display()
        );
    }
    Ok(())
}

fn copy_files(from: &Path, to: &Path) -> Result<usize> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let mut n = 0;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        let dest = to.join(path.file_name().context("a file without a name")?);
        std::fs::copy(&path, &dest)
            .with_context(|| format!("copying {} to {}", path.display(), dest.display()))?;
        n += 1;
    }
    Ok(n)
}
