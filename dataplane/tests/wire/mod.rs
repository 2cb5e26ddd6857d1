//! Real frames into the steering program: a veth pair of the test's own, the steering program
//! attached in driver mode to one end, frames written raw into the other with an AF_PACKET
//! socket. The kernel's receive path then redirects them into the cpumap for real, so
//! `on_cpu` counts each frame on the CPU it reached.
//!
//! Why not BPF_F_TEST_XDP_LIVE_FRAMES: it redirects too, but a sandboxed kernel may refuse it
//! (this project's CI kernel answers EPERM since 2026-12, while ordinary test runs still work),
//! and a receive path is what the steering program meets in use.
//!
//! The pair lives in this (root) namespace with no address and IPv6 disabled before it comes
//! up, so the kernel itself sends nothing through it: every frame the program sees is one the
//! test wrote. It is deleted when dropped, panics included.
use rxsteer_dataplane::{Dataplane, STEER};
use rxsteer_records::XdpModeChoice;
use std::{
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    process::Command,
    sync::atomic::{AtomicU32, Ordering},
};

/// A veth pair: frames written into `tx` arrive on `rx`, where the steering program runs.
pub struct Veth {
    tx: String,
    rx: String,
    socket: OwnedFd,
    tx_index: i32,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

impl Veth {
    /// A new pair, named after this process and a counter (tests in one binary run in
    /// parallel, each with its own pair).
    pub fn new() -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let base = format!("rxt{}x{n}", std::process::id() % 100_000);
        let (tx, rx) = (format!("{base}a"), format!("{base}b"));
        // Protocol 0: this socket sends only, it receives nothing.
        // SAFETY: a plain syscall; the descriptor is owned at once.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        assert!(
            fd >= 0,
            "AF_PACKET socket: {}",
            std::io::Error::last_os_error()
        );
        // SAFETY: fd is a fresh descriptor nothing else owns.
        let socket = unsafe { OwnedFd::from_raw_fd(fd) };
        ip(&["link", "add", &tx, "type", "veth", "peer", "name", &rx]);
        // From here on, dropping `veth` (a failed step included) deletes the pair.
        let mut veth = Veth {
            tx,
            rx,
            socket,
            tx_index: 0,
        };
        for end in [&veth.tx, &veth.rx] {
            let knob = format!("/proc/sys/net/ipv6/conf/{end}/disable_ipv6");
            if std::path::Path::new(&knob).exists() {
                std::fs::write(&knob, "1").unwrap();
            }
        }
        ip(&["link", "set", &veth.tx, "up"]);
        ip(&["link", "set", &veth.rx, "up"]);
        let name = std::ffi::CString::new(veth.tx.as_str()).unwrap();
        // SAFETY: a NUL-terminated name; a plain syscall.
        veth.tx_index = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
        assert!(veth.tx_index > 0, "no ifindex for {}", veth.tx);
        veth
    }

    /// Attaches the steering program to the receiving end, in driver mode (veth has native
    /// XDP, so a redirect goes through the cpumap's own bulk queue as a NIC's would).
    pub fn attach(&self, dp: &mut Dataplane) {
        dp.attach_xdp(STEER, false, &self.rx, XdpModeChoice::Drv)
            .unwrap();
    }

    /// Writes one raw Ethernet frame into the sending end; a refusal is a failed test.
    pub fn send(&self, frame: &[u8]) {
        if let Err(e) = self.try_send(frame) {
            panic!("sending a frame into {}: {e}", self.tx);
        }
    }

    /// Writes one raw Ethernet frame into the sending end, or says why the kernel refused it
    /// (ENOBUFS: the veth's own ring is full because its receive side has not run).
    pub fn try_send(&self, frame: &[u8]) -> std::io::Result<()> {
        // SAFETY: sockaddr_ll is plain old data; zeroed is a valid value.
        let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        to.sll_family = libc::AF_PACKET as u16;
        to.sll_ifindex = self.tx_index;
        to.sll_halen = 6;
        to.sll_addr[..6].copy_from_slice(&frame[..6]);
        // SAFETY: the buffer and address outlive the call; their lengths are theirs.
        let sent = unsafe {
            libc::sendto(
                self.socket.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&to as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        match sent {
            n if n == frame.len() as isize => Ok(()),
            n if n < 0 => Err(std::io::Error::last_os_error()),
            n => Err(std::io::Error::other(format!(
                "{n} of {} bytes written",
                frame.len()
            ))),
        }
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Deleting one end deletes both, and whatever program was attached to either.
        let _ = Command::new("ip").args(["link", "del", &self.tx]).status();
    }
}
