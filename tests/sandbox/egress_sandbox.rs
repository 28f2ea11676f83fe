//! `network = proxy` for real confined commands (`zeroclaw sandbox run --network proxy`), one
//! test per rung that serves it (`<case>::<backend>`): the namespaces and bubblewrap rungs (a
//! network namespace with only `lo`, the proxy's listeners at fixed ports in it) and the
//! Landlock-only rung (no network namespace:
//! the listeners on the host's loopback at ephemeral ports, Landlock TCP rules and seccomp
//! keeping the child to them). The child reaches an allowed name through zeroclaw's egress
//! proxy with curl, python3's urllib and `git clone http://`, and `pip download` from a package
//! index served there; a denied name is refused naming
//! the rule; a direct `connect()` (also as a TCP Fast Open send) to a port the test listens on,
//! a UDP datagram to one, a DNS query and a raw or ICMP socket get nowhere (nor, on the
//! Landlock-only rung, a TCP bind on the host's loopback or a listen on an unbound socket); two runs at once with different
//! policies keep their own allowances; a rung that cannot do it refuses, never falling back.
//! Upstreams are loopback servers this test starts (judged by what they saw); the test names
//! resolve through the policy's `hosts` map, loopback admitted by `allow_cidrs`. Scripts find
//! the proxy through the variables the child gets (`HTTP_PROXY`, `ALL_PROXY`).

use crate::sandbox_support;
use crate::support;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

use sandbox_support::Backend;

/// A static file server on loopback: serves files under its root, records each request path.
pub(super) struct Files {
    pub(super) port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Files {
    pub(super) fn start(root: &Path) -> Files {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (log, root) = (seen.clone(), root.to_owned());
        // Detached: it ends with the test process (nothing on disk, no child process).
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, root) = (log.clone(), root.clone());
                std::thread::spawn(move || serve(stream, &root, &log));
            }
        });
        Files { port, seen }
    }

    pub(super) fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut stream: std::net::TcpStream, root: &Path, log: &Mutex<Vec<String>>) {
    use std::io::{BufRead, BufReader, Write};
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let mut host = String::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if let Some(v) = header.to_ascii_lowercase().strip_prefix("host:") {
                host = v.trim().to_owned();
            }
            if header == "\r\n" || header == "\n" {
                break;
            }
        }
        log.lock().unwrap().push(format!("{host}{path}"));
        let mut file = root.join(path.split('?').next().unwrap().trim_start_matches('/'));
        if path.ends_with('/') {
            // A package index's project page (`/simple/NAME/`).
            file = file.join("index.html");
        }
        let reply = match std::fs::read(&file) {
            Ok(body) if file.is_file() => {
                let kind = match file.extension().and_then(|e| e.to_str()) {
                    Some("html") => "text/html",
                    _ => "application/octet-stream",
                };
                let mut r = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes();
                r.extend(body);
                r
            }
            _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        };
        if stream.write_all(&reply).is_err() {
            return;
        }
    }
}

/// A config dir whose `[sandbox.network]` resolves the test names to loopback and admits
/// loopback and `port`.
pub(super) fn config(dir: &Path, port: u16) {
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "[sandbox.network]\nallow_ports = [{port}]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
             hosts = {{ \"files.example\" = \"127.0.0.1\", \"a.example\" = \"127.0.0.1\", \
             \"b.example\" = \"127.0.0.1\", \"other.example\" = \"127.0.0.1\" }}\n"
        ),
    )
    .unwrap();
}

/// Generates `NAME::{namespaces, bubblewrap, landlock}`: the test function `NAME(backend)` on
/// each rung that serves proxy mode.
macro_rules! per_proxy_rung {
    ($name:ident) => {
        mod $name {
            use super::Backend;

            #[test]
            fn namespaces() {
                super::$name(Backend::Namespaces);
            }

            #[test]
            fn bubblewrap() {
                super::$name(Backend::Bubblewrap);
            }

            #[test]
            fn landlock() {
                super::$name(Backend::Landlock);
            }
        }
    };
}

/// Whether `backend` can run proxy calls here (printing why not, failing when `CI=true`):
/// the backend works, and for the Landlock-only rung the kernel has Landlock's TCP rules
/// (any other failure of a trivial proxy call there fails the test).
pub(super) fn serves_proxy(backend: Backend, test: &str, needs: &[&str]) -> bool {
    if !backend.available(test) || !needs.iter().all(|p| support::have_program(p)) {
        return false;
    }
    if backend != Backend::Landlock {
        return true;
    }
    let ws = tempfile::tempdir().unwrap();
    let cfg = tempfile::tempdir().unwrap();
    let out = run("landlock", cfg.path(), ws.path(), &[], "true");
    if text(&out).contains("needs Landlock ABI 4") {
        support::require_feature(&format!("proxy mode on the landlock rung: {}", text(&out)));
        return false;
    }
    assert!(out.status.success(), "a trivial proxy call: {}", text(&out));
    true
}

