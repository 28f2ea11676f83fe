//! One MCP server tool as a [`Tool`]: `mcp__<server>__<tool>`, its description and JSON
//! schema as the server listed them, its ACP `kind` from the MCP annotations. A call passes
//! the same approval gate as the built-in tools, as a medium-risk command (`readonly`
//! refuses it, `supervised` asks) or, for a server the operator trusts, a low-risk one; the
//! annotations are the server's hints and never lower the risk. The result's content maps
//! to ACP content: text, images and audio as they are, embedded text resources as
//! resources, blobs written under `uploads/` like prompt blobs.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::server::Server;
use crate::approval::{Action, gate};
use crate::policy::Risk;
use crate::tools::output::{MODEL_TEXT_CAP, capped};
use crate::tools::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput};

/// The name the model sees for `tool` of `server`.
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// A listed tool of a running server.
pub struct McpTool {
    server: Arc<Server>,
    remote: String,
    name: String,
    description: String,
    schema: Value,
    kind: ToolKind,
    title: String,
    trusted: bool,
    timeout: Duration,
}

impl McpTool {
    /// The tool `listed` (an MCP `Tool` object) of `server`; `None` without a usable name.
    pub fn new(
        server: Arc<Server>,
        listed: &Value,
        trusted: bool,
        timeout: Duration,
    ) -> Option<McpTool> {
        let remote = listed["name"]
            .as_str()
            .filter(|n| !n.is_empty())?
            .to_owned();
        let name = tool_name(&server.name, &remote);
        let valid = name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            tracing::warn!(%name, "MCP tool skipped: its name is not a valid tool name");
            return None;
        }
        let annotations = &listed["annotations"];
        let title = annotations["title"]
            .as_str()
            .or(listed["title"].as_str())
            .unwrap_or(&remote)
            .to_owned();
        let mut schema = listed["inputSchema"].clone();
        if !schema.is_object() {
            schema = json!({"type": "object"});
        }
        Some(McpTool {
            name,
            description: listed["description"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            kind: kind(annotations),
            title: format!("{}: {title}", server.name),
            schema,
            server,
            remote,
            trusted,
            timeout,
        })
    }
}

/// The ACP kind the annotations suggest (they are hints: they only label the call).
pub fn kind(annotations: &Value) -> ToolKind {
    let hint = |key: &str| annotations[key].as_bool();
    match (
        hint("readOnlyHint"),
        hint("openWorldHint"),
        hint("destructiveHint"),
    ) {
        (Some(true), Some(true), _) => ToolKind::Fetch,
        (Some(true), _, _) => ToolKind::Read,
        (_, _, Some(true)) => ToolKind::Delete,
        (_, _, Some(false)) => ToolKind::Edit,
        _ => ToolKind::Other,
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn kind(&self) -> ToolKind {
        self.kind
    }

    fn title(&self, _args: &Value) -> String {
        self.title.clone()
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let arguments = match args {
                Value::Object(map) => map,
                _ => Map::new(),
            };
            let risk = if self.trusted {
                Risk::Low
            } else {
                Risk::Medium
            };
            let shown = capped(Value::Object(arguments.clone()).to_string().as_bytes(), 200);
            let summary = format!(
                "MCP server {} tool {}: {shown}",
                self.server.name, self.remote
            );
            gate::pass(
                ctx,
                &self.name,
                self.kind.as_str(),
                Action::Shell(risk),
                &summary,
            )
            .await?;
            gate::record_start(ctx).await?;
            let result = self
                .server
                .call(&self.remote, arguments, self.timeout, &ctx.cancel)
                .await?;
            to_output(ctx, &result).await
        })
    }
}

/// A `CallToolResult` as the call's output: text for the model, the rest as ACP content;
/// `isError` fails the call with its text.
async fn to_output(ctx: &ToolContext, result: &Value) -> Result<ToolOutput, ToolError> {
    let mut texts = Vec::new();
    let mut content = Vec::new();
    for item in result["content"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("text") => texts.push(item["text"].as_str().unwrap_or_default().to_owned()),
            Some(kind @ ("image" | "audio")) => {
                let mime = item["mimeType"]
                    .as_str()
                    .unwrap_or("application/octet-stream");
                texts.push(format!("[{kind}: {mime}]"));
                content.push(json!({"type": "content", "content": {
                    "type": kind, "data": item["data"], "mimeType": mime}}));
            }
            Some("resource") => resource(ctx, &item["resource"], &mut texts, &mut content).await?,
            Some("resource_link") => {
                let uri = item["uri"].as_str().unwrap_or_default();
                let name = item["name"].as_str().unwrap_or(uri);
                texts.push(format!("[Resource: {name} ({uri})]"));
                content.push(json!({"type": "content", "content": {
                    "type": "resource_link", "uri": uri, "name": name}}));
            }
            _ => texts.push(format!("[unsupported MCP content: {item}]")),
        }
    }
    if texts.is_empty() && !result["structuredContent"].is_null() {
        texts.push(result["structuredContent"].to_string());
    }
    let text = capped(texts.join("\n").as_bytes(), MODEL_TEXT_CAP);
    if result["isError"].as_bool() == Some(true) {
        return Err(ToolError(format!("the MCP tool reported an error: {text}")));
    }
    let extra = if content.is_empty() {
        Value::Null
    } else {
        json!({"content": content})
    };
    Ok(ToolOutput {
        text,
        extra,
        delivery: None,
    })
}

/// An embedded resource: text is shown (and kept as a resource); a blob is decoded and
/// written under `uploads/`, the model told where.
async fn resource(
    ctx: &ToolContext,
    resource: &Value,
    texts: &mut Vec<String>,
    content: &mut Vec<Value>,
) -> Result<(), ToolError> {
    let uri = resource["uri"].as_str().unwrap_or_default();
    let mime = resource["mimeType"].as_str();
    if let Some(text) = resource["text"].as_str() {
        texts.push(text.to_owned());
        content.push(
            json!({"type": "content", "content": {"type": "resource", "resource": {
            "uri": uri, "mimeType": mime, "text": text}}}),
        );
        return Ok(());
    }
    let blob = resource["blob"].as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| ToolError(format!("the MCP resource {uri} has an invalid blob: {e}")))?;
    let path = ctx
        .env
        .embedder
        .store_blob(&ctx.cwd, &bytes, uri, mime)
        .await?;
    texts.push(format!("[Resource {uri}: {}]", path.display()));
    content.push(
        json!({"type": "content", "content": {"type": "resource_link",
        "uri": format!("file://{}", path.display()), "name": uri, "mimeType": mime}}),
    );
    Ok(())
}

/// Stands for every tool of a server that is not available: each call fails with the reason.
pub struct Unavailable {
    pub name: String,
    pub reason: String,
}

impl Tool for Unavailable {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.reason
    }

    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Other
    }

    fn title(&self, _args: &Value) -> String {
        format!("{} (unavailable)", self.name)
    }

    fn execute<'a>(
        &'a self,
        _args: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Err(ToolError(self.reason.clone())) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_label_the_kind() {
        assert_eq!(kind(&json!({"readOnlyHint": true})), ToolKind::Read);
        assert_eq!(
            kind(&json!({"readOnlyHint": true, "openWorldHint": true})),
            ToolKind::Fetch
        );
        assert_eq!(kind(&json!({"destructiveHint": true})), ToolKind::Delete);
        assert_eq!(kind(&json!({"destructiveHint": false})), ToolKind::Edit);
        assert_eq!(kind(&Value::Null), ToolKind::Other);
    }
}
