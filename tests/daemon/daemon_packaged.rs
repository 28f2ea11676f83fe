//! The packaged service's layout, without systemd as PID 1: the real unit files
//! (packaging/systemd/zeroclaw.{service,socket}, tmpfiles.d, sysusers.d) are parsed, their
//! directories made under a temp root (every absolute path remapped below it), and `zeroclaw
//! daemon` runs socket-activated with exactly the unit's `Environment=` (paths remapped), its
//! `WorkingDirectory=` and the service user's `HOME`. Through `zeroclaw-acp-bridge` a session
//! opens in a project under a tree the unit makes writable, and one in `workspace_dir` (the
//! state directory) is refused.

use crate::support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::json;
use support::acp_client::AcpClient;
use support::ws_daemon::{Launched, scrubbed};

/// systemd's default `PATH` for services (no `Environment=PATH=` in the unit).
const SYSTEMD_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin";

fn packaging(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("packaging")
        .join(rel);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `Key=value` lines of one `[section]` of a unit file, comments left out, in order.
fn section(text: &str, name: &str) -> BTreeMap<String, Vec<String>> {
    let mut keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == format!("[{name}]");
        } else if inside && !line.is_empty() && !line.starts_with(['#', ';']) {
            let (key, value) = line.split_once('=').expect("Key=value");
            assert!(
                !value.contains('%') && !value.contains('"'),
                "specifiers and quotes are not handled here: {line}"
            );
            keys.entry(key.to_owned())
                .or_default()
                .push(value.to_owned());
        }
    }
    keys
}

/// Every value of `key`, split on whitespace (paths lists, `Environment=` assignments).
fn words<'a>(keys: &'a BTreeMap<String, Vec<String>>, key: &str) -> Vec<&'a str> {
    keys.get(key)
        .into_iter()
        .flatten()
        .flat_map(|v| v.split_whitespace())
        .collect()
}

fn single<'a>(keys: &'a BTreeMap<String, Vec<String>>, key: &str) -> &'a str {
    match keys.get(key).map(Vec::as_slice) {
        Some([value]) => value,
        other => panic!("expected one {key}=, found {other:?}"),
    }
}

/// The packaged unit's layout with every absolute path moved below `root`.
struct Layout {
    root: PathBuf,
    env: Vec<(String, String)>,
    working_dir: PathBuf,
    writable: Vec<PathBuf>,
    workspace_dir: PathBuf,
    socket: PathBuf,
    fd_name: String,
}

impl Layout {
    fn remap(&self, path: &str) -> PathBuf {
        assert!(path.starts_with('/'), "not absolute: {path}");
        self.root.join(&path[1..])
    }

