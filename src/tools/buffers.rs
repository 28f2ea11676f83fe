//! The client's editor buffers (ACP `fs/read_text_file`, `fs/write_text_file`) as the file
//! tools use them when the client offered them in `initialize`: `file_read` sees unsaved
//! edits, `file_write` and `file_edit` land in the editor. The tool has already passed the
//! policy's path check and the approval gate; the client is never asked about a path the
//! policy refuses. Writes are also held to the sandbox profile's writable roots, as the
//! confined write is.
//!
//! An error or no answer within the approval timeout fails the call with the reason. Nothing
//! falls back to the disk: a write the editor refused must not land behind its back, and a read
//! the editor could not serve would show the model text the user may not be looking at (the
//! model can ask the user, or retry).

use std::path::Path;

use super::ops::{self, MAX_FILE_BYTES};
use super::{BoxFuture, ToolContext, ToolError};

/// The client's side of the files: what it offered, and the requests.
pub trait ClientFiles: Send + Sync {
    /// The client offered `fs.readTextFile`.
    fn reads(&self) -> bool;
    /// The client offered `fs.writeTextFile`.
    fn writes(&self) -> bool;
    /// The whole text of `path` as the client has it (its buffer, unsaved edits included).
    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>>;
    /// Replaces the text of `path` in the client.
    fn write<'a>(&'a self, path: &'a Path, content: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// No client files: the tools use the disk, confined.
pub struct Disk;

impl ClientFiles for Disk {
    fn reads(&self) -> bool {
        false
    }

    fn writes(&self) -> bool {
        false
    }

    fn read<'a>(&'a self, _path: &'a Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async { Err("the client does not serve files".to_owned()) })
    }

    fn write<'a>(
        &'a self,
        _path: &'a Path,
        _content: &'a str,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async { Err("the client does not serve files".to_owned()) })
    }
}

/// The text of `path` from the client, size-capped like a disk read.
pub async fn read(ctx: &ToolContext, path: &Path) -> Result<String, ToolError> {
    let text = ctx
        .env
        .files
        .read(path)
        .await
        .map_err(|e| ToolError(format!("the client could not read {}: {e}", path.display())))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(ToolError(format!(
            "{} is {} bytes in the client, more than the {MAX_FILE_BYTES}-byte limit",
            path.display(),
            text.len()
        )));
    }
    Ok(text)
}

/// Writes `content` to `path` through the client, after the writable-roots check.
pub async fn write(
    ctx: &ToolContext,
    path: &Path,
    content: &str,
    roots: &[std::path::PathBuf],
) -> Result<(), ToolError> {
    ops::check_persistent(path, roots)?;
    ctx.env.files.write(path, content).await.map_err(|e| {
        ToolError(format!(
            "the client could not write {}: {e}",
            path.display()
        ))
    })
}

/// The text a write or edit through the client starts from: the client's buffer when it
/// serves reads, else the file on disk (read confined by `profile`).
pub async fn current(
    ctx: &ToolContext,
    profile: &zeroclaw_sandbox::Profile,
    path: &Path,
) -> Result<String, ToolError> {
    if ctx.env.files.reads() {
        return read(ctx, path).await;
    }
    let request = ops::BytesRequest {
        path: path.to_path_buf(),
    };
    let answer: ops::BytesAnswer =
        super::confine::run_op(ctx, profile, "read_bytes", &request).await?;
    let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, answer.base64)
        .map_err(|e| ToolError(format!("read_bytes: bad answer: {e}")))?;
    String::from_utf8(bytes).map_err(|_| ToolError(format!("{} is not UTF-8 text", path.display())))
}
