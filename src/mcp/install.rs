//! Where a stdio MCP server is installed, and whether it can start there: its executable
//! (a path, or a name found on the PATH the sandbox gives it) and the files its arguments
//! name (a script) are located on the host, and their directories become read-only roots of
//! the server's profile wherever they are — the directory itself, or the prefix above a
//! `bin` directory (a virtualenv, a node prefix). Never a forbidden path, `/`, or the home
//! directory (or one holding it) as a whole: such a server is refused with the reason. The
//! same check runs at `session/new`, so the user hears at once of a server that cannot start.

use std::path::{Path, PathBuf};

use zeroclaw_sandbox::profile::DEFAULT_PATH;

use super::spec::ServerSpec;
use crate::policy::Policy;

/// The read-only roots `spec` needs beyond `profile`'s (confined in `cwd` under `policy`), or
/// why it cannot start. An http server needs none.
pub fn roots(
    spec: &ServerSpec,
    policy: &Policy,
    cwd: &Path,
    profile: &zeroclaw_sandbox::Profile,
) -> Result<Vec<PathBuf>, String> {
    if spec.http.is_some() {
        return Ok(Vec::new());
    }
    let executable = executable(spec, cwd)?;
    let mut files = vec![executable.clone()];
    files.extend(executable.canonicalize().ok());
    for arg in &spec.args {
        let path = Path::new(arg);
        if path.is_absolute() && path.exists() {
            files.push(path.to_path_buf());
            files.extend(path.canonicalize().ok());
        }
    }
    let readable = |dir: &Path| {
        profile
            .read_only
            .iter()
            .chain(profile.writable_roots())
            .any(|root| dir.starts_with(root))
    };
    let mut roots: Vec<PathBuf> = Vec::new();
    for file in files {
        let denied = policy.forbidden_match(&file).or_else(|| {
            let mut denied = profile.denied.iter();
            denied.find(|d| file.starts_with(d)).map(PathBuf::as_path)
        });
        if let Some(denied) = denied {
            return Err(format!(
                "{} lies in the forbidden path {}",
                file.display(),
                denied.display()
            ));
        }
        let dir = install_dir(&file);
        if readable(&file) || roots.iter().any(|r| dir.starts_with(r)) {
            continue;
        }
        check_dir(&dir, &file)?;
        roots.push(dir);
    }
    Ok(roots)
}

/// One line per server of `specs` that cannot start in `cwd` under `policy`, naming it and
/// why (what `session/new` tells the user).
pub fn preflight(specs: &[ServerSpec], policy: &Policy, cwd: &Path) -> Vec<String> {
    let profile = policy.profile(cwd, &[]);
    specs
        .iter()
        .filter_map(|spec| {
            let reason = roots(spec, policy, cwd, &profile).err()?;
            Some(format!(
                "MCP server {} cannot start: {reason}; its tools will fail",
                spec.name
            ))
        })
        .collect()
}

/// The server's executable on the host: `command` as a path (relative to `cwd`), or found on
/// the PATH its environment sets, else the one the sandbox builds from the daemon's. The error
/// says why not.
fn executable(spec: &ServerSpec, cwd: &Path) -> Result<PathBuf, String> {
    let command = Path::new(&spec.command);
    if spec.command.contains('/') {
        let path = cwd.join(command);
        return match std::fs::metadata(&path) {
            Ok(m) if m.is_file() && is_executable(&m) => Ok(path),
            Ok(_) => Err(format!("{} is not an executable file", path.display())),
            Err(e) => Err(format!("{}: {e}", path.display())),
        };
    }
    let given = spec.env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v);
    // The sandbox's PATH: the daemon's own entries (the child keeps those it can read, and
    // the directory found here is exposed), `~/.cargo/bin`, the system directories.
    let cargo = zeroclaw_sandbox::profile::home_dir().map(|home| home.join(".cargo/bin"));
    let own = std::env::var("PATH").unwrap_or_default();
    let default = [Some(own), cargo.map(|c| c.display().to_string())]
        .into_iter()
        .flatten()
        .chain([DEFAULT_PATH.to_owned()])
        .collect::<Vec<_>>()
        .join(":");
    let path = given.cloned().unwrap_or(default);
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(command))
        .find(|p| std::fs::metadata(p).is_ok_and(|m| m.is_file() && is_executable(&m)))
        .ok_or_else(|| format!("{}: command not found on PATH {path}", spec.command))
}

fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// The directory to expose for `file`: a directory itself, else the file's own directory or
/// the prefix above a `bin` directory.
fn install_dir(file: &Path) -> PathBuf {
    if file.is_dir() {
        return file.to_path_buf();
    }
    let dir = file.parent().unwrap_or(Path::new("/"));
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(prefix)) if name == "bin" && prefix.parent().is_some() => {
            prefix.to_path_buf()
        }
        _ => dir.to_path_buf(),
    }
}

/// Refuses exposing `/`, or the home directory or one holding it, as a whole.
fn check_dir(dir: &Path, file: &Path) -> Result<(), String> {
    let home = zeroclaw_sandbox::profile::home_dir();
    let too_wide = dir.parent().is_none() || home.is_some_and(|home| home.starts_with(dir));
    if too_wide {
        return Err(format!(
            "{} would need all of {} readable; install it in a directory of its own",
            file.display(),
            dir.display()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bin_directory_exposes_its_prefix() {
        assert_eq!(
            install_dir(Path::new("/opt/venv/bin/python")),
            Path::new("/opt/venv")
        );
        assert_eq!(install_dir(Path::new("/bin/sh")), Path::new("/bin"));
        assert_eq!(
            install_dir(Path::new("/srv/tools/server.py")),
            Path::new("/srv/tools")
        );
    }

    fn server_in(dir: &Path) -> ServerSpec {
        use std::os::unix::fs::PermissionsExt;
        let file = dir.join("srv");
        std::fs::write(&file, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        ServerSpec {
            name: "s".into(),
            command: file.display().to_string(),
            args: Vec::new(),
            env: Vec::new(),
            trusted: false,
            http: None,
        }
    }

    #[test]
    fn a_server_directory_is_exposed_unless_forbidden() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        let spec = server_in(&dir);
        let cwd = tempfile::tempdir().unwrap();
        let mut policy = Policy::default();
        let profile = policy.profile(cwd.path(), &[]);
        assert_eq!(
            roots(&spec, &policy, cwd.path(), &profile),
            Ok(vec![dir.clone()])
        );
        policy.forbidden.push(dir.clone());
        let refused = roots(&spec, &policy, cwd.path(), &profile).unwrap_err();
        assert!(refused.contains("forbidden path"), "{refused}");
        let missing = ServerSpec {
            command: "zc-no-such-command".into(),
            ..spec
        };
        let refused = roots(&missing, &policy, cwd.path(), &profile).unwrap_err();
        assert!(refused.contains("command not found"), "{refused}");
    }

    #[test]
    fn the_root_is_never_exposed() {
        assert!(check_dir(Path::new("/"), Path::new("/server")).is_err());
        assert!(check_dir(Path::new("/srv/tools"), Path::new("/srv/tools/s")).is_ok());
    }
}
