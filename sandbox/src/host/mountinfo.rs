//! `/proc/self/mountinfo`, the crate's one parser of it: each line's mount point (the fifth
//! field, its octal escapes decoded) and whether the mount is unbindable (an optional field);
//! [`mount_points`] reads this process's table. The helper parses the tables it reads itself
//! (below its old root) with [`parse`].

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// One line of a mount table, as far as the sandbox looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Where it is mounted, as the reading process sees it.
    pub point: PathBuf,
    /// Marked `unbindable` (a recursive bind leaves it, and what is below it, out).
    pub unbindable: bool,
}

/// Every mount of the table `info`, in its order; a line without a mount point is skipped.
pub fn parse(info: &str) -> Vec<Mount> {
    info.lines().filter_map(parse_line).collect()
}

/// The mount points of this process's mount namespace (empty when the table cannot be read).
pub fn mount_points() -> Vec<PathBuf> {
    let info = std::fs::read_to_string(Path::new("/proc/self/mountinfo")).unwrap_or_default();
    parse(&info).into_iter().map(|m| m.point).collect()
}

fn parse_line(line: &str) -> Option<Mount> {
    let point = unescape(line.split(' ').nth(4)?);
    // The optional fields run from the seventh to the `-` separator.
    let unbindable = line
        .split(' ')
        .skip(6)
        .take_while(|f| *f != "-")
        .any(|f| f == "unbindable");
    Some(Mount { point, unbindable })
}

/// A mount point as the kernel writes it (space, tab, newline and backslash as octal
/// escapes), decoded byte for byte.
fn unescape(field: &str) -> PathBuf {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8) + (b - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    PathBuf::from(OsString::from_vec(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_unescaped_and_unbindable_mounts_marked() {
        let info = "22 1 0:21 / / rw,relatime shared:1 - ext4 /dev/vda rw\n\
                    23 22 0:22 / /mnt/a\\040b\\011c\\134d rw master:2 - tmpfs tmpfs rw\n\
                    24 22 0:23 / /opt/private rw unbindable - tmpfs tmpfs rw\n\
                    25 22 0:24 / /srv rw - tmpfs unbindable rw\n\
                    short line\n";
        let parsed = parse(info);
        let point = |p: &str, unbindable| Mount {
            point: PathBuf::from(p),
            unbindable,
        };
        assert_eq!(
            parsed,
            [
                point("/", false),
                point("/mnt/a b\tc\\d", false),
                point("/opt/private", true),
                // `unbindable` after the separator is the source's name, not a flag.
                point("/srv", false),
            ]
        );
    }

    #[test]
    fn this_process_has_a_root_mount() {
        assert!(mount_points().iter().any(|p| p == Path::new("/")));
    }
}
