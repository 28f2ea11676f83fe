//! `ask_user`: a multiple-choice question to the user through `session/request_permission`
//! (each choice becomes an option). Free-form questions are not supported over ACP yet, so a
//! call without choices fails fast with the spec's error.

use serde_json::{Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args};
use crate::approval::gate;

pub struct AskUser;

/// The spec's error for `ask_user` without choices.
pub const NO_CHOICES: &str = "ask_user without choices is not supported on ACP sessions \
    (free-form questions need the ACP elicitation RFD); pass 2 or more `choices`";

impl Tool for AskUser {
    fn name(&self) -> &str {
        "ask_user"
    }

    fn description(&self) -> &str {
        "Ask the user a question with a fixed list of choices; returns the chosen one."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "question": {"type": "string"},
                "choices": {"type": "array", "items": {"type": "string"}, "minItems": 2}
            },
            "required": ["question", "choices"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, args: &Value) -> String {
        args["question"]
            .as_str()
            .unwrap_or("Question")
            .chars()
            .take(80)
            .collect()
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let question = args::string(&args, "question")?;
            let choices: Vec<&str> = args["choices"]
                .as_array()
                .map(|c| c.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if choices.is_empty() {
                return Err(ToolError(NO_CHOICES.to_owned()));
            }
            let options: Vec<Value> = choices
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"optionId": format!("choice-{i}"), "name": c, "kind": "allow_once"}))
                .collect();
            let params = gate::question(
                ctx,
                "ask_user",
                ToolKind::Other.as_str(),
                question,
                json!(options),
            );
            let picked = gate::ask(ctx, params).await?;
            let choice = picked
                .strip_prefix("choice-")
                .and_then(|i| i.parse::<usize>().ok())
                .and_then(|i| choices.get(i))
                .ok_or_else(|| {
                    ToolError(format!("the client answered an unknown option {picked}"))
                })?;
            Ok(ToolOutput::text(format!("The user chose: {choice}")))
        })
    }
}
