//! `zeroclaw audit list | show SEQ | verify | export | prune | keygen | checkpoint export |
//! prove SEQ | check-proof`: reads (and prunes) the audit log `zeroclaw acp` and `zeroclaw
//! daemon` write; `verify` walks the chain and the signed checkpoints and exits non-zero
//! naming the first broken `seq`. The checkpoint commands are in [`super::audit_proof`].

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use super::time::format_time;
use super::{audit_proof, terminal};
use crate::audit::checkpoint::{Stored, Verifier};
use crate::audit::db::{Db, Target};
use crate::audit::tlog::TreeVerified;
use crate::audit::{self, chain, export};
use crate::config::Config;

/// `zeroclaw audit ...`.
#[derive(Debug, Clone, clap::Args)]
pub struct AuditArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long, global = true)]
    pub config_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: AuditCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum AuditCommand {
    /// List records, oldest first.
    List {
        /// Only this session's records.
        #[arg(long)]
        session: Option<String>,
        /// Only records at or after T (`YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SSZ`, or Unix ms).
        #[arg(long)]
        since: Option<String>,
        /// Only records about this tool.
        #[arg(long)]
        tool: Option<String>,
        /// Only policy decisions with this verdict (`allow`, `ask`, `deny`).
        #[arg(long)]
        decision: Option<String>,
        /// Only records of this kind (`tool.exec`, `policy.decision`, `approval`, ...).
        #[arg(long)]
        kind: Option<String>,
    },
    /// Print one record (as stored, with its hashes) as JSON.
    Show { seq: i64 },
    /// Walk the chain and check the signed checkpoints; non-zero exit naming the first broken seq.
    Verify {
        /// The public key that checks the checkpoints (default: that of [audit] signing_key_file).
        #[arg(long, value_name = "PUB")]
        key: Option<PathBuf>,
        /// Also fail when records after the newest checkpoint are not signed (for a log no
        /// process is writing: each signs a final checkpoint as it exits).
        #[arg(long)]
        all_signed: bool,
    },
    /// Write a new Ed25519 key pair for signing checkpoints: PATH (mode 600) and PATH.pub.
    Keygen {
        /// Where the private key goes (default: <config_dir>/audit-signing.key).
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
        /// The key's name, which is the origin line of its checkpoints (default:
        /// zeroclaw-audit/<hostname>; give the same key to every daemon of one database).
        #[arg(long)]
        name: Option<String>,
    },
    /// Signed checkpoints of the log.
    Checkpoint {
        #[command(subcommand)]
        command: CheckpointCommand,
    },
    /// Print record SEQ with its inclusion proof in the newest checkpoint, as JSON.
    Prove { seq: i64 },
    /// Check a proof from `audit prove` with only the public key (no log, no configuration).
    CheckProof {
        file: PathBuf,
        #[arg(long, value_name = "PUB")]
        key: PathBuf,
    },
    /// Print every record as JSON lines (`jsonl`) or OCSF 1.3 events (`ocsf`).
    Export {
        #[arg(long, default_value = "jsonl")]
        format: ExportFormat,
    },
    /// Delete the records before T, leaving a checkpoint record that keeps the chain verifiable.
    Prune {
        #[arg(long)]
        before: String,
    },
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum CheckpointCommand {
    /// Print the newest signed checkpoint (a C2SP signed note).
    Export,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    Jsonl,
    Ocsf,
}

pub fn run(args: AuditArgs) -> anyhow::Result<ExitCode> {
    // Checking a proof needs nothing but the file and the key.
    if let AuditCommand::CheckProof { file, key } = &args.command {
        let verifier = Verifier::load(key).map_err(anyhow::Error::msg)?;
        let text = std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        let proof: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not a proof: {e}", file.display()))?;
        return Ok(match audit_proof::check_proof(&proof, &verifier) {
            Ok(line) => {
                terminal::stdout().line(line)?;
                ExitCode::SUCCESS
            }
            Err(why) => {
                terminal::stdout().line(format_args!("bad proof: {why}"))?;
                ExitCode::FAILURE
            }
        });
    }
    let config = Config::load(args.config_dir.as_deref())?;
    let target = Target::of(&config);
    // The anchor file is beside `audit.db`; on PostgreSQL, in the same directory of this
    // daemon's workspace.
    let path = config.audit_path();
    let key = audit::load_key(&config)?;
    match args.command {
        AuditCommand::List {
            session,
            since,
            tool,
            decision,
            kind,
        } => {
            let since = since.as_deref().map(parse_time).transpose()?;
            let rows = read_rows(&target)?;
            let mut out = terminal::stdout();
            for row in &rows {
                let body: Value = serde_json::from_str(&row.body).unwrap_or(Value::Null);
                let keep = session
                    .as_ref()
                    .is_none_or(|s| body["session"] == *s.as_str())
                    && since.is_none_or(|t| body["time_ms"].as_i64().unwrap_or(0) >= t)
                    && tool.as_ref().is_none_or(|t| body["tool"] == *t.as_str())
                    && decision
                        .as_ref()
                        .is_none_or(|d| body["decision"] == *d.as_str())
                    && kind.as_ref().is_none_or(|k| body["kind"] == *k.as_str());
                if keep {
                    out.line(line(row.seq, &body))?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Show { seq } => {
            let rows = read_rows(&target)?;
            match rows.iter().find(|r| r.seq == seq) {
                Some(row) => {
                    let json = serde_json::to_string_pretty(&export::jsonl(row))? + "\n";
                    terminal::stdout().raw(&terminal::structured_for_terminal(&json))?;
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!(
                        "error: no audit record with seq {seq} in {}",
                        target.describe()
                    );
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        AuditCommand::Verify {
            key: public,
            all_signed,
        } => {
            let verifier = audit_proof::verifier(&config, public.as_deref())?;
            let rows = read_rows(&target)?;
            let checkpoints = read_checkpoints(&target)?;
            let anchored = audit::anchor::read(&path).map_err(|e| anyhow::anyhow!(e))?;
            let verified = chain::verify(&rows, key.as_deref()).and_then(|v| match &anchored {
                Some(a) => audit::anchor::check(a, &rows, key.as_deref()).map(|()| v),
                None => Ok(v),
            });
            let tree = verified.and_then(|v| {
                let tree = audit_proof::verify_tree(&rows, &checkpoints, verifier.as_ref())?;
                if all_signed && tree.unsigned > 0 {
                    let from = tree.latest.map_or(1, |(size, _)| size as i64 + 1);
                    return Err(chain::Broken {
                        seq: from,
                        reason: format!(
                            "{} records from seq {from} on are not covered by a signed checkpoint",
                            tree.unsigned
                        ),
                    });
                }
                Ok((v, tree))
            });
            match tree {
                Ok((v, tree)) => {
                    terminal::stdout().line(format_args!(
                        "ok: {} records, seq {}..{}, head {}{}{}{}",
                        v.records,
                        v.first_seq.unwrap_or(0),
                        v.head_seq.unwrap_or(0),
                        v.head_hash,
                        if key.is_some() { " (keyed)" } else { "" },
                        match &anchored {
                            Some(a) => format!(", anchored at seq {}", a.seq),
                            None => String::new(),
                        },
                        tree_summary(&tree)
                    ))?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(broken) => {
                    terminal::stdout().line(format_args!(
                        "broken at seq {}: {}",
                        broken.seq, broken.reason
                    ))?;
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        AuditCommand::Export { format } => {
            let rows = read_rows(&target)?;
            let host = hostname();
            let mut out = terminal::stdout();
            for row in &rows {
                let value = match format {
                    ExportFormat::Jsonl => export::jsonl(row),
                    ExportFormat::Ocsf => export::ocsf(row, &host),
                };
                out.raw(&format!("{value}\n"))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Prune { before } => {
            let before = parse_time(&before)?;
            let mut log = Db::open(&target)?;
            let signer = audit::load_signer(&config)?;
            let pruned = audit::prune::prune(&mut log, &path, before, key.as_deref(), signer)
                .map_err(|e| anyhow::anyhow!("pruning {}: {e}", target.describe()))?;
            terminal::stdout().line(format_args!(
                "pruned {pruned} records before {}",
                format_time(before)
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Keygen { out, name } => {
            let out = out.unwrap_or_else(|| audit_proof::default_key_path(&config));
            let name = name.unwrap_or_else(audit_proof::default_key_name);
            audit_proof::keygen(&out, &name)?;
            Ok(ExitCode::SUCCESS)
        }
        AuditCommand::Checkpoint {
            command: CheckpointCommand::Export,
        } => {
            let checkpoints = read_checkpoints(&target)?;
            match audit_proof::latest_note(&checkpoints) {
                Some(note) => {
                    terminal::stdout().raw(note)?;
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!(
                        "error: {} has no signed checkpoint (set [audit] signing_key_file)",
                        target.describe()
                    );
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        AuditCommand::Prove { seq } => {
            let rows = read_rows(&target)?;
            let checkpoints = read_checkpoints(&target)?;
            match audit_proof::prove(&rows, &checkpoints, seq) {
                Ok(proof) => {
                    let json = serde_json::to_string_pretty(&proof)? + "\n";
                    terminal::stdout().raw(&terminal::structured_for_terminal(&json))?;
                    Ok(ExitCode::SUCCESS)
                }
                Err(why) => {
                    eprintln!("error: {why}");
                    Ok(ExitCode::FAILURE)
                }
            }
        }
        AuditCommand::CheckProof { .. } => unreachable!("answered before the config loads"),
    }
}

/// What `verify` says about the signed checkpoints.
fn tree_summary(tree: &TreeVerified) -> String {
    match tree.latest {
        None => ", no signed checkpoints".to_owned(),
        Some((size, root)) => format!(
            ", {} checkpoints, latest size {size} root {}{}",
            tree.checkpoints,
            hex::encode(root),
            if tree.unsigned > 0 {
                format!(" ({} newer records not signed yet)", tree.unsigned)
            } else {
                String::new()
            }
        ),
    }
}

fn read_checkpoints(target: &Target) -> anyhow::Result<Vec<Stored>> {
    let mut log = Db::open_read(target)?;
    log.checkpoints()
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", target.describe()))
}

/// The audit line of `zeroclaw doctor`: the mode (a warning for `best_effort`), the file and
/// whether keyed; `None` when the config does not load (doctor reports that itself).
pub fn doctor_line(config_dir: Option<&std::path::Path>) -> Option<String> {
    let config = Config::load(config_dir).ok()?;
    let keyed = match (audit::load_key(&config), audit::load_signer(&config)) {
        (Err(e), _) | (_, Err(e)) => format!("KEY UNUSABLE, nothing is recorded: {e}"),
        (Ok(key), Ok(signer)) => format!(
            "{}, {}",
            if key.is_some() {
                "keyed (hmac-sha256)"
            } else {
                "unkeyed (sha256)"
            },
            match signer {
                Some(s) => format!("checkpoints signed by {}", s.verifier().encode()),
                None => "no signed checkpoints".to_owned(),
            }
        ),
    };
    let mode = match config.audit.mode {
        crate::config::AuditMode::Required => "required".to_owned(),
        crate::config::AuditMode::BestEffort => {
            "best_effort (WARNING: tool calls run even when their audit record is lost)".to_owned()
        }
    };
    Some(format!(
        "audit: {mode}, {keyed}, {}",
        Target::of(&config).describe()
    ))
}

fn read_rows(target: &Target) -> anyhow::Result<Vec<chain::Row>> {
    let mut log = Db::open_read(target)?;
    log.rows()
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", target.describe()))
}

/// One record as a listing line: seq, time, kind, session, tool, then the verdict.
fn line(seq: i64, body: &Value) -> String {
    let text = |k: &str| body[k].as_str().unwrap_or("-").to_owned();
    // What the call was about: its command or path (pattern, network target).
    let about = ["command", "path", "pattern", "target"]
        .iter()
        .find_map(|k| body[*k].as_str())
        .unwrap_or("");
    let detail = match body["kind"].as_str().unwrap_or("") {
        "tool.exec" => format!("status={} {about}", text("status")),
        "tool.start" => about.to_owned(),
        "policy.decision" => format!(
            "decision={} rule={} {about}",
            text("decision"),
            text("rule")
        ),
        "approval" => format!("answer={} {about}", text("option_kind")),
        "sandbox.failure" => format!(
            "rule={} stage={} {}",
            text("rule"),
            text("stage"),
            text("error")
        ),
        "auth.failure" => format!("peer={} {}", text("peer"), text("reason")),
        "config.reload" => format!(
            "outcome={} changed={}",
            text("outcome"),
            body["changed"]
                .as_array()
                .map(|c| c
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","))
                .unwrap_or_default()
        ),
        "checkpoint" => format!("pruned_through={}", body["pruned_through_seq"]),
        "network.connection" => format!(
            "decision={} rule={} {} {} address={} sent={} received={} duration_us={}",
            text("decision"),
            text("rule"),
            text("via"),
            // A name the DNS stub refused has no port.
            match body["port"].as_u64() {
                Some(port) => format!("{}:{port}", text("name")),
                None => text("name"),
            },
            text("address"),
            body["bytes_sent"],
            body["bytes_received"],
            body["duration_us"]
        ),
        "credential.use" => format!(
            "decision={} credential={} {}:{} {} {}",
            text("decision"),
            text("credential"),
            text("name"),
            body["port"],
            text("method"),
            text("path")
        ),
        _ => String::new(),
    };
    format!(
        "{seq:>6}  {}  {:<16} {:<35} {:<14} {detail}",
        format_time(body["time_ms"].as_i64().unwrap_or(0)),
        text("kind"),
        text("session"),
        text("tool"),
    )
}

/// `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SS[Z]` (UTC) or Unix milliseconds, as Unix milliseconds.
pub fn parse_time(text: &str) -> anyhow::Result<i64> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    let bad = || {
        anyhow::anyhow!(
            "`{text}` is not a time: use YYYY-MM-DD, YYYY-MM-DDTHH:MM:SSZ (UTC) or Unix milliseconds"
        )
    };
    let (date, clock) = match text.split_once(['T', ' ']) {
        Some((d, c)) => (d, c.trim_end_matches('Z')),
        None => (text, "00:00:00"),
    };
    let nums = |s: &str, n: usize| -> Option<Vec<i64>> {
        let parts: Vec<i64> = s
            .split([':', '-'])
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        (parts.len() == n).then_some(parts)
    };
    let d = nums(date, 3).ok_or_else(bad)?;
    let c = nums(clock, 3).ok_or_else(bad)?;
    if !(1..=12).contains(&d[1]) || !(1..=31).contains(&d[2]) || c[0] > 23 || c[1] > 59 || c[2] > 60
    {
        return Err(bad());
    }
    let days = days_from_civil(d[0], d[1], d[2]);
    Ok((days * 86_400 + c[0] * 3600 + c[1] * 60 + c[2]) * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_as_utc() {
        assert_eq!(parse_time("1970-01-01").unwrap(), 0);
        assert_eq!(
            parse_time("2023-11-14T22:13:20Z").unwrap(),
            1_700_000_000_000
        );
        assert_eq!(parse_time("2000-02-29").unwrap(), 951_782_400_000);
        assert_eq!(parse_time("42").unwrap(), 42);
        assert!(parse_time("yesterday").is_err());
    }
}
