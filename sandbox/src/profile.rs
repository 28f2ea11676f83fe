//! What a confined child may do: plain data, built with [`Profile::for_workspace`] and a few
//! builder methods, serializable so the launcher can hand it to the helper.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Whether a child may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// No network at all: no IP sockets, no abstract Unix sockets outside the sandbox.
    #[default]
    Deny,
    /// The host's network (Unix sockets outside the allowed roots stay unreachable where the
    /// backend can hide them).
    Allow,
    /// Only the daemon's egress proxy: a network namespace with only `lo`, in which the
    /// helper binds the proxy's listeners and hands them to the launcher, or on a rung
    /// without one the launcher's listeners on the host's loopback and rules that reach only
    /// them (see [`crate::plan::egress`]); refused by a backend that cannot do it.
    Proxy,
}

impl std::str::FromStr for Network {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "deny" => Ok(Network::Deny),
            "allow" => Ok(Network::Allow),
            "proxy" => Ok(Network::Proxy),
            other => Err(format!(
                "network must be deny, proxy or allow, not {other:?}"
            )),
        }
    }
}

/// What a confined command sees of the repository its workspace lies in, when the workspace is
/// a subdirectory of a larger repository and has no `.git` of its own (see
/// [`crate::plan::HostFacts::parent_repository`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ParentWorktree {
    /// The parent repository's worktree read-only (its denied paths still masked) and its git
    /// directory staged like the workspace's own repository's, so `git status`, `git add -A`
    /// and `git commit -a` work as on the host and its control files land only validated.
    #[default]
    ReadOnly,
    /// Nothing of it: git in the workspace sees no repository.
    Hidden,
}

impl std::str::FromStr for ParentWorktree {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "read-only" => Ok(ParentWorktree::ReadOnly),
            "hidden" => Ok(ParentWorktree::Hidden),
            other => Err(format!(
                "parent_worktree must be read-only or hidden, not {other:?}"
            )),
        }
    }
}

/// Resource limits of one execution; every field has a default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Wall-clock time before the whole process tree is killed.
    pub wall_time: Duration,
    /// CPU seconds per process (`RLIMIT_CPU`).
    pub cpu_secs: u64,
    /// Writable private memory per process in bytes (`RLIMIT_DATA`), and the whole
    /// execution's memory (every process, shared mappings and tmpfs files included) where a
    /// memory cgroup is available (the helper running as root).
    pub memory_bytes: u64,
    /// Processes (`RLIMIT_NPROC`; a pids cgroup when one is available).
    pub processes: u64,
    /// Largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_size_bytes: u64,
    /// Open file descriptors per process (`RLIMIT_NOFILE`).
    pub open_files: u64,
    /// stdout + stderr bytes kept; past this the tree is killed and the output marked truncated.
    pub output_bytes: u64,
    /// Bytes one call may write into its workspace layer (the transactional workspace: its
    /// upper layer holds exactly the call's writes); past this the tree is killed and nothing
    /// the call wrote lands. 0: no bound. Without a layer only `file_size_bytes` bounds writes.
    #[serde(default = "default_written_bytes")]
    pub written_bytes: u64,
}

/// [`Limits::written_bytes`] unless set: 8 GiB, room for a large build's target directory.
pub fn default_written_bytes() -> u64 {
    8 << 30
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            wall_time: Duration::from_secs(120),
            cpu_secs: 120,
            memory_bytes: 4 << 30,
            processes: 1024,
            file_size_bytes: 1 << 30,
            open_files: 1024,
            output_bytes: 8 << 20,
            written_bytes: default_written_bytes(),
        }
    }
}

/// Which environment variables reach the child: never inherited wholesale.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvPolicy {
    /// Names copied from the caller's environment when set (besides PATH, LANG, TERM).
    pub pass: Vec<String>,
    /// Explicit values, applied last.
    pub set: Vec<(String, String)>,
}

