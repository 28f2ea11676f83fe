//! `deliver_file`: hands a workspace file to the client as an embedded ACP resource with the
//! content-addressed uri `attachment://deliver/<sha256>.<ext>` (spec: deliver_file). The tool
//! validates: it checks the path (same jail as `file_read`), reads the file confined (10 MiB
//! cap) and hashes it — before any approval question — and returns a typed [`Delivery`]. It
//! never embeds: the ACP layer (`acp::embed`) reads the file again, confined, through
//! [`read_confined`], re-hashes, and attaches it only when the digest still matches.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::file_read::parent;
use super::ops::{BytesAnswer, BytesRequest, MAX_FILE_BYTES};
use super::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args, confine};
use crate::approval::{Action, gate};
use crate::policy::Access;

/// A validated delivery: what the ACP layer re-reads, checks and embeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The resolved, policy-checked path.
    pub path: PathBuf,
    /// Full hex SHA-256 of the bytes the tool read.
    pub sha256: String,
    pub size: u64,
    pub mime: String,
    /// `attachment://deliver/<sha256>.<ext>`.
    pub uri: String,
}

pub struct DeliverFile;

impl Tool for DeliverFile {
    fn name(&self) -> &str {
        "deliver_file"
    }

    fn description(&self) -> &str {
        "Deliver a workspace file to the user for download or preview (at most 10 MiB). \
         Returns the attachment uri to cite; optional `title` (display label) and `mimeType`."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "mimeType": {"type": "string"},
                "title": {"type": "string", "description": "A human label, e.g. \"Quarterly report\"."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, args: &Value) -> String {
        match args["title"].as_str() {
            Some(title) => title.to_owned(),
            None => file_name(Path::new(args["path"].as_str().unwrap_or("file"))),
        }
    }

    fn locations(&self, args: &Value, cwd: &std::path::Path) -> Value {
        super::path_location(args, cwd, None)
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let raw = args::string(&args, "path")?;
            let path = gate::check_path(ctx, "deliver_file", raw, Access::Read).await?;
            // Validated before the question, so the bytes the user approves are the ones
            // hashed; the ACP layer refuses the attachment if they changed since.
            let (bytes, sha256) = read_confined(ctx, &path).await?;
            gate::pass(
                ctx,
                "deliver_file",
                ToolKind::Read.as_str(),
                Action::Read,
                raw,
            )
            .await?;
            let ext = extension(&path);
            let mime = match args::opt_string(&args, "mimeType")? {
                Some(m) => m.to_owned(),
                None => mime_of(&ext).to_owned(),
            };
            let uri = format!("attachment://deliver/{sha256}.{ext}");
            let text = format!(
                "Delivered {} ({} bytes) as {uri}",
                file_name(&path),
                bytes.len()
            );
            Ok(ToolOutput {
                text,
                extra: json!({"title": self.title(&args), "uri": uri}),
                delivery: Some(Delivery {
                    size: bytes.len() as u64,
                    path,
                    sha256,
                    mime,
                    uri,
                }),
            })
        })
    }
}

/// One confined read of `path` (the `read_bytes` op, 10 MiB cap): the bytes and their
/// SHA-256, computed here from the bytes received.
pub async fn read_confined(ctx: &ToolContext, path: &Path) -> Result<(Vec<u8>, String), ToolError> {
    let mut profile = confine::read_profile(ctx, &[(parent(path), false)]);
    // base64 of the largest file, plus JSON framing.
    profile.limits.output_bytes = profile.limits.output_bytes.max(MAX_FILE_BYTES * 2);
    let request = BytesRequest {
        path: path.to_path_buf(),
    };
    let answer: BytesAnswer = confine::run_op(ctx, &profile, "read_bytes", &request).await?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(answer.base64.as_bytes())
        .map_err(|e| ToolError(format!("deliver_file: bad bytes from the sandbox: {e}")))?;
    let sha256 = hex::encode(Sha256::digest(&bytes));
    Ok((bytes, sha256))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".to_owned())
}

/// The lowercase extension when it is short and alphanumeric, else `bin`.
fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .filter(|e| !e.is_empty() && e.len() <= 10 && e.bytes().all(|b| b.is_ascii_alphanumeric()))
        .map(str::to_ascii_lowercase)
        .unwrap_or_else(|| "bin".to_owned())
}

fn mime_of(ext: &str) -> &'static str {
    match ext {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_is_safe() {
        assert_eq!(extension(Path::new("a/Report.PDF")), "pdf");
        assert_eq!(extension(Path::new("noext")), "bin");
        assert_eq!(extension(Path::new("x.t%2f")), "bin");
    }
}
