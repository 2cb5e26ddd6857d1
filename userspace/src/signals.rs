//! Endings that must still restore the host: every command that changes it (or serves) turns
//! the usual ways of being stopped into a flag its main loop polls, so destructors run.
use anyhow::{Context, Result};
use std::sync::{atomic::AtomicBool, Arc};

/// A flag set by SIGINT, SIGTERM, SIGHUP (the terminal or ssh session closed) and SIGQUIT,
/// instead of dying, so destructors detach and restore.
pub fn stop_on_signals() -> Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM, SIGHUP, SIGQUIT] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }
    Ok(stop)
}
