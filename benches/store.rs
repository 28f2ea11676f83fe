//! The session store on PostgreSQL against SQLite, in the same run (run:
//! `ZC_BENCH_POSTGRES_URL=postgres://… cargo bench --bench store`; the URL names a server on
//! which this bench may create and drop a database of its own): the latency of one turn's
//! write (one transaction: four entries and the turn row) while a session grows to 500 turns,
//! and `session/load`'s read of that 500-turn session (every turn with its entries). Without
//! the variable only SQLite is measured. Then 1,000 sessions of one turn each (new, prompt
//! against the scripted loopback model, close) from 8 clients over two daemons on one
//! PostgreSQL database, against the same clients on one daemon with its SQLite store: turns
//! per second and the p99 of a turn's latency. Prints the medians and p99s and PostgreSQL's
//! ratio to SQLite; nothing asserted.

// The support modules' own `#[cfg(test)]` unit tests do not run under a harness-less bench.
#[allow(unused_imports)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::acp_client::AcpClient;
use support::model_server::{ModelServer, text_reply};
use support::ws_conn::{Endpoint, Upgrade};
use support::ws_daemon::Daemon;
use zeroclaw::store::{Location, SessionRecord, Store, StoredEntry};

const SESSIONS: usize = 1_000;
const CLIENTS: usize = 8;

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
    let pg = runtime.block_on(measure(&Location::Postgres(url.clone())));
    report("postgres", &pg, Some(&baseline));
    drop(runtime);

    let one = cluster(1, None);
    println!(
        "1 daemon, SQLite:       {SESSIONS} one-turn sessions, {:.0} turns/s, turn p99 {:.2} ms",
        one.0,
        ms(one.1)
    );
    let two = cluster(2, Some(&url));
    println!(
        "2 daemons, PostgreSQL:  {SESSIONS} one-turn sessions, {:.0} turns/s, turn p99 {:.2} ms  \
         (x{:.2} turns/s, x{:.2} p99 of SQLite)",
        two.0,
        ms(two.1),
        two.0 / one.0,
        two.1.as_secs_f64() / one.1.as_secs_f64()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(admin_sql(
        &admin,
        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
    ));
}

/// Runs the sessions from [`CLIENTS`] clients spread over `daemons` daemons (on `pg`, else
/// each on its own SQLite store); answers turns per second and the p99 turn latency.
fn cluster(daemons: usize, pg: Option<&str>) -> (f64, Duration) {
    let model = ModelServer::start_blocking((0..SESSIONS).map(|_| text_reply("ok")).collect());
    let work = tempfile::tempdir().expect("workspace");
    let daemons: Vec<Daemon> = (0..daemons)
        .map(|_| {
            let mut builder = Daemon::builder().model(model.base_url());
            if let Some(url) = pg {
                builder = builder.env("ZEROCLAW_store__url", url);
            }
            builder.spawn()
        })
        .collect();
    let started = Instant::now();
    let mut latencies: Vec<Duration> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENTS)
            .map(|i| {
                let daemon = &daemons[i % daemons.len()];
                let work = work.path();
                scope.spawn(move || {
                    let unix = Upgrade::new(Endpoint::Unix(daemon.unix().to_path_buf()));
                    let client = AcpClient::connect(&unix, daemon.config_dir()).expect("connect");
                    client.initialize();
                    let mut took = Vec::new();
                    for _ in (i..SESSIONS).step_by(CLIENTS) {
                        let session = client.new_session(work);
                        let turn = Instant::now();
                        let answer = client.prompt(&session, "hi");
                        took.push(turn.elapsed());
                        assert_eq!(answer["result"]["content"], "ok", "{answer}");
                        client.call("session/close", json!({"sessionId": session}));
                    }
                    took
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("client thread"))
            .collect()
    });
    let rate = latencies.len() as f64 / started.elapsed().as_secs_f64();
    latencies.sort();
    (rate, latencies[latencies.len() * 99 / 100])
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
