//! The children a load runs beside: the arm's steering (`rxsteer attach --steer MODE`, which
//! applies the mode, observes, and reverts on SIGTERM) and `rxsteer serve` (both transports),
//! each in the server's namespace. A load of its own starts both ([`ModeSession`]); an
//! interleaved repetition keeps one server and switches the steering under it. A reader
//! thread turns attach's JSON lines into samples for the watcher.
use anyhow::{bail, Context, Result};
use std::{
    io::{BufRead, BufReader},
    process::{Child, Stdio},
    sync::mpsc,
    time::Duration,
};

use super::{
    arm::{Arm, Watch},
    sites::Site,
};
use crate::child;
use rxsteer_records::SampleLine;
use rxsteer_records::{CpuFlags, Proto, ServerHelp, ServerIo};
use rxsteer_tune::cpus::format_cpu_list;

/// `rxsteer attach`'s flags for `arm` during `proto`'s load: the arm's mode, observer and
/// XDP choices, and its CPU flag given the lab's steering targets (cpumap steers only
/// `proto`'s class).
fn attach_args(
    dev: &str,
    targets: &[u32],
    arm: Arm,
    proto: Proto,
    interval: Duration,
    watch: Watch,
) -> Vec<String> {
    let targets = format_cpu_list(targets);
    let mut args: Vec<String> = vec![
        "attach".into(),
        "--iface".into(),
        dev.into(),
        "--steer".into(),
        arm.mode.as_str().into(),
        "--json".into(),
        "--xdp-mode".into(),
        arm.xdp.as_str().into(),
        "--xdp-frags".into(),
        arm.frags.as_str().into(),
        "--interval".into(),
        format!("{}ms", interval.as_millis()),
        "--observer".into(),
        arm.observer.as_str().into(),
        "--tc".into(),
        watch.tc.as_str().into(),
        "--observe".into(),
        watch.observe.as_str().into(),
    ];
    match arm.mode.steering().cpus {
        CpuFlags::PerClass => args.extend([proto.spec().cpus_flag.into(), targets]),
        CpuFlags::List => args.extend(["--cpus".into(), targets]),
        CpuFlags::NapiCpus => args.extend(["--napi-cpu".into(), targets]),
        CpuFlags::Nothing => {}
    }
    args
}

/// One arm's steering in place and observed: `rxsteer attach`, in the server's namespace,
/// its JSON lines read into samples.
pub struct Steering {
    attach: Child,
    pub samples: mpsc::Receiver<SampleLine>,
}

impl Steering {
    /// cpumap steers only `proto`'s class: only that protocol's load runs under it.
    pub fn start(
        site: &Site,
        arm: Arm,
        proto: Proto,
        interval: Duration,
        watch: Watch,
    ) -> Result<Self> {
        let me = std::env::current_exe()?;
        let mut args = attach_args(
            &site.server_dev,
            &site.steer_targets,
            arm,
            proto,
            interval,
            watch,
        );
        let moves_irq = arm.mode.steering().tuning.is_some_and(|t| t.irq_move);
        if let (true, Some(cpus)) = (moves_irq, &site.irq_cpus) {
            args.extend(["--irq-cpu".into(), format_cpu_list(cpus)]);
        }
        let pipe = crate::ready::Pipe::new()?;
        let mut cmd = crate::netns::command_at(site.ns(), &me);
        let ready_fd = pipe.pass_to(&mut cmd);
        if site.accept_dissector_reach {
            cmd.arg("--accept-dissector-reach");
        }
        let mut attach = cmd
            .args(&args)
            .args(ready_fd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting rxsteer attach")?;
        if let Err(e) = child::ready(&mut attach, pipe) {
            let _ = attach.kill();
            let _ = attach.wait();
            return Err(e.context(format!("rxsteer attach --steer {}", arm.mode.as_str())));
        }
        let samples = spawn_reader(&mut attach)?;
        Ok(Self { attach, samples })
    }

    /// Stops attach, which reverts the mode, and checks it ended cleanly.
    pub fn stop(mut self) -> Result<()> {
        let attached = child::terminate(&mut self.attach);
        if !attached.success() {
            bail!("rxsteer attach exited with {attached} (the mode may not be reverted: run `rxsteer restore`)");
        }
        Ok(())
    }
}

impl Drop for Steering {
    /// On any early exit (error, the user's q) attach still stops and reverts.
    fn drop(&mut self) {
        if self.attach.try_wait().ok().flatten().is_none() {
            child::terminate(&mut self.attach);
        }
    }
}

/// `rxsteer serve`, both transports, in the server's namespace on the server CPUs.
pub struct Server {
    serve: Child,
}

impl Server {
    /// `help`: what the arm asks of the server itself (busy polling).
    pub fn start(site: &Site, server_io: ServerIo, help: ServerHelp) -> Result<Self> {
        let me = std::env::current_exe()?;
        // Every protocol on its port: `--listen http=IP:8080 --listen zap=IP:9653`.
        let listen = Proto::ALL.iter().flat_map(|p| {
            let addr = format!("{p}={}:{}", site.bind_ip, p.spec().port);
            ["--listen".to_string(), addr]
        });
        let help = match help {
            ServerHelp::Nothing => vec![],
            ServerHelp::BusyPoll { usecs } => vec!["--busy-poll".to_string(), usecs.to_string()],
        };
        let pipe = crate::ready::Pipe::new()?;
        let mut cmd = crate::netns::command_at(site.ns(), &me);
        let ready_fd = pipe.pass_to(&mut cmd);
        let serve = cmd
            .arg("serve")
            .args(ready_fd)
            .args(listen)
            .args(["--cpus", &format_cpu_list(&site.server_cpus)])
            .args(["--io", server_io.as_str()])
            .args(site.serve_as.map(|(u, g)| format!("--user={u}:{g}")))
            .args(help)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting rxsteer serve")?;
        // From here on, Drop stops it whatever fails.
        let mut server = Self { serve };
        child::ready(&mut server.serve, pipe).context("rxsteer serve")?;
        Ok(server)
    }

