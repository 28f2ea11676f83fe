//! Unit tests of loading, layering, validation and key resolution.

use super::*;

fn dir_with(toml: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    if let Some(text) = toml {
        std::fs::write(dir.path().join(CONFIG_FILE_NAME), text).unwrap();
    }
    dir
}

fn load(
    toml: Option<&str>,
    env: &[(&str, &str)],
) -> (tempfile::TempDir, Result<Config, ConfigError>) {
    let dir = dir_with(toml);
    let env = env.iter().map(|(k, v)| (k.to_string(), v.to_string()));
    let result = Config::load_with_env(dir.path(), env);
    (dir, result)
}

fn err(toml: Option<&str>, env: &[(&str, &str)]) -> String {
    load(toml, env).1.unwrap_err().to_string()
}

#[test]
fn missing_file_gives_the_built_in_default_agent() {
    let (dir, cfg) = load(None, &[]);
    let cfg = cfg.unwrap();
    assert_eq!(cfg.agents.len(), 1);
    let agent = &cfg.agents["default"];
    assert_eq!(agent.provider, "openrouter");
    assert_eq!(agent.model, "anthropic/claude-sonnet-4.6");
    assert!(agent.enabled);
    let provider = &cfg.providers["openrouter"];
    assert_eq!(provider.base_url, "https://openrouter.ai/api/v1");
    assert_eq!(provider.api_key_env.as_deref(), Some("OPENROUTER_API_KEY"));
    assert_eq!(cfg.acp, AcpConfig::default());
    assert_eq!(cfg.acp.max_sessions, 10);
    assert_eq!(cfg.acp.session_timeout_secs, 3600);
    assert_eq!(cfg.workspace_dir, dir.path().join("workspace"));
    assert_eq!(
        cfg.store_path(),
        dir.path().join("workspace/sessions/acp-sessions.db")
    );
    assert_eq!(cfg.sandbox.backend, zeroclaw_sandbox::BackendChoice::Auto);
}

#[test]
fn file_values_override_defaults_and_agents_replace_the_default_agent() {
    let toml = r#"
        workspace_dir = "data"
        [acp]
        max_sessions = 3
        default_agent = "coder"
        [providers.local]
        base_url = "http://127.0.0.1:9/v1"
        [agents.coder]
        provider = "local"
        model = "m1"
        system_prompt = "be brief"
    "#;
    let (dir, cfg) = load(Some(toml), &[]);
    let cfg = cfg.unwrap();
    assert_eq!(cfg.acp.max_sessions, 3);
    assert_eq!(cfg.acp.default_agent.as_deref(), Some("coder"));
    assert_eq!(cfg.agents.keys().collect::<Vec<_>>(), ["coder"]);
    assert_eq!(
        cfg.agents["coder"].system_prompt.as_deref(),
        Some("be brief")
    );
    assert_eq!(cfg.providers["local"].kind, ProviderKind::OpenAi);
    assert_eq!(cfg.workspace_dir, dir.path().join("data"));
}

#[test]
fn env_overrides_file_and_parses_scalars() {
    let toml = "[acp]\nmax_sessions = 3\n";
    let env = [
        ("ZEROCLAW_acp__max_sessions", "20"),
        (
            "ZEROCLAW_providers__my_local__base_url",
            "http://127.0.0.1:1/v1",
        ),
        ("ZEROCLAW_agents__my_coder__provider", "my_local"),
        ("ZEROCLAW_agents__my_coder__model", "gpt-x"),
        ("ZEROCLAW_agents__my_coder__enabled", "false"),
        ("ZEROCLAW_CONFIG_DIR", "/ignored"),
    ];
    let cfg = load(Some(toml), &env).1.unwrap();
    assert_eq!(cfg.acp.max_sessions, 20);
    assert_eq!(cfg.providers["my_local"].base_url, "http://127.0.0.1:1/v1");
    assert!(!cfg.agents["my_coder"].enabled);
    assert_eq!(cfg.agents["my_coder"].model, "gpt-x");
}

#[test]
fn unknown_file_key_names_key_and_file() {
    let msg = err(Some("[acp]\nmax_sesions = 3\n"), &[]);
    assert!(msg.contains("`acp.max_sesions`"), "{msg}");
    assert!(msg.contains(CONFIG_FILE_NAME), "{msg}");
}