/// `zeroclaw sandbox run --backend B --network proxy FLAGS -- sh -c SCRIPT` in `ws`.
fn run(backend: &str, cfg: &Path, ws: &Path, flags: &[&str], script: &str) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zeroclaw"));
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", cfg)
        .args(["sandbox", "run", "--backend", backend, "--network", "proxy"])
        .arg("--workspace")
        .arg(ws)
        .args(flags)
        .args(["--", "sh", "-c", script]);
    cmd.output().expect("run zeroclaw")
}

pub(super) fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

struct Setup {
    _dirs: [tempfile::TempDir; 3],
    cfg: std::path::PathBuf,
    ws: std::path::PathBuf,
    files: Files,
}

/// Served files (`hello.txt`, a bare repository `repo.git` for git's dumb HTTP), a config and
/// a workspace.
fn setup() -> Setup {
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("hello.txt"), "hello through the proxy\n").unwrap();
    let cfg = tempfile::tempdir().unwrap();
    let ws = tempfile::tempdir().unwrap();
    let files = Files::start(served.path());
    config(cfg.path(), files.port);
    Setup {
        cfg: cfg.path().to_owned(),
        ws: ws.path().to_owned(),
        files,
        _dirs: [served, cfg, ws],
    }
}

fn bare_repo(served: &Path) {
    let src = served.join("src");
    let git = |args: &[&str], dir: &Path| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
    };
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("README"), "cloned through the proxy\n").unwrap();
    git(&["init", "-q"], &src);
    git(&["add", "README"], &src);
    git(&["commit", "-qm", "first"], &src);
    git(&["clone", "-q", "--bare", "src", "repo.git"], served);
    git(&["update-server-info"], &served.join("repo.git"));
}

fn an_allowed_name_works_through_curl_python_and_git(b: Backend) {
    if !serves_proxy(b, "egress proxy", &["curl", "python3", "git"]) {
        return;
    }
    let s = setup();
    bare_repo(s._dirs[0].path());
    let port = s.files.port;
    let script = format!(
        "set -e; curl -fsS http://files.example:{port}/hello.txt; \
         python3 -c 'import urllib.request; \
         print(urllib.request.urlopen(\"http://files.example:{port}/hello.txt\").read().decode(), end=\"\")'; \
         git clone -q http://files.example:{port}/repo.git clone; cat clone/README"
    );
    let out = run(
        b.name(),
        &s.cfg,
        &s.ws,
        &["--allow-domain", "files.example"],
        &script,
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.matches("hello through the proxy").count(),
        2,
        "curl and urllib: {all}"
    );
    assert!(stdout.contains("cloned through the proxy"), "git: {all}");
    let seen = s.files.seen();
    assert!(
        seen.contains(&format!("files.example:{port}/hello.txt")),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|r| r.contains("/repo.git/info/refs")),
        "{seen:?}"
    );
}
per_proxy_rung!(an_allowed_name_works_through_curl_python_and_git);

/// A package index served as files (`simple/demo/index.html` linking a wheel), as pip's
/// "simple" repository API lays it out.
fn package_index(served: &Path) {
    let wheel = "demo_pkg-1.0-py3-none-any.whl";
    std::fs::create_dir_all(served.join("simple/demo-pkg")).unwrap();
    std::fs::create_dir_all(served.join("packages")).unwrap();
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
        .arg(served.join("packages").join(wheel))
        .output()
        .unwrap();
    assert!(build.status.success(), "{build:?}");
    std::fs::write(
        served.join("simple/demo-pkg/index.html"),
        format!("<html><body><a href=\"/packages/{wheel}\">{wheel}</a></body></html>\n"),
    )
    .unwrap();
}

