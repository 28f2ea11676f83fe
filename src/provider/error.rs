//! Provider errors, worded for the user: they name the provider and status, never the key.

/// A failed model call.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    #[error("unknown provider `{0}`")]
    UnknownProvider(String),
    /// The message says which variable or config key to set.
    #[error("{0}")]
    MissingApiKey(String),
    #[error("provider `{provider}`: cannot build the HTTP client: {message}")]
    Client { provider: String, message: String },
    #[error("provider `{provider}` could not be reached: {message}")]
    Connect { provider: String, message: String },
    #[error("provider `{provider}` did not answer within {secs} s")]
    Timeout { provider: String, secs: u64 },
    #[error("provider `{provider}` returned HTTP {status}: {excerpt}")]
    Http {
        provider: String,
        status: u16,
        excerpt: String,
        /// The server's `Retry-After`, in seconds, when it sent one.
        retry_after_secs: Option<u64>,
    },
    #[error("provider `{provider}`: the response stream broke: {message}")]
    Stream { provider: String, message: String },
    #[error("provider `{provider}` sent an invalid chunk: {message}")]
    Protocol { provider: String, message: String },
    /// The model itself reported an error inside the stream.
    #[error("provider `{provider}` reported an error: {message}")]
    Model { provider: String, message: String },
}

/// The longest `Retry-After` the provider waits for; a longer one fails the call at once.
pub const MAX_RETRY_AFTER_SECS: u64 = 10;

impl ProviderError {
    /// How long the server asked to wait before trying again.
    pub fn retry_after(&self) -> Option<std::time::Duration> {
        match self {
            ProviderError::Http {
                retry_after_secs, ..
            } => retry_after_secs.map(std::time::Duration::from_secs),
            _ => None,
        }
    }

    /// Whether trying again (before any token arrived) may succeed: 429, 5xx, connect errors,
    /// unless the server asked for a longer pause than [`MAX_RETRY_AFTER_SECS`].
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http {
                status,
                retry_after_secs,
                ..
            } => {
                let soon = retry_after_secs.is_none_or(|s| s <= MAX_RETRY_AFTER_SECS);
                (*status == 429 || *status >= 500) && soon
            }
            ProviderError::Connect { .. } => true,
            _ => false,
        }
    }
}

/// At most `max` characters of `body`, on one line, with any occurrence of `secret` removed.
pub fn excerpt(body: &str, secret: &str, max: usize) -> String {
    let mut text: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if !secret.is_empty() {
        text = text.replace(secret, "***");
    }
    if text.chars().count() > max {
        text = text.chars().take(max).collect::<String>() + "…";
    }
    if text.is_empty() {
        "(empty body)".to_owned()
    } else {
        text
    }
}
