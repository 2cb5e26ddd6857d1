//! `rxsteer compare` (what `cargo xtask run` runs): untuned vs RPS vs cpumap, measured side by
//! side for HTTP/1.1 and ZAP. For each repetition (mode order rotated) and each mode:
//! `rxsteer attach` applies the mode and observes, `rxsteer serve` serves both transports, and
//! rxload drives each protocol in turn. Every load's req/s is a ratio to untuned from the same
//! repetition and protocol, next to where the receive work went per CPU in its measured
//! window. Without `--iface` it runs in the embedded veth lab; with it, on a real interface.
mod args;
mod figures;
mod gate;
mod load;
mod merge;
mod screen;
mod session;
mod several;
mod sites;
mod ssh;
mod watch;
mod witness;

pub use args::{Arm, CompareArgs};
pub use several::Several;
pub use sites::Site;

use anyhow::{bail, Context, Result};
use rxsteer_records::{
    run::{ratio_in, Environments},
    Proto, Row, RunDoc,
};
use std::{
    io::IsTerminal,
    path::{Path, PathBuf},
    sync::atomic::AtomicBool,
};

use crate::{
    privilege::{self, Cap},
    signals::stop_on_signals,
};
use load::LoadSpec;
use rxsteer_tune::cpus::online_cpus;
use screen::{Done, Screen};
use session::ModeSession;
use watch::{Ended, Event};

/// The arm order of one repetition: rotated by one each time, so no arm always runs first
/// (on a drifting machine the first slot is not like the last).
pub fn rotated<T: Copy>(arms: &[T], rep: u32) -> Vec<T> {
    let n = arms.len();
    (0..n).map(|k| arms[(k + rep as usize) % n]).collect()
}

fn default_out() -> PathBuf {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "host".into());
    let host: String = host
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    let time: String = now[11..19].chars().filter(|c| *c != ':').collect();
    PathBuf::from(format!("results/{}-{host}-compare-{time}", &now[..10]))
}

pub fn run(args: &CompareArgs) -> Result<()> {
    // Handlers first: a Ctrl-C during setup still ends in the clean path below.
    let stop = stop_on_signals()?;
    args.check()?;
    let caps: &[Cap] = if args.iface.is_some() {
        &[Cap::NetAdmin, Cap::Bpf, Cap::Perfmon]
    } else {
        &[Cap::SysAdmin, Cap::NetAdmin, Cap::Bpf, Cap::Perfmon]
    };
    privilege::require("rxsteer compare", caps)?;
    load::rxload_path()?;
    let online = online_cpus()?;
    let kinds = rxsteer_tune::topology::of_this_machine(&online);
    let roles = args.roles.choose(&online, &kinds)?;
    if let Some(why) = crate::lab::why_roles(&roles, &kinds) {
        eprintln!("rxsteer compare: {why}");
    }
    let dir = args.out.clone().unwrap_or_else(default_out);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let tui = !args.no_tui && std::io::stdout().is_terminal() && std::io::stderr().is_terminal();
    match &args.iface {
        None => {
            let lab = sites::Lab::create(&roles, online.len())?;
            let result = measure(args, lab.prepared(), &dir, tui, &stop);
            drop(lab);
            result?;
            eprintln!("rxsteer compare: stored in {}; lab removed", dir.display());
        }
        Some(iface) => {
            measure(args, sites::iface(args, iface, &roles)?, &dir, tui, &stop)?;
            eprintln!("rxsteer compare: stored in {}", dir.display());
        }
    }
    Ok(())
}

