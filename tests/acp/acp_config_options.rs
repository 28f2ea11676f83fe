//! Session config options through the real binary: the `model` and `thought_level` selects
//! answered by `session/new|load|resume`, `session/set_config_option` switching the next
//! request's model and reasoning setting (seen in the request body at the loopback server),
//! `config_option_update`, -32602 for unknown options and values, the choice kept across a
//! restart, and `discover_models` (listed, cached, and a failure falling back to the config).

use crate::support;

use serde_json::{Value, json};
use support::acp_client::AcpClient;
use support::acp_fixture::Fixture;
use support::model_server::{Reply, text_reply};

fn option<'a>(options: &'a Value, id: &str) -> Option<&'a Value> {
    options.as_array()?.iter().find(|o| o["id"] == id)
}

fn values(option: &Value) -> Vec<String> {
    option["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["value"].as_str().unwrap().to_owned())
        .collect()
}

fn with_models(script: Vec<Reply>) -> Fixture {
    Fixture::start_with(script, |b| {
        b.env(
            "ZEROCLAW_agents__coder__models",
            r#"["m-large", "m-small"]"#,
        )
    })
}

fn set(fx: &Fixture, config_id: &str, value: &str) -> Value {
    fx.client.request(
        "session/set_config_option",
        json!({"sessionId": fx.session, "configId": config_id, "value": value}),
    )
}

fn new_session_options(client: &AcpClient, dir: &std::path::Path) -> Value {
    client.call("session/new", json!({"cwd": dir, "mcpServers": []}))["configOptions"].clone()
}

#[test]
fn session_new_offers_the_configured_models_and_a_thought_level() {
    let fx = with_models(vec![]);
    let options = new_session_options(&fx.client, fx.work.path());
    let model = option(&options, "model").expect("a model option");
    assert_eq!(model["category"], "model");
    assert_eq!(model["type"], "select");
    assert_eq!(model["currentValue"], "m");
    assert_eq!(values(model), ["m", "m-large", "m-small"]);
    let level = option(&options, "thought_level").expect("a thought level option");
    assert_eq!(level["category"], "thought_level");
    assert_eq!(level["currentValue"], "off");
    assert_eq!(values(level), ["off", "low", "medium", "high"]);
}

#[test]
fn set_config_option_switches_the_next_request_and_announces_it() {
    let fx = with_models(vec![text_reply("one"), text_reply("two")]);
    fx.prompt("first");
    let resp = set(&fx, "model", "m-large");
    let options = &resp["result"]["configOptions"];
    assert_eq!(
        option(options, "model").unwrap()["currentValue"],
        "m-large",
        "{resp}"
    );
    assert!(
        option(options, "thought_level").is_some(),
        "the full list: {resp}"
    );
    let update = fx
        .updates()
        .into_iter()
        .find(|u| u["sessionUpdate"] == "config_option_update")
        .expect("config_option_update");
    assert_eq!(update["configOptions"], *options);
    let resp = set(&fx, "thought_level", "high");
    assert_eq!(
        option(&resp["result"]["configOptions"], "thought_level").unwrap()["currentValue"],
        "high"
    );

    fx.prompt("second");
    let requests = fx.model.requests();
    assert_eq!(requests[0]["model"], "m");
    assert!(
        requests[0].get("reasoning_effort").is_none(),
        "{}",
        requests[0]
    );
    assert_eq!(requests[1]["model"], "m-large");
    assert_eq!(requests[1]["reasoning_effort"], "high");
}

#[test]
fn unknown_options_and_values_are_invalid_params() {
    let fx = with_models(vec![]);
    for (id, value) in [
        ("model", "gpt-unknown"),
        ("nope", "x"),
        ("thought_level", "max"),
    ] {
        let resp = set(&fx, id, value);
        assert_eq!(resp["error"]["code"], -32602, "{id}={value}: {resp}");
    }
    let resp = fx.client.request(
        "session/set_config_option",
        json!({"sessionId": fx.session, "configId": "model", "value": true}),
    );
    assert_eq!(resp["error"]["code"], -32602, "{resp}");
}

#[test]
fn the_chosen_model_survives_a_restart() {
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let model = support::model_server::ModelServer::start_blocking(vec![text_reply("after")]);
    let spawn = || {
        AcpClient::builder()
            .model(model.base_url())
            .config_dir(config.path())
            .env("ZEROCLAW_agents__coder__models", r#"["m-large"]"#)
            .spawn()
    };
    let session = {
        let client = spawn();
        client.initialize();
        let session = client.new_session(work.path());
        let resp = client.request(
            "session/set_config_option",
            json!({"sessionId": session, "configId": "model", "value": "m-large"}),
        );
        assert!(resp.get("result").is_some(), "{resp}");
        session
    };
    let client = spawn();
    client.initialize();
    let loaded = client.call(
        "session/load",
        json!({"sessionId": session, "cwd": work.path(), "mcpServers": []}),
    );
    let options = &loaded["configOptions"];
    assert_eq!(
        option(options, "model").unwrap()["currentValue"],
        "m-large",
        "{loaded}"
    );
    client.prompt(&session, "go on");
    assert_eq!(model.requests()[0]["model"], "m-large");
}

#[test]
fn a_model_without_thought_level_hides_it_and_refuses_setting_it() {
    let toml = r#"
[agents.coder]
provider = "local"
model = "m"
models = [{ id = "tiny", name = "Tiny model", thought_level = false }]
"#;
    let fx = Fixture::start_with(vec![], |b| b.config_toml(toml));
    let resp = set(&fx, "model", "tiny");
    let options = &resp["result"]["configOptions"];
    let model = option(options, "model").unwrap();
    assert_eq!(
        model["options"][1],
        json!({"value": "tiny", "name": "Tiny model"})
    );
    assert!(option(options, "thought_level").is_none(), "{resp}");
    assert_eq!(set(&fx, "thought_level", "low")["error"]["code"], -32602);
}

#[test]
fn discovered_models_are_offered_and_cached_and_a_failure_falls_back() {
    let fx = Fixture::start_with(vec![], |b| {
        b.env("ZEROCLAW_agents__coder__discover_models", "true")
    });
    assert_eq!(fx.model.model_lists(), 1);
    // The fixture's session/new found no list (404): the configured model alone, logged.
    fx.client.wait_stderr("model discovery failed");
    let options = new_session_options(&fx.client, fx.work.path());
    assert_eq!(values(option(&options, "model").unwrap()), ["m"]);

    let list = json!({"object": "list", "data": [
        {"id": "m", "object": "model"},
        {"id": "remote-1", "object": "model"},
        {"id": "remote-2", "display_name": "Remote Two", "object": "model"},
    ]});
    fx.model.set_models(Reply::Status(200, list.to_string()));
    let fresh = Fixture::start_with(vec![], |b| {
        b.model(fx.model.base_url())
            .env("ZEROCLAW_agents__coder__discover_models", "true")
    });
    let asked = fx.model.model_lists();
    let options = new_session_options(&fresh.client, fresh.work.path());
    let model = option(&options, "model").unwrap();
    assert_eq!(values(model), ["m", "remote-1", "remote-2"]);
    assert_eq!(model["options"][2]["name"], "Remote Two");
    assert_eq!(fx.model.model_lists(), asked, "the list is cached");
}
