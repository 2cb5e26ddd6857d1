//! The comparison's live screen as a person sees it: `rxsteer compare` on a real pseudo-terminal
//! draws the per-core heatmap next to live req/s and p99; `q` stops the run long before its
//! end, the terminal is given back (alternate screen left), and the host is as it was.
//! Needs root.
mod common;

use std::{
    io::{Read, Write},
    os::fd::{FromRawFd, OwnedFd},
    process::{Command, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

fn pty() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 160,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two fds; the name and termios pointers may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: both fds were just opened and are owned here only.
    unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) }
}

/// Stops the run if the test fails half-way, so a failed test leaves nothing running.
struct Stop(std::process::Child);

impl Drop for Stop {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn live_screen_shows_heatmap_beside_throughput_and_q_stops_and_restores() {
    let before = common::host_state();
    let (master, slave) = pty();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-tui-{}", std::process::id()));
    let io = |fd: &OwnedFd| Stdio::from(fd.try_clone().unwrap());
    let started = Instant::now();
    let child = Command::new(RXSTEER)
        .args([
            // A capacity search whose steps outlast the test: the screen shows which step
            // runs and the rate it offers.
            "compare", "--force", "--step", "60s", "--reps", "1", "-c", "8", "--steer", "cpumap",
        ])
        .arg("--out")
        .arg(&out_dir)
        .env("TERM", "xterm-256color")
        .stdin(io(&slave))
        .stdout(io(&slave))
        .stderr(io(&slave))
        .spawn()
        .unwrap();
    let mut child = Stop(child);
    drop(slave);
    let screen = Arc::new(Mutex::new(Vec::<u8>::new()));
    let reader = {
        let screen = Arc::clone(&screen);
        let mut m = std::fs::File::from(master.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 65536];
            // Ends with EIO once every holder of the slave side has exited.
            while let Ok(n) = m.read(&mut buf) {
                if n == 0 {
                    break;
                }
                screen.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        })
    };
    let text = || without_escapes(&String::from_utf8_lossy(&screen.lock().unwrap()));
    // ratatui writes only cells that differ from what the screen holds (blanks are skipped),
    // so a phrase arrives as words between cursor moves: look for single words, and for
    // rxload's first measured interval in its live file.
    let live = out_dir.join("live-cpumap-http-rep0-step0.jsonl");
    let measuring = || std::fs::read_to_string(&live).is_ok_and(|l| l.contains("measure"));
    let wanted = [
        "compare", "cpumap", "NET_RX", "kthreads", "req/s", "p99", "cpu0", "cpu1", "results",
        "step", "unloaded", "offered",
    ];
    let deadline = Instant::now() + Duration::from_secs(40);
    while !(measuring() && wanted.iter().all(|w| text().contains(w))) {
        let shown = text();
        assert!(
            Instant::now() < deadline,
            "the live screen never showed {:?} with a measured interval: {shown}",
            wanted
                .iter()
                .filter(|w| !shown.contains(*w))
                .collect::<Vec<_>>()
        );
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "exited early: {shown}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::File::from(master.try_clone().unwrap())
        .write_all(b"q")
        .unwrap();
    let status = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s;
        }
        assert!(
            started.elapsed() < Duration::from_secs(50),
            "q did not stop the run"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        started.elapsed() < Duration::from_secs(50),
        "stopped well before its 60 s"
    );
    // Nothing else holds the slave side: the reader sees EIO and ends.
    reader.join().unwrap();
    let all = String::from_utf8_lossy(&screen.lock().unwrap()).into_owned();
    assert!(!status.success(), "a stopped run is not a finished one");
    assert!(all.contains("stopped before the end"), "{all}");
    // ratatui leaves the alternate screen (ESC [ ? 1049 l) before the message is printed.
    let left = all.rfind("\x1b[?1049l").expect("alternate screen left");
    assert!(left < all.rfind("stopped before the end").unwrap());
    assert_eq!(common::host_state(), before, "the host is left as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// The text of a terminal byte stream without its CSI escape sequences.
fn without_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
