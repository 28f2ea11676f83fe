//! The credentials of one session: a placeholder per credential
//! (`zeroclaw-placeholder-<name>-<random>`, new for each session), the session's CA, and a
//! directory the child reads holding the CA certificate and a merged bundle (the system roots,
//! `extra_ca_files` and the session CA). [`Session::apply`] gives a call's profile the
//! placeholders and the CA variables; the secrets stay in the daemon.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::{ClientConfig, ServerConfig};
use zeroclaw_sandbox::Profile;

use super::ca::SessionCa;
use super::credential::Credential;
use super::roots;

/// The prefix of every placeholder.
pub const PLACEHOLDER_PREFIX: &str = "zeroclaw-placeholder-";

/// Variables pointing tools at the merged bundle (Node's takes the session CA alone: it adds
/// to its own roots).
const BUNDLE_VARS: &[&str] = &[
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "GIT_SSL_CAINFO",
    "CARGO_HTTP_CAINFO",
    "PIP_CERT",
];

/// A credential and its placeholder in this session.
#[derive(Debug)]
pub struct Bound {
    pub credential: Credential,
    pub placeholder: String,
}

/// One session's credentials (dropped with the session: its CA key goes, its directory is
/// removed).
pub struct Session {
    bound: Vec<Bound>,
    ca: SessionCa,
    dir: PathBuf,
    upstream: Arc<ClientConfig>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("bound", &self.bound)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The session state of a policy's `credentials` (`EgressPolicy::credentials`), trusting
    /// `extra_cas` (PEM texts) besides the system roots; `None` when there are none.
    pub fn start(
        credentials: &[Credential],
        extra_cas: &[String],
    ) -> io::Result<Option<Arc<Session>>> {
        if credentials.is_empty() {
            return Ok(None);
        }
        let bound = credentials
            .iter()
            .map(|c| {
                Ok(Bound {
                    credential: c.clone(),
                    placeholder: format!("{PLACEHOLDER_PREFIX}{}-{}", c.name, random_hex(12)?),
                })
            })
            .collect::<io::Result<Vec<Bound>>>()?;
        let hosts: Vec<_> = bound.iter().flat_map(|b| &b.credential.hosts).collect();
        let ca = SessionCa::new(&hosts).map_err(io::Error::other)?;
        let system = roots::system_bundle();
        let upstream = roots::upstream_config(&system, extra_cas);
        let dir = std::env::temp_dir().join(format!("zeroclaw-session-ca-{}", random_hex(8)?));
        write_dir(&dir, &ca, &system, extra_cas)?;
        Ok(Some(Arc::new(Session {
            bound,
            ca,
            dir,
            upstream,
        })))
    }

    /// `profile` with the placeholders and the CA variables set, and the CA directory
    /// readable.
    pub fn apply(&self, mut profile: Profile) -> Profile {
        for (name, value) in self.child_env() {
            profile = profile.set_env(name, value);
        }
        profile.allow_read(&self.dir)
    }

    /// The child's variables: each credential's placeholder and the CA bundle's paths.
    pub fn child_env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .bound
            .iter()
            .map(|b| (b.credential.env.clone(), b.placeholder.clone()))
            .collect();
        let bundle = self.bundle_path().display().to_string();
        for var in BUNDLE_VARS {
            env.push(((*var).to_owned(), bundle.clone()));
        }
        let ca = self.dir.join("session-ca.pem").display().to_string();
        env.push(("NODE_EXTRA_CA_CERTS".to_owned(), ca));
        env
    }

    /// The merged bundle the child trusts.
    pub fn bundle_path(&self) -> PathBuf {
        self.dir.join("ca-bundle.pem")
    }

    /// Every credential of the session with its placeholder.
    pub fn bound(&self) -> &[Bound] {
        &self.bound
    }

    /// The credentials whose secret may go to `name`.
    pub fn bound_to(&self, name: &str) -> Vec<&Bound> {
        self.bound
            .iter()
            .filter(|b| b.credential.binds(name))
            .collect()
    }

    /// The TLS server config the proxy shows the child for `name`.
    pub fn server_config(&self, name: &str) -> Result<Arc<ServerConfig>, String> {
        self.ca.server_config(name)
    }

    /// The TLS client config verifying real upstreams.
    pub fn upstream(&self) -> Arc<ClientConfig> {
        self.upstream.clone()
    }

    /// The session CA's certificate, PEM.
    pub fn ca_pem(&self) -> String {
        self.ca.pem()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes the session CA and the merged bundle into a new `dir` (public: certificates only).
fn write_dir(dir: &Path, ca: &SessionCa, system: &str, extra: &[String]) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o755).create(dir)?;
    let ca_pem = ca.pem();
    let mut bundle = String::with_capacity(system.len() + ca_pem.len() + 64);
    for part in std::iter::once(system)
        .chain(extra.iter().map(String::as_str))
        .chain(std::iter::once(ca_pem.as_str()))
    {
        bundle.push_str(part);
        if !bundle.ends_with('\n') {
            bundle.push('\n');
        }
    }
    let written = std::fs::write(dir.join("session-ca.pem"), &ca_pem)
        .and_then(|()| std::fs::write(dir.join("ca-bundle.pem"), bundle));
    if written.is_err() {
        let _ = std::fs::remove_dir_all(dir);
    }
    written
}

fn random_hex(bytes: usize) -> io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| io::Error::other(format!("no random bytes: {e}")))?;
    Ok(hex::encode(buf))
}

/// Where an agent session keeps its credentials: started when the session is created (a
/// loaded session: at its first proxied call), then shared by all its calls (and dropped with
/// the session).
#[derive(Debug, Clone, Default)]
pub struct Slot(Arc<std::sync::OnceLock<Result<Option<Arc<Session>>, String>>>);

impl Slot {
    /// The session's credentials (started now if this is its first proxied call).
    pub fn get(
        &self,
        credentials: &[Credential],
        extra_cas: &[String],
    ) -> Result<Option<Arc<Session>>, String> {
        self.0
            .get_or_init(|| {
                Session::start(credentials, extra_cas)
                    .map_err(|e| format!("credentials: cannot start: {e}"))
            })
            .clone()
    }
}
