//! `pip download` from a private index that requires a token, under `zeroclaw sandbox run
//! --network proxy`: the index URL carries the placeholder as its password
//! (`https://__token__:$PIP_TOKEN@…`, so pip sends it as `Basic` credentials), the
//! credential (`inject = "replace"`, secret in the daemon's environment) swaps it on the
//! wire: the wheel lands, the index saw the real token on every request, and the command's
//! output never holds it.

use std::process::Command;

use base64::Engine;

use crate::egress_support;
use crate::egress_tools::serves_proxy;
use crate::support;

const CANARY: &str = "zc-canary-pip-token-5e1f";

#[test]
fn pip_downloads_from_a_private_index_with_a_token_it_never_sees() {
    if !serves_proxy("namespaces") || !support::have_program("python3") {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let served = tempfile::tempdir().unwrap();
    let wheel = "demo_pkg-1.0-py3-none-any.whl";
    std::fs::create_dir_all(served.path().join("simple/demo-pkg")).unwrap();
    std::fs::create_dir_all(served.path().join("packages")).unwrap();
    let build = Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w')\n\
             z.writestr('demo_pkg/__init__.py', '')\n\
             z.writestr('demo_pkg-1.0.dist-info/METADATA', \
             'Metadata-Version: 2.1\\nName: demo-pkg\\nVersion: 1.0\\n')\n\
             z.writestr('demo_pkg-1.0.dist-info/WHEEL', \
             'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             z.writestr('demo_pkg-1.0.dist-info/RECORD', '')\n\
             z.close()\n",
        )
        .arg(served.path().join("packages").join(wheel))
        .output()
        .unwrap();
    assert!(build.status.success(), "{build:?}");
    std::fs::write(
        served.path().join("simple/demo-pkg/index.html"),
        format!("<html><body><a href=\"/packages/{wheel}\">{wheel}</a></body></html>\n"),
    )
    .unwrap();
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("__token__:{CANARY}"))
    );
    let (index, ca) = runtime.block_on(egress_support::private_index::private_index(
        "pypi.example",
        served.path().to_path_buf(),
        expected.clone(),
    ));
    let port = index.port();
    let config_dir = tempfile::tempdir().unwrap();
    let ca_file = config_dir.path().join("index-ca.pem");
    std::fs::write(&ca_file, &ca).unwrap();
    std::fs::write(
        config_dir.path().join("config.toml"),
        format!(
            "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"pypi.example\"]\n\
             allow_ports = [{port}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
             hosts = {{ \"pypi.example\" = \"127.0.0.1\" }}\n\
             extra_ca_files = [\"{}\"]\n\
             [[sandbox.network.credentials]]\nname = \"pypi\"\nhosts = [\"pypi.example\"]\n\
             env = \"PIP_TOKEN\"\ninject = \"replace\"\nvalue_env = \"ZC_TEST_PIP_TOKEN\"\n",
            ca_file.display()
        ),
    )
    .unwrap();
    let ws = tempfile::tempdir().unwrap();
    let script = format!(
        "python3 -m pip --version >/dev/null 2>&1 || {{ echo NO_PIP; exit 0; }}; \
         python3 -m pip download -q --no-cache-dir --disable-pip-version-check --no-deps \
         --index-url \"https://__token__:$PIP_TOKEN@pypi.example:{port}/simple/\" \
         -d dl demo-pkg 2>&1; ls dl; echo \"token=$PIP_TOKEN\""
    );
    let out = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
        .args([
            "sandbox",
            "run",
            "--network",
            "proxy",
            "--backend",
            "namespaces",
        ])
        .arg("--workspace")
        .arg(ws.path())
        .args(["--", "sh", "-c", &script])
        .env("ZEROCLAW_CONFIG_DIR", config_dir.path())
        .env("ZC_TEST_PIP_TOKEN", CANARY)
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if all.contains("NO_PIP") {
        support::require_feature("python3 -m pip in the confined child");
        return;
    }
    assert!(out.status.success(), "{all}");
    assert!(ws.path().join("dl").join(wheel).is_file(), "{all}");
    assert!(all.contains("token=zeroclaw-placeholder-pypi-"), "{all}");
    assert!(!all.contains(CANARY), "{all}");
    let seen = index.seen();
    assert!(seen.len() >= 2, "{seen:?}");
    for request in &seen {
        assert!(request.ends_with(&format!("auth={expected}")), "{seen:?}");
    }
    assert!(
        seen.iter()
            .any(|r| r.starts_with(&format!("/packages/{wheel}"))),
        "{seen:?}"
    );
}
