//! The host's git as the reference reader of a config file (`git config --file F --list`: a
//! file, since git refuses a relative include read from standard input),
//! for the targets whose property is "as git reads it". Distinct texts only: a process per
//! input is slow, and libFuzzer repeats inputs.

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Mutex;

static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// `(name, value)` of every entry git reads in `text` (name as git prints it: section and
/// key lowercase, subsection as written; value `None` for a bare key), or `None` when git
/// refuses the file, is missing, or already read this text.
pub fn list(text: &str) -> Option<Vec<(String, Option<String>)>> {
    if text.contains('\0') {
        return None;
    }
    {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        if !seen
            .get_or_insert_with(HashSet::new)
            .insert(text.to_owned())
        {
            return None;
        }
    }
    let file = std::env::temp_dir().join(format!("zeroclaw-fuzz-{}.gitconfig", std::process::id()));
    std::fs::File::create(&file)
        .ok()?
        .write_all(text.as_bytes())
        .ok()?;
    let out = Command::new("git")
        .args(["config", "--no-includes", "--list", "-z", "--file"])
        .arg(&file)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output();
    let _ = std::fs::remove_file(&file);
    let out = out.ok()?;
    if !out.status.success() {
        return None;
    }
    let stdout = String::from_utf8(out.stdout).ok()?;
    Some(
        stdout
            .split_terminator('\0')
            .map(|item| match item.split_once('\n') {
                Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
                None => (item.to_owned(), None),
            })
            .collect(),
    )
}
