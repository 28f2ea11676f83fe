//! The signed record of one session: an in-toto Statement (v1) whose predicate lists the
//! session's principal, agent, model, every tool call as the audit log recorded it, the
//! session's file digests and the checkpoint that covers its records, in a DSSE envelope
//! signed with the checkpoint key ([`super::checkpoint`]). See `docs/audit.md` ("Session
//! attestation").

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::chain::Row;
use super::checkpoint::{Checkpoint, Signer, Stored, Verifier};

/// The DSSE payload type of an in-toto Statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// The Statement's `_type`.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The predicate's type (its definition is the documentation section).
pub const PREDICATE_TYPE: &str =
    "https://github.com/zeroclaw/zeroclaw/blob/main/docs/audit.md#session-attestation-v1";

/// What the session store knows of a session beside the audit log.
pub struct SessionFacts {
    pub id: String,
    pub agent: String,
    pub owner: Option<String>,
    pub model: Option<String>,
    /// The uploads and delivered files with their digests (`sessions show`).
    pub files: Vec<Value>,
}

/// The DSSE pre-authentication encoding of `payload`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// The session's records (those naming it), in seq order, parsed.
fn session_records(rows: &[Row], session: &str) -> Vec<(i64, Value)> {
    rows.iter()
        .filter_map(|r| {
            let body: Value = serde_json::from_str(&r.body).ok()?;
            (body["session"] == session).then_some((r.seq, body))
        })
        .collect()
}

/// The copy of `body`'s `keys` that are present.
fn pick(body: &Value, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| body.get(*k).map(|v| ((*k).to_owned(), v.clone())))
        .collect()
}

/// The tool calls of the session, in the order they were decided, each with its decision,
/// approval, execution (confinement report, exit) or sandbox failure, the network connections
/// its egress proxy recorded (and the names it asked about), and the seqs of its records.
fn tool_calls(records: &[(i64, Value)]) -> Vec<Value> {
    let mut calls: Vec<(String, Map<String, Value>)> = Vec::new();
    for (seq, body) in records {
        let Some(id) = body["tool_call_id"].as_str() else {
            continue;
        };
        let at = match calls.iter().position(|(c, _)| c == id) {
            Some(at) => at,
            None => {
                let mut call = pick(body, &["tool_call_id"]);
                call.insert("records".into(), json!([]));
                calls.push((id.to_owned(), call));
                calls.len() - 1
            }
        };
        let call = &mut calls[at].1;
        call["records"]
            .as_array_mut()
            .expect("made above")
            .push((*seq).into());
        // The egress proxy's records of a call name the tool `network`: the call's tool is
        // the one its other records name.
        let network = body["tool"] == NETWORK_TOOL;
        if !network && !call.contains_key("tool") {
            call.extend(pick(body, &["tool"]));
        }
        match body["kind"].as_str().unwrap_or("") {
            "network.connection" => push(
                call,
                "network",
                pick(
                    body,
                    &[
                        "via",
                        "name",
                        "port",
                        "address",
                        "decision",
                        "rule",
                        "bytes_sent",
                        "bytes_received",
                        "duration_us",
                    ],
                ),
            ),
            "approval" if network => push(
                call,
                "network_approvals",
                pick(body, &["option_kind", "option_id", "error", "target"]),
            ),
            "policy.decision" => {
                call.insert(
                    "decision".into(),
                    pick(body, &["decision", "rule", "reason"]).into(),
                );
            }
            "approval" => {
                call.insert(
                    "approval".into(),
                    pick(body, &["option_kind", "option_id", "error", "target"]).into(),
                );
            }
            "tool.exec" => {
                call.extend(pick(
                    body,
                    &[
                        "command",
                        "path",
                        "pattern",
                        "args_sha256",
                        "cwd",
                        "autonomy",
                        "turn",
                        "status",
                        "duration_us",
                    ],
                ));
                let sandbox = &body["sandbox"];
                call.insert(
                    "confinement".into(),
                    pick(sandbox, &["backend", "enforcement", "profile_sha256"]).into(),
                );
                call.insert(
                    "exit".into(),
                    pick(sandbox, &["exit", "end", "output_bytes", "output_capped"]).into(),
                );
            }
            "sandbox.failure" => {
                call.insert(
                    "sandbox_failure".into(),
                    pick(body, &["stage", "error"]).into(),
                );
            }
            _ => {}
        }
    }
    calls.into_iter().map(|(_, c)| Value::Object(c)).collect()
}

