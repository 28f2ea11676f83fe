//! Transparent egress (issue 35 items 1 and 2) through `zeroclaw sandbox run --network proxy`:
//! on the namespace rung a program that ignores the proxy variables (python3's socket and ssl
//! modules, with the variables unset) resolves an allowed name through the DNS stub (a
//! synthetic 198.18.0.0/15 address), reaches a raw TCP echo at a port an `allow` entry lists
//! and a TLS upstream whose name it sends, and nothing else: a name outside the list gets no
//! answer, an unlisted port no connection, a direct `connect()` to an address outside
//! `allow_cidrs` (or at a port it does not list) never reaches a listener of the host, a
//! ClientHello naming another server is refused, UDP gets nowhere; port 80 needs one `Host`
//! naming the destination; a session's transparent connection is audited. On every proxy rung, the
//! `allow` entry's port is relayed raw through SOCKS5 too. Upstreams are loopback servers this
//! test starts; the names resolve through the policy's `hosts` map, loopback admitted by
//! `allow_cidrs`.

use crate::egress_support;
use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

/// A raw TCP echo server on loopback that records what each connection sent first.
struct Echo {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Echo {
    fn start() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        // Detached: it ends with the test process (no child process, nothing on disk).
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 256];
                    let mut first = true;
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if first {
                            log.lock()
                                .unwrap()
                                .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                            first = false;
                        }
                        if stream.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        Echo { port, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

/// Who launches `zeroclaw sandbox run`: the test's own user, or `nobody` (switched to by
/// setpriv with a reset environment, so the test must be root, as on CI).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Launcher {
    Me,
    Nobody,
}

/// `nobody`'s uid and gid.
pub(crate) const NOBODY: u32 = 65534;

impl Launcher {
    /// Whether this launcher can be used here (`Nobody` needs root to switch to it: a skip
    /// printed otherwise, a failure with `CI=true`).
    pub(crate) fn usable(self) -> bool {
        if self == Launcher::Nobody && !nix::unistd::geteuid().is_root() {
            support::require_feature("launching as nobody needs root to switch to it");
            return false;
        }
        true
    }

    /// Hands `paths` (recursively) to this launcher's user: the workspace and config dir.
    pub(crate) fn own(self, paths: &[&Path]) {
        if self == Launcher::Me {
            return;
        }
        for path in paths {
            let status = Command::new("chown")
                .args(["-R", &format!("{NOBODY}:{NOBODY}")])
                .arg(path)
                .status()
                .expect("chown");
            assert!(status.success(), "chown -R nobody {}", path.display());
        }
    }
}

/// `zeroclaw sandbox run --backend B --network proxy -- sh -c SCRIPT` in `ws` with the
/// config dir `cfg`.
fn run(backend: &str, cfg: &Path, ws: &Path, script: &str) -> Output {
    run_as(Launcher::Me, backend, cfg, ws, script)
}

/// [`run`], launched by `launcher`.
pub(crate) fn run_as(
    launcher: Launcher,
    backend: &str,
    cfg: &Path,
    ws: &Path,
    script: &str,
) -> Output {
    run_with_home(launcher, backend, cfg, ws, None, script)
}

/// [`run_as`]; with `home`, the launcher's `HOME` is that directory, allowed for reading
/// (`--allow-read`: its secrets, `.ssh` first, stay denied).
pub(crate) fn run_with_home(
    launcher: Launcher,
    backend: &str,
    cfg: &Path,
    ws: &Path,
    home: Option<&Path>,
    script: &str,
) -> Output {
    let zeroclaw = env!("CARGO_BIN_EXE_zeroclaw");
    let mut cmd = match launcher {
        Launcher::Me => Command::new(zeroclaw),
        Launcher::Nobody => {
            let mut cmd = Command::new("setpriv");
            cmd.args([
                &format!("--reuid={NOBODY}"),
                &format!("--regid={NOBODY}"),
                "--clear-groups",
                "--reset-env",
                "env",
            ]);
            cmd.arg(format!("ZEROCLAW_CONFIG_DIR={}", cfg.display()));
            if let Some(home) = home {
                cmd.arg(format!("HOME={}", home.display()));
            }
            cmd.arg(zeroclaw);
            cmd
        }
    };
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", cfg)
        .args(["sandbox", "run", "--backend", backend, "--network", "proxy"])
        .arg("--workspace")
        .arg(ws);
    if let Some(home) = home {
        cmd.env("HOME", home).arg("--allow-read").arg(home);
    }
    cmd.args(["--", "sh", "-c", script]);
    cmd.output().expect("run zeroclaw")
}

pub(crate) fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The config: `tls.example` allowed at `tls`, `echo.example:ECHO` relayed raw, loopback
/// admitted, every test name on 127.0.0.1.
fn config(dir: &Path, tls: u16, echo: u16) {
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[sandbox.network]\nallow_domains = [\"tls.example\"]\nallow_ports = [{tls}]\n\
             allow_cidrs = [\"127.0.0.0/8\"]\nallow = [\"echo.example:{echo}\"]\n\
             hosts = {{ \"tls.example\" = \"127.0.0.1\", \"echo.example\" = \"127.0.0.1\", \
             \"other.example\" = \"127.0.0.1\" }}\n"
        ),
    )
    .unwrap();
}

