//! Prompt content to model text. [`parse`] validates every part first (types, base64, the
//! 10 MiB decoded limit, images by [`super::images::check`]) without touching the disk;
//! [`write`] then stores blobs under `<cwd>/uploads/<sha256>.<ext>` and joins all parts with
//! blank lines, documents as `[Document: <path>]` markers and images as `[IMAGE: <path>]`
//! markers that the prompt's [`Prompt::images`] refer to. Each blob written is listed in
//! [`Prompt::files`], for the store's record of the turn.

use std::path::Path;

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::images::MAX_BLOB_BYTES;
use super::images::{self, ImageType};
use crate::agent::prompt_images::{ImageRef, LoadedImages, image_marker};
use crate::rpc::RpcError;
use crate::store::{SessionFile, files};

const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// One validated prompt part.
#[derive(Debug, PartialEq)]
pub enum Part {
    Text(String),
    /// A document (any blob that is not labelled an image).
    Blob {
        bytes: Vec<u8>,
        ext: String,
    },
    /// A checked image: an `image` block, or a blob labelled `image/*`.
    Image {
        bytes: Vec<u8>,
        kind: ImageType,
    },
}

/// A written prompt: its text, and its images, marked in the text.
#[derive(Debug, Default)]
pub struct Prompt {
    pub text: String,
    pub images: Vec<ImageRef>,
    /// The images' bytes (read once here, not again for this turn).
    pub loaded: LoadedImages,
    /// The blobs written under `uploads/`, once each.
    pub files: Vec<SessionFile>,
}

impl Prompt {
    /// Lists a blob written at `path` for the turn's store record (once per file).
    fn uploaded(&mut self, cwd: &Path, path: &Path, bytes: &[u8]) {
        let relative = workspace_relative(cwd, path);
        if self.files.iter().any(|f| f.path == relative) {
            return;
        }
        let sha256 = hex::encode(Sha256::digest(bytes));
        let file = SessionFile::new(files::UPLOAD, relative, sha256, bytes.len() as u64);
        self.files.push(file);
    }
}

/// `path` relative to the workspace `cwd` (as given when it lies outside it).
pub(crate) fn workspace_relative(cwd: &Path, path: &Path) -> String {
    if let Ok(relative) = path.strip_prefix(cwd) {
        return relative.display().to_string();
    }
    // The policy resolves symlinks in a path; the session's cwd may be one.
    let canonical = (std::fs::canonicalize(cwd), std::fs::canonicalize(path));
    if let (Ok(cwd), Ok(path)) = &canonical
        && let Ok(relative) = path.strip_prefix(cwd)
    {
        return relative.display().to_string();
    }
    path.display().to_string()
}

/// Validates a `prompt` (a string or an array of content blocks).
pub fn parse(prompt: Option<&Value>) -> Result<Vec<Part>, RpcError> {
    let parts = match prompt {
        Some(Value::String(text)) => vec![Part::Text(text.clone())],
        Some(Value::Array(blocks)) => blocks.iter().map(parse_block).collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(invalid(
                "prompt must be a string or an array of content blocks",
            ));
        }
        None => return Err(invalid("missing prompt")),
    };
    let has_content = parts.iter().any(|part| match part {
        Part::Text(text) => !text.trim().is_empty(),
        Part::Blob { .. } | Part::Image { .. } => true,
    });
    if !has_content {
        return Err(invalid("the prompt is empty"));
    }
    Ok(parts)
}

