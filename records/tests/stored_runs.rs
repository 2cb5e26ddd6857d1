//! Every run stored under results/ reads through the types, whatever version wrote it, and
//! its samples and rxload results do too.
use rxsteer_records::{RunDoc, SampleLine};
use std::path::Path;

#[test]
fn every_stored_run_and_its_samples_read() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results");
    let mut runs = 0;
    for entry in std::fs::read_dir(&results).unwrap() {
        let dir = entry.unwrap().path();
        let path = dir.join("run.json");
        if !path.is_file() {
            continue;
        }
        let doc: RunDoc = serde_json::from_slice(&std::fs::read(&path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!doc.runs.is_empty(), "{}", path.display());
        assert!(
            doc.roles().is_some() || doc.is_iface(),
            "{}",
            path.display()
        );
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with("rxload-") && name.ends_with(".json") {
                serde_json::from_slice::<rxsteer_records::LoadResult>(&std::fs::read(&f).unwrap())
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
            }
            if name.starts_with("samples-") && name.ends_with(".jsonl") {
                for (i, line) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
                    serde_json::from_str::<SampleLine>(line)
                        .unwrap_or_else(|e| panic!("{name}:{}: {e}", i + 1));
                }
            }
        }
        runs += 1;
    }
    assert!(runs >= 4, "found {runs} stored runs");
}
