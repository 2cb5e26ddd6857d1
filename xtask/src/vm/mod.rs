//! `cargo xtask vm`: the project's checks inside QEMU guests over Debian's kernels, on x86_64
//! and aarch64, with NICs that have native XDP (virtio-net) and NICs that have none and a real
//! interrupt (e1000, e1000e: the stand-ins for the GB10's r8169, which QEMU does not emulate).
//! Everything comes from Debian's packages (kernels, busybox, iproute2, ethtool, qemu) and an
//! initramfs the project writes; see aya's `xtask integration-test vm` for the model.
//! Timing figures from a TCG guest are not performance figures: none are taken here.
mod apt;
mod initramfs;
pub mod interrupt;
mod judge;
mod kernel;
mod qemu;
mod suites;

use anyhow::{bail, Context, Result};
use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use crate::{cmd, ensure::Paths};
use judge::Verdict;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Arch {
    #[value(name = "x86_64")]
    X86_64,
    Aarch64,
}

impl Arch {
    pub fn debian(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
        }
    }

    pub fn rust(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Nic {
    /// One queue, one interrupt driving one NAPI for RX and TX (as r8169); no native XDP.
    E1000,
    /// One queue with separate RX and TX vectors; no native XDP.
    E1000e,
    /// virtio-net: native XDP.
    Virtio,
}

impl Nic {
    fn qemu_device(self) -> &'static str {
        match self {
            Nic::E1000 => "e1000",
            Nic::E1000e => "e1000e",
            Nic::Virtio => "virtio-net-pci",
        }
    }

    /// The Linux driver that binds it.
    pub fn driver(self) -> &'static str {
        match self {
            Nic::E1000 => "e1000",
            Nic::E1000e => "e1000e",
            Nic::Virtio => "virtio_net",
        }
    }

    pub fn native_xdp(self) -> bool {
        self == Nic::Virtio
    }

    fn modules(self) -> &'static str {
        match self {
            Nic::E1000 => "e1000",
            Nic::E1000e => "e1000e",
            Nic::Virtio => "virtio_pci virtio_net",
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct VmArgs {
    /// A Debian kernel line (6.1, 6.12, 6.17, ...) or `newest`.
    #[arg(long, default_value = "6.1")]
    pub kernel: String,
    #[arg(long, value_enum, default_value = "x86_64")]
    pub arch: Arch,
    #[arg(long, value_enum, default_value = "e1000")]
    pub nic: Nic,
    /// vCPUs of the guest (2 to 64).
    #[arg(long, default_value = "2", value_parser = clap::value_parser!(u32).range(2..=64))]
    pub cpus: u32,
    /// The whole matrix: x86_64 6.1, 6.12, 6.17 and the newest kernel, aarch64 6.12 and
    /// 6.17, each with e1000, e1000e and virtio-net, and one aarch64 guest with 20 vCPUs.
    #[arg(long)]
    pub all: bool,
    /// List the kernel lines Debian has for each architecture, and stop.
    #[arg(long)]
    pub list: bool,
    /// The bound on one guest's run, boot to power-off (e.g. 600s).
    #[arg(long, default_value = "900s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Store the matrix page and every console under results/<date>-vm-matrix/.
    #[arg(long)]
    pub store: bool,
    /// Repetitions of the comparisons each guest runs on its NIC (1 to 15): 1 is a functional
    /// run; 7 or more give every figure a range (stored with --store).
    #[arg(long, default_value = "1", value_parser = clap::value_parser!(u32).range(1..=15))]
    pub compare_reps: u32,
    /// A word added to the guest kernel's command line, repeatable (e.g. thread_backlog_napi:
    /// the backlog, RPS's steered packets among it, in kthreads; Linux 6.10+). The row's name
    /// carries it, and the guest checks the kernel took it.
    #[arg(long = "boot-option", value_name = "WORD", value_parser = boot_word)]
    pub boot_options: Vec<String>,
}

/// A kernel command-line word: letters, digits and `_-.=,` only (it goes into QEMU's -append
/// and the row's folder name).
fn boot_word(s: &str) -> Result<String, String> {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.=,".contains(c))
    {
        Ok(s.to_string())
    } else {
        Err(format!(
            "{s:?} is not a kernel command-line word (letters, digits, _ - . = , only)"
        ))
    }
}

impl VmArgs {
    /// The flags of `--all`: the whole matrix, for the page's list of rows.
    fn every_row() -> Self {
        Self {
            kernel: String::new(),
            arch: Arch::X86_64,
            nic: Nic::E1000,
            cpus: 2,
            all: true,
            list: false,
            timeout: Duration::ZERO,
            store: false,
            compare_reps: 1,
            boot_options: Vec::new(),
        }
    }
}

/// One row of the matrix.
#[derive(Clone, Debug)]
struct Row {
    arch: Arch,
    kernel: String,
    nic: Nic,
    cpus: u32,
    /// Repetitions of the guest's comparisons.
    compare_reps: u32,
    /// Words added to the kernel's command line.
    boot_options: Vec<String>,
}

impl Row {
    fn name(&self) -> String {
        let mut name = format!(
            "{}-{}-{}-{}cpu",
            self.arch.rust(),
            self.kernel,
            self.nic.driver(),
            self.cpus
        );
        for o in &self.boot_options {
            name.push('-');
            name.push_str(o);
        }
        name
    }
}

fn matrix(args: &VmArgs) -> Vec<Row> {
    if !args.all {
        return vec![Row {
            arch: args.arch,
            kernel: args.kernel.clone(),
            nic: args.nic,
            cpus: args.cpus,
            compare_reps: args.compare_reps,
            boot_options: args.boot_options.clone(),
        }];
    }
    let mut rows = Vec::new();
    for (arch, kernels) in [
        (Arch::X86_64, &["6.1", "6.12", "6.17", "newest"][..]),
        (Arch::Aarch64, &["6.12", "6.17"][..]),
    ] {
        for k in kernels {
            for nic in [Nic::E1000, Nic::E1000e, Nic::Virtio] {
                rows.push(Row {
                    arch,
                    kernel: k.to_string(),
                    nic,
                    cpus: 2,
                    compare_reps: args.compare_reps,
                    boot_options: args.boot_options.clone(),
                });
            }
        }
    }
    rows.push(Row {
        arch: Arch::Aarch64,
        kernel: "6.12".into(),
        nic: Nic::Virtio,
        cpus: 20,
        compare_reps: args.compare_reps,
        boot_options: args.boot_options.clone(),
    });
    rows
}

/// The guest's userland, from Debian 12 (the host's release) in the guest's architecture:
/// busybox for the shell and the small tools, and what rxsteer runs (ip, tc, ethtool, taskset)
/// with the libraries they link.
const USERLAND: [&str; 15] = [
    "busybox-static",
    "libc6",
    "libgcc-s1",
    "iproute2",
    "ethtool",
    "util-linux",
    "libbpf1",
    "libelf1",
    "libmnl0",
    "libbsd0",
    "libmd0",
    "libcap2",
    "zlib1g",
    "libxtables12",
    "libzstd1",
];

struct Outcome {
    row: Row,
    kernel: String,
    accel: String,
    seconds: f64,
    checks: Vec<judge::Check>,
    error: Option<String>,
    config_notes: String,
    /// What the guest sent whole (the main job's reports and run.json), by name.
    files: std::collections::BTreeMap<String, String>,
}

/// What one guest's run gave: its checks judged, the kernel config's notes, its files.
struct Judged {
    checks: Vec<judge::Check>,
    config_notes: String,
    files: std::collections::BTreeMap<String, String>,
}

pub fn run(paths: &Paths, args: &VmArgs) -> Result<()> {
    crate::ensure::packages_for(
        "vm",
        &[
            ("qemu-system-x86_64", "qemu-system-x86"),
            ("qemu-system-aarch64", "qemu-system-arm"),
            ("dpkg-deb", "dpkg"),
            ("xz", "xz-utils"),
            ("zstd", "zstd"),
        ],
    )?;
    let work = paths.root.join("target/vm");
    let apt = apt::Apt::open(&work.join("apt"))?;
    if args.list {
        return list(&apt);
    }
    let rows = matrix(args);
    // The kernels first: a --kernel that does not exist is refused before anything builds.
    let mut kernels = Vec::new();
    for r in &rows {
        kernels.push(apt::pick(&apt.kernels(r.arch)?, &r.kernel)?);
    }
    // Read once now: a tree edited while a long matrix runs does not change what its rows
    // were built from.
    let commit = built_from(paths);
    // The binaries once per architecture, before any row: a row's time is its guest's.
    let mut built: Vec<(Arch, Built)> = Vec::new();
    for r in &rows {
        if !built.iter().any(|(a, _)| *a == r.arch) {
            built.push((r.arch, binaries(paths, r.arch, &work)?));
        }
    }
    remove_leftovers(&work);
    interrupt::catch();
    let mut outcomes = Vec::new();
    for (row, k) in rows.iter().zip(&kernels) {
        let bins = &built
            .iter()
            .find(|(a, _)| *a == row.arch)
            .expect("built above")
            .1;
        let started = Instant::now();
        let accel = qemu::accel(row.arch);
        eprintln!("xtask vm: {} (Debian {}), {}", row.name(), k.abi, accel.why);
        let (judged, error) = match one_row(&apt, &work, row, k, bins, &accel, args.timeout) {
            Ok(j) => (j, None),
            // Not a verdict on the row: nothing of it is stored, and no row runs after it.
            Err(e) if e.is::<interrupt::Interrupted>() => return Err(e),
            Err(e) => (
                Judged {
                    checks: Vec::new(),
                    config_notes: String::new(),
                    files: Default::default(),
                },
                Some(format!("{e:#}")),
            ),
        };
        let o = Outcome {
            row: row.clone(),
            kernel: k.abi.clone(),
            accel: accel.why,
            seconds: started.elapsed().as_secs_f64(),
            checks: judged.checks,
            error,
            config_notes: judged.config_notes,
            files: judged.files,
        };
        print_row(&o);
        outcomes.push(o);
        // Stored after every row: a matrix cut short keeps what it ran, and says what it did not.
        if args.store {
            store(
                paths,
                &work,
                outcomes.last().expect("pushed above"),
                &commit,
            )?;
        }
    }
    let failed = outcomes
        .iter()
        .filter(|o| o.error.is_some() || o.checks.iter().any(|c| c.verdict == Verdict::Fail))
        .count();
    if failed > 0 {
        bail!("{failed} of {} rows failed", outcomes.len());
    }
    println!("xtask vm: {} passed, 0 failed", outcomes.len());
    Ok(())
}

/// The commit the binaries are built from (`git describe --always --dirty`).
fn built_from(paths: &Paths) -> String {
    cmd::output(
        "vm (git describe)",
        Command::new("git")
            .args(["describe", "--always", "--dirty"])
            .current_dir(&paths.root),
    )
    .map(|c| c.trim().to_string())
    .unwrap_or_else(|_| "unknown".into())
}

/// Scratch folders of an earlier xtask that could not clean up (SIGKILL): `run-<pid>-<row>`
/// whose process is gone.
fn remove_leftovers(work: &Path) {
    let Ok(dir) = std::fs::read_dir(work) else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("run-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            eprintln!("xtask vm: removing {name}, left by an earlier run that was killed");
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Stores one row: its section (`<row>.md`, with the commit it was built from) and console
/// under results/<date>-vm-matrix/, then writes matrix.md again from every section there, in
/// the matrix's order. Rows run by separate invocations of the same day add up; a row run
/// again replaces its section.
fn store(paths: &Paths, work: &Path, o: &Outcome, commit: &str) -> Result<()> {
    let dir = store_dir(&paths.root.join("results"), &today(), &o.row.name());
    std::fs::create_dir_all(&dir)?;
    let host = cmd::output("vm (uname)", Command::new("uname").arg("-r")).unwrap_or_default();
    let section = format!(
        "{}Built from {}, on a host running {}, by `cargo xtask vm{}`.\n\n",
        page(std::slice::from_ref(o)),
        commit,
        host.trim(),
        std::env::args()
            .skip(2)
            .map(|a| format!(" {a}"))
            .collect::<String>()
    );
    let name = o.row.name();
    std::fs::write(dir.join(format!("{name}.md")), section)?;
    let log = work.join(format!("{name}.console.log"));
    if log.exists() {
        std::fs::copy(&log, dir.join(format!("{name}.console.log")))?;
    }
    // The main job's files as the guest wrote them: <row>/compare/report.md, ...
    for (file, text) in &o.files {
        if file.starts_with('/') || file.split('/').any(|c| c == ".." || c.is_empty()) {
            continue;
        }
        let path = dir.join(&name).join(file);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    std::fs::write(dir.join("matrix.md"), matrix_page(&dir)?)?;
    eprintln!("xtask vm: stored {}", dir.join("matrix.md").display());
    Ok(())
}

/// The matrix page of a folder: every row of the matrix in its order ("Not run." where the
/// folder has none), then the rows run outside it (a boot option, another vCPU count), by
/// name.
fn matrix_page(dir: &Path) -> Result<String> {
    let all: Vec<String> = matrix(&VmArgs::every_row())
        .iter()
        .map(|r| r.name())
        .collect();
    let mut text = page_head().to_string();
    for name in &all {
        match std::fs::read_to_string(dir.join(format!("{name}.md"))) {
            Ok(sec) => text.push_str(&sec),
            Err(_) => {
                let _ = writeln!(text, "## {name}\n\nNot run.\n");
            }
        }
    }
    let mut others: Vec<PathBuf> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "md")
                && p.file_stem().is_some_and(|n| {
                    n != "matrix" && n != "README" && !all.iter().any(|a| n == a.as_str())
                })
        })
        .collect();
    others.sort();
    for p in others {
        text.push_str(&std::fs::read_to_string(p)?);
    }
    Ok(text)
}

/// `--list`: the newest kernel of each line Debian has, per architecture.
/// Today's matrix folder, or the first `-2`, `-3`, ... that has not stored `row` yet: a stored
/// row is never overwritten.
fn store_dir(results: &Path, date: &str, row: &str) -> PathBuf {
    (1..)
        .map(|n| match n {
            1 => results.join(format!("{date}-vm-matrix")),
            n => results.join(format!("{date}-vm-matrix-{n}")),
        })
        .find(|d| !d.join(format!("{row}.md")).exists())
        .expect("some folder is free")
}

fn list(apt: &apt::Apt) -> Result<()> {
    for arch in [Arch::X86_64, Arch::Aarch64] {
        let lines = apt::newest_per_line(&apt.kernels(arch)?);
        let shown: Vec<String> = lines
            .iter()
            .map(|k| format!("{} ({})", k.line, k.abi))
            .collect();
        println!("{}: {}", arch.rust(), shown.join(", "));
    }
    Ok(())
}

fn today() -> String {
    cmd::output("date", Command::new("date").arg("+%Y-%m-%d"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "undated".into())
}

fn print_row(o: &Outcome) {
    println!(
        "== {} (Debian {}, {:.0} s, {})",
        o.row.name(),
        o.kernel,
        o.seconds,
        o.accel
    );
    if let Some(e) = &o.error {
        println!("   FAIL: {e}");
    }
    for c in &o.checks {
        println!("   {:<8} {:<42} {}", c.verdict.word(), c.name, c.detail);
    }
}

/// The matrix page: one row per kernel x arch x NIC with each check's verdict and the time.
fn page_head() -> &'static str {
    "# rxsteer in QEMU guests over Debian's kernels\n\n\
     Written by `cargo xtask vm` (`--all` for the whole matrix; docs/vm.md says what each \
     check means). Times are wall-clock of the whole row (initramfs, boot, checks, power-off) \
     under the accelerator named: under TCG they are emulation times, **not performance \
     figures**.\n\n"
}

fn page(outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        let _ = writeln!(
            s,
            "## {}\n\nDebian kernel {}, {} vCPUs, {:.0} s, {}{}\n",
            o.row.name(),
            o.kernel,
            o.row.cpus,
            o.seconds,
            o.accel,
            o.config_notes
        );
        if let Some(e) = &o.error {
            let _ = writeln!(s, "Row failed: `{}`\n", e.lines().next().unwrap_or(""));
        }
        if !o.checks.is_empty() {
            s.push_str("| check | verdict | what it rests on |\n|---|---|---|\n");
            for c in &o.checks {
                let _ = writeln!(
                    s,
                    "| {} | {} | {} |",
                    c.name,
                    c.verdict.word(),
                    c.detail.replace('|', "/")
                );
            }
            s.push('\n');
        }
    }
    s
}

