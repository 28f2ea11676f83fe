//! The metrics file of `zeroclaw acp --metrics-file PATH`: the Prometheus text written as the
//! process exits, atomically (a temp file beside PATH, synced, renamed over it), so a reader
//! (node_exporter's textfile collector, a CI step) never sees half a file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

fn directory(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Refuses at start a PATH that could not be written at exit: its directory is missing or
/// it names a directory.
pub fn check_target(path: &Path) -> anyhow::Result<()> {
    let dir = directory(path);
    if !dir.is_dir() {
        anyhow::bail!(
            "--metrics-file {}: the directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        anyhow::bail!("--metrics-file {}: is a directory", path.display());
    }
    Ok(())
}

/// Replaces `path` with `text`.
pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    let name = path
        .file_name()
        .map_or_else(|| "metrics".into(), |n| n.to_string_lossy().into_owned());
    let tmp: PathBuf = directory(path).join(format!(".{name}.{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("writing the metrics file {}", path.display()))
}