#[test]
fn unknown_top_level_key_names_the_key() {
    let msg = err(Some("colour = 1\n"), &[]);
    assert!(msg.contains("`colour`"), "{msg}");
}

#[test]
fn unknown_env_key_names_the_variable() {
    let msg = err(None, &[("ZEROCLAW_acp__bogus", "1")]);
    assert!(msg.contains("`acp.bogus`"), "{msg}");
    assert!(msg.contains("ZEROCLAW_acp__bogus"), "{msg}");
}

#[test]
fn ill_typed_env_value_names_key_and_variable() {
    let msg = err(
        Some("[acp]\nmax_sessions = 2\n"),
        &[("ZEROCLAW_acp__max_sessions", "many")],
    );
    assert!(msg.contains("`acp.max_sessions`"), "{msg}");
    assert!(msg.contains("ZEROCLAW_acp__max_sessions"), "{msg}");
}

#[test]
fn ill_typed_file_value_names_key_and_file() {
    let msg = err(Some("[acp]\nsession_timeout_secs = \"soon\"\n"), &[]);
    assert!(msg.contains("`acp.session_timeout_secs`"), "{msg}");
    assert!(msg.contains(CONFIG_FILE_NAME), "{msg}");
}

#[test]
fn syntax_errors_name_the_file() {
    let msg = err(Some("[acp\n"), &[]);
    assert!(msg.contains(CONFIG_FILE_NAME), "{msg}");
}

#[test]
fn agent_with_unknown_provider_is_rejected() {
    let toml = "[agents.a]\nprovider = \"nope\"\nmodel = \"m\"\n";
    let msg = err(Some(toml), &[]);
    assert!(msg.contains("agents.a.provider"), "{msg}");
    assert!(msg.contains("nope"), "{msg}");
}

#[test]
fn zero_limits_and_bad_backends_are_rejected() {
    let msg = err(None, &[("ZEROCLAW_acp__max_sessions", "0")]);
    assert!(
        msg.contains("acp.max_sessions") && msg.contains("greater than 0"),
        "{msg}"
    );
    let msg = err(Some("[sandbox]\nbackend = \"chroot\"\n"), &[]);
    assert!(
        msg.contains("sandbox.backend") && msg.contains("chroot"),
        "{msg}"
    );
}

#[test]
fn an_allowed_origin_with_a_path_is_rejected_naming_the_entry() {
    let msg = err(
        Some("[gateway]\nallowed_origins = [\"https://ok.example\", \"https://app.example/\"]\n"),
        &[],
    );
    assert!(
        msg.contains("gateway.allowed_origins[1]") && msg.contains("https://app.example/"),
        "{msg}"
    );
    let (_dir, cfg) = load(
        Some("[gateway]\nallowed_origins = [\"http://localhost:5173\"]\n"),
        &[],
    );
    assert_eq!(
        cfg.unwrap().gateway.allowed_origins,
        ["http://localhost:5173"]
    );
}

#[test]
fn missing_agent_field_names_the_agent() {
    let msg = err(None, &[("ZEROCLAW_agents__solo__provider", "openrouter")]);
    assert!(msg.contains("agents.solo"), "{msg}");
    assert!(msg.contains("model"), "{msg}");
    assert!(msg.contains("ZEROCLAW_agents__solo__provider"), "{msg}");
}

#[test]
fn api_key_comes_from_the_key_then_the_named_variable() {
    let var = "ZEROCLAW_UNIT_TEST_KEY_7F3A";
    let toml = format!(
        "[providers.a]\nbase_url = \"http://x/v1\"\napi_key = \"sk-a\"\n\
         [providers.b]\nbase_url = \"http://x/v1\"\napi_key_env = \"{var}\"\n\
         [providers.c]\nbase_url = \"http://x/v1\"\n\
         [agents.x]\nprovider = \"a\"\nmodel = \"m\"\n"
    );
    let cfg = load(Some(&toml), &[]).1.unwrap();
    assert_eq!(cfg.resolve_api_key("a").unwrap(), "sk-a");
    assert_eq!(cfg.resolve_api_key("c").unwrap(), "");
    let msg = cfg.resolve_api_key("b").unwrap_err().to_string();
    assert!(
        msg.contains(var) && msg.contains("providers.b.api_key"),
        "{msg}"
    );
    assert!(cfg.resolve_api_key("zzz").is_err());
}

