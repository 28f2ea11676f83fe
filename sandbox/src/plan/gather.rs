//! Gathering [`HostFacts`] from this machine: every host read a plan depends on, made once per
//! call before [`super::build`], and only those that backend's plan looks at.

use std::path::{Path, PathBuf};

use super::carve::{at_or_below, below, normalized, normalized_set, subtract_with};
use super::facts::{GitReader, HostFacts, Kind, PathFact};
use super::roots::{toolchain_roots, unowned_roots};
use crate::backend::Backend;
use crate::host::scan;
use crate::profile::{HOME_TOOLCHAINS, Network, ParentWorktree, Profile, home_dir};

/// [`subtract_with`] listing the real directories (`host::scan::entries`): what a
/// Landlock ruleset can grant of `roots` without `denied` (the helper's `/proc`, the root
/// crate's full-level shell roots).
pub fn subtract_on_host(roots: Vec<PathBuf>, denied: &[PathBuf]) -> Vec<PathBuf> {
    subtract_with(roots, denied, &scan::entries)
}

impl HostFacts {
    /// Reads what [`super::build`] needs to plan `profile` for `backend` on this machine;
    /// `git` reads the git facts and the user's global config (`crate::git::READER`).
    pub fn gather(backend: Backend, profile: &Profile, git: GitReader) -> HostFacts {
        let namespaced = matches!(backend, Backend::Namespaces | Backend::Bubblewrap);
        let carved = !namespaced && backend != Backend::None;
        let root = nix::unistd::geteuid().is_root();
        let home = home_dir();
        // Git hook: the larger repository the workspace lies in, shown read-only; then, in
        // one pass, what the configs of both point at in the workspace, the repository's other
        // control files, and the git directories a stage would replace.
        let parent_repository = (profile.parent_worktree == ParentWorktree::ReadOnly
            && !matches!(backend, Backend::None | Backend::Seatbelt))
        .then(|| (git.parent)(&profile.workspace))
        .flatten()
        .filter(|r| r.parent().is_some() && home.as_ref().is_none_or(|h| !h.starts_with(r)));
        let mut facts = HostFacts {
            root,
            home: home.clone(),
            launcher_pid: std::process::id(),
            git: (git.read)(&profile.workspace, parent_repository.as_deref()),
            parent_repository,
            landlock_abi: match backend {
                Backend::Landlock => crate::sys::landlock_abi().unwrap_or(0),
                _ => 0,
            },
            ..HostFacts::default()
        };
        // What the rest reads is the profile as the plan will see it (`HostFacts::extend`).
        let extended = facts.extend(profile);
        let profile = extended.as_ref();
        let names = ["LANG", "TERM", "PATH"]
            .into_iter()
            .chain(profile.env.pass.iter().map(String::as_str));
        for name in names {
            if let Some(value) = std::env::var_os(name) {
                facts.vars.insert(name.into(), value);
            }
        }
        // The read-only roots (their kinds and links decide what is bound or ruled) and the
        // fixed places; on the namespace backends also the writable roots and every protected
        // and denied path, with the directories between it and the outermost writable root
        // holding it (placeholders and pins are planned along them). The Landlock-only rung
        // mounts nothing: it only resolves its roots and hidden paths (`gather_carving`).
        // The workspace and the cwd, which the planner checks are directories.
        let mut at: Vec<PathBuf> = vec![profile.workspace.clone(), profile.cwd.clone()];
        at.extend(profile.read_only.iter().cloned());
        if namespaced {
            at.extend(profile.writable_roots().cloned());
            let guarded = profile.protected.iter().chain(&profile.denied);
            // Compared as normalized bytes (`carve::at_or_below`): a full shell's profile has
            // dozens of writable roots for each of dozens of guarded paths.
            let roots: Vec<(PathBuf, &PathBuf)> = profile
                .writable_roots()
                .map(|r| (normalized(r), r))
                .collect();
            for path in guarded {
                let normal = normalized(path);
                let outermost = roots
                    .iter()
                    .filter(|(n, _)| at_or_below(&normal, n))
                    .min_by_key(|(n, _)| n.as_os_str().len())
                    .map(|(_, r)| *r);
                match outermost {
                    Some(root) => at.extend(
                        path.ancestors()
                            .take_while(|a| *a != root.as_path())
                            .map(Path::to_path_buf),
                    ),
                    None => at.push(path.clone()),
                }
            }
        }
        // The caller's PATH entries (which of them the child's PATH keeps: `env.rs`).
        at.extend(super::env::path_entries(&facts).map(Path::to_path_buf));
        // The user's git identity and safe settings, validated.
        if let (Some(home), true) = (
            &home,
            backend != Backend::Seatbelt && backend != Backend::None,
        ) {
            let xdg = std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from);
            facts.git_global = (git.global)(home, xdg.as_deref());
        }
        at.push(PathBuf::from("/etc"));
        at.push(profile.workspace.join(".git/commondir"));
        if namespaced && let Some(home) = &home {
            at.extend(super::home_binds::places(profile, home));
        }
        if let Some(home) = &home {
            at.push(home.join(".rustup"));
            at.extend(HOME_TOOLCHAINS.iter().map(|t| home.join(t)));
        }
        facts.paths.reserve(at.len());
        for path in at {
            facts.look(path);
        }
        let unowned = if backend == Backend::Namespaces {
            unowned_roots(profile, &facts)
        } else {
            Vec::new()
        };
        if root && backend != Backend::None {
            facts.proc_private = if !namespaced && profile.network == Network::Deny {
                // The Landlock-only rung shares the host's network namespace; with the network
                // denied the child has no use for its sysctls, so all of `/proc/sys/net` is
                // hidden: one carve of `/proc/sys` instead of a rule for each sibling of every
                // root-only file below it (about 4 ms per call).
                let mut hidden = scan::proc_private(false);
                hidden.push(PathBuf::from("/proc/sys/net"));
                hidden
            } else {
                scan::proc_private(sees_host_net(backend, profile.network))
            };
            for toolchain in toolchain_roots(profile, &facts) {
                if namespaced && unowned.contains(&toolchain) {
                    continue; // attached idmapped: the helper scans it only if that fails
                }
                let private = scan::toolchain_private(&toolchain);
                facts.toolchain_private.insert(toolchain, private);
            }
        }
        if namespaced {
            facts.user_limits = crate::host::user_counts::host_limits();
            if !unowned.iter().any(|u| u == Path::new("/etc")) {
                facts.etc_private = scan::etc_private().to_vec();
            }
            // Masked as a file or a directory, when still there.
            let private: Vec<PathBuf> = facts
                .etc_private
                .iter()
                .chain(facts.toolchain_private.values().flatten())
                .cloned()
                .collect();
            for path in private {
                facts.look(path);
            }
        }
        if carved {
            if root {
                facts.etc_private = scan::etc_private().to_vec();
            }
            facts.gather_carving(profile);
        }
        facts
    }

    /// The Landlock-only backend's: the real path of each root and hidden path, and the
    /// entries of each directory between a root and a hidden path below it (what
    /// [`super::subtract_with`] lists).
    fn gather_carving(&mut self, profile: &Profile) {
        let mut roots: Vec<PathBuf> = profile
            .read_only
            .iter()
            .filter(|p| self.exists(p) && self.link(p).is_none())
            .cloned()
            .collect();
        roots.extend(profile.writable_roots().cloned());
        // What `super::landlock::hidden` names by its real path: the denied paths and the
        // toolchains' root-only files.
        let mut resolved: Vec<PathBuf> = profile.denied.clone();
        if self.root {
            resolved.extend(self.toolchain_private.values().flatten().cloned());
        }
        for path in roots.iter().chain(&resolved) {
            self.resolve(path);
        }
        let real: Vec<PathBuf> = roots
            .iter()
            .map(|r| normalized(&self.canonical(r)))
            .collect();
        let hidden = super::landlock::hidden(profile, self);
        let hidden = normalized_set(hidden.iter().map(PathBuf::as_path));
        for root in &real {
            for denied in below(&hidden, root) {
                for dir in denied.ancestors().skip(1) {
                    if !self.entries.contains_key(dir)
                        && let Some(entries) = scan::entries(dir)
                    {
                        self.entries.insert(dir.to_path_buf(), entries);
                    }
                    if dir == root {
                        break;
                    }
                }
            }
        }
    }

    /// Records what `lstat` (and `readlink`, `stat` for a symlink) find at `path`, once.
    fn look(&mut self, path: PathBuf) {
        if self.paths.contains_key(&path) {
            return;
        }
        let fact = match path.symlink_metadata() {
            Err(_) => PathFact::default(),
            Ok(meta) => {
                let t = meta.file_type();
                if t.is_symlink() {
                    PathFact {
                        kind: Some(Kind::Symlink),
                        target: std::fs::read_link(&path).ok(),
                        dir: path.is_dir(),
                        canonical: None,
                    }
                } else {
                    PathFact {
                        kind: Some(if t.is_dir() { Kind::Dir } else { Kind::File }),
                        target: None,
                        dir: t.is_dir(),
                        canonical: None,
                    }
                }
            }
        };
        self.paths.insert(path, fact);
    }

    /// Records the real path of `path`, when it resolves. A path [`Self::look`] found nothing
    /// at resolves to nothing either (`realpath` fails on it): not asked again.
    fn resolve(&mut self, path: &Path) {
        if self.paths.get(path).is_some_and(|f| f.kind.is_none()) {
            return;
        }
        let canonical = std::fs::canonicalize(path).ok();
        self.paths.entry(path.to_path_buf()).or_default().canonical = canonical;
    }
}

/// Whether the child's `/proc/sys/net` is the host's, whose root-only files must be hidden
/// (a scan of a thousand entries): a new network namespace has its own. `deny` and `proxy`
/// on a namespaced backend run in a new one ([`super::EgressPlan::own_namespace`]), which
/// bwrap could not even mask the host's entries in (it lacks some); `allow`, and every mode
/// on a backend without namespaces (the Landlock-only rung: its `deny` refuses sockets, not
/// the host's `/proc/sys/net`), share the host's.
pub(super) fn sees_host_net(backend: Backend, network: Network) -> bool {
    let namespaced = matches!(backend, Backend::Namespaces | Backend::Bubblewrap);
    network == Network::Allow || !namespaced
}
