//! The environment a proxy-mode child gets, so common tools find the proxy listeners inside
//! its namespace: the usual `*_PROXY` variables in both cases, npm's and cargo's own, and
//! `socks5h://` for `ALL_PROXY` (names are resolved by the proxy: the child has no resolver).

/// `(name, value)` pairs for the HTTP proxy on `http_port` and SOCKS5 on `socks_port`
/// (both on 127.0.0.1 inside the child's network namespace).
pub fn proxy_env(http_port: u16, socks_port: u16) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{http_port}");
    let socks = format!("socks5h://127.0.0.1:{socks_port}");
    let mut env = Vec::new();
    for name in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "CARGO_HTTP_PROXY",
    ] {
        env.push((name.to_owned(), http.clone()));
    }
    env.push(("ALL_PROXY".to_owned(), socks.clone()));
    env.push(("all_proxy".to_owned(), socks));
    // Nothing bypasses the proxy: the child's own loopback has nothing to reach but it.
    env.push(("NO_PROXY".to_owned(), String::new()));
    env.push(("no_proxy".to_owned(), String::new()));
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_common_variable_points_at_the_listeners() {
        let env = proxy_env(3128, 1080);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        for name in [
            "HTTP_PROXY",
            "https_proxy",
            "npm_config_https_proxy",
            "CARGO_HTTP_PROXY",
        ] {
            assert_eq!(get(name), Some("http://127.0.0.1:3128"), "{name}");
        }
        assert_eq!(get("ALL_PROXY"), Some("socks5h://127.0.0.1:1080"));
        assert_eq!(get("NO_PROXY"), Some(""));
    }
}
