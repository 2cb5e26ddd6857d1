//! The aarch64 build (the GB10 box) works: `cargo xtask test` cross-builds rxsteer and rxload
//! and points RXSTEER_AARCH64_BIN at them; here they run under qemu-user, the aarch64 server
//! answering the aarch64 load generator on loopback over HTTP and ZAP. (The eBPF object is
//! the same bpfel file on both architectures; bpf(2) is not emulated by qemu-user.)
use serde_json::Value;
use std::{
    io::{BufRead, BufReader},
    path::PathBuf,
    process::{Child, Command, Stdio},
};

/// The aarch64 binaries' folder, or None (with the reason printed) outside `cargo xtask test`.
fn aarch64_dir() -> Option<PathBuf> {
    match std::env::var_os("RXSTEER_AARCH64_BIN") {
        Some(d) => Some(PathBuf::from(d)),
        None => {
            eprintln!("skipped: RXSTEER_AARCH64_BIN is not set (cargo xtask test sets it after the cross build)");
            None
        }
    }
}

fn qemu(dir: &std::path::Path, bin: &str) -> Command {
    let mut c = Command::new("qemu-aarch64");
    c.args(["-L", "/usr/aarch64-linux-gnu"]).arg(dir.join(bin));
    c
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

#[test]
fn aarch64_server_answers_aarch64_rxload_under_qemu() {
    let Some(dir) = aarch64_dir() else { return };
    // Really aarch64 executables: ELF machine 183 (EM_AARCH64).
    for bin in ["rxsteer", "rxload"] {
        let head = std::fs::read(dir.join(bin)).unwrap();
        assert_eq!(&head[..4], b"\x7fELF", "{bin}");
        assert_eq!(
            u16::from_le_bytes([head[18], head[19]]),
            183,
            "{bin} is aarch64"
        );
    }
    let mut child = qemu(&dir, "rxsteer")
        .args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--zap",
            "127.0.0.1:0",
            "--threads",
            "1",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .expect("qemu-aarch64 (qemu-user) runs the aarch64 rxsteer");
    let mut ready = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let server = Server(child);
    // "rxsteer serve: HTTP on 127.0.0.1:P, ZAP on 127.0.0.1:Q, ..."
    let addr = |after: &str| {
        let rest = &ready[ready.find(after).unwrap_or_else(|| panic!("{ready}")) + after.len()..];
        rest.split([',', ' ']).next().unwrap().to_string()
    };
    for (url, scenario) in [
        (format!("http://{}", addr("HTTP on ")), "rpc"),
        (format!("zap://{}", addr("ZAP on ")), "rpc"),
        (format!("zap://{}", addr("ZAP on ")), "health"),
    ] {
        let json = std::env::temp_dir().join(format!("rxload-aarch64-{}.json", std::process::id()));
        let out = qemu(&dir, "rxload")
            .arg(&url)
            .args([
                "-c",
                "2",
                "-t",
                "1",
                "-n",
                "200",
                "--warmup",
                "0s",
                "--scenario",
                scenario,
            ])
            .arg("--json")
            .arg(&json)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert!(v["requests"].as_u64().unwrap() >= 200, "{url}: {v}");
        let errors: u64 = v["errors"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(Value::as_u64)
            .sum();
        assert_eq!(errors, 0, "{url}: {v}");
        let _ = std::fs::remove_file(&json);
    }
    drop(server);
}
