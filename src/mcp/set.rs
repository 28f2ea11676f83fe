//! The MCP servers of one session: the operator's `[mcp]` servers of its agent, then the
//! client's (one named like an operator's is skipped). They start lazily, at the session's first prompt (before
//! its first model call, whose tool list must include theirs): a session that is only
//! created, listed or loaded to be read starts nothing. They then live as long as the
//! session: dropping the set (the session closed, deleted or reaped) or [`McpSet::stop`]
//! (its connection closed) kills them, and the next prompt starts them again. A server that
//! fails to start is not retried within its run; every call of one of its tools then fails
//! with the reason, and a server that crashed answers its calls with how it ended. An http
//! server is reached only as [`route`] allows under the session's network mode.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::server::{self, Server};
use super::spec::ServerSpec;
use super::tool::{McpTool, Unavailable, tool_name};
use super::{install, route};
use crate::policy::Policy;
use crate::tools::ToolRegistry;

/// One server's start: running, or why not.
type Started = Vec<(ServerSpec, Result<Arc<Server>, String>)>;

#[derive(Default)]
pub struct McpSet {
    specs: Vec<ServerSpec>,
    running: Mutex<Option<Arc<Started>>>,
}

impl McpSet {
    pub fn new(specs: Vec<ServerSpec>) -> McpSet {
        McpSet {
            specs,
            running: Mutex::default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// `base` plus the tools of every server — the `operator`'s (`[mcp]`) and the client's —
    /// which are started first if they are not running (confined by `policy`'s profile in
    /// `cwd`); with one line for the user per server that this call failed to start.
    pub async fn registry(
        &self,
        base: &ToolRegistry,
        policy: &Policy,
        cwd: &Path,
        operator: Vec<ServerSpec>,
    ) -> (ToolRegistry, Vec<String>) {
        if self.specs.is_empty() && operator.is_empty() {
            return (base.clone(), Vec::new());
        }
        let timeout = Duration::from_secs(policy.limits.wall_time_secs.max(1));
        let current = self.lock().clone();
        let mut failed = Vec::new();
        let started = match current {
            Some(started) => started,
            None => {
                let started = Arc::new(self.start_all(operator, policy, cwd, timeout).await);
                failed = started
                    .iter()
                    .filter_map(|(spec, server)| {
                        let reason = server.as_ref().err()?;
                        Some(format!("MCP server {} did not start: {reason}", spec.name))
                    })
                    .collect();
                self.lock().get_or_insert(started).clone()
            }
        };
        let mut registry = base.clone();
        for (spec, server) in started.iter() {
            match server {
                Ok(server) => {
                    for listed in &server.tools {
                        if let Some(tool) =
                            McpTool::new(server.clone(), listed, spec.trusted, timeout)
                        {
                            registry.register(Arc::new(tool));
                        }
                    }
                }
                Err(reason) => {
                    let prefix = tool_name(&spec.name, "");
                    let reason = format!("MCP server {} is not available: {reason}", spec.name);
                    let tool = Unavailable {
                        name: prefix.clone(),
                        reason,
                    };
                    registry.register_fallback(prefix, Arc::new(tool));
                }
            }
        }
        (registry, failed)
    }

    async fn start_all(
        &self,
        operator: Vec<ServerSpec>,
        policy: &Policy,
        cwd: &Path,
        timeout: Duration,
    ) -> Started {
        let sandbox = crate::tools::confine::sandbox(policy);
        let mut specs = operator;
        for spec in &self.specs {
            if specs.iter().any(|s| s.name == spec.name) {
                tracing::warn!(server = %spec.name, "client MCP server skipped: the operator's has its name");
            } else {
                specs.push(spec.clone());
            }
        }
        let starts = specs.iter().map(|spec| async {
            let server = match (&spec.http, &sandbox) {
                (Some(endpoint), _) => match route::client(policy, spec, endpoint, timeout).await {
                    Ok(http) => server::start_http(spec, endpoint, http, timeout)
                        .await
                        .map(Arc::new),
                    Err(refused) => Err(refused),
                },
                (None, Ok(sandbox)) => {
                    let mut profile = policy.profile(cwd, &[]);
                    // A server lives for the session: a layer could land only when it ends,
                    // and the calls' landings would change its lower layer under it
                    // (`sandbox/README.md`, "Transactional workspace"). It writes directly.
                    profile.layers = None;
                    match install::roots(spec, policy, cwd, &profile) {
                        Ok(roots) => {
                            for root in roots {
                                profile = profile.allow_read(root);
                            }
                            server::start(sandbox, profile, spec, timeout)
                                .await
                                .map(Arc::new)
                        }
                        Err(reason) => Err(reason),
                    }
                }
                (None, Err(error)) => Err(error.0.clone()),
            };
            match &server {
                Ok(s) => tracing::info!(server = %spec.name, pid = ?s.pid, tools = s.tools.len(), "MCP server started"),
                Err(error) => tracing::warn!(server = %spec.name, %error, "MCP server did not start"),
            }
            (spec.clone(), server)
        });
        futures::future::join_all(starts).await
    }

    /// Stops the servers (a running turn keeps the ones it uses until it ends); the next
    /// prompt starts them again.
    pub fn stop(&self) {
        self.lock().take();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<Started>>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }
}
