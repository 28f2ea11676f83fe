//! Pure generator of the macOS Seatbelt (SBPL) profile for a plan: deny by default, read the
//! read-only roots, write the writable roots and the private temp dir, protected paths and
//! denied paths excluded, network only when allowed — or, in proxy mode, outbound TCP to the
//! egress proxy's two ports on `localhost` only. The `sandbox-exec` call itself sits in the
//! helper behind `cfg(target_os = "macos")`. Generated and unit-tested here; it runs only on
//! macOS, which our CI does not have.

use std::fmt::Write;
use std::path::Path;

use crate::plan::Plan;

fn quote(p: &Path) -> String {
    let s = p.display().to_string();
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The SBPL text for `plan`.
pub fn profile(plan: &Plan) -> String {
    let mut s = String::from("(version 1)\n(deny default)\n");
    s.push_str("(allow process-exec process-fork signal (target same-sandbox))\n");
    s.push_str("(allow sysctl-read mach-lookup (global-name \"com.apple.system.logger\"))\n");
    s.push_str("(allow file-read-metadata)\n");
    s.push_str("(allow file-read* file-write* (literal \"/dev/null\") (literal \"/dev/zero\"))\n");
    s.push_str("(allow file-read* (literal \"/dev/urandom\") (literal \"/dev/random\"))\n");
    for p in &plan.landlock.read {
        let _ = writeln!(s, "(allow file-read* process-exec (subpath {}))", quote(p));
    }
    for p in &plan.landlock.write {
        let _ = writeln!(s, "(allow file-read* file-write* (subpath {}))", quote(p));
    }
    for p in &plan.protected {
        let _ = writeln!(s, "(deny file-write* (subpath {}))", quote(p));
    }
    for p in &plan.denied {
        let _ = writeln!(s, "(deny file-read* file-write* (subpath {}))", quote(p));
    }
    match plan.egress.ports {
        Some(ports) if plan.egress.on_host => {
            // Proxy mode: outbound TCP to the two listeners the launcher bound on the host's
            // loopback, nothing else (no other port, no UDP, no name service, no inbound).
            s.push_str("(deny network*)\n");
            for port in [ports.http, ports.socks] {
                let _ = writeln!(
                    s,
                    "(allow network-outbound (remote tcp \"localhost:{port}\"))"
                );
            }
        }
        _ if plan.egress.own_namespace => s.push_str("(deny network*)\n"),
        _ => s.push_str("(allow network*)\n"),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Backend;
    use crate::profile::{Network, Profile};

    fn sbpl(p: &Profile) -> String {
        profile(&crate::plan::build_on_host(
            Backend::Seatbelt,
            p,
            vec!["true".into()],
            Some("/private/tmp/zc-1".into()),
        ))
    }

    #[test]
    fn denies_by_default_and_allows_the_workspace() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let s = sbpl(&Profile::for_workspace(&ws));
        assert!(s.starts_with("(version 1)\n(deny default)\n"));
        assert!(s.contains(&format!(
            "(allow file-read* file-write* (subpath \"{}\"))",
            ws.display()
        )));
        assert!(s.contains("(allow file-read* process-exec (subpath \"/usr\"))"));
    }

    #[test]
    fn protected_and_denied_paths_come_after_the_allows() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let s = sbpl(&Profile::for_workspace(&ws));
        let hooks = format!(
            "(deny file-write* (subpath \"{}\"))",
            ws.join(".git/hooks").display()
        );
        assert!(s.find(&hooks).unwrap() > s.find("(allow file-read* file-write*").unwrap());
        assert!(s.contains("(deny file-read* file-write* (subpath \"/etc/shadow\"))"));
    }

    #[test]
    fn network_follows_the_profile() {
        let d = tempfile::tempdir().unwrap();
        assert!(sbpl(&Profile::for_workspace(d.path())).contains("(deny network*)"));
        let open = sbpl(&Profile::for_workspace(d.path()).network(Network::Allow));
        assert!(open.contains("(allow network*)") && !open.contains("(deny network*)"));
    }

    #[test]
    fn proxy_mode_reaches_only_the_two_listeners() {
        let d = tempfile::tempdir().unwrap();
        let proxy = Profile::for_workspace(d.path()).network(Network::Proxy);
        let mut plan = crate::plan::build_on_host(
            Backend::Seatbelt,
            &proxy,
            vec!["true".into()],
            Some("/private/tmp/zc-1".into()),
        );
        crate::plan::egress::apply(Backend::Seatbelt, &proxy, 0, &mut plan).unwrap();
        let ports = crate::egress::handover::ProxyPorts {
            http: 40001,
            socks: 40002,
        };
        crate::plan::egress::on_host(&mut plan, ports);
        let s = profile(&plan);
        let network: Vec<&str> = s
            .lines()
            .filter(|l| l.starts_with("(allow network") || l.starts_with("(deny network"))
            .collect();
        assert_eq!(
            network,
            [
                "(deny network*)",
                "(allow network-outbound (remote tcp \"localhost:40001\"))",
                "(allow network-outbound (remote tcp \"localhost:40002\"))",
            ],
            "{s}"
        );
        // Deny by default comes first: nothing above allows the network.
        assert!(s.starts_with("(version 1)\n(deny default)\n"));
        assert!(!s.contains("(allow network*)"));
    }

    #[test]
    fn quotes_are_escaped() {
        assert_eq!(quote(Path::new("/a\"b")), "\"/a\\\"b\"");
    }
}
