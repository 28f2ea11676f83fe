//! `GET /metrics`: the process's metrics ([`crate::metrics`]) in the Prometheus text format.
//! On a Unix socket any admitted peer may scrape (the socket's mode decides who connects); on
//! TCP only with a valid bearer token (`Authorization: Bearer <token>`), else 401.

use std::sync::Arc;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::Gateway;
use super::auth::PeerInfo;

/// The Prometheus text exposition format.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub async fn metrics(
    State(gateway): State<Arc<Gateway>>,
    ConnectInfo(peer): ConnectInfo<PeerInfo>,
    headers: HeaderMap,
) -> Response {
    if matches!(peer, PeerInfo::Tcp { .. }) {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim().to_owned());
        if token.and_then(|t| gateway.tokens.verify(&t)).is_none() {
            crate::metrics::get().auth_failure();
            let mut response = (StatusCode::UNAUTHORIZED, "unauthorized\n").into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    let sessions = gateway.server.sessions.len();
    let text = crate::metrics::get().encode(sessions, gateway.open_connections());
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
}
