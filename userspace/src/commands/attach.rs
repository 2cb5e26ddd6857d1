//! `rxsteer attach --steer cpumap|rps|none`: put one steering mode in place, exclusively,
//! observe it, and undo all of it on exit (Ctrl-C, SIGTERM, error, panic). After a SIGKILL the
//! state file lets the next start, or `rxsteer restore`, put the host back.
use anyhow::{bail, Result};

use rxsteer_dataplane::{
    sampler::Sampler, Dataplane, FragsChoice, ObserverChoice, PortConfig, SteerSets, XdpModeChoice,
    RX_ACCOUNT,
};

use crate::{
    attach_args::{validate, AttachArgs},
    host::{self, TuneGuard},
    iface,
    observe::{attach_observer, say_observed, Exporter, ObserveArgs},
    privilege,
    signals::stop_on_signals,
};
use rxsteer_records::{CpuFlags, Mode, Observed, Observer, Program, XdpMode};

pub fn run(args: &AttachArgs) -> Result<()> {
    let o = &args.observe;
    // Handlers first: a Ctrl-C or SIGTERM during setup must still end in a clean exit that
    // detaches and reverts, not the default death.
    let stop = stop_on_signals()?;
    let sets = validate(args)?;
    host::refuse_unmet(args.steer, "--steer", args.accept_dissector_reach)?;
    crate::observe::check_tc(args.observe.tc)?;
    privilege::require("rxsteer attach", privilege::OBSERVE)?;
    iface::require_up(&o.iface)?;
    let endpoint = o.open_metrics()?;
    let levers = host::with_irq_pick(args.steer, &o.iface, args.levers.asked())?;
    let input = host::profile_input(&o.iface, args.cpus.profile_cpus(), levers)?;
    // Held to the end of this function: past the revert, so no other session tunes in between.
    let _lock = host::take_over(&format!(
        "rxsteer attach --steer {} on {}",
        args.steer, o.iface
    ))?;
    host::say_kept_tuning(&format!("attach --steer {}", args.steer))?;

    let ports = PortConfig {
        http: o.http_ports.0.clone(),
        zap: o.zap_ports.0.clone(),
    };
    let (mut dp, steer_mode, frags) = load_dataplane(args, &ports, &sets)?;
    if let Some(dp) = dp.as_mut() {
        dp.attach_tracepoints()?;
        if o.observe.times_net_rx_waits() {
            dp.attach_softirq_raise()?;
        }
    }
    // Tuning first (it clears RPS before cpumap steering starts), XDP second; if the attach
    // fails, the guard's drop reverts the tuning.
    let guard = tune_for(args.steer, &input)?;
    if let (Some(dp), Some(_)) = (dp.as_mut(), steer_mode) {
        dp.fill_cpumap(&sets, args.qsize, frags)?;
    }
    let steering_program = args.steer.steering().program;
    let xdp_program = match steering_program {
        Some(Program::Xdp(p)) => Some(p),
        _ => None,
    };
    let (how, program) = attach_programs(dp.as_mut(), o, xdp_program.zip(steer_mode), frags)?;
    if let (Some(dp), Some(Program::FlowDissector(name))) = (dp.as_mut(), steering_program) {
        // After tuning: RPS is on when the dissector starts shaping its hash.
        dp.attach_flow_dissector(name)?;
    }
    // The baseline before the line that says observing has begun (see top).
    let sampler = Sampler::new(
        dp.as_mut().map(Dataplane::take_counters).transpose()?,
        &o.iface,
        o.bpf_stats,
        o.interval,
    )?;
    say_observed(
        &how,
        &o.iface,
        program,
        o.xdp_mode,
        &steering_line(args, &sets, &input),
    );
    crate::ready::announce(
        args.ready_fd,
        &format!("observing {} steer {}", o.iface, args.steer),
    )?;
    let exporter = endpoint.map(|e| {
        let x = Exporter::new(e, &o.iface, &how, args.steer.as_str());
        match &guard {
            Some(g) => x.watching(g.written().to_vec()),
            None => x,
        }
    });
    let shown = o.show(sampler, how, &stop, exporter);
    drop(dp);
    if let Some(g) = guard {
        let restored = g.revert()?;
        let (gone, back): (Vec<_>, Vec<_>) = restored.iter().partition(|c| c.skipped.is_some());
        eprintln!("rxsteer: detached; {} tuned value(s) restored", back.len());
        for c in gone {
            eprintln!(
                "rxsteer: not restored {}: {}",
                c.name,
                c.skipped.as_deref().unwrap_or_default()
            );
        }
    }
    shown
}

