//! Checks every message `zeroclaw acp` writes against the official ACP v1 types (the
//! `agent-client-protocol-schema` crate) and the ZeroClaw extensions of the wire contract.
//!
//! A message is deserialized into the typed struct that matches it: notifications and outbound
//! requests by their method, responses by the method of the request they answer. Extension
//! results (`session/stop`, cancel-as-request) are checked against their documented shape.
#![allow(dead_code)]

use agent_client_protocol_schema::v1::{
    AgentNotification, AgentRequest, AgentResponse, ClientRequest, Error as AcpError,
};
use serde_json::Value;

/// The error codes the contract allows (`acp-contract.md` §2).
pub const CONTRACT_ERROR_CODES: [i64; 9] = [
    -32700, -32600, -32601, -32602, -32603, -32800, -32000, -32001, -32003,
];

/// The zeroclaw-specific codes and the `data.reason` each may carry (§2): SESSION_BUSY is
/// `session_busy` for a running turn here, `leased_elsewhere` while another daemon holds the
/// session's lease (a shared store).
pub const ZEROCLAW_ERROR_REASONS: [(i64, &str); 4] = [
    (-32000, "session_not_found"),
    (-32001, "session_limit_reached"),
    (-32003, "session_busy"),
    (-32003, "leased_elsewhere"),
];

/// The `sessionUpdate` kinds the contract says zeroclaw emits (§3), and the session-feature
/// ones (modes, titles, commands, config options, usage).
pub const EMITTED_UPDATE_KINDS: [&str; 11] = [
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "user_message_chunk",
    "current_mode_update",
    "session_info_update",
    "available_commands_update",
    "config_option_update",
    "usage_update",
];

/// What the validator needs to know about a request the client sent.
pub enum SentRequest {
    /// A request we sent with this method.
    Method(String),
    /// No request with that id was sent.
    Unknown,
}

/// Validates one outgoing server message. `sent` answers which method a response id belongs to.
pub fn check_message(msg: &Value, sent: impl Fn(&Value) -> SentRequest) -> Result<(), String> {
    let obj = msg.as_object().ok_or("message is not a JSON object")?;
    if obj.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Err("missing \"jsonrpc\": \"2.0\"".into());
    }
    match (obj.get("method"), obj.get("id")) {
        (Some(method), Some(id)) => check_outbound_request(method, id, msg),
        (Some(method), None) => check_notification(method, msg),
        (None, Some(id)) => check_response(id, msg, sent(id)),
        (None, None) => Err("neither a request, a notification nor a response".into()),
    }
}

fn method_str(method: &Value) -> Result<&str, String> {
    method
        .as_str()
        .ok_or_else(|| "\"method\" is not a string".into())
}

fn params(msg: &Value) -> Value {
    msg.get("params").cloned().unwrap_or(Value::Null)
}

fn check_outbound_request(method: &Value, id: &Value, msg: &Value) -> Result<(), String> {
    let method = method_str(method)?;
    let id = id.as_str().ok_or("outbound request id is not a string")?;
    if !id.starts_with("zc-out-") {
        return Err(format!(
            "outbound request id {id:?} lacks the zc-out- prefix"
        ));
    }
    AgentRequest::from_method_and_params(method, &params(msg))
        .map(|_| ())
        .map_err(|e| format!("outbound request {method}: {e}"))
}

fn check_notification(method: &Value, msg: &Value) -> Result<(), String> {
    let method = method_str(method)?;
    AgentNotification::from_method_and_params(method, &params(msg))
        .map_err(|e| format!("notification {method}: {e}"))?;
    if method == "session/update" {
        let kind = msg["params"]["update"]["sessionUpdate"]
            .as_str()
            .unwrap_or("");
        if !EMITTED_UPDATE_KINDS.contains(&kind) {
            return Err(format!(
                "session/update kind {kind:?} is not one the contract emits"
            ));
        }
    }
    Ok(())
}

fn check_response(id: &Value, msg: &Value, sent: SentRequest) -> Result<(), String> {
    match (msg.get("result"), msg.get("error")) {
        (Some(_), Some(_)) => Err("response has both result and error".into()),
        (None, None) => Err("response has neither result nor error".into()),
        (None, Some(error)) => check_error(id, error, &sent),
        (Some(result), None) => match sent {
            SentRequest::Method(method) => check_result(&method, result),
            SentRequest::Unknown => Err(format!("success response to unknown id {id}")),
        },
    }
}

