//! Two owners, one host: sessions started together take turns through one lock (one tunes,
//! the other is refused in one line naming it), and tuning `tune apply` keeps in place is
//! stacked on, never reverted, by an experiment, a crash of one included. Needs root.
mod common;

use common::{lab, online_cpus};
use rxsteer::netns::VethLab;
use std::{
    io::{BufRead, BufReader},
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// rxsteer in the lab's server namespace.
fn rxsteer(lab: &VethLab, args: &[&str]) -> Command {
    let mut c = lab.server.command(RXSTEER);
    c.args(args);
    c
}

/// The lab server namespace's state files: its kept tuning, its session layer and its lock.
fn state_files(lab: &VethLab) -> Vec<PathBuf> {
    let inode = std::fs::metadata(format!("/run/netns/{}", lab.server.name()))
        .unwrap()
        .ino();
    let dir = Path::new(rxsteer_tune::state::STATE_DIR);
    [
        rxsteer_tune::StateFile::path_in(dir, inode),
        rxsteer_tune::StateFile::session_path_in(dir, inode),
        rxsteer_tune::StateFile::lock_path_in(dir, inode),
    ]
    .into_iter()
    .filter(|p| p.exists())
    .collect()
}

#[test]
#[ignore = "needs root: tunes a veth lab"]
fn two_sessions_started_together_one_tunes_and_the_other_is_refused() {
    let lab = lab('o');
    let dev = lab.server_dev.clone();
    let before = common::profile_values(&lab);
    let session = [
        "attach",
        "--iface",
        &dev,
        "--steer",
        "rps",
        "--json",
        "--interval",
        "100ms",
        "--count",
        "10",
    ];
    for round in 0..16 {
        let start = || {
            rxsteer(&lab, &session)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (start(), start());
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let tuned = [&a, &b]
            .iter()
            .filter(|o| o.status.success() && text(o).contains("tuned for rps"))
            .count();
        let refused: Vec<&Output> = [&a, &b]
            .into_iter()
            .filter(|o| {
                o.status.code() == Some(1)
                    && text(o).contains(&format!("rxsteer attach --steer rps on {dev} (pid "))
                    && text(o).contains("is changing this network namespace's tuning")
            })
            .collect();
        assert!(
            tuned == 1 && refused.len() == 1,
            "round {round}: one tunes, one is refused:\n--- a\n{}\n--- b\n{}",
            text(&a),
            text(&b)
        );
        assert_eq!(
            text(refused[0]).trim().lines().count(),
            1,
            "the refusal is one line: {}",
            text(refused[0])
        );
        assert_eq!(
            common::profile_values(&lab),
            before,
            "round {round}: the host as found"
        );
        assert_eq!(state_files(&lab), Vec::<PathBuf>::new(), "round {round}");
    }
}

/// A session started in the lab, once it observes.
struct Session {
    child: std::process::Child,
    said: String,
    /// The rest of its stderr, read on so that it never writes into a closed pipe.
    rest: std::thread::JoinHandle<String>,
}

fn observing(lab: &VethLab, args: &[&str]) -> Session {
    let mut child = rxsteer(lab, args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !said.contains("observing") {
        let mut line = String::new();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "exited early: {said}"
        );
        said.push_str(&line);
        assert!(Instant::now() < deadline, "{said}");
    }
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut rest);
        rest
    });
    Session { child, said, rest }
}

impl Session {
    /// Ends it as Ctrl-C would: its exit status and the rest of what it said.
    fn stop(mut self) -> (std::process::ExitStatus, String) {
        // SAFETY: a signal to our own child, by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let status = self.child.wait().unwrap();
        (status, self.rest.join().unwrap())
    }

    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
        let _ = self.rest.join();
    }
}

#[test]
#[ignore = "needs root: tunes a veth lab"]
fn kept_tuning_comes_back_after_a_session_a_none_session_and_a_crash() {
    let cpus = online_cpus();
    let (first, last) = (cpus[0].to_string(), cpus.last().unwrap().to_string());
    let lab = lab('k');
    let dev = lab.server_dev.clone();
    let before = common::profile_values(&lab);
    let apply = rxsteer(
        &lab,
        &[
            "tune",
            "apply",
            "--iface",
            &dev,
            "--profile",
            "rps",
            "--cpus",
            &first,
        ],
    )
    .output()
    .unwrap();
    assert!(apply.status.success(), "{}", text(&apply));
    let kept = common::profile_values(&lab);
    assert_ne!(kept, before, "tune apply changed values");
    let rps = [
        "attach", "--iface", &dev, "--steer", "rps", "--cpus", &last, "--json",
    ];

    // A session with CPUs of its own changes RPS while it runs, and puts the kept values back.
    let session = observing(&lab, &rps);
    assert!(
        session.said.contains("the kept tuning (rps on"),
        "{}",
        session.said
    );
    if cpus.len() > 1 {
        assert_ne!(
            common::profile_values(&lab),
            kept,
            "the session's own layer"
        );
    }
    let (status, said) = session.stop();
    assert!(status.success(), "{status:?}: {said}");
    assert_eq!(common::profile_values(&lab), kept, "after the session");

    // `--steer none` writes nothing, the kept tuning included.
    let none = rxsteer(
        &lab,
        &[
            "attach", "--iface", &dev, "--steer", "none", "--json", "--count", "1",
        ],
    )
    .output()
    .unwrap();
    assert!(none.status.success(), "{}", text(&none));
    assert_eq!(common::profile_values(&lab), kept, "after --steer none");

    // A session killed outright: the next start puts back what it found, the kept tuning.
    observing(&lab, &rps).kill();
    let next = rxsteer(
        &lab,
        &[
            "attach", "--iface", &dev, "--steer", "none", "--json", "--count", "1",
        ],
    )
    .output()
    .unwrap();
    assert!(
        next.status.success() && text(&next).contains("which did not exit cleanly"),
        "{}",
        text(&next)
    );
    assert_eq!(common::profile_values(&lab), kept, "after a crash");

    // `restore` (as `tune revert`) takes the kept tuning back off too.
    let restore = rxsteer(&lab, &["restore"]).output().unwrap();
    assert!(restore.status.success(), "{}", text(&restore));
    assert_eq!(common::profile_values(&lab), before, "restored");
    assert_eq!(state_files(&lab), Vec::<PathBuf>::new());
}
