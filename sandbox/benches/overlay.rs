//! Measures the transactional workspace issue 33 proposes (an overlayfs upper layer per call
//! on the workspace's own file system, landed by rename after validation), in one run, both
//! as root outside a user namespace (in a private mount namespace) and as an unprivileged user
//! (`nobody`) in its own user and mount namespace (`userxattr`). Prints each figure, the
//! ratios against today's direct writes, and what real tools do with a directory rename.
//! No timed assertion: it reports, `sandbox/README.md` ("Transactional workspace") decides.
//!
//! `cargo bench -p zeroclaw-sandbox --bench overlay` (`OVERLAY_BENCH_DIR`: where the scratch
//! directories go, default the temp dir; the upper layer is made on the same file system).
//! Needs `unshare` and `setpriv` (util-linux), `git`, `/usr/bin/python3`, `sha256sum`, and
//! overlayfs. Every figure is kernel time but the digests (`sha256sum`), so `--profile dev`
//! (no release build) gives the same figures.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use nix::mount::{MntFlags, MsFlags, mount, umount2};

const NEW_DIRS: usize = 100;
const FILES_PER_DIR: usize = 100;
const BIG_MIB: usize = 100;
const DELETED: usize = 1000;
const MOUNTS: u32 = 50;
const PYTHON: &str = "/usr/bin/python3";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--inner") {
        return Inner::new(&args[i + 1], Path::new(&args[i + 2])).run();
    }
    outer();
}

/// Runs the measurements as root (private mount namespace) and as `nobody` in a user
/// namespace, then prints both columns and the ratios.
fn outer() {
    let base = std::env::var_os("OVERLAY_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let scratch = tempfile::Builder::new()
        .prefix("zc-overlay-bench")
        .tempdir_in(&base)
        .expect("scratch dir");
    set_mode(scratch.path(), 0o755);
    let fstype = run_text(
        Command::new("stat")
            .args(["-f", "-c", "%T"])
            .arg(scratch.path()),
    );
    println!(
        "file system of the workspace and upper layer: {}",
        fstype.trim()
    );
    let exe = std::env::current_exe().expect("own path");
    let root = nix::unistd::geteuid().is_root();
    let mut columns: Vec<(&str, BTreeMap<String, String>)> = Vec::new();
    if root {
        let dir = scratch.path().join("root");
        fs::create_dir(&dir).unwrap();
        let mut c = Command::new("unshare");
        c.args(["--mount", "--propagation", "private"]);
        c.arg(&exe).args(["--inner", "root"]).arg(&dir);
        columns.push(("root, no userns", inner_results(c)));
    }
    let dir = scratch.path().join("user");
    fs::create_dir(&dir).unwrap();
    let mut c;
    if root {
        let nobody = nix::unistd::Uid::from_raw(65534);
        let nogroup = nix::unistd::Gid::from_raw(65534);
        nix::unistd::chown(&dir, Some(nobody), Some(nogroup)).expect("chown");
        c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "unshare",
        ]);
    } else {
        c = Command::new("unshare");
    }
    c.args(["--user", "--map-root-user", "--mount"]);
    c.arg(&exe)
        .args(["--inner", "userns"])
        .arg(&dir)
        .env("HOME", &dir);
    columns.push(("unprivileged userns", inner_results(c)));
    print_table(&columns);
    // The scratch tree is nobody's and root's; the TempDir's drop removes it (we are root,
    // or it is all ours).
}

