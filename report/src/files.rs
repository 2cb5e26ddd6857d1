//! How a report's files are written into a run directory someone else may share: a temporary
//! file of this process's own, created new (so never a file or symlink already there), then a
//! rename over the name. A symlink planted at the name is replaced, never written through, and
//! a reader sees the old file or the whole new one.
use std::{
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::Path,
    sync::atomic::{AtomicU64, Ordering},
};

use anyhow::{Context, Result};

/// Writes `bytes` to `path` (mode 0644) as the module says.
pub fn write_replacing(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> Result<()> {
    let path = path.as_ref();
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| -> std::io::Result<()> {
        // create_new is O_CREAT|O_EXCL: it fails on any name already there, symlinks included.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        f.write_all(bytes.as_ref())?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_planted_symlink_is_replaced_not_written_through() {
        let dir = std::env::temp_dir().join(format!("rxsteer-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let path = dir.join("report.md");
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        super::write_replacing(&path, "# report").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# report");
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "no temporary left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
