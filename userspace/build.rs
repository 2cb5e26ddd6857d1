//! Locates the eBPF object built by `cargo xtask build-ebpf` so `dataplane` can embed it.
use std::path::PathBuf;

fn main() {
    let obj = match std::env::var_os("RXSTEER_EBPF_OBJ") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../target/ebpf/bpfel-unknown-none/release/rxsteer"),
    };
    println!("cargo:rerun-if-env-changed=RXSTEER_EBPF_OBJ");
    println!("cargo:rerun-if-changed={}", obj.display());
    if !obj.is_file() {
        panic!(
            "the eBPF object is missing ({}): build it with `cargo xtask build` \
             (it installs the eBPF toolchain pieces it needs), then build again",
            obj.display()
        );
    }
    let obj = obj.canonicalize().expect("canonical eBPF object path");
    println!("cargo:rustc-env=RXSTEER_EBPF_OBJ={}", obj.display());
}
