//! Validation of a repository's control files that a confined run wrote (its private stage,
//! see [`super::stage`]) before they reach the host: what the host's git would read and run.
//!
//! - **config** (and `config.worktree`): filtered by an allowlist of keys known to be safe
//!   ([`ALLOWED`]); every other key is refused — the rule is the class (a key that makes git
//!   run a program or read more configuration), which an allowlist holds and a denylist does
//!   not. A refused key loses its own (logical) line only, the file's other bytes kept
//!   ([`filter_config_lines`]); a line the parser cannot read, or an entry outside any section
//!   it read, is cut too, so every byte kept is a header, whitespace, a comment or an entry the
//!   parser read and allowed. [`filter_config`] is the canonical renderer other callers use.
//! - **hooks/**: only `*.sample` regular files are kept (`git init` copies them from the
//!   templates; git never runs them).
//! - **info/attributes**: lines naming a `filter`, `diff` or `merge` driver are removed.
//! - **commondir**, **gitdir** files, and symlinks in place of any of these: removed.
//!
//! Each refusal is one line for the tool result and the log, e.g.
//! `git: refused core.fsmonitor in .git/config (runs a program outside the sandbox)`.

use std::path::Path;

use std::os::unix::fs::{FileTypeExt, MetadataExt};

use super::config::{Entry, lines, parse, render};

/// Config keys (lowercase `section.key`, or `section.*.key` for any subsection) a repository
/// created in the sandbox may keep: identity, remotes and branches, submodule paths and URLs,
/// the repository's format and the worktree's file-system behaviour. None runs a program or
/// names more configuration.
pub const ALLOWED: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "core.sparsecheckout",
    "core.sparsecheckoutcone",
    "core.abbrev",
    "core.compression",
    "core.untrackedcache",
    "core.checkstat",
    "core.trustctime",
    "extensions.worktreeconfig",
    "extensions.objectformat",
    "extensions.refstorage",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "remote.*.push",
    "remote.*.tagopt",
    "remote.*.prune",
    "remote.*.mirror",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
    "branch.*.pushremote",
    "submodule.*.url",
    "submodule.*.path",
    "submodule.*.active",
    "submodule.*.branch",
    "submodule.active",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "fetch.prune",
    "index.version",
];

/// Whether `key` (`section.key` or `section.sub.key`, section and key lowercase) is allowed.
pub fn allowed(section: &str, sub: Option<&str>, key: &str) -> bool {
    let name = match sub {
        Some(_) => format!("{section}.*.{key}"),
        None => format!("{section}.{key}"),
    };
    ALLOWED.contains(&name.as_str())
}

/// Why a refused key matters, for the one-line report.
fn reason(section: &str, key: &str) -> &'static str {
    match (section, key) {
        ("include" | "includeif", _) => "reads more configuration",
        (
            "core",
            "fsmonitor" | "hookspath" | "sshcommand" | "pager" | "editor" | "askpass" | "gitproxy",
        )
        | ("diff" | "merge" | "filter" | "credential" | "gpg" | "sequence" | "alias", _)
        | ("uploadpack" | "protocol", _) => "runs a program outside the sandbox",
        ("core", "worktree") => "points git at another worktree",
        _ => "not on the list of keys known to be safe",
    }
}

/// Filters the config text: the allowed entries rendered, and one refusal line per refused
/// key (`shown` is the file's name in the report, e.g. `.git/config`).
pub fn filter_config(text: &str, shown: &str) -> (String, Vec<String>) {
    filter_config_with(text, shown, |_| false)
}

/// [`filter_config`], also keeping the entries `extra` accepts.
pub fn filter_config_with(
    text: &str,
    shown: &str,
    extra: impl Fn(&Entry) -> bool,
) -> (String, Vec<String>) {
    let (mut kept, mut refused) = (Vec::new(), Vec::new());
    for e in parse(text) {
        if allowed(&e.section, e.sub.as_deref(), &e.key) || extra(&e) {
            kept.push(e);
        } else {
            let line = refusal(&e, shown);
            if !refused.contains(&line) {
                refused.push(line);
            }
        }
    }
    (render(&kept), refused)
}