/// A host directory bound read-write at a path inside the child's private HOME (a package
/// cache that persists across calls): bound there on the namespace rungs, a symlink in the
/// scratch HOME with a Landlock write rule on the directory on the Landlock-only rung. Only
/// the directory persists; the rest of the HOME stays private to the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HomeBind {
    /// The host directory (absolute, real path, no symlink on the way): it must exist.
    pub host: PathBuf,
    /// Where it appears, relative to the child's HOME (plain names only: no `..`, no root).
    pub at: PathBuf,
}

impl HomeBind {
    /// Whether `at` is a relative path of plain names and `host` is absolute.
    pub fn is_valid(&self) -> bool {
        use std::path::Component;
        self.host.is_absolute()
            && self.at.components().next().is_some()
            && self
                .at
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
    }
}

/// What a confined child may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// The session workspace: read-write (unless [`Profile::read_only_workspace`]), the default
    /// cwd.
    pub workspace: PathBuf,
    /// The workspace is not writable ([`Profile::read_only_workspace`]): it is then one of the
    /// read-only roots.
    #[serde(default)]
    pub workspace_read_only: bool,
    /// Read-only roots (missing ones are skipped).
    pub read_only: Vec<PathBuf>,
    /// Read-write roots besides the workspace.
    pub read_write: Vec<PathBuf>,
    /// Paths inside writable roots that stay read-only, even when they do not exist yet.
    pub protected: Vec<PathBuf>,
    /// Paths never visible, even inside an allowed root.
    pub denied: Vec<PathBuf>,
    /// Network access.
    pub network: Network,
    /// Resource limits.
    pub limits: Limits,
    /// Environment allowlist.
    pub env: EnvPolicy,
    /// Working directory of the command (defaults to the workspace).
    pub cwd: PathBuf,
    /// The file mode creation mask of the child and of what the helper writes for it (a git
    /// stage's files), whatever the launcher's own (a service's `UMask=0077`): [`DEFAULT_UMASK`]
    /// unless set.
    #[serde(default = "default_umask")]
    pub umask: u32,
    /// `network = proxy`: the destination ports the egress policy can allow, which transparent
    /// egress listens on in the child's network namespace (see [`crate::plan::egress`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub egress_ports: Vec<u16>,
    /// Host directories that persist inside the private HOME ([`Profile::bind_in_home`]).
    #[serde(default)]
    pub home_binds: Vec<HomeBind>,
    /// Where the transactional workspace keeps its layers ([`Profile::land_through`]): when
    /// set, a namespaced call's writes to the workspace go to a private upper layer in a new
    /// directory here, and reach the workspace only once the call's tree has ended, through
    /// validation (see [`crate::layer`]). Best on the workspace's file system (landing is then
    /// a rename per entry; elsewhere a copy); never inside the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<PathBuf>,
    /// What the command sees of a larger repository the workspace lies in.
    #[serde(default)]
    pub parent_worktree: ParentWorktree,
}

/// The umask a child gets unless the profile sets one: files it creates are readable by the
/// user whose project it works in (`0644`, directories `0755`).
pub const DEFAULT_UMASK: u32 = 0o022;

pub(crate) fn default_umask() -> u32 {
    DEFAULT_UMASK
}

/// System roots every toolchain needs, read-only (skipped when absent).
pub const SYSTEM_READ_ONLY: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/nix/store",
    "/run/current-system",
];

/// The system directories of the confined command's `PATH`, after the caller's own entries the
/// child can read (see `plan/env.rs`), unless the profile sets one.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Toolchain directories under `$HOME` that are exposed read-only (nothing else of `$HOME` is):
/// rustup's and cargo's programs, pyenv's and nvm's interpreters, and the user's own programs
/// (`~/.local/bin`, where pip, pipx and uv install them). On the child's `PATH` when on the
/// caller's.
pub const HOME_TOOLCHAINS: &[&str] = &[".cargo/bin", ".rustup", ".pyenv", ".nvm", ".local/bin"];

