//! The live views when their terminal goes away (a closed window, a dropped SSH session) or a
//! SIGTERM arrives while they draw: each of `top`, `attach` and `lab` ends within 2 s and
//! leaves the host as found (no XDP, no lab namespaces, no state file). The terminal is a
//! pseudo-terminal the test opens and closes. Needs root.
mod common;

use std::{
    os::fd::{FromRawFd, OwnedFd},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

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
    // SAFETY: both just opened, owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) }
}

/// `cmd` with stdin, stdout and stderr on a new pseudo-terminal; returns the child and the
/// master (dropping it closes the terminal).
fn on_terminal(mut cmd: Command) -> (Child, OwnedFd) {
    let (master, slave) = pty();
    // Give the pty a size, as a terminal window has one.
    let ws = libc::winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize.
    unsafe {
        libc::ioctl(
            std::os::fd::AsRawFd::as_raw_fd(&master),
            libc::TIOCSWINSZ,
            &ws,
        )
    };
    let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
    let child = cmd
        .stdin(io(&slave))
        .stdout(io(&slave))
        .stderr(io(&slave))
        .spawn()
        .unwrap();
    // Keep draining the master so the child never blocks on a full terminal.
    let reader = master.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut f = std::fs::File::from(reader);
        let mut buf = [0u8; 4096];
        while std::io::Read::read(&mut f, &mut buf).is_ok_and(|n| n > 0) {}
    });
    (child, master)
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

fn end(child: &mut Child, master: OwnedFd, how: Ending, what: &str) {
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "{what} ended on its own"
    );
    match how {
        Ending::TerminalClosed => drop(master),
        Ending::SigtermWhileDrawing => unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        },
    }
    exits_within(child, Duration::from_secs(2), &format!("{what} ({how:?})"));
}

#[test]
#[ignore = "needs root: attaches programs and steers a veth lab"]
fn top_and_attach_end_when_their_terminal_goes_away_and_leave_nothing() {
    for how in [Ending::TerminalClosed, Ending::SigtermWhileDrawing] {
        let lab = common::lab('p');
        let before = common::host_state();
        for args in [
            vec!["top", "--iface", &lab.server_dev, "--observer", "xdp"],
            vec!["attach", "--iface", &lab.server_dev, "--steer", "rps"],
        ] {
            let mut cmd = lab.server.command(RXSTEER);
            cmd.args(&args);
            let (mut child, master) = on_terminal(cmd);
            end(&mut child, master, how, args[0]);
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
    for how in [Ending::TerminalClosed, Ending::SigtermWhileDrawing] {
        let mut cmd = Command::new(RXSTEER);
        cmd.args(["lab", "-d", "30s"]);
        let (mut child, master) = on_terminal(cmd);
        end(&mut child, master, how, "lab");
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
