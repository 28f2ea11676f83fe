//! `[[sandbox.network.credentials]]`: secrets the egress proxy puts on the wire for the hosts
//! they belong to, while the confined child holds only a placeholder. This is the entry as
//! written; `crate::egress::credentials` checks it and reads the secret.

use serde::{Deserialize, Serialize};

/// Where the proxy puts the secret in a request to a bound host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inject {
    /// Sets the header `header` to `format` with `{}` replaced by the secret.
    Header,
    /// Sets `Authorization: Basic` of `username` and the secret (git over HTTPS).
    Basic,
    /// Only swaps the placeholder for the secret wherever it appears in the headers.
    Replace,
}

/// One `[[sandbox.network.credentials]]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CredentialConfig {
    /// Names the credential in placeholders, audit records and refusals.
    pub name: String,
    /// The hosts (exact names or `*.suffix`) the secret may be sent to.
    pub hosts: Vec<String>,
    /// The child's variable holding the placeholder (default
    /// `ZEROCLAW_CREDENTIAL_<NAME>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    pub inject: Inject,
    /// `inject = "header"`: the header (default `Authorization`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// `inject = "header"`: the value, `{}` standing for the secret (default `Bearer {}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// `inject = "basic"`: the user name sent with the secret as its password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The daemon's environment variable holding the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_env: Option<String>,
    /// A file holding the secret (its first line); refused when group or others may read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_file: Option<String>,
    /// The secret itself in `config.toml` (shown as `***`); only when named so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_secret: Option<String>,
}
