//! The file behind a Unix listener the daemon binds: before binding, the path is claimed
//! (nothing there; or a stale socket nobody accepts on, removed; a socket that answers a
//! connect belongs to a running daemon and is refused, naming its pid from `SO_PEERCRED`;
//! anything that is not a socket is never touched). After binding, the socket's device and
//! inode are recorded, and on drop the file is removed only while it is still that socket.

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use anyhow::Context;
use nix::sys::socket::{getsockopt, sockopt::PeerCredentials};

/// Makes `path` free for a new socket, or says why it is not.
pub fn claim(path: &Path) -> anyhow::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("inspecting {}", path.display())),
    };
    if !meta.file_type().is_socket() {
        anyhow::bail!(
            "{} exists and is not a socket; not touching it (move it away or change [gateway] listen)",
            path.display()
        );
    }
    match UnixStream::connect(path) {
        Ok(stream) => Err(in_use(path, &stream)),
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => std::fs::remove_file(path)
            .with_context(|| format!("removing the stale socket {}", path.display())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| {
            format!(
                "cannot tell whether {} is in use, so it is left alone",
                path.display()
            )
        }),
    }
}

/// The error for a socket another process accepts connections on.
fn in_use(path: &Path, stream: &UnixStream) -> anyhow::Error {
    let owner = match getsockopt(stream, PeerCredentials) {
        Ok(cred) if cred.pid() > 0 => format!("another daemon (pid {})", cred.pid()),
        _ => "another process".to_owned(),
    };
    anyhow::anyhow!(
        "{} is in use: {owner} accepts connections on it; stop it first, or give this daemon another [gateway] listen",
        path.display()
    )
}

/// A socket file this process bound; removed on drop while it is still the same file.
#[derive(Debug)]
pub struct SocketFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl SocketFile {
    /// Records the socket just bound at `path`.
    pub fn bound(path: &Path) -> anyhow::Result<SocketFile> {
        let meta = std::fs::symlink_metadata(path)
            .with_context(|| format!("inspecting the socket {} just bound", path.display()))?;
        Ok(SocketFile {
            path: path.to_owned(),
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }

    fn is_still_ours(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok_and(|meta| {
            meta.file_type().is_socket() && meta.dev() == self.dev && meta.ino() == self.ino
        })
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if self.is_still_ours() {
            let _ = std::fs::remove_file(&self.path);
        } else {
            tracing::info!(path = %self.path.display(), "socket file replaced by someone else; left in place");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixListener;

    #[test]
    fn a_live_socket_is_refused_with_our_pid_and_a_stale_one_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.sock");
        let live = UnixListener::bind(&path).unwrap();
        let error = claim(&path).unwrap_err().to_string();
        assert!(
            error.contains(&format!("pid {}", std::process::id())),
            "{error}"
        );
        assert!(path.exists());
        drop(live);
        claim(&path).unwrap();
        assert!(!path.exists(), "the stale socket is removed");
    }

    #[test]
    fn a_replaced_socket_file_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.sock");
        let first = UnixListener::bind(&path).unwrap();
        let file = SocketFile::bound(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let _second = UnixListener::bind(&path).unwrap();
        drop(file);
        assert!(path.exists(), "someone else's socket stays");
        drop(first);
    }
}