/// Decided, and refused, before anything changes: whether BPF loads at all (None with
/// `--observer off`), the XDP mode cpumap steering runs in, and whether the frags-aware
/// programs are used.
fn load_dataplane(
    args: &AttachArgs,
    ports: &PortConfig,
    sets: &SteerSets,
) -> Result<(Option<Dataplane>, Option<XdpMode>, bool)> {
    let o = &args.observe;
    if o.observer == ObserverChoice::Off && args.steer.steers_with_bpf() {
        bail!(
            "--observer off: {} steering is itself a BPF program; use --observer auto",
            args.steer
        );
    }
    let mut dp = match o.observer {
        ObserverChoice::Off => None,
        _ => Some(Dataplane::load_with(ports, sets)?),
    };
    let (steer_mode, frags) = match dp.as_mut() {
        Some(dp) if args.steer.steers_with_xdp() => {
            let mode = dp
                .resolve_xdp_mode(&o.iface, o.xdp_mode)
                .map_err(crate::observe::xdp_mode_error(o.xdp_mode))?;
            let usable = crate::observe::use_frags(dp, o.xdp_frags)?;
            (
                Some(mode),
                frags_for(args.steer, mode, o.xdp_frags, usable)?,
            )
        }
        Some(dp) => (None, crate::observe::use_frags(dp, o.xdp_frags)?),
        None => (None, false),
    };
    Ok((dp, steer_mode, frags))
}

/// What is steered where, in the line that says observing has begun.
fn steering_line(
    args: &AttachArgs,
    sets: &SteerSets,
    input: &rxsteer_tune::ProfileInput,
) -> String {
    let mode = args.steer;
    match mode.steering().cpus {
        CpuFlags::PerClass => format!(
            "{mode} (HTTP -> {}, ZAP -> {}, other -> {}, qsize {})",
            show_set(&sets.http),
            show_set(&sets.zap),
            show_set(&sets.other),
            args.qsize
        ),
        CpuFlags::List => format!(
            "{mode} (CPUs {})",
            rxsteer_tune::cpus::format_cpu_list(&input.cpus)
        ),
        CpuFlags::NapiCpus => format!(
            "{mode} (NAPI kthreads on CPUs {})",
            rxsteer_tune::cpus::format_cpu_list(&input.cpus)
        ),
        CpuFlags::Nothing => mode.to_string(),
    }
}

/// Applies the tuning of `steer` as this session's layer and says what it wrote. A mode without
/// tuning writes nothing: the host stays as found, kept tuning included.
fn tune_for(steer: Mode, input: &rxsteer_tune::ProfileInput) -> Result<Option<TuneGuard>> {
    if steer.steering().tuning.is_none() {
        return Ok(None);
    }
    let (g, plan) = TuneGuard::apply(steer, input)?;
    eprintln!(
        "rxsteer: tuned for {steer} ({} value(s) written)",
        plan.writes().count()
    );
    // A lever this place has not (a veth's ring, a VM's governor), in one line each.
    for c in plan
        .changes
        .iter()
        .filter(|c| rxsteer_tune::levers::is_lever(c.knob, &c.path))
    {
        if let Some(why) = &c.skipped {
            eprintln!("rxsteer: skipped {}: {why}", c.name);
        }
    }
    Ok(Some(g))
}

/// Attaches what counts where the driver received: the mode's steering program in its
/// resolved XDP mode (`steer`), else the observer `o` asks for; nothing without a Dataplane.
fn attach_programs(
    dp: Option<&mut Dataplane>,
    o: &ObserveArgs,
    steer: Option<(&'static str, XdpMode)>,
    frags: bool,
) -> Result<(Observed, &'static str)> {
    let Some(dp) = dp else {
        return Ok((Observed::no_bpf(), RX_ACCOUNT));
    };
    let (observer, xdp_mode, program) = match steer {
        Some((program, mode)) => {
            let asked = match mode {
                XdpMode::Drv => XdpModeChoice::Drv,
                XdpMode::Skb => XdpModeChoice::Skb,
            };
            let m = dp
                .attach_xdp(program, frags, &o.iface, asked)
                .map_err(crate::observe::xdp_mode_error(asked))?;
            (Observer::Xdp, Some(m), program)
        }
        None => {
            let (obs, m) = attach_observer(dp, &o.iface, o.observer, o.xdp_mode, frags)?;
            (obs, m, RX_ACCOUNT)
        }
    };
    Ok((o.attach_witnesses(dp, observer, xdp_mode, frags)?, program))
}

/// Measured on Linux 6.18 (veth, generic XDP): with frags-aware programs, packets a cpumap
/// redirect delivers reach IP with header errors (IpInHdrErrors; TCP cannot connect). Driver
/// mode is fine. So cpumap in skb mode uses the plain programs: said under auto, refused on.
const SKB_CPUMAP_FRAGS: &str = "frags-aware programs with cpumap in skb mode: on this project's \
     kernel (6.18) the redirected packets reach IP with header errors (IpInHdrErrors), so TCP \
     cannot connect";

fn frags_for(steer: Mode, mode: XdpMode, asked: FragsChoice, usable: bool) -> Result<bool> {
    if !steer.steers_with_xdp() || mode != XdpMode::Skb || !usable {
        return Ok(usable);
    }
    if asked == FragsChoice::On {
        bail!("--xdp-frags on: {SKB_CPUMAP_FRAGS}; use --xdp-frags off or auto");
    }
    eprintln!("rxsteer: plain XDP programs: {SKB_CPUMAP_FRAGS}");
    Ok(false)
}

fn show_set(cpus: &[u32]) -> String {
    if cpus.is_empty() {
        "not steered".to_string()
    } else {
        format!("CPUs {}", rxsteer_tune::cpus::format_cpu_list(cpus))
    }
}