/// Secrets under `/etc` that are masked although `/etc` is readable.
pub const SYSTEM_SECRETS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh/ssh_host_rsa_key",
    "/etc/ssh/ssh_host_ecdsa_key",
    "/etc/ssh/ssh_host_ed25519_key",
    "/etc/ssh/ssh_host_dsa_key",
    "/etc/security/opasswd",
];

/// Secrets under `$HOME` (denied even if a caller adds `$HOME` as a root).
pub const HOME_SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".config",
    ".netrc",
    ".git-credentials",
    ".cargo/credentials.toml",
    ".cargo/credentials",
    ".docker",
    ".kube",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".vault-token",
    ".terraform.d",
    ".terraformrc",
    ".gradle/gradle.properties",
    ".m2/settings.xml",
    ".password-store",
    ".local/share/keyrings",
    ".bash_history",
    ".zsh_history",
    ".psql_history",
    ".mysql_history",
    ".python_history",
    ".node_repl_history",
    ".lesshst",
    ".viminfo",
    ".azure",
    ".gcloud",
    ".netlify",
    ".git-credential-cache",
    ".zeroclaw",
];

/// Protected paths relative to the workspace by default.
pub const WORKSPACE_PROTECTED: &[&str] = &[".git/hooks", ".git/config"];

impl Profile {
    /// Exactly the defaults a supervised session's shell tool uses: `dir` read-write (and cwd),
    /// the system and home-toolchain roots read-only, `.git/hooks` and `.git/config` protected,
    /// secrets denied, network denied, default limits, minimal environment.
    pub fn for_workspace(dir: impl AsRef<Path>) -> Profile {
        let workspace = absolute(dir.as_ref());
        let home = home_dir();
        let mut read_only: Vec<PathBuf> = SYSTEM_READ_ONLY.iter().map(PathBuf::from).collect();
        let mut denied: Vec<PathBuf> = SYSTEM_SECRETS.iter().map(PathBuf::from).collect();
        if let Some(home) = &home {
            read_only.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
            denied.extend(HOME_SECRETS.iter().map(|s| home.join(s)));
        }
        let protected = WORKSPACE_PROTECTED
            .iter()
            .map(|p| workspace.join(p))
            .collect();
        Profile {
            cwd: workspace.clone(),
            workspace,
            workspace_read_only: false,
            read_only,
            read_write: Vec::new(),
            protected,
            denied,
            network: Network::Deny,
            limits: Limits::default(),
            env: EnvPolicy::default(),
            umask: DEFAULT_UMASK,
            egress_ports: Vec::new(),
            home_binds: Vec::new(),
            layers: None,
            parent_worktree: ParentWorktree::default(),
        }
    }

    /// Lands the workspace's writes through a private layer kept under `layers` (see
    /// [`Profile::layers`]).
    /// The directory is also denied: no call sees another's layer (nor its own).
    pub fn land_through(mut self, layers: impl AsRef<Path>) -> Self {
        let layers = absolute(layers.as_ref());
        self.layers = Some(layers.clone());
        self.deny(layers)
    }

    /// What the command sees of a larger repository the workspace lies in.
    pub fn parent_worktree(mut self, parent: ParentWorktree) -> Self {
        self.parent_worktree = parent;
        self
    }

    /// Adds a read-only root.
    pub fn allow_read(mut self, path: impl AsRef<Path>) -> Self {
        self.read_only.push(absolute(path.as_ref()));
        self
    }

    /// Adds a read-write root.
    pub fn allow_write(mut self, path: impl AsRef<Path>) -> Self {
        self.read_write.push(absolute(path.as_ref()));
        self
    }

    /// Denies a path (the daemon's config directory, its session database, ...).
    pub fn deny(mut self, path: impl AsRef<Path>) -> Self {
        self.denied.push(absolute(path.as_ref()));
        self
    }

    /// Keeps a path inside a writable root read-only, also when it does not exist yet.
    pub fn protect(mut self, path: impl AsRef<Path>) -> Self {
        self.protected.push(absolute(path.as_ref()));
        self
    }

