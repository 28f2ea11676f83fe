//! A temporary world for one test: the workspace and the places around it that must stay
//! out of reach, each secret holding a canary string unique to this world.
//!
//! Layout under one temp dir (`/var/tmp/zc-tests-*`, see [`scratch_dir`], removed on drop):
//! `ws/` the workspace; `home/` a fake `$HOME` with SSH keys, cloud and registry credentials,
//! dotfiles and a `.zeroclaw` daemon config dir with its session database; `other-ws/` another
//! session's workspace; `outside/` files an attack tries to change; `ro/` a directory the
//! tests may pass as `--allow-read`.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tempfile::TempDir;

use super::backend::{Backend, selftest};
use super::procs::Bg;
use super::run::{Run, Runner, zeroclaw};

/// Secret files of the fake home, relative to it.
pub const HOME_SECRETS: [&str; 11] = [
    ".ssh/id_ed25519",
    ".ssh/id_rsa",
    ".aws/credentials",
    ".netrc",
    ".git-credentials",
    ".cargo/credentials.toml",
    ".config/gh/hosts.yml",
    ".gnupg/private-keys-v1.d/key.key",
    ".bash_history",
    ".zeroclaw/config.toml",
    ".zeroclaw/sessions.db",
];

/// Environment variables the launcher has and a child must never see.
pub const SECRET_VARS: [&str; 5] = [
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
    "ZEROCLAW_ACP_BRIDGE_TOKEN",
];

/// One test's workspace and surroundings.
pub struct World {
    _root: TempDir,
    pub root: PathBuf,
    pub ws: PathBuf,
    pub home: PathBuf,
    pub other_ws: PathBuf,
    pub outside: PathBuf,
    pub ro: PathBuf,
    /// Unique to this world; every secret contains it.
    pub canary: String,
}

impl Drop for World {
    /// Removes the world, retried for a while: a helper the launcher made ahead for a next
    /// call (`--through-launcher`) removes its layer below `home` a moment after the run, and
    /// a removal racing it would leave the world behind.
    fn drop(&mut self) {
        for _ in 0..100 {
            match fs::remove_dir_all(&self.root) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                _ => return,
            }
        }
    }
}

impl World {
    /// A workspace `nobody` owns in this world (`nobody-ws`, the world's root made
    /// traversable), for a test that switches to `nobody` (`run::as_nobody`); `None`, with the
    /// reason said (a failure under CI=true), when the tests do not run as root.
    pub fn nobody_workspace(&self, test: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        if !nix::unistd::geteuid().is_root() {
            crate::support::require_feature(&format!("{test}: needs root to switch to nobody"));
            return None;
        }
        fs::set_permissions(&self.root, fs::Permissions::from_mode(0o711)).expect("chmod world");
        let ws = self.root.join("nobody-ws");
        fs::create_dir(&ws).expect("mkdir");
        std::os::unix::fs::chown(&ws, Some(65534), Some(65534)).expect("chown");
        Some(ws)
    }

    pub fn new() -> World {
        let root = scratch_dir();
        let path = root.path().canonicalize().expect("canonical temp dir");
        let world = World {
            ws: path.join("ws"),
            home: path.join("home"),
            other_ws: path.join("other-ws"),
            outside: path.join("outside"),
            ro: path.join("ro"),
            canary: unique("ZCCANARY"),
            root: path,
            _root: root,
        };
        world.populate();
        world
    }

    fn populate(&self) {
        for dir in [
            &self.ws,
            &self.home,
            &self.other_ws,
            &self.outside,
            &self.ro,
        ] {
            fs::create_dir_all(dir).expect("mkdir");
        }
        for rel in HOME_SECRETS {
            // TOML files stay valid TOML (a comment): `zeroclaw` itself loads
            // `$HOME/.zeroclaw/config.toml`, and must not fail on it before confining anything.
            let text = if rel.ends_with(".toml") {
                format!("# {}\n", self.secret(rel))
            } else {
                self.secret(rel)
            };
            self.write(&self.home.join(rel), &text);
        }
        self.write(&self.other_ws.join("notes.txt"), &self.secret("other-ws"));
        self.write(&self.outside.join("target.txt"), &self.secret("outside"));
        fs::create_dir_all(self.outside.join("dir")).expect("mkdir");
        self.write(&self.ro.join("ro.txt"), &self.secret("ro"));
    }