    /// The server's pid (its CPU time is the server's share of each CPU).
    pub fn pid(&self) -> u32 {
        self.serve.id()
    }

    /// Stops the server and checks it ended cleanly.
    pub fn stop(mut self) -> Result<()> {
        let served = child::terminate(&mut self.serve);
        if !served.success() {
            bail!("rxsteer serve exited with {served}");
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.serve.try_wait().ok().flatten().is_none() {
            child::terminate(&mut self.serve);
        }
    }
}

/// One load's own arm and server: the steering first (so the server starts under it, as
/// busy poll needs), then `rxsteer serve`.
pub struct ModeSession {
    steering: Steering,
    server: Server,
    pub samples: mpsc::Receiver<SampleLine>,
}

impl ModeSession {
    pub fn start(
        site: &Site,
        arm: Arm,
        proto: Proto,
        interval: Duration,
        server_io: ServerIo,
        watch: Watch,
    ) -> Result<Self> {
        let mut steering = Steering::start(site, arm, proto, interval, watch)?;
        let server = Server::start(site, server_io, arm.mode.steering().server)?;
        // The samples move to the session; the steering keeps an empty channel.
        let samples = std::mem::replace(&mut steering.samples, mpsc::channel().1);
        Ok(Self {
            steering,
            server,
            samples,
        })
    }

    /// The server's pid (its CPU time is the server's share of each CPU).
    pub fn serve_pid(&self) -> u32 {
        self.server.pid()
    }

    /// Stops the server, then attach (which reverts the mode), and checks both ended cleanly.
    pub fn stop(self) -> Result<()> {
        let Self {
            steering, server, ..
        } = self;
        let served = server.stop();
        steering.stop()?;
        served
    }
}

fn spawn_reader(attach: &mut Child) -> Result<mpsc::Receiver<SampleLine>> {
    let out = attach.stdout.take().context("attach stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
            let Ok(sample) = serde_json::from_str::<SampleLine>(&line) else {
                continue;
            };
            if tx.send(sample).is_err() {
                break;
            }
        }
    });
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attach_args::{self, AttachArgs};
    use rxsteer_dataplane::{
        FragsChoice, ObserveLevel, ObserverChoice, SteerSet, TcChoice, XdpModeChoice,
    };
    use rxsteer_records::Mode;

    #[derive(clap::Parser)]
    struct Attach {
        #[command(flatten)]
        a: AttachArgs,
    }

    /// Every mode's arm, for each protocol, is a command line attach takes and validates: a
    /// new mode's steering needs no edit here.
    #[test]
    fn every_modes_arm_is_an_attach_that_validates() {
        let target = *rxsteer_tune::cpus::online_cpus().unwrap().last().unwrap();
        for &mode in Mode::ALL {
            for &proto in Proto::ALL {
                let arm = Arm {
                    mode,
                    xdp: XdpModeChoice::Skb,
                    frags: FragsChoice::Auto,
                    observer: ObserverChoice::Auto,
                    per_xdp_mode: false,
                    per_frags: false,
                };
                let argv = attach_args(
                    "veth0",
                    &[target],
                    arm,
                    proto,
                    Duration::from_millis(500),
                    Watch {
                        tc: TcChoice::Auto,
                        observe: ObserveLevel::Default,
                    },
                );
                let parsed = <Attach as clap::Parser>::try_parse_from(&argv)
                    .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
                assert_eq!(parsed.a.steer, mode);
                let sets = attach_args::validate(&parsed.a).unwrap();
                if mode.steering().cpus == CpuFlags::PerClass {
                    let flag = proto.spec().cpus_flag;
                    let set = [SteerSet::Http, SteerSet::Zap, SteerSet::Other]
                        .into_iter()
                        .find(|s| attach_args::set_flag(*s) == flag)
                        .unwrap_or_else(|| panic!("{flag} is no steering set's flag"));
                    assert_eq!(sets.set(set), &[target], "{argv:?}");
                }
            }
        }
    }
}
