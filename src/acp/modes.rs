//! Session modes are the autonomy levels (`readonly`, `supervised`, `full`): the `modes` and
//! the `mode` config option of the `session/new|load|resume` answers, `session/set_mode`, and
//! `session/set_config_option` for `configId: "mode"`. The operator's configured level
//! (`[autonomy] level` or the agent's override) is the ceiling: a client may lower a session's
//! level and raise it back up to the ceiling, never above it (-32602 with the reason). The
//! choice is stored with the session and applies from the session's next tool call, also within
//! a running turn (the turn's tool environment re-reads it for each call, see
//! [`super::permission::tool_env`]).

use serde_json::{Value, json};

use super::session::Session;
use super::{Connection, params};
use crate::config::{AutonomyLevel, Config};
use crate::policy::Policy;
use crate::rpc::{Peer, RpcError};
use crate::store::Store;

/// The id of the mode config option.
pub const CONFIG_ID: &str = "mode";

const LEVELS: [AutonomyLevel; 3] = [
    AutonomyLevel::ReadOnly,
    AutonomyLevel::Supervised,
    AutonomyLevel::Full,
];

/// The mode id of a level (its config spelling).
pub fn id(level: AutonomyLevel) -> &'static str {
    match level {
        AutonomyLevel::ReadOnly => "readonly",
        AutonomyLevel::Supervised => "supervised",
        AutonomyLevel::Full => "full",
    }
}

fn parse(mode: &str) -> Option<AutonomyLevel> {
    LEVELS.into_iter().find(|l| id(*l) == mode)
}

fn name(level: AutonomyLevel) -> &'static str {
    match level {
        AutonomyLevel::ReadOnly => "Read only",
        AutonomyLevel::Supervised => "Ask before changes",
        AutonomyLevel::Full => "Full access",
    }
}

fn description(level: AutonomyLevel) -> &'static str {
    match level {
        AutonomyLevel::ReadOnly => {
            "Reads files and runs read-only commands; refuses edits and commands that change anything"
        }
        AutonomyLevel::Supervised => {
            "Asks you before each edit and each command that changes something"
        }
        AutonomyLevel::Full => {
            "Edits and runs commands without asking and may reach outside the workspace \
             (never the protected paths)"
        }
    }
}

/// The level the session's tools run at now: the client's choice capped by the configured one.
pub fn effective(config: &Config, session: &Session) -> AutonomyLevel {
    let ceiling = Policy::ceiling(config, &session.agent_alias);
    session.chosen_mode().map_or(ceiling, |c| c.min(ceiling))
}

/// The modes a client may choose: up to the configured level.
fn available(config: &Config, session: &Session) -> impl Iterator<Item = AutonomyLevel> {
    let ceiling = Policy::ceiling(config, &session.agent_alias);
    LEVELS.into_iter().filter(move |l| *l <= ceiling)
}

/// The `modes` of a session answer.
pub fn modes(config: &Config, session: &Session) -> Value {
    let available: Vec<Value> = available(config, session)
        .map(|l| json!({"id": id(l), "name": name(l), "description": description(l)}))
        .collect();
    json!({"currentModeId": id(effective(config, session)), "availableModes": available})
}

/// The same choice as a config option (`category: "mode"`).
pub fn config_option(config: &Config, session: &Session) -> Value {
    let options: Vec<Value> = available(config, session)
        .map(|l| json!({"value": id(l), "name": name(l), "description": description(l)}))
        .collect();
    json!({
        "id": CONFIG_ID,
        "name": "Mode",
        "description": "How much the agent may do without asking (the operator's level is the highest)",
        "category": "mode",
        "type": "select",
        "currentValue": id(effective(config, session)),
        "options": options,
    })
}

/// Adds `modes` and the mode config option to a `session/new|load|resume` answer.
pub fn extend_answer(answer: &mut Value, config: &Config, session: &Session) {
    answer["modes"] = modes(config, session);
    match answer["configOptions"].as_array_mut() {
        Some(options) => options.push(config_option(config, session)),
        None => answer["configOptions"] = json!([config_option(config, session)]),
    }
}

/// Applies the stored choice to a restored session.
pub async fn restore_choice(store: &Store, session: &Session) -> Result<(), RpcError> {
    let settings = store
        .client_settings(&session.id)
        .await
        .map_err(|e| RpcError::internal(format!("session store: {e}")))?;
    let chosen = settings.and_then(|s| s.mode).and_then(|m| parse(&m));
    session.choose_mode(chosen);
    Ok(())
}

/// `session/set_mode {sessionId, modeId}`: `{}`, after a `current_mode_update`.
pub async fn set_mode(conn: &Connection, peer: Peer, params: &Value) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    let mode = params::opt_str(params, &["modeId", "mode_id"])?
        .ok_or_else(|| RpcError::invalid_params("missing modeId"))?;
    let session = conn.session(id)?;
    choose(conn, &peer, &session, mode).await?;
    Ok(json!({}))
}

/// `session/set_config_option` for the mode option: `{configOptions}`.
pub async fn set_config_option(
    conn: &Connection,
    peer: Peer,
    params: &Value,
) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    let config_id = params::opt_str(params, &["configId", "config_id"])?
        .ok_or_else(|| RpcError::invalid_params("missing configId"))?;
    let session = conn.session(id)?;
    if config_id != CONFIG_ID {
        return Err(RpcError::invalid_params(format!(
            "unknown config option `{config_id}`; this session has: {CONFIG_ID}"
        )));
    }
    let value = params::opt_str(params, &["value"])?
        .ok_or_else(|| RpcError::invalid_params("value must be a string naming a mode"))?;
    choose(conn, &peer, &session, value).await?;
    let config = conn.server.config();
    Ok(json!({"configOptions": [config_option(&config, &session)]}))
}

/// Validates and applies a client's mode choice, stores it and tells the client.
pub async fn choose(
    conn: &Connection,
    peer: &Peer,
    session: &Session,
    mode: &str,
) -> Result<AutonomyLevel, RpcError> {
    let config = conn.server.config();
    let Some(level) = parse(mode) else {
        return Err(RpcError::invalid_params(format!(
            "unknown mode `{mode}`: one of readonly, supervised, full"
        )));
    };
    let ceiling = Policy::ceiling(&config, &session.agent_alias);
    if level > ceiling {
        return Err(RpcError::invalid_params(format!(
            "mode `{mode}` is above the level the operator configured for agent `{}` \
             (`{}`, from [autonomy] level or the agent's override): a client may lower a \
             session's level, never raise it above that",
            session.agent_alias,
            id(ceiling)
        )));
    }
    if let Some(store) = &conn.server.store {
        store
            .set_mode(&session.id, id(level))
            .await
            .map_err(|e| RpcError::internal(format!("cannot store the mode: {e}")))?;
    }
    session.choose_mode(Some(level));
    let update = json!({"sessionUpdate": "current_mode_update", "currentModeId": id(level)});
    peer.notify(
        "session/update",
        json!({"sessionId": session.id, "update": update}),
    )
    .await;
    Ok(level)
}