fn inner_results(mut c: Command) -> BTreeMap<String, String> {
    let out = c.output().expect("run the inner measurement");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "inner measurement failed: {}",
        out.status
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn print_table(columns: &[(&str, BTreeMap<String, String>)]) {
    let mut keys: Vec<&String> = columns.iter().flat_map(|(_, m)| m.keys()).collect();
    keys.sort_by_key(|k| k.as_str());
    keys.dedup();
    print!("\n{:<44}", "measure");
    for (name, _) in columns {
        print!(" | {name:<28}");
    }
    println!();
    for k in keys {
        print!("{k:<44}");
        for (_, m) in columns {
            print!(" | {:<28}", m.get(k).map(String::as_str).unwrap_or("-"));
        }
        println!();
    }
}

/// One measurement run in a mount namespace of its own, in `dir` (owned by the caller).
struct Inner {
    label: String,
    dir: PathBuf,
    userns: bool,
}

impl Inner {
    fn new(label: &str, dir: &Path) -> Inner {
        Inner {
            label: label.into(),
            dir: dir.into(),
            userns: label == "userns",
        }
    }

    fn run(&self) {
        eprintln!("[{}] measuring in {}", self.label, self.dir.display());
        self.mount_cost();
        self.directory_renames();
        self.copy_up();
        self.ten_thousand_files();
        self.deletions();
        self.concurrent_overlays();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A fresh, empty upper and work directory named `name`.
    fn layer(&self, name: &str) -> (PathBuf, PathBuf) {
        let (up, wk) = (
            self.path(&format!("{name}.up")),
            self.path(&format!("{name}.wk")),
        );
        for d in [&up, &wk] {
            let _ = fs::remove_dir_all(d);
            fs::create_dir(d).unwrap();
        }
        (up, wk)
    }

    fn options(&self, lower: &Path, up: &Path, wk: &Path, extra: &str) -> String {
        let mut o = format!(
            "lowerdir={},upperdir={},workdir={}",
            lower.display(),
            up.display(),
            wk.display()
        );
        if self.userns {
            o.push_str(",userxattr");
        }
        o.push_str(extra);
        o
    }

    /// Mounts an overlay of `lower` (with the upper `up`) at `at`.
    fn mount(&self, lower: &Path, up: &Path, wk: &Path, at: &Path, extra: &str) -> nix::Result<()> {
        let o = self.options(lower, up, wk, extra);
        mount(
            Some("overlay"),
            at,
            Some("overlay"),
            MsFlags::empty(),
            Some(o.as_str()),
        )
    }

    fn report(&self, key: &str, value: impl std::fmt::Display) {
        println!("{key}\t{value}");
    }

    /// Mounting and unmounting the layer (umount syncs the upper file system unless the
    /// layer is `volatile`), against a bind mount of the same directory.
    fn mount_cost(&self) {
        let ws = self.path("m.ws");
        fs::create_dir_all(ws.join("src")).unwrap();
        for (name, extra) in [("", ""), (" volatile", ",volatile")] {
            let (mut on, mut off) = (0.0, 0.0);
            for _ in 0..MOUNTS {
                // A fresh layer each time (a volatile one's work dir refuses a second mount).
                let (up, wk) = self.layer("m");
                quiesce();
                on += secs(|| {
                    self.mount(&ws, &up, &wk, &ws, extra)
                        .expect("mount overlay")
                });
                off += secs(|| umount2(&ws, MntFlags::empty()).expect("umount"));
            }
            let n = f64::from(MOUNTS);
            self.report(&format!("overlay{name}: mount (ms)"), ms(on / n));
            self.report(&format!("overlay{name}: umount (ms)"), ms(off / n));
        }
        quiesce();
        let bind = secs(|| {
            for _ in 0..MOUNTS {
                mount(Some(&ws), &ws, None::<&str>, MsFlags::MS_BIND, None::<&str>).unwrap();
                umount2(&ws, MntFlags::empty()).unwrap();
            }
        }) / f64::from(MOUNTS);
        self.report("bind mount+umount, for scale (ms)", ms(bind));
    }

    /// What a rename of a directory from the lower layer gives, and what tools do about it.
    fn directory_renames(&self) {
        let ws = self.path("r.ws");
        for d in ["old1", "old2", "old3", "gdir"] {
            fs::create_dir_all(ws.join(d).join("sub")).unwrap();
            fs::write(ws.join(d).join("sub/f"), "x").unwrap();
        }
        // A 1,000-file directory for the cost of `mv`'s copy fallback (what an EXDEV
        // emulation would cost), and its twin outside the layer for a plain rename.
        let plain = self.path("r.plain");
        for root in [&ws, &plain] {
            fs::create_dir_all(root.join("wide")).unwrap();
            for i in 0..DELETED {
                fs::write(root.join(format!("wide/f{i}")), [b'x'; 256]).unwrap();
            }
        }
        quiesce();
        let mv_plain = secs(|| {
            run_ok(
                Command::new("mv")
                    .arg(plain.join("wide"))
                    .arg(plain.join("wide2")),
            )
        });
        let git = |args: &[&str]| {
            let mut c = Command::new("git");
            c.current_dir(&ws)
                .args(["-c", "user.name=b", "-c", "user.email=b@b"]);
            c.args(args).env("GIT_CONFIG_NOSYSTEM", "1");
            c.output().expect("git")
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-qm", "x"]);
        let (up, wk) = self.layer("r");
        self.mount(&ws, &up, &wk, &ws, "").expect("mount overlay");
        let rust = fs::rename(ws.join("old1"), ws.join("new1"));
        self.report("rename(lower dir): Rust fs::rename", result(&rust));
        let mv = Command::new("mv")
            .arg(ws.join("old2"))
            .arg(ws.join("new2"))
            .output();
        let copied = ws.join("new2/sub/f").exists() && !ws.join("old2").exists();
        let mv = mv.map(|o| o.status.success()).unwrap_or(false);
        self.report(
            "rename(lower dir): mv",
            if mv && copied {
                "ok (copy + delete fallback)"
            } else {
                "FAILED"
            },
        );
        let py = Command::new(PYTHON)
            .args(["-c", "import os,sys; os.rename(sys.argv[1], sys.argv[2])"])
            .arg(ws.join("old3"))
            .arg(ws.join("new3"))
            .output();
        self.report("rename(lower dir): python os.rename", exit_line(py));
        let g = git(&["mv", "gdir", "gdir2"]);
        let gline = String::from_utf8_lossy(&g.stderr)
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        self.report(
            "rename(lower dir): git mv",
            if g.status.success() {
                "ok".into()
            } else {
                gline
            },
        );
        quiesce();
        let mv_wide = secs(|| {
            run_ok(
                Command::new("mv")
                    .arg(ws.join("wide"))
                    .arg(ws.join("wide2")),
            )
        });
        self.report(
            &format!("mv of a {DELETED}-file lower dir: copy fallback (ms)"),
            ms(mv_wide),
        );
        self.report(
            &format!("mv of a {DELETED}-file dir, plain rename (ms)"),
            ms(mv_plain),
        );
        self.report("  mv fallback / plain mv", ratio(mv_wide, mv_plain));
        fs::create_dir_all(ws.join("fresh/sub")).unwrap();
        let fresh = fs::rename(ws.join("fresh"), ws.join("fresh2"));
        self.report("rename(dir made in the call)", result(&fresh));
        umount2(&ws, MntFlags::empty()).unwrap();
        let (up, wk) = self.layer("rr");
        match self.mount(&ws, &up, &wk, &ws, ",redirect_dir=on") {
            Err(e) => self.report("mount with redirect_dir=on", format!("refused: {e}")),
            Ok(()) => {
                let r = fs::rename(ws.join("old1"), ws.join("moved1"));
                umount2(&ws, MntFlags::empty()).unwrap();
                let attrs = xattrs(&up.join("moved1"));
                self.report("mount with redirect_dir=on", "ok");
                self.report("  rename(lower dir) with redirect_dir", result(&r));
                self.report("  upper of the renamed dir: xattrs", attrs);
            }
        }
    }

    /// Opening a large lower file for writing copies it up whole (no reflink on ext4).
    fn copy_up(&self) {
        let ws = self.path("c.ws");
        fs::create_dir(&ws).unwrap();
        let big = ws.join("big.bin");
        let chunk: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
        let mut f = fs::File::create(&big).unwrap();
        for _ in 0..BIG_MIB {
            f.write_all(&chunk).unwrap();
        }
        f.sync_all().unwrap();
        drop(f);
        let plain = self.path("c.plain.bin");
        quiesce();
        let copy = secs(|| {
            fs::copy(&big, &plain).unwrap();
        });
        quiesce();
        let append_plain = secs(|| append_byte(&plain));
        let (up, wk) = self.layer("c");
        self.mount(&ws, &up, &wk, &ws, "").expect("mount overlay");
        quiesce();
        let read = secs(|| {
            let mut b = [0u8; 16];
            fs::File::open(&big).unwrap().read_exact(&mut b).unwrap();
        });
        quiesce();
        let append = secs(|| append_byte(&big));
        umount2(&ws, MntFlags::empty()).unwrap();
        let (up2, wk2) = self.layer("c2");
        self.mount(&ws, &up2, &wk2, &ws, "").expect("mount overlay");
        quiesce();
        let trunc = secs(|| {
            fs::OpenOptions::new()
                .write(true)
                .truncate(true)
                .open(&big)
                .unwrap();
        });
        umount2(&ws, MntFlags::empty()).unwrap();
        quiesce();
        let digest = secs(|| {
            sha256(&up.join("big.bin"));
        });
        quiesce();
        let land = secs(|| fs::rename(up.join("big.bin"), &big).unwrap());
        self.report(
            format!("{BIG_MIB} MiB file: open for reading (ms)").as_str(),
            ms(read),
        );
        self.report(
            format!("{BIG_MIB} MiB file: append 1 byte, copy-up (ms)").as_str(),
            ms(append),
        );
        self.report(
            format!("{BIG_MIB} MiB file: open O_TRUNC (ms)").as_str(),
            ms(trunc),
        );
        self.report(
            format!("{BIG_MIB} MiB file: append 1 byte, plain (ms)").as_str(),
            ms(append_plain),
        );
        self.report(
            format!("{BIG_MIB} MiB file: fs::copy, for scale (ms)").as_str(),
            ms(copy),
        );
        self.report("  copy-up / fs::copy", ratio(append, copy));
        self.report(
            format!("{BIG_MIB} MiB file: SHA-256 for the audit (ms)").as_str(),
            ms(digest),
        );
        self.report(
            format!("{BIG_MIB} MiB file: landing rename (ms)").as_str(),
            ms(land),
        );
    }

    /// A call writing 10,000 new files: directly (today) versus into the upper layer, then
    /// validated (a walk) and landed by rename, file by file or by the new top directory.
    fn ten_thousand_files(&self) {
        let direct_ws = self.path("t.direct");
        fs::create_dir(&direct_ws).unwrap();
        quiesce();
        let direct = secs(|| write_tree(&direct_ws.join("gen")));
        let ws = self.path("t.ws");
        fs::create_dir_all(ws.join("gen")).unwrap();
        let (up, wk) = self.layer("t");
        self.mount(&ws, &up, &wk, &ws, "").expect("mount overlay");
        // Into an existing directory (the usual case: files added below `src/`), so the
        // landing renames each file; then a new top directory, landed with one rename.
        quiesce();
        let written = secs(|| {
            write_tree(&ws.join("gen"));
        });
        quiesce();
        let written_new = secs(|| write_tree(&ws.join("newtop")));
        umount2(&ws, MntFlags::empty()).unwrap();
        let mut n = 0;
        quiesce();
        let walk = secs(|| n = walk_upper(&up));
        quiesce();
        let digests = secs(|| sha256(&up.join("gen")));
        quiesce();
        let land_files = secs(|| land_each(&up.join("gen"), &ws.join("gen")));
        quiesce();
        let land_dir = secs(|| fs::rename(up.join("newtop"), ws.join("newtop")).unwrap());
        let total = NEW_DIRS * FILES_PER_DIR;
        self.report(
            format!("{total} files: direct writes, today (ms)").as_str(),
            ms(direct),
        );
        self.report(
            format!("{total} files: writes into the upper (ms)").as_str(),
            ms(written),
        );
        self.report(
            format!("{total} files: same, new top dir (ms)").as_str(),
            ms(written_new),
        );
        self.report(
            format!("upper walk, validation ({n} entries, ms)").as_str(),
            ms(walk),
        );
        self.report(
            format!("{total} files: SHA-256 for the audit (ms)").as_str(),
            ms(digests),
        );
        self.report(
            format!("{total} files: landing, rename each (ms)").as_str(),
            ms(land_files),
        );
        self.report(
            format!("{total} files: landing, one dir rename (ms)").as_str(),
            ms(land_dir),
        );
        self.report(
            "  (upper write+walk+land each) / direct",
            ratio(written + walk / 2.0 + land_files, direct),
        );
        self.report(
            "  (+ SHA-256 of each) / direct",
            ratio(written + walk / 2.0 + land_files + digests, direct),
        );
    }

    /// Removals become whiteouts, a removed-and-recreated directory an opaque one; landing
    /// them is a removal on the host.
    fn deletions(&self) {
        let ws = self.path("d.ws");
        let plain = self.path("d.plain");
        for root in [&ws, &plain] {
            fs::create_dir_all(root.join("del")).unwrap();
            fs::create_dir_all(root.join("opq")).unwrap();
            fs::write(root.join("a.txt"), "a").unwrap();
            for i in 0..DELETED {
                fs::write(root.join(format!("del/f{i}")), "x").unwrap();
            }
            fs::write(root.join("opq/old"), "o").unwrap();
        }
        quiesce();
        let direct = secs(|| fs::remove_dir_all(plain.join("del")).unwrap());
        let (up, wk) = self.layer("d");
        self.mount(&ws, &up, &wk, &ws, "").expect("mount overlay");
        quiesce();
        let in_overlay = secs(|| fs::remove_dir_all(ws.join("del")).unwrap());
        fs::remove_file(ws.join("a.txt")).unwrap();
        fs::remove_dir_all(ws.join("opq")).unwrap();
        fs::create_dir(ws.join("opq")).unwrap();
        fs::write(ws.join("opq/new"), "n").unwrap();
        umount2(&ws, MntFlags::empty()).unwrap();
        let mut kinds = Vec::new();
        let mut names: Vec<_> = fs::read_dir(&up)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in &names {
            let m = fs::symlink_metadata(p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            let kind = if m.file_type().is_char_device() && m.rdev() == 0 {
                "whiteout".to_string()
            } else if m.is_dir() {
                format!("dir {}", xattrs(p))
            } else {
                "file".into()
            };
            kinds.push(format!("{name}={kind}"));
        }
        quiesce();
        let land = secs(|| fs::remove_dir_all(ws.join("del")).unwrap());
        self.report(
            "upper after rm a.txt, rm -r del, opq redone",
            kinds.join("; "),
        );
        self.report(
            format!("rm -r {DELETED} files: direct (ms)").as_str(),
            ms(direct),
        );
        self.report(
            format!("rm -r {DELETED} files: in the overlay (ms)").as_str(),
            ms(in_overlay),
        );
        self.report(
            format!("rm -r {DELETED} files: landing the whiteout (ms)").as_str(),
            ms(land),
        );
        self.report(
            "  (overlay + landing) / direct",
            ratio(in_overlay + land, direct),
        );
    }

    /// Two calls' overlays on one workspace: the first lands while the second is mounted
    /// (overlayfs calls a change to a mounted lower layer undefined; this shows what is seen).
    fn concurrent_overlays(&self) {
        let ws = self.path("k.ws");
        fs::create_dir(&ws).unwrap();
        fs::write(ws.join("shared"), "v1").unwrap();
        let (a, b) = (self.path("k.a"), self.path("k.b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        let (upa, wka) = self.layer("ka");
        let (upb, wkb) = self.layer("kb");
        self.mount(&ws, &upa, &wka, &a, "").expect("mount A");
        self.mount(&ws, &upb, &wkb, &b, "").expect("mount B");
        let _ = fs::read_to_string(b.join("shared")).unwrap();
        let _ = fs::metadata(b.join("landed"));
        fs::write(a.join("landed"), "from A").unwrap();
        fs::write(a.join("shared"), "v2").unwrap();
        umount2(&a, MntFlags::empty()).unwrap();
        fs::rename(upa.join("landed"), ws.join("landed")).unwrap();
        fs::rename(upa.join("shared"), ws.join("shared")).unwrap();
        let seen_new = fs::metadata(b.join("landed")).is_ok();
        let seen_shared = fs::read_to_string(b.join("shared")).unwrap_or_default();
        umount2(&b, MntFlags::empty()).unwrap();
        self.report(
            "B mounted, A lands: B sees A's new file",
            if seen_new {
                "yes"
            } else {
                "no (negative dentry cached)"
            },
        );
        self.report("B mounted, A lands: B reads A's changed file", seen_shared);
    }
}

/// Writes dirty pages out first, so that one figure does not pay for the writeback of the
/// data an earlier one left behind.
fn quiesce() {
    nix::unistd::sync();
}

fn secs(f: impl FnOnce()) -> f64 {
    let start = Instant::now();
    f();
    start.elapsed().as_secs_f64()
}

fn ms(s: f64) -> String {
    format!("{:.2}", s * 1000.0)
}

fn ratio(a: f64, b: f64) -> String {
    format!("{:.2}x", a / b)
}

fn result(r: &std::io::Result<()>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) => format!("error: {e}"),
    }
}

fn exit_line(o: std::io::Result<std::process::Output>) -> String {
    match o {
        Ok(o) if o.status.success() => "ok".into(),
        Ok(o) => String::from_utf8_lossy(&o.stderr)
            .lines()
            .last()
            .unwrap_or("failed")
            .to_string(),
        Err(e) => format!("not run: {e}"),
    }
}

fn run_ok(c: &mut Command) {
    let status = c.status().expect("run");
    assert!(status.success(), "{c:?}: {status}");
}

fn run_text(c: &mut Command) -> String {
    c.output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default()
}

/// The extended attribute names of `p` (overlayfs keeps its redirect and opaque marks there),
/// read with Python's `os.listxattr` (the standard library has no xattr call).
fn xattrs(p: &Path) -> String {
    let code = "import os,sys; print(sorted(os.listxattr(sys.argv[1], follow_symlinks=False)))";
    run_text(Command::new(PYTHON).args(["-c", code]).arg(p))
        .trim()
        .to_string()
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

fn append_byte(p: &Path) {
    let mut f = fs::OpenOptions::new().append(true).open(p).unwrap();
    f.write_all(b"!").unwrap();
}

fn write_tree(root: &Path) {
    let body = [b'x'; 256];
    for d in 0..NEW_DIRS {
        let dir = root.join(format!("d{d}"));
        fs::create_dir_all(&dir).unwrap();
        for f in 0..FILES_PER_DIR {
            fs::write(dir.join(format!("f{f}.rs")), body).unwrap();
        }
    }
}

/// Every entry below `dir`, `lstat`ed, with the names a validator looks for checked: the
/// walk a landing makes before it renames anything.
fn walk_upper(dir: &Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = fs::symlink_metadata(e.path()).unwrap();
            let name = e.file_name();
            let _suspicious = name == ".git" || name == "HEAD" || name == "commondir";
            n += 1;
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    n
}

/// Lands the upper directory `from` into the existing `to` entry by entry: directories made
/// when missing, each file renamed.
fn land_each(from: &Path, to: &Path) {
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            let _ = fs::create_dir(&target);
            land_each(&e.path(), &target);
        } else {
            fs::rename(e.path(), target).unwrap();
        }
    }
}

/// SHA-256 of every file below `p` (or of `p`), by `sha256sum` (batched by `find`): the cost
/// of the digests the audit record would list, whatever the build profile of this bench.
fn sha256(p: &Path) {
    let out = Command::new("find")
        .arg(p)
        .args(["-type", "f", "-exec", "sha256sum", "{}", "+"])
        .output()
        .expect("find -exec sha256sum");
    assert!(out.status.success(), "sha256sum failed");
}
