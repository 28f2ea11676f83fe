//! The `mcpServers` entries a client sends (ACP `McpServer`): stdio servers are run, `http`
//! ones connected to (streamable HTTP), `sse` ones refused (`mcpCapabilities.sse` is false).
//! A name
//! becomes part of tool names (`mcp__<name>__<tool>`), so it is kept to letters, digits, `-`
//! and `_`, and unique in the list.

use std::collections::BTreeSet;

use serde_json::Value;

/// One stdio MCP server to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    /// Set in the server's environment on top of the sandbox's allowlist.
    pub env: Vec<(String, String)>,
    /// Its calls are low risk (never set for a client's server).
    pub trusted: bool,
    /// Set for an http server (`command`, `args`, `env` are then empty): zeroclaw itself
    /// connects to it, so only a session whose network mode lets it may use it
    /// ([`super::route`]).
    pub http: Option<HttpEndpoint>,
}

/// An http (streamable HTTP) MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpEndpoint {
    pub url: String,
    /// Sent with every request.
    pub headers: Vec<(String, String)>,
}

/// The operator's `[mcp]` servers of agent `alias`.
pub fn operator_servers(config: &crate::config::Config, alias: &str) -> Vec<ServerSpec> {
    config
        .mcp
        .for_agent(alias)
        .map(|s| ServerSpec {
            name: s.name.clone(),
            command: s.command.clone(),
            args: s.args.clone(),
            env: s.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            trusted: s.trusted,
            http: None,
        })
        .collect()
}

/// `client`'s servers, refused when one is named like an operator server of agent `alias`.
pub fn check_against_operator(
    config: &crate::config::Config,
    alias: &str,
    client: &[ServerSpec],
) -> Result<(), String> {
    let operator = operator_servers(config, alias);
    match client
        .iter()
        .find(|c| operator.iter().any(|o| o.name == c.name))
    {
        Some(clash) => Err(format!(
            "mcpServers: the name {:?} is taken by a server the operator configured",
            clash.name
        )),
        None => Ok(()),
    }
}

/// The servers of an `mcpServers` array; the error says which entry is wrong and why.
pub fn parse_list(list: &Value) -> Result<Vec<ServerSpec>, String> {
    let items = match list {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => return Err("mcpServers must be an array".to_owned()),
    };
    let mut seen = BTreeSet::new();
    let mut specs = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let spec = parse_one(item).map_err(|e| format!("mcpServers[{i}]: {e}"))?;
        if !seen.insert(spec.name.clone()) {
            return Err(format!(
                "mcpServers[{i}]: the name {:?} is used twice",
                spec.name
            ));
        }
        specs.push(spec);
    }
    Ok(specs)
}

fn parse_one(item: &Value) -> Result<ServerSpec, String> {
    let Value::Object(map) = item else {
        return Err("an entry must be an object".to_owned());
    };
    let name = map
        .get("name")
        .and_then(Value::as_str)
        .ok_or("missing string field `name`")?;
    crate::config::mcp::check_name(name)?;
    match map.get("type").and_then(Value::as_str) {
        None | Some("stdio") => {}
        Some("http") => return parse_http(name, map),
        Some("sse") => {
            return Err(
                "sse MCP servers are not supported (mcpCapabilities.sse is false); \
                 use its streamable http endpoint or stdio"
                    .to_owned(),
            );
        }
        Some(other) => return Err(format!("unknown MCP server type {other:?}")),
    }
    let command = map
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
        .ok_or("missing string field `command`")?;
    let args = match map.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(args)) => args
            .iter()
            .map(|a| a.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("`args` must be an array of strings")?,
        Some(_) => return Err("`args` must be an array of strings".to_owned()),
    };
    let env = match map.get("env") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(vars)) => vars.iter().map(env_var).collect::<Result<_, _>>()?,
        Some(_) => return Err("`env` must be an array of {name, value}".to_owned()),
    };
    Ok(ServerSpec {
        name: name.to_owned(),
        command: command.to_owned(),
        args,
        env,
        trusted: false,
        http: None,
    })
}

fn parse_http(name: &str, map: &serde_json::Map<String, Value>) -> Result<ServerSpec, String> {
    let url = map
        .get("url")
        .and_then(Value::as_str)
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
        .ok_or("an http server needs a `url` starting with http:// or https://")?;
    let headers = match map.get("headers") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.iter().map(env_var).collect::<Result<_, _>>()?,
        Some(_) => return Err("`headers` must be an array of {name, value}".to_owned()),
    };
    Ok(ServerSpec {
        name: name.to_owned(),
        command: String::new(),
        args: Vec::new(),
        env: Vec::new(),
        trusted: false,
        http: Some(HttpEndpoint {
            url: url.to_owned(),
            headers,
        }),
    })
}

fn env_var(var: &Value) -> Result<(String, String), String> {
    let name = var["name"].as_str().unwrap_or_default();
    let value = var["value"].as_str();
    let valid_name = !name.is_empty() && !name.contains(['=', '\0']);
    match value {
        Some(value) if valid_name && !value.contains('\0') => {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(format!("`env` entry {var} must be {{name, value}} strings")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stdio_entries_are_read_and_bad_ones_named() {
        let list = json!([
            {"name": "files", "command": "/usr/bin/srv", "args": ["-v"],
             "env": [{"name": "TOKEN", "value": "t"}]},
            {"type": "stdio", "name": "b", "command": "srv2"}
        ]);
        let specs = parse_list(&list).unwrap();
        assert_eq!(specs[0].args, ["-v"]);
        assert_eq!(specs[0].env, [("TOKEN".to_owned(), "t".to_owned())]);
        assert_eq!(specs[1].command, "srv2");
        assert!(parse_list(&Value::Null).unwrap().is_empty());
        for (bad, needle) in [
            (json!([{"name": "a b", "command": "x"}]), "letters"),
            (json!([{"name": "a"}]), "command"),
            (
                json!([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]),
                "twice",
            ),
            (
                json!([{"type": "sse", "name": "h", "url": "http://x"}]),
                "not supported",
            ),
            (
                json!([{"type": "http", "name": "h", "url": "ftp://x"}]),
                "url",
            ),
            (
                json!([{"name": "a", "command": "x", "env": [{"name": "A=B", "value": ""}]}]),
                "env",
            ),
            (json!({}), "array"),
        ] {
            let error = parse_list(&bad).unwrap_err();
            assert!(error.contains(needle), "{bad}: {error}");
        }
    }
}
