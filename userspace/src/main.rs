use rxsteer::Cli;

fn main() {
    // The kernel programs' diagnostics arrive through `log` (aya-log): warnings by default,
    // RUST_LOG=debug for the rest.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_target(true)
        .init();
    let cli = Cli::from_command_line();
    let result = cli.run();
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
        // A flag whose value only the run or the system could judge (--p99 under the
        // unloaded p99, a --metrics port in use): the status of a refused flag.
        let bad_flag = e.chain().any(|c| c.is::<rxsteer::refused::FlagRefused>());
        std::process::exit(if bad_flag { 2 } else { 1 });
    }
}
