//! Ctrl-C, SIGTERM and SIGHUP during `cargo xtask vm`: the signal is noted, the running guest
//! is killed, its scratch folder removed, the rows not yet run are not started, and xtask
//! exits 130. (A SIGKILL cannot be caught: the guest then dies with xtask through
//! PR_SET_PDEATHSIG, and the next start removes the scratch folder it left.)
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn note(_: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::SeqCst);
}

/// From here on the three signals are noted instead of ending xtask at once.
pub fn catch() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `note` only stores to an atomic; the sigaction struct is zeroed and filled.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = note as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub fn requested() -> bool {
    STOP.load(Ordering::SeqCst)
}

/// The error a row ends with when a signal came.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted (a signal came): the guest was killed")
    }
}

impl std::error::Error for Interrupted {}
