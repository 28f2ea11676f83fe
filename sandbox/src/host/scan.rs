//! Scans of the host for root-only files (`/etc`, `/proc`, the toolchains under `$HOME`), and
//! the directory listing ([`entries`]) that `plan::subtract_on_host` carves the real file
//! system with. Read by the plan's facts (`plan/gather.rs`) and by the helper (the unowned roots it
//! could not attach idmapped, the new `/proc`). Imports nothing of the plan.

use std::path::{Path, PathBuf};

/// The entries of `dir` that are not symlinks (`None` when it cannot be read).
pub(crate) fn entries(dir: &Path) -> Option<Vec<PathBuf>> {
    let read = std::fs::read_dir(dir).ok()?;
    Some(
        read.flatten()
            .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
            .map(|e| e.path())
            .collect(),
    )
}

/// Directory names a toolchain scan does not enter: the bulk of a toolchain (libraries,
/// headers, documentation, sources), tens of thousands of files that a scan per launcher
/// process cannot afford.
const TOOLCHAIN_BULK: &[&str] = &[
    "lib",
    "lib64",
    "libexec",
    "include",
    "share",
    "node_modules",
    "src",
    "man",
    "doc",
    "docs",
    ".git",
];

/// Root-only files and directories of a toolchain directory outside its bulk
/// ([`TOOLCHAIN_BULK`]): its configuration (`etc/`, `settings.toml`, `.npmrc`...) and top
/// levels, for the backends that cannot attach it idmapped. Cached per process and root (a few
/// hundred entries for rustup and pyenv together, under 10 ms).
pub fn toolchain_private(root: &Path) -> Vec<PathBuf> {
    type Cache = std::sync::Mutex<std::collections::HashMap<PathBuf, Vec<PathBuf>>>;
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(root).cloned()) {
        return found;
    }
    let mut out = Vec::new();
    walk_toolchain(root, &mut out, 0);
    if let Ok(mut c) = cache.lock() {
        c.insert(root.to_path_buf(), out.clone());
    }
    out
}

fn walk_toolchain(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let mode = meta.permissions().mode();
        if kind.is_dir() {
            let bulk = e
                .file_name()
                .to_str()
                .is_some_and(|n| TOOLCHAIN_BULK.contains(&n));
            if mode & 0o005 != 0o005 {
                out.push(e.path());
            } else if !bulk && depth < 8 {
                walk_toolchain(&e.path(), out, depth + 1);
            }
        } else if mode & 0o004 == 0 {
            out.push(e.path());
        }
    }
}

/// What the helper masks under an unowned root it could not attach idmapped: every root-only
/// file of `/etc`, the root-only files outside a toolchain's bulk ([`toolchain_private`]).
pub fn unowned_fallback(root: &Path) -> Vec<PathBuf> {
    if root == Path::new("/etc") {
        private_files(root)
    } else {
        toolchain_private(root)
    }
}

/// Everything under `/etc` that is not world-readable (keys, credentials): root inside the
/// sandbox would still own it, so it is masked like an explicit secret. Cached per process.
pub fn etc_private() -> &'static [PathBuf] {
    static CACHE: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| private_files(Path::new("/etc")))
}

/// Files and directories under `dir` that others may not read (not cached).
pub fn private_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    walk_private(dir, &mut out, 0);
    out
}

fn walk_private(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        // The type comes with the entry (no stat for the many links of /etc); the mode from a
        // stat relative to the directory already open, not a lookup from `/`.
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        let Ok(meta) = e.metadata() else {
            continue;
        };
        let mode = meta.permissions().mode();
        if meta.file_type().is_symlink() {
            continue;
        }
        if meta.is_dir() {
            if mode & 0o005 != 0o005 {
                out.push(e.path());
            } else if depth < 8 {
                walk_private(&e.path(), out, depth + 1);
            }
        } else if mode & 0o004 == 0 {
            out.push(e.path());
        }
    }
}

/// Files of `/proc` that only root may read (`kpageflags`, `slabinfo`, `timer_list`,
/// `vmallocinfo`, `kmsg`, ... at the top; `kernel/cad_pid`, `vm/mmap_rnd_bits`, ... in
/// `/proc/sys`, and with `net` the host network's, `net/ipv4/tcp_fastopen_key`, ...): a child
/// running as uid 0 would read them. Top-level entries that are not process directories and
/// the `/proc/sys` tree, by mode: readable by their owner, not by others (write-only triggers
/// such as `drop_caches` are left alone, `/proc/sys` is read-only). Scanned once per process
/// (the set is the kernel's): about 380 entries, and 1100 more for `net`.
pub fn proc_private(net: bool) -> Vec<PathBuf> {
    static BASE: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    static NET: std::sync::OnceLock<Vec<PathBuf>> = std::sync::OnceLock::new();
    let mut out = BASE
        .get_or_init(|| {
            let mut out = Vec::new();
            walk_proc(Path::new("/proc"), &mut out, 0);
            out
        })
        .clone();
    if net {
        out.extend_from_slice(NET.get_or_init(|| {
            let mut out = Vec::new();
            walk_proc(Path::new("/proc/sys/net"), &mut out, 2);
            out
        }));
    }
    out
}

fn walk_proc(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.as_encoded_bytes();
        if depth == 0 && name.iter().all(u8::is_ascii_digit) {
            continue; // a process directory
        }
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_symlink() {
            continue;
        }
        let Ok(meta) = e.metadata() else { continue };
        let mode = meta.permissions().mode();
        if kind.is_dir() {
            if mode & 0o005 != 0o005 && mode & 0o500 != 0 {
                out.push(e.path());
            } else if (depth == 0 && name == b"sys")
                || (depth == 1 && name != b"net")
                || (depth > 1 && depth < 8)
            {
                walk_proc(&e.path(), out, depth + 1);
            }
        } else if mode & 0o004 == 0 && mode & 0o444 != 0 {
            out.push(e.path());
        }
    }
}
