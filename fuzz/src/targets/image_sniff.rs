//! The prompt image check: a MIME label and the bytes' signature must name the same type.
//! Property: an accepted image's bytes carry that type's signature, and the label names it.

use zeroclaw::acp::images::{self, ImageType};

const LABELS: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/jpg",
    "image/gif",
    "image/webp",
    "IMAGE/PNG; q=1",
    "image/svg+xml",
    "text/plain",
];

pub fn run(data: &[u8]) {
    let [pick, bytes @ ..] = data else {
        return;
    };
    let label = LABELS[usize::from(*pick) % LABELS.len()];
    let Ok(kind) = images::check(bytes, label) else {
        return;
    };
    let signature: &[u8] = match kind {
        ImageType::Png => b"\x89PNG\r\n\x1a\n",
        ImageType::Jpeg => b"\xff\xd8\xff",
        ImageType::Gif => b"GIF8",
        ImageType::Webp => b"RIFF",
    };
    assert!(bytes.starts_with(signature));
    let essence = label
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    assert!(essence == kind.mime() || (essence == "image/jpg" && kind == ImageType::Jpeg));
}