/// Builds the guest for one row, boots it and judges what it gathered.
fn one_row(
    apt: &apt::Apt,
    work: &Path,
    row: &Row,
    k: &apt::Kernel,
    bins: &Built,
    accel: &qemu::Accel,
    bound: Duration,
) -> Result<Judged> {
    let unpacked = kernel::unpack(apt, k, &work.join("kernels"))?;
    let userland: Vec<String> = USERLAND
        .iter()
        .map(|p| format!("{p}:{}/bookworm", row.arch.debian()))
        .collect();
    let debs = apt.download(&userland)?;
    if interrupt::requested() {
        return Err(interrupt::Interrupted.into());
    }
    // The row's own scratch folder, removed whatever happens: no image is left behind.
    let scratch = Scratch(work.join(format!("run-{}-{}", std::process::id(), row.name())));
    std::fs::create_dir_all(&scratch.0)?;
    let initrd = scratch.0.join("initramfs.cpio");
    write_initramfs(&initrd, &scratch.0, &debs, &unpacked, bins, row)?;
    let log = work.join(format!("{}.console.log", row.name()));
    let console = qemu::Guest {
        arch: row.arch,
        nic: row.nic,
        cpus: row.cpus,
        memory_mb: 2048,
        vmlinuz: &unpacked.vmlinuz,
        initramfs: &initrd,
        accel,
        boot_options: &row.boot_options,
    }
    .run(bound, &log)?;
    let evidence = judge::evidence(&console);
    let notes = kernel_notes(&unpacked.config);
    let suites: Vec<String> = bins.suites.iter().map(|(n, _)| n.clone()).collect();
    Ok(Judged {
        checks: judge::judge(
            &evidence,
            row.nic,
            &row.boot_options,
            target_cpu(row),
            &suites,
        ),
        config_notes: notes,
        files: with_selftest(evidence.files, &evidence.json),
    })
}

