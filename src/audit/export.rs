//! The export forms of the log: JSONL (one stored record per line, with its `prev_hash` and
//! `hash`) and OCSF 1.3 events for a SIEM: a tool execution is a Process Activity (class 1007),
//! an authentication failure an Authentication (3002), an egress connection a Network
//! Activity (4001: Close when served, Refuse when refused), the other records Base Events (0)
//! with the record under `unmapped`.

use serde_json::{Value, json};

use super::chain::Row;

/// The OCSF schema version the export follows.
pub const OCSF_VERSION: &str = "1.3.0";

/// One stored row as a JSONL line's object.
pub fn jsonl(row: &Row) -> Value {
    let body: Value = serde_json::from_str(&row.body).unwrap_or(Value::Null);
    json!({"seq": row.seq, "record": body, "prev_hash": row.prev_hash, "hash": row.hash})
}

/// One stored row as an OCSF event.
pub fn ocsf(row: &Row, hostname: &str) -> Value {
    let record: Value = serde_json::from_str(&row.body).unwrap_or(Value::Null);
    let kind = record["kind"].as_str().unwrap_or("");
    let failed = match kind {
        "tool.exec" => record["status"] != "completed",
        "auth.failure" | "sandbox.failure" => true,
        "policy.decision" | "network.connection" | "credential.use" => record["decision"] == "deny",
        _ => false,
    };
    // 1 success, 2 failure; severity 1 informational, 3 medium.
    let (status_id, severity_id) = if failed { (2, 3) } else { (1, 1) };
    let (class_uid, category_uid, activity_id) = match kind {
        "tool.exec" => (1007, 1, 1),
        "auth.failure" => (3002, 3, 1),
        // Activity 2 Close (a served connection, recorded at its end), 5 Refuse.
        "network.connection" if failed => (4001, 4, 5),
        "network.connection" => (4001, 4, 2),
        _ => (0, 0, 99),
    };
    let mut event = json!({
        "class_uid": class_uid,
        "category_uid": category_uid,
        "activity_id": activity_id,
        "type_uid": class_uid * 100 + activity_id,
        "time": record["time_ms"],
        "severity_id": severity_id,
        "status_id": status_id,
        "message": kind,
        "metadata": {
            "version": OCSF_VERSION,
            "product": {"name": "zeroclaw", "vendor_name": "zeroclaw",
                        "version": env!("CARGO_PKG_VERSION")},
            "uid": format!("{}", row.seq),
            "log_name": "audit",
        },
        "device": {"hostname": hostname, "type_id": 0},
        "unmapped": {"record": record, "hash": row.hash, "prev_hash": row.prev_hash},
    });
    let principal = record["principal"].as_str().unwrap_or("local");
    match kind {
        "tool.exec" => {
            event["actor"] = json!({"user": {"name": principal},
                                    "session": {"uid": record["session"]}});
            let cmd_line = record["command"]
                .as_str()
                .or(record["path"].as_str())
                .unwrap_or("");
            event["process"] = json!({
                "name": record["tool"],
                "cmd_line": format!("{} {}", record["tool"].as_str().unwrap_or(""), cmd_line)
                    .trim_end(),
                "file": {"path": record["cwd"]},
            });
            if let Some(code) = record["sandbox"]["exit"]["code"].as_i64() {
                event["exit_code"] = code.into();
            }
        }
        "auth.failure" => {
            event["user"] = json!({"name": record["principal"].as_str().unwrap_or("unknown")});
            event["auth_protocol"] = "Bearer".into();
            event["src_endpoint"] = json!({"name": record["peer"]});
            event["status_detail"] = record["reason"].clone();
        }
        "network.connection" => {
            event["actor"] = json!({"user": {"name": principal},
                                    "session": {"uid": record["session"]}});
            event["dst_endpoint"] = json!({"hostname": record["name"], "ip": record["address"],
                                           "port": record["port"]});
            // A name the DNS stub refused (`via` dns) was a query, not a connection.
            let protocol = if record["via"] == "dns" { "dns" } else { "tcp" };
            event["connection_info"] = json!({"protocol_name": protocol, "direction_id": 2});
            let (out, into) = (&record["bytes_sent"], &record["bytes_received"]);
            event["traffic"] = json!({"bytes_out": out, "bytes_in": into,
                "bytes": out.as_u64().unwrap_or(0) + into.as_u64().unwrap_or(0)});
            event["duration"] = (record["duration_us"].as_u64().unwrap_or(0) / 1000).into();
            event["status_detail"] = record["reason"].clone();
            event["disposition"] = if failed { "Blocked" } else { "Allowed" }.into();
        }
        _ => {}
    }
    event
}
