//! Image prompts through the real binary (`promptCapabilities.image`): an `image` block or an
//! `image/*` resource blob is checked (type sniffed from the bytes, matching its label, PNG,
//! JPEG, GIF or WebP, at most 10 MiB decoded), stored under `uploads/<sha256>.<ext>`, and
//! reaches the loopback model as each API expects — an OpenAI-compatible `image_url` data
//! URL, an Anthropic base64 `image` block — or, for a model with `images = false`, as the
//! `[IMAGE: <path>]` marker. A refused image writes nothing and leaves no history; later turns
//! and `session/load` use the stored image again (replayed as an image block), unless the
//! file was changed, which sends the marker instead.

use crate::support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::acp_client::{AcpClient, Builder, is_update_for};
use support::acp_fixture::Fixture;
use support::model_server::{ModelServer, text_reply};

/// A 1×1 PNG.
const PNG_B64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/// The start of a JFIF file.
const JPEG: &[u8] = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xd9";

const LIMIT: usize = 10 * 1024 * 1024;

fn png() -> Vec<u8> {
    STANDARD.decode(PNG_B64).unwrap()
}

fn image_block(mime: &str, bytes: &[u8]) -> Value {
    json!({"type": "image", "mimeType": mime, "data": STANDARD.encode(bytes)})
}

fn prompt_with(client: &AcpClient, session: &str, block: Value) -> Value {
    let prompt = json!([{"type": "text", "text": "what is this?"}, block]);
    client.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": prompt}),
    )
}

fn upload_path(work: &std::path::Path, bytes: &[u8], ext: &str) -> std::path::PathBuf {
    let sha = hex::encode(Sha256::digest(bytes));
    std::fs::canonicalize(work)
        .unwrap()
        .join("uploads")
        .join(format!("{sha}.{ext}"))
}

fn ok(resp: &Value) {
    assert_eq!(resp["result"]["stopReason"], "end_turn", "{resp}");
}

/// The OpenAI-compatible user message carrying the PNG.
fn openai_png_message() -> Value {
    json!({"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
    ]})
}

#[test]
fn an_image_reaches_the_openai_compatible_model_as_a_data_url_in_this_and_later_turns() {
    let fx = Fixture::start(vec![text_reply("a dot"), text_reply("still a dot")]);
    ok(&prompt_with(
        &fx.client,
        &fx.session,
        image_block("image/png", &png()),
    ));
    let path = upload_path(fx.work.path(), &png(), "png");
    assert_eq!(std::fs::read(&path).expect("stored under uploads/"), png());
    assert_eq!(fx.model_messages(0).last().unwrap(), &openai_png_message());

    ok(&fx.prompt("and now?"));
    let messages = fx.model_messages(1);
    assert_eq!(messages[messages.len() - 3], openai_png_message());
    assert_eq!(
        messages.last().unwrap(),
        &json!({"role": "user", "content": "and now?"})
    );
}

#[test]
fn an_image_blob_reaches_the_anthropic_model_as_a_base64_image_block() {
    let anthropic = |b: Builder| {
        b.env("ZEROCLAW_providers__local__kind", "anthropic")
            .env("ZEROCLAW_agents__coder__model", "claude-loopback")
    };
    let fx = Fixture::start_with(
        vec![support::anthropic_stream::text_reply("a photo")],
        anthropic,
    );
    let blob = json!({"type": "resource", "resource": {
        "uri": "file:///home/me/photo.jpeg", "mimeType": "image/jpeg", "blob": STANDARD.encode(JPEG)}});
    ok(&prompt_with(&fx.client, &fx.session, blob));
    assert!(upload_path(fx.work.path(), JPEG, "jpg").is_file());
    let body = &fx.model.requests()[0];
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": STANDARD.encode(JPEG)}},
        ]}])
    );
}

#[test]
fn a_model_without_images_gets_the_marker_and_a_switch_to_one_with_images_sends_the_image() {
    let toml = r#"
[agents.coder]
provider = "local"
model = "m"
models = [{ id = "m", images = false }, "vision"]
"#;
    let fx = Fixture::start_with(vec![text_reply("blind"), text_reply("seen")], |b| {
        b.config_toml(toml)
    });
    ok(&prompt_with(
        &fx.client,
        &fx.session,
        image_block("image/png", &png()),
    ));
    let path = upload_path(fx.work.path(), &png(), "png");
    assert!(path.is_file());
    let marker = format!("what is this?\n\n[IMAGE: {}]", path.display());
    assert_eq!(
        fx.model_messages(0).last().unwrap(),
        &json!({"role": "user", "content": marker})
    );

    let resp = fx.client.request(
        "session/set_config_option",
        json!({"sessionId": fx.session, "configId": "model", "value": "vision"}),
    );
    assert!(resp.get("result").is_some(), "{resp}");
    ok(&fx.prompt("look again"));
    let messages = fx.model_messages(1);
    assert_eq!(fx.model.requests()[1]["model"], "vision");
    assert_eq!(messages[messages.len() - 3], openai_png_message());
}

