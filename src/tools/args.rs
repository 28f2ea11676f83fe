//! Reading a tool's JSON arguments with errors the model can act on.

use serde_json::Value;

use super::ToolError;

/// A required string argument.
pub fn string<'a>(args: &'a Value, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError(format!("missing required string argument `{key}`")))
}

/// An optional string argument (absent or null is `None`).
pub fn opt_string<'a>(args: &'a Value, key: &str) -> Result<Option<&'a str>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolError(format!("argument `{key}` must be a string"))),
    }
}

/// An optional non-negative integer argument.
pub fn opt_u64(args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ToolError(format!("argument `{key}` must be a non-negative integer"))),
    }
}

/// An optional boolean argument, default false.
pub fn flag(args: &Value, key: &str) -> Result<bool, ToolError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| ToolError(format!("argument `{key}` must be true or false"))),
    }
}
