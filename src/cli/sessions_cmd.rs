//! `zeroclaw sessions list | show ID | delete ID | attest ID`: the persisted ACP sessions, read from the
//! same store `zeroclaw acp` writes (SQLite or PostgreSQL, per `[store] url`). `list` shows each session's owner (the principal
//! that may load it); `show` prints the recorded uploads and delivered files (kind, path, size,
//! sha256) and the history turn by turn with how each turn ended.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde_json::Value;

use super::terminal;
use super::time::format_time;
use crate::config::Config;
use crate::store::{Location, SessionSummary, Store, StoredEntry, StoredTurn};

/// `zeroclaw sessions ...`.
#[derive(Debug, Clone, clap::Args)]
pub struct SessionsArgs {
    /// Configuration directory (default: $ZEROCLAW_CONFIG_DIR, else ~/.zeroclaw).
    #[arg(long, global = true)]
    pub config_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: SessionsCommand,
}

#[derive(Debug, Clone, clap::Subcommand)]
pub enum SessionsCommand {
    /// List stored sessions, most recently active first.
    List,
    /// Show one session's metadata and a summary of its history.
    Show { id: String },
    /// Delete one session and its history.
    Delete { id: String },
    /// Print the session's signed record (an in-toto Statement in a DSSE envelope, signed with
    /// [audit] signing_key_file): its principal, agent, model, tool calls and checkpoint.
    Attest { id: String },
}

pub fn run(args: SessionsArgs) -> anyhow::Result<ExitCode> {
    let config = Config::load(args.config_dir.as_deref())?;
    let location = config.store_location();
    if let Location::Sqlite(path) = &location
        && !path.exists()
    {
        return no_store(&args.command, path);
    }
    let store = Store::open_location(&location, 2)?;
    let log = match &args.command {
        SessionsCommand::Attest { .. } => Some(super::attest_cmd::read_log(&config)?),
        _ => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match args.command {
            SessionsCommand::List => list(&store).await,
            SessionsCommand::Show { id } => show(&store, &id).await,
            SessionsCommand::Delete { id } => {
                crate::audit::init(&config);
                delete(&store, &id).await
            }
            SessionsCommand::Attest { id } => {
                let log = log.as_ref().expect("read above");
                super::attest_cmd::attest(&config, &store, log, &id).await
            }
        }
    })
}

