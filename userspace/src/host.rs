//! rxsteer's side of host tuning: which profile input an interface gives, a guard that reverts
//! a session's tuning on every exit path, and recovery of a crashed session's changes.
use anyhow::{bail, Context, Result};
use std::{
    os::unix::fs::DirBuilderExt,
    path::{Path, PathBuf},
};

use rxsteer_tune::{
    apply,
    cpus::{nr_cpu_ids_under, online_cpus_under},
    lock::{HostLock, LockError},
    profile, revert,
    state::STATE_DIR,
    sysctl, Change, Plan, ProfileInput, StateFile,
};

use rxsteer_records::{Mode, Place};

/// This place, for a mode's needs: the running kernel, whether this process is in the root
/// network namespace (where global sysctls are written), and what else here uses the flow
/// dissector (none where `accept_dissector_reach`: the user took that on).
pub fn place(accept_dissector_reach: bool) -> Result<Place> {
    Ok(Place {
        kernel: rxsteer_dataplane::kernel_version()?,
        root_netns: sysctl::in_root_netns()?,
        backlog_threads: rxsteer_dataplane::procfs::backlog_threads(),
        dissector_users: match accept_dissector_reach {
            true => Vec::new(),
            false => crate::dissector_reach::users()?,
        },
    })
}

/// Refuses `mode`, as `flag` gave it, in one line where this place lacks what it needs.
pub fn refuse_unmet(mode: Mode, flag: &str, accept_dissector_reach: bool) -> Result<()> {
    // Only a mode that needs to be the sole dissector asks who else uses one.
    let needs_sole = mode
        .steering()
        .needs
        .contains(&rxsteer_records::Need::SoleDissector);
    let accept = accept_dissector_reach || !needs_sole;
    match mode.refused_at(&place(accept)?) {
        Some(why) => bail!("{flag} {mode}: {why}"),
        None => Ok(()),
    }
}

/// This network namespace's kept tuning (`tune apply`, the installed unit).
pub fn state_path() -> Result<PathBuf> {
    Ok(StateFile::path_in(
        Path::new(STATE_DIR),
        sysctl::netns_inode("self")?,
    ))
}

/// This network namespace's session layer: a session's own tuning, over the kept tuning.
pub fn session_path() -> Result<PathBuf> {
    Ok(StateFile::session_path_in(
        Path::new(STATE_DIR),
        sysctl::netns_inode("self")?,
    ))
}

/// Takes this network namespace's tuning lock for `command` (the words a refused session
/// names it by), or refuses in one line naming the session that holds it. Every command that
/// changes tuning holds it from before its first look at the state files to after its revert.
pub fn lock(command: &str) -> Result<HostLock> {
    let path = StateFile::lock_path_in(Path::new(STATE_DIR), sysctl::netns_inode("self")?);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(STATE_DIR)
        .with_context(|| format!("creating {STATE_DIR}"))?;
    match HostLock::take(&path, command) {
        Ok(lock) => Ok(lock),
        Err(LockError::Held(holder, _)) => bail!(
            "{holder} is changing this network namespace's tuning; one session at a time: \
             wait for it or stop it"
        ),
        Err(e) => Err(e.into()),
    }
}

/// The profile input for `iface`; `cpus` is the RPS/XPS allowlist (default: online CPUs);
/// `levers` the NIC's and CPUs' own levers the command line asks for.
pub fn profile_input(
    iface: &str,
    cpus: Option<&[u32]>,
    levers: rxsteer_tune::levers::Asked,
) -> Result<ProfileInput> {
    let root = rxsteer_tune::tune_root();
    let online = online_cpus_under(&root)?;
    let cpus = cpus.map_or_else(|| online.clone(), <[u32]>::to_vec);
    if let Some(c) = cpus.iter().find(|c| !online.contains(c)) {
        bail!(
            "CPU {c} in --cpus is not online on this machine (online: {})",
            rxsteer_tune::cpus::format_cpu_list(&online)
        );
    }
    Ok(ProfileInput {
        iface: iface.to_string(),
        cpus,
        nr_cpu_ids: nr_cpu_ids_under(&root)?,
        root_netns: sysctl::in_root_netns()?,
        root,
        levers,
    })
}

