//! `network = proxy` in a call's plan (daemon side): which backends can do it and how — the
//! namespace and bubblewrap backends with fixed listener ports inside the child's private
//! network namespace (the helper, or bubblewrap's inner stage, binds them there); the Landlock-only and Seatbelt rungs, which have no network
//! namespace, with listeners the launcher binds on the host's loopback at ephemeral ports
//! ([`on_host`], called by `egress::launch::bind_on_host`) and rules that let the child connect
//! to those two ports only; every other backend refuses the profile with a clear error, never
//! a silent fallback to deny or allow — and the proxy variables of the command's environment.
//!
//! Transparent egress (the namespace and bubblewrap backends, [`transparent`]): the helper (or
//! bubblewrap's inner stage, which bwrap then keeps `CAP_NET_ADMIN` and
//! `CAP_NET_BIND_SERVICE` for) also makes every IPv4 address local to `lo` and binds the DNS
//! stub's socket and one listener per destination port (`Profile::egress_ports`), and the
//! child's `/etc/hosts` and `/etc/resolv.conf` are replaced (localhost only; the stub on
//! 127.0.0.1), so a program that ignores the proxy variables still resolves through the
//! policy and connects through the proxy. Bubblewrap's inner stage holds those capabilities
//! over bwrap's namespaces when root launched, over a network namespace of its own when
//! another user did (`helper::backends::bubblewrap`); only a setuid-root bwrap launched by
//! another user (it refuses `--cap-add`) keeps the proxy variables only, like the
//! Landlock-only and Seatbelt rungs (whose child can connect to the proxy's two ports and
//! nothing else).

use crate::backend::Backend;
use crate::error::SandboxError;
use crate::plan::{LANDLOCK_NET_ABI, Plan, ProxyPorts};
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

/// Completes `plan` for a proxy-mode `profile` on `backend`, or refuses the backend;
/// `landlock_abi`, the host's (read with the plan's facts, `HostFacts::landlock_abi`).
pub(crate) fn apply(
    backend: Backend,
    profile: &Profile,
    landlock_abi: u32,
    plan: &mut Plan,
) -> Result<(), SandboxError> {
    if profile.network != Network::Proxy {
        return Ok(());
    }
    match backend {
        Backend::Namespaces | Backend::Bubblewrap => {
            transparent(profile, plan);
            plan.egress.own_namespace = true;
            plan.egress.ports = Some(PORTS);
            set_env(plan, PORTS);
            Ok(())
        }
        Backend::Landlock => {
            landlock_has_tcp_rules(landlock_abi)?;
            // The TCP rules, the seccomp switch, the ports and the environment follow once the
            // launcher bound the listeners ([`on_host`]).
            plan.egress.on_host = true;
            plan.landlock.deny_network = true;
            Ok(())
        }
        Backend::Seatbelt => {
            plan.egress.on_host = true;
            Ok(())
        }
        Backend::None => Err(SandboxError::Profile(format!(
            "network proxy is not available on the {backend} backend: only the namespaces, \
             bubblewrap, landlock and seatbelt backends route a child through the egress \
             proxy; use network deny or allow, or another backend"
        ))),
    }
}

/// The child's `/etc/hosts` under transparent egress: no host name but `localhost`.
pub const HOSTS: &str = "127.0.0.1\tlocalhost\n::1\tlocalhost\n";
/// The child's `/etc/resolv.conf` under transparent egress: the DNS stub only.
pub const RESOLV_CONF: &str = "nameserver 127.0.0.1\noptions attempts:1\n";

/// Plans transparent egress for a proxy call with a network namespace: the ports, the files.
fn transparent(profile: &Profile, plan: &mut Plan) {
    plan.egress.transparent = Some(profile.egress_ports.clone());
    for (path, contents) in [("/etc/hosts", HOSTS), ("/etc/resolv.conf", RESOLV_CONF)] {
        plan.mounts.push(crate::plan::MountOp::File {
            path: path.into(),
            contents: contents.to_owned(),
        });
    }
}

/// The Landlock-only rung keeps a proxy call to its listeners with Landlock's TCP rules: a
/// kernel without them (ABI < 4) is refused, never run with less.
fn landlock_has_tcp_rules(abi: u32) -> Result<(), SandboxError> {
    if abi >= LANDLOCK_NET_ABI {
        return Ok(());
    }
    Err(SandboxError::Profile(format!(
        "network proxy on the landlock backend needs Landlock ABI {LANDLOCK_NET_ABI} (TCP \
         rules, Linux >= 6.7); this kernel has ABI {abi}: use network deny or allow, or the \
         namespaces backend"
    )))
}