    /// Reads the unit files and makes the directories tmpfiles.d and `StateDirectory=` create.
    fn packaged(root: &Path) -> Layout {
        let service = section(&packaging("systemd/zeroclaw.service"), "Service");
        let socket = section(&packaging("systemd/zeroclaw.socket"), "Socket");
        let mut layout = Layout {
            root: root.to_path_buf(),
            env: Vec::new(),
            working_dir: PathBuf::new(),
            writable: Vec::new(),
            workspace_dir: PathBuf::new(),
            socket: PathBuf::new(),
            fd_name: single(&socket, "FileDescriptorName").to_owned(),
        };
        // tmpfiles.d: the directories the package creates (and a boot re-creates).
        for line in packaging("tmpfiles.d/zeroclaw.conf").lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if let ["d", path, mode, ..] = fields.as_slice() {
                let dir = layout.remap(path);
                std::fs::create_dir_all(&dir).unwrap();
                let mode = u32::from_str_radix(mode, 8).expect("octal mode");
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
            }
        }
        for name in words(&service, "StateDirectory") {
            let dir = layout.remap(&format!("/var/lib/{name}"));
            std::fs::create_dir_all(&dir).unwrap();
            layout.writable.push(dir);
        }
        for path in words(&service, "ReadWritePaths") {
            let optional = path.starts_with('-');
            let dir = layout.remap(path.trim_start_matches(['-', '+']));
            // systemd refuses to start a unit whose (non-optional) ReadWritePaths= is missing.
            assert!(
                optional || dir.is_dir(),
                "ReadWritePaths={path} is not created by tmpfiles.d/zeroclaw.conf"
            );
            layout.writable.push(dir);
        }
        for assignment in words(&service, "Environment") {
            let (key, value) = assignment.split_once('=').expect("VAR=value");
            let value = match value.starts_with('/') {
                true => layout.remap(value).display().to_string(),
                false => value.to_owned(),
            };
            layout.env.push((key.to_owned(), value));
        }
        // systemd sets HOME, USER and LOGNAME from User= (sysusers.d gives its home).
        let user = single(&service, "User");
        let home = packaging("sysusers.d/zeroclaw.conf")
            .lines()
            .find(|l| l.split_whitespace().take(2).eq(["u", user]))
            .and_then(|l| l.rsplit('"').next())
            .and_then(|rest| rest.split_whitespace().next())
            .map(str::to_owned)
            .expect("the service user in sysusers.d");
        let home = layout.remap(&home).display().to_string();
        layout.env.extend([
            ("HOME".to_owned(), home),
            ("USER".to_owned(), user.to_owned()),
            ("LOGNAME".to_owned(), user.to_owned()),
            ("PATH".to_owned(), SYSTEMD_PATH.to_owned()),
        ]);
        layout.working_dir = layout.remap(single(&service, "WorkingDirectory"));
        layout.workspace_dir = PathBuf::from(
            &layout
                .env
                .iter()
                .find(|(k, _)| k == "ZEROCLAW_workspace_dir")
                .expect("the unit sets ZEROCLAW_workspace_dir")
                .1,
        );
        layout.socket = layout.remap(single(&socket, "ListenStream"));
        layout
    }

    /// `systemd-socket-activate` on the unit's socket (its fd name), running `zeroclaw daemon`
    /// with only the unit's environment, in its working directory.
    fn activate(&self) -> Launched {
        let mut cmd = Command::new("systemd-socket-activate");
        cmd.env_clear()
            .current_dir(&self.working_dir)
            .arg(format!("--listen={}", self.socket.display()))
            .arg(format!("--fdname={}", self.fd_name));
        for (key, value) in &self.env {
            cmd.arg(format!("--setenv={key}={value}"));
        }
        cmd.arg(env!("CARGO_BIN_EXE_zeroclaw")).arg("daemon");
        let mut launched = Launched::spawn(cmd);
        launched.wait_text("as 3");
        launched
    }
}

#[test]
fn a_session_opens_in_the_packaged_projects_root_and_not_in_workspace_dir() {
    if !support::have_program("systemd-socket-activate") {
        return;
    }
    let temp = tempfile::tempdir().unwrap();
    let root = temp.path().canonicalize().unwrap();
    let layout = Layout::packaged(&root);
    let daemon = layout.activate();

    // The editor's side: its own config directory, the daemon's socket by URL.
    let user_config = root.join("alice-config");
    std::fs::create_dir(&user_config).unwrap();
    let mut bridge = scrubbed(env!("CARGO_BIN_EXE_zeroclaw-acp-bridge"), &user_config);
    bridge.args(["--url", &format!("unix:{}", layout.socket.display())]);
    let client = AcpClient::spawn_command(bridge, &user_config);
    assert_eq!(
        client.initialize()["protocolVersion"],
        1,
        "{}",
        daemon.text()
    );

    // Every tree the unit lets the daemon write that is not the state itself is a projects
    // root; a project there (as an operator or user would make it) opens as a session.
    let roots: Vec<&PathBuf> = layout
        .writable
        .iter()
        .filter(|dir| !dir.starts_with(&layout.workspace_dir))
        .collect();
    assert!(
        !roots.is_empty(),
        "the unit makes only workspace_dir ({}) writable, a denied path: no session can open \
         anywhere (writable: {:?})",
        layout.workspace_dir.display(),
        layout.writable
    );
    for projects in roots {
        let project = projects.join("demo");
        std::fs::create_dir(&project).unwrap();
        let answer = client.request("session/new", json!({"cwd": project, "mcpServers": []}));
        assert_eq!(
            answer["result"]["workspaceDir"],
            json!(project),
            "session/new in {}: {answer}\n{}",
            project.display(),
            daemon.text()
        );
    }

    // The negative control: the state directory itself is refused, with the reason.
    let refused = client.call_err(
        "session/new",
        json!({"cwd": layout.workspace_dir, "mcpServers": []}),
    );
    assert_eq!(refused["code"], -32602, "{refused}");
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("is refused")
            && message.contains(&*layout.workspace_dir.to_string_lossy()),
        "{refused}"
    );
    drop(client);
    drop(daemon);
}