/// The guest's selftest report (its JSON), stored beside the main job's files as
/// `<row>/selftest.json`, so the matrix keeps it as a file and not only in the console log.
fn with_selftest(
    mut files: std::collections::BTreeMap<String, String>,
    json: &std::collections::BTreeMap<String, Vec<serde_json::Value>>,
) -> std::collections::BTreeMap<String, String> {
    if let Some(report) = json.get("selftest").and_then(|v| v.first()) {
        if let Ok(text) = serde_json::to_string_pretty(report) {
            files.insert("selftest.json".into(), text + "\n");
        }
    }
    files
}

/// The CPU cpumap steers to: the last one, away from where the NIC's interrupt lands.
fn target_cpu(row: &Row) -> usize {
    row.cpus as usize - 1
}

/// What differs per kernel, read from its config.
fn kernel_notes(config: &str) -> String {
    let has = |k: &str| {
        config
            .lines()
            .any(|l| l == format!("{k}=y") || l == format!("{k}=m"))
    };
    let mut notes = Vec::new();
    if !has("CONFIG_DEBUG_INFO_BTF") {
        notes.push("no BTF");
    }
    if config.lines().any(|l| l == "CONFIG_NET_SCH_INGRESS=m") {
        notes.push("sch_ingress and cls_bpf are modules (loaded for clsact)");
    }
    if notes.is_empty() {
        String::new()
    } else {
        format!("; kernel config: {}", notes.join(", "))
    }
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a guest runs, built for its architecture: rxsteer, rxload and the test suites.
struct Built {
    rxsteer: PathBuf,
    rxload: PathBuf,
    suites: Vec<(String, PathBuf)>,
}

/// rxsteer, rxload and the BPF test suites for the guest's architecture, release builds
/// stripped of debug info (the initramfs is unpacked into the guest's memory).
fn binaries(paths: &Paths, arch: Arch, work: &Path) -> Result<Built> {
    crate::build_ebpf(paths)?;
    let (dir, strip) = match arch {
        Arch::X86_64 => {
            cmd::run(
                "vm (build rxsteer and rxload)",
                cmd::cargo(None)
                    .args(["build", "--release", "-p", "rxsteer", "-p", "rxload"])
                    .current_dir(&paths.root),
            )?;
            (paths.root.join("target/release"), "strip")
        }
        Arch::Aarch64 => (
            crate::cross::build(paths, crate::cross::AARCH64)?,
            "aarch64-linux-gnu-strip",
        ),
    };
    let out = work.join(format!("bin-{}", arch.rust()));
    std::fs::create_dir_all(&out)?;
    let mut bins = Vec::new();
    for b in ["rxsteer", "rxload"] {
        let dst = out.join(b);
        cmd::run(
            "vm (strip)",
            Command::new(strip)
                .arg("--strip-debug")
                .arg("-o")
                .arg(&dst)
                .arg(dir.join(b)),
        )?;
        bins.push(dst);
    }
    Ok(Built {
        rxsteer: bins[0].clone(),
        rxload: bins[1].clone(),
        suites: suites::build(paths, arch, &out.join("tests"))?,
    })
}

fn write_initramfs(
    path: &Path,
    scratch: &Path,
    debs: &[PathBuf],
    k: &kernel::Unpacked,
    bins: &Built,
    row: &Row,
) -> Result<()> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut c = initramfs::Cpio::new(file);
    for (i, deb) in debs.iter().enumerate() {
        let tree = scratch.join(format!("deb{i}"));
        cmd::run(
            "vm (dpkg-deb -x)",
            Command::new("dpkg-deb").arg("-x").arg(deb).arg(&tree),
        )?;
        c.tree(&tree)?;
    }
    // busybox-static puts its binary in usr/bin; the init script starts from /bin/busybox.
    c.symlink("bin/busybox", "/usr/bin/busybox")?;
    for (rel, plain) in &k.modules {
        c.host_file(&format!("lib/modules/{}/{rel}", k.release), plain)?;
    }
    c.host_file("rxsteer/rxsteer", &bins.rxsteer)?;
    c.host_file("rxsteer/rxload", &bins.rxload)?;
    for (name, path) in &bins.suites {
        c.host_file(&format!("rxsteer/tests/{name}"), path)?;
    }
    let env = format!(
        "VM_MODULES='{} {}'\nVM_TARGET_CPU={}\nVM_REQUESTS=300\nVM_TOP_INTERVALS=8\nVM_COMPARE_MEASURE=1s\nVM_COMPARE_REPS={}\n",
        row.nic.modules(),
        kernel::ALWAYS_LOADED.join(" "),
        target_cpu(row),
        row.compare_reps
    );
    c.file("rxsteer/vm.env", 0o644, env.as_bytes())?;
    c.file("init", 0o755, include_bytes!("guest.sh"))?;
    c.finish().context("writing the initramfs")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_row_is_never_overwritten() {
        let results = std::env::temp_dir().join(format!("rxsteer-store-{}", std::process::id()));
        let day = results.join("2026-12-04-vm-matrix");
        std::fs::create_dir_all(&day).unwrap();
        assert_eq!(store_dir(&results, "2026-12-04", "row-a"), day);
        std::fs::write(day.join("row-a.md"), "stored").unwrap();
        assert_eq!(
            store_dir(&results, "2026-12-04", "row-a"),
            results.join("2026-12-04-vm-matrix-2")
        );
        assert_eq!(store_dir(&results, "2026-12-04", "row-b"), day);
        std::fs::remove_dir_all(&results).unwrap();
    }

    /// A row run outside the matrix (a boot option) is on the page too, after the matrix.
    #[test]
    fn a_row_outside_the_matrix_is_on_the_page() {
        let dir = std::env::temp_dir().join(format!("rxsteer-page-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("x86_64-6.1-e1000-2cpu.md"), "## in the matrix\n").unwrap();
        std::fs::write(
            dir.join("x86_64-6.12-e1000-2cpu-thread_backlog_napi.md"),
            "## outside\n",
        )
        .unwrap();
        let page = matrix_page(&dir).unwrap();
        let (inside, outside) = (page.find("## in the matrix"), page.find("## outside"));
        assert!(inside.is_some() && outside > inside, "{page}");
        assert!(page.contains("Not run."), "the rows not run are named");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
