//! Checking `[[sandbox.network.credentials]]` entries, and the request rewriting.

use hyper::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use super::scan::{foreign, inject};
use super::session::Session;
use crate::config::NetworkConfig;
use crate::egress::EgressPolicy;

fn entries(toml: &str) -> Result<Vec<super::Credential>, (String, String)> {
    let config: NetworkConfig = toml::from_str(toml).expect("parses");
    let env = |name: &str| (name == "TEST_TOKEN").then(|| "s3cr3t".to_owned());
    super::from_config(&config.credentials, &env)
}

#[test]
fn an_entry_reads_its_secret_and_shows_it_masked() {
    let list = entries(
        "[[credentials]]\nname = \"gh\"\nhosts = [\"api.example\"]\nenv = \"GH_TOKEN\"\n\
         inject = \"header\"\nvalue_env = \"TEST_TOKEN\"\n",
    )
    .unwrap();
    assert_eq!(list[0].secret.expose(), "s3cr3t");
    assert_eq!(list[0].env, "GH_TOKEN");
    assert!(!format!("{list:?}").contains("s3cr3t"));
}

#[test]
fn bad_entries_name_their_key() {
    let cases = [
        (
            "name = \"GH\"\nhosts = [\"a.example\"]\ninject = \"replace\"\nvalue_env = \"TEST_TOKEN\"",
            "credentials[0].name",
        ),
        (
            "name = \"gh\"\nhosts = []\ninject = \"replace\"\nvalue_env = \"TEST_TOKEN\"",
            "credentials[0].hosts",
        ),
        (
            "name = \"gh\"\nhosts = [\"a.example\"]\ninject = \"basic\"\nvalue_env = \"TEST_TOKEN\"",
            "credentials[0].username",
        ),
        (
            "name = \"gh\"\nhosts = [\"a.example\"]\ninject = \"header\"\nformat = \"Bearer\"\nvalue_env = \"TEST_TOKEN\"",
            "credentials[0].format",
        ),
        (
            "name = \"gh\"\nhosts = [\"a.example\"]\ninject = \"replace\"\nvalue_env = \"UNSET_VAR\"",
            "credentials[0].value_env",
        ),
        (
            "name = \"gh\"\nhosts = [\"a.example\"]\ninject = \"replace\"",
            "credentials[0].value_env",
        ),
        (
            "name = \"gh\"\nhosts = [\"10.0.0.1\"]\ninject = \"replace\"\nvalue_env = \"TEST_TOKEN\"",
            "credentials[0].hosts[0]",
        ),
    ];
    for (body, key) in cases {
        let err = entries(&format!("[[credentials]]\n{body}\n")).unwrap_err();
        assert_eq!(err.0, key, "{body}: {err:?}");
    }
}

#[test]
fn a_secret_file_open_to_others_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "filesecret\n").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let toml = format!(
        "[[credentials]]\nname = \"gh\"\nhosts = [\"a.example\"]\ninject = \"replace\"\n\
         value_file = \"{}\"\n",
        file.display()
    );
    let err = entries(&toml).unwrap_err();
    assert!(
        err.1.contains("mode 644") && err.1.contains("chmod 600"),
        "{err:?}"
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(entries(&toml).unwrap()[0].secret.expose(), "filesecret");
}

fn session() -> std::sync::Arc<Session> {
    let config: NetworkConfig = toml::from_str(
        "mode = \"proxy\"\n\
         [[credentials]]\nname = \"gh\"\nhosts = [\"*.gh.example\"]\nenv = \"GH_TOKEN\"\n\
         inject = \"basic\"\nusername = \"git\"\ninline_secret = \"s3cr3t\"\n\
         [[credentials]]\nname = \"pypi\"\nhosts = [\"pypi.example\"]\n\
         inject = \"replace\"\ninline_secret = \"pypisecret\"\n",
    )
    .unwrap();
    let policy = EgressPolicy::from_config(&config).unwrap();
    Session::start(policy.credentials(), policy.extra_cas())
        .unwrap()
        .unwrap()
}