/// Filters the config text line by line: a refused entry's logical line (continuations
/// included) is cut, or, for an entry on a section header's line, the entry part of it (the
/// header kept); so is a line the parser cannot read (a header, or an entry outside a
/// section). Every other byte is kept. Returns the text and one refusal line per refused key.
pub fn filter_config_lines(
    text: &str,
    shown: &str,
    extra: impl Fn(&Entry) -> bool,
) -> (String, Vec<String>) {
    let (mut out, mut refused) = (String::new(), Vec::<String>::new());
    let mut refuse = |line: String| {
        if !refused.contains(&line) {
            refused.push(line);
        }
    };
    for l in lines(text) {
        let bytes = &text[l.range.clone()];
        let entry_ok = |e: &Entry| allowed(&e.section, e.sub.as_deref(), &e.key) || extra(e);
        if l.headers_read && (l.blank || l.entry.as_ref().is_some_and(entry_ok)) {
            out.push_str(bytes);
            continue;
        }
        match (&l.entry, l.headers_read) {
            (Some(e), true) => refuse(refusal(e, shown)),
            _ => refuse(format!(
                "git: refused an unreadable line in {shown} (git might read it otherwise)"
            )),
        }
        if l.headers_read {
            let head = &bytes[..l.entry_at.min(bytes.len())];
            if !head.trim().is_empty() {
                out.push_str(head);
                out.push('\n');
            }
        }
    }
    (out, refused)
}

/// The refusal line for the entry `e` of the file shown as `shown`.
fn refusal(e: &Entry, shown: &str) -> String {
    let name = match &e.sub {
        Some(sub) => format!("{}.{sub}.{}", e.section, e.key),
        None => format!("{}.{}", e.section, e.key),
    };
    format!(
        "git: refused {name} in {shown} ({})",
        reason(&e.section, &e.key)
    )
}

/// Filters an attributes file: lines naming a filter, diff or merge driver are dropped.
pub fn filter_attributes(text: &str, shown: &str) -> (String, Vec<String>) {
    filter_attributes_with(text, shown, |_| false)
}

/// [`filter_attributes`], also keeping the lines `extra` accepts; every kept line's bytes
/// (its line ending included) are kept as written.
pub fn filter_attributes_with(
    text: &str,
    shown: &str,
    extra: impl Fn(&str) -> bool,
) -> (String, Vec<String>) {
    let (mut kept, mut refused) = (String::new(), Vec::new());
    for line in text.split_inclusive('\n') {
        let names_driver = line.split_whitespace().skip(1).any(|attr| {
            let name = attr.split('=').next().unwrap_or("");
            ["filter", "diff", "merge"].contains(&name) && attr.contains('=')
        });
        if names_driver && !line.trim_start().starts_with('#') && !extra(line) {
            refused.push(format!(
                "git: refused {:?} in {shown} (names a filter or diff driver)",
                line.trim()
            ));
        } else {
            kept.push_str(line);
        }
    }
    (kept, refused)
}

/// Sanitizes one git directory in place (`dir`, shown as `shown`, e.g. `.git`): config and
/// config.worktree filtered, hooks other than samples removed, info/attributes filtered,
/// commondir and gitdir removed unless `links_allowed` (a linked worktree's own directory,
/// whose `commondir` must say `../..`). A submodule's git directory (`module`: where it will
/// land, and the workspace) may keep a `core.worktree` that names a directory inside the
/// workspace, as `git submodule` writes it. Never follows a symlink: one in place of a control
/// file is removed. Returns the refusals.
pub fn sanitize_git_dir(
    dir: &Path,
    shown: &str,
    links_allowed: bool,
    module: Option<(&Path, &Path)>,
) -> Vec<String> {
    sanitize_git_dir_over(dir, shown, links_allowed, module, None)
}

