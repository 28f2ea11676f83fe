//! The proxy's own answers to an HTTP client: a refusal naming its rule (and the rule in the
//! `x-zeroclaw-egress` header), a plain text, an empty body. Shared by the forward proxy
//! ([`super::http`]) and the intercepted tunnels ([`super::intercept`]).

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use super::Refusal;
use super::peek::Body;

pub(super) fn refused(refusal: &Refusal) -> Response<Body> {
    let mut response = text(StatusCode::FORBIDDEN, &format!("zeroclaw {refusal}\n"));
    if let Ok(value) = HeaderValue::from_str(&refusal.rule.to_string()) {
        response.headers_mut().insert("x-zeroclaw-egress", value);
    }
    response
}

pub(super) fn text(status: StatusCode, body: &str) -> Response<Body> {
    let mut response = Response::new(full(body.to_owned()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn full(body: String) -> Body {
    Full::new(Bytes::from(body))
        .map_err(|never| match never {})
        .boxed()
}

pub(super) fn empty() -> Body {
    full(String::new())
}