fn pip_downloads_a_package_from_an_allowed_index(b: Backend) {
    if !serves_proxy(b, "egress proxy", &["python3"]) {
        return;
    }
    let s = setup();
    package_index(s._dirs[0].path());
    let port = s.files.port;
    let script = format!(
        "python3 -m pip --version >/dev/null 2>&1 || {{ echo NO_PIP; exit 0; }}; \
         set -e; python3 -m pip download -q --no-cache-dir --disable-pip-version-check \
         --no-deps --trusted-host files.example --index-url http://files.example:{port}/simple/ \
         -d dl demo-pkg; ls dl"
    );
    let out = run(
        b.name(),
        &s.cfg,
        &s.ws,
        &["--allow-domain", "files.example"],
        &script,
    );
    let all = text(&out);
    if String::from_utf8_lossy(&out.stdout).contains("NO_PIP") {
        // The child's python3 (the first on its PATH) has no pip: Debian's python3-pip.
        support::require_feature("python3 -m pip (python3-pip) in the confined child");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        s.ws.join("dl/demo_pkg-1.0-py3-none-any.whl").is_file(),
        "the wheel landed in the workspace: {all}"
    );
    let seen = s.files.seen();
    assert!(
        seen.iter().any(|r| r.ends_with("/simple/demo-pkg/")),
        "pip asked the index: {seen:?}"
    );
    assert!(
        seen.iter()
            .any(|r| r.ends_with("/packages/demo_pkg-1.0-py3-none-any.whl")),
        "{seen:?}"
    );
}
per_proxy_rung!(pip_downloads_a_package_from_an_allowed_index);

fn a_denied_name_is_refused_naming_the_rule_and_never_reaches_the_upstream(b: Backend) {
    if !serves_proxy(b, "egress proxy", &["curl"]) {
        return;
    }
    let s = setup();
    let port = s.files.port;
    let script = format!(
        "curl -sS -o /dev/null -w '%{{http_code}}\\n' http://other.example:{port}/hello.txt; \
         curl -sS --socks5-hostname \"${{ALL_PROXY#socks5h://}}\" http://other.example:{port}/hello.txt; \
         echo socks=$?"
    );
    let out = run(
        b.name(),
        &s.cfg,
        &s.ws,
        &["--allow-domain", "files.example"],
        &script,
    );
    let all = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("403\n"), "{all}");
    assert!(
        stdout.contains("socks=") && !stdout.contains("socks=0"),
        "{all}"
    );
    let refused = format!("network: refused other.example:{port} — not in allow_domains");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&refused),
        "{all}"
    );
    assert!(s.files.seen().is_empty(), "{:?}", s.files.seen());
}
per_proxy_rung!(a_denied_name_is_refused_naming_the_rule_and_never_reaches_the_upstream);

/// Each attempt prints `OPEN` when it got through, `refused` and the error otherwise; the
/// proxy's own port is the control. `TCP` and `UDP` are ports the test listens on (host
/// loopback).
const PROBE: &str = r#"python3 - <<'EOF'
import os, socket, stat
def inherited_sockets():
    found = []
    for f in range(3, 1024):
        try:
            if stat.S_ISSOCK(os.fstat(f).st_mode):
                found.append(str(f))
        except OSError:
            pass
    print('sockets=' + ' '.join(found))
inherited_sockets()
def attempt(what, f):
    try:
        f(); print(what, 'OPEN')
    except OSError as e:
        print(what, 'refused', e)
proxy = int(os.environ['HTTP_PROXY'].rsplit(':', 1)[1])
attempt('proxy', lambda: socket.create_connection(('127.0.0.1', proxy), 2).close())
attempt('direct', lambda: socket.create_connection(('127.0.0.1', TCP), 2).close())
def fastopen():
    # Blocking: the send returns once the implicit connect is through (or fails).
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.sendto(b'GET / HTTP/1.0\r\n\r\n', socket.MSG_FASTOPEN, ('127.0.0.1', TCP))
attempt('fastopen', fastopen)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b'zc-udp', ('127.0.0.1', UDP))
    s.sendto(b'zc-udp', ('10.0.0.53', UDP))
attempt('udp', udp)
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(2)
    s.sendto(b'\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x05files\x07example\x00\x00\x01\x00\x01', ('10.0.0.53', 53))
    s.recvfrom(512)
attempt('dns', dns)
def raw():
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.sendto(b'\x08\x00\xf7\xff\x00\x00\x00\x00', ('10.0.0.1', 0))
attempt('raw', raw)
def ping():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
    s.sendto(b'\x08\x00\xf7\xff\x00\x00\x00\x00', ('10.0.0.1', 0))
attempt('ping', ping)
# A name outside the list (on the namespace rung the DNS stub answers allowed names only).
attempt('resolver', lambda: socket.getaddrinfo('other.example', 80))
def listen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(('127.0.0.1', 0)); s.listen()
attempt('bind', listen)
def autolisten():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.listen()
attempt('autolisten', autolisten)
EOF"#;

