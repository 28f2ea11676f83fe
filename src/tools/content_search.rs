//! `content_search`: lines matching a regex in files under the session cwd, optionally
//! filtered by a path glob; ripgrep's crates (`ignore`, `grep-regex`, `grep-searcher`) run
//! inside the confined child and respect `.gitignore`.

use serde_json::{Value, json};

use super::glob_search::check_relative;
use super::ops::{ContentMatch, ContentRequest, SearchAnswer};
use super::output::{MODEL_TEXT_CAP, capped};
use super::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args, confine};
use crate::approval::{Action, gate};

pub struct ContentSearch;

impl Tool for ContentSearch {
    fn name(&self) -> &str {
        "content_search"
    }

    fn description(&self) -> &str {
        "Search file contents under the working directory for a regular expression (Rust regex \
         syntax); optional `path_glob` limits which files. Respects .gitignore. Returns \
         path:line:text lines."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "A regular expression."},
                "path_glob": {"type": "string", "description": "Only files whose relative path matches, e.g. `**/*.rs`."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Search
    }

    fn title(&self, args: &Value) -> String {
        format!("Search for `{}`", args["pattern"].as_str().unwrap_or(""))
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let pattern = args::string(&args, "pattern")?;
            let path_glob = args::opt_string(&args, "path_glob")?;
            if let Some(glob) = path_glob {
                check_relative(ctx, "content_search", glob).await?;
            }
            gate::pass(
                ctx,
                "content_search",
                ToolKind::Search.as_str(),
                Action::Read,
                pattern,
            )
            .await?;
            let profile = confine::read_profile(ctx, &[]);
            let request = ContentRequest {
                root: ctx.cwd.clone(),
                pattern: pattern.to_owned(),
                path_glob: path_glob.map(str::to_owned),
            };
            let answer: SearchAnswer<ContentMatch> =
                confine::run_op(ctx, &profile, "content_search", &request).await?;
            let lines: Vec<String> = answer
                .matches
                .iter()
                .map(|m| format!("{}:{}:{}", m.path, m.line, m.text))
                .collect();
            let mut text = if lines.is_empty() {
                format!("no matches for {pattern}")
            } else {
                capped(lines.join("\n").as_bytes(), MODEL_TEXT_CAP)
            };
            if answer.truncated {
                text.push_str("\n[... more matches not shown; narrow the search ...]");
            }
            let locations: Vec<Value> = answer
                .matches
                .iter()
                .take(50)
                .map(|m| json!({"path": ctx.cwd.join(&m.path), "line": m.line}))
                .collect();
            Ok(ToolOutput {
                text,
                extra: json!({"locations": locations}),
                delivery: None,
            })
        })
    }
}
