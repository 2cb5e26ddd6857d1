use clap::{Parser, Subcommand};
use rxsteer::{
    attach_cmd::{self, AttachArgs},
    lab_cmd::{self, LabArgs},
    top::{self, TopArgs},
    tune_cmd::{self, TuneCmd},
};

#[derive(Parser)]
#[command(
    name = "rxsteer",
    version,
    about = "Where receive work lands on each CPU, and which steering gets the most requests through"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Attach the observe programs to an interface and show, per CPU and over time, where the
    /// receive work runs: NET_RX softirq time, receive-kthread time, packets.
    Top(TopArgs),
    /// Build the embedded veth lab (two namespaces, one CPU as the receive core), observe it
    /// under a bounded load, and tear it down.
    Lab(LabArgs),
    /// Put one steering mode in place (cpumap, rps or none), exclusively, observe it, and undo
    /// it all on exit.
    Attach(AttachArgs),
    /// Host tuning profiles with snapshot and revert.
    #[command(subcommand)]
    Tune(TuneCmd),
    /// Put back whatever rxsteer changed in this network namespace (after a crash).
    Restore,
    /// Untuned vs RPS vs cpumap in the embedded lab: rxsteer serve driven by rxload, per mode
    /// and repetition, with where the receive work went per CPU.
    Compare(Box<rxsteer::compare::CompareArgs>),
    /// Render report.md from a comparison's run directory (its run.json).
    Report { dir: std::path::PathBuf },
    /// PREDICT what each arm of a stored run would serve on more CPUs, from its measured costs
    /// per request and stage (writes RUN_DIR/predict-<N>cpus.md and .svg).
    Predict(PredictArgs),
    /// Keep a steering in place at every boot: a systemd unit that applies it at start and
    /// takes it back at stop (rps: RPS/RFS/XPS and sysctls; cpumap: attach as a service).
    Install(rxsteer::install::InstallArgs),
    /// What rxsteer installed, what is applied now, and whether the live values still match
    /// (exit 3 when something installed is not in place).
    Status(rxsteer::install::InstalledArgs),
    /// Stop, disable and remove what `install` wrote: the host as it was before install.
    Uninstall(rxsteer::install::InstalledArgs),
    /// Serve HTTP/1.1 and ZAP-HTTP (GET /health, POST /rpc, POST /echo, POST /upload). Needs no privileges.
    Serve(rxsteer::serve_cmd::ServeArgs),
}

#[derive(clap::Args)]
struct PredictArgs {
    /// A comparison's run directory (its run.json must have every CPU's time split).
    dir: std::path::PathBuf,
    /// The CPU count to predict for (1 to 4096).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    cpus: u32,
    /// The run's RX core (default: the lab's, from run.json).
    #[arg(long)]
    rx_cpu: Option<u32>,
    /// Where the load generator runs on the predicted box.
    #[arg(long, value_enum, default_value = "remote")]
    loader: rxsteer_records::LoaderPlace,
    /// Another stored run (e.g. an open-loop --rate run) to check the fitted costs against.
    #[arg(long)]
    check: Option<std::path::PathBuf>,
}

fn main() {
    // The kernel programs' diagnostics arrive through `log` (aya-log): warnings by default,
    // RUST_LOG=debug for the rest.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_target(true)
        .init();
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Top(args) => top::run(&args),
        Cmd::Lab(args) => lab_cmd::run(&args),
        Cmd::Attach(args) => attach_cmd::run(&args),
        Cmd::Tune(cmd) => tune_cmd::run(&cmd),
        Cmd::Restore => tune_cmd::restore(),
        Cmd::Serve(args) => rxsteer::serve_cmd::run(&args),
        Cmd::Install(args) => rxsteer::install::install(&args),
        Cmd::Uninstall(args) => rxsteer::install::uninstall(&args),
        Cmd::Status(args) => rxsteer::install::status(&args).map(|in_place| {
            if !in_place {
                std::process::exit(3);
            }
        }),
        Cmd::Compare(args) => rxsteer::compare::run(&args),
        Cmd::Report { dir } => rxsteer_report::run(&dir),
        Cmd::Predict(a) => rxsteer_report::predict::run(&rxsteer_report::predict::Ask {
            dir: &a.dir,
            cpus: a.cpus,
            rx_cpu: a.rx_cpu,
            loader: a.loader,
            check: a.check.as_deref(),
        }),
    };
    if let Err(e) = result {
        // A reader that closed our stdout early (`| head`): everything was already cleaned up
        // on the way out; end quietly with the status a SIGPIPE death would give.
        let broken_pipe = e.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        });
        if broken_pipe {
            std::process::exit(141);
        }
        eprintln!("rxsteer: {e:#}");
        // A flag whose value only the run could judge (--p99 under the unloaded p99): the
        // status of a refused flag.
        let bad_flag = e
            .chain()
            .any(|c| c.is::<rxsteer::compare::BoundBelowUnloaded>());
        std::process::exit(if bad_flag { 2 } else { 1 });
    }
}
