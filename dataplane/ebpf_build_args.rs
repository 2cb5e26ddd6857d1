// How the kernel programs are built, after `cargo +nightly SUBCOMMAND` in `ebpf/` (with
// `--target-dir target/ebpf` and bpf-linker on PATH): included by `cargo xtask build-ebpf`
// and by dataplane/build.rs, which must build the same object.
const EBPF_BUILD_ARGS: [&str; 5] = [
    "--release",
    "--target",
    "bpfel-unknown-none",
    "-Z",
    "build-std=core",
];