/// Every repetition, mode and protocol; then run.json and the report.
fn measure(
    args: &CompareArgs,
    prepared: sites::Prepared,
    dir: &Path,
    tui: bool,
    stop: &AtomicBool,
) -> Result<()> {
    let sites::Prepared {
        site,
        loader,
        setup,
        caveat,
    } = prepared;
    let loaded = gate::quiet_machine(args.force, args.quiet_wait, stop)?;
    let env_before = figures::environment();
    let mut screen = Screen::new(tui, caveat.clone());
    let mut rows: Vec<Row> = Vec::new();
    let run = Run {
        args,
        site: &site,
        loader: &loader,
        dir,
        stop,
    };
    for rep in 0..args.reps {
        for arm in rotated(&args.arms(), rep) {
            for proto in args.protos() {
                let row = run.load(rep, &arm, proto, &mut screen)?;
                let (req_per_s, p99_us) = (row.req_per_s.unwrap_or(0.0), row.p99_us.unwrap_or(0));
                rows.push(row);
                screen.on_done(Done {
                    label: load_label(args, rep, &arm, proto),
                    req_per_s,
                    p99_us,
                    ratio: ratio_in(&rows, rep, arm.key(), proto),
                });
            }
        }
    }
    drop(screen);
    let doc = run_doc(args, setup, caveat, loaded, env_before, rows)?;
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&doc)?)?;
    print!("{}", rxsteer_report::summary(&doc)?);
    rxsteer_report::run(dir)?;
    index_run(dir, &doc)?;
    Ok(())
}

/// "rep 2/7  rps  http  (no XDP)": what the screen names a load by.
fn load_label(args: &CompareArgs, rep: u32, arm: &Arm, p: Proto) -> String {
    format!(
        "rep {}/{}  {}  {}  ({})",
        rep + 1,
        args.reps,
        arm.key(),
        p.as_str(),
        match arm.observer {
            _ if arm.runs_xdp() => format!("XDP {}", arm.xdp.as_str()),
            rxsteer_dataplane::ObserverChoice::Off => "no BPF".to_string(),
            _ => "no XDP".to_string(),
        }
    )
}

/// What every load of a run shares.
struct Run<'a> {
    args: &'a CompareArgs,
    site: &'a sites::Site<'a>,
    loader: &'a load::Loader<'a>,
    dir: &'a Path,
    stop: &'a AtomicBool,
}

impl Run<'_> {
    /// One load: the arm in place (checked against what the kernel shows), the loaders run
    /// and followed to the end of the window, every figure stored; its row.
    fn load(&self, rep: u32, arm: &Arm, proto: Proto, screen: &mut Screen) -> Result<Row> {
        let args = self.args;
        screen.begin(load_label(args, rep, arm, proto));
        let base = format!("{}-{}-rep{rep}", arm.key(), proto.as_str());
        if arm.observer == rxsteer_dataplane::ObserverChoice::Off {
            witness::wait_unloaded(std::time::Duration::from_secs(5))?;
        }
        let session = ModeSession::start(
            self.site,
            *arm,
            proto,
            args.interval,
            args.server_io,
            args.tc,
        )?;
        let attached = witness::read(self.site)?;
        witness::check(arm, &self.site.server_dev, &attached)?;
        let dir = self.dir;
        let spec = LoadSpec {
            proto,
            scenario: args.scenario,
            body_size: args.body_size,
            rate: args.rate,
            connections: args.connections,
            io: args.loader_io,
            measure: args.duration,
            warmup: args.warmup,
            target_ip: &self.site.target_ip,
            json: dir.join(format!("rxload-{base}.json")),
            hgrm: dir.join(format!("latency-{base}.hgrm")),
            live: dir.join(format!("live-{base}.jsonl")),
            base,
        };
        let mut children = self.loader.spawn(&spec)?;
        let mut tagged = Vec::new();
        if let Ended::Stopped = self.follow(&session, &spec, &mut children, screen, &mut tagged)? {
            for c in &mut children {
                let _ = c.kill();
                let _ = c.wait();
            }
            drop(session);
            bail!(
                "stopped before the end (q or a signal); everything was restored; \
                 partial files in {}",
                dir.display()
            );
        }
        let load = self.loader.collect(&spec, &mut children)?;
        session.stop()?;
        figures::store_samples(&dir.join(format!("samples-{}.jsonl", spec.base)), &tagged)?;
        let mut row = figures::row(rep, *arm, proto, load.as_ref(), &tagged);
        row.attached = Some(attached);
        Ok(row)
    }

    /// Follows the loaders and the session's samples to the end of the window, drawing each
    /// on the screen; the samples go into `tagged`.
    fn follow(
        &self,
        session: &ModeSession,
        spec: &LoadSpec,
        children: &mut [std::process::Child],
        screen: &mut Screen,
        tagged: &mut Vec<watch::Tagged>,
    ) -> Result<Ended> {
        let mut clocks = watch::Clocks::new(
            session.serve_pid(),
            children.iter().map(std::process::Child::id).collect(),
        );
        watch::follow(
            children,
            self.args.warmup + self.args.duration,
            &spec.live,
            &session.samples,
            &mut clocks,
            &mut |e| match e {
                Event::Live(l) => {
                    screen.on_live(l);
                    Ok(false)
                }
                Event::Sample(s) => {
                    screen.on_sample(&s.sample);
                    if let Some(m) = s.xdp_mode {
                        screen.on_attached(m);
                    }
                    Ok(false)
                }
                Event::Idle => screen.tick(),
            },
            self.stop,
            tagged,
        )
    }
}

