//! Running a tool's work in a confined child: the process-wide [`Sandbox`] (created once from
//! `[sandbox]`; a failure is reported to the model on every call, never run unconfined), the
//! in-process operations of [`super::ops`], and the mapping of an outcome to a tool result.

use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use serde::Serialize;
use serde::de::DeserializeOwned;
use zeroclaw_sandbox::{End, Network, Outcome, Profile, Sandbox, SandboxError};

use super::{ToolContext, ToolError};
use crate::approval::{gate, network};
use crate::audit;
use crate::egress::proxy::Refusal;
use crate::policy::Policy;

static SANDBOX: OnceLock<Result<Sandbox, String>> = OnceLock::new();

/// The process's sandbox, created on first use from the policy's `[sandbox]` settings.
pub fn sandbox(policy: &Policy) -> Result<&'static Sandbox, ToolError> {
    let sandbox = SANDBOX.get_or_init(|| {
        Sandbox::new(policy.backend, policy.allow_partial).map_err(|e| e.to_string())
    });
    sandbox.as_ref().map_err(|e| {
        ToolError(format!(
            "sandbox: confinement is unavailable, so nothing runs ({e}); \
             see `zeroclaw doctor`"
        ))
    })
}

/// The profile of this call: the policy's, plus `extra` roots for a `full` session.
pub fn profile(ctx: &ToolContext, extra: &[(&Path, bool)]) -> Profile {
    ctx.env.policy.profile(&ctx.cwd, extra)
}

/// The profile of a call that only reads (the file tools' reads and searches): [`profile`]
/// with the workspace read-only, so nothing in it is guarded or staged for the call.
pub fn read_profile(ctx: &ToolContext, extra: &[(&Path, bool)]) -> Profile {
    profile(ctx, extra).read_only_workspace()
}

/// The profile of a `shell` command (the whole host but the denied paths in `full`), with the
/// session's persistent package caches in its HOME ([`crate::caches`]).
pub fn shell_profile(ctx: &ToolContext) -> Profile {
    let policy = &ctx.env.policy;
    let scope = &ctx.env.audit;
    policy.caches.bind(
        policy.shell_profile(&ctx.cwd),
        scope.principal.as_deref(),
        &scope.agent,
        &ctx.cwd,
    )
}

/// Runs `sh -c command` confined; cancelled with the turn. With `network = proxy`, the
/// session's egress proxy serves the call for its whole life (asking the client about
/// unlisted names in `supervised`); its refusals come back too.
pub async fn run_shell(
    ctx: &ToolContext,
    profile: &Profile,
    command: &str,
) -> Result<(Outcome, Vec<Refusal>), ToolError> {
    let sandbox = audited(ctx, sandbox(&ctx.env.policy)).await?;
    gate::record_start(ctx).await?;
    let started = Instant::now();
    let cancel = ctx.cancel.clone().cancelled_owned();
    let run = match &ctx.env.policy.egress {
        Some(egress) if profile.network == Network::Proxy => {
            let argv = ["sh", "-c", command];
            let approver = network::for_call(ctx);
            let observer = super::network_audit::for_call(ctx);
            let credentials = audited(
                ctx,
                ctx.env
                    .credentials
                    .get(egress.credentials(), egress.extra_cas())
                    .map_err(ToolError),
            )
            .await?;
            let run = crate::egress::serve::run_proxied;
            run(
                sandbox,
                profile,
                argv,
                egress,
                approver,
                Some(observer),
                credentials,
                |_, _| {},
                cancel,
            )
            .await
        }
        _ => sandbox
            .run(profile, ["sh", "-c", command], cancel)
            .await
            .map(|outcome| (outcome, Vec::new())),
    };
    let (outcome, refusals) = audited(ctx, run.map_err(setup_failure)).await?;
    audit::tool::note_outcome(profile, &outcome, started.elapsed());
    git_refusals(ctx, &outcome).await?;
    Ok((outcome, refusals))
}

/// Records each change to a repository's git directory that validation refused at landing
/// (`policy.decision`, decision `deny`, rule `git_landing`, the line as its reason).
async fn git_refusals(ctx: &ToolContext, outcome: &Outcome) -> Result<(), ToolError> {
    for line in &outcome.findings.refused {
        let event = gate::call_event(ctx, "policy.decision", "")
            .with("decision", "deny")
            .with("rule", "git_landing")
            .with("reason", line.as_str());
        gate::audit(event).await?;
    }
    Ok(())
}

/// A sandbox error as the tool's error, with its stage when the helper named one.
fn setup_failure(error: SandboxError) -> ToolError {
    ToolError(format!("sandbox: {error}"))
}

