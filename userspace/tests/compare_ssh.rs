//! `rxsteer compare --iface IF --loader ssh://...` with two remote loaders, as on the GB10
//! setup where the load comes from other machines: an sshd runs in the loader namespace (keys
//! made for this test, in a temp folder), rxsteer copies its rxload there, runs both loaders at
//! once, merges their histograms, and removes what it copied. A loader that cannot be reached
//! is named before anything changes. Needs root and OpenSSH (installed by cargo xtask test).
mod common;

use rxsteer::netns::VethLab;
use serde_json::Value;
use std::{
    path::{Path, PathBuf},
    process::{Child, Command},
    time::{Duration, Instant},
};

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");
const PORT: u16 = 2222;

struct Sshd {
    child: Child,
    dir: PathBuf,
    made_run_dir: bool,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
        if self.made_run_dir {
            let _ = std::fs::remove_dir("/run/sshd");
        }
    }
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An sshd in the loader namespace, listening on its veth address, keys in a temp folder.
fn sshd(lab: &VethLab) -> Sshd {
    let dir = std::env::temp_dir().join(format!("rxsteer-ssh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    keygen(&dir.join("host_key"));
    keygen(&dir.join("user_key"));
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
    let d = dir.display();
    std::fs::write(
        dir.join("sshd_config"),
        format!(
            "Port {PORT}\nListenAddress {}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\n\
             PermitRootLogin prohibit-password\nPasswordAuthentication no\nStrictModes no\nUsePAM no\nPidFile {d}/sshd.pid\n",
            lab.client_ip
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("ssh_config"),
        format!("Host *\n  IdentityFile {d}/user_key\n  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking accept-new\n"),
    )
    .unwrap();
    // sshd wants its privilege-separation folder; made here only if missing, removed after.
    let made_run_dir = !Path::new("/run/sshd").exists();
    if made_run_dir {
        std::fs::create_dir_all("/run/sshd").unwrap();
    }
    let sshd = Command::new("which").arg("sshd").output().unwrap();
    let sshd_path = if sshd.status.success() {
        String::from_utf8_lossy(&sshd.stdout).trim().to_string()
    } else {
        "/usr/sbin/sshd".into()
    };
    let child = lab
        .client
        .command(&sshd_path)
        .args(["-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .spawn()
        .expect("sshd (openssh-server; cargo xtask test installs it)");
    let s = Sshd {
        child,
        dir,
        made_run_dir,
    };
    // Up when it accepts on its port.
    common::wait_listening(
        &lab.server,
        std::net::SocketAddr::from((lab.client_ip, PORT)),
        Duration::from_secs(10),
        "sshd",
    );
    s
}

#[test]
#[ignore = "needs root: runs ssh loaders into a steered veth lab"]
fn two_ssh_loaders_drive_both_protocols_are_merged_and_cleaned_up() {
    let lab = common::nic_lab('s');
    let sshd = sshd(&lab);
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare-ssh-{}", std::process::id()));
    let loader = format!("ssh://root@{}:{PORT}", lab.client_ip);
    let out = common::compare_on_iface(&lab, &[&loader, &loader])
        .arg("--ssh-config")
        .arg(sshd.dir.join("ssh_config"))
        .args([
            "--closed", "--steer", "cpumap", "-d", "1s", "--warmup", "500ms", "--reps", "1", "-c",
            "4", "--no-tui", "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("rxload over ssh on"), "{err}");
    assert!(
        err.contains("measure") && err.contains("req/s"),
        "live lines came back over ssh: {err}"
    );
    let run: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    let rows = run["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "cpumap for HTTP and ZAP");
    for r in rows {
        assert_eq!(r["loaders"], 2, "{r}");
        assert_eq!(r["error_total"], 0, "{r}");
        assert!(r["req_per_s"].as_f64().unwrap() > 100.0, "{r}");
        assert!(r["p99_us"].as_u64().unwrap() > 0, "{r}");
        let arrived: f64 = r["cpumap_arrived_per_s"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
            .sum();
        assert!(
            arrived > 100.0,
            "the remote load crossed the steered interface: {r}"
        );
    }
    // Each loader's own result beside the merged one, whose counts are their sums.
    for proto in ["http", "zap"] {
        let read = |name: String| -> Value {
            serde_json::from_slice(&std::fs::read(out_dir.join(name)).unwrap()).unwrap()
        };
        let base = format!("rxload-cpumap-{proto}-rep0");
        let (a, b, m) = (
            read(format!("{base}-loader0.json")),
            read(format!("{base}-loader1.json")),
            read(format!("{base}.json")),
        );
        assert_eq!(
            m["requests"].as_u64().unwrap(),
            a["requests"].as_u64().unwrap() + b["requests"].as_u64().unwrap()
        );
    }
    // What was copied to the loader is gone (the loader namespace shares this file system).
    let left: Vec<String> = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("rxsteer-loader"))
        .collect();
    assert!(left.is_empty(), "left on the loader: {left:?}");
    let _ = std::fs::remove_dir_all(&out_dir);
    drop(sshd);
}

#[test]
#[ignore = "needs root: runs ssh loaders into a steered veth lab"]
fn an_unreachable_ssh_loader_is_named_before_anything_changes() {
    let lab = common::nic_lab('s');
    let before = lab.server.ip(&["link", "show", &lab.server_dev]).unwrap();
    let loader = format!("ssh://root@{}:{}", lab.client_ip, PORT + 1);
    let started = Instant::now();
    let out = lab
        .server
        .command(RXSTEER)
        .args([
            "compare",
            "--iface",
            &lab.server_dev,
            "--loader",
            &loader,
            "-d",
            "1s",
            "--reps",
            "1",
            "--no-tui",
        ])
        .args(["--out", "/tmp/rxsteer-never-written"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains(&format!("loader {loader} is not reachable")),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_eq!(
        lab.server.ip(&["link", "show", &lab.server_dev]).unwrap(),
        before,
        "no XDP attached"
    );
    let left = std::path::Path::new("/tmp/rxsteer-never-written").exists();
    let _ = std::fs::remove_dir_all("/tmp/rxsteer-never-written");
    assert!(!left, "a refused start leaves no results folder");
}
