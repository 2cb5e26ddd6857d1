//! Floor servers for the /health bench: per request they do nothing but the system calls every
//! HTTP server needs (take a read, send a fixed response), with no parse, no routing and no
//! limits. Not servers one could deploy: a lower bound on a server's own cost per request with
//! this kernel's TCP path, to tell how far above it a real server (ours, nginx) sits, and so
//! what ratio between two real servers is reachable at all.
//!
//! Each runs on one thread, pinned, named `floor-epoll` / `floor-uring` so the bench can read
//! its CPU time. They answer one response per read, which is right for wrk's closed loop (one
//! request in flight per connection, each arriving in one segment).
// Each bench uses the floors it compares.
#![allow(dead_code)]
use io_uring::{opcode, types, IoUring};
use std::{
    net::{SocketAddr, TcpListener},
    os::fd::{AsRawFd, IntoRawFd, RawFd},
};

fn listen() -> TcpListener {
    TcpListener::bind("127.0.0.1:0").expect("bind a floor listener")
}

fn pin(cpu: u32) {
    rxsteer_tune::pin::pin_current_thread(cpu).expect("pin a floor thread");
}

/// epoll, level-triggered: epoll_wait for many ready sockets, then read + write for each.
pub fn epoll(cpu: u32, response: &'static [u8]) -> SocketAddr {
    let l = listen();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    std::thread::Builder::new()
        .name("floor-epoll".into())
        .spawn(move || {
            pin(cpu);
            // SAFETY: plain epoll/accept/read/write on descriptors this thread owns.
            unsafe { epoll_loop(l.into_raw_fd(), response) }
        })
        .unwrap();
    addr
}

unsafe fn epoll_loop(lfd: RawFd, response: &[u8]) -> ! {
    let ep = libc::epoll_create1(0);
    let add = |fd: RawFd| {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: fd as u64,
        };
        libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev);
    };
    add(lfd);
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 256];
    let mut buf = [0u8; 4096];
    loop {
        let n = libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, -1);
        for ev in &events[..n.max(0) as usize] {
            let fd = ev.u64 as RawFd;
            if fd == lfd {
                loop {
                    // CLOEXEC: a socket inherited by the wrk child would outlive its close
                    // here, keep its epoll registration, and report events under a number
                    // this process has since given to another descriptor.
                    let c = libc::accept4(
                        lfd,
                        std::ptr::null_mut(),
                        std::ptr::null_mut(),
                        libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                    );
                    if c < 0 {
                        break;
                    }
                    nodelay(c);
                    add(c);
                }
                continue;
            }
            let r = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if r > 0 {
                libc::write(fd, response.as_ptr().cast(), response.len());
            } else if r == 0 {
                libc::epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut());
                libc::close(fd);
            }
        }
    }
}

fn nodelay(fd: RawFd) {
    let one: libc::c_int = 1;
    // SAFETY: setsockopt with a valid int option value.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            4,
        );
    }
}

const ACCEPT: u64 = u64::MAX;
const SEND_BIT: u64 = 1 << 32;

/// io_uring: multishot accept; per connection a receive, then a send of the fixed response,
/// then the next receive. One kernel entry submits everything queued and reaps everything
/// completed (SINGLE_ISSUER + DEFER_TASKRUN, as rxload --io uring).
pub fn uring(cpu: u32, response: &'static [u8]) -> SocketAddr {
    let l = listen();
    let addr = l.local_addr().unwrap();
    std::thread::Builder::new()
        .name("floor-uring".into())
        .spawn(move || {
            pin(cpu);
            uring_loop(l, response)
        })
        .unwrap();
    addr
}

fn uring_loop(l: TcpListener, response: &[u8]) -> ! {
    let mut ring: IoUring = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .build(1024)
        .expect("io_uring");
    // One receive buffer per connection slot, indexed by descriptor.
    let mut bufs: Vec<Box<[u8; 2048]>> = Vec::new();
    let accept = opcode::AcceptMulti::new(types::Fd(l.as_raw_fd()))
        .flags(libc::SOCK_CLOEXEC)
        .build()
        .user_data(ACCEPT);
    // SAFETY: the listener outlives the ring's use of it (this loop never returns).
    unsafe { ring.submission().push(&accept).unwrap() };
    let mut done: Vec<(u64, i32)> = Vec::with_capacity(1024);
    loop {
        ring.submit_and_wait(1).expect("io_uring_enter");
        done.clear();
        done.extend(ring.completion().map(|c| (c.user_data(), c.result())));
        for &(ud, res) in &done {
            if ud == ACCEPT {
                if res >= 0 {
                    nodelay(res);
                    let fd = res as usize;
                    while bufs.len() <= fd {
                        bufs.push(Box::new([0; 2048]));
                    }
                    push_recv(&mut ring, res, &mut bufs[fd]);
                }
                continue;
            }
            let fd = (ud & 0xffff_ffff) as RawFd;
            if ud & SEND_BIT != 0 {
                push_recv(&mut ring, fd, &mut bufs[fd as usize]);
            } else if res > 0 {
                let send =
                    opcode::Send::new(types::Fd(fd), response.as_ptr(), response.len() as u32)
                        .build()
                        .user_data(SEND_BIT | fd as u64);
                // SAFETY: the response is 'static.
                unsafe { push(&mut ring, &send) };
            } else {
                // SAFETY: the connection's only operation just completed.
                unsafe { libc::close(fd) };
            }
        }
    }
}

fn push_recv(ring: &mut IoUring, fd: RawFd, buf: &mut [u8; 2048]) {
    let recv = opcode::Recv::new(types::Fd(fd), buf.as_mut_ptr(), buf.len() as u32)
        .build()
        .user_data(fd as u64);
    // SAFETY: the buffer is boxed per descriptor and kept for the process's life.
    unsafe { push(ring, &recv) };
}

unsafe fn push(ring: &mut IoUring, e: &io_uring::squeue::Entry) {
    while ring.submission().push(e).is_err() {
        ring.submit().expect("io_uring_enter");
    }
}