/// [`sanitize_git_dir`] for a git directory in an overlay's upper layer over `lower` (the
/// same git directory in the workspace, if any): a config entry, or an attributes line, the
/// workspace's own file already holds is kept (the host's own configuration, copied up when
/// the run changed another key); a whiteout (a removal) is never refused.
pub fn sanitize_git_dir_over(
    dir: &Path,
    shown: &str,
    links_allowed: bool,
    module: Option<(&Path, &Path)>,
    lower: Option<&Path>,
) -> Vec<String> {
    let mut refused = Vec::new();
    let lower_text = |name: &str| {
        let path = lower?.join(name);
        let meta = path.symlink_metadata().ok()?;
        meta.is_file().then(|| std::fs::read(&path).ok()).flatten()
    };
    let worktree_inside = |e: &Entry| {
        let Some((landing, workspace)) = module else {
            return false;
        };
        let Some(value) = e.value.as_deref().filter(|v| !v.is_empty()) else {
            return false;
        };
        let target = super::targets::normalize(&landing.join(value));
        e.section == "core"
            && e.sub.is_none()
            && e.key == "worktree"
            && target.starts_with(workspace)
            && !target.starts_with(workspace.join(".git"))
    };
    for name in ["config", "config.worktree"] {
        let path = dir.join(name);
        let Some(text) = regular_text(&path, &format!("{shown}/{name}"), &mut refused) else {
            continue;
        };
        let own = lower_text(name)
            .map(|b| parse(&String::from_utf8_lossy(&b)))
            .unwrap_or_default();
        let (clean, r) = filter_config_lines(&text, &format!("{shown}/{name}"), |e| {
            worktree_inside(e) || own.contains(e)
        });
        if !r.is_empty() {
            refused.extend(r);
            replace(&path, &clean);
        }
    }
    let hooks = dir.join("hooks");
    match hooks.symlink_metadata() {
        Ok(m) if m.is_dir() => {
            for entry in std::fs::read_dir(&hooks).into_iter().flatten().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let plain = entry.file_type().is_ok_and(|t| t.is_file());
                let removal = entry
                    .path()
                    .symlink_metadata()
                    .is_ok_and(|m| is_whiteout(&m));
                // An existing repository's hooks are the user's: not removed either.
                if removal && lower.is_some() {
                    refused.push(format!(
                        "git: refused the removal of hook {name} in {shown}/hooks (the host's hooks stay)"
                    ));
                    remove(&entry.path());
                    continue;
                }
                if !(removal || plain && name.ends_with(".sample")) {
                    refused.push(format!(
                        "git: refused hook {name} in {shown}/hooks (runs a program outside the sandbox)"
                    ));
                    remove(&entry.path());
                }
            }
        }
        Ok(m) if is_whiteout(&m) => {}
        Ok(_) => {
            refused.push(format!(
                "git: refused {shown}/hooks (not a directory: runs a program outside the sandbox)"
            ));
            remove(&hooks);
        }
        Err(_) => {}
    }
    let attributes = dir.join("info/attributes");
    let shown_attr = format!("{shown}/info/attributes");
    let info_is_dir = real_dir(&dir.join("info"));
    if !info_is_dir
        && dir
            .join("info")
            .symlink_metadata()
            .is_ok_and(|m| !is_whiteout(&m))
    {
        refused.push(format!("git: refused {shown}/info (not a directory)"));
        remove(&dir.join("info"));
    }
    if let Some(text) = info_is_dir
        .then(|| regular_text(&attributes, &shown_attr, &mut refused))
        .flatten()
    {
        let own = lower_text("info/attributes")
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let own: Vec<&str> = own.split_inclusive('\n').map(str::trim_end).collect();
        let (clean, r) =
            filter_attributes_with(&text, &shown_attr, |l| own.contains(&l.trim_end()));
        if !r.is_empty() {
            refused.extend(r);
            replace(&attributes, &clean);
        }
    }
    for name in ["commondir", "gitdir"] {
        let path = dir.join(name);
        if path.symlink_metadata().ok().is_none_or(|m| is_whiteout(&m)) {
            continue;
        }
        let keep = links_allowed
            && (name == "gitdir"
                || std::fs::read_to_string(&path).is_ok_and(|t| t.trim_end() == "../.."));
        if !keep {
            refused.push(format!(
                "git: refused {shown}/{name} (points git at another repository)"
            ));
            remove(&path);
        }
    }
    refused
}