    /// The canary text planted in the file or variable called `what`.
    pub fn secret(&self, what: &str) -> String {
        format!("{}-{}", self.canary, what.replace(['/', '.'], "_"))
    }

    /// Writes `text` to `path`, creating parents (outside the sandbox, as the test).
    pub fn write(&self, path: &Path, text: &str) {
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// A confined run on `backend` with the CLI's defaults.
    pub fn confined(&self, backend: Backend) -> Shell<'_> {
        Shell::new(self, Some(backend))
    }

    /// The positive control: the same script as a plain child process.
    pub fn plain(&self) -> Shell<'_> {
        Shell::new(self, None)
    }

    /// Asserts `run` (confined) neither printed this world's canary nor skipped the attack.
    pub fn assert_no_canary(&self, run: &Run) {
        assert!(
            !run.shows(&self.canary),
            "ESCAPE: the confined child printed a secret (canary {})\n{run}",
            self.canary
        );
    }

    /// Asserts `run` (the unconfined control) did print this world's canary.
    pub fn assert_canary(&self, run: &Run) {
        assert!(
            run.shows(&self.canary),
            "positive control failed: unconfined run did not print the canary {}\n{run}",
            self.canary
        );
    }
}

/// A shell about to run a script, confined (with CLI flags) or plain.
pub struct Shell<'w> {
    world: &'w World,
    backend: Option<Backend>,
    flags: Vec<OsString>,
    envs: Vec<(String, String)>,
    deadline: Duration,
    real_home: bool,
    workspace: Option<PathBuf>,
}

impl<'w> Shell<'w> {
    fn new(world: &'w World, backend: Option<Backend>) -> Self {
        Shell {
            world,
            backend,
            flags: Vec::new(),
            envs: Vec::new(),
            deadline: Duration::from_secs(120),
            real_home: false,
            workspace: None,
        }
    }

    /// Keeps the test's own `$HOME` (with its rustup and pyenv toolchains) for the launcher
    /// instead of the fake one: for functional tests of real toolchains.
    pub fn real_home(mut self) -> Self {
        self.real_home = true;
        self
    }

    pub fn allow_read(self, path: &Path) -> Self {
        self.flag("--allow-read", path)
    }

    pub fn allow_write(self, path: &Path) -> Self {
        self.flag("--allow-write", path)
    }

    /// Another `--workspace` than the world's (another session of the same world).
    pub fn workspace(mut self, dir: &Path) -> Self {
        self.workspace = Some(dir.to_owned());
        self
    }

    /// `zeroclaw sandbox run --timeout SECS` (ignored by the plain control).
    pub fn timeout_secs(self, secs: u32) -> Self {
        self.flag("--timeout", secs.to_string())
    }

    /// `zeroclaw sandbox run --memory-mb MIB` (ignored by the plain control).
    pub fn memory_mb(self, mib: u64) -> Self {
        self.flag("--memory-mb", mib.to_string())
    }

    /// `zeroclaw sandbox run --written-mb MIB` (ignored by the plain control).
    pub fn written_mb(self, mib: u64) -> Self {
        self.flag("--written-mb", mib.to_string())
    }

    /// `zeroclaw sandbox run --parent-worktree MODE` (ignored by the plain control).
    pub fn parent_worktree(self, mode: &str) -> Self {
        self.flag("--parent-worktree", mode)
    }

    /// `--network allow`.
    pub fn network_allow(self) -> Self {
        self.flag("--network", "allow")
    }

    fn flag(mut self, name: &str, value: impl AsRef<OsStr>) -> Self {
        self.flags.push(name.into());
        self.flags.push(value.as_ref().to_owned());
        self
    }

    /// An extra variable in the launcher's environment.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.envs.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The harness's own deadline (a safety net, not an assertion).
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Runs `/bin/sh -c script` from the workspace.
    pub fn sh(self, script: &str) -> Run {
        self.run(&["/bin/sh", "-c", script])
    }

    /// Runs `cmd` (confined: after `zeroclaw sandbox run ... --`).
    pub fn run(self, cmd: &[&str]) -> Run {
        let argv = self.argv(cmd);
        self.run_argv(argv)
    }

    /// Runs `outer... <full argv of cmd>`: e.g. a wrapper that opens an fd, then execs us.
    pub fn run_wrapped(self, outer: &[&str], cmd: &[&str]) -> Run {
        let mut argv: Vec<OsString> = outer.iter().map(OsString::from).collect();
        argv.extend(self.argv(cmd));
        self.run_argv(argv)
    }

