//! `--busy-poll`: each worker's engine carries busy polling, preferred over interrupts, or the
//! server refuses to start in one line naming the kernel it needs. No privileges needed.
use rxsteer_server::{
    busy_poll::{epoll_fds, BusyPoll},
    start, PerProto, ServeConfig, ServerIo,
};
use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

const ASKED: BusyPoll = BusyPoll {
    usecs: 37,
    budget: 16,
};

fn kernel() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let mut next = || it.next().unwrap().parse::<u32>().unwrap();
    (next(), next())
}

/// `struct epoll_params`, read back with EPIOCGPARAMS (`_IOR(0x8A, 0x02, ...)`).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct EpollParams {
    busy_poll_usecs: u32,
    busy_poll_budget: u16,
    prefer_busy_poll: u8,
    pad: u8,
}

fn params_of(fd: i32) -> Option<EpollParams> {
    let mut p = EpollParams::default();
    const EPIOCGPARAMS: libc::c_ulong = (2 << 30) | (8 << 16) | (0x8A << 8) | 0x02;
    // SAFETY: `p` is the kernel's struct epoll_params, alive for the call.
    (unsafe { libc::ioctl(fd, EPIOCGPARAMS as _, &mut p) } == 0).then_some(p)
}

fn config(io: ServerIo) -> ServeConfig {
    ServeConfig {
        listen: PerProto::each(|_| Some(SocketAddr::from(([127, 0, 0, 1], 0)))),
        threads: 2,
        io,
        busy_poll: Some(ASKED),
        ..ServeConfig::default()
    }
}

fn health(addr: SocketAddr) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// One test for both engines: the epoll instances are counted process-wide, so no other
/// server may start beside it.
#[test]
fn each_engine_busy_polls_where_the_kernel_can_and_refuses_in_one_line_where_not() {
    for io in [ServerIo::Epoll, ServerIo::Uring] {
        let started = start(config(io));
        if kernel() < (6, 9) {
            let e = format!("{:#}", started.err().expect("busy polling before 6.9"));
            assert!(
                e.contains("Linux 6.9 or later") && !e.contains('\n'),
                "{io}: {e}"
            );
            continue;
        }
        let server = started.unwrap_or_else(|e| panic!("{io}: {e:#}"));
        let http = server.addr[rxsteer_server::Proto::Http].unwrap();
        assert!(health(http).starts_with("HTTP/1.1 200"), "{io}");
        if io == ServerIo::Epoll {
            let want = EpollParams {
                busy_poll_usecs: ASKED.usecs,
                busy_poll_budget: ASKED.budget,
                prefer_busy_poll: 1,
                pad: 0,
            };
            // This process holds no epoll instance but the workers' runtimes (tokio may hold
            // more than one descriptor each).
            let all = epoll_fds();
            assert!(all.len() >= 2, "one per worker at least: {all:?}");
            for fd in all {
                assert_eq!(params_of(fd), Some(want), "epoll fd {fd}");
            }
        }
    }
}
