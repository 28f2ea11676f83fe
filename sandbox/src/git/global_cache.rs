//! The user's global git config files read once per process (see [`super::global`]): each
//! file is read through one descriptor and stamped by that descriptor's `fstat` (device,
//! inode, mode, owner, size, change and modification times), and its validated copy is
//! reused while a `stat` of every file gives the same stamps. Only files whose last change is
//! older than [`SETTLED`] are trusted: a change within one clock tick of the read could keep
//! every field, so a file changed that recently is read again at each call (git's "racy"
//! rule).

use std::fs::Metadata;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A user's config file larger than this is left out whole (git configs are a few KiB).
const MAX_BYTES: u64 = 256 * 1024;

/// How long ago a file's inode must have last changed for its stamp to identify its content.
const SETTLED: Duration = Duration::from_secs(2);

/// What a file's inode looked like; `None`: nothing there that `stat` can see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamp(Option<[i64; 10]>);

impl Stamp {
    fn of(meta: Option<&Metadata>) -> Stamp {
        Stamp(meta.map(|m| {
            [
                m.dev() as i64,
                m.ino() as i64,
                i64::from(m.mode()),
                i64::from(m.uid()),
                m.size() as i64,
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
                i64::from(m.gid()),
            ]
        }))
    }

    /// Whether the inode last changed before `before` (an absent file always is).
    fn settled_before(&self, before: SystemTime) -> bool {
        let Some(s) = &self.0 else { return true };
        let changed = Duration::new(s[7].max(0) as u64, s[8].clamp(0, 999_999_999) as u32);
        before
            .duration_since(UNIX_EPOCH)
            .is_ok_and(|now| changed < now)
    }
}

/// The last validated copy and the stamps of the files it was made from.
struct Cached {
    files: Vec<PathBuf>,
    stamps: Vec<Stamp>,
    text: String,
}

/// One validated copy kept (the process has one: [`validated`]).
#[derive(Default)]
pub(super) struct Cache(Mutex<Option<Cached>>);

static CACHE: Cache = Cache(Mutex::new(None));

/// The validated copy of `files` (`validate` makes it from their `(name, text)`), through the
/// process's cache.
pub(super) fn validated(
    files: &[PathBuf],
    validate: impl FnOnce(&[(String, String)]) -> String,
) -> String {
    CACHE.validated(files, SystemTime::now(), validate)
}

impl Cache {
    /// The cached copy when every file's stamp is as it was when it was read, else made again
    /// (and kept when every file had settled by `now`).
    pub(super) fn validated(
        &self,
        files: &[PathBuf],
        now: SystemTime,
        validate: impl FnOnce(&[(String, String)]) -> String,
    ) -> String {
        let mut cache = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.as_ref()
            && c.files == files
            && files
                .iter()
                .zip(&c.stamps)
                .all(|(f, s)| Stamp::of(std::fs::metadata(f).ok().as_ref()) == *s)
        {
            return c.text.clone();
        }
        let before = now.checked_sub(SETTLED).unwrap_or(UNIX_EPOCH);
        let (configs, stamps) = read_stamped(files);
        let text = validate(&configs);
        *cache = stamps
            .iter()
            .all(|s| s.settled_before(before))
            .then(|| Cached {
                files: files.to_vec(),
                stamps,
                text: text.clone(),
            });
        text
    }
}

/// The text of each of `files` that is a readable regular file of at most
/// [`MAX_BYTES`], with its name, and every file's stamp (taken from the
/// descriptor read when it opens).
pub(super) fn read_stamped(files: &[PathBuf]) -> (Vec<(String, String)>, Vec<Stamp>) {
    let mut configs = Vec::new();
    let stamps = files
        .iter()
        .map(|f| match read_one(f) {
            Ok((meta, text)) => {
                if let Some(text) = text {
                    configs.push((f.display().to_string(), text));
                }
                Stamp::of(Some(&meta))
            }
            // Not opened: what `stat` sees there (a change to it changes its ctime).
            Err(_) => Stamp::of(std::fs::metadata(f).ok().as_ref()),
        })
        .collect();
    (configs, stamps)
}