/// The run's document: what was asked, where, on what machine, and every load's row.
fn run_doc(
    args: &CompareArgs,
    setup: rxsteer_records::run::Setup,
    caveat: Option<String>,
    loaded: Option<String>,
    env_before: rxsteer_records::run::Environment,
    rows: Vec<Row>,
) -> Result<RunDoc> {
    Ok(RunDoc {
        setup: Some(setup),
        cpus: online_cpus()?.len(),
        steer: args.modes(),
        arms: args.arms().iter().map(Arm::key).collect(),
        xdp_mode: Some(format!("{:?}", args.xdp_mode).to_lowercase()),
        xdp_frags: Some(format!("{:?}", args.xdp_frags).to_lowercase()),
        observer: Some(args.observer_name()),
        body_size: args.body_size,
        rate: args.rate,
        protos: args.protos(),
        scenario: args.scenario,
        seconds: args.duration.as_secs_f64(),
        warmup_s: Some(args.warmup.as_secs_f64()),
        connections: args.connections,
        loader_io: Some(args.loader_io),
        server_io: Some(args.server_io),
        reps: args.reps,
        caveat,
        loaded_machine: loaded,
        environment: Some(Environments {
            before: env_before,
            after: figures::environment(),
        }),
        roles: None,
        runs: rows,
    })
}

/// A run stored beside `results/README.md` gets a line in that index.
fn index_run(dir: &Path, doc: &RunDoc) -> Result<()> {
    let Some(parent) = dir.parent() else {
        return Ok(());
    };
    let index = parent.join("README.md");
    if parent.file_name().is_none_or(|n| n != "results") || !index.is_file() {
        return Ok(());
    }
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let command: Vec<String> = std::env::args().skip(1).collect();
    let what = format!(
        "the main job ({} over {}, {} repetitions{}{})",
        doc.arms
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(" / "),
        doc.protos
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(" and "),
        doc.reps,
        if doc.is_iface() {
            ", on a real interface"
        } else {
            ", in the lab"
        },
        if doc.loaded_machine.is_some() {
            "; LOADED MACHINE, figures marked"
        } else {
            ""
        },
    );
    let line = format!(
        "| [{name}]({name}/report.md) | `rxsteer {}` | {what} |\n",
        command.join(" ")
    );
    let mut f = std::fs::OpenOptions::new().append(true).open(&index)?;
    std::io::Write::write_all(&mut f, line.as_bytes())?;
    eprintln!("rxsteer compare: indexed in {}", index.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rxsteer_records::Mode;

    #[test]
    fn mode_order_rotates() {
        let all = [Mode::None, Mode::Rps, Mode::Cpumap];
        assert_eq!(rotated(&all, 0), all);
        assert_eq!(rotated(&all, 1), [Mode::Rps, Mode::Cpumap, Mode::None]);
        assert_eq!(rotated(&all, 3), all);
        assert_eq!(rotated(&[Mode::Rps], 2), [Mode::Rps]);
    }

    #[test]
    fn default_out_is_dated_under_results() {
        let p = default_out().display().to_string();
        assert!(
            p.starts_with("results/20") && p.contains("-compare-"),
            "{p}"
        );
    }
}