/// Without a database there is nothing to list, show or delete (and nothing is created).
fn no_store(command: &SessionsCommand, path: &std::path::Path) -> anyhow::Result<ExitCode> {
    match command {
        SessionsCommand::List => {
            terminal::stdout().line(format_args!(
                "no sessions (no session store at {})",
                path.display()
            ))?;
            Ok(ExitCode::SUCCESS)
        }
        SessionsCommand::Show { id }
        | SessionsCommand::Delete { id }
        | SessionsCommand::Attest { id } => {
            eprintln!(
                "error: session `{}` not found (no session store at {})",
                terminal::escape(id),
                path.display()
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn list(store: &Store) -> anyhow::Result<ExitCode> {
    let sessions = store.list_summaries().await?;
    if sessions.is_empty() {
        terminal::stdout().line(format_args!("no sessions in {}", store.location()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let header = [
        "ID",
        "AGENT",
        "WORKSPACE",
        "OWNER",
        "CREATED",
        "LAST ACTIVITY",
        "TURNS",
    ];
    let rows: Vec<[String; COLUMNS]> = sessions.iter().map(row).collect();
    print_table(&header, &rows)?;
    Ok(ExitCode::SUCCESS)
}

const COLUMNS: usize = 7;

/// A session's cells, escaped (so the widths are those shown).
fn row(s: &SessionSummary) -> [String; COLUMNS] {
    let r = &s.record;
    [
        r.id.clone(),
        r.agent_alias.clone(),
        r.workspace_dir.display().to_string(),
        owner(r.owner.as_deref()),
        format_time(r.created_at),
        format_time(r.last_activity),
        s.turns.to_string(),
    ]
    .map(|cell| terminal::escape(&cell).into_owned())
}

/// The owner principal; `-` for a session stored without one (made over stdio before owners
/// were recorded: it belongs to the local user).
fn owner(owner: Option<&str>) -> String {
    owner.unwrap_or("-").to_owned()
}

fn print_table(header: &[&str; COLUMNS], rows: &[[String; COLUMNS]]) -> anyhow::Result<()> {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = terminal::stdout();
    let mut line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.line(padded.join("  ").trim_end())
    };
    line(header.to_vec())?;
    for row in rows {
        line(row.iter().map(String::as_str).collect())?;
    }
    Ok(())
}

async fn show(store: &Store, id: &str) -> anyhow::Result<ExitCode> {
    let Some(rec) = store.get_session(id).await? else {
        eprintln!(
            "error: session `{}` not found in {}",
            terminal::escape(id),
            store.location()
        );
        return Ok(ExitCode::FAILURE);
    };
    let turns = store.turns(id).await.context("reading the history")?;
    let entries: usize = turns.iter().map(|t| t.entries.len()).sum();
    let mut out = terminal::stdout();
    out.line(format_args!("id:            {}", rec.id))?;
    out.line(format_args!("agent:         {}", rec.agent_alias))?;
    let workspace = rec.workspace_dir.display();
    out.line(format_args!("workspace:     {workspace}"))?;
    let owner = owner(rec.owner.as_deref());
    out.line(format_args!("owner:         {owner}"))?;
    out.line(format_args!(
        "created:       {}",
        format_time(rec.created_at)
    ))?;
    let last = format_time(rec.last_activity);
    out.line(format_args!("last activity: {last}"))?;
    let mcp = mcp_names(&rec.mcp_servers);
    out.line(format_args!("mcp servers:   {mcp}"))?;
    let count = turns.len();
    out.line(format_args!(
        "history:       {entries} entries in {count} turns"
    ))?;
    if let Some(line) = usage_line(&turns) {
        out.line(format_args!("usage:         {line}"))?;
    }
    let files = store.files(id).await.context("reading the file records")?;
    if !files.is_empty() {
        let columns = "kind, turn, path in the workspace, size in bytes, sha256";
        out.line(format_args!("files:         {} ({columns})", files.len()))?;
    }
    for file in &files {
        let (kind, path, size, sha) = (&file.kind, &file.path, file.size, &file.sha256);
        let turn = file.turn;
        out.line(format_args!(
            "  {kind:<10} turn {turn:<4} {path}  {size}  {sha}"
        ))?;
    }
    let mut n = 0;
    for turn in &turns {
        out.line(format_args!("  {}", turn_heading(turn)))?;
        for entry in &turn.entries {
            n += 1;
            let kind = &entry.kind;
            out.line(format_args!("  {n:>4}  {kind:<12} {}", summary(entry)))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn delete(store: &Store, id: &str) -> anyhow::Result<ExitCode> {
    if store.delete_session(id).await? {
        let event = crate::audit::session_event("session.delete", id, None);
        crate::audit::note(event.with("by", "cli")).await;
        terminal::stdout().line(format_args!("deleted session {id}"))?;
        Ok(ExitCode::SUCCESS)
    } else {
        let id = terminal::escape(id);
        eprintln!("error: session `{id}` not found in {}", store.location());
        Ok(ExitCode::FAILURE)
    }
}

/// The session's token totals (and cost where prices were configured), or `None` before any
/// model call reported usage.
fn usage_line(turns: &[StoredTurn]) -> Option<String> {
    let entries: Vec<crate::agent::Entry> = turns
        .iter()
        .flat_map(|t| &t.entries)
        .filter(|e| e.kind == "usage")
        .filter_map(crate::agent::Entry::from_stored)
        .collect();
    if entries.is_empty() {
        return None;
    }
    let (u, cost) = crate::agent::usage::totals(&entries);
    let mut line = format!(
        "{} input tokens ({} cache read, {} cache write), {} output tokens ({} reasoning), {} model calls",
        u.input_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.output_tokens,
        u.reasoning_tokens,
        entries.len()
    );
    if let Some(cost) = cost {
        line.push_str(&format!(", cost {cost:.6}"));
    }
    Some(line)
}

/// `turn 2: cancelled`; a turn stored before stop reasons were has none.
fn turn_heading(turn: &StoredTurn) -> String {
    match turn.stop_reason.as_deref() {
        Some(reason) => format!("turn {}: {reason}", turn.number),
        None => format!("turn {}", turn.number),
    }
}

fn mcp_names(servers: &Value) -> String {
    let names: Vec<&str> = servers
        .as_array()
        .map(|a| a.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default();
    if names.is_empty() {
        "-".to_owned()
    } else {
        names.join(", ")
    }
}

/// One line about an entry: its text, its tool call, its result, or its plan size.
fn summary(entry: &StoredEntry) -> String {
    let p = &entry.payload;
    let text = if let Some(text) = p["text"].as_str() {
        text.to_owned()
    } else if let Some(name) = p["name"].as_str() {
        format!("{name} {}", p["arguments"].as_str().unwrap_or_default())
    } else if let Some(status) = p["status"].as_str() {
        format!("{status}: {}", p["content"].as_str().unwrap_or_default())
    } else if let Some(entries) = p["entries"].as_array() {
        format!("{} plan entries", entries.len())
    } else if entry.kind == "usage" {
        format!(
            "{} input, {} output tokens",
            p["input_tokens"], p["output_tokens"]
        )
    } else {
        p.to_string()
    };
    one_line(&text, 100)
}

fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        flat.chars().take(max).collect::<String>() + "…"
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_pick_the_telling_field() {
        let e = |kind: &str, payload: Value| StoredEntry {
            kind: kind.into(),
            payload,
        };
        assert_eq!(
            summary(&e("user", json!({"text": "hi\nthere"}))),
            "hi there"
        );
        assert_eq!(
            summary(&e(
                "tool_call",
                json!({"name": "todo_write", "arguments": "{}"})
            )),
            "todo_write {}"
        );
        assert_eq!(
            summary(&e("plan", json!({"entries": [1, 2]}))),
            "2 plan entries"
        );
    }
}
