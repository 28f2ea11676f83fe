//! Reading method parameters: the `session_id` / alias forms, and type errors as -32602.

use serde_json::{Map, Value};

use crate::rpc::RpcError;

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

/// The params object; absent params read as `{}`, any other non-object is invalid.
pub fn object(params: &Value) -> Result<&Map<String, Value>, RpcError> {
    match params {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(&EMPTY),
        _ => Err(RpcError::invalid_params("params must be an object")),
    }
}

/// The first of `names` present: a string, or -32602 when it has another type.
pub fn opt_str<'a>(params: &'a Value, names: &[&str]) -> Result<Option<&'a str>, RpcError> {
    let map = object(params)?;
    for name in names {
        match map.get(*name) {
            None | Some(Value::Null) => continue,
            Some(Value::String(s)) => return Ok(Some(s)),
            Some(_) => {
                return Err(RpcError::invalid_params(format!("{name} must be a string")));
            }
        }
    }
    Ok(None)
}

/// `sessionId` (alias `session_id`), required.
pub fn session_id(params: &Value) -> Result<&str, RpcError> {
    opt_str(params, &["sessionId", "session_id"])?
        .ok_or_else(|| RpcError::invalid_params("missing sessionId"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn session_id_accepts_both_spellings_and_rejects_other_types() {
        assert_eq!(session_id(&json!({"sessionId": "a"})).unwrap(), "a");
        assert_eq!(session_id(&json!({"session_id": "b"})).unwrap(), "b");
        assert_eq!(
            session_id(&json!({"sessionId": 5})).unwrap_err().code,
            -32602
        );
        assert_eq!(session_id(&Value::Null).unwrap_err().code, -32602);
        assert_eq!(session_id(&json!([1])).unwrap_err().code, -32602);
    }
}
