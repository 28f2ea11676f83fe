//! `file_edit`: replaces an exact string in a file (once, or every occurrence with
//! `replace_all`), inside the confined child; fails clearly when the string is absent or
//! ambiguous. When the client serves writes, the edit applies to its buffer (read through the
//! client when it serves reads, else from the disk, confined) and is written back through
//! `fs/write_text_file` ([`super::buffers`]). The update carries a `diff` and the line of the
//! first change.

use serde_json::{Value, json};

use super::file_read::parent;
use super::ops::{EditAnswer, EditRequest, apply_edit};
use super::{
    BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args, buffers, confine,
};
use crate::approval::{Action, gate};
use crate::policy::Access;

pub struct FileEdit;

impl Tool for FileEdit {
    fn name(&self) -> &str {
        "file_edit"
    }

    fn description(&self) -> &str {
        "Replace `old_string` with `new_string` in a file. `old_string` must match exactly and \
         be unique unless `replace_all` is true."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean", "default": false}
            },
            "required": ["path", "old_string", "new_string"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn title(&self, args: &Value) -> String {
        format!("Edit {}", args["path"].as_str().unwrap_or("file"))
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
            let path = gate::check_path(ctx, "file_edit", raw, Access::Write).await?;
            let profile = confine::profile(ctx, &[(parent(&path), true)]);
            let request = EditRequest {
                path: path.clone(),
                old_string: args::string(&args, "old_string")?.to_owned(),
                new_string: args::string(&args, "new_string")?.to_owned(),
                replace_all: args::flag(&args, "replace_all")?,
                roots: profile.writable_roots().cloned().collect(),
            };
            gate::pass(
                ctx,
                "file_edit",
                ToolKind::Edit.as_str(),
                Action::Write,
                raw,
            )
            .await?;
            let answer: EditAnswer = if ctx.env.files.writes() {
                let text = buffers::current(ctx, &profile, &path).await?;
                let answer = apply_edit(text, &request)?;
                buffers::write(ctx, &path, &answer.new, &request.roots).await?;
                answer
            } else {
                confine::run_op(ctx, &profile, "file_edit", &request).await?
            };
            Ok(ToolOutput {
                text: format!(
                    "Edited {}: {} replacement(s), first at line {}",
                    path.display(),
                    answer.replacements,
                    answer.line
                ),
                extra: json!({
                    "content": [{"type": "diff", "path": path, "oldText": answer.old, "newText": answer.new}],
                    "locations": [{"path": path, "line": answer.line}],
                }),
                delivery: None,
            })
        })
    }
}
