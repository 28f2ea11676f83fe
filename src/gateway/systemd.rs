//! systemd integration: the sockets passed by socket activation (`LISTEN_FDS`,
//! `LISTEN_FDNAMES`, taken before the runtime starts), and `sd_notify` messages (`READY=1`,
//! `STATUS=`, `WATCHDOG=1` at half `WATCHDOG_USEC`, `STOPPING=1`). Without `NOTIFY_SOCKET`
//! every message is a no-op.

use std::time::Duration;

use sd_notify::NotifyState;

use super::listen::{self, Listener};

/// The activated sockets, whatever their names (`acp`, `acp-tcp`, ...); empty when the
/// process was not socket-activated. Call once, before any thread exists.
pub fn take_activated() -> anyhow::Result<Vec<Listener>> {
    let fds = zeroclaw_sandbox::take_activated_fds()
        .map_err(|e| anyhow::anyhow!("reading LISTEN_FDS: {e}"))?;
    let mut listeners = Vec::new();
    for (fd, name) in fds {
        let raw = std::os::fd::AsRawFd::as_raw_fd(&fd);
        let listener = listen::from_activated(fd)
            .map_err(|e| e.context(format!("activated socket `{name}` (fd {raw})")))?;
        tracing::info!(name, address = %listener.describe(), "using an activated socket");
        listeners.push(listener);
    }
    Ok(listeners)
}

fn notify(state: &[NotifyState]) {
    if let Err(error) = sd_notify::notify(state) {
        tracing::warn!(%error, "sd_notify failed");
    }
}

pub fn ready() {
    notify(&[NotifyState::Ready]);
}

pub fn status(text: &str) {
    notify(&[NotifyState::Status(text)]);
}

pub fn stopping() {
    notify(&[NotifyState::Stopping]);
}

/// Sends `WATCHDOG=1` every half `WATCHDOG_USEC`, when systemd asked for it.
pub fn spawn_watchdog() {
    let Some(timeout) = sd_notify::watchdog_enabled() else {
        return;
    };
    let period = (timeout / 2).max(Duration::from_millis(10));
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        loop {
            ticks.tick().await;
            notify(&[NotifyState::Watchdog]);
        }
    });
}