fn parse_block(block: &Value) -> Result<Part, RpcError> {
    let Value::Object(block) = block else {
        return Err(invalid("each prompt part must be an object"));
    };
    match block.get("type").map(|t| t.as_str()) {
        None | Some(Some("text")) => Ok(Part::Text(string_field(block, "text")?.to_owned())),
        Some(Some("resource")) => parse_resource(block.get("resource")),
        Some(Some("resource_link")) => Ok(Part::Text(link_marker(block)?)),
        Some(Some("image")) => {
            let bytes = decode_blob(string_field(block, "data")?)?;
            let kind = images::check(&bytes, string_field(block, "mimeType")?)?;
            Ok(Part::Image { bytes, kind })
        }
        Some(Some("audio")) => Err(invalid(
            "audio content blocks are not supported (promptCapabilities.audio is false); \
             send the file as an embedded resource",
        )),
        Some(Some(other)) => Err(invalid(format!("unsupported content block type `{other}`"))),
        Some(None) => Err(invalid("a content block's type must be a string")),
    }
}

fn parse_resource(resource: Option<&Value>) -> Result<Part, RpcError> {
    let Some(Value::Object(resource)) = resource else {
        return Err(invalid("a resource block needs a resource object"));
    };
    if let Some(text) = resource.get("text") {
        return match text {
            Value::String(text) => Ok(Part::Text(text.clone())),
            _ => Err(invalid("resource.text must be a string")),
        };
    }
    let blob = string_field(resource, "blob")
        .map_err(|_| invalid("a resource needs a text or a base64 blob"))?;
    let bytes = decode_blob(blob)?;
    let mime = resource.get("mimeType").and_then(Value::as_str);
    let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
    let ext = extension(uri, mime);
    // Without a MIME type, an image file name labels the blob.
    let label = mime.or(match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        "bmp" => Some("image/bmp"),
        _ => None,
    });
    match label.filter(|label| images::is_image_label(label)) {
        Some(label) => {
            let kind = images::check(&bytes, label)?;
            Ok(Part::Image { bytes, kind })
        }
        None => Ok(Part::Blob { bytes, ext }),
    }
}

/// Decodes base64, refusing more than [`MAX_BLOB_BYTES`] before and after decoding.
fn decode_blob(blob: &str) -> Result<Vec<u8>, RpcError> {
    let too_big = || invalid(format!("blob exceeds {MAX_BLOB_BYTES} bytes decoded"));
    let payload = blob.trim_end_matches('=').len();
    if payload / 4 * 3 > MAX_BLOB_BYTES {
        return Err(too_big());
    }
    let bytes = BASE64
        .decode(blob)
        .map_err(|e| invalid(format!("invalid base64 blob: {e}")))?;
    if bytes.len() > MAX_BLOB_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

/// The file extension from the URI's last path segment, else from the MIME type, else `bin`.
pub(crate) fn extension(uri: &str, mime: Option<&str>) -> String {
    let from_uri = uri
        .split(['?', '#'])
        .next()
        .and_then(|path| path.rsplit('/').next())
        .and_then(|name| name.rsplit_once('.'))
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .filter(|ext| {
            (1..=10).contains(&ext.len()) && ext.bytes().all(|b| b.is_ascii_alphanumeric())
        });
    from_uri
        .or_else(|| mime.and_then(mime_extension).map(str::to_owned))
        .unwrap_or_else(|| "bin".to_owned())
}

fn mime_extension(mime: &str) -> Option<&'static str> {
    Some(match mime.split(';').next()?.trim() {
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "text/plain" => "txt",
        "text/markdown" => "md",
        "text/csv" => "csv",
        "application/json" => "json",
        "application/zip" => "zip",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => "docx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => "xlsx",
        _ => return None,
    })
}

fn link_marker(block: &Map<String, Value>) -> Result<String, RpcError> {
    let uri = string_field(block, "uri")?;
    let name = block.get("name").and_then(Value::as_str).unwrap_or(uri);
    Ok(format!("[Resource: {name} ({uri})]"))
}

fn string_field<'a>(obj: &'a Map<String, Value>, name: &str) -> Result<&'a str, RpcError> {
    obj.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| invalid(format!("missing string field `{name}`")))
}

fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::invalid_params(message)
}

