//! Listening addresses (parsed by [`crate::config::listen`]): binding them (a Unix path is
//! claimed first by [`socket_file`](super::socket_file): a live daemon's socket is refused, a
//! stale one replaced; mode 0660), and taking over systemd-activated sockets (told apart by
//! their socket type, not their name). A Unix socket this process bound is removed when its
//! [`SocketFile`] is dropped, only while it is still that socket.

use std::io::ErrorKind;
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::socket_file::{self, SocketFile};
use crate::config::listen::Address;

/// Mode of a Unix socket the daemon binds: owner and group may connect.
const SOCKET_MODE: u32 = 0o660;

/// A listening socket ready to serve.
#[derive(Debug)]
pub enum Listener {
    /// `file`: the socket file this process bound (`None` for an activated socket, which is
    /// never removed).
    Unix {
        listener: UnixListener,
        path: PathBuf,
        file: Option<SocketFile>,
    },
    Tcp(TcpListener),
}

impl Listener {
    /// `unix:PATH` or `tcp:IP:PORT` (the bound port, also when 0 was asked for).
    pub fn describe(&self) -> String {
        match self {
            Listener::Unix { path, .. } => format!("unix:{}", path.display()),
            Listener::Tcp(l) => match l.local_addr() {
                Ok(addr) => format!("tcp:{addr}"),
                Err(_) => "tcp:?".into(),
            },
        }
    }

    /// The socket file to remove on exit, taken out so it outlives the listener itself.
    pub fn take_socket_file(&mut self) -> Option<SocketFile> {
        match self {
            Listener::Unix { file, .. } => file.take(),
            Listener::Tcp(_) => None,
        }
    }
}

/// Binds every address; a stale socket file at a Unix path is replaced. On error the sockets
/// already bound are closed and their files removed.
pub fn bind_all(addresses: &[String]) -> anyhow::Result<Vec<Listener>> {
    let mut listeners = Vec::new();
    for text in addresses {
        let address = Address::parse(text).map_err(anyhow::Error::msg)?;
        let listener = match address {
            Address::Unix(path) => bind_unix(&path)?,
            Address::Tcp(host_port) => bind_tcp(&host_port)?,
        };
        listeners.push(listener);
    }
    Ok(listeners)
}

fn bind_tcp(host_port: &str) -> anyhow::Result<Listener> {
    let addrs: Vec<SocketAddr> = host_port
        .to_socket_addrs()
        .with_context(|| format!("resolving tcp:{host_port}"))?
        .collect();
    let listener = TcpListener::bind(&addrs[..]).map_err(|e| match e.kind() {
        ErrorKind::AddrInUse => anyhow::anyhow!(
            "tcp:{host_port} is already in use (another daemon?); stop it first, or give this daemon another [gateway] listen"
        ),
        _ => anyhow::Error::new(e).context(format!("binding tcp:{host_port}")),
    })?;
    listener.set_nonblocking(true)?;
    Ok(Listener::Tcp(listener))
}

fn bind_unix(path: &Path) -> anyhow::Result<Listener> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    socket_file::claim(path)?;
    let listener =
        UnixListener::bind(path).with_context(|| format!("binding unix:{}", path.display()))?;
    let file = SocketFile::bound(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
        .with_context(|| format!("setting the mode of {}", path.display()))?;
    listener.set_nonblocking(true)?;
    Ok(Listener::Unix {
        listener,
        path: path.to_owned(),
        file: Some(file),
    })
}

/// An activated socket, whatever its name: Unix when `getsockname` says `AF_UNIX`, else TCP.
pub fn from_activated(fd: OwnedFd) -> anyhow::Result<Listener> {
    let unix = UnixListener::from(fd);
    let listener = match unix.local_addr() {
        Ok(addr) => {
            let path = addr
                .as_pathname()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from("(unnamed)"));
            unix.set_nonblocking(true)?;
            Listener::Unix {
                listener: unix,
                path,
                file: None,
            }
        }
        Err(_) => {
            let tcp = TcpListener::from(OwnedFd::from(unix));
            tcp.local_addr()
                .context("an activated socket is neither a Unix nor a TCP socket")?;
            tcp.set_nonblocking(true)?;
            Listener::Tcp(tcp)
        }
    };
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stale_socket_is_replaced_and_a_regular_file_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("z.sock");
        drop(UnixListener::bind(&path).unwrap());
        let bound = bind_unix(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, SOCKET_MODE);
        drop(bound);
        assert!(!path.exists(), "the socket it bound is removed with it");
        let file = dir.path().join("plain");
        std::fs::write(&file, "x").unwrap();
        assert!(bind_unix(&file).is_err());
        assert_eq!(std::fs::read(&file).unwrap(), b"x");
    }
}
