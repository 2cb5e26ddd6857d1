//! `rxsteer install | status | uninstall`: the steering a comparison recommends, kept in
//! place at every boot by a systemd unit (as `tuned` keeps a profile), checked against the
//! live values, and taken back so the host is as it was before install.
//!
//! On a box whose systemd is not running, install says so and prints the commands to run at
//! boot instead. `--root DIR` writes into an image's tree (as `systemctl --root`): the unit is
//! enabled there and nothing is started.
use anyhow::{bail, Context, Result};
use std::{
    io::Write,
    path::{Path, PathBuf},
    process::Command,
};

use crate::{
    attach_args::{self, AttachArgs},
    cpu_arg::{modes_where, steering_profile, CpuList, SteerCpus},
    host, iface, privilege,
    privilege::Cap,
};
use rxsteer_records::Mode;
use rxsteer_tune::{cpus::format_cpu_list, profile, show, StateFile};

pub mod record;
pub mod unit;

use record::{Installed, Layout};
use unit::{unit_file, unit_name, Ask, BINARY, UNIT_DIR};

#[derive(clap::Args, Debug)]
pub struct InstallArgs {
    /// The interface to steer at every boot (it must exist on this box).
    #[arg(long)]
    pub iface: String,
    /// The steering to keep: a mode with a tuning (its help lists them from the steering
    /// table: `Cli::command`).
    #[arg(long, value_parser = steering_profile)]
    pub steer: Mode,
    #[command(flatten)]
    pub cpus: SteerCpus,
    #[command(flatten)]
    pub levers: crate::lever_args::LeverArgs,
    /// cpumap: ring size per target CPU, in frames (1-16384).
    #[arg(long)]
    pub qsize: Option<u32>,
    /// cpumap: the XDP attach mode (default auto: driver mode where the driver has it).
    #[arg(long, value_enum)]
    pub xdp_mode: Option<rxsteer_dataplane::XdpModeChoice>,
    /// A mode that keeps running (attach): serve its figures as OpenMetrics for Prometheus at
    /// ADDR (a bare PORT: loopback only). Its counters advance once a minute, with the unit's
    /// journal line. A tuning's unit runs nothing once applied: watch that with `rxsteer top
    /// --metrics`.
    #[arg(long, value_name = "ADDR", value_parser = crate::metrics::parse_addr)]
    pub metrics: Option<std::net::SocketAddr>,
    /// Print the unit and the values it would write; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// rps-dissector: install it even where multipath routes, bonds or tc flower filters
    /// share the flow dissector it replaces (docs/steering.md says what they then see).
    #[arg(long)]
    pub accept_dissector_reach: bool,
    /// Write into the image rooted at DIR (as `systemctl --root`): enabled there, not started.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct InstalledArgs {
    /// Only the unit of this interface (default: every rxsteer unit).
    #[arg(long)]
    pub iface: Option<String>,
    /// The image rooted at DIR, as given to `install --root`.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Whether systemd runs this box (sd_booted(3)'s test: `/run/systemd/system` is a
/// directory). `RXSTEER_SYSTEMD_DIR` names another directory to test instead: the tests point
/// it at a missing one to take the no-systemd path on any box, systemd or not.
fn systemd_booted() -> bool {
    std::env::var_os("RXSTEER_SYSTEMD_DIR")
        .map_or_else(|| "/run/systemd/system".into(), std::path::PathBuf::from)
        .is_dir()
}

/// The flags checked against this box, as the unit's command will take them.
fn validate(a: &InstallArgs) -> Result<Ask> {
    iface::require_exists(&a.iface)?;
    let list = |c: &Option<CpuList>| c.as_ref().map(|c| format_cpu_list(&c.0));
    let mut flags = Vec::new();
    let named = [
        ("--cpus", list(&a.cpus.cpus)),
        ("--napi-cpu", list(&a.cpus.napi_cpu)),
        ("--http-cpus", list(&a.cpus.http_cpus)),
        ("--zap-cpus", list(&a.cpus.zap_cpus)),
        ("--other-cpus", list(&a.cpus.other_cpus)),
        ("--qsize", a.qsize.map(|q| q.to_string())),
        ("--xdp-mode", a.xdp_mode.map(|m| m.as_str().to_string())),
        ("--metrics", a.metrics.map(|m| m.to_string())),
    ];
    for (flag, value) in named {
        if let Some(v) = value {
            flags.push((flag, v));
        }
    }
    flags.extend(a.levers.flags());
    let ask = Ask {
        iface: a.iface.clone(),
        steer: a.steer,
        flags,
        accept_dissector_reach: a.accept_dissector_reach,
    };
    if a.steer.steers_with_bpf() {
        // The unit's own command, parsed and checked as attach will at boot.
        #[derive(clap::Parser)]
        struct Attach {
            #[command(flatten)]
            a: AttachArgs,
        }
        let argv =
            std::iter::once("attach".to_string()).chain(ask.exec_start().into_iter().skip(1));
        let parsed = <Attach as clap::Parser>::try_parse_from(argv)
            .map_err(|e| anyhow::anyhow!("{}", e.to_string().trim()))?;
        attach_args::validate(&parsed.a)?;
    } else {
        // A tuning takes its CPU flag alone; --qsize and --xdp-mode are for XDP steering.
        a.cpus.check_for(a.steer).map_err(anyhow::Error::msg)?;
        if let Some(addr) = a.metrics {
            bail!(
                "--metrics {addr}: --steer {}'s unit applies a tuning and exits, so nothing would \
                 serve it; run `rxsteer top --iface {} --metrics {addr}` to watch it, or install \
                 --steer {}",
                a.steer,
                a.iface,
                modes_where(|s| s.program.is_some())
            );
        }
        if let Some((flag, _)) = ask
            .flags
            .iter()
            .find(|(f, _)| ["--qsize", "--xdp-mode"].contains(f))
        {
            bail!(
                "{flag} only applies to --steer {}",
                modes_where(|s| matches!(s.program, Some(rxsteer_records::Program::Xdp(_))))
            );
        }
        host::profile_input(&a.iface, a.cpus.profile_cpus(), a.levers.asked())?;
    }
    Ok(ask)
}

/// What to run at boot where systemd does not: one line.
fn without_systemd(ask: &Ask) -> String {
    let start = format!("{BINARY} {}", ask.exec_start().join(" "));
    let stop = match ask.exec_stop() {
        Some(stop) => format!("undo with `rxsteer {}`", stop.join(" ")),
        None => "it undoes everything when stopped with SIGTERM".to_string(),
    };
    format!(
        "systemd is not running on this box (no /run/systemd/system): nothing installed; run \
         `{start}` at boot instead (e.g. from rc.local, with rxsteer copied to {BINARY}); {stop}"
    )
}

/// Refuses a second unit: the snapshot that makes uninstall exact is one per network
/// namespace, so two profiles would each snapshot the other's values.
fn refuse_if_installed(layout: &Layout, iface: &str) -> Result<()> {
    if let Some(rec) = layout.installed()?.first() {
        let why = if rec.iface == iface {
            format!("for {iface}")
        } else {
            format!(
                "for {} (one rxsteer unit per box: each keeps one snapshot of the values)",
                rec.iface
            )
        };
        bail!(
            "{} is already installed {why}, steering {}: `rxsteer uninstall --iface {}` first",
            rec.unit,
            rec.steer,
            rec.iface
        );
    }
    Ok(())
}

fn systemctl(layout: &Layout, args: &[&str]) -> Result<()> {
    let mut c = Command::new("systemctl");
    if layout.is_image() {
        c.arg(format!("--root={}", layout.root.display()));
    }
    crate::child::output_of(
        c.args(args),
        "running systemctl (is systemd installed?)",
        format_args!("systemctl {}", args.join(" ")),
    )
    .map(drop)
}

/// Writes the binary, the unit and the record (`cpus`: the profile's CPU list); on any failure,
/// removes what it wrote.
fn write_all(
    layout: &Layout,
    ask: &Ask,
    cpus: Option<Vec<u32>>,
    levers: rxsteer_tune::levers::Asked,
) -> Result<Installed> {
    let unit = unit_name(&ask.iface);
    let unit_path = unit_file(&unit);
    let record_abs = record::record_of(&ask.iface);
    let mut rec = Installed {
        version: 1,
        iface: ask.iface.clone(),
        steer: ask.steer,
        unit,
        exec_start: ask.exec_start(),
        exec_stop: ask.exec_stop(),
        cpus,
        levers,
        files: Vec::new(),
        created_dirs: Vec::new(),
    };
    let written = (|| -> Result<()> {
        let exe = std::fs::read(std::env::current_exe()?).context("reading rxsteer's binary")?;
        let steps: [(&Path, Vec<u8>, u32); 2] = [
            (Path::new(BINARY), exe, 0o755),
            (&unit_path, ask.unit_text().into_bytes(), 0o644),
        ];
        for (abs, bytes, mode) in steps {
            record::create_dirs(layout, abs.parent().unwrap(), &mut rec.created_dirs)?;
            record::write_new(layout, abs, &bytes, mode)?;
            rec.files.push(abs.to_path_buf());
        }
        record::create_dirs(layout, record_abs.parent().unwrap(), &mut rec.created_dirs)?;
        rec.files.push(record_abs.clone());
        let text = serde_json::to_string_pretty(&rec)? + "\n";
        record::write_new(layout, &record_abs, text.as_bytes(), 0o644)
    })();
    if let Err(e) = written {
        // Only what this install wrote: a file that was there already is not in the list.
        let _ = record::remove(layout, &rec);
        return Err(e);
    }
    Ok(rec)
}

pub fn install(a: &InstallArgs) -> Result<()> {
    let ask = validate(a)?;
    let layout = Layout::new(a.root.as_deref());
    let mut out = std::io::stdout().lock();
    if a.dry_run {
        return dry_run(&mut out, &layout, &ask, a);
    }
    if !layout.is_image() && !systemd_booted() {
        bail!("{}", without_systemd(&ask));
    }
    refuse_if_installed(&layout, &ask.iface)?;
    if !layout.is_image() {
        host::refuse_unmet(a.steer, "--steer", a.accept_dissector_reach)?;
        privilege::require("rxsteer install", &[Cap::NetAdmin, Cap::SysAdmin])?;
    }
    let rec = write_all(
        &layout,
        &ask,
        a.cpus.profile_cpus().map(<[u32]>::to_vec),
        a.levers.asked(),
    )?;
    let enabled = if layout.is_image() {
        systemctl(&layout, &["enable", &rec.unit])
    } else {
        systemctl(&layout, &["daemon-reload"])
            .and_then(|()| systemctl(&layout, &["enable", "--now", &rec.unit]))
    };
    if let Err(e) = enabled {
        let _ = systemctl(&layout, &["disable", "--now", &rec.unit]);
        record::remove(&layout, &rec)?;
        if !layout.is_image() {
            let _ = systemctl(&layout, &["daemon-reload"]);
        }
        return Err(e.context(format!(
            "{} did not start (see `journalctl -u {}`); nothing left installed",
            rec.unit, rec.unit
        )));
    }
    writeln!(
        out,
        "installed {} ({} on {}): {}",
        rec.unit,
        rec.steer,
        rec.iface,
        if layout.is_image() {
            format!("enabled in the image at {}", layout.root.display())
        } else {
            "enabled and started; applied at every boot".to_string()
        }
    )?;
    for f in &rec.files {
        writeln!(out, "  wrote {}", layout.host(f).display())?;
    }
    if rec.steer.receive_per_service_on_one_cpu() {
        writeln!(
            out,
            "note: {}: {}",
            rec.steer,
            rxsteer_records::steering::DISSECTOR_REACH
        )?;
    }
    writeln!(
        out,
        "check it with `rxsteer status`; take it back with `rxsteer uninstall --iface {}`",
        rec.iface
    )?;
    Ok(())
}

fn dry_run(out: &mut impl Write, layout: &Layout, ask: &Ask, a: &InstallArgs) -> Result<()> {
    let unit_path = layout.host(&unit_file(&unit_name(&ask.iface)));
    writeln!(out, "would write {}:", unit_path.display())?;
    writeln!(out, "{}", ask.unit_text())?;
    writeln!(
        out,
        "would copy this rxsteer to {} and keep a record in {}",
        layout.host(Path::new(BINARY)).display(),
        layout.record_path(&ask.iface).display()
    )?;
    let input = host::profile_input(&ask.iface, a.cpus.profile_cpus(), a.levers.asked())?;
    let plan = show(&profile(ask.steer, &input), None)?;
    writeln!(
        out,
        "{}",
        host::writes_said("at start it would change", " here", &plan)
    )?;
    if !layout.is_image() && !systemd_booted() {
        writeln!(out, "but: {}", without_systemd(ask))?;
    }
    Ok(())
}

fn selected(layout: &Layout, iface: Option<&str>) -> Result<Vec<Installed>> {
    Ok(layout
        .installed()?
        .into_iter()
        .filter(|r| iface.is_none_or(|i| r.iface == i))
        .collect())
}

pub fn uninstall(a: &InstalledArgs) -> Result<()> {
    let layout = Layout::new(a.root.as_deref());
    let mut out = std::io::stdout().lock();
    let recs = selected(&layout, a.iface.as_deref())?;
    if recs.is_empty() {
        writeln!(
            out,
            "nothing installed by rxsteer{}: nothing to uninstall",
            a.iface
                .as_deref()
                .map(|i| format!(" for {i}"))
                .unwrap_or_default()
        )?;
        return Ok(());
    }
    if !layout.is_image() {
        privilege::require("rxsteer uninstall", &[Cap::NetAdmin, Cap::SysAdmin])?;
    }
    for rec in recs {
        if layout.is_image() {
            systemctl(&layout, &["disable", &rec.unit])?;
        } else if systemd_booted() {
            // Stopping runs the unit's ExecStop (rps) or SIGTERMs attach (cpumap): each puts
            // the snapshot back.
            systemctl(&layout, &["disable", "--now", &rec.unit])?;
            revert_left(&mut out, &rec)?;
        } else {
            writeln!(
                out,
                "systemd is not running: {} was not running to stop",
                rec.unit
            )?;
        }
        let removed = record::remove(&layout, &rec)?;
        if !layout.is_image() && systemd_booted() {
            systemctl(&layout, &["daemon-reload"])?;
        }
        writeln!(
            out,
            "uninstalled {} ({} on {})",
            rec.unit, rec.steer, rec.iface
        )?;
        for p in removed {
            writeln!(out, "  removed {}", layout.host(&p).display())?;
        }
    }
    Ok(())
}

/// After the unit stopped: its snapshot should be back. If a failed stop left it, put it back.
fn revert_left(out: &mut impl Write, rec: &Installed) -> Result<()> {
    let path = match rec.is_session() {
        true => host::session_path()?,
        false => host::state_path()?,
    };
    let Some(state) = StateFile::load(&path)? else {
        return Ok(());
    };
    if rec.applied_in(&state) && state.live_owner().is_none() {
        let restored = rxsteer_tune::revert(&path)?;
        writeln!(
            out,
            "  the unit's stop left its tuning: {} value(s) restored",
            restored.len()
        )?;
    }
    Ok(())
}

/// `rxsteer status`: what is installed, what is applied now, whether the live values still
/// match. Ok(false) when something installed is not in place (exit 3, as `systemctl
/// is-active`).
pub fn status(a: &InstalledArgs) -> Result<bool> {
    let layout = Layout::new(a.root.as_deref());
    let mut out = std::io::stdout().lock();
    let state = StateFile::load(&host::state_path()?)?;
    match &state {
        None => writeln!(
            out,
            "applied now: nothing (no rxsteer tuning in this network namespace)"
        )?,
        Some(s) => writeln!(
            out,
            "applied now: {} on {}, by {}",
            s.profile,
            s.iface,
            match s.live_owner() {
                Some(pid) => format!("rxsteer attach (pid {pid})"),
                None => "rxsteer tune apply (kept until reverted)".to_string(),
            }
        )?,
    }
    let layer = StateFile::load(&host::session_path()?)?;
    if let Some(layer) = &layer {
        let by = match layer.live_owner() {
            Some(pid) => format!("rxsteer attach (pid {pid}), until it ends"),
            None => "a session that did not exit cleanly (`rxsteer restore`)".to_string(),
        };
        writeln!(
            out,
            "on top now: {} on {}, by {by}; what it found comes back when it ends",
            layer.profile, layer.iface
        )?;
    }
    let recs = selected(&layout, a.iface.as_deref())?;
    if recs.is_empty() {
        writeln!(
            out,
            "installed: nothing (no rxsteer unit in {})",
            layout.host(Path::new(UNIT_DIR)).display()
        )?;
        return Ok(true);
    }
    let mut in_place = true;
    for rec in &recs {
        // A unit that runs a session keeps its tuning in the session layer.
        let theirs = if rec.is_session() { &layer } else { &state };
        in_place &= status_of(&mut out, &layout, rec, theirs.as_ref())?;
    }
    Ok(in_place)
}

fn status_of(
    out: &mut impl Write,
    layout: &Layout,
    rec: &Installed,
    state: Option<&StateFile>,
) -> Result<bool> {
    writeln!(
        out,
        "installed: {} ({} on {}), {}",
        rec.unit,
        rec.steer,
        rec.iface,
        layout.host(&unit_file(&rec.unit)).display()
    )?;
    writeln!(out, "  runs: {BINARY} {}", rec.exec_start.join(" "))?;
    writeln!(out, "  {}", unit_state(layout, &rec.unit))?;
    if iface::require_exists(&rec.iface).is_err() {
        writeln!(out, "  interface {} does not exist here now", rec.iface)?;
        return Ok(false);
    }
    let applied = state.is_some_and(|s| rec.applied_in(s));
    let input = host::profile_input(&rec.iface, rec.cpus.as_deref(), rec.levers.clone())?;
    let plan = show(&profile(rec.steer, &input), state.filter(|_| applied))?;
    let checked = plan.changes.iter().filter(|c| c.skipped.is_none()).count();
    let differ: Vec<_> = plan.writes().collect();
    let mut ok = applied && differ.is_empty();
    match (applied, differ.is_empty()) {
        (true, true) => writeln!(out, "  live values: all {checked} match what it applied")?,
        (true, false) => writeln!(
            out,
            "  live values: {} of {checked} no longer match what it applied: another tool \
             changed them since",
            differ.len()
        )?,
        (false, _) => writeln!(
            out,
            "  not applied now: {} of {checked} live value(s) differ from its profile",
            differ.len()
        )?,
    }
    for c in &differ {
        writeln!(
            out,
            "    {}: now {}, the profile's {}",
            c.name,
            c.current.trim(),
            c.target
        )?;
    }
    if let Some(rxsteer_records::Program::FlowDissector(name)) = rec.steer.steering().program {
        let loaded = rxsteer_dataplane::loaded_rxsteer_programs()?
            .iter()
            .any(|p| p == name);
        ok &= loaded;
        writeln!(
            out,
            "  flow dissector {name}: {}",
            if loaded {
                "loaded".to_string()
            } else {
                format!("not loaded ({} steering is not attached)", rec.steer)
            }
        )?;
    }
    if rec.steer.steers_with_xdp() {
        let xdp = crate::netns::xdp_attached_here(&rec.iface)?;
        ok &= xdp.is_some();
        writeln!(
            out,
            "  XDP on {}: {}",
            rec.iface,
            xdp.unwrap_or_else(|| format!("none ({} steering is not attached)", rec.steer))
        )?;
    }
    Ok(ok)
}

/// The unit's state as systemd (or the image) has it, in words.
fn unit_state(layout: &Layout, unit: &str) -> String {
    if layout.is_image() {
        let wants = layout.host(
            &Path::new(UNIT_DIR)
                .join("multi-user.target.wants")
                .join(unit),
        );
        return format!(
            "in the image at {}: {}",
            layout.root.display(),
            if wants.exists() {
                "enabled"
            } else {
                "not enabled"
            }
        );
    }
    if !systemd_booted() {
        return "systemd is not running here: the unit's state is unknown".to_string();
    }
    let ask = |what: &str| {
        Command::new("systemctl")
            .args([what, unit])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|e| format!("unknown ({e})"))
    };
    format!("systemd: {}, {}", ask("is-enabled"), ask("is-active"))
}
