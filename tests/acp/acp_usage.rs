//! Token usage through the real binary: a `usage_update` (schema-valid) after each model call
//! with the context used, the configured window and the cumulative cost, the turn's totals in
//! the prompt answer's `_meta.zeroclaw.usage`, Anthropic's cache tokens, and `sessions show`.

use crate::support;

use serde_json::{Value, json};
use support::acp_fixture::Fixture;
use support::anthropic_stream as anthropic;
use support::model_server::{Reply, finish, text, tool_reply, usage};

const PRICED: &str = r#"
[agents.coder]
provider = "local"
model = "m"
models = [{ id = "m", context_window = 200000, prices = { input = 3.0, output = 15.0, cache_read = 0.3 } }]
"#;

fn usage_updates(fx: &Fixture) -> Vec<Value> {
    fx.updates()
        .into_iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .collect()
}

#[test]
fn each_model_call_sends_usage_and_the_answer_carries_the_turn_totals() {
    let todo = json!({"todos": [{"content": "x", "status": "pending", "priority": "low"}]});
    let Reply::Sse(mut call) = tool_reply("c1", "todo_write", &todo) else {
        unreachable!()
    };
    call.push(usage(1000, 50));
    let fx = Fixture::start_with(
        vec![
            Reply::Sse(call),
            Reply::Sse(vec![text("done"), finish("stop"), usage(1100, 20)]),
        ],
        |b| b.config_toml(PRICED),
    );
    let resp = fx.prompt("go");
    let updates = usage_updates(&fx);
    assert_eq!(updates.len(), 2, "{updates:?}");
    assert_eq!(updates[0]["used"], 1050);
    assert_eq!(updates[0]["size"], 200000);
    assert_eq!(updates[0]["_meta"]["zeroclaw"]["inputTokens"], 1000);
    let first_cost = (1000.0 * 3.0 + 50.0 * 15.0) / 1e6;
    let second_cost = (1100.0 * 3.0 + 20.0 * 15.0) / 1e6;
    let amount = |u: &Value| u["cost"]["amount"].as_f64().unwrap();
    assert!(
        (amount(&updates[0]) - first_cost).abs() < 1e-12,
        "{}",
        updates[0]
    );
    assert!(
        (amount(&updates[1]) - (first_cost + second_cost)).abs() < 1e-12,
        "cumulative: {}",
        updates[1]
    );
    assert_eq!(updates[1]["cost"]["currency"], "USD");
    let totals = &resp["result"]["_meta"]["zeroclaw"]["usage"];
    assert_eq!(totals["inputTokens"], 2100, "{resp}");
    assert_eq!(totals["outputTokens"], 70);

    // `sessions show` prints the stored totals.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .env("ZEROCLAW_CONFIG_DIR", fx.client.config_dir())
        .envs(support::acp_client::model_env(&fx.model.base_url()))
        .args(["sessions", "show", &fx.session])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("2100 input tokens") && stdout.contains("70 output tokens"),
        "{stdout}"
    );
}

#[test]
fn anthropic_cache_tokens_are_reported_and_an_unknown_window_is_size_zero() {
    let mut events = vec![anthropic::message_start(5, 900, 100), anthropic::ping()];
    events.extend(anthropic::text_block(0, &["hi"]));
    events.extend(anthropic::message_end("end_turn", 12));
    let fx = Fixture::start_with(vec![Reply::Events(events)], |b| {
        b.env("ZEROCLAW_providers__local__kind", "anthropic")
    });
    let resp = fx.prompt("hello");
    let updates = usage_updates(&fx);
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0]["used"], 1017);
    assert_eq!(updates[0]["size"], 0);
    assert!(updates[0].get("cost").is_none());
    let totals = &resp["result"]["_meta"]["zeroclaw"]["usage"];
    assert_eq!(totals["inputTokens"], 1005, "{resp}");
    assert_eq!(totals["cacheReadTokens"], 900);
    assert_eq!(totals["cacheWriteTokens"], 100);
    assert_eq!(totals["outputTokens"], 12);
}
