//! Escape suite, privileged files planted for the host: no file the child creates or changes
//! in a writable root may carry a setuid or setgid bit, or a `security.capability` attribute,
//! afterwards — whatever the call (`chmod`, `chmod g+s`, `fchmod`, `fchmodat2`, `open` and
//! `openat2` with a mode, `O_TMPFILE`, `mknod`, `install -m`, `cp -p` of a setuid file,
//! `setcap`, `setxattr`), nor be a device node (`mknod`). The workspace is `nosuid` inside; the host's users are not.
//!
//! Every attack runs on every Linux backend, as the test's user (root on CI) and as `nobody`
//! (switched to with setpriv, which needs root), and is judged from outside by the modes and
//! attributes of the planted files; the unconfined control plants the bits.

use crate::sandbox_support;

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Command;

use sandbox_support::judge::marked;
use sandbox_support::run::{Run, as_nobody};
use sandbox_support::world::q;
use sandbox_support::{ATTEMPT, Backend, PYTHON, World};

/// The C planter (compiled outside, run inside): `fchmodat2`, `openat2` with a mode (and
/// the `openat` a libc falls back to on ENOSYS), an `O_TMPFILE` made visible by `linkat`.
const PLANTER: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    close(open("x10", O_CREAT | O_WRONLY, 0755));
    long r = syscall(452, AT_FDCWD, "x10", 04755, 0);
    printf("fchmodat2 ret=%ld errno=%d\n", r, r ? errno : 0);
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_CREAT | O_WRONLY;
    how.mode = 04755;
    r = syscall(SYS_openat2, AT_FDCWD, "x11", &how, sizeof how);
    printf("openat2 ret=%ld errno=%d\n", r, r < 0 ? errno : 0);
    if (r < 0 && errno == ENOSYS) {
        r = openat(AT_FDCWD, "x11", O_CREAT | O_WRONLY, 04755);
        printf("openat ret=%ld errno=%d\n", r, r < 0 ? errno : 0);
    }
    int fd = open(".", O_TMPFILE | O_WRONLY, 02755);
    printf("tmpfile ret=%d errno=%d\n", fd, fd < 0 ? errno : 0);
    if (fd >= 0) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        linkat(AT_FDCWD, p, AT_FDCWD, "x13", AT_SYMLINK_FOLLOW);
    }
    return 0;
}
"#;

/// A version-2 `security.capability` value granting CAP_NET_RAW, permitted and effective.
const CAPABILITY: &str = "bytes.fromhex(\"0100000200200000000000000000000000000000\")";

/// Each planted file, with whether an unconfined root and an unconfined `nobody` get a
/// privileged bit or attribute on it (the control's expectation).
const PLANTED: &[(&str, bool, bool)] = &[
    ("x1", true, true),    // cp /bin/sh; chmod 4755
    ("x2", true, true),    // chmod g+s
    ("x3", true, true),    // os.open(O_CREAT, 0o4755)
    ("x5", true, true),    // os.mknod(S_IFREG | 0o4755)
    ("x6", true, true),    // install -m 4755
    ("x7", true, false),   // cp -p of a setuid-root file (nobody cannot keep the owner)
    ("x8", true, false),   // setcap cap_net_raw+ep (needs CAP_SETFCAP)
    ("x9", true, false),   // setxattr security.capability
    ("x10", true, true),   // fchmodat2
    ("x11", true, true),   // openat2 with a mode, or its openat fallback
    ("x12", true, true),   // fchmod
    ("x13", true, true),   // O_TMPFILE with 02755, linked in
    ("d14", true, true),   // chmod g+s of a directory
    ("d15", false, false), // os.mkdir(0o2755): the kernel drops the bit itself
    ("x16", true, false),  // mknod c 1 3: a device node (needs CAP_MKNOD)
];

/// The attack script, run from the workspace; `suid` is a setuid-root file to copy.
fn script(suid: &Path) -> String {
    let py = |code: &str| format!("{PYTHON} -c '{code}'");
    [
        "rm -rf x* d1*".to_owned(),
        "cp /bin/sh x1; chmod 4755 x1".to_owned(),
        "cp /bin/sh x2; chmod g+s x2".to_owned(),
        py("import os; os.close(os.open(\"x3\", os.O_CREAT | os.O_WRONLY, 0o4755))"),
        py("import os, stat; os.mknod(\"x5\", stat.S_IFREG | 0o4755)"),
        "install -m 4755 /bin/sh x6".to_owned(),
        format!("cp -p {} x7", q(suid)),
        "cp /bin/sh x8; setcap cap_net_raw+ep x8".to_owned(),
        format!(
            "cp /bin/sh x9; {}",
            py(&format!(
                "import os; os.setxattr(\"x9\", \"security.capability\", {CAPABILITY})"
            ))
        ),
        "./planter".to_owned(),
        py("import os; fd = os.open(\"x12\", os.O_CREAT | os.O_WRONLY, 0o755); os.fchmod(fd, 0o4755)"),
        "mkdir d14; chmod g+s d14".to_owned(),
        py("import os; os.mkdir(\"d15\", 0o2755)"),
        "mknod x16 c 1 3".to_owned(),
        // Ordinary modes keep working.
        "printf '#!/bin/sh\\necho ZC_SCRIPT_RAN\\n' > ok.sh; chmod 644 ok.sh; chmod 755 ok.sh; chmod +x ok.sh; ./ok.sh".to_owned(),
        "true".to_owned(),
    ]
    .join(" 2>&1; ")
}

