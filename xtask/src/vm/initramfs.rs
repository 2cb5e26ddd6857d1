//! The guest's whole root filesystem as an initramfs the project writes itself (cpio, newc
//! format, as the kernel's early-userspace buffer format describes): busybox and the few
//! Debian tools rxsteer calls (ip, tc, ethtool, taskset) with their libraries, all of the
//! guest's architecture and from Debian's packages; the kernel's modules; rxsteer, rxload and
//! the init script. Nothing is downloaded from anywhere else.
use anyhow::{Context, Result};
use std::{
    collections::BTreeSet,
    io::Write,
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::Path,
};

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

/// A newc archive being written.
pub struct Cpio<W: Write> {
    out: W,
    inode: u32,
    /// Paths written, so a directory is written once and before what it holds.
    seen: BTreeSet<String>,
}

impl<W: Write> Cpio<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            inode: 1,
            seen: BTreeSet::new(),
        }
    }

    fn entry(&mut self, name: &str, mode: u32, data: &[u8]) -> Result<()> {
        let nlink = if mode & S_IFDIR != 0 { 2 } else { 1 };
        let namesize = name.len() + 1;
        write!(
            self.out,
            "070701{:08x}{mode:08x}{:08x}{:08x}{nlink:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{namesize:08x}{:08x}",
            self.inode, 0, 0, 0, data.len(), 0, 0, 0, 0, 0
        )?;
        self.out.write_all(name.as_bytes())?;
        self.out.write_all(&[0])?;
        // The header (110 bytes) and the name are padded to 4 bytes, and so is the data.
        self.out
            .write_all(&[0; 3][..(4 - (110 + namesize) % 4) % 4])?;
        self.out.write_all(data)?;
        self.out.write_all(&[0; 3][..(4 - data.len() % 4) % 4])?;
        self.inode += 1;
        Ok(())
    }

    /// Every parent directory of `path` not yet written.
    fn parents(&mut self, path: &str) -> Result<()> {
        let mut at = String::new();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len() - 1] {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            if self.seen.insert(at.clone()) {
                self.entry(&at.clone(), S_IFDIR | 0o755, &[])?;
            }
        }
        Ok(())
    }

    /// A file at `path` (relative, no leading /).
    pub fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> Result<()> {
        self.parents(path)?;
        if self.seen.insert(path.to_string()) {
            self.entry(path, S_IFREG | mode, data)?;
        }
        Ok(())
    }

    pub fn symlink(&mut self, path: &str, target: &str) -> Result<()> {
        self.parents(path)?;
        if self.seen.insert(path.to_string()) {
            self.entry(path, S_IFLNK | 0o777, target.as_bytes())?;
        }
        Ok(())
    }

    pub fn dir(&mut self, path: &str) -> Result<()> {
        self.parents(&format!("{path}/x"))
    }

    /// Everything under `tree` (an unpacked .deb), but its documentation, at the root.
    pub fn tree(&mut self, tree: &Path) -> Result<()> {
        fn walk<W: Write>(c: &mut Cpio<W>, root: &Path, dir: &Path) -> Result<()> {
            let mut entries: Vec<_> = std::fs::read_dir(dir)?
                .flatten()
                .map(|e| e.path())
                .collect();
            entries.sort();
            for p in entries {
                let rel = p.strip_prefix(root)?.to_string_lossy().into_owned();
                if [
                    "usr/share",
                    "usr/lib/udev",
                    "etc",
                    "lib/systemd",
                    "usr/lib/systemd",
                ]
                .iter()
                .any(|skip| rel == *skip || rel.starts_with(&format!("{skip}/")))
                {
                    continue;
                }
                let meta = std::fs::symlink_metadata(&p)?;
                if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(&p)?;
                    c.symlink(&rel, &target.to_string_lossy())?;
                } else if meta.is_dir() {
                    c.dir(&rel)?;
                    walk(c, root, &p)?;
                } else {
                    let data = std::fs::read(&p).with_context(|| p.display().to_string())?;
                    c.file(&rel, meta.mode() & 0o7777, &data)?;
                }
            }
            Ok(())
        }
        walk(self, tree, tree)
    }

    /// A host file, executable when it is there.
    pub fn host_file(&mut self, path: &str, src: &Path) -> Result<()> {
        let data = std::fs::read(src).with_context(|| format!("reading {}", src.display()))?;
        let mode = std::fs::metadata(src)?.permissions().mode() & 0o7777;
        self.file(path, mode, &data)
    }

    /// The trailer, then the writer back.
    pub fn finish(mut self) -> Result<W> {
        self.entry("TRAILER!!!", 0, &[])?;
        self.out.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_entries_are_padded_and_parents_come_first() {
        let mut c = Cpio::new(Vec::new());
        c.file("a/b/c", 0o644, b"hello").unwrap();
        c.symlink("a/l", "b/c").unwrap();
        let out = c.finish().unwrap();
        let text = String::from_utf8_lossy(&out);
        let at = |s: &str| text.find(s).unwrap();
        assert!(at("a\0") < at("a/b\0") && at("a/b\0") < at("a/b/c\0"));
        assert!(text.contains("hello") && text.ends_with("TRAILER!!!\0\0\0\0"));
        assert_eq!(out.len() % 4, 0);
        assert!(out.starts_with(b"070701"));
    }
}
