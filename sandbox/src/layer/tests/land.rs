//! Applying a layer: files, links, directories, whiteouts, opaque directories, modes, the
//! journal and recovery, and a landing across file systems.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{Fixture, exists, mode, opaque, put, read, root, whiteout};
use crate::layer::{Change, Changed, land, recover, upper};

fn change<'a>(changed: &'a [Changed], path: &str) -> Option<&'a Change> {
    changed
        .iter()
        .find(|c| c.path == Path::new(path))
        .map(|c| &c.change)
}

/// Releases a landed layer: it was left inert (no journal), and goes with its release.
fn released(layer: crate::layer::Held) -> bool {
    let dir = layer.dir.clone();
    let inert = !exists(&dir.join(crate::layer::land::JOURNAL));
    crate::layer::release(layer);
    inert && !exists(&dir)
}

/// `printf 'hello\n' | sha256sum`.
const HELLO_SHA256: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

#[test]
fn files_and_links_land_with_their_digests() {
    let f = Fixture::new();
    put(&f.ws.join("a.txt"), "old");
    put(&f.ws.join("d/keep.txt"), "keep");
    let layer = f.layer();
    let up = upper(&layer.dir);
    put(&up.join("a.txt"), "hello\n");
    put(&up.join("d/new.txt"), "new");
    std::os::unix::fs::symlink("a.txt", up.join("link")).unwrap();
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(read(&f.ws.join("a.txt")), "hello\n");
    assert_eq!(read(&f.ws.join("d/new.txt")), "new");
    assert_eq!(read(&f.ws.join("d/keep.txt")), "keep");
    assert_eq!(
        std::fs::read_link(f.ws.join("link")).unwrap(),
        Path::new("a.txt")
    );
    assert_eq!(
        change(&landing.changed, "a.txt"),
        Some(&Change::Written {
            bytes: 6,
            sha256: HELLO_SHA256.into()
        })
    );
    assert_eq!(
        change(&landing.changed, "link"),
        Some(&Change::Symlink {
            target: "a.txt".into()
        })
    );
    // `d` was only copied up (same mode): not a change.
    assert_eq!(change(&landing.changed, "d"), None);
    assert_eq!(landing.changed.len(), 3, "{:?}", landing.changed);
    assert!(landing.refused.is_empty());
    assert!(released(layer), "removed once released");
}

#[test]
fn a_layer_the_call_wrote_nothing_in_lands_nothing_and_goes() {
    let f = Fixture::new();
    put(&f.ws.join("a.txt"), "old");
    let layer = f.layer();
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(landing, crate::layer::Landing::default());
    assert_eq!(read(&f.ws.join("a.txt")), "old");
    assert!(released(layer), "removed once released");
}

#[test]
fn a_new_directory_lands_by_one_rename() {
    let f = Fixture::new();
    let layer = f.layer();
    let up = upper(&layer.dir);
    put(&up.join("new/x/y.txt"), "y");
    std::os::unix::fs::symlink("x/y.txt", up.join("new/l")).unwrap();
    let ino = up.join("new").symlink_metadata().unwrap().ino();
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(f.ws.join("new").symlink_metadata().unwrap().ino(), ino);
    assert_eq!(read(&f.ws.join("new/x/y.txt")), "y");
    let paths: Vec<_> = landing.changed.iter().map(|c| c.path.clone()).collect();
    assert_eq!(
        paths,
        ["new", "new/l", "new/x", "new/x/y.txt"].map(std::path::PathBuf::from)
    );
    assert_eq!(change(&landing.changed, "new"), Some(&Change::Directory));
}

#[test]
fn whiteouts_remove_files_and_trees() {
    if !root() {
        return;
    }
    let f = Fixture::new();
    put(&f.ws.join("gone.txt"), "x");
    put(&f.ws.join("tree/a/b.txt"), "x");
    let layer = f.layer();
    let up = upper(&layer.dir);
    whiteout(&up.join("gone.txt"));
    whiteout(&up.join("tree"));
    whiteout(&up.join("never-there"));
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert!(!exists(&f.ws.join("gone.txt")));
    assert!(!exists(&f.ws.join("tree")));
    assert_eq!(change(&landing.changed, "tree"), Some(&Change::Removed));
    assert_eq!(landing.changed.len(), 3);
}

