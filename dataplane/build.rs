//! Locates the eBPF object built by `cargo xtask build-ebpf` so `dataplane` can embed it. When
//! it is missing (a fresh clone, `cargo check`, clippy, docs), an empty placeholder is embedded
//! instead, as aya-template does: everything builds, and loading the programs says how to
//! build the real object.
use std::path::PathBuf;

fn main() {
    let obj = match std::env::var_os("RXSTEER_EBPF_OBJ") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../target/ebpf/bpfel-unknown-none/release/rxsteer"),
    };
    println!("cargo:rerun-if-env-changed=RXSTEER_EBPF_OBJ");
    println!("cargo:rerun-if-changed={}", obj.display());
    let obj = if obj.is_file() {
        obj
    } else {
        println!(
            "cargo:warning=the eBPF object is missing ({}): embedding an empty placeholder; \
             `cargo xtask build` builds the real one",
            obj.display()
        );
        let placeholder = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"))
            .join("rxsteer-ebpf-placeholder");
        std::fs::write(&placeholder, b"").expect("writing the placeholder object");
        placeholder
    };
    let obj = obj.canonicalize().expect("canonical eBPF object path");
    println!("cargo:rustc-env=RXSTEER_EBPF_OBJ={}", obj.display());
}