/// `path`'s inode and, when it is a regular file small enough, its text (never blocking on a
/// fifo; symlinks followed, as git does).
fn read_one(path: &Path) -> std::io::Result<(Metadata, Option<String>)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return Ok((meta, None));
    }
    let mut bytes = Vec::new();
    file.take(MAX_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Ok((meta, None));
    }
    Ok((meta, Some(String::from_utf8_lossy(&bytes).into_owned())))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    /// The cache's answer for `files` at `now`, and whether it read and validated them.
    fn ask(cache: &Cache, files: &[PathBuf], now: SystemTime) -> (String, bool) {
        let made = Cell::new(false);
        let text = cache.validated(files, now, |configs| {
            made.set(true);
            configs.iter().map(|(_, t)| t.as_str()).collect()
        });
        (text, made.get())
    }

    #[test]
    fn a_settled_file_is_read_once_and_any_change_to_it_is_read_again() {
        let d = tempfile::tempdir().unwrap();
        let files = [d.path().join("xdg"), d.path().join(".gitconfig")];
        // Files changed an hour before "now" count as settled.
        let later = SystemTime::now() + Duration::from_secs(3600);
        let cache = Cache::default();
        assert_eq!(ask(&cache, &files, later), (String::new(), true));
        assert_eq!(ask(&cache, &files, later), (String::new(), false));
        std::fs::write(&files[1], "[user]\n\tname = a\n").unwrap();
        assert_eq!(
            ask(&cache, &files, later),
            ("[user]\n\tname = a\n".into(), true)
        );
        assert_eq!(
            ask(&cache, &files, later),
            ("[user]\n\tname = a\n".into(), false)
        );
        // Replaced by another file of the same size: a new inode.
        let other = d.path().join("other");
        std::fs::write(&other, "[user]\n\tname = b\n").unwrap();
        std::fs::rename(&other, &files[1]).unwrap();
        assert_eq!(
            ask(&cache, &files, later),
            ("[user]\n\tname = b\n".into(), true)
        );
        // Rewritten in place, and made unreadable as a file.
        std::fs::write(&files[1], "[user]\n\tname = cc\n").unwrap();
        assert_eq!(
            ask(&cache, &files, later),
            ("[user]\n\tname = cc\n".into(), true)
        );
        std::fs::remove_file(&files[1]).unwrap();
        std::fs::create_dir(&files[1]).unwrap();
        assert_eq!(ask(&cache, &files, later), (String::new(), true));
        // A symlink turned to another file: that file is read.
        std::fs::remove_dir(&files[1]).unwrap();
        std::os::unix::fs::symlink(&other, &files[1]).unwrap();
        std::fs::write(&other, "[user]\n\tname = d\n").unwrap();
        assert_eq!(
            ask(&cache, &files, later),
            ("[user]\n\tname = d\n".into(), true)
        );
        assert_eq!(
            ask(&cache, &files, later),
            ("[user]\n\tname = d\n".into(), false)
        );
        // Other files (another HOME) are not answered from this one's copy.
        let elsewhere = [d.path().join("a"), d.path().join("b")];
        assert_eq!(ask(&cache, &elsewhere, later), (String::new(), true));
    }

    #[test]
    fn a_file_changed_within_the_last_moments_is_read_at_every_call() {
        let d = tempfile::tempdir().unwrap();
        let files = [d.path().join("xdg"), d.path().join(".gitconfig")];
        std::fs::write(&files[1], "[user]\n\tname = a\n").unwrap();
        let cache = Cache::default();
        let now = SystemTime::now();
        assert!(ask(&cache, &files, now).1);
        // Same size, possibly the same clock tick: no stamp field need differ.
        std::fs::write(&files[1], "[user]\n\tname = b\n").unwrap();
        assert_eq!(
            ask(&cache, &files, now),
            ("[user]\n\tname = b\n".into(), true)
        );
    }
}
