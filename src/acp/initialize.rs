//! `initialize`: protocol version 1, capabilities (persistence ones only with a store), agent
//! info, and the ZeroClaw `_meta.zeroclaw` block (with the sandbox declared for the configured
//! policy: [`sandbox_decl`]); records the client's `fs` capabilities.

use serde_json::{Value, json};

use super::{Connection, agents, params, sandbox_decl};
use crate::policy::Policy;
use crate::rpc::RpcError;

pub const PROTOCOL_VERSION: u64 = 1;

pub fn handle(conn: &Connection, params: &Value) -> Result<Value, RpcError> {
    params::object(params)?;
    conn.fs.record(params);
    let server = &conn.server;
    let config = server.config();
    let persistent = server.store.is_some();
    let session_capabilities = if persistent {
        json!({"resume": {}, "close": {}, "list": {}, "delete": {}})
    } else {
        json!({})
    };
    let default_model = agents::default_agent(&config).map(|a| a.model.clone());
    Ok(json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": persistent,
            "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": false},
            "sessionCapabilities": session_capabilities,
        },
        "agentInfo": {
            "name": "zeroclaw-acp",
            "title": "ZeroClaw ACP",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "authMethods": [],
        "_meta": {
            "zeroclaw": {
                "defaultModel": default_model,
                "maxSessions": config.acp.max_sessions,
                "sessionTimeoutSecs": config.acp.session_timeout_secs,
                "sandbox": sandbox_decl::declaration(&Policy::for_config(&config), None),
            }
        }
    }))
}
