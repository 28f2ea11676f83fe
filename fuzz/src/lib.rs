//! zeroclaw's fuzz targets: one function per parser of untrusted bytes ([`targets`]), each a
//! small program in `bin/` (libFuzzer with the `libfuzzer` feature, else a replayer of the
//! files it is given), and the seed corpus under `corpus/<target>/`. See `fuzz/README.md`.

use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

mod git;
pub mod targets;

#[doc(hidden)]
pub use libfuzzer_sys;

/// A target: runs one input.
pub type Target = fn(&[u8]);

/// Every target, by name, for the corpus replay.
pub const TARGETS: &[(&str, Target)] = &[
    ("rpc", targets::rpc::run),
    ("acp_params", targets::acp_params::run),
    ("config_env", targets::config_env::run),
    ("egress_host", targets::egress_host::run),
    ("egress_http", targets::egress_http::run),
    ("egress_socks", targets::egress_socks::run),
    ("egress_tls", targets::egress_tls::run),
    ("git_config", targets::git_config::run),
    ("git_paths", targets::git_paths::run),
    ("audit_canonical", targets::audit_canonical::run),
    ("image_sniff", targets::image_sniff::run),
];

/// The program of one target: libFuzzer's entry point with the `libfuzzer` feature, else a
/// `main` that runs the target on each file (or each file of each directory) named.
#[macro_export]
macro_rules! target {
    ($run:path) => {
        #[cfg(feature = "libfuzzer")]
        $crate::libfuzzer_sys::fuzz_target!(|data: &[u8]| $run(data));

        #[cfg(not(feature = "libfuzzer"))]
        fn main() {
            for arg in std::env::args_os().skip(1) {
                let n = $crate::replay(std::path::Path::new(&arg), $run);
                eprintln!("{}: {n} inputs ran", std::path::Path::new(&arg).display());
            }
        }
    };
}

/// Runs `run` on `path` (a file, or every file of a directory); the number of inputs run.
pub fn replay(path: &Path, run: Target) -> usize {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .expect("corpus directory")
            .map(|e| e.expect("corpus entry").path())
            .collect();
        entries.sort();
        return entries.iter().map(|p| replay(p, run)).sum();
    }
    run(&std::fs::read(path).expect("corpus file"));
    1
}

/// Runs a future that never waits on anything but its in-memory input to completion.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    futures::executor::block_on(future)
}

/// A client connection made of the input: reads hand out at most `chunk` bytes at a time,
/// writes are kept.
pub struct Client<'a> {
    input: &'a [u8],
    chunk: usize,
    pub written: Vec<u8>,
}

impl<'a> Client<'a> {
    pub fn new(input: &'a [u8], chunk: usize) -> Client<'a> {
        Client {
            input,
            chunk: chunk.max(1),
            written: Vec::new(),
        }
    }
}

impl AsyncRead for Client<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.input.len().min(self.chunk).min(buf.remaining());
        let (head, rest) = self.input.split_at(n);
        buf.put_slice(head);
        self.input = rest;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Client<'_> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.written.extend_from_slice(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed seeds run clean through every target (so a fix's reproducer, once added
    /// to a corpus, stays fixed), and every target has seeds.
    #[test]
    fn seed_corpus_replays_clean() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus");
        for (name, run) in TARGETS {
            let n = replay(&root.join(name), *run);
            assert!(n >= 3, "{name}: {n} seeds, want a few real examples");
        }
    }
}
