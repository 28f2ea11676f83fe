//! `network = proxy` in a call's plan (daemon side): which backends can do it (today the
//! namespace and bubblewrap backends; every other one refuses the profile with a clear error,
//! never a silent fallback to deny or allow), the fixed listener ports inside the child's
//! private network namespace, and the proxy variables of the command's environment.

use crate::backend::Backend;
use crate::egress_fds::ProxyPorts;
use crate::error::SandboxError;
use crate::plan::Plan;
use crate::profile::{Network, Profile};

/// Where the helper binds the proxy's listeners. The namespace is the call's own (only `lo`,
/// nothing else bound), so fixed ports cannot collide and the environment is known up front.
pub const PORTS: ProxyPorts = ProxyPorts {
    http: 3128,
    socks: 1080,
};

/// `(name, value)` pairs for the HTTP proxy on `ports.http` and SOCKS5 on `ports.socks` (both
/// on 127.0.0.1 inside the child's network namespace): the usual `*_PROXY` variables in both
/// cases, npm's and cargo's own, and `socks5h://` for `ALL_PROXY` (names are resolved by the
/// proxy: the child has no resolver).
pub fn proxy_env(ports: ProxyPorts) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{}", ports.http);
    let socks = format!("socks5h://127.0.0.1:{}", ports.socks);
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

/// Completes `plan` for a proxy-mode `profile` on `backend`, or refuses the backend.
pub(crate) fn apply(
    backend: Backend,
    profile: &Profile,
    plan: &mut Plan,
) -> Result<(), SandboxError> {
    if profile.network != Network::Proxy {
        return Ok(());
    }
    if !matches!(backend, Backend::Namespaces | Backend::Bubblewrap) {
        return Err(SandboxError::Profile(format!(
            "network proxy is not available on the {backend} backend: only the namespaces \
             and bubblewrap backends route a child through the egress proxy so far; use \
             network deny or allow, or one of those backends"
        )));
    }
    plan.unshare_net = true;
    plan.egress = Some(PORTS);
    for (name, value) in proxy_env(PORTS) {
        plan.env.retain(|(k, _)| k.as_os_str() != name.as_str());
        plan.env.push((name.into(), value.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_common_variable_points_at_the_listeners() {
        let env = proxy_env(ProxyPorts {
            http: 3128,
            socks: 1080,
        });
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

    #[test]
    fn only_the_network_namespace_backends_plan_a_proxy_call() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::for_workspace(dir.path()).network(Network::Proxy);
        for backend in [Backend::Namespaces, Backend::Bubblewrap] {
            let mut plan = crate::plan::build_on_host(backend, &profile, vec!["true".into()], None);
            apply(backend, &profile, &mut plan).unwrap();
            assert!(plan.unshare_net, "{backend:?}");
            assert_eq!(plan.egress, Some(PORTS), "{backend:?}");
            assert!(
                plan.env
                    .iter()
                    .any(|(k, v)| k == "HTTPS_PROXY" && v == "http://127.0.0.1:3128"),
                "{backend:?}"
            );
        }
        for backend in [Backend::Landlock, Backend::Seatbelt, Backend::None] {
            let mut plan = crate::plan::build_on_host(backend, &profile, vec!["true".into()], None);
            match apply(backend, &profile, &mut plan) {
                Err(SandboxError::Profile(msg)) => {
                    assert!(msg.contains("network proxy is not available"), "{msg}")
                }
                other => panic!("{backend:?} planned a proxy call: {other:?}"),
            }
        }
    }
}
