//! `rxsteer compare`: untuned vs RPS vs cpumap in the embedded lab, measured side by side.
//! For each repetition (mode order rotated), for each mode: `rxsteer attach --steer MODE`
//! observes the server veth and applies the mode, `rxsteer serve` runs in the server namespace
//! on the server CPUs, and rxload drives it from the client namespace on the loader CPUs. Each
//! mode's req/s is given as a ratio to untuned from the same repetition, next to where the
//! receive work went per CPU. Every process is bounded; the lab is removed at the end.
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Stdio},
};

use crate::{
    lab::{EmbeddedLab, Roles},
    netns::Netns,
    privilege::{self, Cap},
};
use rxsteer_tune::cpus::{format_cpu_list, online_cpus};

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// Measured seconds per mode and repetition.
    #[arg(long, short = 'd', default_value = "5")]
    pub seconds: u32,
    /// Repetitions (the mode order rotates each time).
    #[arg(long, default_value = "3", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub reps: u32,
    /// Connections of the load.
    #[arg(long, short = 'c', default_value = "32", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub connections: u32,
    /// Where to write the run (default: results/<timestamp>-compare).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

const MODES: [&str; 3] = ["none", "rps", "cpumap"];
const PORT: u16 = 8080;

/// The rxload binary: beside this executable (cargo builds both into one folder).
fn rxload_path() -> Result<PathBuf> {
    let me = std::env::current_exe()?;
    let p = me.with_file_name("rxload");
    if !p.is_file() {
        bail!(
            "rxload not found beside {} (build it: cargo build --release -p rxload)",
            me.display()
        );
    }
    Ok(p)
}

fn spawn_in(ns: &Netns, program: &Path, args: &[String], stdout: Stdio) -> Result<Child> {
    ns.command(&program.display().to_string())
        .args(args)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", program.display()))
}

/// Waits for a line containing `needle` on the child's stderr, keeps draining the rest.
fn wait_for(child: &mut Child, needle: &str) -> Result<()> {
    let mut err = BufReader::new(child.stderr.take().context("stderr")?);
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line)? == 0 {
            bail!("exited before saying {needle:?}: {seen}");
        }
        seen.push_str(&line);
        if line.contains(needle) {
            break;
        }
    }
    std::thread::spawn(move || for _ in err.lines() {});
    Ok(())
}

/// One mode, one repetition: (rxload's JSON, the attach samples).
fn run_mode(
    lab: &EmbeddedLab,
    roles: &Roles,
    mode: &str,
    args: &CompareArgs,
    dir: &Path,
    rep: u32,
) -> Result<(Value, Vec<Value>)> {
    let me = std::env::current_exe()?;
    let (srv, cli) = (&lab.veth.server, &lab.veth.client);
    let interval_count = (args.seconds + 2).to_string();
    let mut attach_args: Vec<String> = [
        "attach",
        "--iface",
        &lab.veth.server_dev,
        "--steer",
        mode,
        "--json",
        "--xdp-mode",
        "drv",
        "--count",
        &interval_count,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    match mode {
        "cpumap" => {
            attach_args.extend(["--http-cpus".into(), format_cpu_list(&steer_targets(roles))])
        }
        "rps" => attach_args.extend(["--cpus".into(), format_cpu_list(&steer_targets(roles))]),
        _ => {}
    }
    let mut attach = spawn_in(srv, &me, &attach_args, Stdio::piped())?;
    wait_for(&mut attach, "observing")?;
    let serve_args: Vec<String> = vec![
        "serve".into(),
        "--http".into(),
        format!("{}:{PORT}", lab.veth.server_ip),
        "--cpus".into(),
        format_cpu_list(&roles.server_cpus),
    ];
    let mut serve = spawn_in(srv, &me, &serve_args, Stdio::null())?;
    wait_for(&mut serve, "rxsteer serve: HTTP on")?;
    let json = dir.join(format!("rxload-{mode}-rep{rep}.json"));
    let load = cli
        .command("taskset")
        .args(["-c", &format_cpu_list(&roles.loader_cpus)])
        .arg(rxload_path()?)
        .arg(format!("http://{}:{PORT}", lab.veth.server_ip))
        .args([
            "-c",
            &args.connections.to_string(),
            "-t",
            "1",
            "-d",
            &format!("{}s", args.seconds),
            "--warmup",
            "1s",
            "--json",
        ])
        .arg(&json)
        .output()?;
    // SIGTERM: a clean stop for the server; attach stops itself after its count.
    unsafe { libc::kill(serve.id() as i32, libc::SIGTERM) };
    serve.wait()?;
    let samples: Vec<Value> = BufReader::new(attach.stdout.take().context("attach stdout")?)
        .lines()
        .map_while(|l| l.ok())
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let status = attach.wait()?;
    if !status.success() {
        bail!("rxsteer attach --steer {mode} exited with {status}");
    }
    if !load.status.success() {
        bail!(
            "rxload in mode {mode} failed: {}",
            String::from_utf8_lossy(&load.stderr).trim()
        );
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json)?)?;
    std::fs::write(
        dir.join(format!("samples-{mode}-rep{rep}.jsonl")),
        samples
            .iter()
            .map(|s| s.to_string() + "\n")
            .collect::<String>(),
    )?;
    Ok((v, samples))
}

