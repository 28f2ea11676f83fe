//! Hides secrets in a configuration tree before it is shown to anyone.

use toml::Value;

/// The replacement for every secret value.
pub const MASK: &str = "***";

/// Whether a key names a secret: api keys and anything called like a key, token or secret.
///
/// `api_key_env` holds the *name* of a variable, not a secret, so it stays visible.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    if key.ends_with("_env") {
        return false;
    }
    ["key", "token", "secret", "password"]
        .iter()
        .any(|word| key.contains(word))
}

/// Replaces the value of every secret key, at any depth, with [`MASK`].
pub fn mask_secrets(value: &mut Value) {
    match value {
        Value::Table(table) => {
            for (key, v) in table.iter_mut() {
                if is_secret_key(key) && !v.is_table() {
                    *v = Value::String(MASK.to_owned());
                } else {
                    mask_secrets(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(mask_secrets),
        Value::String(text) => {
            if let Some(masked) = mask_url_password(text) {
                *text = masked;
            }
        }
        _ => {}
    }
}

/// `scheme://user:password@host…` with the password replaced by [`MASK`] (a store URL);
/// `None` when `text` carries no password.
fn mask_url_password(text: &str) -> Option<String> {
    let (scheme, rest) = text.split_once("://")?;
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (userinfo, _host) = rest[..authority_end].rsplit_once('@')?;
    let (user, _password) = userinfo.split_once(':')?;
    let after = &rest[userinfo.len()..];
    Some(format!("{scheme}://{user}:{MASK}{after}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_urls_are_masked() {
        let mut v: Value =
            toml::from_str("[store]\nurl = \"postgres://zc:s3cret@db:5432/zc?sslmode=require\"\n")
                .unwrap();
        mask_secrets(&mut v);
        assert_eq!(
            v["store"]["url"].as_str(),
            Some("postgres://zc:***@db:5432/zc?sslmode=require")
        );
        let mut plain: Value = toml::from_str("url = \"postgres://db/zc\"\n").unwrap();
        mask_secrets(&mut plain);
        assert_eq!(plain["url"].as_str(), Some("postgres://db/zc"));
    }

    #[test]
    fn api_keys_and_tokens_are_masked_at_any_depth() {
        let mut v: Value = toml::from_str(
            "token = \"t\"\n[providers.a]\napi_key = \"sk-1\"\napi_key_env = \"VAR\"\n\
             base_url = \"http://x\"\n[x]\nclient_secret = \"s\"\n",
        )
        .unwrap();
        mask_secrets(&mut v);
        let text = toml::to_string(&v).unwrap();
        assert!(!text.contains("sk-1") && !text.contains("\"t\"") && !text.contains("\"s\""));
        assert_eq!(v["providers"]["a"]["api_key"].as_str(), Some(MASK));
        assert_eq!(v["providers"]["a"]["api_key_env"].as_str(), Some("VAR"));
        assert_eq!(v["providers"]["a"]["base_url"].as_str(), Some("http://x"));
    }
}
