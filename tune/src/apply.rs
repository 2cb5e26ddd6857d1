//! Apply a profile (snapshot first, stop and roll back on the first failed write), revert
//! exactly, and show current / profile / snapshot side by side.
use std::path::{Path, PathBuf};

use crate::{
    knob::Knob,
    profile::Setting,
    state::{Entry, StateFile},
};

#[derive(Debug, thiserror::Error)]
// Each message names the I/O error itself, so the error is a field, not a `source`: a chain
// printed with `{:#}` would say it twice.
pub enum TuneError {
    #[error("reading {name} ({path}): {error}")]
    Read {
        name: String,
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("writing {value:?} to {name} ({path}) failed: {error}; the {reverted} value(s) already written were put back")]
    Write {
        name: String,
        path: PathBuf,
        value: String,
        error: std::io::Error,
        reverted: usize,
    },
    #[error("state file {path}: {error}")]
    State {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("revert could not restore {0}")]
    Revert(String),
}

/// One line of a plan: a setting with its current, wanted and snapshot values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub name: String,
    pub path: PathBuf,
    pub knob: Knob,
    pub current: String,
    pub target: String,
    pub snapshot: Option<String>,
    pub skipped: Option<String>,
}

impl Change {
    pub fn needs_write(&self) -> bool {
        self.skipped.is_none() && !self.knob.same(&self.path, &self.current, &self.target)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub changes: Vec<Change>,
}

impl Plan {
    pub fn writes(&self) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(|c| c.needs_write())
    }
}

/// The value exactly as read (newline included), so revert can restore it byte for byte;
/// comparisons ignore the difference.
fn read(knob: Knob, name: &str, path: &Path) -> Result<String, TuneError> {
    knob.read(path).map_err(|error| TuneError::Read {
        name: name.to_string(),
        path: path.to_path_buf(),
        error,
    })
}

/// What applying `settings` would change, given the snapshot (if any).
pub fn show(settings: &[Setting], state: Option<&StateFile>) -> Result<Plan, TuneError> {
    let mut changes = Vec::new();
    for s in settings {
        // A skipped setting is shown as it reads, if it reads at all.
        let current = if s.skipped.is_some() {
            s.knob.read(&s.path).unwrap_or_default()
        } else {
            read(s.knob, &s.name, &s.path)?
        };
        changes.push(Change {
            name: s.name.clone(),
            path: s.path.clone(),
            knob: s.knob,
            current,
            target: s.value.clone(),
            snapshot: state
                .and_then(|st| st.original_of(&s.path, s.knob))
                .map(str::to_string),
            skipped: s.skipped.clone(),
        });
    }
    Ok(Plan { changes })
}

/// Applies `settings`. Every original value is saved in the state file at `state_path` before
/// the first write; a state file left by an earlier apply keeps its (older, true) originals.
/// With `dry_run`, nothing is written. Applying twice writes nothing the second time.
pub fn apply(
    settings: &[Setting],
    state_path: &Path,
    fresh: StateFile,
    dry_run: bool,
) -> Result<Plan, TuneError> {
    let state_err = |error| TuneError::State {
        path: state_path.to_path_buf(),
        error,
    };
    let mut state = StateFile::load(state_path)
        .map_err(state_err)?
        .unwrap_or(fresh.clone());
    let mut plan = show(settings, Some(&state))?;
    if dry_run {
        return Ok(plan);
    }
    let mut recorded = false;
    for c in plan.changes.iter().filter(|c| c.skipped.is_none()) {
        if state.original_of(&c.path, c.knob).is_none() {
            state.entries.push(Entry {
                name: c.name.clone(),
                path: c.path.clone(),
                knob: c.knob,
                original: c.current.clone(),
            });
            recorded = true;
        }
    }
    if recorded || state.session_pid != fresh.session_pid || state.profile != fresh.profile {
        state.session_pid = fresh.session_pid;
        state.session_start = fresh.session_start;
        state.profile = fresh.profile.clone();
        state.save(state_path).map_err(state_err)?;
    }
    let mut written: Vec<usize> = Vec::new();
    for i in 0..plan.changes.len() {
        let c = &plan.changes[i];
        if !c.needs_write() {
            continue;
        }
        match c.knob.write(&c.path, &c.target) {
            Ok(()) => written.push(i),
            // A NIC lever the driver reads but will not take (virtio-net's coalescing without
            // the notification feature): skipped with its reason, and the run goes on.
            Err(error) if refused_by_driver(c.knob, &error) => {
                plan.changes[i].skipped = Some(format!(
                    "the driver refused the write ({error}): not applicable here"
                ));
            }
            Err(error) => {
                // Put back what this apply changed, newest first, then say which key failed.
                for w in written.iter().rev().map(|&w| &plan.changes[w]) {
                    let _ = w.knob.write(&w.path, &w.current);
                }
                return Err(TuneError::Write {
                    name: c.name.clone(),
                    path: c.path.clone(),
                    value: c.target.clone(),
                    error,
                    reverted: written.len(),
                });
            }
        }
    }
    Ok(plan)
}