/// The tool name of the egress proxy's records of a call (`network.connection`, and the
/// approvals of names its allowlist lacks).
const NETWORK_TOOL: &str = "network";

/// Appends `item` to the list `key` of `call`.
fn push(call: &mut Map<String, Value>, key: &str, item: Map<String, Value>) {
    if let Some(list) = call.entry(key).or_insert_with(|| json!([])).as_array_mut() {
        list.push(item.into());
    }
}

/// The Statement about `facts`' session from the log's `rows` and `checkpoints` (the newest
/// that covers every record of the session, if one does).
pub fn statement(facts: &SessionFacts, rows: &[Row], checkpoints: &[Stored]) -> Value {
    let records = session_records(rows, &facts.id);
    let last = records.last().map_or(0, |(seq, _)| *seq);
    let mut digest = Sha256::new();
    for row in rows
        .iter()
        .filter(|r| records.iter().any(|(s, _)| *s == r.seq))
    {
        digest.update(row.body.as_bytes());
        digest.update(b"\n");
    }
    let principal = records
        .iter()
        .find_map(|(_, b)| b["principal"].as_str().map(str::to_owned))
        .or_else(|| facts.owner.clone());
    let checkpoint = checkpoints
        .iter()
        .rev()
        .find(|c| c.tree_size >= last && last > 0)
        .map(|c| json!({"tree_size": c.tree_size, "note": c.note}));
    json!({
        "_type": STATEMENT_TYPE,
        "subject": [{
            "name": format!("zeroclaw-session/{}", facts.id),
            "digest": {"sha256": hex::encode(digest.finalize())},
        }],
        "predicateType": PREDICATE_TYPE,
        "predicate": {
            "session": facts.id,
            "principal": principal,
            "agent": facts.agent,
            "model": facts.model,
            "records": records.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            "lifecycle": records
                .iter()
                .filter(|(_, b)| b["kind"].as_str().is_some_and(|k| k.starts_with("session.")))
                .map(|(seq, b)| json!({"seq": seq, "kind": b["kind"], "time_ms": b["time_ms"]}))
                .collect::<Vec<_>>(),
            "tool_calls": tool_calls(&records),
            "files": facts.files,
            "checkpoint": checkpoint,
        },
    })
}

/// `statement` in a DSSE envelope signed by `signer`.
pub fn envelope(statement: &Value, signer: &Signer) -> Value {
    let payload = serde_json::to_vec(statement).expect("a JSON value serialises");
    let signature = signer.sign_raw(&pae(PAYLOAD_TYPE, &payload));
    json!({
        "payloadType": PAYLOAD_TYPE,
        "payload": B64.encode(&payload),
        "signatures": [{"keyid": signer.verifier().encode(), "sig": B64.encode(signature)}],
    })
}

