//! Exponential backoff for calls that fail before the first token.

use std::future::Future;
use std::time::Duration;

use super::ProviderError;

/// How many times a call is tried in total.
pub const ATTEMPTS: u32 = 3;
/// The wait before the second try; it doubles for each further one.
pub const BASE_DELAY: Duration = Duration::from_millis(200);

/// Runs `attempt` until it succeeds, fails for good, or [`ATTEMPTS`] are used up; waits at
/// least as long as a `Retry-After` asked.
pub async fn with_backoff<T, F, Fut>(mut attempt: F) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut delay = BASE_DELAY;
    for tries_left in (0..ATTEMPTS).rev() {
        match attempt().await {
            Err(e) if e.is_retryable() && tries_left > 0 => {
                let wait = e.retry_after().map_or(delay, |asked| asked.max(delay));
                tracing::warn!(error = %e, ?wait, "model call failed; retrying");
                tokio::time::sleep(wait).await;
                delay *= 2;
            }
            result => return result,
        }
    }
    unreachable!("the last attempt always returns")
}
