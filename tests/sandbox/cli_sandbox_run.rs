//! `zeroclaw sandbox run` reads the configuration every other command reads (`--config-dir`,
//! `ZEROCLAW_CONFIG_DIR`, the `ZEROCLAW_*` overlay): `[sandbox.limits]` applies, `--timeout`
//! still overrides it; a missing `--allow-read`/`--allow-write` root or workspace is refused
//! by name (125, as every setup failure), an unknown `--network` by clap (2); `--help` lists
//! the network policies. It denies what a session denies: run in a directory holding the
//! config directory or a `forbidden_paths` entry, the confined `cat` cannot read them; a
//! workspace (or `--allow-write` root) inside one is refused by name with 125.

use crate::sandbox_support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sandbox_support::Backend;

/// `program` (`zeroclaw`, or a shell that execs it) with a clean `ZEROCLAW_*` environment and
/// `ZEROCLAW_CONFIG_DIR=config_dir`.
pub(crate) fn clean_command(program: &str, config_dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (name, _) in std::env::vars().filter(|(k, _)| k.starts_with("ZEROCLAW_")) {
        cmd.env_remove(name);
    }
    cmd.env("ZEROCLAW_CONFIG_DIR", config_dir);
    cmd
}

/// `zeroclaw sandbox run ARGS` with a clean `ZEROCLAW_*` environment plus `env`.
fn sandbox_run(config_dir: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Output {
    // Never the machine's own ~/.zeroclaw: an empty config dir unless the test gives one.
    let scratch = tempfile::tempdir().unwrap();
    let mut cmd = clean_command(
        env!("CARGO_BIN_EXE_zeroclaw"),
        config_dir.unwrap_or(scratch.path()),
    );
    cmd.args(["sandbox", "run"])
        .args(args)
        .envs(env.iter().copied());
    cmd.output().expect("run zeroclaw")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `sleep 3` under `backend`, with `setup` choosing where the limit comes from; returns the
/// output and how long it took.
fn sleep_three(
    backend: Backend,
    config_dir: Option<&Path>,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Output, Duration) {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().to_str().unwrap().to_owned();
    let mut args = vec!["--backend", backend.name(), "--workspace", ws.as_str()];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "sleep", "3"]);
    let start = Instant::now();
    let out = sandbox_run(config_dir, &args, env);
    (out, start.elapsed())
}

fn limits_from_the_environment(b: Backend) {
    let env = [("ZEROCLAW_sandbox__limits__wall_time_secs", "1")];
    let (out, took) = sleep_three(b, None, &[], &env);
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("wall-time limit reached"),
        "{}",
        stderr(&out)
    );
    assert!(
        took < Duration::from_millis(2900),
        "killed at the limit, took {took:?}"
    );
}

