//! `escalate_to_human`: stops to bring something to the user's attention through
//! `session/request_permission`; the model learns whether they acknowledged or dismissed it.

use serde_json::{Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args};
use crate::approval::gate;

pub struct Escalate;

impl Tool for Escalate {
    fn name(&self) -> &str {
        "escalate_to_human"
    }

    fn description(&self) -> &str {
        "Escalate to the user: explain what needs a human decision or attention. Waits for \
         them to acknowledge or dismiss it."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"reason": {"type": "string"}},
            "required": ["reason"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, _args: &Value) -> String {
        "Escalate to the user".to_owned()
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let reason = args::string(&args, "reason")?;
            let options = json!([
                {"optionId": "acknowledge", "name": "Acknowledge", "kind": "allow_once"},
                {"optionId": "dismiss", "name": "Dismiss", "kind": "reject_once"},
            ]);
            let params = gate::question(
                ctx,
                "escalate_to_human",
                ToolKind::Other.as_str(),
                reason,
                options,
            );
            match gate::ask(ctx, params).await?.as_str() {
                "acknowledge" => Ok(ToolOutput::text("The user acknowledged the escalation.")),
                _ => Err(ToolError("The user dismissed the escalation.".to_owned())),
            }
        })
    }
}
