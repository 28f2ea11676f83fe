//! `shell`: `sh -c COMMAND` in the session cwd, confined; the command's risk decides whether
//! the policy asks. Exit code, stdout and stderr go back capped with a truncation marker.
//! `timeout_secs` may ask for any wall time up to `[sandbox.limits] max_wall_time_secs`; a
//! failed command in a session without network says so on its last line.

use std::time::Duration;

use serde_json::{Value, json};

use super::output::{MODEL_TEXT_CAP, capped};
use super::{BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, args, confine};
use crate::approval::{Action, gate};
use crate::config::LimitsConfig;
use crate::policy::{Policy, risk};

/// The last line of a failed command's result when the session has no network: the network
/// being off is the likely cause of many failures that do not say so (a package install's
/// "no matching distribution").
pub const NETWORK_OFF_NOTE: &str = "note: the network is off for this session \
    ([sandbox.network] mode = \"deny\"); an operator sets mode = \"proxy\" with the hosts in \
    allow_domains (or mode = \"allow\") to let commands reach package registries";

pub struct Shell;

impl Tool for Shell {
    fn name(&self) -> &str {
        "shell"
    }

    fn description(&self) -> &str {
        "Run a shell command (sh -c) in the session's working directory, confined by the \
         sandbox. Returns the exit code, stdout and stderr (long output is truncated)."
    }

    fn parameters(&self) -> Value {
        self.parameters_for(&Policy::default())
    }

    /// The schema with this session's default and maximum wall time in `timeout_secs`.
    fn parameters_for(&self, policy: &Policy) -> Value {
        let (default, max) = (
            policy.limits.wall_time_secs.max(1),
            policy.limits.max_wall_time_secs,
        );
        let timeout = format!(
            "Kill the command after this many seconds (default {default}, at most {max}; a \
             larger value is refused). Ask for more than the default for long builds and \
             test suites."
        );
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line for sh -c."},
                "timeout_secs": {"type": "integer", "minimum": 1, "maximum": max,
                    "description": timeout}
            },
            "required": ["command"],
            "additionalProperties": false
        })
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn title(&self, args: &Value) -> String {
        let command = args["command"].as_str().unwrap_or("command");
        let first: String = command
            .lines()
            .next()
            .unwrap_or("")
            .chars()
            .take(80)
            .collect();
        format!("Run `{first}`")
    }

    fn execute<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let command = args::string(&args, "command")?;
            let wall_time = wall_time(
                &ctx.env.policy.limits,
                args::opt_u64(&args, "timeout_secs")?,
            )?;
            let risk = risk::classify(command);
            if let Some(program) = risk::network_program(command)
                && ctx.env.policy.checks
                && !ctx.env.policy.network
                && ctx.env.policy.egress.is_none()
            {
                let reason = format!(
                    "denied by policy: `{program}` needs the network, and this session's \
                     network is denied (autonomy.network = \"deny\")"
                );
                let event = gate::call_event(ctx, "policy.decision", "shell")
                    .with("decision", "deny")
                    .with("rule", "network_denied")
                    .with("reason", reason.as_str());
                gate::audit(event).await?;
                return Err(ToolError(reason));
            }
            gate::pass(
                ctx,
                "shell",
                ToolKind::Execute.as_str(),
                Action::Shell(risk),
                command,
            )
            .await?;
            let mut profile = confine::shell_profile(ctx);
            if let Some(wall_time) = wall_time {
                profile.limits.wall_time = wall_time;
            }
            let (outcome, refusals) = confine::run_shell(ctx, &profile, command).await?;
            let mut text = format!("exit code: {}\n", outcome.shell_code());
            if let Some(reason) = confine::ended_early(&outcome) {
                text.push_str(&format!("{reason}\n"));
            }
            text.push_str(&format!(
                "stdout:\n{}\n",
                capped(&outcome.stdout, MODEL_TEXT_CAP)
            ));
            text.push_str(&format!(
                "stderr:\n{}",
                capped(&outcome.stderr, MODEL_TEXT_CAP)
            ));
            // What the egress proxy refused, so the agent can ask instead of retrying.
            for refusal in &refusals {
                text.push_str(&format!("\n{refusal}"));
            }
            if let Some(note) = confine::discarded_note(&outcome) {
                text.push_str(&format!("\n{note}"));
            }
            if let Some(note) = confine::git_config_note(&outcome) {
                text.push_str(&format!("\n{note}"));
            }
            if let Some(note) = confine::hidden_parent_note(&profile, &outcome) {
                text.push_str(&format!("\n{note}"));
            }
            let failed = match outcome.end {
                zeroclaw_sandbox::End::Exited => outcome.shell_code() != 0,
                zeroclaw_sandbox::End::TimedOut => true,
                _ => false,
            };
            if failed && profile.network == zeroclaw_sandbox::Network::Deny {
                text.push_str(&format!("\n{NETWORK_OFF_NOTE}"));
            }
            // A non-zero exit is a completed call (the model reads the code); a command the
            // sandbox killed (limit, cancel) is a failed one.
            if outcome.end != zeroclaw_sandbox::End::Exited {
                return Err(ToolError(text));
            }
            Ok(ToolOutput::text(text))
        })
    }
}

/// The wall time a call's `timeout_secs` asks for (`None`: the configured default); more
/// than `max_wall_time_secs` is refused, naming the maximum, so the model can ask again.
fn wall_time(limits: &LimitsConfig, asked: Option<u64>) -> Result<Option<Duration>, ToolError> {
    let Some(secs) = asked else {
        return Ok(None);
    };
    let max = limits.max_wall_time_secs;
    if secs > max {
        return Err(ToolError(format!(
            "timeout_secs = {secs} is above this host's maximum of {max} seconds \
             ([sandbox.limits] max_wall_time_secs); ask for {max} or less"
        )));
    }
    Ok(Some(Duration::from_secs(secs.max(1))))
}
