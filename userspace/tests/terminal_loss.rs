//! The live views when their terminal goes away (a closed window, a dropped SSH session) or a
//! SIGTERM arrives while they draw: each of `top`, `attach` and `lab` ends within 2 s and
//! leaves the host as found (no XDP, no lab namespaces, no state file). The terminal is a
//! pseudo-terminal the test opens and closes. Needs root.
mod common;

use std::{
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    process::{Child, Command, Stdio},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

/// Each test compares the whole host before and after: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A pseudo-terminal: (master, slave).
fn pty() -> (OwnedFd, OwnedFd) {
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty writes two descriptors; the name, termios and winsize may be null.
    let r = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // Not inherited: a child holding the master would keep its own terminal open.
    for fd in [m, s] {
        // SAFETY: F_SETFD on descriptors this function owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both just opened, owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) }
}

/// The master side of a child's terminal: drained on a thread (so the child never blocks on
/// a full terminal) that owns it and closes it when told.
struct Terminal {
    close: Arc<AtomicBool>,
    drain: std::thread::JoinHandle<()>,
}

impl Terminal {
    /// Closes the terminal: the master's only descriptor goes.
    fn close(self) {
        self.close.store(true, Ordering::SeqCst);
        self.drain.join().unwrap();
    }
}

/// `cmd` with stdin, stdout and stderr on a new pseudo-terminal.
fn on_terminal(mut cmd: Command) -> (Child, Terminal) {
    let (master, slave) = pty();
    // Give the pty a size, as a terminal window has one.
    let ws = libc::winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize.
    unsafe { libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws) };
    let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
    let child = cmd
        .stdin(io(&slave))
        .stdout(io(&slave))
        .stderr(io(&slave))
        .spawn()
        .unwrap();
    drop(slave);
    let close = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&close);
    let drain = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while !stop.load(Ordering::SeqCst) {
            let mut p = libc::pollfd {
                fd: master.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, 50 ms; then a read of what is there into a stack buffer.
            unsafe {
                if libc::poll(&mut p, 1, 50) > 0 && p.revents & libc::POLLIN != 0 {
                    libc::read(master.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len());
                }
            }
        }
        drop(master);
    });
    (child, Terminal { close, drain })
}

fn exits_within(child: &mut Child, limit: Duration, what: &str) {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running {limit:?} after the terminal went away");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// How a view loses its user: its terminal closes, or a SIGTERM while it draws.
#[derive(Clone, Copy, Debug)]
enum Ending {
    TerminalClosed,
    SigtermWhileDrawing,
}

fn end(child: &mut Child, terminal: Terminal, how: Ending, what: &str) {
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "{what} ended on its own"
    );
    let open = match how {
        Ending::TerminalClosed => {
            terminal.close();
            None
        }
        Ending::SigtermWhileDrawing => {
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            Some(terminal)
        }
    };
    exits_within(child, Duration::from_secs(2), &format!("{what} ({how:?})"));
    if let Some(t) = open {
        t.close();
    }
}

#[test]
#[ignore = "needs root: attaches programs and steers a veth lab"]
fn top_and_attach_end_when_their_terminal_goes_away_and_leave_nothing() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for how in [Ending::TerminalClosed, Ending::SigtermWhileDrawing] {
        let lab = common::lab('p');
        let before = common::host_state();
        for args in [
            vec!["top", "--iface", &lab.server_dev, "--observer", "xdp"],
            vec!["attach", "--iface", &lab.server_dev, "--steer", "rps"],
        ] {
            let mut cmd = lab.server.command(RXSTEER);
            cmd.args(&args);
            let (mut child, terminal) = on_terminal(cmd);
            end(&mut child, terminal, how, args[0]);
            assert_eq!(
                lab.server.xdp_attached(&lab.server_dev).unwrap(),
                None,
                "{args:?} {how:?}: nothing attached"
            );
            assert_eq!(
                common::host_state(),
                before,
                "{args:?} {how:?}: host as found"
            );
        }
    }
}

#[test]
#[ignore = "needs root: builds the embedded lab"]
fn lab_ends_when_its_terminal_goes_away_and_removes_its_namespaces() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for how in [Ending::TerminalClosed, Ending::SigtermWhileDrawing] {
        let mut cmd = Command::new(RXSTEER);
        cmd.args(["lab", "-d", "30s"]);
        let (mut child, terminal) = on_terminal(cmd);
        end(&mut child, terminal, how, "lab");
        let ns = String::from_utf8(
            Command::new("ip")
                .args(["netns", "list"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        assert!(
            !ns.contains("rxs-lab-"),
            "{how:?}: lab namespaces left: {ns}"
        );
    }
}
