//! The environment a proxy-mode child gets, so common tools find the proxy listeners inside
//! its namespace. The variables themselves are the sandbox crate's
//! (`zeroclaw_sandbox::plan::egress::proxy_env`), which sets them in the call's plan; this is
//! the daemon side's name for them.

use zeroclaw_sandbox::egress::handover::ProxyPorts;

/// `(name, value)` pairs for the HTTP proxy on `http_port` and SOCKS5 on `socks_port`
/// (both on 127.0.0.1 inside the child's network namespace).
pub fn proxy_env(http_port: u16, socks_port: u16) -> Vec<(String, String)> {
    zeroclaw_sandbox::plan::egress::proxy_env(ProxyPorts {
        http: http_port,
        socks: socks_port,
    })
}