fn a_direct_connect_udp_raw_or_dns_gets_nowhere(b: Backend) {
    if !serves_proxy(b, "egress proxy", &["python3"]) {
        return;
    }
    let s = setup();
    // What the child must not reach: a TCP and a UDP port on the host's loopback.
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    // And no descriptor of the hand-over (plan, socket, listeners) is left to the command:
    // it inherited no socket (`sockets=`), and where `/proc/self/fd` can be listed (not on the
    // Landlock-only rung) `ls` sees its stdio and the directory it reads.
    let script = PROBE
        .replace("TCP", &tcp.local_addr().unwrap().port().to_string())
        .replace("UDP", &udp.local_addr().unwrap().port().to_string())
        + "\necho fds=$(ls /proc/self/fd)";
    let out = run(
        b.name(),
        &s.cfg,
        &s.ws,
        &["--allow-domain", "files.example"],
        &script,
    );
    let all = text(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("proxy OPEN"), "the control: {all}");
    for what in ["direct", "fastopen", "dns", "raw", "ping", "resolver"] {
        assert!(stdout.contains(&format!("{what} refused")), "{what}: {all}");
    }
    assert!(stdout.contains("sockets=\n"), "{all}");
    if b.has_namespaces() {
        assert!(stdout.contains("fds=0 1 2 3\n"), "{all}");
    }
    if !b.has_namespaces() {
        // Without a network namespace the socket itself is refused (with one, a datagram to
        // 127.0.0.1 reaches the child's own `lo` and nothing else: judged below; and a port
        // bound there is the child's own).
        assert!(stdout.contains("udp refused"), "udp: {all}");
        // Nor may it listen on the host's loopback (Landlock: no TCP bind right).
        assert!(stdout.contains("bind refused"), "bind: {all}");
        // Nor listen on a socket it never bound, which the kernel would autobind on every
        // host address, past Landlock's bind rule (the helper's supervisor refuses it).
        assert!(stdout.contains("autolisten refused"), "autolisten: {all}");
    }
    // Judged from outside: nothing connected, nothing arrived.
    let accepted = tcp.accept();
    assert!(
        matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a direct connection reached the host's listener: {accepted:?}\n{all}"
    );
    let mut buf = [0u8; 16];
    let received = udp.recv_from(&mut buf);
    assert!(
        matches!(&received, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "a datagram reached the host: {received:?}\n{all}"
    );
    assert!(s.files.seen().is_empty(), "{:?}", s.files.seen());
}
per_proxy_rung!(a_direct_connect_udp_raw_or_dns_gets_nowhere);

fn concurrent_runs_with_different_policies_keep_their_own_allowances(b: Backend) {
    if !serves_proxy(b, "egress proxy", &["curl"]) {
        return;
    }
    let s = setup();
    let port = s.files.port;
    let script = format!(
        "for h in a.example b.example; do \
         echo $h=$(curl -sS -o /dev/null -w '%{{http_code}}' http://$h:{port}/hello.txt); done"
    );
    let runs: Vec<_> = ["a.example", "b.example"]
        .into_iter()
        .map(|name| {
            let (cfg, ws, script) = (s.cfg.clone(), s.ws.clone(), script.clone());
            std::thread::spawn(move || run(b.name(), &cfg, &ws, &["--allow-domain", name], &script))
        })
        .collect();
    let outs: Vec<_> = runs.into_iter().map(|r| r.join().unwrap()).collect();
    let a = String::from_utf8_lossy(&outs[0].stdout).into_owned();
    let b = String::from_utf8_lossy(&outs[1].stdout).into_owned();
    assert!(
        a.contains("a.example=200") && a.contains("b.example=403"),
        "{}",
        text(&outs[0])
    );
    assert!(
        b.contains("a.example=403") && b.contains("b.example=200"),
        "{}",
        text(&outs[1])
    );
}
per_proxy_rung!(concurrent_runs_with_different_policies_keep_their_own_allowances);

#[test]
fn a_rung_without_the_proxy_refuses_it_instead_of_falling_back() {
    let s = setup();
    for backend in ["none"] {
        let out = run(backend, &s.cfg, &s.ws, &[], "echo RAN");
        let all = text(&out);
        if all.contains(&format!("sandbox backend {backend} is unavailable")) {
            support::require_feature(&format!("{backend}: {all}"));
            continue;
        }
        assert_eq!(out.status.code(), Some(125), "{backend}: {all}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("RAN"),
            "{all}"
        );
        assert!(
            all.contains("network proxy is not available"),
            "{backend}: {all}"
        );
    }
}
