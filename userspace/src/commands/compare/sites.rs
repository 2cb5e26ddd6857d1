//! Where a comparison runs: the embedded lab (namespaces, a one-queue veth, the NAPI thread
//! pinned as the receive core) or a real interface on this host, each with its loader.
//! Each is prepared here and handed back; the caller measures on it.
use anyhow::{Context, Result};
use rxsteer_records::run::{Setup, SiteKind};

use super::{
    args::CompareArgs,
    figures,
    load::{self, Loader, LoaderArg},
    ssh,
};
use crate::{
    embedded_lab::{EmbeddedLab, Roles},
    netns::Netns,
};
use rxsteer_tune::cpus::format_cpu_list;

/// Where the server side runs: the interface steering applies to, the namespace (lab) or the
/// host, the CPUs, and the address to bind.
pub struct Site<'a> {
    ns: Option<&'a Netns>,
    pub server_dev: String,
    pub bind_ip: String,
    /// The user and group `serve` runs as: on this host's interface, not root (it needs no
    /// privilege: ports above 1024, its own threads' CPUs, busy polling within NAPI's
    /// weight); in the lab's own namespaces, as rxsteer runs.
    pub serve_as: Option<(u32, u32)>,
    /// `--accept-dissector-reach`, handed to each arm's attach.
    pub accept_dissector_reach: bool,
    pub target_ip: String,
    pub server_cpus: Vec<u32>,
    pub steer_targets: Vec<u32>,
    /// Where an arm that moves the interrupt (irq-affinity) moves it: `--irq-cpu`, else the
    /// pick; None in the lab, whose veth has none (the arm's attach says so).
    pub irq_cpus: Option<Vec<u32>>,
}

impl Site<'_> {
    pub fn ns(&self) -> Option<&Netns> {
        self.ns
    }

    /// The server interface's levers as they read now (in the lab, from inside its
    /// namespace, where the interface's ioctls answer). None where they could not be read.
    pub fn levers_now(&self) -> Option<rxsteer_records::levers::LeversRead> {
        let dev = self.server_dev.clone();
        let cpus = rxsteer_tune::cpus::online_cpus().ok()?;
        let read = move || Ok(rxsteer_tune::levers::read(&dev, &cpus));
        match self.ns {
            Some(ns) => ns.spawn(None, read).join().ok()?.ok(),
            None => read().ok(),
        }
    }
}

/// Everything a comparison measures on: the site, its loader, and what run.json says of them.
pub struct Prepared<'a> {
    pub site: Site<'a>,
    pub loader: Loader<'a>,
    pub setup: Setup,
    pub caveat: Option<String>,
}

/// The embedded lab, built for a comparison and removed when dropped.
pub struct Lab {
    lab: EmbeddedLab,
    roles: Roles,
    caveat: Option<String>,
}

impl Lab {
    /// Removes what an earlier, killed run left, and builds the lab.
    pub fn create(roles: &Roles, cpus: usize) -> Result<Self> {
        for n in EmbeddedLab::remove_leftovers()? {
            eprintln!("rxsteer: removed network namespace {n} left by an earlier run");
        }
        crate::host::remove_orphaned_state()?;
        let caveat = rxsteer_records::small_machine_caveat(cpus);
        eprintln!(
            "rxsteer compare: the embedded lab: {}",
            crate::embedded_lab::describe(roles)
        );
        if let Some(c) = &caveat {
            eprintln!("rxsteer compare: note: {c}");
        }
        Ok(Self {
            lab: EmbeddedLab::create(roles)?,
            roles: roles.clone(),
            caveat,
        })
    }

    pub fn prepared(&self) -> Prepared<'_> {
        let (lab, roles) = (&self.lab, &self.roles);
        let site = Site {
            ns: Some(&lab.veth.server),
            server_dev: lab.veth.server_dev.clone(),
            bind_ip: lab.veth.server_ip.to_string(),
            serve_as: None,
            accept_dissector_reach: false,
            target_ip: lab.veth.server_ip.to_string(),
            server_cpus: roles.server_cpus.clone(),
            steer_targets: steer_targets(roles),
            irq_cpus: None,
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
            backlog_threads: rxsteer_dataplane::procfs::backlog_threads(),
            levers: site.levers_now(),
            levers_after: None,
        };
        Prepared {
            site,
            loader: Loader::Lab {
                ns: &lab.veth.client,
                cpus: roles.loader_cpus.clone(),
            },
            setup,
            caveat: self.caveat.clone(),
        }
    }
}