fn check_error(id: &Value, error: &Value, sent: &SentRequest) -> Result<(), String> {
    if id.is_null() {
        // Parse errors and invalid requests are answered with id null.
    } else if matches!(sent, SentRequest::Unknown) {
        return Err(format!("error response to an id never sent: {id}"));
    }
    let parsed: AcpError =
        serde_json::from_value(error.clone()).map_err(|e| format!("error object: {e}"))?;
    if parsed.message.trim().is_empty() {
        return Err("error message is empty".into());
    }
    let code = error["code"]
        .as_i64()
        .ok_or("error code is not an integer")?;
    if !CONTRACT_ERROR_CODES.contains(&code) {
        return Err(format!("error code {code} is not in the contract"));
    }
    let allowed: Vec<&str> = ZEROCLAW_ERROR_REASONS
        .iter()
        .filter(|(c, _)| *c == code)
        .map(|(_, reason)| *reason)
        .collect();
    if !allowed.is_empty() && !allowed.iter().any(|r| error["data"]["reason"] == *r) {
        return Err(format!(
            "error {code} lacks data.reason = one of {allowed:?}: {error}"
        ));
    }
    Ok(())
}

/// Checks a successful result against the method of the request it answers.
pub fn check_result(method: &str, result: &Value) -> Result<(), String> {
    if SANDBOX_DECLARED.contains(&method) {
        check_sandbox_declaration(method, result)?;
    }
    match method {
        "session/stop" => check_stop_result(result),
        "session/cancel" => check_empty_object(method, result),
        _ if ClientRequest::supports_method(method) && !method.starts_with('_') => {
            AgentResponse::from_method_and_result(method, result.clone())
                .map(|_| ())
                .map_err(|e| format!("result of {method}: {e}"))
        }
        _ => Err(format!(
            "success response to method {method:?}, which zeroclaw does not have"
        )),
    }
}

/// The results that declare the sandbox under `_meta.zeroclaw.sandbox` (docs/acp.md).
const SANDBOX_DECLARED: [&str; 4] = [
    "initialize",
    "session/new",
    "session/load",
    "session/resume",
];

/// `_meta.zeroclaw.sandbox`: the rung (or null), the report's lists, the network mode and the
/// guarantees summary, each of its documented type.
fn check_sandbox_declaration(method: &str, result: &Value) -> Result<(), String> {
    let s = &result["_meta"]["zeroclaw"]["sandbox"];
    let bad = |what: &str| Err(format!("{method}: _meta.zeroclaw.sandbox.{what}: {s}"));
    if !s.is_object() {
        return bad("missing");
    }
    if !(s["rung"].is_string() || s["rung"].is_null()) {
        return bad("rung is not a string or null");
    }
    for list in ["enforced", "missing", "notEnforced", "lines"] {
        if !s[list].is_array() {
            return bad(list);
        }
    }
    if !["deny", "proxy", "allow"]
        .iter()
        .any(|m| s["network"] == *m)
    {
        return bad("network");
    }
    let g = &s["guarantees"];
    let fs = ["none", "workspace", "fullRoot"]
        .iter()
        .any(|v| g["fsIsolation"] == *v);
    let net = ["none", "restricted", "denyAll"]
        .iter()
        .any(|v| g["netIsolation"] == *v);
    if !(fs && net && g["processCaps"].is_boolean() && s["insideCheck"].is_boolean()) {
        return bad("guarantees");
    }
    Ok(())
}

fn check_stop_result(result: &Value) -> Result<(), String> {
    let ok = result["sessionId"].is_string() && result["stopped"] == Value::Bool(true);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "session/stop result is not {{sessionId, stopped: true}}: {result}"
        ))
    }
}

fn check_empty_object(method: &str, result: &Value) -> Result<(), String> {
    match result.as_object() {
        Some(map) if map.is_empty() => Ok(()),
        _ => Err(format!("{method} result should be {{}}: {result}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sent(method: &str) -> impl Fn(&Value) -> SentRequest + '_ {
        move |_| SentRequest::Method(method.to_string())
    }

    #[test]
    fn accepts_a_well_formed_update_and_rejects_a_bad_kind() {
        let good = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1",
            "update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}});
        assert_eq!(check_message(&good, sent("x")), Ok(()));
        let bad = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s-1",
            "update":{"sessionUpdate":"agent_message","content":{"type":"text","text":"hi"}}}});
        assert!(check_message(&bad, sent("x")).is_err());
    }

    #[test]
    fn checks_results_by_method() {
        let prompt = json!({"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}});
        assert_eq!(check_message(&prompt, sent("session/prompt")), Ok(()));
        let wrong = json!({"jsonrpc":"2.0","id":3,"result":{"stopReason":"finished"}});
        assert!(check_message(&wrong, sent("session/prompt")).is_err());
        let stop = json!({"jsonrpc":"2.0","id":4,"result":{"sessionId":"s","stopped":true}});
        assert_eq!(check_message(&stop, sent("session/stop")), Ok(()));
        assert!(check_message(&stop, sent("nope/method")).is_err());
    }

    #[test]
    fn rejects_codes_outside_the_contract() {
        let err = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32099,"message":"x"}});
        assert!(check_message(&err, |_| SentRequest::Unknown).is_err());
        let ok = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}});
        assert_eq!(check_message(&ok, |_| SentRequest::Unknown), Ok(()));
    }
}