    /// The full argv: `zeroclaw sandbox run --backend B --workspace W FLAGS -- cmd` or `cmd`.
    pub fn argv(&self, cmd: &[&str]) -> Vec<OsString> {
        let mut argv: Vec<OsString> = Vec::new();
        if let Some(backend) = self.backend.filter(|_| !selftest()) {
            argv.extend(
                [zeroclaw(), "sandbox", "run", "--backend", backend.name()].map(OsString::from),
            );
            argv.extend(backend.flags().iter().map(OsString::from));
            argv.push("--workspace".into());
            argv.push(
                self.workspace
                    .as_ref()
                    .unwrap_or(&self.world.ws)
                    .clone()
                    .into(),
            );
            argv.extend(self.flags.iter().cloned());
            argv.push("--".into());
        }
        argv.extend(cmd.iter().map(OsString::from));
        argv
    }

    fn run_argv(self, argv: Vec<OsString>) -> Run {
        let mut runner = Runner::new(&argv[0], &self.world.ws)
            .args(&argv[1..])
            .deadline(self.deadline);
        for (key, value) in self.env_pairs() {
            runner = runner.env(key, value);
        }
        runner.run()
    }

    /// Starts `/bin/sh -c script` in the background (stdout piped, readable line by line).
    pub fn spawn_sh(self, script: &str) -> Bg {
        let argv = self.argv(&["/bin/sh", "-c", script]);
        Bg::spawn_in(&argv, &self.env_pairs(), &self.world.ws)
    }

    /// The launcher's environment: a fake or real `$HOME`, secrets it must not pass on.
    fn env_pairs(&self) -> Vec<(OsString, OsString)> {
        let world = self.world;
        let mut envs: Vec<(OsString, OsString)> = vec![
            ("GIT_CEILING_DIRECTORIES".into(), world.root.clone().into()),
            (
                "SSH_AUTH_SOCK".into(),
                world
                    .outside
                    .join(format!("agent-{}.sock", world.canary))
                    .into(),
            ),
        ];
        if !self.real_home {
            envs.push(("HOME".into(), world.home.clone().into()));
        }
        for var in SECRET_VARS {
            envs.push((var.into(), world.secret(var).into()));
        }
        for (key, value) in &self.envs {
            envs.push((key.into(), value.into()));
        }
        envs
    }
}

/// What an outside observer sees of a path, to prove it unchanged.
#[derive(Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub content: Option<Vec<u8>>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub ino: u64,
    pub nlink: u64,
    pub symlink: bool,
    pub len: u64,
    pub mtime: (i64, i64),
}

impl Snapshot {
    /// `None` when nothing exists at `path` (not even a dangling symlink).
    pub fn of(path: &Path) -> Option<Snapshot> {
        let meta = fs::symlink_metadata(path).ok()?;
        let content = meta.is_file().then(|| fs::read(path).ok()).flatten();
        Some(Snapshot {
            content,
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
            ino: meta.ino(),
            nlink: meta.nlink(),
            symlink: meta.file_type().is_symlink(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        })
    }
}

/// Where test worlds live: a fresh `/var/tmp/zc-tests-*` dir. Not under `/tmp` (the sandbox's
/// private `/tmp` would hide "outside" files for the wrong reason) and never inside a git
/// repository: a `.git` attack or control that escaped upwards would hit a real repository.
pub fn scratch_dir() -> TempDir {
    let dir = tempfile::Builder::new()
        .prefix("zc-tests-")
        .tempdir_in("/var/tmp")
        .expect("temp dir in /var/tmp");
    assert_outside_git(dir.path());
    dir
}

/// Panics when `path` or an ancestor holds a `.git`.
pub fn assert_outside_git(path: &Path) {
    for dir in path.ancestors() {
        assert!(
            fs::symlink_metadata(dir.join(".git")).is_err(),
            "test dir {} is inside a git repository ({}/.git): refusing to run attacks there",
            path.display(),
            dir.display()
        );
    }
}

/// A string unique to this process and call: prefix, pid, time and a counter.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{:x}x{nanos:x}x{n:x}", std::process::id())
}

/// Shell-quotes a path for a script.
pub fn q(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}
