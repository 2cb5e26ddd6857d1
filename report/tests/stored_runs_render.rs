//! Every run stored under results/ still renders: report.md and its charts, from a copy of its
//! folder (the stored files are left as they are); and reads through the typed records, every
//! row's arm a known steering mode that agrees with the row's.
use std::path::Path;

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn every_stored_run_renders() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let scratch = std::env::temp_dir().join(format!("rxsteer-render-{}", std::process::id()));
    let mut rendered = 0;
    for e in std::fs::read_dir(&results).unwrap() {
        let dir = e.unwrap().path();
        if !dir.join("run.json").is_file() {
            continue;
        }
        let copy = scratch.join(dir.file_name().unwrap());
        copy_dir(&dir, &copy);
        rxsteer_report::run(&copy).unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()));
        // Through the typed records: every name known (the arms typed as they are read),
        // every arm's mode its row's, and every name written back as it was stored.
        let doc = rxsteer_report::read(&dir).unwrap_or_else(|e| panic!("{e:#}"));
        for (i, r) in doc.runs.iter().enumerate() {
            assert_eq!(
                r.arm().mode,
                r.mode,
                "{}: runs[{i}]: arm and mode",
                dir.display()
            );
        }
        let stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(
            serde_json::to_value(&doc.arms).unwrap(),
            stored.get("arms").cloned().unwrap_or(serde_json::json!([])),
            "{}: the arms as stored",
            dir.display()
        );
        let md = std::fs::read_to_string(copy.join("report.md")).unwrap();
        assert!(md.starts_with("# Receive steering"), "{}", dir.display());
        assert!(copy.join("throughput.svg").is_file());
        rendered += 1;
    }
    std::fs::remove_dir_all(&scratch).unwrap();
    assert!(rendered >= 7, "rendered {rendered} stored runs");
}
