//! The in-process operations the file and search tools run INSIDE a confined child (the
//! sandbox helper calls them after the whole confinement, seccomp included). Each takes a JSON
//! payload and answers JSON; an `Err` text is what the kernel said (e.g. "Permission denied").
//! Registered in `main` through `zeroclaw_sandbox::helper::run_if_helper_with(OPS)`.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroclaw_sandbox::helper::OpFn;

/// Every operation, by name.
pub static OPS: &[(&str, OpFn)] = &[
    ("file_read", file_read),
    ("file_write", file_write),
    ("file_edit", file_edit),
    ("glob_search", glob_search),
    ("content_search", content_search),
    ("read_bytes", read_bytes),
];

/// Files larger than this are not read whole.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Matches a search returns at most.
pub const MAX_MATCHES: usize = 500;

fn run<P: DeserializeOwned, R: Serialize>(
    payload: &[u8],
    op: impl FnOnce(P) -> Result<R, String>,
) -> Result<Vec<u8>, String> {
    let input = serde_json::from_slice(payload).map_err(|e| format!("bad payload: {e}"))?;
    let output = op(input)?;
    serde_json::to_vec(&output).map_err(|e| e.to_string())
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("cannot {what} {}: {e}", path.display())
}

fn read_text(path: &Path) -> Result<String, String> {
    let meta = std::fs::metadata(path).map_err(|e| io_error("read", path, e))?;
    if meta.is_dir() {
        return Err(format!(
            "{} is a directory; use glob_search to list it",
            path.display()
        ));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{} is {} bytes, more than the {MAX_FILE_BYTES}-byte limit",
            path.display(),
            meta.len()
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| io_error("read", path, e))?;
    String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))
}

#[derive(Serialize, Deserialize)]
pub struct ReadRequest {
    pub path: PathBuf,
    pub offset: usize,
    pub limit: usize,
}

#[derive(Serialize, Deserialize)]
pub struct ReadAnswer {
    /// The selected lines.
    pub text: String,
    pub first_line: usize,
    pub total_lines: usize,
}

fn file_read(payload: &[u8]) -> Result<Vec<u8>, String> {
    run(payload, |r: ReadRequest| {
        let text = read_text(&r.path)?;
        Ok(select_lines(&text, r.offset, r.limit))
    })
}

/// Lines `offset..offset+limit` (1-based) of a file's `text`, as `file_read` answers them.
pub fn select_lines(text: &str, offset: usize, limit: usize) -> ReadAnswer {
    let lines: Vec<&str> = text.lines().collect();
    let start = offset.saturating_sub(1).min(lines.len());
    let end = start.saturating_add(limit).min(lines.len());
    ReadAnswer {
        text: super::output::capped(lines[start..end].join("\n").as_bytes(), 1 << 20),
        first_line: start + 1,
        total_lines: lines.len(),
    }
}

#[derive(Serialize, Deserialize)]
pub struct WriteRequest {
    pub path: PathBuf,
    pub content: String,
    /// The profile's writable roots: a path elsewhere would land in the sandbox's private
    /// scratch space (a tmpfs) and vanish, so it is refused instead of reported as written.
    pub roots: Vec<PathBuf>,
}

/// Refuses a write outside `roots` (see [`WriteRequest::roots`]).
pub fn check_persistent(path: &Path, roots: &[PathBuf]) -> Result<(), String> {
    if roots.iter().any(|r| path.starts_with(r)) {
        return Ok(());
    }
    Err(format!(
        "cannot write {}: outside the sandbox's writable roots (Permission denied)",
        path.display()
    ))
}

/// The file's text before the change (`None`: it did not exist or was not text).
#[derive(Serialize, Deserialize)]
pub struct WriteAnswer {
    pub old: Option<String>,
}

fn file_write(payload: &[u8]) -> Result<Vec<u8>, String> {
    run(payload, |r: WriteRequest| {
        check_persistent(&r.path, &r.roots)?;
        let old = read_text(&r.path).ok();
        if let Some(parent) = r.path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error("create", parent, e))?;
        }
        std::fs::write(&r.path, r.content.as_bytes()).map_err(|e| io_error("write", &r.path, e))?;
        Ok(WriteAnswer { old })
    })
}

#[derive(Serialize, Deserialize)]
pub struct EditRequest {
    pub path: PathBuf,
    pub old_string: String,
    pub new_string: String,
    pub replace_all: bool,
    /// As [`WriteRequest::roots`].
    pub roots: Vec<PathBuf>,
}

