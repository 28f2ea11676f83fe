//! `shell`: `sh -c COMMAND` in the session cwd, confined; the command's risk decides whether
//! the policy asks. Exit code, stdout and stderr go back capped with a truncation marker.

use std::time::Duration;

use serde_json::{Value, json};

use super::output::{MODEL_TEXT_CAP, capped};
use super::{
    BoxFuture, Tool, ToolContext, ToolError, ToolKind, ToolOutput, approve, args, confine,
};
use crate::policy::approval::Action;
use crate::policy::risk;

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
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line for sh -c."},
                "timeout_secs": {"type": "integer", "minimum": 1,
                    "description": "Kill the command after this many seconds (capped by the configured limit)."}
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
            let timeout = args::opt_u64(&args, "timeout_secs")?;
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
                let event = approve::call_event(ctx, "policy.decision", "shell")
                    .with("decision", "deny")
                    .with("rule", "network_denied")
                    .with("reason", reason.as_str());
                approve::audit(event).await?;
                return Err(ToolError(reason));
            }
            approve::gate(
                ctx,
                "shell",
                ToolKind::Execute,
                Action::Shell(risk),
                command,
            )
            .await?;
            let mut profile = confine::shell_profile(ctx);
            if let Some(secs) = timeout {
                let secs = Duration::from_secs(secs.max(1));
                profile.limits.wall_time = profile.limits.wall_time.min(secs);
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
            // A non-zero exit is a completed call (the model reads the code); a command the
            // sandbox killed (limit, cancel) is a failed one.
            if outcome.end != zeroclaw_sandbox::End::Exited {
                return Err(ToolError(text));
            }
            Ok(ToolOutput::text(text))
        })
    }
}