/// The text of a regular file; a symlink or other non-file there is removed and refused.
fn regular_text(path: &Path, shown: &str, refused: &mut Vec<String>) -> Option<String> {
    let meta = path.symlink_metadata().ok().filter(|m| !is_whiteout(m))?;
    if !meta.is_file() {
        refused.push(format!("git: refused {shown} (not a regular file)"));
        remove(path);
        return None;
    }
    match std::fs::read(path) {
        Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        Err(_) => {
            refused.push(format!("git: refused {shown} (unreadable)"));
            remove(path);
            None
        }
    }
}

/// Whether `meta` is an overlayfs whiteout (a character device numbered 0:0): a removal.
pub fn is_whiteout(meta: &std::fs::Metadata) -> bool {
    meta.file_type().is_char_device() && meta.rdev() == 0
}

/// Whether `path` is a directory itself (not a symlink to one).
pub fn real_dir(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_dir())
}

/// Writes `text` to a new file beside `path` (never through a symlink the run planted there;
/// the old file's owner and permission bits kept, set-id bits not) and renames it over
/// `path`; on failure `path` is removed.
fn replace(path: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let old = path.symlink_metadata().ok();
    let tmp = path.with_extension("zeroclaw-tmp");
    remove(&tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&tmp)
        .and_then(|mut f| {
            if let Some(old) = &old {
                // Landing as root, the rewritten file stays the run's (a failed chown, not
                // root, leaves it the writer's own).
                let _ = std::os::unix::fs::fchown(&f, Some(old.uid()), Some(old.gid()));
                f.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o777))?;
            }
            f.write_all(text.as_bytes())
        });
    if written.is_err() || std::fs::rename(&tmp, path).is_err() {
        remove(&tmp);
        remove(path);
    }
}

fn remove(path: &Path) {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => drop(std::fs::remove_dir_all(path)),
        Ok(_) => drop(std::fs::remove_file(path)),
        Err(_) => {}
    }
}

/// Sanitizes every git directory below `dir` (shown as `shown`), landing in the workspace
/// `ws` (for [`super::land`]: a submodule the run added to an existing repository).
pub(super) fn sanitize_modules(dir: &Path, shown: &str, ws: &Path, refused: &mut Vec<String>) {
    modules(dir, shown, ws, 0, refused);
}

/// Every git directory below `dir` (one with a `HEAD`; a module's name may hold slashes).
fn modules(dir: &Path, shown: &str, ws: &Path, depth: usize, refused: &mut Vec<String>) {
    if !real_dir(dir) {
        return;
    }
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in list.flatten() {
        if depth > 16 || !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        let shown = format!("{shown}/{}", entry.file_name().to_string_lossy());
        if path.join("HEAD").symlink_metadata().is_ok() {
            let landing = ws.join(&shown);
            refused.extend(sanitize_git_dir(&path, &shown, false, Some((&landing, ws))));
            let below = format!("{shown}/modules");
            modules(&path.join("modules"), &below, ws, depth + 1, refused);
        } else {
            modules(&path, &shown, ws, depth + 1, refused);
        }
    }
}

#[cfg(test)]
mod tests;