/// Passes `result` on; an error (confinement could not be set up) is recorded first.
async fn audited<T>(ctx: &ToolContext, result: Result<T, ToolError>) -> Result<T, ToolError> {
    if let Err(error) = &result {
        let stage = sandbox_stage(&error.0);
        crate::metrics::get().sandbox_failure(&stage);
        // A refusal to run unconfined: found with the policy's denials too.
        let event = gate::call_event(ctx, "sandbox.failure", "")
            .with("stage", stage)
            .with("error", error.0.as_str())
            .with("decision", "deny")
            .with("rule", "sandbox_setup");
        gate::audit(event).await?;
    }
    result
}

/// The stage named in a setup error's text (`... at stage NAME: ...`), else `setup`.
fn sandbox_stage(text: &str) -> String {
    text.split_once("at stage ")
        .and_then(|(_, rest)| rest.split([':', ' ']).next())
        .filter(|s| !s.is_empty())
        .unwrap_or("setup")
        .to_owned()
}

/// Runs the operation `op` confined with a JSON payload and parses its JSON answer; the op's
/// own error text (e.g. "Permission denied") becomes the tool error.
pub async fn run_op<P: Serialize, R: DeserializeOwned>(
    ctx: &ToolContext,
    profile: &Profile,
    op: &str,
    payload: &P,
) -> Result<R, ToolError> {
    let sandbox = audited(ctx, sandbox(&ctx.env.policy)).await?;
    let payload = serde_json::to_vec(payload).map_err(|e| ToolError(e.to_string()))?;
    // The in-process operations never need the network: a proxy session's are denied it.
    let mut profile = profile.clone();
    if profile.network == Network::Proxy {
        profile.network = Network::Deny;
    }
    let profile = &profile;
    gate::record_start(ctx).await?;
    let started = Instant::now();
    let run = sandbox
        .run_op(profile, op, payload, ctx.cancel.clone().cancelled_owned())
        .await;
    let outcome = audited(ctx, run.map_err(setup_failure)).await?;
    audit::tool::note_outcome(profile, &outcome, started.elapsed());
    git_refusals(ctx, &outcome).await?;
    if let Some(reason) = ended_early(&outcome) {
        return Err(ToolError(reason));
    }
    if outcome.shell_code() != 0 {
        let text = String::from_utf8_lossy(&outcome.stderr).trim().to_owned();
        return Err(ToolError(if text.is_empty() {
            format!("{op} failed in the sandbox (exit {})", outcome.shell_code())
        } else {
            text
        }));
    }
    serde_json::from_slice(&outcome.stdout)
        .map_err(|e| ToolError(format!("{op}: unreadable answer from the sandbox: {e}")))
}

/// The one line that says the files a call left in its private places (`/tmp`, `$HOME`)
/// are gone, if it left any.
pub fn discarded_note(outcome: &Outcome) -> Option<String> {
    (!outcome.findings.discarded.is_empty()).then(|| {
        format!(
            "note: the files this command left in {} were discarded when it ended (private \
             to the call); write what must last in the workspace",
            outcome.findings.discarded.join(" and ")
        )
    })
}

/// The one line that says a call's `git config --global` changes are gone, if it made any:
/// the child's global git config is a validated copy of the user's, private to the call.
pub fn git_config_note(outcome: &Outcome) -> Option<String> {
    outcome.findings.git_config_changed.then(|| {
        "note: this command changed the global git config (GIT_CONFIG_GLOBAL, a copy of the \
         user's safe settings); the change lasted for this call only and the user's \
         ~/.gitconfig is unchanged: use `git -c key=value` or the repository's config to keep \
         a setting"
            .to_owned()
    })
}

/// The one line that says why git saw no repository, when the workspace lies in a larger
/// repository the operator hid (`[sandbox.git] parent_worktree = "hidden"`) and the command's
/// stderr says git found none.
pub fn hidden_parent_note(profile: &Profile, outcome: &Outcome) -> Option<String> {
    if profile.parent_worktree != zeroclaw_sandbox::profile::ParentWorktree::Hidden {
        return None;
    }
    let said = String::from_utf8_lossy(&outcome.stderr).contains("not a git repository");
    let parent = said
        .then(|| zeroclaw_sandbox::git::read::enclosing(&profile.workspace))
        .flatten()?;
    Some(format!(
        "note: the workspace lies in the git repository at {}, which this daemon hides from \
         commands ([sandbox.git] parent_worktree = \"hidden\"): git sees no repository here",
        parent.display()
    ))
}

/// The model-readable reason an execution was cut short, if it was.
pub fn ended_early(outcome: &Outcome) -> Option<String> {
    match outcome.end {
        End::Exited => None,
        End::TimedOut => Some(
            "killed: the wall-time limit was reached (the whole process tree was killed)"
                .to_owned(),
        ),
        End::Cancelled => Some("cancelled".to_owned()),
        End::OutputLimit => Some(
            "killed: the output limit was reached (the whole process tree was killed)".to_owned(),
        ),
        End::WriteLimit => Some(
            "killed: the write limit was reached ([sandbox.limits] written_mb; the whole process \
             tree was killed and nothing it wrote reached the workspace)"
                .to_owned(),
        ),
    }
}
