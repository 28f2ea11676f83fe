//! The connection settings of a `postgres://` URL and its TLS: rustls with the bundled web
//! roots, or the CA file named by `sslrootcert=`. A URL without `sslmode` requires TLS unless
//! its hosts are all loopback or Unix sockets.

use std::sync::Arc;

use tokio_postgres::config::{Host, SslMode};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The parsed settings and the TLS connector for `url`.
pub fn client_config(url: &str) -> Result<(tokio_postgres::Config, MakeRustlsConnect), String> {
    let (url, root_cert) = take_param(url, "sslrootcert");
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| format!("not a usable PostgreSQL URL: {e}"))?;
    if config.get_application_name().is_none() {
        config.application_name("zeroclaw");
    }
    if !url.contains("sslmode=") && !all_local(config.get_hosts()) {
        config.ssl_mode(SslMode::Require);
    }
    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(path) => {
            let pem = std::fs::read(&path).map_err(|e| format!("sslrootcert {path}: {e}"))?;
            for cert in
                rustls_pemfile_certs(&pem).map_err(|e| format!("sslrootcert {path}: {e}"))?
            {
                roots
                    .add(cert)
                    .map_err(|e| format!("sslrootcert {path}: {e}"))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok((config, MakeRustlsConnect::new(tls)))
}

/// `url` without the query parameter `name`, and that parameter's value.
fn take_param(url: &str, name: &str) -> (String, Option<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return (url.to_owned(), None);
    };
    let mut value = None;
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| match pair.split_once('=') {
            Some((key, v)) if key == name => {
                value = Some(v.to_owned());
                false
            }
            _ => true,
        })
        .collect();
    let url = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    (url, value)
}

fn all_local(hosts: &[Host]) -> bool {
    hosts.iter().all(|host| match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name == "localhost"
                || name
                    .trim_matches(['[', ']'])
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    })
}

/// The certificates of a PEM file.
fn rustls_pemfile_certs(
    pem: &[u8],
) -> Result<Vec<rustls::pki_types::CertificateDer<'static>>, String> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not a PEM certificate file: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_hosts_require_tls_unless_told_otherwise() {
        let (remote, _) = client_config("postgres://zc@db.example/zc").unwrap();
        assert_eq!(remote.get_ssl_mode(), SslMode::Require);
        let (local, _) = client_config("postgres://zc@127.0.0.1:5432/zc").unwrap();
        assert_eq!(local.get_ssl_mode(), SslMode::Prefer);
        let (chosen, _) = client_config("postgres://zc@db.example/zc?sslmode=disable").unwrap();
        assert_eq!(chosen.get_ssl_mode(), SslMode::Disable);
    }

    #[test]
    fn sslrootcert_is_ours_not_the_drivers() {
        let (url, cert) = take_param(
            "postgres://h/db?sslrootcert=/ca.pem&sslmode=require",
            "sslrootcert",
        );
        assert_eq!(url, "postgres://h/db?sslmode=require");
        assert_eq!(cert.as_deref(), Some("/ca.pem"));
        let Err(err) = client_config("postgres://h/db?sslrootcert=/nonexistent/ca.pem") else {
            panic!("a missing CA file is an error");
        };
        assert!(err.contains("/nonexistent/ca.pem"), "{err}");
    }
}
