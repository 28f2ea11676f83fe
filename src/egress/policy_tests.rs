//! Unit tests of the egress matcher.

use super::*;

fn policy(f: impl FnOnce(&mut NetworkConfig)) -> EgressPolicy {
    let mut config = NetworkConfig {
        mode: NetworkMode::Proxy,
        ..NetworkConfig::default()
    };
    f(&mut config);
    EgressPolicy::from_config(&config).unwrap()
}

fn name(s: &str) -> Host {
    Host::parse(s).unwrap()
}

#[test]
fn exact_and_wildcard_names_are_allowed_with_their_rule() {
    let p =
        policy(|c| c.allow_domains = vec!["registry.example".into(), "*.registry.example".into()]);
    let d = p.check_target(&name("registry.example"), 443);
    assert_eq!(
        d,
        Decision::allow(Rule::AllowDomain("registry.example".into()))
    );
    let d = p.check_target(&name("Files.Registry.Example"), 443);
    assert_eq!(
        d,
        Decision::allow(Rule::AllowDomain("*.registry.example".into()))
    );
    let d = p.check_target(&name("other.example"), 443);
    assert_eq!(d, Decision::refuse(Rule::NotInAllowDomains));
    assert_eq!(d.rule.to_string(), "not in allow_domains");
}

#[test]
fn deny_wins_over_allow() {
    let p = policy(|c| {
        c.allow_domains = vec!["*.registry.example".into()];
        c.deny_domains = vec!["upload.registry.example".into()];
    });
    let d = p.check_target(&name("upload.registry.example"), 443);
    assert_eq!(
        d,
        Decision::refuse(Rule::DenyDomain("upload.registry.example".into()))
    );
    assert!(p.check_target(&name("files.registry.example"), 443).allowed);
}

#[test]
fn ports_outside_allow_ports_are_refused_for_names_and_addresses() {
    let p = policy(|c| {
        c.allow_domains = vec!["registry.example".into()];
        c.allow_cidrs = vec!["10.0.0.0/8".into()];
    });
    assert!(p.check_target(&name("registry.example"), 80).allowed);
    let d = p.check_target(&name("registry.example"), 22);
    assert_eq!(d, Decision::refuse(Rule::PortNotAllowed(22)));
    assert!(!p.check_target(&name("10.1.2.3"), 22).allowed);
}

#[test]
fn ip_literals_need_an_allow_cidrs_entry() {
    let p = policy(|c| c.allow_cidrs = vec!["10.0.0.0/8".into(), "2001:db8::1".into()]);
    let d = p.check_target(&name("10.9.9.9"), 443);
    assert_eq!(d, Decision::allow(Rule::AllowCidr("10.0.0.0/8".into())));
    assert!(p.check_target(&name("[2001:db8::1]"), 443).allowed);
    let d = p.check_target(&name("93.184.215.14"), 443);
    assert_eq!(d, Decision::refuse(Rule::IpNotInAllowCidrs));
    // An IPv4-mapped IPv6 literal is not judged at all: it is refused as written.
    assert_eq!(
        Host::parse("::ffff:11.0.0.1").unwrap_err().id(),
        "noncanonical_ip"
    );
}

#[test]
fn resolved_addresses_of_refused_classes_need_a_cidr() {
    let p = policy(|_| {});
    for addr in [
        "127.0.0.1",
        "10.0.0.1",
        "::1",
        "fd00::1",
        "169.254.169.254",
        "::ffff:127.0.0.1",
    ] {
        let d = p.check_address(addr.parse().unwrap());
        assert!(!d.allowed, "{addr} allowed");
        assert!(
            d.rule.to_string().contains("refused unless allow_cidrs"),
            "{}",
            d.rule
        );
    }
    assert_eq!(
        p.check_address("93.184.215.14".parse().unwrap()),
        Decision::allow(Rule::PublicAddress)
    );
    let p = policy(|c| c.allow_cidrs = vec!["127.0.0.1/32".into()]);
    assert!(p.check_address("127.0.0.1".parse().unwrap()).allowed);
    assert!(!p.check_address("127.0.0.2".parse().unwrap()).allowed);
}

#[test]
fn malformed_entries_name_their_key() {
    let bad = |f: fn(&mut NetworkConfig)| {
        let mut c = NetworkConfig::default();
        f(&mut c);
        EgressPolicy::from_config(&c).unwrap_err()
    };
    assert_eq!(
        bad(|c| c.allow_domains = vec!["ok.example".into(), "a..b".into()]).0,
        "allow_domains[1]"
    );
    assert_eq!(
        bad(|c| c.deny_domains = vec!["*".into()]).0,
        "deny_domains[0]"
    );
    assert_eq!(bad(|c| c.allow_ports = vec![0]).0, "allow_ports[0]");
    assert_eq!(
        bad(|c| c.allow_cidrs = vec!["10.0.0.1/8".into()]).0,
        "allow_cidrs[0]"
    );
    assert_eq!(
        bad(|c| c.allow_cidrs = vec!["ten".into()]).0,
        "allow_cidrs[0]"
    );
    let e = bad(|c| {
        c.hosts.insert("registry.example".into(), "nowhere".into());
    });
    assert_eq!(e.0, "hosts.registry.example");
}

#[test]
fn the_hosts_map_fixes_addresses_by_normalized_name() {
    let p = policy(|c| {
        c.hosts
            .insert("Registry.Example".into(), "127.0.0.1".into());
    });
    assert_eq!(
        p.fixed_address("registry.example"),
        Some("127.0.0.1".parse().unwrap())
    );
    assert_eq!(p.fixed_address("other.example"), None);
}

#[test]
fn an_allow_entry_admits_its_name_at_its_port_only_and_deny_still_wins() {
    let p = policy(|c| {
        c.allow = vec!["git.example:22".into(), "*.db.example:5432".into()];
        c.deny_domains = vec!["bad.db.example".into()];
    });
    let listed = Rule::AllowListed("git.example:22".into());
    assert_eq!(
        p.check_target(&name("Git.Example"), 22),
        Decision::allow(listed)
    );
    assert_eq!(
        p.check_target(&name("eu.db.example"), 5432).rule.id(),
        "allow"
    );
    assert_eq!(
        p.check_target(&name("git.example"), 2222),
        Decision::refuse(Rule::PortNotAllowed(2222))
    );
    assert_eq!(
        p.check_target(&name("git.example"), 443),
        Decision::refuse(Rule::NotInAllowDomains)
    );
    assert_eq!(
        p.check_target(&name("other.example"), 22),
        Decision::refuse(Rule::PortNotAllowed(22))
    );
    assert_eq!(
        p.check_target(&name("bad.db.example"), 5432),
        Decision::refuse(Rule::DenyDomain("bad.db.example".into()))
    );
    assert_eq!(p.ports(), vec![443, 80, 22, 5432]);
    assert!(p.check_name("git.example").allowed);
    assert!(!p.check_name("other.example").allowed);
}

#[test]
fn a_malformed_allow_entry_names_its_key() {
    for (entry, why) in [
        ("git.example", "not `name:port`"),
        ("git.example:0", "not a port"),
        ("git.example:ssh", "not a port"),
        ("site.example:443", "allow_domains instead"),
        ("site.example:80", "allow_domains instead"),
        ("10.0.0.1:22", ""),
    ] {
        let c = NetworkConfig {
            allow: vec![entry.into()],
            ..NetworkConfig::default()
        };
        let (key, msg) = EgressPolicy::from_config(&c).unwrap_err();
        assert_eq!(key, "allow[0]", "{entry}");
        assert!(msg.contains(why), "{entry}: {msg}");
    }
}
