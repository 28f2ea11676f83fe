//! The session config options (ACP `configOptions`): what `session/new|load|resume` answer,
//! what `session/set_config_option` changes (-32602 for an unknown option or value), how a
//! choice is persisted (the store's `session_options`) and announced (`config_option_update`),
//! and what a turn takes from them ([`Effective`]).
//!
//! The options, in order ([`list`]):
//! - `model` (category `model`): the agent's `model`, its `models`, and with
//!   `discover_models = true` the provider's list (`GET <base_url>/models`, cached for
//!   [`DISCOVERY_TTL`], bounded by [`DISCOVERY_TIMEOUT`]; a failure is logged and the
//!   configured list is offered).
//! - `thought_level` (category `thought_level`): `off|low|medium|high`, shown only while the
//!   session's model takes one (`thought_level = false` on a `models` entry hides it).
//!
//! Another category (e.g. the session mode) adds its option in [`list`] and its value check in
//! [`validate`]; values live in [`Session::settings`] under the option's id.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::session::Session;
use super::updates::PeerSink;
use super::{Connection, params};
use crate::agent::usage::UsageContext;
use crate::provider::{ModelInfo, ThoughtLevel};
use crate::rpc::{Peer, RpcError};
use crate::tools::UpdateSink;

pub const MODEL: &str = "model";
pub const THOUGHT_LEVEL: &str = "thought_level";

/// How long a discovered model list is reused.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(600);
/// The longest wait for a provider's model list.
pub const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(5);

/// One model a session may switch to.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelChoice {
    pub id: String,
    pub name: String,
    pub thought_level: bool,
    pub images: bool,
    pub usage: UsageContext,
}

/// What a turn takes from the session's options.
#[derive(Debug, Clone, PartialEq)]
pub struct Effective {
    pub model: String,
    pub thought_level: ThoughtLevel,
    /// Whether the model accepts images.
    pub images: bool,
    pub usage: UsageContext,
}

/// The models the session's agent offers: `model` first, then `models`, then (when
/// discovery is on) the provider's list, without repeats.
pub async fn models(conn: &Connection, session: &Session) -> Vec<ModelChoice> {
    let agent = &session.agent;
    let configured = |id: &str| agent.model_entry(id);
    let mut choices = vec![choice(&agent.model, None, configured(&agent.model))];
    for entry in &agent.models {
        if choices.iter().all(|c| c.id != entry.id()) {
            choices.push(choice(entry.id(), Some(entry.name()), Some(entry)));
        }
    }
    if agent.discover_models {
        for info in discovered(conn, &agent.provider).await {
            if choices.iter().all(|c| c.id != info.id) {
                choices.push(choice(&info.id, info.name.as_deref(), None));
            }
        }
    }
    choices
}

fn choice(id: &str, name: Option<&str>, entry: Option<&crate::config::ModelEntry>) -> ModelChoice {
    ModelChoice {
        id: id.to_owned(),
        name: name.unwrap_or(id).to_owned(),
        thought_level: entry.is_none_or(|e| e.thought_level()),
        images: entry.is_none_or(|e| e.images()),
        usage: UsageContext {
            context_window: entry.and_then(|e| e.context_window()),
            prices: entry.and_then(|e| e.prices()).cloned(),
        },
    }
}

/// The session's current choices, with defaults for what the client never set.
pub fn effective(session: &Session, models: &[ModelChoice]) -> Effective {
    let settings = session.settings.lock().unwrap_or_else(|e| e.into_inner());
    let model = settings
        .get(MODEL)
        .filter(|m| models.iter().any(|c| &c.id == *m))
        .cloned()
        .unwrap_or_else(|| session.agent.model.clone());
    let choice = models.iter().find(|c| c.id == model);
    let takes_level = choice.is_none_or(|c| c.thought_level);
    let thought_level = settings
        .get(THOUGHT_LEVEL)
        .and_then(|v| ThoughtLevel::parse(v))
        .filter(|_| takes_level)
        .unwrap_or_default();
    Effective {
        images: choice.is_none_or(|c| c.images),
        usage: choice.map(|c| c.usage.clone()).unwrap_or_default(),
        model,
        thought_level,
    }
}

/// The `configOptions` array of the session.
pub async fn list(conn: &Connection, session: &Session) -> Value {
    let models = models(conn, session).await;
    Value::Array(options(session, &models))
}

