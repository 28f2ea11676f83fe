//! `file_read`: a text file's lines (optional 1-based `offset` and `limit`), read inside the
//! confined child after the policy's path check — or, when the client serves reads, from its
//! buffer through `fs/read_text_file` after the same check ([`super::buffers`]).

use serde_json::{Value, json};

use super::ops::{ReadAnswer, ReadRequest, select_lines};
use super::output::{MODEL_TEXT_CAP, capped};
use super::{
    BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args, buffers, confine,
};
use crate::approval::{Action, gate};
use crate::policy::Access;

pub struct FileRead;

/// Lines returned when the model gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;

impl Tool for FileRead {
    fn name(&self) -> &str {
        "file_read"
    }

    fn description(&self) -> &str {
        "Read a text file. Paths are relative to the session's working directory. Optional \
         1-based line `offset` and line count `limit` (default 2000)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines."}
            },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn title(&self, args: &Value) -> String {
        format!("Read {}", args["path"].as_str().unwrap_or("file"))
    }

    fn locations(&self, args: &Value, cwd: &std::path::Path) -> Value {
        super::path_location(args, cwd, Some("offset"))
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let raw = args::string(&args, "path")?;
            let offset = args::opt_u64(&args, "offset")?.unwrap_or(1);
            let limit = args::opt_u64(&args, "limit")?.unwrap_or(DEFAULT_LIMIT);
            let path = gate::check_path(ctx, "file_read", raw, Access::Read).await?;
            gate::pass(ctx, "file_read", ToolKind::Read.as_str(), Action::Read, raw).await?;
            let answer = if ctx.env.files.reads() {
                let text = buffers::read(ctx, &path).await?;
                select_lines(&text, offset as usize, limit as usize)
            } else {
                let profile = confine::read_profile(ctx, &[(parent(&path), false)]);
                let request = ReadRequest {
                    path: path.clone(),
                    offset: offset as usize,
                    limit: limit as usize,
                };
                confine::run_op::<_, ReadAnswer>(ctx, &profile, "file_read", &request).await?
            };
            let last = answer.first_line + answer.text.lines().count().max(1) - 1;
            let text = format!(
                "{} (lines {}-{} of {}):\n{}",
                path.display(),
                answer.first_line,
                last.min(answer.total_lines),
                answer.total_lines,
                capped(answer.text.as_bytes(), MODEL_TEXT_CAP)
            );
            Ok(ToolOutput {
                text,
                extra: json!({"locations": [{"path": path, "line": answer.first_line}]}),
                delivery: None,
            })
        })
    }
}

/// The directory a `full` session must be able to reach for `path`.
pub fn parent(path: &std::path::Path) -> &std::path::Path {
    path.parent().unwrap_or(path)
}
