//! `cargo xtask fuzz`: the cargo-fuzz (libFuzzer) targets in `fuzz/`, each run for a bounded
//! time or number of executions from a corpus seeded with the golden vectors, real requests
//! and responses, and real frames. libFuzzer's malloc limit makes an unbounded allocation a
//! failure like a crash. Each target's executions, time, peak RSS and verdict are printed
//! (and stored under results/ with --store); a crash leaves its input in target/fuzz/artifacts.
use anyhow::{bail, Context, Result};
use std::{fmt::Write as _, process::Command};

use crate::{cmd, ensure::Paths};
use rxsteer_common::frames::{arp, Ip, Spec};

const CARGO_FUZZ_VERSION: &str = "0.13.1";
pub const TARGETS: [&str; 9] = [
    "zaphttp_frame",
    "native_record",
    "http1_request",
    "rxload_response",
    "rxload_http_reader",
    "rxload_zap_reader",
    "packet",
    "run_json",
    "genl_reply",
];

#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    /// Seconds per target (libFuzzer -max_total_time).
    #[arg(long, default_value = "30")]
    pub seconds: u64,
    /// Stop each target after this many executions instead (libFuzzer -runs).
    #[arg(long)]
    pub runs: Option<u64>,
    /// Store the figures under results/<date>-fuzz/.
    #[arg(long)]
    pub store: bool,
    /// Targets to run (default: all).
    pub targets: Vec<String>,
}