fn options(session: &Session, models: &[ModelChoice]) -> Vec<Value> {
    let current = effective(session, models);
    let mut options = vec![json!({
        "id": MODEL,
        "name": "Model",
        "category": "model",
        "type": "select",
        "currentValue": current.model,
        "options": models
            .iter()
            .map(|m| json!({"value": m.id, "name": m.name}))
            .collect::<Vec<_>>(),
    })];
    let takes_level = models
        .iter()
        .find(|m| m.id == current.model)
        .is_none_or(|m| m.thought_level);
    if takes_level {
        options.push(json!({
            "id": THOUGHT_LEVEL,
            "name": "Thought level",
            "category": "thought_level",
            "type": "select",
            "currentValue": current.thought_level.as_str(),
            "options": ThoughtLevel::ALL
                .iter()
                .map(|l| json!({"value": l.as_str(), "name": capitalized(l.as_str())}))
                .collect::<Vec<_>>(),
        }));
    }
    // Options of further categories are appended here.
    options
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// -32602 unless `value` is a value option `id` offers now.
fn validate(
    id: &str,
    value: &str,
    session: &Session,
    models: &[ModelChoice],
) -> Result<(), RpcError> {
    let known = match id {
        MODEL => models.iter().any(|m| m.id == value),
        THOUGHT_LEVEL => {
            let current = effective(session, models).model;
            let takes = models
                .iter()
                .find(|m| m.id == current)
                .is_none_or(|m| m.thought_level);
            if !takes {
                return Err(RpcError::invalid_params(format!(
                    "model {current} takes no thought level"
                )));
            }
            ThoughtLevel::parse(value).is_some()
        }
        _ => {
            return Err(RpcError::invalid_params(format!(
                "unknown config option `{id}`"
            )));
        }
    };
    match known {
        true => Ok(()),
        false => Err(RpcError::invalid_params(format!(
            "`{value}` is not a value of config option `{id}`"
        ))),
    }
}

/// `session/set_config_option {sessionId, configId, value}`: checks, stores, announces
/// (`config_option_update`) and answers the full option list.
pub async fn set(conn: &Connection, peer: Peer, params: &Value) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    let session = conn.session(id)?;
    let option = params::opt_str(params, &["configId", "config_id"])?
        .ok_or_else(|| RpcError::invalid_params("configId is required"))?;
    let value = match params::object(params)?.get("value") {
        Some(Value::String(v)) => v.clone(),
        _ => return Err(RpcError::invalid_params("value must be a string")),
    };
    let models = models(conn, &session).await;
    validate(option, &value, &session, &models)?;
    if let Some(store) = &conn.server.store
        && let Err(error) = store.set_option(&session.id, option, &value).await
    {
        tracing::error!(session = %session.id, %error, "storing a config option failed");
        return Err(RpcError::internal(format!(
            "cannot store the config option: {error}"
        )));
    }
    session
        .settings
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(option.to_owned(), value);
    let options = Value::Array(options(&session, &models));
    let sink = PeerSink {
        peer,
        session_id: session.id.clone(),
    };
    sink.send(json!({"sessionUpdate": "config_option_update", "configOptions": options}))
        .await;
    Ok(json!({"configOptions": options}))
}

/// Puts the stored choices of a restored session back (a failure is logged: the session
/// then starts with the defaults).
pub async fn restore(conn: &Connection, session: &Session) {
    let Some(store) = &conn.server.store else {
        return;
    };
    match store.options(&session.id).await {
        Ok(stored) => *session.settings.lock().unwrap_or_else(|e| e.into_inner()) = stored,
        Err(error) => {
            tracing::warn!(session = %session.id, %error, "reading the config options failed")
        }
    }
}

type Cache = Mutex<HashMap<String, (Instant, Vec<ModelInfo>)>>;

/// The provider's models, from the cache while fresh; empty (logged) when it cannot be asked.
async fn discovered(conn: &Connection, provider_name: &str) -> Vec<ModelInfo> {
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let base_url = conn
        .server
        .config()
        .providers
        .get(provider_name)
        .map(|p| p.base_url.clone())
        .unwrap_or_default();
    let key = format!("{provider_name} {base_url}");
    if let Some((at, list)) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(&key)
        && at.elapsed() < DISCOVERY_TTL
    {
        return list.clone();
    }
    let provider = match conn.server.provider(provider_name) {
        Ok(provider) => provider,
        Err(error) => {
            tracing::warn!(provider = provider_name, %error, "model discovery failed");
            return Vec::new();
        }
    };
    let list = match tokio::time::timeout(DISCOVERY_TIMEOUT, provider.list_models()).await {
        Ok(Ok(list)) => list,
        Ok(Err(error)) => {
            tracing::warn!(provider = provider_name, %error, "model discovery failed; offering the configured models");
            Vec::new()
        }
        Err(_) => {
            tracing::warn!(
                provider = provider_name,
                secs = DISCOVERY_TIMEOUT.as_secs(),
                "model discovery timed out; offering the configured models"
            );
            Vec::new()
        }
    };
    // A failure is cached too, so a dead endpoint does not slow every session/new.
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, (Instant::now(), list.clone()));
    list
}