/// The levers asked, with the interrupt's CPU filled in where `mode` moves the interrupt and
/// `--irq-cpu` named none: the highest-capacity online CPU (nobody is known to be busy here,
/// unlike in a comparison), said in one line with why.
pub fn with_irq_pick(
    mode: Mode,
    iface: &str,
    mut asked: rxsteer_tune::levers::Asked,
) -> Result<rxsteer_tune::levers::Asked> {
    if let (Some(tuning), None) = (mode.steering().tuning, &asked.irq_cpus) {
        let online = rxsteer_tune::cpus::online_cpus()?;
        let root = std::path::Path::new("/");
        if let Some((cpu, why)) = rxsteer_tune::levers::unnamed_irq_cpu(&tuning, root, &online) {
            eprintln!(
                "rxsteer: {mode} moves {iface}'s interrupt to CPU {cpu} (--irq-cpu names \
                 another): {why}"
            );
            asked.irq_cpus = Some(vec![cpu]);
        }
    }
    Ok(asked)
}

/// Refuses to move an interrupt vector while irqbalance runs: it would move it back within
/// seconds, mid-run, and the comparison would measure its choice, not ours. One line that
/// says what to run instead.
pub fn refuse_irqbalance(settings: &[rxsteer_tune::profile::Setting]) -> Result<()> {
    let moved = rxsteer_tune::levers::moved_vectors(settings);
    if moved.is_empty() {
        return Ok(());
    }
    if let Some(pid) = rxsteer_tune::irq::irqbalance() {
        bail!("{}", rxsteer_tune::irq::irqbalance_refusal(pid, &moved));
    }
    Ok(())
}

/// How a command that changes tuning takes this namespace over: the lock (see [`lock`]), then
/// what a crashed session left put back, then a check for a live owner that holds no lock. The
/// lock is held for as long as the returned guard lives.
pub fn take_over(command: &str) -> Result<HostLock> {
    let held = lock(command)?;
    recover_crashed()?;
    check_not_owned()?;
    Ok(held)
}

/// Refuses to touch the host while another live rxsteer session owns this namespace's tuning:
/// one that holds no lock (an older rxsteer), found by its pid and start time.
pub fn check_not_owned() -> Result<()> {
    for path in [session_path()?, state_path()?] {
        if let Some(state) = StateFile::load(&path)? {
            if let Some(pid) = state.live_owner() {
                bail!(
                    "rxsteer (pid {pid}) is steering in this network namespace ({} on {}); stop it first",
                    state.profile, state.iface
                );
            }
        }
    }
    Ok(())
}

/// The kept tuning under this session, said in one line, if there is any: a session's tuning
/// stacks on it and puts it back when it ends.
pub fn say_kept_tuning(session: &str) -> Result<()> {
    if let Some(kept) = StateFile::load(&state_path()?)? {
        if kept.session_pid.is_none() {
            eprintln!(
                "rxsteer: {session}: the kept tuning ({} on {}, from `tune apply` or an installed \
                 unit) stays in place under this session and is what it returns to",
                kept.profile, kept.iface
            );
        }
    }
    Ok(())
}

/// Removes the state files of network namespaces that no longer exist (a lab or test
/// namespace deleted while a session in it was killed): nothing is left to restore there,
/// and the files would only block a check for leftovers. One line each; returns how many.
pub fn remove_orphaned_state() -> Result<usize> {
    let Ok(dir) = std::fs::read_dir(STATE_DIR) else {
        return Ok(0);
    };
    let live = live_netns_inodes();
    let mut removed = 0;
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(inode) = netns_of_lock_file(&name) {
            // Nothing to say: a lock holds no state. Removed only while nobody holds it.
            if !live.contains(&inode) {
                HostLock::remove_unheld(&entry.path())?;
            }
            continue;
        }
        let Some(inode) = netns_of_state_file(&name) else {
            continue;
        };
        if !live.contains(&inode) {
            std::fs::remove_file(entry.path())?;
            eprintln!(
                "rxsteer: removed {}: its network namespace (inode {inode}) no longer exists",
                entry.path().display()
            );
            removed += 1;
        }
    }
    Ok(removed)
}

