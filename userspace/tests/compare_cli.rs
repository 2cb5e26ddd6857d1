//! `rxsteer compare` as a user runs it: one short repetition of untuned, RPS and cpumap in the
//! lab, with rxsteer serve driven by rxload (built beside rxsteer by `cargo xtask test`).
//! Needs root.
use serde_json::Value;
use std::process::Command;

const RXSTEER: &str = env!("CARGO_BIN_EXE_rxsteer");

#[test]
fn one_repetition_of_every_mode_measures_and_leaves_nothing() {
    let out_dir = std::env::temp_dir().join(format!("rxsteer-compare-{}", std::process::id()));
    let out = Command::new(RXSTEER)
        .args(["compare", "-d", "1", "--reps", "1", "-c", "8", "--out"])
        .arg(&out_dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let run: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("run.json")).unwrap()).unwrap();
    let rows = run["runs"].as_array().unwrap();
    let modes: Vec<&str> = rows.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["none", "rps", "cpumap"]);
    for r in rows {
        assert!(r["req_per_s"].as_f64().unwrap() > 100.0, "{r}");
    }
    // cpumap moves receive work onto the steering target: more there than untuned put there.
    let target = run["roles"]["server_cpus"][0].as_u64().unwrap() as usize;
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
    assert!(String::from_utf8_lossy(&out.stdout).contains("ratios to untuned, same repetition"));
    // The report is rendered from the stored files.
    let report = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(
        report.contains("| XDP cpumap |") && report.contains("RPS / untuned ranged"),
        "{report}"
    );
    if run["cpus"].as_u64().unwrap() < 4 {
        assert!(
            err.contains("not a gain"),
            "the small-machine caveat is said: {err}"
        );
    }
    // Nothing left: no lab namespace, no tuning state.
    let ns = String::from_utf8_lossy(
        &Command::new("ip")
            .args(["netns", "list"])
            .output()
            .unwrap()
            .stdout,
    )
    .into_owned();
    assert!(!ns.contains("rxs-lab-"), "{ns}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
