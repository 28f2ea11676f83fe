//! A prompt's images as the history keeps them: by reference ([`ImageRef`]: the file under
//! the session's `uploads/`, its MIME type and digest), each standing in the prompt's text as
//! its [`image_marker`] where it was. Given the images' bytes ([`LoadedImages`]),
//! [`user_parts`] puts each image back in place of its marker; without them (a model that
//! takes no images, a file gone or changed) the marker text stays.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::provider::{ImageData, UserPart};

/// An image of a prompt, stored content-addressed under the session's `uploads/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageRef {
    pub path: PathBuf,
    #[serde(rename = "mimeType")]
    pub mime_type: String,
    /// The hex SHA-256 of the file's bytes; a file that no longer matches is not used.
    pub sha256: String,
}

/// The bytes of a history's images, by their digest.
pub type LoadedImages = HashMap<String, ImageData>;

/// The text standing for an image stored at `path` (the product document's marker).
pub fn image_marker(path: &std::path::Path) -> String {
    format!("[IMAGE: {}]", path.display())
}

/// A prompt's text and images in order: each marker of a loaded image is replaced by the
/// image; the text around them is cut at the blank lines that joined the prompt's parts,
/// and blank pieces are left out.
pub fn user_parts(text: &str, images: &[ImageRef], loaded: &LoadedImages) -> Vec<UserPart> {
    let markers: Vec<(String, &ImageData)> = images
        .iter()
        .filter_map(|image| Some((image_marker(&image.path), loaded.get(&image.sha256)?)))
        .collect();
    let mut parts = Vec::new();
    let push_text = |parts: &mut Vec<UserPart>, piece: &str| {
        let piece = piece.trim_matches('\n');
        if !piece.trim().is_empty() {
            parts.push(UserPart::Text(piece.to_owned()));
        }
    };
    let mut rest = text;
    while let Some((at, len, image)) = markers
        .iter()
        .filter_map(|(marker, image)| Some((rest.find(marker.as_str())?, marker.len(), *image)))
        .min_by_key(|(at, _, _)| *at)
    {
        push_text(&mut parts, &rest[..at]);
        parts.push(UserPart::Image(image.clone()));
        rest = &rest[at + len..];
    }
    push_text(&mut parts, rest);
    parts
}
