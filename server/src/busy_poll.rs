//! Busy polling, preferred over interrupts (`serve --busy-poll`): while a worker waits for
//! events it polls the receive queue itself, and the kernel keeps the device's interrupt (and
//! NAPI's softirq) off while it keeps up. With the device's `napi_defer_hard_irqs` and
//! `gro_flush_timeout` set (the `busy-poll` steering mode), receive work then runs in the
//! server's own thread, on the server's CPU, instead of on whichever CPU took the interrupt.
//!
//! epoll: EPIOCSPARAMS on the worker runtime's epoll instance; io_uring: NAPI busy-poll
//! registration on the ring. Both are Linux 6.9; an older kernel refuses, and `start` fails
//! with one line saying so.
use anyhow::{bail, Result};
use std::os::fd::RawFd;

/// What a worker asks of its engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusyPoll {
    /// How long one wait may poll before it sleeps, in microseconds.
    pub usecs: u32,
    /// Packets per poll; above NAPI's weight (64) the kernel wants CAP_NET_ADMIN.
    pub budget: u16,
}

/// NAPI's poll weight, the most packets one busy poll may take without CAP_NET_ADMIN.
pub const DEFAULT_BUDGET: u16 = 64;

/// `struct epoll_params` (include/uapi/linux/eventpoll.h).
#[repr(C)]
struct EpollParams {
    busy_poll_usecs: u32,
    busy_poll_budget: u16,
    prefer_busy_poll: u8,
    pad: u8,
}

/// `_IOW(0x8A, 0x01, struct epoll_params)`.
const EPIOCSPARAMS: libc::c_ulong = (1 << 30) | (8 << 16) | (0x8A << 8) | 0x01;

/// The epoll instances this process holds now (`anon_inode:[eventpoll]` in /proc/self/fd).
pub fn epoll_fds() -> Vec<RawFd> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|l| l.as_os_str() == "anon_inode:[eventpoll]")
        })
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Sets busy polling, preferred, on the epoll instance `fd`.
pub fn on_epoll(fd: RawFd, bp: BusyPoll) -> Result<()> {
    let params = EpollParams {
        busy_poll_usecs: bp.usecs,
        busy_poll_budget: bp.budget,
        prefer_busy_poll: 1,
        pad: 0,
    };
    // SAFETY: `params` is the kernel's struct epoll_params, alive for the call.
    let rc = unsafe { libc::ioctl(fd, EPIOCSPARAMS as _, &params) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENOTTY) {
            bail!("busy polling: this kernel's epoll has no EPIOCSPARAMS (Linux 6.9 or later)");
        }
        bail!("busy polling: EPIOCSPARAMS on epoll fd {fd}: {e}");
    }
    Ok(())
}

/// Registers NAPI busy polling, preferred, on an io_uring.
pub fn on_uring(ring: &io_uring::IoUring, bp: BusyPoll) -> Result<()> {
    let mut napi = io_uring::types::Napi::new()
        .set_busy_poll_timeout(bp.usecs)
        .set_prefer_busy_poll(true);
    ring.submitter().register_napi(&mut napi).map_err(|e| {
        if e.raw_os_error() == Some(libc::EINVAL) {
            anyhow::anyhow!(
                "busy polling: this kernel's io_uring has no NAPI registration (Linux 6.9 or later): {e}"
            )
        } else {
            anyhow::anyhow!("busy polling: registering NAPI on the io_uring: {e}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ioctl number as the kernel's header computes it, and the struct as it lays it out.
    #[test]
    fn the_ioctl_matches_the_kernels_header() {
        assert_eq!(EPIOCSPARAMS, 0x4008_8a01);
        assert_eq!(std::mem::size_of::<EpollParams>(), 8);
    }
}
