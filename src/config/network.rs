//! `[sandbox.network]` (and its per-agent replacement `[agents.<alias>.network]`): the egress
//! configuration the network policy (`crate::egress`) is built from and checked by.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::credential::CredentialConfig;

/// How a tool child may reach the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// Only `lo` in the child's network namespace: no network at all.
    #[default]
    Deny,
    /// Only zeroclaw's egress proxy, which admits the names and addresses the policy allows.
    Proxy,
    /// The host's network.
    Allow,
}

impl NetworkMode {
    /// The name used in config files and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Deny => "deny",
            NetworkMode::Proxy => "proxy",
            NetworkMode::Allow => "allow",
        }
    }
}

/// `[sandbox.network]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    pub mode: NetworkMode,
    /// Exact names (`registry.example`) and `*.suffix` wildcards (names under `suffix`).
    pub allow_domains: Vec<String>,
    /// Same patterns; a match here refuses even a name `allow_domains` admits.
    pub deny_domains: Vec<String>,
    /// Destination ports the proxy connects to.
    pub allow_ports: Vec<u16>,
    /// Addresses (`10.1.2.3`, `fd00::/8`) the proxy may connect to: IP-literal destinations,
    /// and resolved addresses of a refused class (loopback, private, link-local, ...).
    pub allow_cidrs: Vec<String>,
    /// `name:port` destinations relayed as raw bytes (no TLS or HTTP check), e.g.
    /// `git.example:22`; the name may be a `*.suffix` pattern; ports 80 and 443 keep their
    /// checks (list those names in `allow_domains`).
    pub allow: Vec<String>,
    /// Names the proxy resolves to a fixed address instead of asking DNS (like curl's
    /// `--resolve`); the address is still checked against the policy.
    pub hosts: BTreeMap<String, String>,
    /// Secrets the proxy injects for their hosts (daemon-wide; see
    /// [`super::credential::CredentialConfig`]).
    pub credentials: Vec<CredentialConfig>,
    /// PEM files of CAs the proxy trusts, besides the system roots, when it verifies the
    /// upstream of an intercepted (credential-bound) host; also in the child's merged CA
    /// bundle (made when there are credentials).
    pub extra_ca_files: Vec<String>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        NetworkConfig {
            mode: NetworkMode::Deny,
            allow_domains: Vec::new(),
            deny_domains: Vec::new(),
            allow_ports: vec![443, 80],
            allow_cidrs: Vec::new(),
            allow: Vec::new(),
            hosts: BTreeMap::new(),
            credentials: Vec::new(),
            extra_ca_files: Vec::new(),
        }
    }
}

/// `[agents.<alias>.network]`: each key set here replaces the `[sandbox.network]` one, so the
/// operator can narrow or widen one agent's network (`hosts`, `credentials` and
/// `extra_ca_files` stay daemon-wide).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkOverride {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<NetworkMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_domains: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny_domains: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_ports: Option<Vec<u16>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_cidrs: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
}

