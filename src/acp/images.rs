//! Prompt images. What is accepted: PNG, JPEG, GIF and WebP, the type sniffed from the bytes
//! and matching the block's label ([`check`]; the 10 MiB limit, [`MAX_BLOB_BYTES`], is every
//! blob's, applied by `materialize` while decoding). What is sent again: [`load`] reads a history's stored images
//! back from the session's `uploads/` for a turn or a replay, and uses only a regular file
//! there (opened without following a link, never blocking on a FIFO) whose bytes still hash
//! to the stored digest and still are the stored type; any other is logged and stays its
//! marker text, so a file swapped in by a tool never reaches the model or the client.

use std::path::Path;

use base64::Engine;
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use crate::agent::Entry;
use crate::agent::prompt_images::{ImageRef, LoadedImages};
use crate::provider::ImageData;
use crate::rpc::RpcError;

/// Largest decoded blob accepted (every prompt blob, images included; `materialize` applies it
/// while decoding, [`load`] when reading a stored image back).
pub const MAX_BLOB_BYTES: usize = 10 * 1024 * 1024;

/// An image type a prompt may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageType {
    Png,
    Jpeg,
    Gif,
    Webp,
}

impl ImageType {
    pub fn mime(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
            ImageType::Gif => "image/gif",
            ImageType::Webp => "image/webp",
        }
    }

    /// The extension of its file under `uploads/`.
    pub fn ext(self) -> &'static str {
        match self {
            ImageType::Png => "png",
            ImageType::Jpeg => "jpg",
            ImageType::Gif => "gif",
            ImageType::Webp => "webp",
        }
    }

    /// The type a MIME label names (`image/jpg` is taken for JPEG, parameters are ignored).
    fn from_label(label: &str) -> Option<ImageType> {
        let essence = label.split(';').next()?.trim().to_ascii_lowercase();
        Some(match essence.as_str() {
            "image/png" => ImageType::Png,
            "image/jpeg" | "image/jpg" => ImageType::Jpeg,
            "image/gif" => ImageType::Gif,
            "image/webp" => ImageType::Webp,
            _ => return None,
        })
    }

    /// The type the bytes are, by their signature and the header that must follow it.
    fn sniff(bytes: &[u8]) -> Option<ImageType> {
        let at = |range: std::ops::Range<usize>| bytes.get(range);
        if at(0..8) == Some(b"\x89PNG\r\n\x1a\n") && at(12..16) == Some(b"IHDR") {
            Some(ImageType::Png)
        } else if at(0..3) == Some(b"\xff\xd8\xff") {
            Some(ImageType::Jpeg)
        } else if matches!(at(0..6), Some(b"GIF87a" | b"GIF89a")) && bytes.len() >= 13 {
            Some(ImageType::Gif)
        } else if at(0..4) == Some(b"RIFF")
            && at(8..12) == Some(b"WEBP")
            && matches!(at(12..16), Some(b"VP8 " | b"VP8L" | b"VP8X"))
        {
            Some(ImageType::Webp)
        } else {
            None
        }
    }
}

/// Whether a MIME label names an image (so the block is checked as one).
pub fn is_image_label(label: &str) -> bool {
    label.trim().to_ascii_lowercase().starts_with("image/")
}

/// The type of an image labelled `label`: -32602 with the reason unless the label is a
/// supported type and the bytes are of exactly that type.
pub fn check(bytes: &[u8], label: &str) -> Result<ImageType, RpcError> {
    let Some(labelled) = ImageType::from_label(label) else {
        return Err(RpcError::invalid_params(format!(
            "images of type `{label}` are not supported: send PNG, JPEG, GIF or WebP"
        )));
    };
    match ImageType::sniff(bytes) {
        Some(actual) if actual == labelled => Ok(actual),
        Some(actual) => Err(RpcError::invalid_params(format!(
            "the image is labelled {label} but its bytes are {}",
            actual.mime()
        ))),
        None => Err(RpcError::invalid_params(format!(
            "the image is labelled {label} but its bytes are not a PNG, JPEG, GIF or WebP image"
        ))),
    }
}

/// The image as the providers send it.
pub fn data(bytes: &[u8], kind: ImageType) -> ImageData {
    ImageData {
        mime_type: kind.mime().to_owned(),
        base64: base64::engine::general_purpose::STANDARD
            .encode(bytes)
            .into(),
    }
}