fn ensure_cargo_fuzz(paths: &Paths) -> Result<std::path::PathBuf> {
    let bin = paths.tools.join("bin/cargo-fuzz");
    let version = Command::new(&bin)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !version.contains(CARGO_FUZZ_VERSION) {
        eprintln!(
            "xtask fuzz: installing cargo-fuzz {CARGO_FUZZ_VERSION} into {}",
            paths.tools.display()
        );
        cmd::run(
            "fuzz (cargo install cargo-fuzz)",
            cmd::cargo(None)
                .args([
                    "install",
                    "cargo-fuzz",
                    "--locked",
                    "--version",
                    CARGO_FUZZ_VERSION,
                    "--root",
                ])
                .arg(&paths.tools),
        )?;
    }
    Ok(bin)
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(char::is_ascii_hexdigit).collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Seeds for one target: what that decoder meets in real use.
fn seeds(paths: &Paths, target: &str) -> Result<Vec<Vec<u8>>> {
    let golden = paths.root.join("wire/tests/golden");
    let wire = |name: &str| -> Result<Vec<u8>> {
        let p = golden.join(format!("{name}.wire.hex"));
        Ok(hex(
            &std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?
        ))
    };
    Ok(match target {
        "zaphttp_frame" => ["req_get_health_host", "req_post_rpc_json", "req_zapload_rpc", "upstream_v03_goldenRequest", "upstream_v03_goldenEmptyRequest"]
            .iter()
            .map(|n| wire(n))
            .collect::<Result<_>>()?,
        // The native records travel without the length prefix.
        "native_record" => vec![wire("native_rpc_req")?[4..].to_vec(), wire("native_rpc_resp")?[4..].to_vec()],
        "http1_request" => vec![
            b"GET /health HTTP/1.1\r\nHost: 10.0.0.1:8080\r\n\r\n".to_vec(),
            b"POST /rpc HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 103\r\n\r\n{\"method\":\"eth_getBalance\",\"account\":\"0x00112233445566778899aabbccddeeff00112233\",\"block\":68943,\"id\":1}".to_vec(),
            b"POST /echo HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcdGET /health HTTP/1.1\r\n\r\n".to_vec(),
            b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec(),
        ],
        "rxload_response" => vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 130\r\n\r\n{\"id\":1,\"balance\":1000000000000000000,\"nonce\":42,\"blockHash\":\"0x00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\"}".to_vec(),
            wire("resp_200_ok")?,
            wire("resp_zapload_rpc")?,
            wire("upstream_v03_goldenTrailerResponse")?,
        ],
        // The reader targets take a read-size seed and a check selector before the stream.
        "rxload_http_reader" => vec![
            [&b"\x05\x01"[..], b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"].concat(),
            [&b"\x09\x00"[..], b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 500 Oops\r\nContent-Length: 1\r\n\r\nx"].concat(),
        ],
        "rxload_zap_reader" => {
            // What both servers answer a 0-byte echo with: every optional slot null.
            let mut null = Vec::new();
            rxsteer_wire::zaphttp::encode_response(&mut null, 200, b"", &[], b"", &[]);
            vec![
                [&b"\x03\x00"[..], &null, &null].concat(),
                [&b"\x11\x01"[..], &wire("resp_200_ok")?, &wire("upstream_v03_goldenTrailerResponse")?].concat(),
                [&b"\x07\x03"[..], &wire("resp_zapload_rpc")?].concat(),
            ]
        }
        "packet" => [
            Spec::tcp(Ip::V4, 40000, 8080).build(),
            Spec::tcp(Ip::V6, 40000, 9653).data(82).build(),
            Spec::tcp(Ip::V4, 40000, 8080).data(64).build().with_vlan(2),
            Spec::udp(Ip::V4, 5353, 53).build(),
            arp(),
        ]
        .iter()
        .map(|f| f.as_bytes().to_vec())
        .collect(),
        // Stored comparisons as the report reads them: an early lab run and a later one.
        "run_json" => ["results/2026-11-30-vm-lab-compare/run.json", "results/2026-12-01-vm-compare-052345/run.json"]
            .iter()
            .map(|p| std::fs::read(paths.root.join(p)).with_context(|| format!("reading {p}")))
            .collect::<Result<_>>()?,
        "genl_reply" => vec![genl_reply_seed()],
        other => bail!("unknown fuzz target {other:?} (targets: {})", TARGETS.join(", ")),
    })
}

/// A netdev dump's reply as the kernel lays it out: one message (netlink and genl headers, a
/// u32 and a nested u64 attribute), then the done message.
fn genl_reply_seed() -> Vec<u8> {
    let mut attrs = Vec::new();
    attrs.extend_from_slice(&8u16.to_ne_bytes());
    attrs.extend_from_slice(&1u16.to_ne_bytes());
    attrs.extend_from_slice(&7u32.to_ne_bytes());
    attrs.extend_from_slice(&12u16.to_ne_bytes());
    attrs.extend_from_slice(&(2u16 | 0x8000).to_ne_bytes());
    attrs.extend_from_slice(&9u64.to_ne_bytes());
    let mut data = Vec::new();
    data.extend_from_slice(&((16 + 4 + attrs.len()) as u32).to_ne_bytes());
    data.extend_from_slice(&0x20u16.to_ne_bytes());
    data.extend_from_slice(&[0; 10]);
    data.extend_from_slice(&[1, 1, 0, 0]);
    data.extend_from_slice(&attrs);
    data.extend_from_slice(&20u32.to_ne_bytes());
    data.extend_from_slice(&3u16.to_ne_bytes());
    data.extend_from_slice(&[0; 10]);
    data.extend_from_slice(&0i32.to_ne_bytes());
    data
}

/// One target's outcome, from libFuzzer's final statistics and its last status line.
struct Outcome {
    target: String,
    ok: bool,
    runs: u64,
    seconds: f64,
    peak_rss_mb: u64,
    /// Coverage reached: edges (`cov`) and features (`ft`).
    cov: u64,
    ft: u64,
    /// The corpus at the end: inputs and size as libFuzzer prints it (`287/13Kb`).
    corpus: String,
    /// Crash, timeout, leak or out-of-memory inputs left in the artifacts folder.
    artifacts: Vec<String>,
}

impl Outcome {
    fn line(&self) -> String {
        format!(
            "{:<16} executions {:>12}  seconds {:>6.0}  peak_rss_mb {:>5}  cov {:>5}  ft {:>6}  corpus {:>10}  {}",
            self.target,
            self.runs,
            self.seconds,
            self.peak_rss_mb,
            self.cov,
            self.ft,
            self.corpus,
            match (self.ok, self.artifacts.is_empty()) {
                (true, true) => "ok".to_string(),
                (true, false) => format!("ok, but artifacts: {}", self.artifacts.join(" ")),
                (false, _) => format!("FAILED, artifacts: {}", self.artifacts.join(" ")),
            }
        )
    }
}

/// `cov`, `ft` and `corp` from libFuzzer's last status line (`#N DONE cov: 512 ft: 1809
/// corp: 287/13Kb ...`).
fn coverage(log: &str) -> (u64, u64, String) {
    let Some(last) = log
        .lines()
        .rev()
        .find(|l| l.starts_with('#') && l.contains(" cov: "))
    else {
        return (0, 0, "-".into());
    };
    let after = |key: &str| {
        last.split_whitespace()
            .skip_while(|w| *w != key)
            .nth(1)
            .unwrap_or("")
            .to_string()
    };
    (
        after("cov:").parse().unwrap_or(0),
        after("ft:").parse().unwrap_or(0),
        after("corp:"),
    )
}

fn stat(log: &str, key: &str) -> u64 {
    log.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim_start_matches(':').trim().parse().ok())
        .unwrap_or(0)
}

pub fn run(paths: &Paths, args: &FuzzArgs) -> Result<()> {
    // The commit the targets are built from, read before they are: what the record names.
    let commit = cmd::output(
        "fuzz (git rev-parse)",
        Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(&paths.root),
    )
    .unwrap_or_else(|_| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(&paths.root)
        .output()
        .is_ok_and(|o| !o.stdout.is_empty());
    let cargo_fuzz = ensure_cargo_fuzz(paths)?;
    let targets: Vec<String> = if args.targets.is_empty() {
        TARGETS.iter().map(|t| t.to_string()).collect()
    } else {
        args.targets.clone()
    };
    let work = paths.root.join("target/fuzz");
    let mut outcomes = Vec::new();
    for t in &targets {
        outcomes.push(fuzz_one(paths, args, &cargo_fuzz, &work, t)?);
    }
    let mut report = String::new();
    for o in &outcomes {
        writeln!(report, "{}", o.line())?;
    }
    let failed = outcomes.iter().filter(|o| !o.ok).count();
    if args.store {
        store(paths, args, &commit, dirty, &report)?;
    }
    print!("{report}");
    println!("fuzz: {} passed, {failed} failed", outcomes.len() - failed);
    if failed > 0 {
        bail!("{failed} fuzz target(s) failed");
    }
    Ok(())
}

/// One target: its corpus seeded, cargo fuzz run within the limit, what it found.
fn fuzz_one(
    paths: &Paths,
    args: &FuzzArgs,
    cargo_fuzz: &std::path::Path,
    work: &std::path::Path,
    t: &str,
) -> Result<Outcome> {
    let corpus = work.join("corpus").join(t);
    std::fs::create_dir_all(&corpus)?;
    for (i, s) in seeds(paths, t)?.iter().enumerate() {
        std::fs::write(corpus.join(format!("seed-{i}")), s)?;
    }
    let artifacts = work.join("artifacts").join(t);
    std::fs::create_dir_all(&artifacts)?;
    let limit = match args.runs {
        Some(n) => format!("-runs={n}"),
        None => format!("-max_total_time={}", args.seconds),
    };
    let started = std::time::Instant::now();
    let out = Command::new(cargo_fuzz)
        .env("RUSTUP_TOOLCHAIN", crate::ensure::EBPF_TOOLCHAIN)
        .env_remove("CARGO_TARGET_DIR")
        .args(["fuzz", "run", "--fuzz-dir"])
        .arg(paths.root.join("fuzz"))
        .arg("--target-dir")
        .arg(work)
        .arg(t)
        .arg(&corpus)
        .arg("--")
        .arg(&limit)
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .args([
            "-print_final_stats=1",
            "-malloc_limit_mb=256",
            "-rss_limit_mb=1024",
            "-timeout=10",
        ])
        .current_dir(&paths.root)
        .output()
        .context("running cargo fuzz")?;
    let log = String::from_utf8_lossy(&out.stderr);
    let (cov, ft, corpus) = coverage(&log);
    let mut left: Vec<String> = std::fs::read_dir(&artifacts)?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let o = Outcome {
        target: t.to_string(),
        ok: out.status.success(),
        runs: stat(&log, "stat::number_of_executed_units"),
        seconds: started.elapsed().as_secs_f64(),
        peak_rss_mb: stat(&log, "stat::peak_rss_mb"),
        cov,
        ft,
        corpus,
        artifacts: left,
    };
    if !o.ok {
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        eprintln!("{}", tail.into_iter().rev().collect::<Vec<_>>().join("\n"));
    }
    // The same one line per target in every run, CI's short ones included.
    eprintln!("fuzz {}", o.line());
    Ok(o)
}

/// The run's lines under results/, with the commit and the kernel they came from.
fn store(paths: &Paths, args: &FuzzArgs, commit: &str, dirty: bool, report: &str) -> Result<()> {
    let dir = crate::bench::run_dir(paths, "fuzz")?;
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let limit = args
        .runs
        .map_or(format!("--seconds {}", args.seconds), |n| {
            format!("--runs {n}")
        });
    let head = format!(
        "# cargo xtask fuzz {limit} (cargo-fuzz {CARGO_FUZZ_VERSION}, libFuzzer with ASan, \
         -malloc_limit_mb=256), commit {}{}, kernel {}\n\
         # cov: edges covered, ft: features, corpus: inputs/bytes at the end; artifacts: \
         crash, timeout, leak or OOM inputs (none means none were written)\n",
        commit.trim(),
        if dirty {
            " (with uncommitted changes)"
        } else {
            ""
        },
        kernel.trim()
    );
    std::fs::write(dir.join("output.txt"), head + report)?;
    eprintln!("xtask fuzz: stored in {}", dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_comes_from_the_last_status_line() {
        let log = "INFO: seed corpus: files: 5\n\
                   #2\tINITED cov: 40 ft: 41 corp: 5/120b exec/s: 0 rss: 30Mb\n\
                   #1000\tNEW    cov: 77 ft: 90 corp: 9/300b lim: 4 exec/s: 0 rss: 31Mb\n\
                   #20000\tDONE   cov: 512 ft: 1809 corp: 287/13Kb lim: 4096 exec/s: 95238 rss: 554Mb\n\
                   stat::number_of_executed_units: 20000\n";
        assert_eq!(coverage(log), (512, 1809, "287/13Kb".to_string()));
        assert_eq!(stat(log, "stat::number_of_executed_units"), 20000);
        assert_eq!(coverage("no status"), (0, 0, "-".to_string()));
    }
}