#[derive(Serialize, Deserialize)]
pub struct EditAnswer {
    pub old: String,
    pub new: String,
    pub replacements: usize,
    /// 1-based line of the first replacement.
    pub line: usize,
}

fn file_edit(payload: &[u8]) -> Result<Vec<u8>, String> {
    run(payload, |r: EditRequest| {
        check_persistent(&r.path, &r.roots)?;
        let old = read_text(&r.path)?;
        let answer = apply_edit(old, &r)?;
        std::fs::write(&r.path, answer.new.as_bytes())
            .map_err(|e| io_error("write", &r.path, e))?;
        Ok(answer)
    })
}

/// The edit `r` applied to the file's text `old` (nothing written): refuses an empty, absent
/// or (without `replace_all`) ambiguous `old_string`.
pub fn apply_edit(old: String, r: &EditRequest) -> Result<EditAnswer, String> {
    if r.old_string.is_empty() {
        return Err("old_string is empty; use file_write to create a file".into());
    }
    let count = old.matches(&r.old_string).count();
    match count {
        0 => {
            return Err(format!(
                "old_string was not found in {}; read the file and copy the exact text",
                r.path.display()
            ));
        }
        n if n > 1 && !r.replace_all => {
            return Err(format!(
                "old_string has {n} occurrences in {}; add surrounding context to make \
                 it unique, or set replace_all",
                r.path.display()
            ));
        }
        _ => {}
    }
    let first = old.find(&r.old_string).unwrap_or(0);
    let line = old[..first].matches('\n').count() + 1;
    let new = if r.replace_all {
        old.replace(&r.old_string, &r.new_string)
    } else {
        old.replacen(&r.old_string, &r.new_string, 1)
    };
    Ok(EditAnswer {
        old,
        new,
        replacements: if r.replace_all { count } else { 1 },
        line,
    })
}

#[derive(Serialize, Deserialize)]
pub struct GlobRequest {
    pub root: PathBuf,
    pub pattern: String,
}

#[derive(Serialize, Deserialize)]
pub struct SearchAnswer<T> {
    pub matches: Vec<T>,
    pub truncated: bool,
}

/// A walker over `root` that honours `.gitignore` (and skips `.git`).
fn walker(root: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git")
        .build()
}

fn glob_search(payload: &[u8]) -> Result<Vec<u8>, String> {
    run(payload, |r: GlobRequest| {
        let glob = globset::GlobBuilder::new(&r.pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("bad glob pattern: {e}"))?
            .compile_matcher();
        let mut answer = SearchAnswer {
            matches: Vec::new(),
            truncated: false,
        };
        for entry in walker(&r.root) {
            let entry = entry.map_err(|e| e.to_string())?;
            let relative = entry.path().strip_prefix(&r.root).unwrap_or(entry.path());
            if relative.as_os_str().is_empty() || !glob.is_match(relative) {
                continue;
            }
            if answer.matches.len() == MAX_MATCHES {
                answer.truncated = true;
                break;
            }
            answer.matches.push(relative.display().to_string());
        }
        answer.matches.sort();
        Ok(answer)
    })
}

#[derive(Serialize, Deserialize)]
pub struct ContentRequest {
    pub root: PathBuf,
    pub pattern: String,
    pub path_glob: Option<String>,
}

#[derive(Serialize, Deserialize)]
pub struct ContentMatch {
    pub path: String,
    pub line: u64,
    pub text: String,
}

fn content_search(payload: &[u8]) -> Result<Vec<u8>, String> {
    run(payload, |r: ContentRequest| {
        let matcher =
            grep_regex::RegexMatcher::new(&r.pattern).map_err(|e| format!("bad regex: {e}"))?;
        let glob = match &r.path_glob {
            Some(g) => Some(
                globset::Glob::new(g)
                    .map_err(|e| format!("bad path_glob: {e}"))?
                    .compile_matcher(),
            ),
            None => None,
        };
        let mut searcher = grep_searcher::SearcherBuilder::new()
            .binary_detection(grep_searcher::BinaryDetection::quit(0))
            .build();
        let mut answer = SearchAnswer {
            matches: Vec::new(),
            truncated: false,
        };
        for entry in walker(&r.root) {
            let Ok(entry) = entry else { continue };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let relative = entry.path().strip_prefix(&r.root).unwrap_or(entry.path());
            if glob.as_ref().is_some_and(|g| !g.is_match(relative)) {
                continue;
            }
            let shown = relative.display().to_string();
            let sink = grep_searcher::sinks::UTF8(|line, text| {
                if answer.matches.len() == MAX_MATCHES {
                    answer.truncated = true;
                    return Ok(false);
                }
                answer.matches.push(ContentMatch {
                    path: shown.clone(),
                    line,
                    text: text.trim_end().chars().take(300).collect(),
                });
                Ok(true)
            });
            // Unreadable files (denied by the sandbox) are skipped, like rg does.
            let _ = searcher.search_path(&matcher, entry.path(), sink);
            if answer.truncated {
                break;
            }
        }
        Ok(answer)
    })
}

