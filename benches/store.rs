//! The session store on PostgreSQL against SQLite, in the same run (run:
//! `ZC_BENCH_POSTGRES_URL=postgres://… cargo bench --bench store`; the URL names a server on
//! which this bench may create and drop a database of its own): the latency of one turn's
//! write (one transaction: four entries and the turn row) while a session grows to 500 turns,
//! and `session/load`'s read of that 500-turn session (every turn with its entries). Without
//! the variable only SQLite is measured. Prints the median and p99 and PostgreSQL's ratio to
//! SQLite; nothing asserted.

use std::time::{Duration, Instant};

use serde_json::json;
use zeroclaw::store::{Location, SessionRecord, Store, StoredEntry};

const TURNS: usize = 500;
const LOADS: usize = 30;

struct Figures {
    write_median: Duration,
    write_p99: Duration,
    load_median: Duration,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = Location::Sqlite(dir.path().join("bench.db"));
    let baseline = runtime.block_on(measure(&sqlite));
    report("sqlite", &baseline, None);
    let Ok(admin) = std::env::var("ZC_BENCH_POSTGRES_URL") else {
        println!("postgres: skipped (ZC_BENCH_POSTGRES_URL is not set)");
        return;
    };
    let name = format!("zc_bench_{}", std::process::id());
    runtime.block_on(admin_sql(&admin, &format!("CREATE DATABASE {name}")));
    let url = database_url(&admin, &name);
    let pg = runtime.block_on(measure(&Location::Postgres(url)));
    report("postgres", &pg, Some(&baseline));
    runtime.block_on(admin_sql(
        &admin,
        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
    ));
}

async fn measure(location: &Location) -> Figures {
    let store = Store::open_location_async(location, 4)
        .await
        .expect("open the store");
    let id = "bench-session";
    let now = zeroclaw::store::now_ms();
    store
        .create_session(SessionRecord {
            id: id.into(),
            agent_alias: "coder".into(),
            workspace_dir: "/tmp".into(),
            mcp_servers: json!([]),
            owner: None,
            created_at: now,
            last_activity: now,
        })
        .await
        .expect("create");
    let mut writes = Vec::with_capacity(TURNS);
    for turn in 0..TURNS {
        let started = Instant::now();
        store
            .append_ended_turn(id, turn_entries(turn), "end_turn")
            .await
            .expect("append");
        writes.push(started.elapsed());
    }
    let mut loads = Vec::with_capacity(LOADS);
    for _ in 0..LOADS {
        let started = Instant::now();
        let turns = store.turns(id).await.expect("load");
        loads.push(started.elapsed());
        assert_eq!(turns.len(), TURNS);
    }
    writes.sort();
    Figures {
        write_median: median(&mut writes),
        write_p99: writes[writes.len() * 99 / 100],
        load_median: median(&mut loads),
    }
}

/// A turn as the agent stores one: the user's prompt, a tool call, its result, the answer.
fn turn_entries(turn: usize) -> Vec<StoredEntry> {
    let entry = |kind: &str, payload| StoredEntry {
        kind: kind.into(),
        payload,
    };
    vec![
        entry(
            "user",
            json!({"text": format!("turn {turn}: list the files and read the README")}),
        ),
        entry(
            "tool_call",
            json!({"id": format!("call-{turn}"), "name": "shell", "args": {"command": "ls -la"}}),
        ),
        entry(
            "tool_result",
            json!({"id": format!("call-{turn}"), "status": "completed", "output": "x".repeat(400)}),
        ),
        entry("assistant", json!({"text": "y".repeat(300)})),
    ]
}

fn report(name: &str, f: &Figures, baseline: Option<&Figures>) {
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64();
    print!(
        "{name:<9} turn write median {:.3} ms, p99 {:.3} ms; load of {TURNS} turns median {:.2} ms",
        ms(f.write_median),
        ms(f.write_p99),
        ms(f.load_median),
    );
    match baseline {
        Some(b) => println!(
            "  (x{:.2}, x{:.2}, x{:.2} SQLite)",
            ratio(f.write_median, b.write_median),
            ratio(f.write_p99, b.write_p99),
            ratio(f.load_median, b.load_median),
        ),
        None => println!(),
    }
}

async fn admin_sql(url: &str, sql: &str) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .expect("connect to ZC_BENCH_POSTGRES_URL");
    tokio::spawn(conn);
    client.execute(sql, &[]).await.expect(sql);
}

/// `admin` with its database replaced by `name`.
fn database_url(admin: &str, name: &str) -> String {
    let (base, query) = match admin.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin, None),
    };
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let base = match base[after_scheme..].find('/') {
        Some(slash) => &base[..after_scheme + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{name}?{q}"),
        None => format!("{base}/{name}"),
    }
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
