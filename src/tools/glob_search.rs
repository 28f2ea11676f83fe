//! `glob_search`: files under the session cwd matching a glob (`.gitignore` respected, `.git`
//! skipped), walked inside the confined child.

use serde_json::{Value, json};

use super::ops::{GlobRequest, SearchAnswer};
use super::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args, confine};
use crate::approval::{Action, gate};

pub struct GlobSearch;

impl Tool for GlobSearch {
    fn name(&self) -> &str {
        "glob_search"
    }

    fn description(&self) -> &str {
        "List files whose path (relative to the working directory) matches a glob such as \
         `src/**/*.rs`. Files ignored by .gitignore are skipped."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"pattern": {"type": "string", "description": "A glob, relative to the working directory."}},
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn title(&self, args: &Value) -> String {
        format!("Find {}", args["pattern"].as_str().unwrap_or("files"))
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let pattern = args::string(&args, "pattern")?;
            check_relative(ctx, "glob_search", pattern).await?;
            gate::pass(
                ctx,
                "glob_search",
                ToolKind::Search.as_str(),
                Action::Read,
                pattern,
            )
            .await?;
            let profile = confine::read_profile(ctx, &[]);
            let request = GlobRequest {
                root: ctx.cwd.clone(),
                pattern: pattern.to_owned(),
            };
            let answer: SearchAnswer<String> =
                confine::run_op(ctx, &profile, "glob_search", &request).await?;
            let mut text = if answer.matches.is_empty() {
                format!("no files match {pattern}")
            } else {
                answer.matches.join("\n")
            };
            if answer.truncated {
                text.push_str("\n[... more matches not shown; narrow the pattern ...]");
            }
            Ok(ToolOutput::text(text))
        })
    }
}

/// Searches stay under the working directory (a refusal is recorded, rule
/// `relative_pattern`).
pub async fn check_relative(ctx: &ToolContext, tool: &str, pattern: &str) -> Result<(), ToolError> {
    if pattern.starts_with('/') || pattern.starts_with('~') || pattern.split('/').any(|p| p == "..")
    {
        let reason = "denied by policy: search patterns are relative to the working directory \
                      (no leading /, ~ or ..)";
        return Err(gate::refuse(ctx, tool, "relative_pattern", reason.into())
            .await
            .into());
    }
    Ok(())
}