#[test]
fn placeholders_differ_between_sessions_and_name_their_credential() {
    let (a, b) = (session(), session());
    let pa = &a.bound()[0].placeholder;
    assert!(pa.starts_with("zeroclaw-placeholder-gh-"), "{pa}");
    assert_ne!(pa, &b.bound()[0].placeholder);
    assert_ne!(a.ca_pem(), b.ca_pem());
    let env = a.child_env();
    assert!(env.contains(&("GH_TOKEN".to_owned(), pa.clone())));
    assert!(env.iter().any(|(k, _)| k == "ZEROCLAW_CREDENTIAL_PYPI"));
    let bundle = std::fs::read_to_string(a.bundle_path()).unwrap();
    assert!(bundle.ends_with(&a.ca_pem()) || bundle.contains(a.ca_pem().trim()));
    let dir = a.bundle_path().parent().unwrap().to_owned();
    drop(a);
    assert!(!dir.exists(), "the CA directory goes with the session");
}

#[test]
fn injection_swaps_placeholders_and_sets_basic_auth() {
    use base64::Engine;
    let s = session();
    let pypi = &s.bound()[1];
    let mut headers = HeaderMap::new();
    let basic =
        base64::engine::general_purpose::STANDARD.encode(format!("user:{}", pypi.placeholder));
    headers.insert(
        AUTHORIZATION,
        HeaderValue::from_str(&format!("Basic {basic}")).unwrap(),
    );
    let used = inject(&mut headers, &s.bound_to("pypi.example"));
    assert_eq!(used, vec!["pypi".to_owned()]);
    let sent = headers[AUTHORIZATION].to_str().unwrap().to_owned();
    let expected = base64::engine::general_purpose::STANDARD.encode("user:pypisecret");
    assert_eq!(sent, format!("Basic {expected}"));

    let mut headers = HeaderMap::new();
    let used = inject(&mut headers, &s.bound_to("git.gh.example"));
    assert_eq!(used, vec!["gh".to_owned()]);
    let expected = base64::engine::general_purpose::STANDARD.encode("git:s3cr3t");
    assert_eq!(headers[AUTHORIZATION], format!("Basic {expected}").as_str());
}

#[test]
fn a_placeholder_for_another_host_is_found_in_target_headers_and_body() {
    let s = session();
    let gh = s.bound()[0].placeholder.clone();
    let bound = |name: &'static str| move |b: &super::session::Bound| b.credential.binds(name);
    let none = HeaderMap::new();
    let found = foreign(
        &s,
        &bound("other.example"),
        &format!("/x?t={gh}"),
        &none,
        b"",
    );
    assert_eq!(found.map(|b| b.credential.name.as_str()), Some("gh"));
    let body = format!("token={gh}");
    let found = foreign(&s, &bound("other.example"), "/", &none, body.as_bytes());
    assert!(found.is_some());
    assert!(foreign(&s, &bound("api.gh.example"), "/", &none, body.as_bytes()).is_none());
    let mut headers = HeaderMap::new();
    headers.insert("x-token", HeaderValue::from_str(&gh).unwrap());
    assert!(foreign(&s, &bound("pypi.example"), "/", &headers, b"").is_some());
}

#[test]
fn a_placeholder_may_not_take_a_variable_zeroclaw_sets() {
    for var in ["https_proxy", "SSL_CERT_FILE", "PATH", "LD_PRELOAD"] {
        let err = entries(&format!(
            "[[credentials]]\nname = \"gh\"\nhosts = [\"a.example\"]\nenv = \"{var}\"\n\
             inject = \"replace\"\nvalue_env = \"TEST_TOKEN\"\n"
        ))
        .unwrap_err();
        assert_eq!(err.0, "credentials[0].env", "{var}: {err:?}");
    }
}
