use clap::{Parser, Subcommand};
use rxsteer::{
    lab_cmd::{self, LabArgs},
    top::{self, TopArgs},
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
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Top(args) => top::run(&args),
        Cmd::Lab(args) => lab_cmd::run(&args),
    };
    if let Err(e) = result {
        eprintln!("rxsteer: {e:#}");
        std::process::exit(1);
    }
}
