//! `cargo xtask`: prerequisites, builds and tests for rxsteer.
mod bench;
mod cmd;
mod cross;
mod dist;
mod ensure;
mod fuzz;
mod leftovers;
mod vm;

use anyhow::Result;
use clap::{Parser, Subcommand};
use ensure::{Paths, EBPF_TOOLCHAIN};

#[derive(Parser)]
#[command(about = "rxsteer build, test and run tasks")]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Install what the build and tests need (Debian packages, rust-src, bpf-linker, mounts).
    Ensure,
    /// Build the eBPF object (after `ensure`).
    BuildEbpf,
    /// Build the eBPF object and the workspace (release); with --target, rxsteer and rxload
    /// cross-built for that target (aarch64-unknown-linux-gnu for GB10).
    Build {
        #[arg(long)]
        target: Option<String>,
    },
    /// Build everything and run the whole test suite (privileged tests need root).
    Test {
        /// Passed to `cargo test` after `--` (a test name filter, --nocapture, ...).
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// rustfmt check and clippy with warnings denied, on the workspace and the eBPF crate.
    Lint,
    /// Run the cargo-fuzz targets (installs cargo-fuzz; nightly), bounded in time or runs.
    Fuzz(fuzz::FuzzArgs),
    /// Build the release binaries and write their man pages and bash, zsh and fish
    /// completions into target/dist (`--install`: under /usr/local, or --prefix).
    Dist(dist::DistArgs),
    /// Boot QEMU guests over Debian's kernels (x86_64, aarch64; e1000, e1000e, virtio-net)
    /// and run rxsteer's checks inside each (root; TCG where KVM does not work).
    Vm(vm::VmArgs),
    /// Run a benchmark and store its raw output under results/ (xdp needs root).
    Bench {
        #[arg(value_enum, default_value = "all")]
        which: Which,
    },
    /// The main job: build, then compare every steering mode against untuned for HTTP and ZAP
    /// (`rxsteer compare`): in the embedded veth lab, or on a real NIC with --iface. Other
    /// arguments go to it (e.g. --steer cpumap -d 5s --reps 3 --no-tui). Needs root.
    Run {
        /// A real NIC instead of the lab (the load: --loader local|external).
        #[arg(long)]
        iface: Option<String>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Which {
    /// ns/packet of the XDP programs (BPF_PROG_TEST_RUN; root).
    Xdp,
    /// What the kernel's BPF run-time statistics add per program run, and what they count
    /// for an empty program (BPF_PROG_TEST_RUN; root).
    Stats,
    /// The rpc record: native ZAP vs serde_json, simd-json, sonic-rs.
    Serde,
    /// The servers' allocations per request in steady state (counting allocator).
    Allocs,
    /// /echo 64 KiB: ZAP vs HTTP, vectored write vs copying the body.
    Echo,
    /// The seed paper's workload table: wire bytes, allocations, ns per round trip per arm.
    Workloads,
    /// GET /health: rxsteer serve vs nginx, both driven by wrk (installs nginx and wrk).
    Nginx,
    /// ZAP vs HTTP with rxload, and rxload vs wrk (installs wrk).
    Loadgen,
    /// Good traffic under a hostile barrage (20 s): success, p99 ratio, peak RSS.
    Barrage,
    /// What observing costs: untuned with the receive tracepoints and with the XDP observer
    /// in drv and skb mode, against untuned with no BPF, on /health and a 64 KiB upload
    /// (7 repetitions each, in the lab; root).
    Observer,
    /// What the default observer costs on every load a user runs: HTTP and ZAP, /health,
    /// /rpc and a 64 KiB upload, epoll and io_uring server, against untuned with no BPF, with
    /// each program's cost from the kernel's statistics (7 repetitions each, in the lab; root).
    ObserverMatrix,
    /// 60 s at full load on both transports: errors, RSS growth, descriptors.
    Soak,
    /// What `--metrics` costs the process that serves it: its endpoint's threads idle and
    /// per scrape, and the whole process with and without it (30-s windows, in the lab; root).
    Metrics,
    All,
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("xtask: {e:#}");
        // A flag's value refused (2, as clap's own refusals), a signal (130, as a shell
        // reports Ctrl-C), else a failure (1).
        let code = if e.is::<cmd::BadValue>() {
            2
        } else if e.is::<vm::interrupt::Interrupted>() {
            130
        } else {
            1
        };
        std::process::exit(code);
    }
}

fn real_main() -> Result<()> {
    let cli = Cli::parse();
    let paths = Paths::new();
    match cli.task {
        Task::Ensure => ensure::ensure(&paths),
        Task::BuildEbpf => build_ebpf(&paths),
        Task::Build { target: None } => {
            build_ebpf(&paths)?;
            cmd::run(
                "build workspace",
                cmd::cargo(None)
                    .args(["build", "--release", "--workspace"])
                    .current_dir(&paths.root),
            )
        }
        Task::Build {
            target: Some(target),
        } => {
            build_ebpf(&paths)?;
            cross::build(&paths, &target).map(|_| ())
        }
        Task::Test { args } => test(&paths, &args),
        Task::Run { iface, args } => {
            build_ebpf(&paths)?;
            build_rxsteer(&paths)?;
            cmd::run(
                "rxsteer compare",
                std::process::Command::new(paths.root.join("target/release/rxsteer"))
                    .arg("compare")
                    .args(iface.iter().flat_map(|i| ["--iface", i.as_str()]))
                    .args(args)
                    .current_dir(&paths.root),
            )
        }
        Task::Bench { which } => bench(&paths, which),
        Task::Fuzz(args) => fuzz::run(&paths, &args),
        Task::Lint => lint(&paths),
        Task::Vm(args) => vm::run(&paths, &args),
        Task::Dist(args) => {
            build_ebpf(&paths)?;
            build_rxsteer(&paths)?;
            dist::run(&paths, &args)
        }
    }
}

/// `cargo xtask test`: every test, the ones a plain `cargo test` ignores too, then a check
/// that nothing was left on the machine.
fn test(paths: &Paths, args: &[String]) -> Result<()> {
    build_ebpf(paths)?;
    if !cmd::is_root() {
        eprintln!(
            "xtask test: not root: the tests marked `needs root` run and will fail \
             (a plain `cargo test` skips them and says so)"
        );
    }
    ensure::packages_for("test", &ensure::TEST_PACKAGES)?;
    // The aarch64 binaries, for the test that runs them under qemu-user.
    let aarch64 = cross::build(paths, cross::AARCH64)?;
    // The tests a plain `cargo test` ignores (root, the aarch64 build) run here too; a
    // missing prerequisite is then a failure, never a silent pass.
    let tested = cmd::run_tests(
        cmd::cargo(None)
            // Every test binary runs even after a failure: CI shows all that failed.
            .args(["test", "--workspace", "--no-fail-fast", "--"])
            .arg("--include-ignored")
            .args(args)
            .env("RXSTEER_AARCH64_BIN", aarch64)
            .current_dir(&paths.root),
    );
    // Even when tests fail: say what they left on the machine.
    let clean = leftovers::check();
    tested.and(clean)
}

/// `cargo xtask bench [WHICH]`: each bench's raw output stored under results/.
fn bench(paths: &Paths, which: Which) -> Result<()> {
    build_ebpf(paths)?;
    let wants = |w: Which| which == w || which == Which::All;
    // The benches that need nothing but the eBPF object, in the order they run.
    let plain = [
        (Which::Xdp, &bench::XDP),
        (Which::Stats, &bench::STATS),
        (Which::Serde, &bench::SERDE),
        (Which::Allocs, &bench::ALLOCS),
        (Which::Echo, &bench::ECHO),
        (Which::Workloads, &bench::WORKLOADS),
        (Which::Metrics, &bench::METRICS),
    ];
    for (w, b) in plain {
        if wants(w) {
            bench::run(paths, b)?;
        }
    }
    if [Which::Loadgen, Which::Barrage, Which::Soak]
        .into_iter()
        .any(wants)
    {
        // These drive the server with rxload, another package: build it beside.
        cmd::run(
            "build rxload",
            cmd::cargo(None)
                .args(["build", "--release", "-p", "rxload"])
                .current_dir(&paths.root),
        )?;
        std::env::set_var("RXLOAD", paths.root.join("target/release/rxload"));
    }
    if wants(Which::Loadgen) {
        // rxload and wrk are compared against our server and against nginx.
        ensure::packages_for("bench loadgen", &[("wrk", "wrk"), ("nginx", "nginx")])?;
        bench::run(paths, &bench::LOADGEN)?;
    }
    if wants(Which::Barrage) {
        bench::run(paths, &bench::BARRAGE)?;
    }
    if wants(Which::Soak) {
        bench::run(paths, &bench::SOAK)?;
    }
    if wants(Which::Observer) {
        build_rxsteer(paths)?;
        bench::observer(paths)?;
    }
    if wants(Which::ObserverMatrix) {
        build_rxsteer(paths)?;
        bench::observer_matrix(paths)?;
    }
    if wants(Which::Nginx) {
        ensure::packages_for(
            "bench nginx",
            &[("nginx", "nginx"), ("wrk", "wrk"), ("perf", "linux-perf")],
        )?;
        bench::run(paths, &bench::NGINX)?;
    }
    Ok(())
}

/// `cargo xtask lint`: rustfmt and clippy, the workspace and the eBPF crate.
fn lint(paths: &Paths) -> Result<()> {
    // No eBPF build and no system packages: rustfmt and clippy need only the
    // toolchains (userspace embeds an empty placeholder when the object is missing).
    ensure::rust_src_only()?;
    cmd::run(
        "lint (rustfmt)",
        cmd::cargo(None)
            .args(["fmt", "--all", "--check"])
            .current_dir(&paths.root),
    )?;
    cmd::run(
        "lint (rustfmt, ebpf)",
        cmd::cargo(None)
            .args(["fmt", "--all", "--check"])
            .current_dir(paths.root.join("ebpf")),
    )?;
    cmd::run(
        "lint (clippy)",
        cmd::cargo(None)
            .args([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ])
            .current_dir(&paths.root),
    )?;
    cmd::run(
        "lint (clippy, ebpf)",
        ebpf_cargo(paths, "clippy").args(["--", "-D", "warnings"]),
    )
}

// The one definition of the eBPF build's flags, shared with dataplane/build.rs.
include!("../../dataplane/ebpf_build_args.rs");

/// `cargo +nightly <sub>` for the eBPF crate, with bpf-linker on PATH.
fn ebpf_cargo(paths: &Paths, sub: &str) -> std::process::Command {
    let mut c = cmd::cargo(Some(EBPF_TOOLCHAIN));
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![paths.bpf_linker_bin()];
    dirs.extend(std::env::split_paths(&path));
    c.arg(sub)
        .args(EBPF_BUILD_ARGS)
        .arg("--target-dir")
        .arg(paths.root.join("target/ebpf"))
        .env("PATH", std::env::join_paths(dirs).expect("PATH"))
        .current_dir(paths.root.join("ebpf"));
    c
}

/// rxsteer and rxload in release, as the main job and the observer bench run them.
fn build_rxsteer(paths: &Paths) -> Result<()> {
    cmd::run(
        "build rxsteer",
        cmd::cargo(None)
            .args(["build", "--release", "-p", "rxsteer", "-p", "rxload"])
            .current_dir(&paths.root),
    )
}

fn build_ebpf(paths: &Paths) -> Result<()> {
    ensure::ensure(paths)?;
    cmd::run("build eBPF", &mut ebpf_cargo(paths, "build"))
}