/// Fills in a host-loopback proxy call (`plan.egress.on_host`) once its listeners are bound
/// at `ports`: the environment, and the only TCP destinations of the Landlock-only rung's
/// ruleset and supervisor (the Seatbelt profile reads `plan.egress.ports`).
pub(crate) fn on_host(plan: &mut Plan, ports: ProxyPorts) {
    debug_assert!(plan.egress.on_host);
    plan.egress.ports = Some(ports);
    if plan.backend == Backend::Landlock {
        plan.landlock.connect_tcp = vec![ports.http, ports.socks];
        plan.seccomp.proxy_only = Some(ports);
    }
    set_env(plan, ports);
}

/// Whether `plan` is a proxy call (its listeners go to the async launcher).
pub(crate) fn proxied(plan: &Plan) -> bool {
    plan.egress.ports.is_some() || plan.egress.on_host
}

fn set_env(plan: &mut Plan, ports: ProxyPorts) {
    for (name, value) in proxy_env(ports) {
        plan.env.retain(|(k, _)| k.as_os_str() != name.as_str());
        plan.env.push((name.into(), value.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::MountOp;

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

    fn host_abi() -> u32 {
        crate::sys::landlock_abi().unwrap_or(0)
    }

    #[test]
    fn the_network_namespace_backends_plan_fixed_ports_in_their_own_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::for_workspace(dir.path()).network(Network::Proxy);
        for backend in [Backend::Namespaces, Backend::Bubblewrap] {
            let mut plan = crate::plan::build_on_host(backend, &profile, vec!["true".into()], None);
            apply(backend, &profile, host_abi(), &mut plan).unwrap();
            assert!(
                plan.egress.own_namespace && !plan.egress.on_host,
                "{backend:?}"
            );
            assert_eq!(plan.egress.ports, Some(PORTS), "{backend:?}");
            let files = plan
                .mounts
                .iter()
                .filter(|op| matches!(op, MountOp::File { .. }));
            assert!(plan.egress.transparent.is_some(), "{backend:?}");
            assert_eq!(files.count(), 2, "{backend:?}");
            assert!(
                plan.env
                    .iter()
                    .any(|(k, v)| k == "HTTPS_PROXY" && v == "http://127.0.0.1:3128"),
                "{backend:?}"
            );
        }
    }

    #[test]
    fn the_landlock_rung_connects_to_the_host_listeners_only() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::for_workspace(dir.path()).network(Network::Proxy);
        let mut plan =
            crate::plan::build_on_host(Backend::Landlock, &profile, vec!["true".into()], None);
        match apply(Backend::Landlock, &profile, host_abi(), &mut plan) {
            Ok(()) => {}
            Err(SandboxError::Profile(msg))
                if crate::sys::landlock_abi().unwrap_or(0) < LANDLOCK_NET_ABI =>
            {
                assert!(msg.contains("needs Landlock ABI 4"), "{msg}");
                return;
            }
            other => panic!("{other:?}"),
        }
        assert!(plan.egress.on_host && plan.landlock.deny_network);
        assert!(plan.egress.ports.is_none() && plan.landlock.connect_tcp.is_empty());
        let ports = ProxyPorts {
            http: 40001,
            socks: 40002,
        };
        on_host(&mut plan, ports);
        assert_eq!(plan.egress.ports, Some(ports));
        assert_eq!(plan.landlock.connect_tcp, vec![40001, 40002]);
        assert_eq!(plan.seccomp.proxy_only, Some(ports));
        assert!(!plan.seccomp.deny_inet);
        let proxy = plan.env.iter().filter(|(k, _)| k == "HTTPS_PROXY");
        let values: Vec<_> = proxy.map(|(_, v)| v.clone()).collect();
        assert_eq!(
            values,
            vec![std::ffi::OsString::from("http://127.0.0.1:40001")]
        );
    }

    #[test]
    fn a_kernel_without_landlock_tcp_rules_is_refused() {
        for abi in [0, 1, 3] {
            match landlock_has_tcp_rules(abi) {
                Err(SandboxError::Profile(msg)) => assert!(
                    msg.contains("needs Landlock ABI 4") && msg.contains(&format!("ABI {abi}:")),
                    "{msg}"
                ),
                other => panic!("ABI {abi}: {other:?}"),
            }
        }
        assert!(landlock_has_tcp_rules(4).is_ok() && landlock_has_tcp_rules(7).is_ok());
    }

    #[test]
    fn seatbelt_plans_host_listeners_and_none_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let profile = Profile::for_workspace(dir.path()).network(Network::Proxy);
        let mut plan =
            crate::plan::build_on_host(Backend::Seatbelt, &profile, vec!["true".into()], None);
        apply(Backend::Seatbelt, &profile, host_abi(), &mut plan).unwrap();
        assert!(plan.egress.on_host && proxied(&plan));
        let mut plan =
            crate::plan::build_on_host(Backend::None, &profile, vec!["true".into()], None);
        match apply(Backend::None, &profile, host_abi(), &mut plan) {
            Err(SandboxError::Profile(msg)) => {
                assert!(msg.contains("network proxy is not available"), "{msg}")
            }
            other => panic!("none planned a proxy call: {other:?}"),
        }
    }
}