    /// Binds the host directory `host` read-write at `at` inside the child's private HOME
    /// (see [`HomeBind`]); a later bind at the same `at` replaces an earlier one.
    pub fn bind_in_home(mut self, host: impl AsRef<Path>, at: impl AsRef<Path>) -> Self {
        let at = at.as_ref().to_path_buf();
        self.home_binds.retain(|b| b.at != at);
        self.home_binds.push(HomeBind {
            host: absolute(host.as_ref()),
            at,
        });
        self
    }

    /// Sets the network policy.
    pub fn network(mut self, network: Network) -> Self {
        self.network = network;
        self
    }

    /// Sets the destination ports transparent egress listens on (`network = proxy`).
    pub fn egress_ports(mut self, ports: Vec<u16>) -> Self {
        self.egress_ports = ports;
        self
    }

    /// Replaces the limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the child's umask (only the permission bits, `0o777`, count).
    pub fn umask(mut self, mask: u32) -> Self {
        self.umask = mask & 0o777;
        self
    }

    /// Passes an environment variable through from the caller when it is set.
    pub fn pass_env(mut self, name: impl Into<String>) -> Self {
        self.env.pass.push(name.into());
        self
    }

    /// Sets an environment variable for the child.
    pub fn set_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.set.push((name.into(), value.into()));
        self
    }

    /// Sets the working directory (must lie inside an allowed root).
    pub fn cwd(mut self, path: impl AsRef<Path>) -> Self {
        self.cwd = absolute(path.as_ref());
        self
    }

    /// The workspace read-only, for a call that only reads (the file tools' reads and
    /// searches): it becomes one of the read-only roots. Nothing of it can then be created
    /// or changed, so nothing is guarded or staged in it (its `.git` neither: see
    /// `crate::git::missing`).
    pub fn read_only_workspace(mut self) -> Self {
        if !self.workspace_read_only {
            self.read_only.push(self.workspace.clone());
            self.workspace_read_only = true;
        }
        self
    }

    /// All writable roots: the workspace first (unless it is read-only).
    pub fn writable_roots(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.workspace)
            .filter(|_| !self.workspace_read_only)
            .chain(self.read_write.iter())
    }

    /// The first writable root (or the workspace, writable or not) that equals or lies inside
    /// one of this profile's denied paths, with that denied path. A denied path *inside* a
    /// root is masked; one holding a root cannot be, so such a profile is a setup error on
    /// every backend.
    pub fn root_inside_denied(&self) -> Option<(&Path, &Path)> {
        let mut roots = std::iter::once(&self.workspace).chain(self.read_write.iter());
        roots.find_map(|root| {
            self.denied
                .iter()
                .find(|denied| root.starts_with(denied))
                .map(|denied| (root.as_path(), denied.as_path()))
        })
    }
}

/// The caller's home directory from `$HOME`, if absolute.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute() && h != Path::new("/"))
}