/// Whether `backend` serves proxy calls here (printing why not, failing when `CI=true`).
fn serves_proxy(backend: &str) -> bool {
    serves_proxy_as(Launcher::Me, backend)
}

/// [`serves_proxy`], launched by `launcher`.
pub(crate) fn serves_proxy_as(launcher: Launcher, backend: &str) -> bool {
    if !launcher.usable()
        || !crate::tools_support::backend_available(backend)
        || !support::have_program("python3")
    {
        return false;
    }
    let (ws, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    launcher.own(&[ws.path(), cfg.path()]);
    let out = run_as(launcher, backend, cfg.path(), ws.path(), "true");
    let all = text(&out);
    if all.contains("needs Landlock ABI 4") {
        support::require_feature(&format!("proxy mode on {backend}: {all}"));
        return false;
    }
    assert!(
        out.status.success(),
        "a trivial proxy call on {backend}: {all}"
    );
    true
}

pub(crate) const UNSET: &str = "unset HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy \
                     npm_config_proxy npm_config_https_proxy CARGO_HTTP_PROXY; ";

/// What the child tries, ignoring the proxy variables; each line `WHAT RESULT`.
const PROBE: &str = r#"python3 - <<'EOF'
import socket, ssl
def attempt(what, f):
    try:
        print(what, f())
    except Exception as e:
        print(what, 'refused', type(e).__name__)
    print(flush=True)
# Whatever set the route and bound the listeners, the command holds no capability.
attempt('caps', lambda: sorted({l.split()[1] for l in open('/proc/self/status') if l.startswith('Cap')}))
attempt('resolve-echo', lambda: socket.gethostbyname('echo.example'))
# Every type (A and AAAA) of an allowed name: no refusal.
attempt('resolve-echo-any', lambda: len(socket.getaddrinfo('echo.example', 80)) > 0)
attempt('resolve-other', lambda: socket.gethostbyname('other.example'))
# The host's /etc/hosts names are not the child's: localhost only.
attempt('hosts', lambda: sorted({w for l in open('/etc/hosts') if not l.startswith('#') for w in l.split()[1:]}))
def echo(port, data):
    s = socket.create_connection(('echo.example', port), 5)
    s.sendall(data)
    got = s.recv(100)
    if not got:
        raise ConnectionError('closed')
    return got.decode().strip()
attempt('echo', lambda: echo(@ECHO@, b'raw-bytes\n'))
attempt('unlisted-port', lambda: echo(9, b'unlisted\n'))
def direct(host, port):
    s = socket.create_connection((host, port), 5)
    s.sendall(b'direct-bytes\n')
    got = s.recv(100)
    if not got:
        raise ConnectionError('closed')
    return got
attempt('direct-loopback', lambda: direct('127.0.0.1', @ECHO@))
attempt('direct-outside', lambda: direct('10.1.2.3', @TLS@))
def tls(sni):
    # Not verified: what is judged is which server the bytes reached (the upstream's log).
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(socket.create_connection(('tls.example', @TLS@), 5), server_hostname=sni)
    s.sendall(b'GET /tls HTTP/1.1\r\nHost: tls.example\r\nConnection: close\r\n\r\n')
    return s.recv(200).split(b'\r\n')[0].decode()
attempt('tls', lambda: tls('tls.example'))
attempt('tls-other-sni', lambda: tls('other.example'))
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1)
    s.sendto(b'zc-udp', ('127.0.0.1', @UDP@))
    s.sendto(b'zc-udp', ('10.0.0.53', @UDP@))
    return s.recvfrom(100)
