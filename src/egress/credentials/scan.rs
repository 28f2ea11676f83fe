//! What the proxy does with placeholders in a request: [`inject`] puts the secrets of the
//! credentials bound to the request's host in its headers (each placeholder swapped, in plain
//! values and inside `Basic` credentials, and the configured header set); [`foreign`] finds a
//! placeholder the request must not carry (one not bound to its host, or any over plain HTTP)
//! in the target, the headers (`Basic` credentials decoded) or the body's first bytes.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper::header::{self, HeaderMap, HeaderValue};

use super::credential::Injection;
use super::session::{Bound, PLACEHOLDER_PREFIX, Session};

/// How much of a body is looked at for placeholders.
pub const BODY_PREFIX: usize = 64 * 1024;

/// The first credential of `session` whose placeholder appears in the request (`target`,
/// `headers`, `body` prefix) and is not allowed there: `allowed` says which may be.
pub fn foreign<'a>(
    session: &'a Session,
    allowed: &dyn Fn(&Bound) -> bool,
    target: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Option<&'a Bound> {
    let mut texts: Vec<Vec<u8>> = vec![target.as_bytes().to_vec(), body.to_vec()];
    for (name, value) in headers {
        texts.push(name.as_str().as_bytes().to_vec());
        texts.push(value.as_bytes().to_vec());
        if let Some(decoded) = basic_decoded(value) {
            texts.push(decoded);
        }
    }
    if !texts
        .iter()
        .any(|t| contains(t, PLACEHOLDER_PREFIX.as_bytes()))
    {
        return None;
    }
    session
        .bound()
        .iter()
        .filter(|b| !allowed(b))
        .find(|b| texts.iter().any(|t| contains(t, b.placeholder.as_bytes())))
}

/// Puts the secrets of `bound` (the credentials of the request's host) in `headers`; returns
/// the names of those it used.
pub fn inject(headers: &mut HeaderMap, bound: &[&Bound]) -> Vec<String> {
    let mut used = Vec::new();
    for b in bound {
        let secret = b.credential.secret.expose();
        let mut swapped = false;
        for value in headers.values_mut() {
            if let Some(new) = swap(value, &b.placeholder, secret) {
                *value = new;
                swapped = true;
            }
        }
        let set = match &b.credential.injection {
            Injection::Header { name, format } => {
                let text = format.replacen("{}", secret, 1);
                sensitive(text.as_bytes()).map(|v| (name.clone(), v))
            }
            Injection::Basic { username } => {
                let text = format!("Basic {}", STANDARD.encode(format!("{username}:{secret}")));
                sensitive(text.as_bytes()).map(|v| (header::AUTHORIZATION, v))
            }
            Injection::Replace => None,
        };
        let set_any = set.is_some();
        if let Some((name, value)) = set {
            headers.insert(name, value);
        }
        if swapped || set_any {
            used.push(b.credential.name.clone());
        }
    }
    used
}

/// `value` with `placeholder` swapped for `secret` (plainly, or inside `Basic` credentials);
/// `None` when it holds no placeholder.
fn swap(value: &HeaderValue, placeholder: &str, secret: &str) -> Option<HeaderValue> {
    let bytes = value.as_bytes();
    if contains(bytes, placeholder.as_bytes()) {
        let text = String::from_utf8_lossy(bytes).replace(placeholder, secret);
        return sensitive(text.as_bytes());
    }
    let decoded = basic_decoded(value)?;
    if !contains(&decoded, placeholder.as_bytes()) {
        return None;
    }
    let text = String::from_utf8_lossy(&decoded).replace(placeholder, secret);
    sensitive(format!("Basic {}", STANDARD.encode(text)).as_bytes())
}

/// The decoded credentials of a `Basic` value.
fn basic_decoded(value: &HeaderValue) -> Option<Vec<u8>> {
    let text = value.to_str().ok()?;
    let (scheme, rest) = text.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    STANDARD.decode(rest.trim()).ok()
}

fn sensitive(bytes: &[u8]) -> Option<HeaderValue> {
    let mut value = HeaderValue::from_bytes(bytes).ok()?;
    value.set_sensitive(true);
    Some(value)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}