/// Makes `path` absolute against the current directory and canonical when it exists, so the
/// kernel-facing layers never see `..` or a symlink the caller did not mean.
pub fn absolute(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn for_workspace_makes_the_workspace_writable_and_the_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let p = Profile::for_workspace(dir.path());
        let ws = dir.path().canonicalize().unwrap();
        assert_eq!(p.workspace, ws);
        assert_eq!(p.cwd, ws);
        assert_eq!(p.writable_roots().collect::<Vec<_>>(), vec![&ws]);
        assert_eq!(p.network, Network::Deny);
    }

    #[test]
    fn defaults_protect_git_hooks_and_config() {
        let p = Profile::for_workspace("/w");
        assert!(p.protected.contains(&PathBuf::from("/w/.git/hooks")));
        assert!(p.protected.contains(&PathBuf::from("/w/.git/config")));
    }

    #[test]
    fn defaults_read_system_roots_but_not_home() {
        let p = Profile::for_workspace("/w");
        for root in ["/usr", "/etc", "/bin", "/lib", "/opt", "/nix/store"] {
            assert!(p.read_only.contains(&PathBuf::from(root)), "{root}");
        }
        if let Some(home) = home_dir() {
            assert!(!p.read_only.contains(&home));
            assert!(p.read_only.contains(&home.join(".cargo/bin")));
            assert!(!p.read_only.contains(&home.join(".cargo")));
            assert!(p.denied.contains(&home.join(".ssh")));
            assert!(p.denied.contains(&home.join(".cargo/credentials.toml")));
        }
    }

    #[test]
    fn defaults_deny_etc_secrets() {
        let p = Profile::for_workspace("/w");
        for secret in [
            "/etc/shadow",
            "/etc/gshadow",
            "/etc/sudoers",
            "/etc/sudoers.d",
        ] {
            assert!(p.denied.contains(&PathBuf::from(secret)), "{secret}");
        }
    }

    #[test]
    fn builder_methods_add_to_the_defaults() {
        let p = Profile::for_workspace("/w")
            .allow_read("/srv/data")
            .allow_write("/srv/out")
            .deny("/srv/data/secret")
            .network(Network::Allow)
            .pass_env("RUST_LOG")
            .cwd("/w/sub");
        assert!(p.read_only.contains(&PathBuf::from("/srv/data")));
        assert_eq!(p.read_write, vec![PathBuf::from("/srv/out")]);
        assert!(p.denied.contains(&PathBuf::from("/srv/data/secret")));
        assert_eq!(p.network, Network::Allow);
        assert_eq!(p.env.pass, vec!["RUST_LOG".to_string()]);
        assert_eq!(p.cwd, PathBuf::from("/w/sub"));
    }

    #[test]
    fn a_root_inside_a_denied_path_is_found_one_holding_it_is_not() {
        let p = Profile::for_workspace("/srv/secret/project").deny("/srv/secret");
        assert_eq!(
            p.root_inside_denied(),
            Some((Path::new("/srv/secret/project"), Path::new("/srv/secret")))
        );
        let p = Profile::for_workspace("/srv/secret").deny("/srv/secret");
        assert!(p.root_inside_denied().is_some(), "equal paths");
        let p = Profile::for_workspace("/w")
            .allow_write("/srv/secret/out")
            .deny("/srv/secret");
        assert_eq!(
            p.root_inside_denied().map(|(root, _)| root),
            Some(Path::new("/srv/secret/out"))
        );
        let p = Profile::for_workspace("/srv").deny("/srv/secret");
        assert_eq!(p.root_inside_denied(), None, "masked inside the root");
        let p = Profile::for_workspace("/srv/secretive").deny("/srv/secret");
        assert_eq!(p.root_inside_denied(), None, "whole components only");
    }

    #[test]
    fn a_read_only_workspace_is_a_read_only_root_and_still_checked_against_denied_paths() {
        let p = Profile::for_workspace("/w")
            .allow_write("/out")
            .read_only_workspace();
        assert_eq!(
            p.writable_roots().collect::<Vec<_>>(),
            [&PathBuf::from("/out")]
        );
        let twice = p.clone().read_only_workspace();
        let as_root = |p: &Profile| p.read_only.iter().filter(|r| *r == Path::new("/w")).count();
        assert_eq!((as_root(&p), as_root(&twice)), (1, 1));
        let p = Profile::for_workspace("/srv/secret/project")
            .read_only_workspace()
            .deny("/srv/secret");
        assert_eq!(
            p.root_inside_denied().map(|(root, _)| root),
            Some(Path::new("/srv/secret/project"))
        );
    }

    #[test]
    fn limits_have_nonzero_defaults() {
        let l = Limits::default();
        assert!(l.wall_time.as_secs() > 0 && l.cpu_secs > 0 && l.memory_bytes > 0);
        assert!(l.processes > 0 && l.file_size_bytes > 0 && l.open_files > 0);
        assert!(l.output_bytes > 0);
    }

    #[test]
    fn network_parses_from_its_names() {
        assert_eq!("deny".parse::<Network>().unwrap(), Network::Deny);
        assert_eq!("allow".parse::<Network>().unwrap(), Network::Allow);
        assert!("maybe".parse::<Network>().is_err());
    }
}
