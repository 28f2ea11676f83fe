//! `session/delete`: cancels the session's running turn (and waits for it to be stored),
//! removes it from memory and from the store (history included), then deletes the files under
//! its `<cwd>/uploads/` that its history names and no other stored session's history does.
//! A session of another principal is -32000, exactly as an unknown one.

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use nix::unistd::{UnlinkatFlags, unlinkat};
use serde_json::{Value, json};

use super::sessions::not_found;
use super::{Connection, params};
use crate::audit;
use crate::rpc::RpcError;
use crate::store::{StoreError, StoredEntry};

pub async fn handle(conn: &Connection, params: &Value) -> Result<Value, RpcError> {
    let id = params::session_id(params)?;
    let Some(store) = &conn.server.store else {
        return Err(RpcError::session_not_found(
            "session/delete is unavailable: the session store could not be opened",
        ));
    };
    if conn.server.sessions.contains(id) {
        let session = conn.session(id)?;
        session.cancel_turn();
        session.wait_idle().await;
        session.mcp.stop();
        conn.server.sessions.remove(id);
    }
    let record = store.get_session(id).await.map_err(internal)?;
    let Some(record) = record.filter(|r| conn.owns(r.owner.as_deref())) else {
        return Err(not_found(id));
    };
    let history = store.history(id).await.map_err(internal)?;
    let uploads = uploads_named(&record.workspace_dir, &history);
    if !store.delete_session(id).await.map_err(internal)? {
        return Err(not_found(id));
    }
    let mut removed = 0usize;
    for (name, needle) in uploads {
        if store.named_by_others(id, &needle).await.map_err(internal)? {
            continue;
        }
        match remove_upload(&record.workspace_dir, &name) {
            Ok(()) => removed += 1,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => {
                tracing::warn!(session = id, file = name, %error, "an upload was not removed");
            }
        }
    }
    let event = audit::session_event("session.delete", id, Some(conn.owner.as_str()))
        .with("uploads_removed", removed as u64);
    audit::note(event).await;
    Ok(json!({}))
}

fn internal(error: StoreError) -> RpcError {
    RpcError::internal(format!("session store: {error}"))
}

/// The upload file names (`<sha256>.<ext>`) under `<cwd>/uploads/` that the history names,
/// each with the text that names it in a stored entry's JSON.
fn uploads_named(cwd: &Path, history: &[StoredEntry]) -> Vec<(String, String)> {
    let prefix = cwd.join("uploads").to_string_lossy().into_owned() + "/";
    let Ok(quoted) = serde_json::to_string(&prefix) else {
        return Vec::new();
    };
    let prefix = &quoted[1..quoted.len() - 1];
    let mut found: Vec<(String, String)> = Vec::new();
    for entry in history {
        let Ok(json) = serde_json::to_string(&entry.payload) else {
            continue;
        };
        for (at, _) in json.match_indices(prefix) {
            let rest = &json[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
                .unwrap_or(rest.len());
            let name = &rest[..end];
            if is_upload_name(name) && !found.iter().any(|(n, _)| n == name) {
                found.push((name.to_owned(), format!("{prefix}{name}")));
            }
        }
    }
    found
}

/// `<64 hex digits>.<1 to 10 alphanumerics>`: the names the prompt writes.
fn is_upload_name(name: &str) -> bool {
    let Some((digest, ext)) = name.split_once('.') else {
        return false;
    };
    digest.len() == 64
        && digest.bytes().all(|b| b.is_ascii_hexdigit())
        && (1..=10).contains(&ext.len())
        && ext.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Unlinks `name` inside `<cwd>/uploads`, opened without following a symlink, so a swapped-in
/// link never redirects the removal elsewhere.
fn remove_upload(cwd: &Path, name: &str) -> std::io::Result<()> {
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(cwd.join("uploads"))?;
    unlinkat(&dir, name, UnlinkatFlags::NoRemoveDir).map_err(std::io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_well_formed_upload_names_under_this_cwd_are_found() {
        let digest = "ab".repeat(32);
        let text = format!(
            "see [Document: /w/uploads/{digest}.pdf] and [IMAGE: /other/uploads/{digest}.png] \
             and /w/uploads/notadigest.txt and [Document: /w/uploads/{digest}.pdf]"
        );
        let history = vec![StoredEntry {
            kind: "user".into(),
            payload: json!({"text": text}),
        }];
        let found = uploads_named(Path::new("/w"), &history);
        assert_eq!(
            found,
            vec![(format!("{digest}.pdf"), format!("/w/uploads/{digest}.pdf"))]
        );
    }
}
