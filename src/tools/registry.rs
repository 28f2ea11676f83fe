//! The tools of one agent, by name ([`ToolRegistry`]: the built-in tools, MCP tools and the
//! fallbacks of servers that did not start), and the metrics label of a tool name.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::tool::Tool;
use super::{
    ask_user, content_search, deliver_file, escalate, file_edit, file_read, file_write,
    glob_search, shell, todo_write,
};

/// The `tool` label of a call's metrics: a built-in tool's name; `mcp` for every MCP tool
/// (`mcp__<server>__<tool>`: clients name them, so their names would make the label set
/// unbounded); `other` for anything else.
pub fn metric_label(name: &str) -> &str {
    static BUILTIN: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let builtin = BUILTIN.get_or_init(|| {
        ToolRegistry::builtin()
            .iter()
            .map(|t| t.name().to_owned())
            .collect()
    });
    if builtin.iter().any(|b| b == name) {
        name
    } else if name.starts_with("mcp__") {
        "mcp"
    } else {
        "other"
    }
}

/// The tools of one agent, by name.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
    fallbacks: Vec<(String, Arc<dyn Tool>)>,
}

impl ToolRegistry {
    /// The tools every agent gets.
    pub fn builtin() -> Self {
        let mut registry = Self::default();
        registry.register(Arc::new(todo_write::TodoWrite));
        registry.register(Arc::new(shell::Shell));
        registry.register(Arc::new(file_read::FileRead));
        registry.register(Arc::new(file_write::FileWrite));
        registry.register(Arc::new(file_edit::FileEdit));
        registry.register(Arc::new(glob_search::GlobSearch));
        registry.register(Arc::new(content_search::ContentSearch));
        registry.register(Arc::new(deliver_file::DeliverFile));
        registry.register(Arc::new(ask_user::AskUser));
        registry.register(Arc::new(escalate::Escalate));
        registry
    }

    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.name().to_owned(), tool);
    }

    /// The tool `name`, else the fallback of the longest registered prefix of it.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name).or_else(|| {
            self.fallbacks
                .iter()
                .filter(|(prefix, _)| name.starts_with(prefix.as_str()))
                .max_by_key(|(prefix, _)| prefix.len())
                .map(|(_, tool)| tool)
        })
    }

    /// Answers every name starting with `prefix` that no tool has (an MCP server that did
    /// not start: its calls fail with the reason); fallbacks are not offered to the model.
    pub fn register_fallback(&mut self, prefix: String, tool: Arc<dyn Tool>) {
        self.fallbacks.push((prefix, tool));
    }

    pub fn iter(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.values()
    }
}
