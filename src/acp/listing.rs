//! `session/list`: the caller's stored sessions, most recent activity first, in pages of
//! [`PAGE`] with an opaque `nextCursor`, optionally only those of one `cwd`; each with its
//! `cwd`, `title` (once it has one) and `updatedAt`. Only sessions the connection's principal
//! owns are ever listed (see [`Connection::owns`]).

use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::{Connection, params};
use crate::rpc::RpcError;
use crate::store::ListQuery;

/// Sessions per page.
pub const PAGE: usize = 50;

pub async fn handle(conn: &Connection, params: &Value) -> Result<Value, RpcError> {
    let Some(store) = &conn.server.store else {
        return Err(RpcError::session_not_found(
            "session/list is unavailable: the session store could not be opened",
        ));
    };
    let cwd = params::opt_str(params, &["cwd"])?
        .map(cwd_filter)
        .transpose()?;
    let after = params::opt_str(params, &["cursor"])?
        .map(decode_cursor)
        .transpose()?;
    let query = ListQuery {
        owner: conn.owner.clone(),
        include_unowned: conn.is_local_principal(),
        cwd,
        after,
        limit: PAGE + 1,
    };
    let mut rows = store
        .list_owned(query)
        .await
        .map_err(|e| RpcError::internal(format!("session store: {e}")))?;
    let next = (rows.len() > PAGE).then(|| {
        rows.truncate(PAGE);
        let last = &rows[PAGE - 1];
        encode_cursor(last.last_activity, &last.id)
    });
    let sessions: Vec<Value> = rows
        .iter()
        .map(|row| {
            let mut info = json!({
                "sessionId": row.id,
                "cwd": row.workspace_dir,
                "updatedAt": crate::time::rfc3339(row.last_activity),
            });
            if let Some(title) = &row.title {
                info["title"] = json!(title);
            }
            info
        })
        .collect();
    let mut result = json!({"sessions": sessions});
    if let Some(cursor) = next {
        result["nextCursor"] = json!(cursor);
    }
    Ok(result)
}

/// The `cwd` filter: an absolute path, compared in its canonical form (as sessions store it).
fn cwd_filter(raw: &str) -> Result<PathBuf, RpcError> {
    let path = Path::new(raw);
    if !path.is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "cwd must be an absolute path, not {raw}"
        )));
    }
    Ok(path.canonicalize().unwrap_or_else(|_| path.to_path_buf()))
}

fn encode_cursor(last_activity: i64, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{last_activity}:{id}"))
}

fn decode_cursor(cursor: &str) -> Result<(i64, String), RpcError> {
    let invalid = || {
        RpcError::invalid_params(
            "invalid cursor: pass the nextCursor of a previous session/list answer",
        )
    };
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (ms, id) = text.split_once(':').ok_or_else(invalid)?;
    Ok((ms.parse().map_err(|_| invalid())?, id.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_invalid_params() {
        let cursor = encode_cursor(1_700_000_000_123, "s-ab");
        assert_eq!(
            decode_cursor(&cursor).unwrap(),
            (1_700_000_000_123, "s-ab".to_owned())
        );
        for bad in ["!!", "bm9jb2xvbg", ""] {
            assert_eq!(decode_cursor(bad).unwrap_err().code, -32602, "{bad}");
        }
    }
}
