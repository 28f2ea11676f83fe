//! What the proxy trusts when it verifies the real upstream of an intercepted host (the
//! system's CA bundle, else the bundled Mozilla roots, plus `[sandbox.network]
//! extra_ca_files`), and the system bundle the child's merged bundle starts from.

use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{ClientConfig, RootCertStore};

/// Where distributions keep the system's CA bundle.
const SYSTEM_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The crypto provider of the proxy's TLS (ring, as the rest of the daemon).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The system's CA bundle (PEM), or empty when none is found.
pub fn system_bundle() -> String {
    SYSTEM_BUNDLES
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default()
}

/// The certificates of a PEM text (an error when it holds none or one does not parse).
pub fn parse_pem(pem: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a PEM certificate file: {e}"))?;
    if certs.is_empty() {
        return Err("holds no PEM certificate".into());
    }
    Ok(certs)
}

/// The TLS client config for intercepted upstreams: system roots and `extra` (PEM texts,
/// checked at load), HTTP/1.1.
pub fn upstream_config(system: &str, extra: &[String]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    let system_certs = CertificateDer::pem_slice_iter(system.as_bytes()).filter_map(Result::ok);
    let (added, _) = roots.add_parsable_certificates(system_certs);
    if added == 0 {
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    }
    for pem in extra {
        let certs = CertificateDer::pem_slice_iter(pem.as_bytes()).filter_map(Result::ok);
        roots.add_parsable_certificates(certs);
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}
