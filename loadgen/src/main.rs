//! rxload: the HTTP/1.1 and ZAP load generator. Closed loop (one request in flight per
//! connection), warm-up excluded, HDR latency merged across threads, every response validated,
//! errors counted by kind, client allocations per request and the tool's own CPU time.
mod conn;
mod cputime;
mod hgrm;
mod live;
mod output;
mod run;
mod uring;

// The byte-level pieces, shared with the fuzzer, and the command line, which rxsteer's man
// pages and completions are written from too (lib.rs).
use rxload::{bind, cli, response, scenario, stats, target};

use clap::Parser;

#[global_allocator]
static GLOBAL: rxsteer_alloc::Counting = rxsteer_alloc::Counting;

fn main() {
    match run::run(cli::Args::parse()) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("rxload: {e:#}");
            std::process::exit(2);
        }
    }
}