/// What an outside observer finds privileged among the planted files: a setuid/setgid bit,
/// a device node or a `security.capability` attribute, by name.
fn privileged(ws: &Path) -> Vec<String> {
    let mut found: Vec<String> = PLANTED
        .iter()
        .filter_map(|(name, _, _)| {
            let meta = fs::symlink_metadata(ws.join(name)).ok()?;
            let kind = meta.file_type();
            let device = kind.is_char_device() || kind.is_block_device();
            (meta.mode() & 0o6000 != 0 || device).then(|| format!("{name} mode {:o}", meta.mode()))
        })
        .collect();
    let names: Vec<String> = PLANTED.iter().map(|(n, _, _)| n.to_string()).collect();
    let out = Command::new(PYTHON)
        .arg("-c")
        .arg(
            "import os, sys\nfor f in sys.argv[1:]:\n    if os.path.exists(f) and \
             'security.capability' in os.listxattr(f): print(f)",
        )
        .args(&names)
        .current_dir(ws)
        .output()
        .expect("python3 listxattr");
    found.extend(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|f| format!("{f} security.capability")),
    );
    found
}

/// The names the control must have made privileged.
fn expected(as_nobody: bool) -> Vec<&'static str> {
    PLANTED
        .iter()
        .filter(|(_, root, nobody)| if as_nobody { *nobody } else { *root })
        .map(|(n, _, _)| *n)
        .collect()
}

/// Compiles the planter into the workspace; false (after saying why) without a C compiler.
fn compile_planter(w: &World, ws: &Path) -> bool {
    let src = w.root.join("planter.c");
    fs::write(&src, PLANTER).expect("write planter.c");
    let out = Command::new("cc")
        .arg("-o")
        .arg(ws.join("planter"))
        .arg(&src)
        .output();
    match out {
        Ok(o) if o.status.success() => true,
        other => {
            crate::support::require_feature(&format!("no C compiler for the planter: {other:?}"));
            false
        }
    }
}

/// A setuid-root file in the world's read-only root, for `cp -p`.
fn setuid_source(w: &World) -> std::path::PathBuf {
    let suid = w.ro.join("suid-sh");
    fs::copy("/bin/sh", &suid).expect("copy sh");
    fs::set_permissions(&suid, fs::Permissions::from_mode(0o4755)).expect("chmod 4755");
    suid
}

/// The confined run plants nothing privileged; the control (same user) does.
fn judge(ws: &Path, confined: Run, control: impl FnOnce() -> Run, as_nobody: bool) {
    confined.assert_reached(ATTEMPT);
    assert!(
        confined.stdout.contains("ZC_SCRIPT_RAN"),
        "chmod +x of a script failed confined\n{confined}"
    );
    let planted = privileged(ws);
    assert!(
        planted.is_empty(),
        "ESCAPE: the confined child planted privileged files: {planted:?}\n{confined}"
    );
    let control = control();
    control.assert_reached(ATTEMPT);
    let planted = privileged(ws);
    for name in expected(as_nobody) {
        assert!(
            planted.iter().any(|p| p.split(' ').next() == Some(name)),
            "positive control failed: unconfined {name} got no privileged bit ({planted:?})\n{control}"
        );
    }
}

/// As the test's own user (root on CI).
fn planted_setuid_files(w: &World, b: Backend) {
    if !compile_planter(w, &w.ws) {
        return;
    }
    let suid = setuid_source(w);
    let script = marked(&script(&suid));
    let confined = w.confined(b).allow_read(&w.ro).sh(&script);
    let as_nobody = !nix::unistd::geteuid().is_root();
    judge(&w.ws, confined, || w.plain().sh(&script), as_nobody);
}
per_backend!(planted_setuid_files);

/// As `nobody`, in a workspace nobody owns: setuid-to-nobody is a privilege too.
fn planted_setuid_files_as_nobody(w: &World, b: Backend) {
    let Some(ws) = w.nobody_workspace("planted_setuid_files_as_nobody") else {
        return;
    };
    if !compile_planter(w, &ws) {
        return;
    }
    let suid = setuid_source(w);
    let script = marked(&script(&suid));
    let cmd = ["/bin/sh", "-c", &script];
    let argv = w.confined(b).workspace(&ws).allow_read(&w.ro).argv(&cmd);
    let confined = as_nobody(&ws, &argv);
    let plain: Vec<OsString> = cmd.iter().map(OsString::from).collect();
    judge(&ws, confined, || as_nobody(&ws, &plain), true);
}
per_backend!(planted_setuid_files_as_nobody);
