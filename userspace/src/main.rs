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
    Compare(rxsteer::compare::CompareArgs),
    /// Render report.md from a comparison's run directory (its run.json).
    Report { dir: std::path::PathBuf },
    /// Serve HTTP/1.1 and ZAP-HTTP (GET /health, POST /rpc, POST /echo). Needs no privileges.
    Serve(rxsteer::serve_cmd::ServeArgs),
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
        Cmd::Compare(args) => rxsteer::compare::run(&args),
        Cmd::Report { dir } => rxsteer_report::run(&dir),
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
        std::process::exit(1);
    }
}