impl NetworkConfig {
    /// This config with an agent's override applied.
    pub fn with_override(&self, o: Option<&NetworkOverride>) -> NetworkConfig {
        let Some(o) = o else {
            return self.clone();
        };
        NetworkConfig {
            mode: o.mode.unwrap_or(self.mode),
            allow_domains: o
                .allow_domains
                .clone()
                .unwrap_or(self.allow_domains.clone()),
            deny_domains: o.deny_domains.clone().unwrap_or(self.deny_domains.clone()),
            allow_ports: o.allow_ports.clone().unwrap_or(self.allow_ports.clone()),
            allow_cidrs: o.allow_cidrs.clone().unwrap_or(self.allow_cidrs.clone()),
            allow: o.allow.clone().unwrap_or(self.allow.clone()),
            hosts: self.hosts.clone(),
            credentials: self.credentials.clone(),
            extra_ca_files: self.extra_ca_files.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{CONFIG_FILE_NAME, Config, NetworkMode};

    const AGENT: &str = "[providers.p]\nbase_url = \"http://127.0.0.1:1\"\n\
        [agents.a]\nprovider = \"p\"\nmodel = \"m\"\n";

    fn load(toml: &str) -> Result<Config, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE_NAME), toml).unwrap();
        Config::load_with_env(dir.path(), Vec::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn the_defaults_deny_with_web_ports() {
        let config = load("").unwrap();
        assert_eq!(config.sandbox.network.mode, NetworkMode::Deny);
        assert_eq!(config.sandbox.network.allow_ports, vec![443, 80]);
    }

    #[test]
    fn an_unknown_key_is_an_error_naming_it() {
        let msg = load("[sandbox.network]\nallow_domain = [\"x.example\"]\n").unwrap_err();
        assert!(msg.contains("`sandbox.network.allow_domain`"), "{msg}");
        let msg = load(&format!("{AGENT}[agents.a.network]\nhosts = {{}}\n")).unwrap_err();
        assert!(msg.contains("`agents.a.network.hosts`"), "{msg}");
    }

    #[test]
    fn a_credential_secret_file_open_to_others_fails_the_load_naming_its_key() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "t0ken\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let toml = format!(
            "[sandbox.network]\nmode = \"proxy\"\n[[sandbox.network.credentials]]\n\
             name = \"gh\"\nhosts = [\"api.example\"]\ninject = \"replace\"\n\
             value_file = \"{}\"\n",
            file.display()
        );
        let msg = load(&toml).unwrap_err();
        assert!(
            msg.contains("`sandbox.network.credentials[0].value_file`") && msg.contains("mode 640"),
            "{msg}"
        );
        let msg =
            load("[sandbox.network]\nextra_ca_files = [\"/nonexistent/ca.pem\"]\n").unwrap_err();
        assert!(msg.contains("`sandbox.network.extra_ca_files[0]`"), "{msg}");
    }

    #[test]
    fn a_malformed_pattern_is_an_error_naming_its_key() {
        let msg = load("[sandbox.network]\nallow_domains = [\"ok.example\", \"bad..example\"]\n")
            .unwrap_err();
        assert!(msg.contains("`sandbox.network.allow_domains[1]`"), "{msg}");
        let msg = load(&format!(
            "{AGENT}[agents.a.network]\nallow_cidrs = [\"10.0.0.1/8\"]\n"
        ))
        .unwrap_err();
        assert!(msg.contains("`agents.a.network.allow_cidrs[0]`"), "{msg}");
        assert!(msg.contains("10.0.0.0/8"), "{msg}");
    }

    #[test]
    fn mode_allow_gives_tool_children_the_network_and_an_agent_can_be_narrowed() {
        let config = load(&format!(
            "[sandbox.network]\nmode = \"allow\"\n{AGENT}[agents.b]\nprovider = \"p\"\n\
             model = \"m\"\n[agents.b.network]\nmode = \"deny\"\n"
        ))
        .unwrap();
        assert!(crate::policy::Policy::for_agent(&config, "a").network);
        assert!(!crate::policy::Policy::for_agent(&config, "b").network);
        assert!(!crate::policy::Policy::for_agent(&load("").unwrap(), "default").network);
    }

    #[test]
    fn proxy_mode_gives_tool_children_the_egress_policy_and_never_the_host_network() {
        let config = load(&format!(
            "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"registry.example\"]\n\
             {AGENT}[agents.b]\nprovider = \"p\"\nmodel = \"m\"\n\
             [agents.b.network]\nmode = \"deny\"\n"
        ))
        .unwrap();
        let a = crate::policy::Policy::for_agent(&config, "a");
        assert!(!a.network);
        let egress = a.egress.as_ref().expect("proxy mode has an egress policy");
        assert_eq!(egress.mode, NetworkMode::Proxy);
        let profile = a.profile(std::path::Path::new("/tmp"), &[]);
        assert_eq!(profile.network, zeroclaw_sandbox::Network::Proxy);
        let b = crate::policy::Policy::for_agent(&config, "b");
        assert!(b.egress.is_none() && !b.network);
        let readonly = crate::policy::Policy::for_session(
            &config,
            "a",
            Some(crate::config::AutonomyLevel::ReadOnly),
        );
        assert!(
            readonly.egress.is_none() && !readonly.network,
            "readonly: no network"
        );
    }

    #[test]
    fn an_agent_override_replaces_only_the_keys_it_sets() {
        let config = load(&format!(
            "[sandbox.network]\nmode = \"allow\"\nallow_domains = [\"registry.example\"]\n\
             hosts = {{ \"registry.example\" = \"127.0.0.1\" }}\n\
             {AGENT}[agents.a.network]\nallow_domains = [\"*.registry.example\"]\n"
        ))
        .unwrap();
        let agent = &config.agents["a"];
        let net = config.sandbox.network.with_override(agent.network.as_ref());
        assert_eq!(net.mode, NetworkMode::Allow);
        assert_eq!(net.allow_domains, vec!["*.registry.example".to_owned()]);
        assert_eq!(net.hosts["registry.example"], "127.0.0.1");
    }
}
