//! The intercepting proxy in process, with two credentials and TLS upstreams of their own test
//! CAs: `inject = "header"` adds the header to a request that has none; a request to one
//! credential's host carrying the other's placeholder is refused (403 naming it) and never
//! reaches the upstream; a placeholder inside `Basic` credentials is swapped; an upstream
//! the proxy cannot verify (its CA not in `extra_ca_files`) gets nothing, and the client a 502
//! and a refusal saying why. Every use and refusal reaches the observer.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use base64::Engine;
use tokio::net::TcpListener;
use zeroclaw::config::NetworkConfig;
use zeroclaw::egress::EgressPolicy;
use zeroclaw::egress::credentials::Session;
use zeroclaw::egress::proxy::{Connection, CredentialUse, Limits, Observer, Proxy};

use crate::egress_support;

#[derive(Default)]
struct Uses(Mutex<Vec<CredentialUse>>);

impl Observer for Uses {
    fn connection<'a>(&'a self, _: Connection) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        Box::pin(std::future::ready(()))
    }
    fn credential<'a>(&'a self, u: CredentialUse) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        self.0.lock().unwrap().push(u);
        Box::pin(std::future::ready(()))
    }
}

#[tokio::test]
async fn the_proxy_injects_for_bound_hosts_and_refuses_foreign_placeholders() {
    let (api, api_ca) = egress_support::https_echo("api.example").await;
    let (pypi, pypi_ca) = egress_support::https_echo("pypi.example").await;
    let (bad, _bad_ca) = egress_support::https_echo("bad.example").await;
    let dir = tempfile::tempdir().unwrap();
    let (api_file, pypi_file) = (dir.path().join("api.pem"), dir.path().join("pypi.pem"));
    std::fs::write(&api_file, &api_ca).unwrap();
    std::fs::write(&pypi_file, &pypi_ca).unwrap();
    let (pa, pp, pb) = (api.port(), pypi.port(), bad.port());
    let config: NetworkConfig = toml::from_str(&format!(
        "mode = \"proxy\"\n\
         allow_domains = [\"api.example\", \"pypi.example\", \"bad.example\"]\n\
         allow_ports = [{pa}, {pp}, {pb}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
         extra_ca_files = [\"{}\", \"{}\"]\n\
         [hosts]\n\"api.example\" = \"127.0.0.1\"\n\"pypi.example\" = \"127.0.0.1\"\n\
         \"bad.example\" = \"127.0.0.1\"\n\
         [[credentials]]\nname = \"gh\"\nhosts = [\"api.example\", \"bad.example\"]\n\
         inject = \"header\"\ninline_secret = \"gh-secret\"\n\
         [[credentials]]\nname = \"pypi\"\nhosts = [\"pypi.example\"]\n\
         inject = \"replace\"\ninline_secret = \"pypi-secret\"\n",
        api_file.display(),
        pypi_file.display()
    ))
    .unwrap();
    let policy = EgressPolicy::from_config(&config).unwrap();
    let session = Session::start(policy.credentials(), policy.extra_cas())
        .unwrap()
        .unwrap();
    let pypi_placeholder = session.bound()[1].placeholder.clone();
    let uses = Arc::new(Uses::default());
    let observer: Arc<dyn Observer> = uses.clone();
    let credentials = Some(session.clone());
    let proxy = Proxy::credentialed(policy, Limits::default(), None, Some(observer), credentials);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let _serving = proxy.serve_http(listener);
    let client = egress_support::client(addr, Some(&session.ca_pem()));

    let ok = client
        .get(format!("https://api.example:{pa}/x?q=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.text().await.unwrap(), "hello from api\n");
    let refused = client
        .get(format!("https://api.example:{pa}/y"))
        .header("x-other", &pypi_placeholder)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 403);
    assert!(
        refused.text().await.unwrap().contains("credential `pypi`"),
        "the refusal names the credential"
    );
    let heads = api.seen();
    assert_eq!(heads.len(), 1, "the refused request never left: {heads:?}");
    assert!(
        heads[0].contains("authorization: Bearer gh-secret\r\n"),
        "{heads:?}"
    );

    let basic = base64::engine::general_purpose::STANDARD.encode(format!("me:{pypi_placeholder}"));
    let ok = client
        .get(format!("https://pypi.example:{pp}/simple/"))
        .header("authorization", format!("Basic {basic}"))
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let expected = base64::engine::general_purpose::STANDARD.encode("me:pypi-secret");
    let heads = pypi.seen();
    assert!(
        heads[0].contains(&format!("authorization: Basic {expected}\r\n")),
        "{heads:?}"
    );

    let unverified = client
        .get(format!("https://bad.example:{pb}/"))
        .send()
        .await
        .unwrap();
    assert_eq!(unverified.status(), 502);
    assert!(bad.seen().is_empty(), "{:?}", bad.seen());

    let refusals = proxy.finish(std::time::Duration::from_secs(5)).await;
    let shown: Vec<String> = refusals.iter().map(|r| r.to_string()).collect();
    assert!(
        shown
            .iter()
            .any(|r| r.contains("bad.example") && r.contains("TLS verification")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|r| r.contains(&format!("api.example:{pa}")) && r.contains("credential `pypi`")),
        "{shown:?}"
    );
    let uses = uses.0.lock().unwrap().clone();
    let summary: Vec<String> = uses
        .iter()
        .map(|u| {
            format!(
                "{} {} {} {} {}",
                u.credential, u.name, u.method, u.path, u.allowed
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            "gh api.example GET /x true",
            "pypi api.example GET /y false",
            "pypi pypi.example GET /simple/ true",
        ],
        "{uses:#?}"
    );
}
