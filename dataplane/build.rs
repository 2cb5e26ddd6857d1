//! Embeds the eBPF object, built from the sources as they are now. Where the eBPF toolchain
//! is installed (nightly with rust-src, bpf-linker from `cargo xtask ensure`), this script
//! builds the kernel programs itself, as aya-build does, whenever a source under `ebpf/` or
//! the shared types in `common/` change, so a plain `cargo build` or `cargo test` after an
//! edit embeds the new program. Without the toolchain, an object already built is embedded
//! only if no source is newer than it (a stale one is refused, naming the command that
//! rebuilds it); with none at all (a fresh clone, `cargo check`, clippy, docs) an empty
//! placeholder is embedded, as aya-template does, and loading the programs says how to build
//! the real one. Either way a hash of the sources is compiled in (`RXSTEER_EBPF_SOURCES`), so
//! every run.json names the program it ran.
use std::{
    path::{Path, PathBuf},
    process::Command,
};

include!("ebpf_sources.rs");
include!("ebpf_build_args.rs");

fn main() {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let root = manifest.parent().expect("dataplane lives in the workspace");
    let sources = source_files(root);
    for f in &sources {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    // New files in the source folders count too.
    println!("cargo:rerun-if-changed={}", root.join("ebpf/src").display());
    println!(
        "cargo:rerun-if-changed={}",
        root.join("common/src").display()
    );
    println!("cargo:rerun-if-env-changed=RXSTEER_EBPF_OBJ");
    println!("cargo:rerun-if-env-changed=RXSTEER_TOOLS_DIR");
    println!(
        "cargo:rustc-env=RXSTEER_EBPF_SOURCES={:016x}",
        sources_hash(root, &sources)
    );
    let given = std::env::var_os("RXSTEER_EBPF_OBJ").map(PathBuf::from);
    let obj = given
        .clone()
        .unwrap_or_else(|| root.join("target/ebpf/bpfel-unknown-none/release/rxsteer"));
    println!("cargo:rerun-if-changed={}", obj.display());
    // An object named by the caller is theirs to keep current; ours is built here if we can.
    if given.is_none() {
        if let Some(linker) = bpf_linker(root) {
            build(root, &linker);
        }
    }
    let obj = if obj.is_file() {
        if given.is_none() {
            refuse_stale(&obj, &sources);
        }
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

/// bpf-linker where `cargo xtask ensure` puts it, if it is there.
fn bpf_linker(root: &Path) -> Option<PathBuf> {
    let tools = std::env::var_os("RXSTEER_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target/tools"));
    let bin = tools.join("bin");
    bin.join("bpf-linker").is_file().then_some(bin)
}

/// The kernel programs built as `cargo xtask build-ebpf` builds them (nightly, build-std),
/// into their own target folder; cargo's own freshness check makes an unchanged build cheap.
fn build(root: &Path, linker_dir: &Path) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![linker_dir.to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    let mut c = Command::new("cargo");
    c.args(["+nightly", "build"])
        .args(EBPF_BUILD_ARGS)
        .arg("--target-dir")
        .arg(root.join("target/ebpf"))
        .current_dir(root.join("ebpf"))
        .env("PATH", std::env::join_paths(dirs).expect("PATH"));
    // What this build script's own cargo set for the host build must not leak into the
    // nested one (toolchain, flags, target folder, jobserver).
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        let kept = k == "CARGO_HOME";
        if !kept && (k.starts_with("CARGO_") || k.starts_with("RUSTC") || k == "RUSTUP_TOOLCHAIN") {
            c.env_remove(k.as_ref());
        }
    }
    c.env_remove("RUSTFLAGS").env_remove("RUSTDOCFLAGS");
    match c.status() {
        Ok(s) if s.success() => {}
        // A compile error in ebpf/ shows above; an object it leaves stale is refused below.
        Ok(s) => println!(
            "cargo:warning=building the eBPF programs from ebpf/ failed ({s}); `cargo xtask \
             build-ebpf` shows the same build"
        ),
        Err(e) => println!(
            "cargo:warning=could not run cargo +nightly to build the eBPF programs ({e}); \
             the object on disk is used if it is current"
        ),
    }
}

/// An object older than any of its sources is not the program the source describes: refused.
fn refuse_stale(obj: &Path, sources: &[PathBuf]) {
    let built = mtime(obj);
    if let Some(newer) = sources.iter().find(|f| mtime(f) > built) {
        panic!(
            "the eBPF object {} is older than {}: it is not the program the source describes; \
             `cargo xtask build-ebpf` (or `cargo xtask ensure`, then any cargo build) rebuilds it",
            obj.display(),
            newer.display()
        );
    }
}

fn mtime(p: &Path) -> std::time::SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(std::time::SystemTime::UNIX_EPOCH)
}