#[test]
fn an_opaque_directory_replaces_the_tree() {
    if !root() {
        return;
    }
    let f = Fixture::new();
    put(&f.ws.join("op/old.txt"), "old");
    put(&f.ws.join("op/sub/x"), "old");
    let layer = f.layer();
    let up = upper(&layer.dir);
    put(&up.join("op/new.txt"), "new");
    // A whiteout left inside it does not land as a device.
    whiteout(&up.join("op/stale"));
    opaque(&up.join("op"));
    let landing = land(&layer.dir, &f.ws).unwrap();
    let names: Vec<_> = std::fs::read_dir(f.ws.join("op"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["new.txt"]);
    assert_eq!(change(&landing.changed, "op"), Some(&Change::Directory));
}

#[test]
fn a_changed_mode_is_landed_and_recorded() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new();
    put(&f.ws.join("d/old"), "x");
    let layer = f.layer();
    let up = upper(&layer.dir);
    put(&up.join("d/f"), "f");
    std::fs::set_permissions(up.join("d"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert_eq!(mode(&f.ws.join("d")), 0o555);
    assert_eq!(read(&f.ws.join("d/f")), "f");
    assert_eq!(change(&landing.changed, "d"), Some(&Change::Directory));
    std::fs::set_permissions(f.ws.join("d"), std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn fifos_do_not_land() {
    let f = Fixture::new();
    let layer = f.layer();
    let up = upper(&layer.dir);
    nix::unistd::mkfifo(
        &up.join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let landing = land(&layer.dir, &f.ws).unwrap();
    assert!(!exists(&f.ws.join("pipe")));
    assert!(landing.changed.is_empty());
}

/// A landing cut short after its journal (validation done, one rename made) is finished by
/// `recover`, without validating again; a layer without a journal is removed; a locked one
/// is left alone.
#[test]
fn recover_finishes_a_journaled_landing_and_drops_the_rest() {
    let f = Fixture::new();
    put(&f.ws.join("b.txt"), "old");
    let layer = f.layer();
    let up = upper(&layer.dir);
    put(&up.join("a.txt"), "a");
    put(&up.join("b.txt"), "b");
    put(&up.join("sub/.git/config"), "[core]\n\tfsmonitor = x\n");
    // What `land` does up to its journal, then the first rename; then the "crash".
    let refused = crate::layer::control::check(&up, &f.ws).unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    std::fs::write(layer.dir.join("journal"), format!("{}\n", refused[0])).unwrap();
    std::fs::rename(up.join("a.txt"), f.ws.join("a.txt")).unwrap();
    let (dir, held) = (layer.dir.clone(), layer);
    // Locked: left alone.
    assert!(recover(&f.layers).is_empty());
    assert!(exists(&dir));
    drop(held);
    // An unlocked layer without a journal (its call never returned) is removed.
    let orphan = f.layer();
    put(&upper(&orphan.dir).join("never.txt"), "x");
    let orphan_dir = orphan.dir.clone();
    drop(orphan);
    let landings = recover(&f.layers);
    assert_eq!(landings.len(), 1);
    assert_eq!(landings[0].refused, refused);
    assert_eq!(read(&f.ws.join("a.txt")), "a");
    assert_eq!(read(&f.ws.join("b.txt")), "b");
    assert_eq!(read(&f.ws.join("sub/.git/config")), "[core]\n");
    assert!(!exists(&f.ws.join("never.txt")));
    assert!(!exists(&dir) && !exists(&orphan_dir));
    assert!(recover(&f._tmp.path().join("missing")).is_empty());
}

/// A layer directory still being made (not yet renamed into place, so not yet locked) is
/// left to its maker, and removed once stale.
#[test]
fn recover_leaves_a_layer_being_made_to_its_maker() {
    let f = Fixture::new();
    let building = f.layers.join(format!("{}x", crate::layer::BUILDING));
    std::fs::create_dir_all(upper(&building)).unwrap();
    assert!(recover(&f.layers).is_empty());
    assert!(exists(&building), "a layer being made was removed");
    let old = std::time::SystemTime::now() - crate::layer::BUILDING_STALE * 2;
    std::fs::File::open(&building)
        .unwrap()
        .set_modified(old)
        .unwrap();
    recover(&f.layers);
    assert!(!exists(&building), "a stale one was kept");
}

/// The layer on another file system than the workspace: copies, then the sources removed.
#[test]
fn a_landing_across_file_systems_copies() {
    let shm = Path::new("/dev/shm");
    let f = Fixture::new();
    let same = |p: &Path| p.metadata().map(|m| m.dev());
    if !shm.is_dir() || same(shm).ok() == same(&f.ws).ok() {
        eprintln!("skipped: /dev/shm is missing or on the workspace's file system");
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("zc-layer-")
        .tempdir_in(shm)
        .unwrap();
    let layer = crate::layer::create(&tmp.path().join("layers/l"), &f.ws).unwrap();
    put(&f.ws.join("r.txt"), "old");
    let up = upper(&layer.dir);
    put(&up.join("r.txt"), "hello\n");
    put(&up.join("new/deep/f"), "f");
    std::os::unix::fs::symlink("deep/f", up.join("new/l")).unwrap();
    let nobody = nix::unistd::geteuid().is_root();
    if nobody {
        // The call's own set-id file stays the call's (the copy is made as root).
        use std::os::unix::fs::PermissionsExt;
        std::os::unix::fs::chown(up.join("r.txt"), Some(65534), Some(65534)).unwrap();
        let setuid = std::fs::Permissions::from_mode(0o4755);
        std::fs::set_permissions(up.join("r.txt"), setuid).unwrap();
    }
    let landing = land(&layer.dir, &f.ws).unwrap();
    if nobody {
        let meta = f.ws.join("r.txt").symlink_metadata().unwrap();
        assert_eq!(
            (meta.uid(), meta.gid(), mode(&f.ws.join("r.txt"))),
            (65534, 65534, 0o4755)
        );
    }
    assert_eq!(read(&f.ws.join("r.txt")), "hello\n");
    assert_eq!(read(&f.ws.join("new/deep/f")), "f");
    assert_eq!(
        std::fs::read_link(f.ws.join("new/l")).unwrap(),
        Path::new("deep/f")
    );
    assert_eq!(landing.changed.len(), 5, "{:?}", landing.changed);
    assert!(released(layer), "removed once released");
    let leftovers: Vec<_> = std::fs::read_dir(&f.ws)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".zc-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// A layer written through a real overlayfs mount (as root, and in a user namespace with
/// `userxattr`): the kernel's whiteouts and opaque directories land as the hand-made ones.
#[test]
fn a_layer_written_through_overlayfs_lands() {
    if !root() {
        return;
    }
    for userns in [false, true] {
        let f = Fixture::new();
        put(&f.ws.join("a.txt"), "old");
        put(&f.ws.join("gone.txt"), "x");
        put(&f.ws.join("tree/a/b"), "x");
        put(&f.ws.join("op/old"), "x");
        put(&f.ws.join("d/f"), "x");
        let layer = f.layer();
        let mnt = f._tmp.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let opts = format!(
            "lowerdir={},upperdir={},workdir={}{}",
            f.ws.display(),
            upper(&layer.dir).display(),
            crate::layer::work(&layer.dir).display(),
            if userns { ",userxattr" } else { "" }
        );
        let script = "set -e; mount -t overlay overlay -o \"$OPTS\" \"$MNT\"; cd \"$MNT\"; \
                      echo hello > new.txt; echo changed > a.txt; rm gone.txt; rm -r tree; \
                      rm -r op; mkdir op; echo n > op/n; chmod 700 d; \
                      mkdir -p sub/.git/hooks; echo x > sub/.git/hooks/pre-commit; \
                      printf '[core]\\n\\tfsmonitor = x\\n' > sub/.git/config; \
                      cd /; umount \"$MNT\"";
        let status = std::process::Command::new("unshare")
            .arg(if userns { "-Urm" } else { "-m" })
            .args(["sh", "-c", script])
            .env("OPTS", &opts)
            .env("MNT", &mnt)
            .status();
        match status {
            Ok(s) if s.success() => {}
            other => {
                eprintln!("skipped (userns: {userns}): no overlay mount here: {other:?}");
                continue;
            }
        }
        let landing = land(&layer.dir, &f.ws).unwrap();
        assert_eq!(read(&f.ws.join("new.txt")), "hello\n");
        assert_eq!(read(&f.ws.join("a.txt")), "changed\n");
        assert!(!exists(&f.ws.join("gone.txt")) && !exists(&f.ws.join("tree")));
        let op: Vec<_> = std::fs::read_dir(f.ws.join("op"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(op, ["n"], "userns: {userns}");
        assert_eq!(mode(&f.ws.join("d")), 0o700);
        assert_eq!(read(&f.ws.join("sub/.git/config")), "[core]\n");
        assert!(!exists(&f.ws.join("sub/.git/hooks/pre-commit")));
        assert_eq!(landing.refused.len(), 2, "{:?}", landing.refused);
        assert!(released(layer), "removed once released");
    }
}