/// Writes the blobs under `<cwd>/uploads/` and joins the parts into the prompt text.
pub async fn write(parts: Vec<Part>, cwd: &Path) -> Result<Prompt, RpcError> {
    let stored = |e: std::io::Error| {
        RpcError::internal(format!("cannot write the attachment under uploads/: {e}"))
    };
    let mut prompt = Prompt::default();
    let mut texts = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            Part::Text(text) => texts.push(text),
            Part::Blob { bytes, ext } => {
                let path = store_blob(cwd, &bytes, &ext).await.map_err(stored)?;
                prompt.uploaded(cwd, &path, &bytes);
                texts.push(format!("[Document: {}]", path.display()));
            }
            Part::Image { bytes, kind } => {
                let path = store_blob(cwd, &bytes, kind.ext()).await.map_err(stored)?;
                prompt.uploaded(cwd, &path, &bytes);
                texts.push(image_marker(&path));
                let sha256 = hex::encode(Sha256::digest(&bytes));
                if !prompt.loaded.contains_key(&sha256) {
                    prompt.images.push(ImageRef {
                        path,
                        mime_type: kind.mime().to_owned(),
                        sha256: sha256.clone(),
                    });
                    prompt.loaded.insert(sha256, images::data(&bytes, kind));
                }
            }
        }
    }
    prompt.text = texts.join("\n\n");
    Ok(prompt)
}

