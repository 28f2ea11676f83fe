//! `zeroclaw sessions attest ID` (the session's signed record, [`crate::audit::attest`]) and
//! `zeroclaw attest verify FILE --key PUB`, which checks one offline with only the public key.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{Value, json};

use super::terminal;
use crate::audit::attest::{self, SessionFacts};
use crate::audit::chain::Row;
use crate::audit::checkpoint::{Stored, Verifier};
use crate::audit::db::{Db, Target};
use crate::config::Config;
use crate::store::Store;

/// `zeroclaw attest ...`.
#[derive(Debug, Clone, clap::Args)]
pub struct AttestArgs {
    #[command(subcommand)]
    pub command: AttestCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AttestCommand {
    /// Check a session attestation (`zeroclaw sessions attest`) with only the public key.
    Verify {
        file: PathBuf,
        #[arg(long, value_name = "PUB")]
        key: PathBuf,
    },
}

pub fn run(args: AttestArgs) -> anyhow::Result<ExitCode> {
    let AttestCommand::Verify { file, key } = args.command;
    let verifier = Verifier::load(&key).map_err(anyhow::Error::msg)?;
    let text =
        std::fs::read_to_string(&file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
    let envelope: Value = match serde_json::from_str(&text) {
        Ok(envelope) => envelope,
        Err(e) => {
            terminal::stdout().line(format_args!("bad attestation: not JSON: {e}"))?;
            return Ok(ExitCode::FAILURE);
        }
    };
    match attest::open(&envelope, &verifier) {
        Ok(statement) => {
            let predicate = &statement["predicate"];
            terminal::stdout().line(format_args!(
                "ok: session {} (principal {}, agent {}), {} tool calls, {}, signed by {}",
                predicate["session"].as_str().unwrap_or("?"),
                predicate["principal"].as_str().unwrap_or("-"),
                predicate["agent"].as_str().unwrap_or("-"),
                predicate["tool_calls"].as_array().map_or(0, Vec::len),
                match predicate["checkpoint"]["tree_size"].as_i64() {
                    Some(size) => format!("covered by the checkpoint of size {size}"),
                    None => "covered by no checkpoint yet".to_owned(),
                },
                verifier.encode()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => {
            terminal::stdout().line(format_args!("bad attestation: {why}"))?;
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The audit log's rows and checkpoints (read before the store's runtime runs: the PostgreSQL
/// log blocks on a runtime of its own).
pub struct Log {
    rows: Vec<Row>,
    checkpoints: Vec<Stored>,
}

pub fn read_log(config: &Config) -> anyhow::Result<Log> {
    let target = Target::of(config);
    let mut log = Db::open_read(&target)?;
    let read = |e: String| anyhow::anyhow!("reading {}: {e}", target.describe());
    Ok(Log {
        rows: log.rows().map_err(read)?,
        checkpoints: log.checkpoints().map_err(read)?,
    })
}

/// `zeroclaw sessions attest ID`: prints the DSSE envelope. The model is the one the client
/// chose for the session, else the agent's in this configuration.
pub async fn attest(
    config: &Config,
    store: &Store,
    log: &Log,
    id: &str,
) -> anyhow::Result<ExitCode> {
    let Some(signer) = crate::audit::load_signer(config)? else {
        eprintln!("error: no [audit] signing_key_file: an attestation is signed with it");
        return Ok(ExitCode::FAILURE);
    };
    let Some(session) = store.get_session(id).await? else {
        eprintln!("error: session `{id}` not found in {}", store.location());
        return Ok(ExitCode::FAILURE);
    };
    let options = store.options(id).await?;
    let model = options
        .get(crate::acp::config_options::MODEL)
        .cloned()
        .or_else(|| {
            config
                .agents
                .get(&session.agent_alias)
                .map(|a| a.model.clone())
        });
    let files = store
        .files(id)
        .await?
        .into_iter()
        .map(|f| {
            json!({"kind": f.kind, "turn": f.turn, "path": f.path, "sha256": f.sha256,
                   "size": f.size})
        })
        .collect();
    let facts = SessionFacts {
        id: id.to_owned(),
        agent: session.agent_alias.clone(),
        owner: session.owner.clone(),
        model,
        files,
    };
    let statement = attest::statement(&facts, &log.rows, &log.checkpoints);
    let json = serde_json::to_string_pretty(&attest::envelope(&statement, &signer))? + "\n";
    terminal::stdout().raw(&json)?;
    Ok(ExitCode::SUCCESS)
}
