//! Embedding a `deliver_file` result as the call's ACP resource (spec: deliver_file). The tool
//! validated and hashed the file; here, at embed time, the file is read again — confined, by
//! the same `read_bytes` op (the daemon never opens a user's file itself) — and hashed again.
//! Only bytes that still hash to the tool's digest become the `resource` blob; a file swapped
//! in between fails the call with the reason, and nothing is attached or stored.
//! [`Recording`] lists each file attached during a turn, for the store's record of the turn.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{Value, json};

use crate::store::{SessionFile, files};
use crate::tools::deliver_file::{Delivery, read_confined};
use crate::tools::{BoxFuture, Embedder, ToolContext, ToolError};

/// The ACP layer's [`Embedder`].
pub struct ConfinedEmbedder;

impl Embedder for ConfinedEmbedder {
    fn embed<'a>(
        &'a self,
        ctx: &'a ToolContext,
        delivery: &'a Delivery,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let (bytes, actual) = read_confined(ctx, &delivery.path).await?;
            if actual != delivery.sha256 {
                return Err(ToolError(format!(
                    "deliver_file refused: {} changed between validation and delivery \
                     (sha256 {} became {actual}); nothing was attached",
                    delivery.path.display(),
                    delivery.sha256
                )));
            }
            Ok(resource(delivery, &bytes))
        })
    }

    fn store_blob<'a>(
        &'a self,
        cwd: &'a std::path::Path,
        bytes: &'a [u8],
        uri: &'a str,
        mime: Option<&'a str>,
    ) -> BoxFuture<'a, Result<std::path::PathBuf, ToolError>> {
        Box::pin(async move {
            let ext = super::materialize::extension(uri, mime);
            super::materialize::store_blob(cwd, bytes, &ext)
                .await
                .map_err(|e| ToolError(format!("cannot write the resource under uploads/: {e}")))
        })
    }
}

/// A turn's embedder: `inner`'s, recording each file it attached (with the digest it was
/// checked against) relative to the session's workspace.
pub struct Recording {
    inner: Arc<dyn Embedder>,
    cwd: PathBuf,
    delivered: Mutex<Vec<SessionFile>>,
}

impl Recording {
    pub fn new(inner: Arc<dyn Embedder>, cwd: PathBuf) -> Arc<Recording> {
        Arc::new(Recording {
            inner,
            cwd,
            delivered: Mutex::new(Vec::new()),
        })
    }

    /// The files attached so far, in order (each once), leaving none.
    pub fn take(&self) -> Vec<SessionFile> {
        std::mem::take(&mut *self.delivered.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl Embedder for Recording {
    fn embed<'a>(
        &'a self,
        ctx: &'a ToolContext,
        delivery: &'a Delivery,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            let item = self.inner.embed(ctx, delivery).await?;
            let path = super::materialize::workspace_relative(&self.cwd, &delivery.path);
            let mut delivered = self.delivered.lock().unwrap_or_else(|e| e.into_inner());
            if !delivered
                .iter()
                .any(|f| f.path == path && f.sha256 == delivery.sha256)
            {
                let (sha256, size) = (delivery.sha256.clone(), delivery.size);
                delivered.push(SessionFile::new(files::DELIVERED, path, sha256, size));
            }
            Ok(item)
        })
    }

    fn store_blob<'a>(
        &'a self,
        cwd: &'a std::path::Path,
        bytes: &'a [u8],
        uri: &'a str,
        mime: Option<&'a str>,
    ) -> BoxFuture<'a, Result<std::path::PathBuf, ToolError>> {
        self.inner.store_blob(cwd, bytes, uri, mime)
    }
}

/// The `content` item carrying the file (spec: an embedded `resource` with `uri`, `mimeType`
/// and a base64 `blob`).
fn resource(delivery: &Delivery, bytes: &[u8]) -> Value {
    let blob = base64::engine::general_purpose::STANDARD.encode(bytes);
    json!({"type": "content", "content": {"type": "resource", "resource": {
        "uri": delivery.uri, "mimeType": delivery.mime, "blob": blob}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_carries_uri_mime_and_base64_blob() {
        let delivery = Delivery {
            path: "/w/a.txt".into(),
            sha256: "00".into(),
            size: 2,
            mime: "text/plain".into(),
            uri: "attachment://deliver/00.txt".into(),
        };
        let item = resource(&delivery, b"hi");
        assert_eq!(item["content"]["type"], "resource");
        assert_eq!(item["content"]["resource"]["uri"], delivery.uri);
        assert_eq!(item["content"]["resource"]["mimeType"], "text/plain");
        assert_eq!(item["content"]["resource"]["blob"], "aGk=");
    }
}