/// Steering targets; with no free CPU (1-2 CPUs) the server CPUs themselves.
fn steer_targets(roles: &Roles) -> Vec<u32> {
    let t = roles.steer_targets();
    if t.is_empty() {
        roles.server_cpus.clone()
    } else {
        t
    }
}

/// Receive work per CPU over the samples: (NET_RX softirq + receive kthreads) ns per second.
fn receive_ms_per_s(samples: &[Value], cpus: usize) -> Vec<f64> {
    let mut ns = vec![0f64; cpus];
    let mut secs = 0f64;
    for s in samples {
        secs += s["interval_s"].as_f64().unwrap_or(0.0);
        for (i, c) in s["cpus"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
            .take(cpus)
        {
            let f = |k: &str| c[k].as_f64().unwrap_or(0.0);
            ns[i] += f("net_rx_ns") + f("cpumap_kthread_ns") + f("napi_kthread_ns");
        }
    }
    ns.iter().map(|n| n / 1e6 / secs.max(1e-9)).collect()
}

pub fn run(args: &CompareArgs) -> Result<()> {
    privilege::require(
        "rxsteer compare",
        &[Cap::SysAdmin, Cap::NetAdmin, Cap::Bpf, Cap::Perfmon],
    )?;
    rxload_path()?;
    let online = online_cpus()?;
    let roles = Roles::choose(&online, None, None, None)?;
    let dir = args.out.clone().unwrap_or_else(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("results/{t}-compare"))
    });
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    for n in EmbeddedLab::remove_leftovers()? {
        eprintln!("rxsteer: removed network namespace {n} left by an earlier run");
    }
    eprintln!("rxsteer compare: {}", roles.describe());
    if let Some(c) = roles.caveat(online.len()) {
        eprintln!("rxsteer compare: note: {c}");
    }
    let lab = EmbeddedLab::create(&roles)?;
    let mut rows = Vec::new();
    for rep in 0..args.reps {
        let mut rps = [0f64; 3];
        for k in 0..MODES.len() {
            let i = (k + rep as usize) % MODES.len();
            let (v, samples) = run_mode(&lab, &roles, MODES[i], args, &dir, rep)?;
            rps[i] = v["req_per_s"].as_f64().unwrap_or(0.0);
            let recv = receive_ms_per_s(&samples, online.len());
            eprintln!(
                "rep {rep} {:<6} {:>8.0} req/s  p99 {:>6}us  receive ms/s per CPU {:?}",
                MODES[i],
                rps[i],
                v["latency_us"]["quantiles"]["p99"],
                recv.iter()
                    .map(|m| (m * 10.0).round() / 10.0)
                    .collect::<Vec<_>>()
            );
            rows.push(
                serde_json::json!({"rep": rep, "mode": MODES[i], "req_per_s": rps[i],
                "p99_us": v["latency_us"]["quantiles"]["p99"], "receive_ms_per_s": recv}),
            );
        }
        println!(
            "rep {rep}: untuned {:.0} req/s; rps {:.2}x; cpumap {:.2}x (ratios to untuned, same repetition)",
            rps[0],
            rps[1] / rps[0].max(1e-9),
            rps[2] / rps[0].max(1e-9)
        );
    }
    let doc = serde_json::json!({"roles": roles, "cpus": online.len(), "seconds": args.seconds, "connections": args.connections,
        "caveat": roles.caveat(online.len()), "runs": rows});
    std::fs::write(dir.join("run.json"), serde_json::to_string_pretty(&doc)?)?;
    crate::report::run(&dir)?;
    drop(lab);
    eprintln!("rxsteer compare: stored in {}; lab removed", dir.display());
    Ok(())
}