#[test]
fn default_provider_without_key_says_which_variable_to_set() {
    let mut cfg = load(None, &[]).1.unwrap();
    let provider = cfg.providers.get_mut("openrouter").unwrap();
    provider.api_key_env = Some("ZEROCLAW_UNIT_TEST_UNSET_VAR_91".into());
    let msg = cfg.resolve_api_key("openrouter").unwrap_err().to_string();
    assert!(msg.contains("ZEROCLAW_UNIT_TEST_UNSET_VAR_91"), "{msg}");
}

#[test]
fn env_values_for_string_keys_are_taken_literally_when_they_parse_as_numbers() {
    let env = [
        ("ZEROCLAW_providers__p__base_url", "http://127.0.0.1:1/v1"),
        ("ZEROCLAW_providers__p__api_key", "12345"),
        ("ZEROCLAW_agents__a__provider", "p"),
        ("ZEROCLAW_agents__a__model", "4"),
        ("ZEROCLAW_agents__a__system_prompt", "true"),
    ];
    let cfg = load(None, &env).1.unwrap();
    assert_eq!(cfg.providers["p"].api_key.as_deref(), Some("12345"));
    assert_eq!(cfg.agents["a"].model, "4");
    assert_eq!(cfg.agents["a"].system_prompt.as_deref(), Some("true"));
}

#[test]
fn a_number_in_the_file_where_a_string_belongs_is_still_an_error() {
    let msg = err(
        Some("[agents.a]\nprovider = \"openrouter\"\nmodel = 4\n"),
        &[],
    );
    assert!(msg.contains("agents.a.model"), "{msg}");
}

#[test]
fn debug_output_never_contains_the_api_key() {
    let env = [("ZEROCLAW_providers__openrouter__api_key", "sk-debug-secret")];
    let cfg = load(None, &env).1.unwrap();
    let text = format!("{cfg:?}");
    assert!(
        !text.contains("sk-debug-secret") && text.contains("***"),
        "{text}"
    );
}

#[test]
fn an_agent_named_default_inherits_the_built_in_provider_and_model() {
    let cfg = load(None, &[("ZEROCLAW_agents__default__model", "openai/gpt-5")])
        .1
        .unwrap();
    assert_eq!(cfg.agents.len(), 1);
    assert_eq!(cfg.agents["default"].model, "openai/gpt-5");
    assert_eq!(cfg.agents["default"].provider, "openrouter");
    let toml = "[providers.l]\nbase_url = \"http://l/v1\"\n[agents.default]\nprovider = \"l\"\n";
    let cfg = load(Some(toml), &[]).1.unwrap();
    assert_eq!(cfg.agents["default"].provider, "l");
    assert_eq!(cfg.agents["default"].model, "anthropic/claude-sonnet-4.6");
}

#[test]
fn agents_with_other_names_get_nothing_from_the_built_in() {
    let msg = err(None, &[("ZEROCLAW_agents__mine__model", "m")]);
    assert!(
        msg.contains("agents.mine") && msg.contains("provider"),
        "{msg}"
    );
}

#[test]
fn sandbox_umask_is_an_octal_string_from_the_file_or_the_environment() {
    let (_d, config) = load(None, &[]);
    assert_eq!(config.unwrap().sandbox.umask.bits(), 0o022);
    let (_d, config) = load(Some("[sandbox]\numask = \"027\"\n"), &[]);
    assert_eq!(config.unwrap().sandbox.umask.bits(), 0o027);
    let (_d, config) = load(None, &[("ZEROCLAW_sandbox__umask", "077")]);
    assert_eq!(config.unwrap().sandbox.umask.bits(), 0o077);
    for bad in ["umask = \"rw-\"", "umask = \"1022\"", "umask = 18"] {
        let (_d, config) = load(Some(&format!("[sandbox]\n{bad}\n")), &[]);
        let error = config.unwrap_err().to_string();
        assert!(error.contains("sandbox.umask"), "{bad}: {error}");
    }
}
