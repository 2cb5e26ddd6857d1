//! One guest under QEMU: its command line per architecture and NIC, KVM where it really works
//! and TCG otherwise (said), the console read line by line, a hard bound on its run, and the
//! process killed whatever ends the run (an error, a timeout, the guard dropped).
use anyhow::{bail, Context, Result};
use std::{
    io::{BufRead, BufReader},
    path::Path,
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::{Duration, Instant},
};

use super::{Arch, Nic};

/// Which accelerator runs the guests, and why.
#[derive(Clone, Debug)]
pub struct Accel {
    pub kvm: bool,
    pub why: String,
}

/// KVM only for a guest of the host's architecture, with /dev/kvm openable and a CPU that
/// has VMX or SVM: on this project's machines /dev/kvm is a paravirtual device without them,
/// and guests under it crash on their first cmpxchg16b or hang.
pub fn accel(arch: Arch) -> Accel {
    let host = std::env::consts::ARCH;
    if arch.rust() != host {
        return Accel {
            kvm: false,
            why: format!("TCG: an {} guest on an {host} host", arch.rust()),
        };
    }
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm");
    let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let virt = flags
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "vmx" || f == "svm"));
    match (dev, virt) {
        (Ok(_), true) => Accel {
            kvm: true,
            why: "KVM: /dev/kvm works and the CPU has VMX/SVM".into(),
        },
        (Ok(_), false) => Accel {
            kvm: false,
            why: "TCG: /dev/kvm is there but this CPU shows no VMX/SVM (KVM guests crash here)"
                .into(),
        },
        (Err(e), _) => Accel {
            kvm: false,
            why: format!("TCG: /dev/kvm cannot be opened ({e})"),
        },
    }
}

pub struct Guest<'a> {
    pub arch: Arch,
    pub nic: Nic,
    pub cpus: u32,
    pub memory_mb: u32,
    pub vmlinuz: &'a Path,
    pub initramfs: &'a Path,
    pub accel: &'a Accel,
    /// Words added to the kernel's command line.
    pub boot_options: &'a [String],
}

impl Guest<'_> {
    fn command(&self) -> Command {
        let mut c = match self.arch {
            Arch::X86_64 => {
                let mut c = Command::new("qemu-system-x86_64");
                c.args(["-machine", "q35"]);
                c.args(["-cpu", if self.accel.kvm { "host" } else { "max" }]);
                c
            }
            Arch::Aarch64 => {
                let mut c = Command::new("qemu-system-aarch64");
                // aya moved off -cpu max after a QEMU bug; neoverse-n1 is the GB10's kind of core.
                // GICv3: the default GICv2 takes at most 8 CPUs (and the GB10 has a GICv3).
                c.args(["-machine", "virt,gic-version=3", "-cpu", "neoverse-n1"]);
                c
            }
        };
        // TCG single-threaded: with one host thread per vCPU (MTTCG), guests here died of an
        // "Oops: int3" in handle_softirqs and soft lockups there, at the 5-byte NOP a static
        // key patches (text_poke_bp) when rxsteer attaches or detaches its tracepoints: a vCPU
        // ran code another had just rewritten. One thread for all vCPUs keeps code writes
        // coherent, at the price of speed, which TCG rows do not measure.
        c.args([
            "-accel",
            if self.accel.kvm {
                "kvm"
            } else {
                "tcg,thread=single"
            },
        ]);
        c.args([
            "-nodefaults",
            "-no-reboot",
            "-display",
            "none",
            "-serial",
            "stdio",
        ]);
        c.args([
            "-m",
            &self.memory_mb.to_string(),
            "-smp",
            &self.cpus.to_string(),
        ]);
        c.arg("-kernel").arg(self.vmlinuz);
        c.arg("-initrd").arg(self.initramfs);
        let console = match self.arch {
            Arch::X86_64 => "ttyS0",
            Arch::Aarch64 => "ttyAMA0",
        };
        c.args([
            "-append",
            &format!(
                "console={console} rdinit=/init panic=-1 quiet loglevel=1 net.ifnames=0 {}",
                self.boot_options.join(" ")
            ),
        ]);
        // Two NICs on one QEMU hub: wired to each other and to nothing else.
        for i in 0..2 {
            c.args(["-netdev", &format!("hubport,id=n{i},hubid=0")]);
            c.args([
                "-device",
                &format!(
                    "{},netdev=n{i},mac=52:54:00:12:34:{:02x}",
                    self.nic.qemu_device(),
                    0x10 + i
                ),
            ]);
        }
        c
    }

    /// Boots the guest and returns its console, ended by the guest's "RXVM done" and
    /// poweroff. Past `bound` the guest is killed and the error carries the console's last
    /// 20 lines; so does a guest that ends without saying it is done (a panic).
    pub fn run(&self, bound: Duration, log: &Path) -> Result<Vec<String>> {
        let mut cmd = self.command();
        // The guest dies with xtask, however xtask ends (SIGKILL included).
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| {
                format!("starting {cmd:?} (apt-get install qemu-system-x86 qemu-system-arm)")
            })?;
        let mut guard = Killed(child);
        let (tx, rx) = mpsc::channel();
        let stdout = guard.0.stdout.take().context("qemu stdout")?;
        let stderr = guard.0.stderr.take().context("qemu stderr")?;
        for pipe in [
            Box::new(stdout) as Box<dyn std::io::Read + Send>,
            Box::new(stderr),
        ] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(|l| l.ok()) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        let deadline = Instant::now() + bound;
        let mut lines = Vec::new();
        let mut done = false;
        loop {
            if super::interrupt::requested() {
                let _ = std::fs::write(log, lines.join("\n"));
                return Err(super::interrupt::Interrupted.into());
            }
            // Short waits, so that a signal is seen within a fifth of a second.
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    let line = line.trim_end_matches('\r').to_string();
                    done |= line.trim() == "RXVM done";
                    lines.push(line);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {}
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    let _ = std::fs::write(log, lines.join("\n"));
                    bail!(
                        "the guest did not finish within {bound:?}: killed. Its console's last lines:\n{}",
                        tail(&lines)
                    );
                }
            }
        }
        let _ = guard.0.wait();
        std::fs::write(log, lines.join("\n") + "\n")?;
        // A Ctrl-C at a terminal reaches QEMU too, which then ends at once.
        if !done && super::interrupt::requested() {
            return Err(super::interrupt::Interrupted.into());
        }
        if !done {
            bail!(
                "the guest ended before its checks did. Its console's last lines:\n{}",
                tail(&lines)
            );
        }
        Ok(lines)
    }
}

fn tail(lines: &[String]) -> String {
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// The QEMU process, killed and reaped when dropped: no guest outlives its run.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
