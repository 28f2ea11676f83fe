//! `deliver_file`'s second check, end to end: the tool validates and hashes the file before it
//! asks (`always_ask`), and the ACP layer reads and hashes it again when it embeds it. The
//! approval question is the deterministic seam: the client swaps the file while the question is
//! open, so the swap falls exactly between validation and embedding. A swapped file is refused
//! (`failed`, the reason reaches the model, no resource in any update, none stored for
//! `session/load`); an unchanged one is attached as `attachment://deliver/<sha256>.<ext>`.

use crate::support;
use crate::tools_support;

use std::fs;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use support::acp_client::{Permission, is_response, prompt_params};
use support::model_server::{text_reply, tool_reply};
use tools_support::{Scene, Setup};

const ORIGINAL: &str = "zc-original-report-0b4e\n";
const SWAPPED: &str = "zc-swapped-report-e71d\n";

fn setup() -> Setup {
    Setup::level("supervised")
        .autonomy("always_ask = [\"deliver_file\"]")
        .permission(Permission::Ignore)
}

/// Runs one `deliver_file` turn for `report.txt`; `while_asked` runs when the question arrives,
/// before the client allows once. Returns (the call's updates, what the model was sent).
fn deliver(s: &Scene, while_asked: impl FnOnce()) -> (Vec<Value>, String) {
    let request_index = s.model.requests().len() + 1;
    s.model.push(tool_reply(
        "d1",
        "deliver_file",
        &json!({"path": "report.txt"}),
    ));
    s.model.push(text_reply("done"));
    let id = s
        .client
        .send_request("session/prompt", prompt_params(&s.session, "deliver it"));
    let question = s.client.wait_for(|m| {
        m["method"] == "session/request_permission" || (is_response(m) && m["id"] == id)
    });
    if is_response(&question) {
        let updates = s.client.updates_for(&s.session);
        s.client
            .fail(&format!("no question was asked: {question}\n{updates:#?}"));
    }
    while_asked();
    s.client
        .send_json(&json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}}}));
    let response = s.client.wait_for(|m| is_response(m) && m["id"] == id);
    assert!(response.get("result").is_some(), "{response}");
    s.client.assert_valid();
    let updates = s
        .client
        .updates_for(&s.session)
        .into_iter()
        .filter(|u| u["toolCallId"] == "d1")
        .collect();
    (updates, s.tool_message(request_index, "d1"))
}

fn resources(updates: &[Value]) -> Vec<Value> {
    updates
        .iter()
        .flat_map(|u| u["content"].as_array().cloned().unwrap_or_default())
        .filter(|c| c["content"]["type"] == "resource")
        .map(|c| c["content"]["resource"].clone())
        .collect()
}

fn last_status(updates: &[Value]) -> String {
    updates
        .iter()
        .rev()
        .find_map(|u| u["status"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn a_file_swapped_between_validation_and_embedding_is_refused() {
    let mut s = Scene::start(setup());
    let report = s.ws().join("report.txt");
    fs::write(&report, ORIGINAL).unwrap();
    let (updates, model_saw) = deliver(&s, || {
        let next = s.ws().join("report.txt.next");
        fs::write(&next, SWAPPED).unwrap();
        fs::rename(&next, &report).unwrap();
    });
    assert_eq!(last_status(&updates), "failed", "{updates:#?}");
    assert!(
        model_saw.contains("changed between validation and delivery"),
        "the model reads why: {model_saw:?}"
    );
    assert!(resources(&updates).is_empty(), "attached: {updates:#?}");
    let seen = s.everything_seen();
    for (name, text) in [("original", ORIGINAL), ("swapped", SWAPPED)] {
        assert!(!seen.contains(&b64(text)), "the {name} bytes were sent");
    }
    assert!(
        !s.ws().join("uploads").exists(),
        "nothing stored in uploads/"
    );
    let replay = s.respawn(&setup());
    let replayed: Vec<Value> = replay
        .into_iter()
        .filter(|u| u["toolCallId"] == "d1")
        .collect();
    assert_eq!(last_status(&replayed), "failed", "{replayed:#?}");
    assert!(resources(&replayed).is_empty(), "stored: {replayed:#?}");
}

#[test]
fn an_unchanged_file_is_attached_after_the_question() {
    let s = Scene::start(setup());
    fs::write(s.ws().join("report.txt"), ORIGINAL).unwrap();
    let (updates, model_saw) = deliver(&s, || {});
    assert_eq!(last_status(&updates), "completed", "{updates:#?}");
    let digest = hex::encode(Sha256::digest(ORIGINAL));
    let uri = format!("attachment://deliver/{digest}.txt");
    let attached = resources(&updates);
    assert_eq!(attached.len(), 1, "{updates:#?}");
    assert_eq!(attached[0]["uri"], uri.as_str());
    assert_eq!(attached[0]["mimeType"], "text/plain");
    assert_eq!(attached[0]["blob"], b64(ORIGINAL).as_str());
    assert!(
        model_saw.contains(&uri),
        "the model gets the uri: {model_saw:?}"
    );
}