/// The Statement of `envelope` when `verifier` signed it, its types are this predicate's, and
/// the checkpoint it names (if any) is signed by the same key.
pub fn open(envelope: &Value, verifier: &Verifier) -> Result<Value, String> {
    if envelope["payloadType"] != PAYLOAD_TYPE {
        return Err(format!(
            "payloadType is {}, not {PAYLOAD_TYPE}",
            envelope["payloadType"]
        ));
    }
    let payload = envelope["payload"]
        .as_str()
        .and_then(|p| B64.decode(p).ok())
        .ok_or("the payload is not base64")?;
    let message = pae(PAYLOAD_TYPE, &payload);
    let signed = envelope["signatures"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["sig"].as_str().and_then(|s| B64.decode(s).ok()))
        .any(|sig| verifier.verify_raw(&message, &sig));
    if !signed {
        return Err(format!(
            "no signature of the key {} over the payload (edited, or signed by another key)",
            verifier.encode()
        ));
    }
    let statement: Value =
        serde_json::from_slice(&payload).map_err(|e| format!("the payload is not JSON: {e}"))?;
    if statement["_type"] != STATEMENT_TYPE || statement["predicateType"] != PREDICATE_TYPE {
        return Err("not a zeroclaw session Statement".into());
    }
    if let Some(note) = statement["predicate"]["checkpoint"]["note"].as_str() {
        let checkpoint = Checkpoint::open(note, verifier)?;
        let last = statement["predicate"]["records"]
            .as_array()
            .and_then(|r| r.last())
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if checkpoint.size < last {
            return Err(format!(
                "the checkpoint of size {} does not cover the session's record {last}",
                checkpoint.size
            ));
        }
    }
    Ok(statement)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The DSSE specification's worked example of the pre-authentication encoding.
    #[test]
    fn pae_matches_the_dsse_example() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
        );
    }

    #[test]
    fn an_envelope_opens_with_its_key_only_and_not_after_an_edit() {
        let signer = Signer::generate("t/audit").unwrap();
        let facts = SessionFacts {
            id: "s-1".into(),
            agent: "default".into(),
            owner: None,
            model: Some("m".into()),
            files: Vec::new(),
        };
        let row = |seq: i64, body: Value| Row {
            seq,
            body: body.to_string(),
            prev_hash: String::new(),
            hash: String::new(),
        };
        let rows = [
            row(
                1,
                json!({"kind": "session.create", "session": "s-1", "principal": "uid:1"}),
            ),
            row(
                2,
                json!({"kind": "policy.decision", "session": "s-1", "tool_call_id": "c1",
                          "tool": "shell", "decision": "allow", "rule": "full_level"}),
            ),
            row(
                3,
                json!({"kind": "tool.exec", "session": "s-1", "tool_call_id": "c1",
                          "tool": "shell", "command": "echo hi", "status": "completed",
                          "sandbox": {"backend": "namespaces", "exit": {"code": 0}}}),
            ),
        ];
        let statement = statement(&facts, &rows, &[]);
        let call = &statement["predicate"]["tool_calls"][0];
        assert_eq!(call["decision"]["decision"], "allow", "{call}");
        assert_eq!(call["exit"]["exit"]["code"], 0, "{call}");
        assert_eq!(call["records"], json!([2, 3]));
        assert_eq!(statement["predicate"]["principal"], "uid:1");
        let envelope = envelope(&statement, &signer);
        assert_eq!(open(&envelope, &signer.verifier()).unwrap(), statement);
        let other = Signer::generate("t/audit").unwrap().verifier();
        assert!(open(&envelope, &other).is_err());
    }

    /// A call's egress records (tool `network`) go into its `network` list, in order, and
    /// its network approvals apart: its tool and approval stay the shell's.
    #[test]
    fn a_calls_connections_are_listed_under_it() {
        let facts = SessionFacts {
            id: "s-1".into(),
            agent: "default".into(),
            owner: None,
            model: None,
            files: Vec::new(),
        };
        let row = |seq: i64, body: Value| Row {
            seq,
            body: body.to_string(),
            prev_hash: String::new(),
            hash: String::new(),
        };
        let call = json!({"session": "s-1", "tool_call_id": "c1"});
        let with = |extra: Value| {
            let mut body = call.clone();
            body.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            body
        };
        let rows = [
            row(
                1,
                with(json!({"kind": "policy.decision", "tool": "shell", "decision": "ask"})),
            ),
            row(
                2,
                with(json!({"kind": "approval", "tool": "shell", "option_kind": "allow_once"})),
            ),
            row(
                3,
                with(
                    json!({"kind": "approval", "tool": "network", "target": "a.test:443",
                               "option_kind": "allow_once"}),
                ),
            ),
            row(
                4,
                with(
                    json!({"kind": "network.connection", "tool": "network", "via": "connect",
                               "name": "a.test", "port": 443, "address": "127.0.0.1",
                               "decision": "allow", "rule": "approved", "bytes_sent": 10,
                               "bytes_received": 20, "duration_us": 5, "reason": "r"}),
                ),
            ),
            row(
                5,
                with(
                    json!({"kind": "network.connection", "tool": "network", "via": "http",
                               "name": "b.test", "port": 80, "decision": "deny",
                               "rule": "not_in_allow_domains"}),
                ),
            ),
            row(
                6,
                with(
                    json!({"kind": "tool.exec", "tool": "shell", "status": "completed",
                               "sandbox": {"backend": "namespaces"}}),
                ),
            ),
        ];
        let statement = statement(&facts, &rows, &[]);
        let call = &statement["predicate"]["tool_calls"][0];
        assert_eq!(call["tool"], "shell", "{call}");
        assert_eq!(call["approval"]["option_kind"], "allow_once", "{call}");
        assert_eq!(
            call["network_approvals"][0]["target"], "a.test:443",
            "{call}"
        );
        let network = call["network"].as_array().unwrap();
        assert_eq!(network.len(), 2, "{call}");
        assert_eq!(network[0]["name"], "a.test");
        assert_eq!(network[0]["bytes_received"], 20);
        assert_eq!(network[1]["decision"], "deny");
        assert_eq!(network[1]["rule"], "not_in_allow_domains");
        assert!(network[0].get("reason").is_none(), "{call}");
        assert_eq!(call["records"], json!([1, 2, 3, 4, 5, 6]));
    }
}
