//! The aarch64 build (the GB10 box) works: `cargo xtask test` cross-builds rxsteer and rxload
//! and points RXSTEER_AARCH64_BIN at them; here they run under qemu-user, the aarch64 server
//! answering the aarch64 load generator on loopback over HTTP and ZAP. (The eBPF object is
//! the same bpfel file on both architectures; bpf(2) is not emulated by qemu-user.)
mod served;

use serde_json::Value;
use served::Served;
use std::{path::PathBuf, process::Command};

/// The aarch64 binaries' folder. Run without it (the test is ignored unless asked for), it
/// fails: a missing build is not a pass.
fn aarch64_dir() -> PathBuf {
    PathBuf::from(std::env::var_os("RXSTEER_AARCH64_BIN").expect(
        "RXSTEER_AARCH64_BIN is not set: cargo xtask test sets it after the aarch64 cross build",
    ))
}

fn qemu(dir: &std::path::Path, bin: &str) -> Command {
    let mut c = Command::new("qemu-aarch64");
    c.args(["-L", "/usr/aarch64-linux-gnu"]).arg(dir.join(bin));
    c
}

#[test]
#[ignore = "needs the aarch64 build and qemu-user: cargo xtask test provides both (RXSTEER_AARCH64_BIN)"]
fn aarch64_server_answers_aarch64_rxload_under_qemu() {
    let dir = aarch64_dir();
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
    for bin in ["rxsteer", "rxload"] {
        let out = qemu(&dir, bin).arg("--version").output().unwrap();
        let v = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            v.trim(),
            format!("{bin} {}", env!("CARGO_PKG_VERSION")),
            "{bin} --version"
        );
    }
    // No bpf(2) under qemu-user: said plainly, not as a bare errno.
    let out = qemu(&dir, "rxsteer")
        .args(["top", "--iface", "lo", "--json", "--count", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the bpf(2) system call is not available here (ENOSYS)"),
        "{err}"
    );
    let mut serve = qemu(&dir, "rxsteer");
    serve.args(served::SERVE_ARGS);
    let server = Served::spawn(serve);
    for (url, scenario) in [
        (format!("http://{}", server.http), "rpc"),
        (format!("zap://{}", server.zap), "rpc"),
        (format!("zap://{}", server.zap), "health"),
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
