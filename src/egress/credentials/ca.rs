//! The certificate authority of one session: made with rcgen when the session starts, its key only in the daemon's memory (dropped with the session), its
//! certificate handed to the child. Its name constraints allow only the bound hosts, so even a
//! certificate it signed could not stand for another name. It signs one leaf per bound host
//! the child connects to (kept for the session).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose,
    GeneralSubtree, IsCa, KeyPair, KeyUsagePurpose, NameConstraints,
};
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::egress::pattern::DomainPattern;

/// One session's CA and the TLS server configs of the leaves it signed.
pub struct SessionCa {
    issuer: CertifiedIssuer<'static, KeyPair>,
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl SessionCa {
    /// A new CA (a fresh key) allowed to sign for `hosts` only.
    pub fn new(hosts: &[&DomainPattern]) -> Result<SessionCa, rcgen::Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let mut tag = [0u8; 6];
        let _ = getrandom::fill(&mut tag);
        params.distinguished_name.push(
            DnType::CommonName,
            format!("zeroclaw session CA {}", hex::encode(tag)),
        );
        let permitted = hosts
            .iter()
            .map(|p| match p {
                DomainPattern::Exact(name) | DomainPattern::Suffix(name) => {
                    GeneralSubtree::DnsName(name.clone())
                }
            })
            .collect();
        params.name_constraints = Some(NameConstraints {
            permitted_subtrees: permitted,
            excluded_subtrees: Vec::new(),
        });
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(SessionCa {
            issuer,
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA certificate, PEM.
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// The CA certificate, DER.
    pub fn der(&self) -> &CertificateDer<'static> {
        self.issuer.der()
    }

    /// The TLS server config presenting a leaf for `name` (made once per name).
    pub fn server_config(&self, name: &str) -> Result<Arc<ServerConfig>, String> {
        let mut leaves = self.leaves.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(config) = leaves.get(name) {
            return Ok(config.clone());
        }
        let config = Arc::new(self.leaf(name).map_err(|e| format!("session CA: {e}"))?);
        leaves.insert(name.to_owned(), config.clone());
        Ok(config)
    }

    fn leaf(&self, name: &str) -> Result<ServerConfig, Box<dyn std::error::Error>> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec![name.to_owned()])?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &self.issuer)?;
        let chain = vec![cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(key.serialize_der().into());
        let mut config = ServerConfig::builder_with_provider(super::roots::provider())
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(chain, key)?;
        // The proxy reads HTTP/1.1 only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}