#[test]
fn oversize_mislabeled_and_unsupported_images_are_refused_and_nothing_is_kept() {
    let fx = Fixture::start(vec![text_reply("fine")]);
    let mut oversize = png();
    oversize.resize(LIMIT + 1, 0);
    let bmp = b"BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00\x00\x00\x28\x00".as_slice();
    let cases = [
        (image_block("image/png", &oversize), "exceeds"),
        (image_block("image/jpeg", &png()), "labelled image/jpeg"),
        (
            image_block("image/png", b"just some text"),
            "not a PNG, JPEG, GIF or WebP",
        ),
        (image_block("image/bmp", bmp), "not supported"),
        (
            json!({"type": "resource", "resource": {"uri": "file:///x/scan.bmp", "blob": STANDARD.encode(bmp)}}),
            "not supported",
        ),
        (
            json!({"type": "resource", "resource": {"uri": "file:///x/a", "mimeType": "image/png", "blob": STANDARD.encode(JPEG)}}),
            "bytes are image/jpeg",
        ),
    ];
    for (block, reason) in cases {
        let resp = prompt_with(&fx.client, &fx.session, block);
        assert_eq!(resp["error"]["code"], -32602, "{reason}: {resp}");
        let message = resp["error"]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{reason}: {message}");
    }
    assert!(!fx.work.path().join("uploads").exists(), "nothing written");
    assert!(fx.model.requests().is_empty());
    // No history either: the next turn's request holds only its own prompt.
    ok(&fx.prompt("hello"));
    let messages = fx.model_messages(0);
    let users: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users, [&json!({"role": "user", "content": "hello"})]);
}

fn spawn_on(model: &ModelServer, config: &std::path::Path) -> AcpClient {
    let client = AcpClient::builder()
        .model(model.base_url())
        .config_dir(config)
        .spawn();
    client.initialize();
    client
}

fn load(client: &AcpClient, session: &str, work: &std::path::Path) -> Vec<Value> {
    let from = client.message_count();
    client.call(
        "session/load",
        json!({"sessionId": session, "cwd": work, "mcpServers": []}),
    );
    client
        .messages_between(from, client.message_count())
        .into_iter()
        .filter(|m| is_update_for(m, session))
        .map(|m| m["params"]["update"].clone())
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .collect()
}

#[test]
fn session_load_replays_the_image_block_and_the_next_turn_sends_it_again() {
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ModelServer::start_blocking(vec![text_reply("a dot"), text_reply("yes")]);
    let session = {
        let client = spawn_on(&model, config.path());
        let session = client.new_session(work.path());
        ok(&prompt_with(
            &client,
            &session,
            image_block("image/png", &png()),
        ));
        session
    };
    let client = spawn_on(&model, config.path());
    let replayed = load(&client, &session, work.path());
    assert_eq!(
        replayed,
        [
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "what is this?"}}),
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "image", "mimeType": "image/png", "data": PNG_B64}}),
        ]
    );
    ok(&client.prompt(&session, "same dot?"));
    let messages = model.requests()[1]["messages"].as_array().unwrap().clone();
    assert_eq!(messages[messages.len() - 3], openai_png_message());
}

#[test]
fn a_stored_image_changed_on_disk_is_sent_and_replayed_as_its_marker() {
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = ModelServer::start_blocking(vec![text_reply("a dot"), text_reply("hm")]);
    let client = spawn_on(&model, config.path());
    let session = client.new_session(work.path());
    ok(&prompt_with(
        &client,
        &session,
        image_block("image/png", &png()),
    ));
    let path = upload_path(work.path(), &png(), "png");
    let mut swapped = png();
    swapped[40] ^= 0xff;
    std::fs::write(&path, &swapped).unwrap();

    ok(&client.prompt(&session, "again"));
    let messages = model.requests()[1]["messages"].as_array().unwrap().clone();
    let marker = format!("what is this?\n\n[IMAGE: {}]", path.display());
    assert_eq!(
        messages[messages.len() - 3],
        json!({"role": "user", "content": marker})
    );
    client.wait_stderr("no longer match the stored digest");
    drop(client);

    let client = spawn_on(&model, config.path());
    let replayed = load(&client, &session, work.path());
    assert_eq!(replayed[0]["content"]["text"], marker);
    assert!(replayed.iter().all(|u| u["content"]["type"] == "text"));
}
