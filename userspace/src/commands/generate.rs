//! `rxsteer generate --out DIR`: a man page for rxsteer, one for each of its commands
//! (`rxsteer-compare.1`, as git and cargo name theirs) and one for rxload, and bash, zsh and
//! fish completions for both, all written from the real command lines (clap_mangen,
//! clap_complete), so they say what `--help` says. `cargo xtask dist` runs it.
use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// Where to write: DIR/man/man1/*.1 and DIR/completions/{bash,zsh,fish}/.
    #[arg(long)]
    pub out: PathBuf,
    /// Also draw the live view, as `top` draws it, over these stored sample lines (a
    /// `samples-*.jsonl` of a comparison, or `top --json` output) into DIR/live-view.svg.
    #[arg(long)]
    pub picture: Option<PathBuf>,
    /// The terminal the picture is drawn on, COLUMNSxROWS.
    #[arg(long, default_value = "150x34", value_parser = parse_size)]
    pub picture_size: (u16, u16),
}

/// `150x34`: a terminal of 80 to 400 columns and 20 to 200 rows.
fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let bad = || {
        format!("{s:?}: expected COLUMNSxROWS, 80 to 400 columns and 20 to 200 rows (e.g. 150x34)")
    };
    let (w, h) = s.split_once('x').ok_or_else(bad)?;
    let (w, h): (u16, u16) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if !(80..=400).contains(&w) || !(20..=200).contains(&h) {
        return Err(bad());
    }
    Ok((w, h))
}

pub fn run(args: &GenerateArgs) -> Result<()> {
    let mut written = write_all(&args.out)?;
    if let Some(from) = &args.picture {
        let text =
            std::fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?;
        let lines = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| {
                serde_json::from_str::<rxsteer_records::SampleLine>(l).with_context(|| {
                    format!("{} line {}: not a sample line", from.display(), i + 1)
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let (w, h) = args.picture_size;
        let to = args.out.join("live-view.svg");
        std::fs::write(&to, crate::view::picture(&lines, w, h)?)
            .with_context(|| format!("writing {}", to.display()))?;
        written.push(to);
    }
    println!(
        "rxsteer generate: {} files under {} (man -M {} rxsteer-compare)",
        written.len(),
        args.out.display(),
        args.out.join("man").display()
    );
    Ok(())
}

/// The shells completions are written for, and the folder each goes in.
const SHELLS: [(Shell, &str); 3] = [
    (Shell::Bash, "bash"),
    (Shell::Zsh, "zsh"),
    (Shell::Fish, "fish"),
];

/// Writes every page and completion under `out`; returns the files written.
pub fn write_all(out: &Path) -> Result<Vec<PathBuf>> {
    let man = out.join("man").join("man1");
    std::fs::create_dir_all(&man).with_context(|| format!("creating {}", man.display()))?;
    for cmd in [crate::Cli::command(), rxload::cli::Args::command()] {
        // A page for the command and each of its subcommands, hidden ones left out.
        clap_mangen::generate_to(cmd.clone(), &man).with_context(|| {
            format!(
                "writing the man pages of {} to {}",
                cmd.get_name(),
                man.display()
            )
        })?;
    }
    let mut written: Vec<PathBuf> = listing(&man)?
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "1"))
        .collect();
    for (shell, folder) in SHELLS {
        let dir = out.join("completions").join(folder);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for mut cmd in [crate::Cli::command(), rxload::cli::Args::command()] {
            let name = cmd.get_name().to_string();
            written.push(
                clap_complete::generate_to(shell, &mut cmd, &name, &dir)
                    .with_context(|| format!("writing {name}'s {folder} completion"))?,
            );
        }
    }
    Ok(written)
}

fn listing(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command has its page, each page carries every long flag of the real command
    /// line, and each completion offers every command: a flag added without its page being
    /// written again cannot pass.
    #[test]
    fn pages_and_completions_come_from_the_real_command_lines() {
        let out = std::env::temp_dir().join(format!("rxsteer-generate-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        let written = write_all(&out).unwrap();
        let man = out.join("man/man1");
        let read = |p: PathBuf| {
            std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        };
        let mut cli = crate::Cli::command();
        cli.build();
        let mut pages = vec![("rxsteer.1".to_string(), cli.clone())];
        for sub in cli
            .get_subcommands()
            .filter(|s| s.get_name() != "help" && !s.is_hide_set())
        {
            pages.push((format!("rxsteer-{}.1", sub.get_name()), sub.clone()));
        }
        pages.push(("rxload.1".into(), rxload::cli::Args::command()));
        for (file, cmd) in &pages {
            let page = read(man.join(file));
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                if let Some(long) = arg.get_long() {
                    // roff writes a dash as \-.
                    let want = format!("\\-\\-{}", long.replace('-', "\\-"));
                    assert!(page.contains(&want), "{file} lacks --{long}");
                }
            }
        }
        let bash = read(out.join("completions/bash/rxsteer.bash"));
        for sub in cli.get_subcommands() {
            assert!(
                bash.contains(sub.get_name()),
                "bash completion lacks {}",
                sub.get_name()
            );
        }
        assert!(read(out.join("completions/fish/rxload.fish")).contains("-l rate"));
        assert!(written.len() >= pages.len() + 6, "{written:?}");
        std::fs::remove_dir_all(&out).unwrap();
    }
}