/// Writes `bytes` to `<cwd>/uploads/<sha256>.<ext>` (kept if already there). Symlinks are
/// never followed: `uploads` must be a real directory and the file is created fresh, then
/// renamed into place.
pub(crate) async fn store_blob(
    cwd: &Path,
    bytes: &[u8],
    ext: &str,
) -> std::io::Result<std::path::PathBuf> {
    let dir = cwd.join("uploads");
    tokio::fs::create_dir_all(&dir).await?;
    if !tokio::fs::symlink_metadata(&dir).await?.is_dir() {
        return Err(std::io::Error::other(
            "uploads is not a directory (a symlink?)",
        ));
    }
    let name = format!("{}.{ext}", hex::encode(Sha256::digest(bytes)));
    let path = dir.join(&name);
    if tokio::fs::symlink_metadata(&path).await.is_ok() {
        return Ok(path);
    }
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| std::io::Error::other(e.to_string()))?;
    let partial = dir.join(format!(".{name}.{}.partial", hex::encode(nonce)));
    let mut file = tokio::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&partial)
        .await?;
    let written = async {
        file.write_all(bytes).await?;
        file.flush().await?;
        tokio::fs::rename(&partial, &path).await
    };
    if let Err(error) = written.await {
        let _ = tokio::fs::remove_file(&partial).await;
        return Err(error);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn string_and_typed_or_untyped_text_parts_are_accepted() {
        assert_eq!(
            parse(Some(&json!("hi"))).unwrap(),
            vec![Part::Text("hi".into())]
        );
        let parts = parse(Some(&json!([{"text": "a"}, {"type": "text", "text": "b"}]))).unwrap();
        assert_eq!(parts, vec![Part::Text("a".into()), Part::Text("b".into())]);
    }

    #[test]
    fn empty_prompts_and_media_blocks_are_invalid_params() {
        for prompt in [
            json!(""),
            json!([]),
            json!([{"text": "  "}]),
            json!([{"type": "image", "data": "", "mimeType": "image/png"}]),
            json!([{"type": "audio", "data": "", "mimeType": "audio/wav"}]),
            json!(5),
        ] {
            assert_eq!(parse(Some(&prompt)).unwrap_err().code, -32602, "{prompt}");
        }
    }

    #[test]
    fn blob_limit_is_exactly_ten_mebibytes_decoded() {
        let ok = vec![7u8; MAX_BLOB_BYTES];
        assert_eq!(decode_blob(&b64(&ok)).unwrap().len(), MAX_BLOB_BYTES);
        let over = vec![7u8; MAX_BLOB_BYTES + 1];
        assert_eq!(decode_blob(&b64(&over)).unwrap_err().code, -32602);
        assert_eq!(decode_blob("not base64!").unwrap_err().code, -32602);
    }

    #[test]
    fn extension_comes_from_the_uri_then_the_mime_type() {
        assert_eq!(extension("file:///tmp/Report.PDF", None), "pdf");
        assert_eq!(extension("file:///tmp/noext", Some("image/png")), "png");
        assert_eq!(extension("file:///tmp/x.../", Some("x/unknown")), "bin");
        assert_eq!(extension("file:///a/b.tar.gz?x=1", None), "gz");
    }

    #[tokio::test]
    async fn blobs_are_written_under_uploads_with_their_digest() {
        let dir = tempfile::tempdir().unwrap();
        let prompt = json!([
            {"text": "see"},
            {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": b64(b"%PDF")}},
            {"type": "resource", "resource": {"uri": "file:///p", "mimeType": "image/png", "blob": b64(PNG)}},
            {"type": "image", "mimeType": "image/png", "data": b64(PNG)}
        ]);
        let prompt = write(parse(Some(&prompt)).unwrap(), dir.path())
            .await
            .unwrap();
        let text = &prompt.text;
        let pdf = dir
            .path()
            .join("uploads")
            .join(format!("{}.pdf", hex::encode(Sha256::digest(b"%PDF"))));
        assert_eq!(std::fs::read(&pdf).unwrap(), b"%PDF");
        assert!(text.starts_with("see\n\n[Document: "), "{text}");
        assert!(text.contains(&format!("[Document: {}]", pdf.display())));
        let png = dir
            .path()
            .join("uploads")
            .join(format!("{}.png", hex::encode(Sha256::digest(PNG))));
        assert_eq!(std::fs::read(&png).unwrap(), PNG);
        assert!(
            text.ends_with(&format!("\n\n{0}\n\n{0}", image_marker(&png))),
            "{text}"
        );
        // The same image twice is one reference.
        assert_eq!(prompt.images.len(), 1);
        assert_eq!(prompt.images[0].path, png);
        assert_eq!(prompt.images[0].mime_type, "image/png");
        assert_eq!(prompt.loaded.len(), 1);
    }

    #[test]
    fn image_blocks_and_image_blobs_are_checked_before_anything_is_written() {
        let image = |mime: &str, bytes: &[u8]| json!({"type": "image", "mimeType": mime, "data": b64(bytes)});
        let blob = |uri: &str, mime: Option<&str>, bytes: &[u8]| json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime, "blob": b64(bytes)}});
        let ok = [
            image("image/png", PNG),
            blob("file:///x.png", None, PNG),
            blob("file:///x", Some("image/png"), PNG),
        ];
        for block in ok {
            let parts = parse(Some(&json!([block]))).unwrap();
            assert!(
                matches!(
                    parts[0],
                    Part::Image {
                        kind: ImageType::Png,
                        ..
                    }
                ),
                "{block}"
            );
        }
        let refused = [
            image("image/jpeg", PNG),
            image("image/png", b"hello"),
            json!({"type": "image", "data": b64(PNG)}),
            blob("file:///x.bmp", None, b"BM\0\0"),
            blob("file:///x.pdf", Some("image/jpeg"), PNG),
            blob("file:///x.jpg", None, PNG),
        ];
        for block in refused {
            let error = parse(Some(&json!([{"text": "see"}, block]))).unwrap_err();
            assert_eq!(error.code, -32602, "{block}");
        }
        // A document stays a document, whatever its bytes.
        let parts = parse(Some(&json!([blob(
            "file:///x.pdf",
            Some("application/pdf"),
            PNG
        )])));
        assert!(matches!(parts.unwrap()[0], Part::Blob { .. }));
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_symlinked_uploads_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("uploads")).unwrap();
        let prompt =
            json!([{"type": "resource", "resource": {"uri": "file:///r.pdf", "blob": b64(b"x")}}]);
        let error = write(parse(Some(&prompt)).unwrap(), dir.path())
            .await
            .unwrap_err();
        assert_eq!(error.code, -32603);
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
