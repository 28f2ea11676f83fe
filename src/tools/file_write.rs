//! `file_write`: creates or replaces a file (parents created), inside the confined child — or,
//! when the client serves writes, in its buffer through `fs/write_text_file` after the same
//! checks ([`super::buffers`]); the update carries a `diff` with the old and new text.

use serde_json::{Value, json};

use super::file_read::parent;
use super::ops::{WriteAnswer, WriteRequest};
use super::{
    BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args, buffers, confine,
};
use crate::approval::{Action, gate};
use crate::policy::Access;

pub struct FileWrite;

impl Tool for FileWrite {
    fn name(&self) -> &str {
        "file_write"
    }

    fn description(&self) -> &str {
        "Create or overwrite a file with the given content (parent directories are created). \
         Paths are relative to the session's working directory."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "content": {"type": "string", "description": "The whole new content."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn title(&self, args: &Value) -> String {
        format!("Write {}", args["path"].as_str().unwrap_or("file"))
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
            let content = args::string(&args, "content")?;
            let path = gate::check_path(ctx, "file_write", raw, Access::Write).await?;
            gate::pass(
                ctx,
                "file_write",
                ToolKind::Edit.as_str(),
                Action::Write,
                raw,
            )
            .await?;
            let profile = confine::profile(ctx, &[(parent(&path), true)]);
            let request = WriteRequest {
                path: path.clone(),
                content: content.to_owned(),
                roots: profile.writable_roots().cloned().collect(),
            };
            let answer: WriteAnswer = if ctx.env.files.writes() {
                let old = buffers::current(ctx, &profile, &path).await.ok();
                buffers::write(ctx, &path, content, &request.roots).await?;
                WriteAnswer { old }
            } else {
                confine::run_op(ctx, &profile, "file_write", &request).await?
            };
            let verb = if answer.old.is_some() {
                "Updated"
            } else {
                "Created"
            };
            Ok(ToolOutput {
                text: format!("{verb} {} ({} bytes)", path.display(), content.len()),
                extra: json!({
                    "content": [{"type": "diff", "path": path, "oldText": answer.old, "newText": content}],
                    "locations": [{"path": path, "line": 1}],
                }),
                delivery: None,
            })
        })
    }
}
