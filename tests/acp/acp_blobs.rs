//! Base64 blob resources in `session/prompt`: decoded and written to
//! `{cwd}/uploads/<sha256>.<ext>` with a `[Document: …]` marker, an image sent as an image
//! (tests/acp_images.rs has the rest of the image rules); exactly 10 MiB
//! decoded is accepted, one byte more is not, bad base64 is not, and a rejected prompt writes
//! nothing (all parts are validated first).

use crate::support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::acp_fixture::{Fixture, last_content};
use support::model_server::text_reply;

const LIMIT: usize = 10 * 1024 * 1024;

fn payload(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 31 % 251) as u8).collect()
}

fn blob(uri: &str, mime: &str, bytes: &[u8]) -> Value {
    json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime, "blob": STANDARD.encode(bytes)}})
}

fn prompt_with(fx: &Fixture, parts: Vec<Value>) -> Value {
    let mut prompt = vec![json!({"type": "text", "text": "see attached"})];
    prompt.extend(parts);
    fx.client.request(
        "session/prompt",
        json!({"sessionId": fx.session, "prompt": prompt}),
    )
}

fn uploads_listing(fx: &Fixture) -> Option<Vec<String>> {
    let dir = std::fs::read_dir(fx.work.path().join("uploads")).ok()?;
    let mut names: Vec<String> = dir
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Some(names)
}

fn expected_path(fx: &Fixture, bytes: &[u8], ext: &str) -> std::path::PathBuf {
    let cwd = std::fs::canonicalize(fx.work.path()).unwrap();
    let sha = hex::encode(Sha256::digest(bytes));
    cwd.join("uploads").join(format!("{sha}.{ext}"))
}

#[test]
fn exactly_ten_mib_is_written_under_uploads_with_a_document_marker() {
    let fx = Fixture::start(vec![text_reply("read it")]);
    let bytes = payload(LIMIT);
    let resp = prompt_with(
        &fx,
        vec![blob("file:///x/report.pdf", "application/pdf", &bytes)],
    );
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let path = expected_path(&fx, &bytes, "pdf");
    assert_eq!(std::fs::read(&path).expect("upload written"), bytes);
    let user = last_content(&fx.model_messages(0), "user");
    let marker = format!("[Document: {}]", path.display());
    assert!(user.contains(&marker), "{marker} not in {user:?}");
    assert!(user.starts_with("see attached\n\n"), "{user:?}");
}

#[test]
fn an_image_blob_is_written_under_uploads_and_sent_as_an_image() {
    let fx = Fixture::start(vec![text_reply("nice picture")]);
    let mut bytes = b"GIF89a\x01\x00\x01\x00\x00\x00\x00".to_vec();
    bytes.extend(payload(4096));
    let resp = prompt_with(&fx, vec![blob("file:///x/shot.gif", "image/gif", &bytes)]);
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let path = expected_path(&fx, &bytes, "gif");
    assert_eq!(std::fs::read(&path).expect("upload written"), bytes);
    let messages = fx.model_messages(0);
    let url = format!("data:image/gif;base64,{}", STANDARD.encode(&bytes));
    assert_eq!(
        messages.last().unwrap()["content"][1]["image_url"]["url"],
        url
    );
}

#[test]
fn one_byte_over_ten_mib_is_rejected_and_nothing_is_written() {
    let fx = Fixture::start(vec![]);
    let bytes = payload(LIMIT + 1);
    let resp = prompt_with(
        &fx,
        vec![blob("file:///x/big.pdf", "application/pdf", &bytes)],
    );
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    assert_eq!(uploads_listing(&fx), None, "uploads/ must not exist");
    assert!(fx.model.requests().is_empty());
}

#[test]
fn bad_base64_is_rejected_and_nothing_is_written() {
    let fx = Fixture::start(vec![]);
    for bad in ["not base64!!", "QUJD$", "QUJDRA=x"] {
        let part = json!({"type": "resource", "resource": {"uri": "file:///x/a.pdf", "mimeType": "application/pdf", "blob": bad}});
        let resp = prompt_with(&fx, vec![part]);
        assert_eq!(resp["error"]["code"], -32602, "{bad}: {resp}");
    }
    assert_eq!(uploads_listing(&fx), None);
    assert!(fx.model.requests().is_empty());
}

#[test]
fn a_good_blob_next_to_a_bad_one_is_not_written_either() {
    let fx = Fixture::start(vec![text_reply("ok")]);
    // An existing upload must stay exactly as it is.
    let first = payload(100);
    let resp = prompt_with(
        &fx,
        vec![blob("file:///x/one.pdf", "application/pdf", &first)],
    );
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
    let before = uploads_listing(&fx).expect("first upload");

    let good = blob("file:///x/two.pdf", "application/pdf", &payload(200));
    let oversize = blob("file:///x/big.pdf", "application/pdf", &payload(LIMIT + 1));
    let resp = prompt_with(&fx, vec![good.clone(), oversize]);
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    let bad = json!({"type": "resource", "resource": {"uri": "file:///x/c.pdf", "blob": "%%%"}});
    let resp = prompt_with(&fx, vec![good, bad]);
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
    assert_eq!(uploads_listing(&fx), Some(before));
    assert_eq!(fx.model.requests().len(), 1);
}

// The same tests over WebSocket to `zeroclaw daemon`, TCP and Unix socket.
crate::over_websocket!(
    exactly_ten_mib_is_written_under_uploads_with_a_document_marker,
    an_image_blob_is_written_under_uploads_and_sent_as_an_image,
    one_byte_over_ten_mib_is_rejected_and_nothing_is_written,
    bad_base64_is_rejected_and_nothing_is_written,
    a_good_blob_next_to_a_bad_one_is_not_written_either,
);
