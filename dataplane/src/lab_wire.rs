//! The lab's stand-in for a wire: `lab_unhash` on tc egress of the loader's veth, inside the
//! loader's namespace. A veth hands its peer the hash the sender's socket gave each packet, so
//! RPS on the server side would take that hash for free; frames from a NIC without RXHASH
//! (r8169, e1000) arrive with none, and the receiving CPU runs the flow dissector for every
//! one. With the sender's hash dropped, the lab's RPS arms pay that cost too, and the
//! rps-dissector arm's dissector is asked at all.
//!
//! TCX only (Linux 6.6): the link lives as long as [`LabWire`], and dies with the namespace.
//! An older kernel runs the lab without it and says why.
use anyhow::{anyhow, Context, Result};
use aya::{
    programs::{tc::TcAttachOptions, LinkOrder, SchedClassifier, TcAttachType},
    Ebpf, EbpfLoader,
};
use std::os::fd::AsRawFd;

use crate::{EBPF_OBJECT, LAB_UNHASH};

/// The attached program; detached when dropped.
pub struct LabWire {
    _ebpf: Ebpf,
}

impl LabWire {
    /// Attaches `lab_unhash` to tc egress of `iface` in the namespace at `netns` (a path such as
    /// `/run/netns/NAME`). The attach runs in a thread of its own that enters the namespace,
    /// so this process stays where it is.
    pub fn attach(netns: &str, iface: &str) -> Result<Self> {
        if EBPF_OBJECT.is_empty() {
            return Err(anyhow!(
                "this rxsteer was built without its kernel programs"
            ));
        }
        let ns = std::fs::File::open(netns).with_context(|| format!("opening {netns}"))?;
        let iface = iface.to_string();
        std::thread::scope(|s| {
            s.spawn(move || -> Result<Self> {
                // SAFETY: setns on this thread only, with a namespace descriptor we hold.
                if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return Err(std::io::Error::last_os_error())
                        .with_context(|| format!("entering {netns}"));
                }
                let mut ebpf = EbpfLoader::new()
                    .load(EBPF_OBJECT)
                    .context("loading the eBPF object")?;
                let prog: &mut SchedClassifier = ebpf
                    .program_mut(LAB_UNHASH)
                    .ok_or_else(|| anyhow!("{LAB_UNHASH} missing from the eBPF object"))?
                    .try_into()
                    .map_err(|_| anyhow!("{LAB_UNHASH} is not a tc classifier"))?;
                prog.load()
                    .with_context(|| format!("verifying {LAB_UNHASH}"))?;
                prog.attach_with_options(
                    &iface,
                    TcAttachType::Egress,
                    TcAttachOptions::TcxOrder(LinkOrder::default()),
                )
                .with_context(|| format!("attaching {LAB_UNHASH} to {iface} egress (TCX)"))?;
                Ok(Self { _ebpf: ebpf })
            })
            .join()
            .map_err(|_| anyhow!("the thread attaching the lab's wire panicked"))?
        })
    }
}