/// The namespace inode in a state file's name (`tune-netns-<inode>.json`,
/// `clsact-netns-<inode>.json`).
fn netns_of_state_file(name: &str) -> Option<u64> {
    let rest = name.strip_suffix(".json")?;
    let (_, inode) = rest.rsplit_once("-netns-")?;
    inode.parse().ok()
}

/// The namespace inode in a lock file's name (`tune-netns-<inode>.lock`).
fn netns_of_lock_file(name: &str) -> Option<u64> {
    name.strip_prefix("tune-netns-")?
        .strip_suffix(".lock")?
        .parse()
        .ok()
}

/// Every network namespace alive now: those of running processes and the named ones
/// (`ip netns`, bind-mounted under /run/netns).
fn live_netns_inodes() -> std::collections::BTreeSet<u64> {
    use std::os::unix::fs::MetadataExt;
    let mut live = std::collections::BTreeSet::new();
    for dir in ["/proc", "/run/netns"] {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = if dir == "/proc" {
                e.path().join("ns/net")
            } else {
                e.path()
            };
            if let Ok(m) = std::fs::metadata(&path) {
                live.insert(m.ino());
            }
        }
    }
    live
}

/// Puts back what a session that died without reverting (SIGKILL, power loss) left: its
/// tuning and its clsact qdisc, and removes the state of namespaces that are gone. Returns
/// the tuning restored; says nothing when there was nothing to do. The session layer goes
/// first, so the kept tuning under it is what comes back; the kept file itself is reverted
/// only where a session of an older rxsteer (which had no layer of its own) crashed owning it.
pub fn recover_crashed() -> Result<Vec<Change>> {
    remove_orphaned_state()?;
    rxsteer_dataplane::clsact::recover_crashed()?;
    let mut restored = Vec::new();
    for path in [session_path()?, state_path()?] {
        match StateFile::load(&path)? {
            Some(state) if state.crashed() => {
                let back = revert(&path)?;
                let by = format!(
                    " left by rxsteer pid {} ({} on {}), which did not exit cleanly",
                    state.session_pid.unwrap_or_default(),
                    state.profile,
                    state.iface
                );
                // The count, and each value whose device went away, named.
                let said = changes_said("restored", &by, &back);
                let mut lines = said
                    .lines()
                    .filter(|l| !l.starts_with("  ") || l.contains("not restored,"));
                eprintln!(
                    "rxsteer: {}",
                    lines.next().unwrap_or_default().trim_end_matches(':')
                );
                for l in lines {
                    eprintln!("rxsteer: {}", l.trim());
                }
                restored.extend(back);
            }
            _ => {}
        }
    }
    Ok(restored)
}

/// A session's tuning: applied on creation, reverted when dropped (return, error, panic).
pub struct TuneGuard {
    path: PathBuf,
    active: bool,
    /// What it wrote: checked again before the revert, so that a value another tool changed
    /// mid-session (irqbalance moving the interrupt back) is said, not silently measured.
    written: Vec<Change>,
}

/// The written values that no longer hold, one line each (`eth0 IRQ 24's CPUs: set 3, now
/// 0-1`); a value that cannot be read now is left out (its device went away).
pub fn drifted(written: &[Change]) -> Vec<String> {
    written
        .iter()
        .filter_map(|c| {
            let now = c.knob.read(&c.path).ok()?;
            (!c.knob.same(&c.path, &now, &c.target)).then(|| {
                format!(
                    "{}: set {}, now {} (another tool changed it during the session)",
                    c.name,
                    c.target.trim(),
                    now.trim()
                )
            })
        })
        .collect()
}

impl TuneGuard {
    /// The values this session wrote, as it wrote them.
    pub fn written(&self) -> &[Change] {
        &self.written
    }

