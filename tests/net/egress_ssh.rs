//! `git` over SSH through the egress policy (issue 35 item 2): an `allow = ["git.example:PORT"]`
//! entry relays raw TCP, so a confined `git clone` and `git push` over `ssh://` with a deploy
//! key in the workspace reach a loopback `sshd` this test starts, through transparent egress
//! (ssh ignores the proxy variables), on the namespace rungs, launched by root and by
//! `nobody`. Controls: the same clone to a port the policy does not list (the same `sshd`
//! listens there too) fails, and the launcher's `~/.ssh` stays unreadable inside though its
//! home is allowed for reading. The name resolves through the policy's `hosts` map to
//! 127.0.0.1, admitted by `allow_cidrs`.

use crate::egress_transparent::{Launcher, UNSET, run_with_home, serves_proxy_as, text};
use crate::support;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const SSHD: &str = "/usr/sbin/sshd";
/// Debian's sshd, started as root, insists on its privilege separation directory.
const PRIVSEP_DIR: &str = "/run/sshd";

/// A loopback `sshd` (`-D -e`, a config, host key and authorized keys of its own) listening on
/// two ports of 127.0.0.1; killed and reaped on drop.
struct Sshd {
    child: Child,
    ports: [u16; 2],
    _privsep: Option<Privsep>,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (sshds running, whether this process made [`PRIVSEP_DIR`]): the directory it made goes
/// when the last of its sshds has ended (the tests run in parallel, and sshd needs it for
/// every connection).
static PRIVSEP_USERS: std::sync::Mutex<(usize, bool)> = std::sync::Mutex::new((0, false));

/// One running sshd's hold on [`PRIVSEP_DIR`].
struct Privsep;

impl Privsep {
    fn hold() -> Privsep {
        let mut users = PRIVSEP_USERS.lock().unwrap_or_else(|e| e.into_inner());
        if users.0 == 0 && !Path::new(PRIVSEP_DIR).exists() {
            std::fs::create_dir(PRIVSEP_DIR).expect("mkdir /run/sshd");
            users.1 = true;
        }
        users.0 += 1;
        Privsep
    }
}

impl Drop for Privsep {
    fn drop(&mut self) {
        let mut users = PRIVSEP_USERS.lock().unwrap_or_else(|e| e.into_inner());
        users.0 -= 1;
        if users.0 == 0 && users.1 {
            let _ = std::fs::remove_dir(PRIVSEP_DIR);
            users.1 = false;
        }
    }
}

/// A free port on 127.0.0.1 (bound, then released for sshd to take).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("run a setup command");
    assert!(out.status.success(), "{cmd:?}: {}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl Sshd {
    /// Starts sshd with its files in `dir`, letting in the holder of `authorized` (a public
    /// key) as the test's own user; returns once it answers with its banner.
    fn start(dir: &Path, authorized: &Path) -> Sshd {
        let host_key = dir.join("host_key");
        ok(Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&host_key));
        let keys = dir.join("authorized_keys");
        std::fs::copy(authorized, &keys).unwrap();
        let ports = [free_port(), free_port()];
        let config = dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {}\nPort {}\nListenAddress 127.0.0.1\nHostKey {}\nAuthorizedKeysFile {}\n\
                 StrictModes no\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\n\
                 UsePAM {pam}\nPidFile none\n",
                ports[0],
                ports[1],
                host_key.display(),
                keys.display(),
                pam = if locked_account() { "yes" } else { "no" },
            ),
        )
        .unwrap();
        let privsep = nix::unistd::geteuid().is_root().then(Privsep::hold);
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("sshd.log")).unwrap())
            .spawn()
            .expect("start sshd");
        let mut sshd = Sshd {
            child,
            ports,
            _privsep: privsep,
        };
        for port in ports {
            sshd.await_banner(port);
        }
        sshd
    }

    /// Connects until sshd's banner comes (it is listening), failing if sshd exits first.
    fn await_banner(&mut self, port: u16) {
        use std::io::Read;
        loop {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                let mut banner = [0u8; 8];
                if s.read_exact(&mut banner).is_ok() && banner.starts_with(b"SSH-2.0") {
                    return;
                }
            }
            let exited = self.child.try_wait().expect("wait for sshd");
            assert!(
                exited.is_none(),
                "sshd exited ({exited:?}) before listening on {port}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// Whether the test user's password is locked (`!` in `/etc/shadow`, as root's is on many
/// installs): sshd without PAM refuses such an account even a key, so the config then uses
/// PAM (whose account checks admit a key); otherwise not (PAM's session modules can fail
/// where a login uid cannot be set). Unreadable shadow: not locked.
fn locked_account() -> bool {
    let user = ok(Command::new("id").arg("-un")).trim().to_owned();
    std::fs::read_to_string("/etc/shadow").is_ok_and(|shadow| {
        shadow
            .lines()
            .filter_map(|l| l.split_once(':'))
            .any(|(name, rest)| name == user && rest.starts_with('!'))
    })
}

/// Whether the programs this test needs are here (a printed skip otherwise, a failure with
/// `CI=true`).
fn have_ssh_tools() -> bool {
    if !Path::new(SSHD).exists() {
        support::require_feature(&format!("{SSHD} is not installed (openssh-server)"));
        return false;
    }
    ["ssh", "ssh-keygen", "git"]
        .iter()
        .all(|p| support::have_program(p))
}

/// A bare repository at `dir/repo.git` with one commit (`README` saying `from-the-host`) on
/// `main`.
fn bare_repository(dir: &Path) -> PathBuf {
    let seed = dir.join("seed");
    let git = |args: &[&str], at: &Path| {
        ok(Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(["-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(at));
    };
    std::fs::create_dir(&seed).unwrap();
    git(&["init", "-q"], &seed);
    std::fs::write(seed.join("README"), "from-the-host\n").unwrap();
    git(&["add", "README"], &seed);
    git(&["commit", "-q", "-m", "seed"], &seed);
    let bare = dir.join("repo.git");
    git(
        &["clone", "-q", "--bare", "seed", bare.to_str().unwrap()],
        dir,
    );
    bare
}

/// `git clone` and `git push` over SSH by name through transparent egress on `backend`,
/// launched by `launcher` (see the module's comment).
fn git_over_ssh_reaches_a_listed_port_and_nothing_else(launcher: Launcher, backend: &str) {
    if !have_ssh_tools() || !serves_proxy_as(launcher, backend) {
        return;
    }
    let scratch = tempfile::Builder::new()
        .prefix("zc-ssh-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let dir = scratch.path().canonicalize().unwrap();
    let (ws, cfg, home) = (dir.join("ws"), dir.join("cfg"), dir.join("home"));
    for d in [&ws, &cfg, &home.join(".ssh")] {
        std::fs::create_dir_all(d).unwrap();
    }
    // The launcher's own key, which must stay out of reach.
    let canary = format!("ZCSSHCANARY{}", std::process::id());
    std::fs::write(home.join(".ssh/id_ed25519"), &canary).unwrap();
    let deploy = ws.join("deploy_key");
    ok(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "deploy", "-f"])
        .arg(&deploy));
    let repo = bare_repository(&dir);
    let sshd = Sshd::start(&dir, &deploy.with_extension("pub"));
    let [listed, unlisted] = sshd.ports;
    std::fs::write(
        cfg.join("config.toml"),
        format!(
            "[sandbox.network]\nallow_cidrs = [\"127.0.0.0/8\"]\n\
             allow = [\"git.example:{listed}\"]\nhosts = {{ \"git.example\" = \"127.0.0.1\" }}\n"
        ),
    )
    .unwrap();
    launcher.own(&[&ws, &cfg, &home]);
    let user = ok(Command::new("id").arg("-un")).trim().to_owned();
    let url = |port: u16| format!("ssh://{user}@git.example:{port}{}", repo.display());
    let script = format!(
        "{UNSET}export GIT_SSH_COMMAND='ssh -i ./deploy_key -o StrictHostKeyChecking=no \
         -o UserKnownHostsFile=/dev/null -o BatchMode=yes'\n\
         export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid \
         GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.invalid\n\
         git clone -q {listed_url} clone && echo \"cloned $(cat clone/README)\"\n\
         cd clone && echo inside > INSIDE && git add INSIDE && git commit -q -m from-inside \
         && GIT_SSH_COMMAND=\"$(echo \"$GIT_SSH_COMMAND\" | sed 's|\\./deploy_key|../deploy_key|')\" \
         git push -q origin HEAD:main && echo pushed; cd ..\n\
         git clone -q {unlisted_url} other; echo \"unlisted exit $?\"\n\
         cat {key}; echo \"key exit $?\"\n",
        listed_url = url(listed),
        unlisted_url = url(unlisted),
        key = home.join(".ssh/id_ed25519").display(),
    );
    let out = run_with_home(launcher, backend, &cfg, &ws, Some(&home), &script);
    let log = std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
    let all = format!("{}\nsshd's log:\n{log}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("cloned from-the-host\n"), "{all}");
    assert!(stdout.contains("pushed\n"), "{all}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("unlisted exit ") && l != "unlisted exit 0"),
        "{all}"
    );
    assert!(
        !all.contains(&canary),
        "the launcher's ~/.ssh was read: {all}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("key exit ") && l != "key exit 0"),
        "{all}"
    );
    // Judged on the host: the push landed in the bare repository.
    let head = ok(Command::new("git").arg("--git-dir").arg(&repo).args([
        "log",
        "-1",
        "--format=%s",
        "main",
    ]));
    assert_eq!(head.trim(), "from-inside", "{all}");
    // No listener of transparent egress at a port the policy cannot allow: the kernel of
    // the call's namespace refuses it, and the host's sshd there never sees a connection.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "connect to host git.example port {unlisted}: Connection refused"
        )),
        "{all}"
    );
    drop(sshd);
}

mod git_over_ssh_reaches_a_listed_port_and_nothing_else {
    use super::Launcher;

    #[test]
    fn namespaces() {
        super::git_over_ssh_reaches_a_listed_port_and_nothing_else(Launcher::Me, "namespaces");
    }

    #[test]
    fn bubblewrap() {
        super::git_over_ssh_reaches_a_listed_port_and_nothing_else(Launcher::Me, "bubblewrap");
    }

    #[test]
    fn namespaces_as_nobody() {
        super::git_over_ssh_reaches_a_listed_port_and_nothing_else(Launcher::Nobody, "namespaces");
    }

    #[test]
    fn bubblewrap_as_nobody() {
        super::git_over_ssh_reaches_a_listed_port_and_nothing_else(Launcher::Nobody, "bubblewrap");
    }
}
