//! The audit log's canonical encoding of a record body (the bytes each link hash covers).
//! Properties: the encoding of a JSON value parses back to the same value and encodes again to
//! the same bytes (a record read back from the log hashes as it did when written), and it
//! holds no whitespace outside strings.

use serde_json::Value;
use zeroclaw::audit::chain::canonical;

pub fn run(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let text = canonical(&value);
    let again: Value = serde_json::from_str(&text).expect("the canonical encoding is JSON");
    assert_eq!(again, value, "{text}");
    assert_eq!(canonical(&again), text);
    assert_eq!(
        serde_json::to_string(&again).map(|s| s.len()).ok(),
        Some(text.len())
    );
}