    /// Applies `profile_kind` as this session's layer (see [`session_path`]). The caller holds
    /// the namespace's [`lock`].
    pub fn apply(profile_kind: Mode, input: &ProfileInput) -> Result<(Self, Plan)> {
        let path = session_path()?;
        let settings = profile(profile_kind, input);
        refuse_irqbalance(&settings)?;
        let fresh = StateFile::new(
            sysctl::netns_inode("self")?,
            &input.iface,
            profile_kind.as_str(),
            true,
        );
        let mut guard = Self {
            path: path.clone(),
            active: true,
            written: Vec::new(),
        };
        let plan = apply(&settings, &path, fresh, false)
            .with_context(|| format!("tuning profile {}", profile_kind.as_str()));
        match plan {
            Ok(plan) => {
                guard.written = plan.writes().cloned().collect();
                Ok((guard, plan))
            }
            Err(e) => {
                // The failed apply put back its own writes; the guard drops the state file.
                drop(guard);
                Err(e)
            }
        }
    }

    /// Reverts now and reports what changed back.
    pub fn revert(mut self) -> Result<Vec<Change>> {
        self.active = false;
        self.say_drift();
        Ok(revert(&self.path)?)
    }

    fn say_drift(&self) {
        for line in drifted(&self.written) {
            eprintln!("rxsteer: drift: {line}");
        }
    }
}

impl Drop for TuneGuard {
    fn drop(&mut self) {
        if self.active {
            self.say_drift();
            if let Err(e) = revert(&self.path) {
                eprintln!("rxsteer: could not revert tuning: {e:#} (run `rxsteer restore`)");
            }
        }
    }
}

/// Values changed or to be changed, as `tune apply`, `restore` and install's dry run say
/// them: `"{before} N value(s){after}"`, then (`:`) one line per change.
/// A revert's entry whose device or vector went away is not counted: it is named on a line of
/// its own.
pub fn changes_said(before: &str, after: &str, changes: &[Change]) -> String {
    let (gone, written): (Vec<Change>, Vec<Change>) =
        changes.iter().cloned().partition(|c| c.skipped.is_some());
    let mut s = format!("{before} {} value(s){after}", written.len());
    if !written.is_empty() {
        s.push_str(":\n");
        s.push_str(&describe(&written));
    }
    for c in &gone {
        s.push_str(&format!(
            "\n  {}: not restored, {}",
            c.name,
            c.skipped.as_deref().unwrap_or_default()
        ));
    }
    s
}

/// What `plan` writes, in [`changes_said`]'s words.
pub fn writes_said(before: &str, after: &str, plan: &rxsteer_tune::Plan) -> String {
    let writes: Vec<Change> = plan.writes().cloned().collect();
    changes_said(before, after, &writes)
}

/// One line per change: `name: current -> target` (an empty value, such as no NAPI kthread
/// yet, as "(none)").
fn describe(changes: &[Change]) -> String {
    let shown = |v: &str| match v.trim() {
        "" => "(none)".to_string(),
        v => v.to_string(),
    };
    changes
        .iter()
        .map(|c| {
            format!(
                "  {}: {} -> {}",
                c.name,
                shown(&c.current),
                shown(&c.target)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    #[test]
    fn state_files_name_their_namespace() {
        assert_eq!(
            super::netns_of_state_file("tune-netns-4026532.json"),
            Some(4026532)
        );
        assert_eq!(super::netns_of_state_file("clsact-netns-12.json"), Some(12));
        assert_eq!(super::netns_of_state_file("tune-netns-x.json"), None);
        assert_eq!(super::netns_of_state_file("other.txt"), None);
        assert_eq!(
            super::netns_of_state_file("session-netns-77.json"),
            Some(77)
        );
        assert_eq!(super::netns_of_lock_file("tune-netns-5.lock"), Some(5));
        assert_eq!(super::netns_of_lock_file("tune-netns-5.json"), None);
        // This process's namespace is alive.
        let me = rxsteer_tune::sysctl::netns_inode("self").unwrap();
        assert!(super::live_netns_inodes().contains(&me));
    }
}
