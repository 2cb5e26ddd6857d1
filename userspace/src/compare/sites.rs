//! Where a comparison runs: the embedded lab (namespaces, a one-queue veth, the NAPI thread
//! pinned as the receive core) or a real interface on this host, each with its loader.
use anyhow::Result;
use rxsteer_records::run::{Setup, SiteKind};
use std::{path::Path, sync::atomic::AtomicBool};

use super::{
    args::CompareArgs,
    figures,
    load::{self, Loader, LoaderArg},
    measure, ssh,
};
use crate::{
    lab::{EmbeddedLab, Roles},
    netns::Netns,
};
use rxsteer_tune::cpus::format_cpu_list;

/// Where the server side runs: the interface steering applies to, the namespace (lab) or the
/// host, the CPUs, and the address to bind.
pub struct Site<'a> {
    ns: Option<&'a Netns>,
    pub server_dev: String,
    pub bind_ip: String,
    pub target_ip: String,
    pub server_cpus: Vec<u32>,
    pub steer_targets: Vec<u32>,
}

impl Site<'_> {
    pub fn ns(&self) -> Option<&Netns> {
        self.ns
    }
}

pub fn run_lab(
    args: &CompareArgs,
    roles: &Roles,
    cpus: usize,
    dir: &Path,
    tui: bool,
    stop: &AtomicBool,
) -> Result<()> {
    for n in EmbeddedLab::remove_leftovers()? {
        eprintln!("rxsteer: removed network namespace {n} left by an earlier run");
    }
    crate::host::remove_orphaned_state()?;
    let caveat = rxsteer_records::small_machine_caveat(cpus);
    eprintln!(
        "rxsteer compare: the embedded lab: {}",
        crate::lab::describe(roles)
    );
    if let Some(c) = &caveat {
        eprintln!("rxsteer compare: note: {c}");
    }
    let lab = EmbeddedLab::create(roles)?;
    let targets = roles.steer_targets();
    let site = Site {
        ns: Some(&lab.veth.server),
        server_dev: lab.veth.server_dev.clone(),
        bind_ip: lab.veth.server_ip.to_string(),
        target_ip: lab.veth.server_ip.to_string(),
        server_cpus: roles.server_cpus.clone(),
        // With no free CPU (1-2 CPUs) steering can only go to the server CPUs themselves.
        steer_targets: if targets.is_empty() {
            roles.server_cpus.clone()
        } else {
            targets
        },
    };
    let loader = Loader::Lab {
        ns: &lab.veth.client,
        cpus: roles.loader_cpus.clone(),
    };
    let setup = Setup {
        kind: SiteKind::Lab,
        iface: lab.veth.server_dev.clone(),
        roles: Some(roles.clone()),
        lab: Some(lab.settings(roles)),
        server_cpus: None,
        loader: None,
        steer_targets: site.steer_targets.clone(),
        qsize: 2048,
        nic: figures::iface_facts(Some(&lab.veth.server), &lab.veth.server_dev),
    };
    let result = measure(args, &site, &loader, setup, caveat, dir, tui, stop);
    drop(lab);
    result?;
    eprintln!("rxsteer compare: stored in {}; lab removed", dir.display());
    Ok(())
}

pub fn run_iface(
    args: &CompareArgs,
    iface: &str,
    roles: &Roles,
    dir: &Path,
    tui: bool,
    stop: &AtomicBool,
) -> Result<()> {
    crate::iface::require_up(iface)?;
    let external = args.loader == [LoaderArg::External];
    let target_ip = match args.target_ip {
        Some(ip) => ip.to_string(),
        None if external => "0.0.0.0".into(),
        None => crate::iface::ipv4_of(iface)?.to_string(),
    };
    let targets = roles.steer_targets();
    let site = Site {
        ns: None,
        server_dev: iface.into(),
        bind_ip: "0.0.0.0".into(),
        target_ip,
        server_cpus: roles.server_cpus.clone(),
        steer_targets: if targets.is_empty() {
            roles.server_cpus.clone()
        } else {
            targets
        },
    };
    let ssh = load::ssh_dests(&args.loader)?;
    let loader = if !ssh.is_empty() {
        // Checked and prepared before anything on this host changes.
        Loader::Ssh(ssh::SshLoaders::prepare(
            ssh,
            args.ssh_config.clone(),
            &load::rxload_path()?,
        )?)
    } else if external {
        Loader::External
    } else {
        Loader::Local {
            cpus: args.roles.loader_cpus.clone().map(|c| c.0),
        }
    };
    eprintln!(
        "rxsteer compare: interface {iface}: server CPUs {}, steering targets {}; load: {}",
        format_cpu_list(&site.server_cpus),
        format_cpu_list(&site.steer_targets),
        loader.describe()
    );
    if matches!(loader, Loader::Local { .. }) {
        eprintln!(
            "rxsteer compare: note: a local loader's traffic to {} stays on this host's \
             loopback path and never crosses {iface}'s receive queue; drive the load from \
             other machines (--loader ssh://host, or external) to measure the NIC",
            site.target_ip
        );
    }
    let setup = Setup {
        kind: SiteKind::Iface,
        iface: iface.into(),
        roles: None,
        lab: None,
        server_cpus: Some(site.server_cpus.clone()),
        loader: Some(loader.describe()),
        steer_targets: site.steer_targets.clone(),
        qsize: 2048,
        nic: figures::iface_facts(None, iface),
    };
    measure(args, &site, &loader, setup, None, dir, tui, stop)?;
    eprintln!("rxsteer compare: stored in {}", dir.display());
    Ok(())
}
