//! `[agents.<alias>] models`: the models a client may switch an agent's sessions to, each a
//! model id or a table `{ id, name, thought_level, images }`.

use serde::{Deserialize, Serialize};

/// One entry of `models`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelEntry {
    Id(String),
    Table(ModelTable),
}

/// The table form of a `models` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelTable {
    pub id: String,
    /// Shown in the client's picker; default the id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether the model takes a thought level (reasoning effort / thinking budget); default
    /// true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought_level: Option<bool>,
    /// Whether the model accepts images; default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// The model's context window in tokens, reported as `size` in `usage_update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// What its tokens cost, for the cost in `usage_update`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
}

/// Prices per million tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    /// Prompt tokens read from the cache; default the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Prompt tokens written to the cache; default the input price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// An ISO 4217 code or another unit; default `USD`.
    #[serde(default = "default_currency")]
    pub currency: String,
}

fn default_currency() -> String {
    "USD".to_owned()
}

impl ModelEntry {
    pub fn id(&self) -> &str {
        match self {
            ModelEntry::Id(id) => id,
            ModelEntry::Table(t) => &t.id,
        }
    }

    pub fn name(&self) -> &str {
        match self {
            ModelEntry::Table(ModelTable {
                name: Some(name), ..
            }) => name,
            _ => self.id(),
        }
    }

    /// Whether the model takes a thought level.
    pub fn thought_level(&self) -> bool {
        match self {
            ModelEntry::Table(t) => t.thought_level.unwrap_or(true),
            ModelEntry::Id(_) => true,
        }
    }

    pub fn context_window(&self) -> Option<u64> {
        match self {
            ModelEntry::Table(t) => t.context_window,
            ModelEntry::Id(_) => None,
        }
    }

    pub fn prices(&self) -> Option<&Prices> {
        match self {
            ModelEntry::Table(t) => t.prices.as_ref(),
            ModelEntry::Id(_) => None,
        }
    }

    /// Whether the model accepts images.
    pub fn images(&self) -> bool {
        match self {
            ModelEntry::Table(t) => t.images.unwrap_or(true),
            ModelEntry::Id(_) => true,
        }
    }
}
