// Which files the kernel programs are built from, and their identity: included by build.rs
// (which builds and embeds the object and compiles the hash in) and by the test that checks
// the embedded program is the one the sources describe. One definition for both.
/// Every file the kernel programs are built from: the eBPF crate and the shared types.
fn source_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![
        root.join("ebpf/Cargo.toml"),
        root.join("ebpf/Cargo.lock"),
        root.join("ebpf/rust-toolchain.toml"),
        root.join("common/Cargo.toml"),
    ];
    walk(&root.join("ebpf/src"), &mut files);
    walk(&root.join("common/src"), &mut files);
    files.retain(|f| f.is_file());
    files.sort();
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// FNV-1a over each file's path (from the workspace root) and bytes: the sources' identity.
fn sources_hash(root: &Path, files: &[PathBuf]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        let name = f.strip_prefix(root).unwrap_or(f).to_string_lossy().into_owned();
        for b in name
            .bytes()
            .chain([0])
            .chain(std::fs::read(f).unwrap_or_default())
            .chain([0])
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