/// `nobody`'s uid and gid (65534 where the password database has no such user), when this
/// process is root and so has something to drop.
fn unprivileged_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no failure; getpwnam returns a pointer into static storage or null,
    // read at once on this thread.
    unsafe {
        if libc::geteuid() != 0 {
            return None;
        }
        let pw = libc::getpwnam(c"nobody".as_ptr());
        Some(if pw.is_null() {
            (65534, 65534)
        } else {
            ((*pw).pw_uid, (*pw).pw_gid)
        })
    }
}

/// Where the arms that move the interrupt move it on `iface`: `--irq-cpu`, else the
/// highest-capacity CPU that runs neither the server nor a local loader, said with why. None
/// where no arm moves it.
fn irq_cpus(args: &CompareArgs, iface: &str, roles: &Roles) -> Result<Option<Vec<u32>>> {
    let moves = args
        .arms()
        .iter()
        .any(|a| a.mode.steering().tuning.is_some_and(|t| t.irq_move));
    if !moves {
        return Ok(None);
    }
    if let Some(c) = &args.irq_cpu {
        return Ok(Some(c.0.clone()));
    }
    let online = rxsteer_tune::cpus::online_cpus()?;
    let info = rxsteer_tune::topology::of_this_machine(&online);
    let busy: Vec<u32> = roles
        .server_cpus
        .iter()
        .chain(roles.loader_cpus.iter())
        .copied()
        .collect();
    let Some((cpu, why)) = rxsteer_tune::irq::pick_cpu(&info, &busy) else {
        return Ok(None);
    };
    eprintln!("rxsteer compare: irq-affinity moves {iface}'s interrupt to CPU {cpu}: {why}");
    Ok(Some(vec![cpu]))
}

/// With no free CPU (1-2 CPUs) steering can only go to the server CPUs themselves.
fn steer_targets(roles: &Roles) -> Vec<u32> {
    let targets = roles.steer_targets();
    if targets.is_empty() {
        roles.server_cpus.clone()
    } else {
        targets
    }
}

/// A real interface of this host, with the loader the flags name (checked and prepared before
/// anything on this host changes).
pub fn iface(args: &CompareArgs, iface: &str, roles: &Roles) -> Result<Prepared<'static>> {
    crate::iface::require_up(iface)?;
    let external = args.loader == [LoaderArg::External];
    // The server listens on the address the load is sent to, never on every interface.
    let target_ip = match args.target_ip {
        Some(ip) => ip.to_string(),
        None => crate::iface::ipv4_of(iface)
            .with_context(|| {
                format!(
                    "the server binds {iface}'s address; give the one the load is sent to with --target-ip"
                )
            })?
            .to_string(),
    };
    let site = Site {
        ns: None,
        server_dev: iface.into(),
        bind_ip: target_ip.clone(),
        serve_as: unprivileged_user(),
        accept_dissector_reach: args.accept_dissector_reach,
        target_ip,
        server_cpus: roles.server_cpus.clone(),
        steer_targets: steer_targets(roles),
        irq_cpus: irq_cpus(args, iface, roles)?,
    };
    let ssh = load::ssh_dests(&args.loader)?;
    let loader = if !ssh.is_empty() {
        Loader::Ssh(ssh::SshLoaders::prepare(
            ssh,
            args.ssh_config.clone(),
            &crate::child::rxload_path()?,
        )?)
    } else if external {
        Loader::External
    } else if let [LoaderArg::Netns(name)] = &args.loader[..] {
        // Checked now, before anything on this host changes.
        if !std::path::Path::new("/run/netns").join(name).exists() {
            anyhow::bail!(
                "--loader netns:{name}: no such network namespace (ip netns list shows the ones there are)"
            );
        }
        Loader::Netns {
            name: name.clone(),
            cpus: args.roles.loader_cpus.clone().map(|c| c.0),
        }
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
        backlog_threads: rxsteer_dataplane::procfs::backlog_threads(),
        levers: site.levers_now(),
        levers_after: None,
    };
    Ok(Prepared {
        site,
        loader,
        setup,
        caveat: None,
    })
}
