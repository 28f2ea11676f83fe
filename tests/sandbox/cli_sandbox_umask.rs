//! A confined child's umask is `[sandbox] umask` (default `"022"`), whatever its launcher's: a
//! `zeroclaw sandbox run` started with umask 077 (a service's `UMask=0077`) leaves a file and a
//! directory its child creates `0644`/`0755` on the host (a new repository's config and
//! objects too), and `umask = "027"` gives
//! `0640`/`0750` — on every Linux backend (and through the launcher, a warm helper serving
//! the call), judged from outside. A umask that is no octal
//! string is refused with the key named.

use crate::cli_sandbox_run::clean_command;
use crate::sandbox_support::Backend;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A file, a directory and a git repository with one commit.
const MAKE: &str = "echo made > f && mkdir d && git init -q && git add f && \
                    git -c user.name=t -c user.email=t@example.invalid commit -qm made";

/// A change to the existing repository's config, which the helper validates and writes anew
/// on the namespace rungs.
const CHANGE: &str = "git config user.name changed";

/// `zeroclaw sandbox run` under `sh` with `umask 077`, in `ws`, making `f`, `d` and a
/// repository there.
fn make_files_under_umask_077(b: Backend, config_dir: &Path, ws: &Path) -> std::process::Output {
    run_under_umask_077(b, config_dir, ws, MAKE)
}

/// `zeroclaw sandbox run` under `sh` with `umask 077`, running `script` in `ws`.
fn run_under_umask_077(
    b: Backend,
    config_dir: &Path,
    ws: &Path,
    script: &str,
) -> std::process::Output {
    clean_command("sh", config_dir)
        .args(["-c", "umask 077; exec \"$@\"", "sh"])
        .arg(env!("CARGO_BIN_EXE_zeroclaw"))
        .args(["sandbox", "run", "--backend", b.name()])
        .args(b.flags())
        .arg("--workspace")
        .arg(ws)
        .args(["--", "sh", "-c", script])
        .output()
        .expect("run zeroclaw")
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// The modes of `f` and `d`, after checking the repository's `config` and every object
/// against the file mode `file` (objects are written without write bits).
fn modes_with(b: Backend, config: &str, file: u32) -> (u32, u32) {
    let conf = tempfile::tempdir().unwrap();
    std::fs::write(conf.path().join("config.toml"), config).unwrap();
    let ws = tempfile::tempdir().unwrap();
    let out = make_files_under_umask_077(b, conf.path(), ws.path());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{b:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let git = ws.path().join(".git");
    assert_eq!(mode(&git.join("config")), file, "{b:?}: new .git/config");
    let out = run_under_umask_077(b, conf.path(), ws.path(), CHANGE);
    assert_eq!(out.status.code(), Some(0), "{b:?}: {out:?}");
    assert_eq!(
        mode(&git.join("config")),
        file,
        "{b:?}: changed .git/config"
    );
    let objects = walk(&git.join("objects"));
    assert!(objects.len() >= 3, "{b:?}: blob, tree, commit: {objects:?}");
    for object in objects {
        assert_eq!(mode(&object), file & 0o444, "{b:?}: {}", object.display());
    }
    (mode(&ws.path().join("f")), mode(&ws.path().join("d")))
}

/// The files below `dir`.
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

fn the_default_umask(b: Backend) {
    assert_eq!(modes_with(b, "", 0o644), (0o644, 0o755), "{b:?}");
}

fn a_configured_umask(b: Backend) {
    let config = "[sandbox]\numask = \"027\"\n";
    assert_eq!(modes_with(b, config, 0o640), (0o640, 0o750), "{b:?}");
}

fn on_each_backend(name: &str, test: fn(Backend)) {
    for b in [
        Backend::Namespaces,
        Backend::NamespacesWarm,
        Backend::Bubblewrap,
        Backend::Landlock,
    ] {
        if b.available(name) {
            test(b);
        }
    }
}

#[test]
fn a_child_gets_umask_022_whatever_its_launchers() {
    on_each_backend(
        "a_child_gets_umask_022_whatever_its_launchers",
        the_default_umask,
    );
}

#[test]
fn a_child_gets_the_configured_umask() {
    on_each_backend("a_child_gets_the_configured_umask", a_configured_umask);
}

#[test]
fn a_umask_that_is_no_octal_string_is_refused_by_key() {
    let conf = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    for bad in ["umask = \"u=rwx\"", "umask = \"0888\"", "umask = 18"] {
        std::fs::write(
            conf.path().join("config.toml"),
            format!("[sandbox]\n{bad}\n"),
        )
        .unwrap();
        let out = make_files_under_umask_077(Backend::Namespaces, conf.path(), ws.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{bad}: {err}");
        assert!(err.contains("sandbox.umask"), "{bad}: {err}");
    }
    assert!(!ws.path().join("f").exists(), "nothing ran");
}
