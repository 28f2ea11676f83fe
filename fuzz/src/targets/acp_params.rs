//! ACP method parameters as the agent side reads them: the session id forms, `mcpServers`,
//! and a prompt's content blocks (text, resources, base64 blobs, images checked by type).
//! Property: an image part the prompt parser accepts is one the image check accepts.

use serde_json::Value;
use zeroclaw::acp::materialize::{self, Part};
use zeroclaw::acp::{images, new_session, params as acp};

pub fn run(data: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        params(&value);
    }
}

/// Every params reader on `params`.
pub fn params(params: &Value) {
    let _ = acp::session_id(params);
    let _ = acp::opt_str(params, &["cwd", "modeId", "mode_id"]);
    let _ = new_session::mcp_servers(params);
    let prompt = params.get("prompt");
    let Ok(parts) = materialize::parse(prompt) else {
        return;
    };
    for part in parts {
        if let Part::Image { bytes, kind } = part {
            assert_eq!(images::check(&bytes, kind.mime()).ok(), Some(kind));
        }
    }
}