attempt('udp', udp)
EOF"#;

/// A program ignoring the proxy variables on `backend` (see the module's comment).
fn a_program_ignoring_the_proxy_variables_reaches_an_allowed_name_and_nothing_else_on(
    backend: &str,
) {
    ignoring_the_proxy_variables(Launcher::Me, backend);
}

/// The same, launched by `nobody` (bubblewrap's inner stage then routes in a network
/// namespace of its own).
fn a_program_ignoring_the_proxy_variables_reaches_an_allowed_name_and_nothing_else_as_nobody(
    backend: &str,
) {
    ignoring_the_proxy_variables(Launcher::Nobody, backend);
}

fn ignoring_the_proxy_variables(launcher: Launcher, backend: &str) {
    if !serves_proxy_as(launcher, backend) {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (tls_up, _ca) = runtime.block_on(egress_support::https_upstream("tls.example"));
    let echo = Echo::start();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (ws, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    config(cfg.path(), tls_up.port(), echo.port);
    launcher.own(&[ws.path(), cfg.path()]);
    let script = PROBE
        .replace("@ECHO@", &echo.port.to_string())
        .replace("@TLS@", &tls_up.port().to_string())
        .replace("@UDP@", &udp.local_addr().unwrap().port().to_string());
    let out = run_as(
        launcher,
        backend,
        cfg.path(),
        ws.path(),
        &format!("{UNSET}{script}"),
    );
    let all = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = |what: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{what} ")))
            .unwrap_or_else(|| panic!("no {what} line: {all}"))
            .to_owned()
    };
    assert_eq!(line("caps"), "caps ['0000000000000000']", "{all}");
    assert!(
        line("resolve-echo").starts_with("resolve-echo 198.18."),
        "{all}"
    );
    assert_eq!(
        line("resolve-other"),
        "resolve-other refused gaierror",
        "{all}"
    );
    assert_eq!(line("hosts"), "hosts ['localhost']", "{all}");
    assert_eq!(line("echo"), "echo raw-bytes", "{all}");
    assert!(line("unlisted-port").contains("refused"), "{all}");
    // Accepted in the namespace on the proxy's behalf, then reset once refused.
    assert_eq!(
        line("direct-loopback"),
        "direct-loopback refused ConnectionResetError",
        "{all}"
    );
    assert_eq!(
        line("direct-outside"),
        "direct-outside refused ConnectionResetError",
        "{all}"
    );
    assert_eq!(line("tls"), "tls HTTP/1.1 200 OK", "{all}");
    assert!(line("tls-other-sni").contains("refused"), "{all}");
    assert!(line("udp").contains("refused"), "{all}");
    // Judged from outside: the echo server saw the allowed bytes only, the TLS upstream the
    // one request, the host's UDP port nothing.
    assert_eq!(echo.seen(), vec!["raw-bytes\n".to_owned()], "{all}");
    assert_eq!(tls_up.seen(), vec!["GET /tls host=tls.example".to_owned()]);
    let mut buf = [0u8; 16];
    let received = udp.recv_from(&mut buf);
    assert!(
        matches!(&received, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a datagram reached the host: {received:?}\n{all}"
    );
    // The refusals name their rule, like a proxied connection's.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let echo_port = echo.port;
    for refusal in [
        format!("refused 127.0.0.1:{echo_port} — port {echo_port} not in allow_ports"),
        format!(
            "refused 10.1.2.3:{} — IP address not in allow_cidrs",
            tls_up.port()
        ),
        "TLS server name `other.example` differs from the requested host".to_owned(),
        // The name the stub gave no answer for, once, as a refusal of its own.
        "network: refused other.example — not in allow_domains".to_owned(),
        // The port nothing listens on: the kernel refused it, the watch told.
        "network: refused echo.example:9 — port 9 not listed".to_owned(),
    ] {
        assert!(stderr.contains(&refusal), "{refusal}: {all}");
    }
    assert_eq!(
        stderr.matches("refused other.example —").count(),
        1,
        "{all}"
    );
    // An allowed name's lookups (its `A` and any other type) are no refusal; the inside
    // check's probe (before the command ran) is not the command's.
    for not_told in ["echo.example —", "tls.example —", "192.0.2.1"] {
        assert!(!stderr.contains(not_told), "{not_told}: {all}");
    }
}

/// Generates `NAME::{namespaces, bubblewrap}`: `NAME_on(backend)` on each rung with transparent
/// egress.
macro_rules! per_transparent_rung {
    ($name:ident, $on:ident) => {
        mod $name {
            #[test]
            fn namespaces() {
                super::$on("namespaces");
            }

            #[test]
            fn bubblewrap() {
                super::$on("bubblewrap");
            }
        }
    };
}

per_transparent_rung!(
    a_program_ignoring_the_proxy_variables_reaches_an_allowed_name_and_nothing_else,
    a_program_ignoring_the_proxy_variables_reaches_an_allowed_name_and_nothing_else_on
);

/// Transparent egress on the rungs an unprivileged user launches (the namespaces rung, and
/// bubblewrap, whose inner stage makes a network namespace of its own then).
mod a_program_ignoring_the_proxy_variables_reaches_an_allowed_name_and_nothing_else_as_nobody {
    #[test]
    fn namespaces() {
        super::a_program_ignoring_the_proxy_variables_reaches_an_allowed_name_and_nothing_else_as_nobody("namespaces");
    }

    #[test]
    fn bubblewrap() {
        super::a_program_ignoring_the_proxy_variables_reaches_an_allowed_name_and_nothing_else_as_nobody("bubblewrap");
    }
}

/// An `allow` entry's port is relayed raw through SOCKS5 (`ALL_PROXY`) on `backend`, and a
/// name it does not list is refused at that port.
fn a_listed_port_is_relayed_raw_through_socks5_on(backend: &str) {
    if !serves_proxy(backend) {
        return;
    }
    let echo = Echo::start();
    let (ws, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    config(cfg.path(), 443, echo.port);
    let script = r#"python3 - <<'EOF'
import os, socket
port = int(os.environ['ALL_PROXY'].rsplit(':', 1)[1])
def socks(name, data):
    s = socket.create_connection(('127.0.0.1', port), 5)
    s.sendall(b'\x05\x01\x00')
    assert s.recv(2) == b'\x05\x00'
    s.sendall(b'\x05\x01\x00\x03' + bytes([len(name)]) + name + (@ECHO@).to_bytes(2, 'big'))
    reply = s.recv(10)
    if reply[1] != 0:
        return 'reply %d' % reply[1]
    s.sendall(data)
    return s.recv(100).decode().strip()
print('listed', socks(b'echo.example', b'ssh-ish bytes\n'))
print('other', socks(b'other.example', b'nope\n'))
EOF"#
        .replace("@ECHO@", &echo.port.to_string());
    let out = run(backend, cfg.path(), ws.path(), &script);
    let all = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("listed ssh-ish bytes"), "{all}");
    assert!(stdout.contains("other reply 2"), "{all}");
    assert_eq!(echo.seen(), vec!["ssh-ish bytes\n".to_owned()], "{all}");
}

mod a_listed_port_is_relayed_raw_through_socks5 {
    #[test]
    fn namespaces() {
        super::a_listed_port_is_relayed_raw_through_socks5_on("namespaces");
    }

    #[test]
    fn bubblewrap() {
        super::a_listed_port_is_relayed_raw_through_socks5_on("bubblewrap");
    }

    #[test]
    fn landlock() {
        super::a_listed_port_is_relayed_raw_through_socks5_on("landlock");
    }
}

/// In a real session (namespace rung), a shell command that ignores the proxy variables
/// (bash's `/dev/tcp`) reaches the raw echo by name, and the connection is in the audit log:
/// one `network.connection` record `via` transparent, with the `allow` rule, the address and
/// the bytes each way; the chain verifies.
#[test]
fn a_sessions_transparent_connection_is_in_the_audit_log() {
    use crate::tools_support::{Scene, Setup};
    if !serves_proxy("namespaces") || !support::have_program("bash") {
        return;
    }
    let echo = Echo::start();
    let port = echo.port;
    let network = format!(
        "[sandbox.network]\nmode = \"proxy\"\nallow_cidrs = [\"127.0.0.0/8\"]\n\
         allow = [\"echo.example:{port}\"]\nhosts = {{ \"echo.example\" = \"127.0.0.1\" }}\n"
    );
    let s = Scene::start(Setup::level("full").backend("namespaces").extra(&network));
    let command = format!(
        "{UNSET}bash -c 'exec 3<>/dev/tcp/echo.example/{port}; echo via-transparent >&3; \
         head -1 <&3; exec 3>&-'"
    );
    s.call("shell", serde_json::json!({ "command": command }))
        .assert_completed()
        .assert_result_contains("via-transparent");
    assert_eq!(echo.seen(), vec!["via-transparent\n".to_owned()]);
    let audit = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .arg("audit")
            .arg("--config-dir")
            .arg(s.config_dir())
            .args(args)
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .output()
            .expect("run zeroclaw audit");
        assert!(out.status.success(), "audit {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let records: Vec<serde_json::Value> = audit(&["export", "--format", "jsonl"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["record"]["kind"] == "network.connection")
        .collect();
    assert_eq!(records.len(), 1, "{records:#?}");
    let record = &records[0]["record"];
    assert_eq!(record["via"], "transparent", "{record}");
    assert_eq!(record["name"], "echo.example", "{record}");
    assert_eq!(record["port"], port, "{record}");
    assert_eq!(record["address"], "127.0.0.1", "{record}");
    assert_eq!(record["decision"], "allow", "{record}");
    assert_eq!(record["rule"], "allow", "{record}");
    let line = "via-transparent\n".len() as u64;
    assert_eq!(record["bytes_sent"], line, "{record}");
    assert_eq!(record["bytes_received"], line, "{record}");
    assert!(audit(&["verify"]).starts_with("ok:"));
}

per_transparent_rung!(
    a_sessions_refused_name_and_unlisted_port_are_told_and_audited,
    a_sessions_refused_name_and_unlisted_port_are_told_and_audited_on
);

/// In a real session on `backend`, a command that looks up a name outside the list and
/// connects to a port nothing listens on (by an allowed name and by an IP) gets nothing —
/// no answer, `ECONNREFUSED` — and the tool result says so (`network: refused …` lines, the
/// rule named), as do the audit log's `network.connection` records (`audit list --kind`, the
/// export); an allowed name's lookup is neither; the chain verifies.
fn a_sessions_refused_name_and_unlisted_port_are_told_and_audited_on(backend: &'static str) {
    use crate::tools_support::{Scene, Setup};
    if !serves_proxy(backend) || !support::have_program("bash") {
        return;
    }
    let network = "[sandbox.network]\nmode = \"proxy\"\nallow_domains = [\"ok.example\"]\n\
                   allow_ports = [443]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
                   hosts = { \"ok.example\" = \"127.0.0.1\" }\n";
    let s = Scene::start(Setup::level("full").backend(backend).extra(network));
    let command = format!(
        "{UNSET}getent hosts ok.example | cut -c1-7; getent hosts denied.example || echo no-answer; \
         bash -c 'exec 3<>/dev/tcp/ok.example/5433' 2>&1 | grep -q 'Connection refused' && \
         echo ECONNREFUSED-5433; bash -c 'exec 3<>/dev/tcp/10.20.30.40/5434' 2>&1 | \
         grep -q 'Connection refused' && echo ECONNREFUSED-5434"
    );
    let out = s.call("shell", serde_json::json!({ "command": command }));
    out.assert_completed()
        .assert_result_contains("198.18.")
        .assert_result_contains("no-answer")
        .assert_result_contains("network: refused denied.example — not in allow_domains")
        .assert_result_contains("network: refused ok.example:5433 — port 5433 not listed")
        .assert_result_contains("network: refused 10.20.30.40:5434 — port 5434 not listed");
    out.assert_result_contains("ECONNREFUSED-5433")
        .assert_result_contains("ECONNREFUSED-5434");
    assert!(
        !out.text.contains("refused ok.example —"),
        "{}",
        out.describe()
    );
    let audit = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_zeroclaw"))
            .arg("audit")
            .arg("--config-dir")
            .arg(s.config_dir())
            .args(args)
            .env_remove("ZEROCLAW_CONFIG_DIR")
            .output()
            .expect("run zeroclaw audit");
        assert!(out.status.success(), "audit {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let listed = audit(&["list", "--kind", "network.connection"]);
    for line in [
        "decision=deny rule=not_in_allow_domains dns denied.example address=-",
        "decision=deny rule=port_not_listed transparent ok.example:5433 address=-",
        "decision=deny rule=port_not_listed transparent 10.20.30.40:5434 address=10.20.30.40",
    ] {
        assert!(listed.contains(line), "{line}:\n{listed}");
    }
    assert_eq!(listed.lines().count(), 3, "{listed}");
    let records: Vec<serde_json::Value> = audit(&["export", "--format", "jsonl"])
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &serde_json::Value| r["record"]["kind"] == "network.connection")
        .map(|r: serde_json::Value| r["record"].clone())
        .collect();
    let dns = records
        .iter()
        .find(|r| r["via"] == "dns")
        .expect("the dns record");
    assert_eq!(dns["name"], "denied.example", "{dns}");
    assert!(dns.get("port").is_none(), "{dns}");
    assert_eq!(dns["reason"], "not in allow_domains", "{dns}");
    let port = records
        .iter()
        .find(|r| r["port"] == 5433)
        .expect("the unlisted port's record");
    assert_eq!(port["via"], "transparent", "{port}");
    assert_eq!(port["name"], "ok.example", "{port}");
    assert_eq!(port["rule"], "port_not_listed", "{port}");
    assert!(audit(&["verify"]).starts_with("ok:"));
}

per_transparent_rung!(
    port_80_taken_transparently_needs_a_host_naming_the_destination,
    port_80_taken_transparently_needs_a_host_naming_the_destination_on
);

/// Port 80 taken transparently carries HTTP whose one `Host` names the destination: a
/// request naming it reaches the upstream; one whose `Host` names another host, or that has
/// two, is reset before a byte reaches it. The upstream listens on port 80 of a loopback
/// address of its own (root, or the right to bind low ports, needed: skipped otherwise).
fn port_80_taken_transparently_needs_a_host_naming_the_destination_on(backend: &str) {
    if !serves_proxy(backend) {
        return;
    }
    let rung = if backend == "namespaces" { 80 } else { 81 };
    let ip = format!("127.{rung}.{}.80", std::process::id() % 250 + 1);
    let listener = match TcpListener::bind((ip.as_str(), 80)) {
        Ok(l) => l,
        Err(e) => {
            support::require_feature(&format!("binding {ip}:80 for the upstream: {e}"));
            return;
        }
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    // Detached: it ends with the test process.
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            log.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head).into_owned());
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n",
            );
        }
    });
    let (ws, cfg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(
        cfg.path().join("config.toml"),
        format!(
            "[sandbox.network]\nallow_domains = [\"web.example\"]\nallow_ports = [80]\n\
             allow_cidrs = [\"127.0.0.0/8\"]\n\
             hosts = {{ \"web.example\" = \"{ip}\", \"other.example\" = \"{ip}\" }}\n"
        ),
    )
    .unwrap();
    let script = r#"python3 - <<'EOF'
import socket, urllib.request
def attempt(what, f):
    try:
        print(what, f())
    except Exception as e:
        print(what, 'refused', type(e).__name__)
attempt('urllib', lambda: urllib.request.urlopen('http://web.example/', timeout=5).read().decode().strip())
def raw(head):
    s = socket.create_connection(('web.example', 80), 5)
    s.sendall(head)
    got = s.recv(100)
    if not got:
        raise ConnectionError('closed')
    return got.split(b'\r\n')[0].decode()
attempt('other-host', lambda: raw(b'GET /x HTTP/1.1\r\nHost: other.example\r\n\r\n'))
attempt('two-hosts', lambda: raw(b'GET /y HTTP/1.1\r\nHost: web.example\r\nHost: other.example\r\n\r\n'))
attempt('userinfo', lambda: raw(b'GET /z HTTP/1.1\r\nHost: other.example:80@web.example\r\n\r\n'))
EOF"#;
    let out = run(backend, cfg.path(), ws.path(), &format!("{UNSET}{script}"));
    let all = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("urllib hello\n"), "{all}");
    for what in ["other-host", "two-hosts", "userinfo"] {
        assert!(
            stdout.contains(&format!("{what} refused ConnectionResetError")),
            "{what}: {all}"
        );
    }
    // Judged by what reached the upstream: one request (the refused ones' upstream
    // connections, opened before the check as a tunnel's are, carried no byte).
    let seen: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|h| !h.is_empty())
        .cloned()
        .collect();
    assert_eq!(seen.len(), 1, "{seen:?}\n{all}");
    assert!(seen[0].starts_with("GET / HTTP/1.1\r\n"), "{seen:?}");
    assert!(seen[0].contains("Host: web.example\r\n"), "{seen:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`Host: other.example` differs from the destination web.example"),
        "{all}"
    );
}