/// Whether a failed write is a NIC lever the driver does not support (EOPNOTSUPP): a place's
/// limit, said and skipped, not a failure of the tuning.
fn refused_by_driver(knob: Knob, error: &std::io::Error) -> bool {
    matches!(knob, Knob::Ring | Knob::Coalesce | Knob::Offloads)
        && error.raw_os_error() == Some(libc::EOPNOTSUPP)
}

/// Writes every original value in the state file back, then removes the file. Returns what it
/// changed (entries whose value already matched are not written). A value that cannot be
/// restored is reported and the state file is kept, so a later revert can try again.
pub fn revert(state_path: &Path) -> Result<Vec<Change>, TuneError> {
    let state_err = |error| TuneError::State {
        path: state_path.to_path_buf(),
        error,
    };
    let Some(state) = StateFile::load(state_path).map_err(state_err)? else {
        return Ok(Vec::new());
    };
    let mut restored = Vec::new();
    let mut failed = Vec::new();
    for e in &state.entries {
        let current = match read(e.knob, &e.name, &e.path) {
            Ok(c) => c,
            // The device or vector went away (a removed lab veth, a driver reloaded): nothing
            // left to restore there, and said so by name.
            Err(TuneError::Read { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
                restored.push(Change {
                    name: e.name.clone(),
                    path: e.path.clone(),
                    knob: e.knob,
                    current: String::new(),
                    target: e.original.clone(),
                    snapshot: Some(e.original.clone()),
                    skipped: Some("it no longer exists (its device or vector went away)".into()),
                });
                continue;
            }
            Err(err) => {
                failed.push(format!("{}: {err}", e.name));
                continue;
            }
        };
        // Bytes, not meaning: revert promises the file reads back exactly as it was.
        if current == e.original {
            continue;
        }
        match e.knob.write(&e.path, &e.original) {
            Ok(()) => restored.push(Change {
                name: e.name.clone(),
                path: e.path.clone(),
                knob: e.knob,
                current,
                target: e.original.clone(),
                snapshot: Some(e.original.clone()),
                skipped: None,
            }),
            Err(err) => failed.push(format!("{} ({}): {err}", e.name, e.path.display())),
        }
    }
    if !failed.is_empty() {
        return Err(TuneError::Revert(failed.join("; ")));
    }
    std::fs::remove_file(state_path).map_err(state_err)?;
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpus::parse_cpumask;
    use crate::profile::{profile, ProfileInput};
    use rxsteer_records::Mode;
    use std::fs;

    /// A scratch tree with the files a 1-queue NIC and the sysctls have.
    fn fake_host(tag: &str) -> (PathBuf, ProfileInput) {
        let root = std::env::temp_dir().join(format!("rxsteer-tune-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let q = root.join("sys/class/net/eth9/queues");
        fs::create_dir_all(q.join("rx-0")).unwrap();
        fs::create_dir_all(q.join("tx-0")).unwrap();
        fs::write(q.join("rx-0/rps_cpus"), "00000\n").unwrap();
        fs::write(q.join("rx-0/rps_flow_cnt"), "0\n").unwrap();
        fs::write(q.join("tx-0/xps_cpus"), "00000\n").unwrap();
        let dev = root.join("sys/class/net/eth9");
        fs::write(dev.join("napi_defer_hard_irqs"), "0\n").unwrap();
        fs::write(dev.join("gro_flush_timeout"), "0\n").unwrap();
        for (name, _, _) in crate::sysctl::REFERENCE {
            let p = root.join(crate::sysctl::path(name).strip_prefix("/").unwrap());
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            let v = if name.ends_with("_rmem") {
                "4096\t131072\t6291456\n"
            } else {
                "7\n"
            };
            fs::write(p, v).unwrap();
        }
        let p = root.join("proc/sys/net/core/rps_sock_flow_entries");
        fs::write(p, "0\n").unwrap();
        let input = ProfileInput {
            iface: "eth9".into(),
            cpus: (0..20).collect(),
            nr_cpu_ids: 20,
            root_netns: true,
            root: root.clone(),
            levers: Default::default(),
        };
        (root, input)
    }

    fn snapshot_of(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut all = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    if !p.ends_with("state") {
                        stack.push(p);
                    }
                } else {
                    all.push((p.clone(), fs::read(&p).unwrap()));
                }
            }
        }
        all.sort();
        all
    }

    #[test]
    fn apply_twice_then_revert_restores_every_byte() {
        let (root, input) = fake_host("cycle");
        let before = snapshot_of(&root);
        let state = root.join("state/tune.json");
        let settings = profile(Mode::Rps, &input);
        let plan = apply(
            &settings,
            &state,
            StateFile::new(1, "eth9", "rps", false),
            false,
        )
        .unwrap();
        assert!(plan.writes().count() > 10);
        let rq = root.join("sys/class/net/eth9/queues/rx-0");
        assert_eq!(fs::read_to_string(rq.join("rps_cpus")).unwrap(), "fffff");
        assert_eq!(
            fs::read_to_string(rq.join("rps_flow_cnt")).unwrap(),
            "65536"
        );
        // A second apply finds nothing to write.
        let again = apply(
            &settings,
            &state,
            StateFile::new(1, "eth9", "rps", false),
            false,
        )
        .unwrap();
        assert_eq!(again.writes().count(), 0);
        // Switching profile keeps the first originals; revert restores them byte for byte.
        let cpumap = profile(Mode::Cpumap, &input);
        apply(
            &cpumap,
            &state,
            StateFile::new(1, "eth9", "cpumap", false),
            false,
        )
        .unwrap();
        assert_eq!(
            parse_cpumask(&fs::read_to_string(rq.join("rps_cpus")).unwrap()).unwrap(),
            Vec::<u32>::new()
        );
        let restored = revert(&state).unwrap();
        assert!(!restored.is_empty());
        assert_eq!(snapshot_of(&root), before);
        assert!(!state.exists(), "state file removed after a full revert");
        fs::remove_dir_all(&root).unwrap();
    }

    /// RFS alone: the flow tables set, nothing spread by RPS or XPS, every byte back on revert.
    #[test]
    fn rfs_sets_the_flow_tables_and_spreads_nothing() {
        let (root, input) = fake_host("rfs");
        let before = snapshot_of(&root);
        let state = root.join("state/tune.json");
        apply(
            &profile(Mode::Rfs, &input),
            &state,
            StateFile::new(1, "eth9", "rfs", false),
            false,
        )
        .unwrap();
        let q = root.join("sys/class/net/eth9/queues");
        let read = |p: PathBuf| fs::read_to_string(p).unwrap();
        assert_eq!(read(q.join("rx-0/rps_flow_cnt")), "65536");
        assert_eq!(
            read(root.join("proc/sys/net/core/rps_sock_flow_entries")),
            "1048576"
        );
        for f in ["rx-0/rps_cpus", "tx-0/xps_cpus"] {
            assert_eq!(
                parse_cpumask(&read(q.join(f))).unwrap(),
                Vec::<u32>::new(),
                "{f}"
            );
        }
        revert(&state).unwrap();
        assert_eq!(snapshot_of(&root), before);
        fs::remove_dir_all(&root).unwrap();
    }

    /// Only napi-thread touches `threaded` and the NAPI kthreads; on a device without the file
    /// (a kernel before 5.12) both are skipped, said, not failed.
    #[test]
    fn only_napi_thread_threads_napi_and_a_device_without_it_skips_both() {
        let (root, input) = fake_host("napi");
        let napi = |s: &&Setting| s.name.contains("threaded") || s.knob == Knob::NapiThreadCpus;
        for m in Mode::profiles().filter(|m| *m != Mode::NapiThread) {
            assert_eq!(profile(m, &input).iter().filter(napi).count(), 0, "{m}");
        }
        let settings = profile(Mode::NapiThread, &input);
        let ours: Vec<&Setting> = settings.iter().filter(napi).collect();
        assert_eq!(
            ours.iter()
                .map(|s| (s.knob, s.value.as_str()))
                .collect::<Vec<_>>(),
            [(Knob::File, "1"), (Knob::NapiThreadCpus, "0-19")],
            "threaded first, then the kthreads' CPUs"
        );
        assert!(ours
            .iter()
            .all(|s| s.skipped.as_deref() == Some("not present on this kernel or device")));
        fs::remove_dir_all(&root).unwrap();
    }

    /// busy-poll defers the device's interrupt; no other profile touches those two files or the
    /// NAPI instances' suspension, and revert puts them back byte for byte.
    #[test]
    fn busy_poll_defers_the_interrupt_and_only_it_does() {
        let (root, input) = fake_host("busy");
        let before = snapshot_of(&root);
        let dev = root.join("sys/class/net/eth9");
        let deferral = |s: &&Setting| {
            crate::profile::IRQ_DEFERRAL
                .iter()
                .any(|(f, _)| s.path == dev.join(f))
        };
        let suspension = |s: &&Setting| s.knob == Knob::NapiIrqSuspend;
        for m in Mode::profiles().filter(|m| *m != Mode::BusyPoll) {
            assert_eq!(profile(m, &input).iter().filter(deferral).count(), 0, "{m}");
            assert_eq!(
                profile(m, &input).iter().filter(suspension).count(),
                0,
                "{m}"
            );
        }
        // The per-NAPI timeout is netlink's: never sought in a scratch tree (a fake ifindex
        // would name a real device of this host).
        let settings = profile(Mode::BusyPoll, &input);
        let suspend: Vec<_> = settings.iter().filter(suspension).collect();
        assert_eq!(suspend.len(), 1);
        assert_eq!(suspend[0].value, "20000000");
        assert_eq!(
            suspend[0].skipped.as_deref(),
            Some("set over netlink: not in a scratch tree")
        );
        let state = root.join("state/tune.json");
        apply(
            &profile(Mode::BusyPoll, &input),
            &state,
            StateFile::new(1, "eth9", "busy-poll", false),
            false,
        )
        .unwrap();
        let read = |f: &str| fs::read_to_string(dev.join(f)).unwrap();
        assert_eq!(read("napi_defer_hard_irqs"), "2");
        assert_eq!(read("gro_flush_timeout"), "200000");
        revert(&state).unwrap();
        assert_eq!(snapshot_of(&root), before);
        fs::remove_dir_all(&root).unwrap();
    }

    /// irq-affinity writes the interrupt's CPUs and nothing else (no masks, no sysctls); any
    /// mode takes `--irq-cpu`; revert puts the vector back byte for byte. A device without an
    /// interrupt says so in one skipped line.
    #[test]
    fn irq_affinity_moves_only_the_interrupt_and_revert_puts_it_back() {
        let (root, mut input) = fake_host("irq");
        let dev = root.join("sys/class/net/eth9/device");
        fs::create_dir_all(&dev).unwrap();
        fs::write(dev.join("irq"), "11\n").unwrap();
        let irq = root.join("proc/irq/11");
        fs::create_dir_all(&irq).unwrap();
        fs::write(irq.join("smp_affinity_list"), "0-19\n").unwrap();
        let before = snapshot_of(&root);
        input.levers.irq_cpus = Some(vec![3]);
        let settings = profile(Mode::IrqAffinity, &input);
        let live: Vec<&Setting> = settings.iter().filter(|s| s.skipped.is_none()).collect();
        assert_eq!(live.len(), 1, "{settings:?}");
        assert_eq!(live[0].name, "eth9 IRQ 11's CPUs");
        assert_eq!(crate::levers::moved_vectors(&settings), [11]);
        let state = root.join("state/tune.json");
        let plan = apply(
            &settings,
            &state,
            StateFile::new(1, "eth9", "irq-affinity", false),
            false,
        )
        .unwrap();
        assert_eq!(plan.writes().count(), 1);
        assert_eq!(
            fs::read_to_string(irq.join("smp_affinity_list")).unwrap(),
            "3"
        );
        revert(&state).unwrap();
        assert_eq!(snapshot_of(&root), before);
        // A vector that vanishes mid-run (a driver reload): revert carries on and names it.
        apply(
            &settings,
            &state,
            StateFile::new(1, "eth9", "irq-affinity", false),
            false,
        )
        .unwrap();
        fs::remove_dir_all(&irq).unwrap();
        let back = revert(&state).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(
            back[0].skipped.as_deref(),
            Some("it no longer exists (its device or vector went away)")
        );
        assert!(!state.exists(), "nothing left to restore");
        fs::create_dir_all(&irq).unwrap();
        fs::write(irq.join("smp_affinity_list"), "0-19\n").unwrap();
        // RPS takes --irq-cpu too; without the flag it leaves the interrupt alone.
        let rps = profile(Mode::Rps, &input);
        assert_eq!(crate::levers::moved_vectors(&rps), [11]);
        input.levers.irq_cpus = None;
        assert!(crate::levers::moved_vectors(&profile(Mode::Rps, &input)).is_empty());
        // No interrupt of its own (a veth): one skipped line, nothing to write.
        fs::remove_file(dev.join("irq")).unwrap();
        input.levers.irq_cpus = Some(vec![3]);
        let veth = profile(Mode::IrqAffinity, &input);
        assert_eq!(veth.len(), 1);
        assert!(
            veth[0]
                .skipped
                .as_deref()
                .unwrap()
                .contains("no interrupt of its own"),
            "{veth:?}"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    /// The reference sets every CPU's governor to performance where cpufreq offers it, says
    /// why where it does not, and asks the rings and offloads of the driver (never in a
    /// scratch tree); revert puts the governor back.
    #[test]
    fn the_reference_sets_the_governor_and_says_where_it_cannot() {
        let (root, input) = fake_host("gov");
        let cpufreq = |c: u32| root.join(format!("sys/devices/system/cpu/cpu{c}/cpufreq"));
        fs::create_dir_all(cpufreq(0)).unwrap();
        fs::write(cpufreq(0).join("scaling_governor"), "schedutil\n").unwrap();
        fs::write(
            cpufreq(0).join("scaling_available_governors"),
            "performance schedutil\n",
        )
        .unwrap();
        fs::create_dir_all(cpufreq(1)).unwrap();
        fs::write(cpufreq(1).join("scaling_governor"), "userspace\n").unwrap();
        fs::write(
            cpufreq(1).join("scaling_available_governors"),
            "userspace\n",
        )
        .unwrap();
        let before = snapshot_of(&root);
        let settings = profile(Mode::Reference, &input);
        let skip = |name: &str| {
            settings
                .iter()
                .find(|s| s.name == name)
                .unwrap_or_else(|| panic!("{name}: {settings:?}"))
                .skipped
                .clone()
        };
        assert_eq!(skip("cpu0 governor"), None);
        assert!(skip("cpu1 governor")
            .unwrap()
            .contains("no performance governor"));
        assert!(skip("cpu2 governor").unwrap().contains("no cpufreq"));
        for nic in ["eth9 rings", "eth9 offloads"] {
            assert_eq!(
                skip(nic).as_deref(),
                Some("set over the ethtool ioctl: not in a scratch tree")
            );
        }
        // RPS as the rps mode sets it, underneath.
        assert!(settings.iter().any(|s| s.name == "eth9 rx-0/rps_cpus"));
        let state = root.join("state/tune.json");
        apply(
            &settings,
            &state,
            StateFile::new(1, "eth9", "reference", false),
            false,
        )
        .unwrap();
        assert_eq!(
            fs::read_to_string(cpufreq(0).join("scaling_governor")).unwrap(),
            "performance"
        );
        revert(&state).unwrap();
        assert_eq!(snapshot_of(&root), before);
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn dry_run_writes_nothing() {
        let (root, input) = fake_host("dry");
        let before = snapshot_of(&root);
        let state = root.join("state/tune.json");
        let plan = apply(
            &profile(Mode::Rps, &input),
            &state,
            StateFile::new(1, "eth9", "rps", false),
            true,
        )
        .unwrap();
        assert!(plan.writes().count() > 0);
        assert_eq!(snapshot_of(&root), before);
        assert!(!state.exists());
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_failed_write_rolls_back_and_names_the_key() {
        let (root, input) = fake_host("fail");
        let before = snapshot_of(&root);
        // A file that reads but refuses writes, even from root: /proc/version.
        let bad = root.join("proc/sys/net/core/somaxconn");
        fs::remove_file(&bad).unwrap();
        std::os::unix::fs::symlink("/proc/version", &bad).unwrap();
        let state = root.join("state/tune.json");
        let settings = profile(Mode::Rps, &input);
        let err = apply(
            &settings,
            &state,
            StateFile::new(1, "eth9", "rps", false),
            false,
        )
        .unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("net.core.somaxconn"), "{msg}");
        assert!(msg.contains("put back"), "{msg}");
        fs::remove_file(&bad).unwrap();
        fs::write(&bad, "7\n").unwrap();
        assert_eq!(
            snapshot_of(&root),
            before,
            "everything written before the failure is back"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn globals_are_not_written_inside_a_namespace() {
        let (root, mut input) = fake_host("ns");
        input.root_netns = false;
        let settings = profile(Mode::Rps, &input);
        let backlog = settings
            .iter()
            .find(|s| s.name == "net.core.netdev_max_backlog")
            .unwrap();
        assert!(backlog.skipped.as_deref().unwrap().contains("global"));
        let somaxconn = settings
            .iter()
            .find(|s| s.name == "net.core.somaxconn")
            .unwrap();
        assert_eq!(somaxconn.skipped, None);
        let state = root.join("state/tune.json");
        apply(
            &settings,
            &state,
            StateFile::new(1, "eth9", "rps", false),
            false,
        )
        .unwrap();
        let p = root.join("proc/sys/net/core/netdev_max_backlog");
        assert_eq!(fs::read_to_string(p).unwrap(), "7\n");
        revert(&state).unwrap();
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn values_compare_by_meaning() {
        let same_value = |p: &Path, a: &str, b: &str| Knob::File.same(p, a, b);
        assert!(same_value(
            Path::new("/x/tcp_rmem"),
            "4096\t131072\t6291456",
            "4096 131072 6291456"
        ));
        assert!(same_value(
            Path::new("/x/rps_cpus"),
            "00000000,00000003",
            "3"
        ));
        assert!(!same_value(Path::new("/x/rps_cpus"), "1", "3"));
        assert!(!same_value(Path::new("/x/somaxconn"), "4096", "65535"));
    }
}

#[cfg(test)]
mod refused {
    use super::*;

    #[test]
    fn only_a_nic_lever_the_driver_does_not_support_is_skipped() {
        let eopnotsupp = std::io::Error::from_raw_os_error(libc::EOPNOTSUPP);
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        for k in [Knob::Ring, Knob::Coalesce, Knob::Offloads] {
            assert!(refused_by_driver(k, &eopnotsupp), "{k:?}");
            assert!(!refused_by_driver(k, &denied), "{k:?}");
        }
        assert!(!refused_by_driver(Knob::File, &eopnotsupp));
    }
}
