//! `rxsteer compare` (what `cargo xtask run` runs) as a user runs it: one short repetition of
//! untuned, RPS and cpumap for HTTP and ZAP in the lab, with rxsteer serve driven by rxload
//! (built beside rxsteer by `cargo test`). Needs root.
mod common;

use serde_json::Value;
use std::process::Command;

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

/// The lab's namespaces have fixed names: one comparison at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// `rxsteer compare --force ARGS --out DIR`, which must succeed: its run.json, stdout, stderr.
fn compare(args: &[&str], out_dir: &std::path::Path) -> (Value, String, String) {
    let mut out = Command::new(RXSTEER);
    out.args(["compare", "--force"])
        .args(args)
        .arg("--out")
        .arg(out_dir);
    let said = common::succeed(&mut out);
    let run = serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    (run, said.stdout, said.stderr)
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn every_mode_and_protocol_is_measured_stored_and_reported_and_nothing_is_left() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare-{}", std::process::id()));
    // The default: every load a capacity search (short steps here).
    let (run, stdout, err) = compare(
        &[
            "--step",
            "300ms",
            "--step-warmup",
            "200ms",
            "--reps",
            "1",
            "-c",
            "8",
        ],
        &out_dir,
    );
    assert_eq!(run["search"]["step_s"], 0.3, "{}", run["search"]);
    let rows = run["runs"].as_array().unwrap();
    let got: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["mode"].as_str().unwrap(), r["proto"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            ("none", "http"),
            ("none", "zap"),
            ("rps", "http"),
            ("rps", "zap"),
            ("napi-thread", "http"),
            ("napi-thread", "zap"),
            ("busy-poll", "http"),
            ("busy-poll", "zap"),
            ("rps-dissector", "http"),
            ("rps-dissector", "zap"),
            ("cpumap", "http"),
            ("cpumap", "zap"),
            ("reference", "http"),
            ("reference", "zap"),
            ("irq-affinity", "http"),
            ("irq-affinity", "zap"),
            ("none", "http"),
            ("none", "zap")
        ]
    );
    // The last two are untuned with no BPF at all, the baseline of the observer's cost: the
    // kernel showed none of rxsteer's programs while they ran.
    let (rows, no_bpf) = rows.split_at(rows.len() - 2);
    for r in no_bpf {
        assert_eq!(
            (&r["arm"], &r["observer"]),
            (&"none-nobpf".into(), &"off".into())
        );
        assert_eq!(r["attached"]["programs"], serde_json::json!([]), "{r}");
        assert!(r["req_per_s"].as_f64().unwrap() > 100.0, "{r}");
    }
    let target = run["setup"]["roles"]["server_cpus"][0].as_u64().unwrap() as usize;
    let lab = &run["setup"]["lab"];
    assert_eq!(
        (
            &lab["server_tso"],
            &lab["loader_gro"],
            &lab["loader_napi_threaded"]
        ),
        (&false.into(), &true.into(), &true.into()),
        "the lab's offloads are stored: {lab}"
    );
    for r in rows.iter().chain(no_bpf) {
        // Each search climbed past the unloaded step, found a knee the arm sustained, and
        // stored it as the row's figure; what limited it is the step above.
        let s = &r["search"];
        let steps = s["steps"].as_array().unwrap();
        assert!(steps.len() >= 3, "{s}");
        assert_eq!(steps[0]["kind"], "unloaded", "{s}");
        assert!(s["bound_us"].as_u64().unwrap() >= 1000, "{s}");
        let knee = &steps[s["knee"].as_u64().unwrap() as usize];
        assert_eq!(knee["sustained"], true, "{s}");
        assert!(knee["p99_us"].as_u64().unwrap() <= s["bound_us"].as_u64().unwrap());
        assert_eq!(r["req_per_s"], knee["req_per_s"], "{r}");
        assert!(
            matches!(
                s["end"]["kind"].as_str(),
                Some("knee" | "loader-bound" | "ceiling")
            ),
            "{s}"
        );
        assert!(knee["busy"].as_array().unwrap().len() >= 2, "{knee}");
    }
    for r in rows {
        assert!(r["req_per_s"].as_f64().unwrap() > 100.0, "{r}");
        assert_eq!(r["error_total"], 0, "{r}");
        // Untuned and RPS carry no XDP program (the kernel was asked); cpumap steers with one.
        if r["mode"] == "cpumap" {
            assert_eq!(r["xdp_mode"], "drv", "{r}");
            assert_eq!(r["attached"]["xdp"], "xdp", "{r}");
        } else {
            assert_eq!(
                (&r["observer"], &r["attached"]["xdp"]),
                (&"tracepoint".into(), &Value::Null),
                "{r}"
            );
            assert!(r.get("xdp_mode").is_none_or(Value::is_null), "{r}");
        }
        assert_eq!(r["tc"], "tcx", "{r}");
        assert!(r["measured_s"].as_f64().unwrap() > 0.2, "{r}");
        // Every CPU's time adds up to its wall time, 1000 ms/s (each of the 8 parts rounded
        // to 0.1 ms/s), no part negative: nothing counted twice, nothing lost.
        for (cpu, t) in r["time_ms_per_s"].as_array().unwrap().iter().enumerate() {
            let parts: Vec<f64> = t
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_f64().unwrap())
                .collect();
            assert!(parts.iter().all(|&p| p >= 0.0), "CPU {cpu}: {t}");
            let sum: f64 = parts.iter().sum();
            assert!(
                (998.0..=1002.0).contains(&sum),
                "CPU {cpu}: {sum} ms/s: {t}"
            );
        }
        assert!(
            r["verdict"]["text"].as_str().unwrap().contains(" busy"),
            "{r}"
        );
        // The default --observe level counts where the stack ran, not where replies left:
        // that figure is absent, never 0.
        assert_eq!(
            (&r["observe"], &r["tx_packets_per_s"]),
            (&"default".into(), &Value::Null),
            "{r}"
        );
        // tc ingress saw the stack run: on the target wherever the arm moves receive work.
        // irq-affinity moves only an interrupt, which the lab's veth has not: untuned there.
        let stack = r["stack_packets_per_s"].as_array().unwrap();
        let on = |c: usize| stack[c].as_f64().unwrap();
        if r["mode"] != "none" && r["mode"] != "irq-affinity" {
            assert!(on(target) > 100.0, "{r}");
        }
        // The loader's receive of the replies runs on the loader side, not as NET_RX on the
        // server CPU (before the lab's fix: 357 ms/s there, a bpftrace cross-check found).
        if r["mode"] == "none" {
            let net_rx = r["net_rx_ms_per_s"][target].as_f64().unwrap();
            assert!(
                net_rx < 50.0,
                "untuned NET_RX on server CPU {target}: {net_rx} ms/s"
            );
        }
        // cpumap arrivals are counted on the target CPU in cpumap mode, and only there.
        let arrived = r["cpumap_arrived_per_s"][target].as_f64().unwrap();
        if r["mode"] == "cpumap" {
            assert!(arrived > 100.0, "{r}");
        } else {
            assert_eq!(arrived, 0.0, "{r}");
        }
    }
    // cpumap moves receive work onto the steering target: more there than untuned put there.
    let recv = |mode: &str| {
        rows.iter().find(|r| r["mode"] == mode).unwrap()["receive_ms_per_s"][target]
            .as_f64()
            .unwrap()
    };
    assert!(
        recv("cpumap") > recv("none"),
        "cpumap {} vs untuned {} ms/s on CPU {target}",
        recv("cpumap"),
        recv("none")
    );
    assert!(
        stdout.contains("rep 0 ZAP: untuned") && stdout.contains("ratios to untuned"),
        "{stdout}"
    );
    assert!(
        err.contains("measure") && err.contains("req/s"),
        "a line per interval: {err}"
    );
    for f in [
        "report.md",
        "throughput.svg",
        "p99.svg",
        "heatmap-none.svg",
        "heatmap-rps.svg",
        "heatmap-cpumap.svg",
        "rxload-cpumap-zap-rep0-step0.json",
        "rxload-cpumap-zap-rep0-step2.json",
        "latency-rps-http-rep0-step1.hgrm",
        "live-none-zap-rep0-step0.jsonl",
        "samples-cpumap-http-rep0.jsonl",
        "time-cpumap.svg",
        "capacity-http.svg",
        "capacity-zap.svg",
        "busy-http.svg",
        "busy-zap.svg",
    ] {
        assert!(out_dir.join(f).is_file(), "{f} stored");
    }
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        report.contains("### ZAP") && report.contains("| XDP cpumap | HTTP/1.1 |"),
        "{report}"
    );
    // The first screen answers: the capacity tables come before anything else, and the
    // small-machine note is said once.
    let answer = report
        .find("## The answer: capacity at the p99 bound")
        .unwrap();
    assert!(answer < report.find("## ").unwrap() + 1, "{report}");
    assert!(
        report.contains("**HTTP/1.1**, p99 bound") && report.contains("**ZAP**, p99 bound"),
        "{report}"
    );
    assert!(report.contains("## The capacity searches"), "{report}");
    assert!(report.matches("not a gain").count() <= 1, "{report}");
    assert!(
        report.contains("## The observer and what it cost")
            && report.contains("**Observer cost, ZAP:** untuned served"),
        "{report}"
    );
    assert!(run["environment"]["before"]["loadavg"].is_array());
    if run["cpus"].as_u64().unwrap() < 4 {
        assert!(
            err.contains("not a gain"),
            "the small-machine caveat: {err}"
        );
        assert!(report.contains("not a gain"));
    }
    // `rxsteer report DIR` re-renders the same page from the stored files.
    std::fs::remove_file(out_dir.join("report.md")).unwrap();
    let again = Command::new(RXSTEER)
        .arg("report")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(again.status.success());
    assert_eq!(
        std::fs::read_to_string(out_dir.join("report.md")).unwrap(),
        report
    );
    assert_eq!(common::host_state(), before, "the host is left as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// The row of `arm` in a run.json.
fn row_of<'a>(run: &'a Value, arm: &str) -> &'a Value {
    run["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["arm"] == arm)
        .unwrap_or_else(|| panic!("no {arm} row in {run}"))
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn a_load_that_fails_keeps_its_reason_and_the_other_arms_run_on() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare-fail-{}", std::process::id()));
    // The hook sends one load to a port nobody listens on: no request succeeds (rxload's
    // exit 1), as when a server falls over.
    let run_with = |failing: &str, flags: &[&str]| {
        let out_dir = out_dir.join(failing);
        let mut out = Command::new(RXSTEER);
        out.env("RXSTEER_INJECT_LOAD_FAILURE", failing)
            .args([
                "compare", "--force", "--proto", "http", "--reps", "1", "-c", "4",
            ])
            .args(["--no-tui", "--out"])
            .arg(&out_dir)
            .args(flags);
        let said = common::succeed(&mut out);
        let run: Value =
            serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
        let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
        (run, said.stdout, said.stderr, report)
    };

    // Closed loop: RPS's load failed; untuned and cpumap were measured all the same.
    let (run, stdout, err, report) =
        run_with("rps-http", &["--closed", "-d", "1s", "--warmup", "300ms"]);
    let rps = row_of(&run, "rps");
    assert!(rps["req_per_s"].is_null(), "{rps}");
    let why = rps["failed"].as_str().unwrap_or_else(|| panic!("{rps}"));
    assert!(why.contains("measured requests failed (100.00 %"), "{why}");
    assert!(err.contains(&format!("rps-http-rep0: {why}")), "{err}");
    for arm in ["none", "cpumap", "none-nobpf"] {
        let r = row_of(&run, arm);
        assert!(
            r["failed"].is_null() && r["req_per_s"].as_f64().unwrap() > 0.0,
            "{r}"
        );
    }
    // Each observed arm's programs, from the kernel's statistics; the no-BPF arm has none.
    for arm in ["none", "cpumap"] {
        let bpf = &row_of(&run, arm)["bpf"]["measured"];
        assert!(bpf["cpu_share"].as_f64().unwrap() > 0.0, "{arm}: {bpf}");
        assert!(bpf["ns_per_packet"].as_f64().unwrap() > 0.0, "{arm}: {bpf}");
        let names: Vec<&str> = bpf["programs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"tc_ingress"), "{arm}: {names:?}");
        let steered = names.iter().any(|n| n.starts_with("steer"));
        assert_eq!(steered, arm == "cpumap", "{arm}: {names:?}");
    }
    assert!(row_of(&run, "none-nobpf").get("bpf").is_none());
    assert!(
        report.contains("What rxsteer's BPF programs cost in each measured window"),
        "{report}"
    );
    assert!(
        err.contains("observer: "),
        "the live lines say what watching costs: {err}"
    );
    assert!(
        report.contains("## Loads that failed")
            && report.contains(&format!("- RPS/RFS/XPS over HTTP/1.1, repetition 1: {why}")),
        "{report}"
    );
    assert!(
        report.contains("RPS/RFS/XPS: failed in 1 of 1 repetitions"),
        "{report}"
    );
    assert!(stdout.contains("RPS/RFS/XPS failed;"), "{stdout}");

    // A capacity search whose first load (untuned's) fails at the unloaded step: it ends
    // there with the reason, sets no bound, and no winner is claimed without untuned.
    let (run, stdout, _, report) =
        run_with("none-http", &["--step", "300ms", "--step-warmup", "200ms"]);
    let none = row_of(&run, "none");
    let end = &none["search"]["end"];
    assert_eq!(end["kind"], "nothing-sustained", "{none}");
    assert!(
        end["why"]
            .as_str()
            .unwrap()
            .contains("measured requests failed (100.00 %"),
        "{end}"
    );
    assert_eq!(
        none["search"]["steps"].as_array().unwrap().len(),
        1,
        "{none}"
    );
    let rps = row_of(&run, "rps");
    assert!(rps["search"]["knee"].is_u64(), "{rps}");
    assert!(rps["search"]["bound_us"].as_u64().unwrap() > 0, "{rps}");
    assert!(
        stdout.contains("recommendation, HTTP/1.1: no winner claimed"),
        "{stdout}"
    );
    assert!(report.contains("**HTTP/1.1**, p99 bound"), "{report}");
    assert_eq!(common::host_state(), before, "the host is left as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn one_mode_one_protocol_and_bad_flags_named() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare1-{}", std::process::id()));
    let out = Command::new(RXSTEER)
        .args([
            "compare",
            "--force",
            "--closed",
            "--steer",
            "cpumap",
            "--proto",
            "zap",
            "--scenario",
            "rpc",
            "-d",
            "1s",
            "--reps",
            "1",
            "-c",
            "4",
            "--loader-io",
            "uring",
            "--server-io",
            "uring",
            "--no-tui",
            "--out",
        ])
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    let rows = run["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0]["mode"].as_str(), rows[0]["proto"].as_str()),
        (Some("cpumap"), Some("zap"))
    );
    assert_eq!(run["scenario"], "rpc");
    // --loader-io reached rxload itself, and the report says what it costs the latency.
    assert_eq!(run["loader_io"], "uring");
    let load: Value = serde_json::from_slice(
        &std::fs::read(out_dir.join("rxload-cpumap-zap-rep0.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(load["io"], "uring", "{load}");
    assert!(load["requests"].as_u64().unwrap() > 0, "{load}");
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("--loader-io uring"), "{report}");
    // --server-io reached the server (serve refuses to start on an engine it cannot run).
    assert_eq!(run["server_io"], "uring");
    assert!(report.contains("--server-io uring"), "{report}");
    let _ = std::fs::remove_dir_all(&out_dir);

    // Refused before anything starts, one line naming what is wrong. A value the flag parser
    // refuses (a name it does not know, a number out of its range, with the range) exits 2;
    // a flag that does not fit this machine or the other flags exits 1.
    let (parser, checked) = (Some(2), Some(1));
    for (args, needle, code) in [
        (
            vec!["--server-io", "poll"],
            "invalid value 'poll' for '--server-io <SERVER_IO>'",
            parser,
        ),
        (
            vec!["--steer", "fast"],
            "invalid value 'fast' for '--steer",
            parser,
        ),
        (
            vec!["--proto", "quic"],
            "invalid value 'quic' for '--proto",
            parser,
        ),
        (
            vec!["--xdp-mode", "hw"],
            "invalid value 'hw' for '--xdp-mode",
            parser,
        ),
        (
            vec!["--body-size", "70000000"],
            "70000000 is not in 0..=67108864",
            parser,
        ),
        (
            vec!["--loader-io", "epoll"],
            "invalid value 'epoll' for '--loader-io",
            parser,
        ),
        (vec!["-d", "five"], "\"five\" is not a duration", parser),
        (
            vec!["-d", "100ms"],
            "\"100ms\" is outside 200ms..=1h",
            parser,
        ),
        (
            vec!["--reps", "0"],
            "\"0\" is outside 1..=100 (or auto)",
            parser,
        ),
        (vec!["--budget", "0"], "\"0\" is outside 1m..=24h", parser),
        (vec!["--max-reps", "2"], "2 is not in 5..=100", parser),
        (vec!["--confidence", "1"], "\"1\" is outside (0, 1)", parser),
        (vec!["--connections", "0"], "0 is not in 1..=10000", parser),
        (vec!["--rate", "0"], "\"0\" is outside 1..=10000000", parser),
        (vec!["--p99", "0"], "\"0\" is outside 10us..=10s", parser),
        (
            vec!["--rates", "500k..2k"],
            "\"500k..2k\": expected LO..HI requests per second, 1 <= LO < HI <= 10M",
            parser,
        ),
        (vec!["--rates", "5k..5k"], "1 <= LO < HI <= 10M", parser),
        (
            vec!["--closed", "--rate", "5000"],
            "'--closed' cannot be used with '--rate <RATE>'",
            parser,
        ),
        (
            vec!["--loader-io", "uring"],
            "--loader-io uring: rxload's io_uring engine has no open loop",
            checked,
        ),
        (
            vec!["--interleave"],
            "--interleave: a capacity search is a sequence of rates",
            checked,
        ),
        (
            vec!["--window", "1s"],
            "the following required arguments were not provided",
            parser,
        ),
        (
            vec!["--interleave", "--closed", "-d", "2s", "--window", "1s"],
            "the argument '--duration <DURATION>' cannot be used with '--window <WINDOW>'",
            parser,
        ),
        (
            vec!["--interleave", "--closed", "--window", "50ms"],
            "\"50ms\" is outside 200ms..=1h",
            parser,
        ),
        (vec!["--loader", "ftp://x"], "--loader \"ftp://x\"", parser),
        (
            vec!["--loader", "external"],
            "--loader, --target-ip and --ssh-config go with --iface",
            checked,
        ),
        (
            vec!["--iface", "rxnosuch0"],
            "\"rxnosuch0\" does not exist",
            checked,
        ),
        (
            vec!["--rx-cpu", "4096"],
            "CPU 4096 in --rx-cpu is not online",
            checked,
        ),
    ] {
        let out = Command::new(RXSTEER)
            .arg("compare")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), code, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// One closed-loop load of 1 s after 500 ms of warm-up, one repetition, 4 connections.
const ONE_SHORT_LOAD: [&str; 8] = ["-d", "1s", "--warmup", "500ms", "--reps", "1", "-c", "4"];

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn drv_and_skb_mode_side_by_side_on_an_upload() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare2-{}", std::process::id()));
    let (run, _, _) = compare(
        &[
            &[
                "--closed",
                "--xdp-mode",
                "both",
                "--scenario",
                "upload",
                "--proto",
                "http",
            ][..],
            &ONE_SHORT_LOAD,
        ]
        .concat(),
        &out_dir,
    );
    let rows = run["runs"].as_array().unwrap();
    let got: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| {
            let mode = r["xdp_mode"].as_str().unwrap_or("-");
            (r["arm"].as_str().unwrap(), mode)
        })
        .collect();
    // The tunings carry no XDP program, so they run once; cpumap runs in each XDP mode.
    assert_eq!(
        got,
        [
            ("none", "-"),
            ("rps", "-"),
            ("napi-thread", "-"),
            ("busy-poll", "-"),
            ("rps-dissector", "-"),
            ("cpumap-drv", "drv"),
            ("reference", "-"),
            ("irq-affinity", "-"),
            ("cpumap-skb", "skb"),
            ("none-nobpf", "-")
        ]
    );
    let target = run["setup"]["roles"]["server_cpus"][0].as_u64().unwrap() as usize;
    for r in rows {
        assert_eq!(r["error_total"], 0, "{r}");
        assert!(r["req_per_s"].as_f64().unwrap() > 50.0, "{r}");
        // In skb mode the kernel skips GRO (netif_elide_gro): XDP and the stack see the same
        // skbs, one per frame.
        if r["xdp_mode"] == "skb" {
            let sum = |k: &str| -> f64 {
                r[k].as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap())
                    .sum()
            };
            let (xdp, stack) = (sum("packets_per_s"), sum("stack_packets_per_s"));
            assert!((xdp - stack).abs() <= 0.02 * stack, "{xdp} vs {stack}: {r}");
        }
        if r["mode"] == "cpumap" {
            assert!(
                r["cpumap_arrived_per_s"][target].as_f64().unwrap() > 10.0,
                "{r}"
            );
        }
    }
    for f in [
        "heatmap-cpumap-skb.svg",
        "time-rps.svg",
        "rxload-none-http-rep0.json",
        "rxload-none-nobpf-http-rep0.json",
    ] {
        assert!(out_dir.join(f).is_file(), "{f} stored");
    }
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for needle in [
        "| XDP cpumap (skb) / untuned |",
        "**skb (generic)**",
        "**Observer cost, HTTP/1.1:** untuned served",
        "the kernel skips GRO, so every frame reaches the stack as its own skb",
        "## What limited each load",
        "**XDP cpumap (skb) over HTTP/1.1.**",
    ] {
        assert!(report.contains(needle), "{needle}: {report}");
    }
    assert_eq!(common::host_state(), before, "the host is left as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// --interleave: one server, one load per protocol and repetition, the arms switched in place
/// under it. Each arm's window is cut from the stored live lines (its requests are theirs),
/// every switch is timed and the kernel checked after it (cpumap's program on the interface
/// only in its own window), busy poll (which restarts the server) is left out and said, and
/// the host is left as found.
#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn interleaved_arms_switch_under_one_load_each_window_cut_from_its_live_lines() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare-il-{}", std::process::id()));
    let (run, _, err) = compare(
        &[
            "--interleave",
            "--closed",
            "--steer",
            "none,rps,cpumap,busy-poll",
            "--window",
            "500ms",
            "--settle",
            "500ms",
            "--warmup",
            "500ms",
            "--reps",
            "2",
            "-c",
            "4",
        ],
        &out_dir,
    );
    assert!(err.contains("--steer busy-poll: not run here"), "{err}");
    assert!(err.contains("without --interleave"), "{err}");
    assert_eq!(run["not_run"][0]["arm"], "busy-poll", "{}", run["not_run"]);
    assert_eq!(
        run["interleaved"]["window_s"], 0.5,
        "{}",
        run["interleaved"]
    );
    let rows = run["runs"].as_array().unwrap();
    // 4 arms (untuned with no BPF among them) x 2 protocols x 2 repetitions, rotated.
    assert_eq!(rows.len(), 16, "{rows:?}");
    let arms_of = |rep: u64, proto: &str| -> Vec<&str> {
        rows.iter()
            .filter(|r| r["rep"] == rep && r["proto"] == proto)
            .map(|r| r["arm"].as_str().unwrap())
            .collect()
    };
    assert_eq!(arms_of(0, "http"), ["none", "rps", "cpumap", "none-nobpf"]);
    assert_eq!(arms_of(1, "zap"), ["rps", "cpumap", "none-nobpf", "none"]);
    for r in rows {
        assert!(r["failed"].is_null(), "{r}");
        assert_eq!(r["error_total"], 0, "{r}");
        assert!(r["switch_ms"].as_f64().unwrap() > 0.0, "{r}");
        // The window's requests are exactly those of its live lines in the stored file.
        let [from, to] = [0, 1].map(|i| r["window_at"][i].as_f64().unwrap());
        assert!(to - from >= 0.4 && to - from <= 0.8, "{r}");
        let live = std::fs::read_to_string(out_dir.join(format!(
            "live-cycle-{}-rep{}.jsonl",
            r["proto"].as_str().unwrap(),
            r["rep"]
        )))
        .unwrap();
        let mut prev = None;
        let mut counted = 0.0;
        for l in live
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
        {
            let t = l["t_s"].as_f64().unwrap();
            if t > from + 1e-9 && t <= to + 1e-9 {
                counted += l["req_per_s"].as_f64().unwrap() * (t - prev.unwrap_or(from));
            }
            prev = Some(t);
        }
        let requests = r["requests"].as_f64().unwrap();
        assert!(requests > 50.0, "{r}");
        assert!(
            (requests - counted).abs() <= 1.0,
            "{requests} vs {counted}: {r}"
        );
        // What the kernel showed after the switch: the XDP program in cpumap's window only.
        let xdp = &r["attached"]["xdp"];
        assert_eq!(xdp.is_null(), r["mode"] != "cpumap", "{r}");
        assert!(r["receive_ms_per_s"].as_array().unwrap().len() >= 2, "{r}");
    }
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    for needle in [
        "**interleaved**: one server for the whole run",
        "a switch (the previous arm taken down, this one put in place and checked) took",
        "XDP cpumap",
    ] {
        assert!(report.contains(needle), "{needle}: {report}");
    }
    assert_eq!(common::host_state(), before, "the host is left as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Waits (at most 30 s) until a load's live file shows its measured window.
fn wait_measuring(live: &std::path::Path, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !std::fs::read_to_string(live).is_ok_and(|l| l.contains("measure")) {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: the load never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Direct children of `pid` (from /proc/*/stat).
fn children(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                // pid (comm) state ppid ...: comm may hold spaces, so split after the ')'.
                s.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(pid)
            })
        })
        .collect()
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn a_killed_comparison_takes_its_children_down_and_the_next_start_cleans_up() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare-kill-{}", std::process::id()));
    let mut compare = Command::new(RXSTEER)
        .args([
            "compare", "--force", "--closed", "--steer", "cpumap", "--proto", "http", "-d", "60s",
            "--reps", "1", "--no-tui", "--out",
        ])
        .arg(&out_dir)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_measuring(&out_dir.join("live-cpumap-http-rep0.jsonl"), "SIGKILL");
    let kids = children(compare.id());
    assert!(kids.len() >= 3, "attach, serve and rxload: {kids:?}");
    compare.kill().unwrap();
    compare.wait().unwrap();
    // Each child is told by the kernel (PR_SET_PDEATHSIG) and ends; attach reverts on the way.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while kids
        .iter()
        .any(|p| std::path::Path::new(&format!("/proc/{p}")).exists())
    {
        assert!(
            std::time::Instant::now() < deadline,
            "orphans still running: {kids:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The killed run's lab namespaces are still there; the next start removes them and says so.
    let mut next = Command::new(RXSTEER);
    next.args([
        "compare", "--force", "--closed", "--steer", "none", "--proto", "http", "-d", "300ms",
        "--warmup", "0s", "--reps", "1", "--no-tui", "--out",
    ])
    .arg(out_dir.join("next"));
    let err = common::succeed(&mut next).stderr;
    assert!(err.contains("left by an earlier run"), "{err}");
    assert_eq!(common::host_state(), before, "the host is as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn a_comparison_stopped_midway_still_writes_what_it_measured_marked_incomplete() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare-part-{}", std::process::id()));
    let mut compare = Command::new(RXSTEER)
        .args([
            "compare", "--force", "--closed", "--proto", "http", "-d", "1s", "--warmup", "300ms",
            "-c", "4", "--no-tui", "--out",
        ])
        .arg(&out_dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The second repetition runs RPS first (the order rotates): the first is whole by then.
    let live = out_dir.join("live-rps-http-rep1.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while !std::fs::read_to_string(&live).is_ok_and(|l| l.contains("measure")) {
        assert!(std::time::Instant::now() < deadline, "never reached rep 2");
        assert!(compare.try_wait().unwrap().is_none(), "exited early");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    unsafe { libc::kill(compare.id() as i32, libc::SIGTERM) };
    let status = compare.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut compare.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.contains("the intervals measured so far are in"),
        "{err}"
    );
    let run: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    assert!(
        run["incomplete"]
            .as_str()
            .is_some_and(|w| w.contains("stopped before the end")),
        "{}",
        run["incomplete"]
    );
    assert_eq!(run["sequential"]["min"], 5, "{}", run["sequential"]);
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(report.contains("the run ended early"), "{report}");
    assert!(report.contains("too few repetitions to decide"), "{report}");
    assert_eq!(common::host_state(), before, "the host is as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// SIGTERM in the middle of an interleaved cycle (an arm switched in under the running load):
/// the arm is taken down, the load and the one server stop, the lab goes, and what the whole
/// cycles measured is still written, marked incomplete.
#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn an_interleaved_run_stopped_mid_cycle_is_restored_and_keeps_its_windows() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir =
        std::env::temp_dir().join(format!("rxsteer-compare-ilstop-{}", std::process::id()));
    let mut compare = Command::new(RXSTEER)
        .args([
            "compare",
            "--force",
            "--interleave",
            "--closed",
            "--proto",
            "http",
            "--steer",
            "none,cpumap",
            "--window",
            "500ms",
            "--settle",
            "300ms",
            "-c",
            "4",
            "--no-tui",
            "--out",
        ])
        .arg(&out_dir)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The second cycle's load: the first cycle's windows are all in by then.
    wait_measuring(
        &out_dir.join("live-cycle-http-rep1.jsonl"),
        "the second cycle",
    );
    std::thread::sleep(std::time::Duration::from_millis(1200));
    unsafe { libc::kill(compare.id() as i32, libc::SIGTERM) };
    let status = compare.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut compare.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    let run: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    assert!(run["incomplete"].is_string(), "{}", run["incomplete"]);
    let first: Vec<&Value> = run["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["rep"] == 0)
        .collect();
    assert_eq!(
        first.len(),
        3,
        "untuned, cpumap and no BPF of the first cycle: {first:?}"
    );
    assert_eq!(common::host_state(), before, "the host is as found");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn a_hang_up_ends_the_comparison_restored_with_nothing_left() {
    // Closing the terminal (SIGHUP from tmux or ssh) or SIGQUIT is handled like Ctrl-C: the
    // load, the server and the mode stop, the lab goes, and the host is as it was found.
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for (signal, name) in [(libc::SIGHUP, "SIGHUP"), (libc::SIGQUIT, "SIGQUIT")] {
        let before = common::host_state();
        let out_dir =
            std::env::temp_dir().join(format!("rxsteer-compare-{name}-{}", std::process::id()));
        let mut compare = Command::new(RXSTEER)
            .args([
                "compare", "--force", "--closed", "--steer", "rps", "--proto", "http", "-d", "60s",
                "--reps", "1", "--no-tui", "--out",
            ])
            .arg(&out_dir)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        wait_measuring(&out_dir.join("live-rps-http-rep0.jsonl"), name);
        unsafe { libc::kill(compare.id() as i32, signal) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let status = loop {
            if let Some(s) = compare.try_wait().unwrap() {
                break s;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: still running"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut compare.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("everything was restored"), "{name}: {err}");
        assert_eq!(common::host_state(), before, "{name}: the host is as found");
        let _ = std::fs::remove_dir_all(&out_dir);
    }
}

#[test]
#[ignore = "needs root: builds the veth lab and steers it"]
fn the_tc_witnesses_on_a_clsact_qdisc_keep_their_per_cpu_counts() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = common::host_state();
    let out_dir = std::env::temp_dir().join(format!("rxsteer-clsact-{}", std::process::id()));
    let (run, _, _) = compare(
        &[
            &[
                "--closed",
                "--steer",
                "rps",
                "--proto",
                "http",
                "--tc",
                "clsact",
                "--observe",
                "full",
            ][..],
            &ONE_SHORT_LOAD,
        ]
        .concat(),
        &out_dir,
    );
    let rows = run["runs"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{run}");
    let r = &rows[0];
    assert_eq!(r["tc"], "clsact", "{r}");
    let target = run["setup"]["roles"]["server_cpus"][0].as_u64().unwrap() as usize;
    for k in ["stack_packets_per_s", "tx_packets_per_s"] {
        let v = r[k].as_array().unwrap_or_else(|| panic!("{k} stored: {r}"));
        assert!(v.iter().any(|x| x.as_f64().unwrap() > 0.0), "{k}: {r}");
    }
    assert!(
        r["stack_packets_per_s"][target].as_f64().unwrap() > 100.0,
        "the RPS CPU: {r}"
    );
    assert_eq!(
        common::host_state(),
        before,
        "the host is left as found (no qdisc)"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}