/// The bytes of the images `entries` refer to that can still be used (see the module doc).
pub async fn load(cwd: &Path, entries: &[Entry]) -> LoadedImages {
    let mut loaded = LoadedImages::new();
    let refs = entries.iter().flat_map(|entry| match entry {
        Entry::User { images, .. } => images.as_slice(),
        _ => &[],
    });
    for image in refs {
        if loaded.contains_key(&image.sha256) {
            continue;
        }
        match read_verified(cwd, image).await {
            Ok(data) => {
                loaded.insert(image.sha256.clone(), data);
            }
            Err(reason) => tracing::warn!(
                path = %image.path.display(),
                %reason,
                "a stored prompt image is not used; its marker is sent instead"
            ),
        }
    }
    loaded
}

async fn read_verified(cwd: &Path, image: &ImageRef) -> Result<ImageData, String> {
    if image.path.parent() != Some(cwd.join("uploads").as_path()) {
        return Err("not in the session's uploads/".to_owned());
    }
    let mut file = tokio::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&image.path)
        .await
        .map_err(|e| e.to_string())?;
    let meta = file.metadata().await.map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.len() > MAX_BLOB_BYTES as u64 {
        return Err("not a regular file of at most 10 MiB".to_owned());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    (&mut file)
        .take(MAX_BLOB_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| e.to_string())?;
    if hex::encode(Sha256::digest(&bytes)) != image.sha256 {
        return Err("its bytes no longer match the stored digest".to_owned());
    }
    let kind = check(&bytes, &image.mime_type).map_err(|e| e.message)?;
    Ok(data(&bytes, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0";

    #[test]
    fn the_type_is_sniffed_and_must_match_the_label() {
        assert_eq!(check(PNG, "image/png").unwrap(), ImageType::Png);
        assert_eq!(check(PNG, "IMAGE/PNG; x=1").unwrap(), ImageType::Png);
        assert_eq!(
            check(b"\xff\xd8\xff\xe0rest", "image/jpg").unwrap(),
            ImageType::Jpeg
        );
        assert_eq!(
            check(b"GIF89a\x01\0\x01\0\0\0\0", "image/gif").unwrap(),
            ImageType::Gif
        );
        assert_eq!(
            check(b"RIFF\x1a\0\0\0WEBPVP8L....", "image/webp").unwrap(),
            ImageType::Webp
        );
        let refused = [
            (PNG, "image/jpeg", "bytes are image/png"),
            (b"plain text".as_slice(), "image/png", "not a PNG"),
            (&PNG[..8], "image/png", "not a PNG"),
            (b"BM\x3a\0\0\0\0\0\0\0", "image/bmp", "not supported"),
            (b"BM\x3a\0\0\0\0\0\0\0", "image/png", "not a PNG"),
            (b"<svg/>", "image/svg+xml", "not supported"),
        ];
        for (bytes, label, reason) in refused {
            let error = check(bytes, label).unwrap_err();
            assert_eq!(error.code, -32602);
            assert!(error.message.contains(reason), "{label}: {}", error.message);
        }
    }

    #[tokio::test]
    async fn only_an_unchanged_regular_file_under_uploads_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::create_dir(cwd.join("uploads")).unwrap();
        let sha = hex::encode(Sha256::digest(PNG));
        let image = |name: &str| ImageRef {
            path: cwd.join("uploads").join(name),
            mime_type: "image/png".into(),
            sha256: sha.clone(),
        };
        let entry = |image: ImageRef| Entry::User {
            text: String::new(),
            images: vec![image],
        };
        std::fs::write(cwd.join("uploads/good.png"), PNG).unwrap();
        let loaded = load(cwd, &[entry(image("good.png"))]).await;
        assert_eq!(loaded[&sha], data(PNG, ImageType::Png));

        std::fs::write(cwd.join("uploads/changed.png"), b"\x89PNG changed").unwrap();
        std::fs::write(cwd.join("elsewhere.png"), PNG).unwrap();
        std::os::unix::fs::symlink(cwd.join("elsewhere.png"), cwd.join("uploads/link.png"))
            .unwrap();
        nix::unistd::mkfifo(&cwd.join("uploads/fifo.png"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let outside = ImageRef {
            path: cwd.join("elsewhere.png"),
            ..image("x")
        };
        for bad in [
            image("changed.png"),
            image("link.png"),
            image("fifo.png"),
            image("missing.png"),
            outside,
        ] {
            let path = bad.path.clone();
            assert!(load(cwd, &[entry(bad)]).await.is_empty(), "{path:?}");
        }
    }
}
