//! Token usage of model calls: the `usage_update` each call sends, its cost from the model's
//! configured prices, and the totals of a turn (the prompt answer's `_meta.zeroclaw.usage`).

use serde_json::{Value, json};

use super::history::Entry;
use crate::config::Prices;
use crate::provider::TokenUsage;

/// What the session's model says about its tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageContext {
    pub context_window: Option<u64>,
    pub prices: Option<Prices>,
}

/// The cost of one call under `prices` (per million tokens).
pub fn cost(usage: &TokenUsage, prices: &Prices) -> f64 {
    let uncached = usage
        .input_tokens
        .saturating_sub(usage.cache_read_tokens + usage.cache_write_tokens);
    let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    per(uncached, prices.input)
        + per(
            usage.cache_read_tokens,
            prices.cache_read.unwrap_or(prices.input),
        )
        + per(
            usage.cache_write_tokens,
            prices.cache_write.unwrap_or(prices.input),
        )
        + per(usage.output_tokens, prices.output)
}

/// The summed usage and cost of the `Usage` entries among `entries`.
pub fn totals<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> (TokenUsage, Option<f64>) {
    let mut total = TokenUsage::default();
    let mut cost: Option<f64> = None;
    for entry in entries {
        if let Entry::Usage { usage, cost: c } = entry {
            total.input_tokens += usage.input_tokens;
            total.output_tokens += usage.output_tokens;
            total.cache_read_tokens += usage.cache_read_tokens;
            total.cache_write_tokens += usage.cache_write_tokens;
            total.reasoning_tokens += usage.reasoning_tokens;
            if let Some(c) = c {
                *cost.get_or_insert(0.0) += c;
            }
        }
    }
    (total, cost)
}

/// The token counts as the `_meta` objects carry them.
pub fn counts(usage: &TokenUsage) -> Value {
    json!({
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheWriteTokens": usage.cache_write_tokens,
        "reasoningTokens": usage.reasoning_tokens,
    })
}

/// The `usage_update` after one call: `used` is the context the call filled (its prompt and
/// its answer), `size` the model's configured context window (0 when not configured), `cost`
/// the session's cumulative cost when prices are configured; the call's own counts are in
/// `_meta.zeroclaw`.
pub fn update(usage: &TokenUsage, ctx: &UsageContext, session_cost: Option<f64>) -> Value {
    let mut update = json!({
        "sessionUpdate": "usage_update",
        "used": usage.input_tokens + usage.output_tokens,
        "size": ctx.context_window.unwrap_or(0),
        "_meta": {"zeroclaw": counts(usage)},
    });
    if let (Some(amount), Some(prices)) = (session_cost, &ctx.prices) {
        update["cost"] = json!({"amount": amount, "currency": prices.currency});
    }
    update
}
