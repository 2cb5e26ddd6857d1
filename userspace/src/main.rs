use clap::{Parser, Subcommand};
use rxsteer::top::{self, TopArgs};

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
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::Top(args) => top::run(&args),
    };
    if let Err(e) = result {
        eprintln!("rxsteer: {e:#}");
        std::process::exit(1);
    }
}
