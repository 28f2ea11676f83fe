//! One `[[sandbox.network.credentials]]` entry checked and its secret read: [`Credential`],
//! where its secret goes ([`Injection`]), and the [`Secret`] itself (shown as `***`).

use std::fmt;
use std::sync::Arc;

use hyper::header::HeaderName;

use crate::config::credential::{CredentialConfig, Inject};
use crate::egress::pattern::DomainPattern;

/// A malformed entry: the key below `[sandbox.network]` and why.
type FieldError = (String, String);

/// A secret value; shown as `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Where the secret goes in a request to a bound host (placeholders in the headers are
/// swapped for the secret in every case).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injection {
    /// The header set to the format with `{}` as the secret.
    Header { name: HeaderName, format: String },
    /// `Authorization: Basic` of this user and the secret.
    Basic { username: String },
    /// Nothing added.
    Replace,
}

/// One checked credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub name: String,
    pub hosts: Vec<DomainPattern>,
    /// The child's variable holding the placeholder.
    pub env: String,
    pub injection: Injection,
    pub secret: Secret,
}

impl Credential {
    /// Whether the secret may be sent to `name` (canonical host name).
    pub fn binds(&self, name: &str) -> bool {
        self.hosts.iter().any(|p| p.matches(name))
    }

    /// Checks entry `i` and reads its secret; `env` looks up the daemon's variables.
    pub fn from_config(
        i: usize,
        c: &CredentialConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Credential, FieldError> {
        let key = |k: &str| format!("credentials[{i}].{k}");
        let valid_name = !c.name.is_empty()
            && c.name.len() <= 64
            && c.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !valid_name {
            return Err((
                key("name"),
                format!(
                    "`{}` is not a credential name (1 to 64 of a-z, 0-9, `-`, `_`)",
                    c.name
                ),
            ));
        }
        if c.hosts.is_empty() {
            return Err((key("hosts"), "names no host".into()));
        }
        let hosts = c
            .hosts
            .iter()
            .enumerate()
            .map(|(j, h)| DomainPattern::parse(h).map_err(|e| (key(&format!("hosts[{j}]")), e)))
            .collect::<Result<Vec<_>, _>>()?;
        let env_name = match &c.env {
            Some(name) => {
                let ok = !name.is_empty()
                    && !name.starts_with(|ch: char| ch.is_ascii_digit())
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !ok {
                    return Err((key("env"), format!("`{name}` is not a variable name")));
                }
                if is_reserved(name) {
                    return Err((
                        key("env"),
                        format!("`{name}` is a variable zeroclaw or the loader sets"),
                    ));
                }
                name.clone()
            }
            None => format!(
                "ZEROCLAW_CREDENTIAL_{}",
                c.name.to_ascii_uppercase().replace('-', "_")
            ),
        };
        let injection = injection(c, &key)?;
        let secret = read_secret(c, &key, env)?;
        Ok(Credential {
            name: c.name.clone(),
            hosts,
            env: env_name,
            injection,
            secret,
        })
    }
}

/// Variables a placeholder may not take: the proxy's and the CA bundle's, and those that
/// steer the loader or the shell.
const RESERVED: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "NPM_CONFIG_PROXY",
    "NPM_CONFIG_HTTPS_PROXY",
    "CARGO_HTTP_PROXY",
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
    "NODE_EXTRA_CA_CERTS",
    "PATH",
    "HOME",
    "IFS",
    "ENV",
    "BASH_ENV",
];

fn is_reserved(name: &str) -> bool {
    RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
        || name.to_ascii_uppercase().starts_with("LD_")
}

fn injection(c: &CredentialConfig, key: &dyn Fn(&str) -> String) -> Result<Injection, FieldError> {
    let unused = |k: &str, set: bool, inject: &str| {
        if set {
            Err((key(k), format!("has no use with inject = \"{inject}\"")))
        } else {
            Ok(())
        }
    };
    match c.inject {
        Inject::Header => {
            unused("username", c.username.is_some(), "header")?;
            let header = c.header.as_deref().unwrap_or("Authorization");
            let name = HeaderName::from_bytes(header.as_bytes())
                .map_err(|_| (key("header"), format!("`{header}` is not a header name")))?;
            let format = c.format.clone().unwrap_or_else(|| "Bearer {}".to_owned());
            if format.matches("{}").count() != 1 {
                return Err((key("format"), "must hold `{}` (the secret) once".into()));
            }
            Ok(Injection::Header { name, format })
        }
        Inject::Basic => {
            unused("header", c.header.is_some(), "basic")?;
            unused("format", c.format.is_some(), "basic")?;
            match &c.username {
                Some(u) if !u.is_empty() && !u.contains(':') => Ok(Injection::Basic {
                    username: u.clone(),
                }),
                Some(u) => Err((key("username"), format!("`{u}` is not a basic-auth user"))),
                None => Err((
                    key("username"),
                    "inject = \"basic\" needs a username".into(),
                )),
            }
        }
        Inject::Replace => {
            unused("header", c.header.is_some(), "replace")?;
            unused("format", c.format.is_some(), "replace")?;
            unused("username", c.username.is_some(), "replace")?;
            Ok(Injection::Replace)
        }
    }
}

/// The secret from the one source the entry names.
fn read_secret(
    c: &CredentialConfig,
    key: &dyn Fn(&str) -> String,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Secret, FieldError> {
    let value = match (&c.value_env, &c.value_file, &c.inline_secret) {
        (Some(var), None, None) => env(var).ok_or_else(|| {
            (
                key("value_env"),
                format!("the daemon's environment has no `{var}`"),
            )
        })?,
        (None, Some(path), None) => read_file(path).map_err(|why| (key("value_file"), why))?,
        (None, None, Some(value)) => value.clone(),
        (None, None, None) => {
            return Err((
                key("value_env"),
                "names no secret: set one of value_env, value_file, inline_secret".into(),
            ));
        }
        _ => {
            return Err((
                key("value_env"),
                "more than one of value_env, value_file, inline_secret".into(),
            ));
        }
    };
    let value = value.trim_end_matches(['\r', '\n']);
    if value.is_empty() {
        return Err((key("value_env"), "the secret is empty".into()));
    }
    if value.bytes().any(|b| b.is_ascii_control()) {
        return Err((
            key("value_env"),
            "the secret holds control characters (it goes in a header)".into(),
        ));
    }
    Ok(Secret(value.into()))
}

/// The first line of `path`, refused when group or others may read or write it.
fn read_file(path: &str) -> Result<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let path = crate::policy::resolve::expand_home(std::path::Path::new(path));
    let meta = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "{} is open to group or others (mode {mode:03o}); make it owner-only (chmod 600)",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_owned())
}

/// Checks every entry of `list`: names unique, each one well-formed with its secret read.
pub fn from_config(
    list: &[CredentialConfig],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Credential>, FieldError> {
    let mut out: Vec<Credential> = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let credential = Credential::from_config(i, c, env)?;
        if out.iter().any(|o| o.name == credential.name) {
            return Err((
                format!("credentials[{i}].name"),
                format!("`{}` names another credential too", credential.name),
            ));
        }
        if out.iter().any(|o| o.env == credential.env) {
            return Err((
                format!("credentials[{i}].env"),
                format!("`{}` is another credential's variable", credential.env),
            ));
        }
        out.push(credential);
    }
    Ok(out)
}
