//! A session's title: after its first turn, the first non-blank line of the user's first
//! prompt, trimmed and cut at [`MAX_CHARS`] — no model call. Stored with the session (listed
//! by `session/list`) and announced with a `session_info_update`.

use serde_json::json;

use super::Connection;
use super::materialize::Part;
use super::session::Session;
use crate::rpc::Peer;

/// The longest title, in characters.
pub const MAX_CHARS: usize = 80;

/// The title the session gets if this prompt is its first turn.
pub fn for_first_turn(session: &Session, parts: &[Part]) -> Option<String> {
    if !session.history().is_empty() {
        return None;
    }
    parts.iter().find_map(|part| match part {
        Part::Text(text) => first_line(text),
        Part::Blob { .. } | Part::Image { .. } => None,
    })
}

fn first_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut title: String = line.chars().take(MAX_CHARS).collect();
    if line.chars().count() > MAX_CHARS {
        title = title.trim_end().to_owned() + "…";
    }
    Some(title)
}

/// Stores the title and tells the client (after the turn's updates, before its answer).
pub async fn announce(conn: &Connection, peer: &Peer, session: &Session, title: Option<String>) {
    let Some(title) = title else {
        return;
    };
    if let Some(store) = &conn.server.store
        && let Err(error) = store.set_title(&session.id, &title).await
    {
        tracing::warn!(session = %session.id, %error, "storing the title failed");
    }
    let update = json!({
        "sessionUpdate": "session_info_update",
        "title": title,
        "updatedAt": crate::time::rfc3339(crate::store::now_ms()),
    });
    peer.notify(
        "session/update",
        json!({"sessionId": session.id, "update": update}),
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_is_the_first_non_blank_line_trimmed_and_cut() {
        assert_eq!(
            first_line("\n  Fix the build \nplease").as_deref(),
            Some("Fix the build")
        );
        assert_eq!(first_line(" \n\t"), None);
        let long = "x".repeat(100);
        let title = first_line(&long).unwrap();
        assert_eq!(title.chars().count(), MAX_CHARS + 1);
        assert!(title.ends_with('…'));
    }
}