#[derive(Serialize, Deserialize)]
pub struct BytesRequest {
    pub path: PathBuf,
}

#[derive(Serialize, Deserialize)]
pub struct BytesAnswer {
    pub base64: String,
    pub sha256: String,
    pub size: u64,
}

fn read_bytes(payload: &[u8]) -> Result<Vec<u8>, String> {
    run(payload, |r: BytesRequest| {
        let meta = std::fs::metadata(&r.path).map_err(|e| io_error("read", &r.path, e))?;
        if !meta.is_file() {
            return Err(format!("{} is not a regular file", r.path.display()));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(format!(
                "{} is {} bytes; files over 10 MiB cannot be delivered",
                r.path.display(),
                meta.len()
            ));
        }
        let bytes = std::fs::read(&r.path).map_err(|e| io_error("read", &r.path, e))?;
        Ok(BytesAnswer {
            sha256: hex::encode(Sha256::digest(&bytes)),
            size: bytes.len() as u64,
            base64: base64::engine::general_purpose::STANDARD.encode(&bytes),
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn call(op: OpFn, payload: Value) -> Result<Value, String> {
        op(&serde_json::to_vec(&payload).unwrap()).map(|b| serde_json::from_slice(&b).unwrap())
    }

    #[test]
    fn edit_refuses_absent_and_ambiguous_strings_and_replaces_a_unique_one() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "one\ntwo\ntwo\nthree\n").unwrap();
        let edit = |old: &str, all: bool| {
            call(
                file_edit,
                json!({"path": file, "old_string": old, "new_string": "X",
                       "replace_all": all, "roots": [dir.path()]}),
            )
        };
        assert!(edit("four", false).unwrap_err().contains("not found"));
        assert!(edit("two", false).unwrap_err().contains("2 occurrences"));
        let answer = edit("three", false).unwrap();
        assert_eq!(answer["line"], 4);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "one\ntwo\ntwo\nX\n"
        );
        assert_eq!(edit("two", true).unwrap()["replacements"], 2);
    }

    #[test]
    fn writes_outside_the_writable_roots_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let outside = dir.path().join("outside");
        let err = call(
            file_write,
            json!({"path": outside, "content": "x", "roots": [ws]}),
        )
        .unwrap_err();
        assert!(
            err.contains("outside the sandbox's writable roots"),
            "{err}"
        );
        assert!(!outside.exists());
        let inside = ws.join("sub/new.txt");
        let answer = call(
            file_write,
            json!({"path": inside, "content": "x", "roots": [ws]}),
        );
        assert_eq!(answer.unwrap()["old"], Value::Null);
        assert_eq!(std::fs::read_to_string(inside).unwrap(), "x");
    }

    #[test]
    fn content_search_respects_gitignore_and_the_path_glob() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        std::fs::write(root.join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(root.join("ignored.txt"), "needle\n").unwrap();
        std::fs::write(root.join("a.rs"), "fn x() {}\nlet needle = 1;\n").unwrap();
        std::fs::write(root.join("b.md"), "needle\n").unwrap();
        let search = |glob: Value| {
            call(
                content_search,
                json!({"root": root, "pattern": "need+le", "path_glob": glob}),
            )
            .unwrap()
        };
        let all = search(Value::Null);
        let paths: Vec<&str> = all["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap())
            .collect();
        assert!(paths.contains(&"a.rs") && paths.contains(&"b.md"), "{all}");
        assert!(!paths.contains(&"ignored.txt"), "{all}");
        let rs = search(json!("*.rs"));
        assert_eq!(rs["matches"][0]["line"], 2);
        assert_eq!(rs["matches"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn read_bytes_hashes_and_caps() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.bin");
        std::fs::write(&file, b"abc").unwrap();
        let answer = call(read_bytes, json!({"path": file})).unwrap();
        assert_eq!(
            answer["sha256"],
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        std::fs::File::create(&file)
            .unwrap()
            .set_len(MAX_FILE_BYTES + 1)
            .unwrap();
        assert!(
            call(read_bytes, json!({"path": file}))
                .unwrap_err()
                .contains("10 MiB")
        );
    }
}
