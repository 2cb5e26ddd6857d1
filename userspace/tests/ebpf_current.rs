//! The program that runs is the program in the source: the object this binary embeds is
//! byte for byte the one built from the sources on disk now, and the sources' hash compiled
//! in is theirs. Here, not among dataplane's tests: those run inside the VM guests, which
//! carry the test binaries and no source tree. After an edit under `ebpf/` (or the shared types in `common/`), a plain
//! `cargo test` reruns the build script, which rebuilds the object where the eBPF toolchain
//! is installed and refuses a stale one where it is not; so this holds after any edit.
use std::path::{Path, PathBuf};

include!("../../dataplane/ebpf_sources.rs");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn the_compiled_in_hash_is_the_sources_on_disk() {
    let root = root();
    let files = source_files(&root);
    assert!(
        files.iter().any(|f| f.ends_with("ebpf/src/main.rs")),
        "{files:?}"
    );
    assert_eq!(
        format!("{:016x}", sources_hash(&root, &files)),
        rxsteer_dataplane::EBPF_SOURCES,
        "the binary was built from other sources than ebpf/ and common/ hold now"
    );
}

#[test]
#[ignore = "needs the eBPF object: `cargo xtask build-ebpf` (or any build once `cargo xtask ensure` installed the toolchain)"]
fn the_embedded_object_is_the_one_built_from_these_sources() {
    let root = root();
    let obj = root.join("target/ebpf/bpfel-unknown-none/release/rxsteer");
    let on_disk = std::fs::read(&obj).unwrap_or_else(|e| panic!("{}: {e}", obj.display()));
    assert!(
        rxsteer_dataplane::EBPF_OBJECT == on_disk.as_slice(),
        "the embedded object differs from {}",
        obj.display()
    );
    let built = std::fs::metadata(&obj).unwrap().modified().unwrap();
    for f in source_files(&root) {
        let changed = std::fs::metadata(&f).unwrap().modified().unwrap();
        assert!(
            changed <= built,
            "{} is newer than the object built from it",
            f.display()
        );
    }
}