fn limits_from_the_config_dir(b: Backend) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[sandbox.limits]\nwall_time_secs = 1\n",
    )
    .unwrap();
    let config_dir = dir.path().to_str().unwrap();
    // The flag, not the variable (which points at an empty directory).
    let (out, _) = sleep_three(b, None, &["--config-dir", config_dir], &[]);
    assert_eq!(out.status.code(), Some(124), "{}", stderr(&out));
    // --timeout overrides the configured wall time.
    let (out, _) = sleep_three(b, Some(dir.path()), &["--timeout", "10"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// The foreground run's output limit: exactly the limit reaches the caller (the chunk that
/// crosses it is cut), then the tree is killed and the run ends with 123.
fn output_limit_cuts_and_kills(b: Backend) {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path().to_str().unwrap().to_owned();
    let env = [("ZEROCLAW_sandbox__limits__output_bytes", "1000")];
    let args = [
        "--backend",
        b.name(),
        "--workspace",
        ws.as_str(),
        "--",
        "yes",
    ];
    let out = sandbox_run(None, &args, &env);
    assert_eq!(out.status.code(), Some(123), "{b:?}: {}", stderr(&out));
    assert_eq!(out.stdout.len(), 1000, "{b:?}");
    assert!(
        stderr(&out).contains("output limit reached"),
        "{}",
        stderr(&out)
    );
}

/// Runs `test` on each Linux backend that exists here (skipping, or failing on CI, as the
/// sandbox suites do).
fn on_each_backend(name: &str, test: fn(Backend)) {
    for b in [Backend::Namespaces, Backend::Bubblewrap, Backend::Landlock] {
        if b.available(name) {
            test(b);
        }
    }
}

#[test]
fn the_wall_time_limit_comes_from_the_environment() {
    on_each_backend(
        "the_wall_time_limit_comes_from_the_environment",
        limits_from_the_environment,
    );
}

#[test]
fn the_wall_time_limit_comes_from_the_config_dir_and_timeout_overrides_it() {
    on_each_backend(
        "the_wall_time_limit_comes_from_the_config_dir_and_timeout_overrides_it",
        limits_from_the_config_dir,
    );
}

#[test]
fn the_output_limit_cuts_a_foreground_run_and_kills_it() {
    on_each_backend(
        "the_output_limit_cuts_a_foreground_run_and_kills_it",
        output_limit_cuts_and_kills,
    );
}

#[test]
fn an_invalid_configuration_is_a_setup_failure() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("config.toml"),
        "[sandbox.limits]\nwall_time_secs = \"soon\"\n",
    )
    .unwrap();
    let out = sandbox_run(Some(dir.path()), &["--", "true"], &[]);
    assert_eq!(out.status.code(), Some(125), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("sandbox.limits.wall_time_secs"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn roots_and_workspaces_that_do_not_exist_are_refused_by_name() {
    let ws = tempfile::tempdir().unwrap();
    let missing = ws.path().join("no-such-dir");
    let missing = missing.to_str().unwrap();
    let ws = ws.path().to_str().unwrap();
    for args in [
        ["--workspace", ws, "--allow-read", missing],
        ["--workspace", ws, "--allow-write", missing],
        ["--allow-read", ws, "--workspace", missing],
    ] {
        let flag = args[2];
        let out = sandbox_run(None, &[&args[..], &["--", "true"]].concat(), &[]);
        assert_eq!(out.status.code(), Some(125), "{flag}: {}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!("{flag} {missing} does not exist")),
            "{flag}: {}",
            stderr(&out)
        );
    }
    let out = sandbox_run(None, &["--network", "open", "--", "true"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn help_lists_the_network_policies() {
    let out = sandbox_run(None, &["--help"], &[]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("[possible values: deny, proxy, allow]"),
        "{help}"
    );
    assert!(help.contains("--allow-domain"), "{help}");
    assert!(help.contains("--config-dir"), "{help}");
}

const VISIBLE: &str = "zc-visible-5b1e";
const TOKEN: &str = "zc-token-canary-a93f";

/// `top/` holds the config directory `conf/` (with the bridge token and `tokens.json`, and a
/// config forbidding `top/private/`), `private/secret.txt` and a `visible.txt`.
fn scene_holding_the_config_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let top = tempfile::tempdir().unwrap();
    let root = top.path().canonicalize().unwrap();
    let conf = root.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::create_dir_all(root.join("private/sub")).unwrap();
    std::fs::write(
        conf.join("config.toml"),
        format!(
            "[autonomy]\nforbidden_paths = [\"{}\"]\n",
            root.join("private").display()
        ),
    )
    .unwrap();
    std::fs::write(conf.join("acp-bridge-token"), TOKEN).unwrap();
    std::fs::write(conf.join("tokens.json"), format!("{{\"t\": \"{TOKEN}\"}}")).unwrap();
    std::fs::write(root.join("private/secret.txt"), TOKEN).unwrap();
    std::fs::write(root.join("visible.txt"), VISIBLE).unwrap();
    (top, root)
}

/// Run in `top/` (the current directory, no `--workspace`): the config directory's tokens and
/// the forbidden `private/` are masked, what is beside them is read.
fn config_dir_and_forbidden_paths_inside_the_workspace_are_masked(b: Backend) {
    let (_top, root) = scene_holding_the_config_dir();
    let script = "cat visible.txt; echo; cat conf/acp-bridge-token conf/tokens.json \
                  private/secret.txt; echo done";
    let out = clean_command(env!("CARGO_BIN_EXE_zeroclaw"), &root.join("conf"))
        .current_dir(&root)
        .args([
            "sandbox",
            "run",
            "--backend",
            b.name(),
            "--",
            "sh",
            "-c",
            script,
        ])
        .output()
        .expect("run zeroclaw");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(VISIBLE) && stdout.contains("done"),
        "{b:?}: the command ran: {stdout}\n{}",
        stderr(&out)
    );
    assert!(
        !stdout.contains(TOKEN),
        "{b:?}: a denied file was read: {stdout}"
    );
}

#[test]
fn the_config_dir_and_forbidden_paths_inside_the_workspace_are_masked() {
    on_each_backend(
        "the_config_dir_and_forbidden_paths_inside_the_workspace_are_masked",
        config_dir_and_forbidden_paths_inside_the_workspace_are_masked,
    );
}

#[test]
fn a_workspace_or_writable_root_inside_a_denied_path_is_refused_by_name() {
    let (_top, root) = scene_holding_the_config_dir();
    let conf = root.join("conf");
    let private = root.join("private");
    let inner = private.join("sub");
    let zeroclaw = env!("CARGO_BIN_EXE_zeroclaw");
    let cases: [(&[&str], &std::path::Path, &std::path::Path); 4] = [
        (&["--workspace", conf.to_str().unwrap()], &root, &conf),
        (&[], &conf, &conf),
        (&["--workspace", inner.to_str().unwrap()], &root, &private),
        (&["--allow-write", inner.to_str().unwrap()], &root, &private),
    ];
    for (flags, cwd, denied) in cases {
        let out = clean_command(zeroclaw, &conf)
            .current_dir(cwd)
            .args(["sandbox", "run"])
            .args(flags)
            .args(["--", "true"])
            .output()
            .expect("run zeroclaw");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(125), "{flags:?} in {cwd:?}: {err}");
        assert!(
            err.contains(&format!("inside the denied path {}", denied.display())),
            "{flags:?} in {cwd:?}: {err}"
        );
    }
}
