//! `todo_write`: the model keeps a task list; every call replaces the whole list and is shown
//! to the client as an ACP `plan` update (always the full list of entries).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput};

pub struct TodoWrite;

/// One entry, with the values of an ACP plan entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    pub content: String,
    pub status: Status,
    pub priority: Priority,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    Medium,
    Low,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    todos: Vec<Todo>,
}

/// Validates the arguments into the list of todos; the error tells the model what to fix.
pub fn parse(args: &Value) -> Result<Vec<Todo>, ToolError> {
    let args: Args = serde_json::from_value(args.clone()).map_err(|e| {
        ToolError(format!(
            "invalid todo_write arguments: {e}; expected {{\"todos\": [{{\"content\": string, \
             \"status\": \"pending\"|\"in_progress\"|\"completed\", \"priority\": \
             \"high\"|\"medium\"|\"low\"}}]}}"
        ))
    })?;
    if let Some(i) = args.todos.iter().position(|t| t.content.trim().is_empty()) {
        return Err(ToolError(format!("todo {i} has empty content")));
    }
    Ok(args.todos)
}

/// The ACP `plan` update for a list of todos.
pub fn plan_update(todos: &[Todo]) -> Value {
    json!({"sessionUpdate": "plan", "entries": todos})
}

fn summary(todos: &[Todo]) -> String {
    let count = |s: Status| todos.iter().filter(|t| t.status == s).count();
    format!(
        "Todo list updated: {} items ({} completed, {} in progress, {} pending).",
        todos.len(),
        count(Status::Completed),
        count(Status::InProgress),
        count(Status::Pending)
    )
}

impl Tool for TodoWrite {
    fn name(&self) -> &str {
        "todo_write"
    }

    fn description(&self) -> &str {
        "Create or update the task list for the current work. Each call replaces the whole \
         list; send every item with its status and priority."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string"},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "priority": {"type": "string", "enum": ["high", "medium", "low"]}
                        },
                        "required": ["content", "status", "priority"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Think
    }

    fn title(&self, args: &Value) -> String {
        match args.get("todos").and_then(Value::as_array) {
            Some(todos) => format!("Update plan ({} items)", todos.len()),
            None => "Update plan".to_owned(),
        }
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let todos = parse(&args)?;
            ctx.updates.send(plan_update(&todos)).await;
            Ok(ToolOutput::text(summary(&todos)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_list_parses_and_becomes_a_full_plan() {
        let args = json!({"todos": [
            {"content": "a", "status": "pending", "priority": "high"},
            {"content": "b", "status": "in_progress", "priority": "low"}
        ]});
        let todos = parse(&args).unwrap();
        assert_eq!(
            plan_update(&todos),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "a", "status": "pending", "priority": "high"},
                {"content": "b", "status": "in_progress", "priority": "low"}
            ]})
        );
        assert_eq!(
            summary(&todos),
            "Todo list updated: 2 items (0 completed, 1 in progress, 1 pending)."
        );
    }

    #[test]
    fn bad_values_are_rejected_with_a_usable_message() {
        let bad_status = json!({"todos": [{"content": "a", "status": "done", "priority": "high"}]});
        assert!(parse(&bad_status).unwrap_err().0.contains("status"));
        assert!(parse(&json!({"items": []})).is_err());
        let empty = json!({"todos": [{"content": " ", "status": "pending", "priority": "low"}]});
        assert!(parse(&empty).unwrap_err().0.contains("empty content"));
    }
}
