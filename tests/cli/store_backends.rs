//! The same store semantics on both backends, SQLite and PostgreSQL: sessions and history,
//! atomic turns, cascading deletes, ordering, duplicate ids, leases with fencing, `store copy`
//! between them, and the agents' "Always allow" answers. Each case runs once per backend (`sqlite::…`, `postgres::…`).

use crate::support;

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use support::postgres::TestDb;
use zeroclaw::store::{
    Fence, Holder, LeaseError, Location, NewTurn, SessionFile, SessionRecord, Store, StoreError,
    StoredEntry, copy, files,
};

/// A store of one backend and whatever keeps it alive.
struct Opened {
    store: Store,
    _dir: Option<tempfile::TempDir>,
    db: Option<TestDb>,
}

async fn sqlite() -> Option<Opened> {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.db")).unwrap();
    Some(Opened {
        store,
        _dir: Some(dir),
        db: None,
    })
}

async fn postgres() -> Option<Opened> {
    let db = TestDb::create()?;
    let location = Location::Postgres(db.url.clone());
    let store = Store::open_location_async(&location, 4).await.unwrap();
    Some(Opened {
        store,
        _dir: None,
        db: Some(db),
    })
}

fn record(id: &str, at: i64) -> SessionRecord {
    SessionRecord {
        id: id.to_owned(),
        agent_alias: "coder".to_owned(),
        workspace_dir: PathBuf::from("/work/space"),
        mcp_servers: json!([{"name": "fs", "command": "mcp-fs", "args": [], "env": []}]),
        owner: Some("uid:1000".to_owned()),
        created_at: at,
        last_activity: at,
    }
}

fn entry(kind: &str, n: u64) -> StoredEntry {
    StoredEntry {
        kind: kind.to_owned(),
        payload: json!({ "n": n, "text": format!("{kind} {n} ünïcode \"quoted\"") }),
    }
}

async fn history_round_trips(o: Opened) {
    let s = &o.store;
    s.create_session(record("s1", 1_000)).await.unwrap();
    s.append_turn("s1", vec![entry("user", 1), entry("assistant", 2)])
        .await
        .unwrap();
    s.append_ended_turn("s1", vec![entry("user", 3)], "cancelled")
        .await
        .unwrap();
    let turns = s.turns("s1").await.unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].number, 1);
    assert_eq!(turns[0].stop_reason, None);
    assert_eq!(
        turns[0].entries,
        vec![entry("user", 1), entry("assistant", 2)]
    );
    assert_eq!(turns[1].stop_reason.as_deref(), Some("cancelled"));
    let history = s.history("s1").await.unwrap();
    assert_eq!(history.len(), 3);
    let rec = s.get_session("s1").await.unwrap().unwrap();
    assert_eq!(rec.mcp_servers, record("s1", 0).mcp_servers);
    assert!(
        rec.last_activity > 1_000,
        "append_turn updates last_activity"
    );
    assert!(s.get_session("nope").await.unwrap().is_none());
}

async fn unknown_sessions_and_duplicates_are_errors(o: Opened) {
    let s = &o.store;
    let err = s.append_turn("ghost", vec![entry("user", 1)]).await;
    assert!(
        matches!(err, Err(StoreError::SessionNotFound(_))),
        "{err:?}"
    );
    s.create_session(record("d", 1)).await.unwrap();
    let dup = s.create_session(record("d", 2)).await;
    assert!(matches!(dup, Err(StoreError::SessionExists(_))), "{dup:?}");
    assert!(matches!(
        s.touch("ghost").await,
        Err(StoreError::SessionNotFound(_))
    ));
}

async fn list_order_and_cascading_delete(o: Opened) {
    let s = &o.store;
    s.create_session(record("old", 1)).await.unwrap();
    s.create_session(record("new", 2)).await.unwrap();
    s.append_turn("old", vec![entry("user", 1)]).await.unwrap();
    let ids: Vec<String> = s
        .list_summaries()
        .await
        .unwrap()
        .into_iter()
        .map(|x| x.record.id)
        .collect();
    assert_eq!(ids, ["old", "new"], "the turn made `old` the most recent");
    let holder = Holder::from_name("h/1/a");
    s.acquire_lease("old", &holder, 60_000).await.unwrap();
    assert!(s.delete_session("old").await.unwrap());
    assert!(!s.delete_session("old").await.unwrap());
    assert!(s.turns("old").await.unwrap().is_empty());
    // The lease went with it: re-creating the id starts from a free lease.
    s.create_session(record("old", 3)).await.unwrap();
    let other = Holder::from_name("h/2/b");
    assert_eq!(
        s.acquire_lease("old", &other, 60_000).await.unwrap().token,
        1
    );
}

async fn a_held_lease_refuses_others_until_it_expires(o: Opened) {
    let s = &o.store;
    s.create_session(record("l", 1)).await.unwrap();
    let a = Holder::from_name("host-a/10/x");
    let b = Holder::from_name("host-b/20/y");
    let fa = s.acquire_lease("l", &a, 400).await.unwrap();
    assert_eq!(fa.token, 1);
    assert_eq!(
        s.acquire_lease("l", &a, 400).await.unwrap(),
        fa,
        "re-claim keeps the token"
    );
    match s.acquire_lease("l", &b, 400).await {
        Err(StoreError::Lease(LeaseError::Held { holder, .. })) => assert_eq!(holder, a.as_str()),
        other => panic!("expected Held, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let fb = s.acquire_lease("l", &b, 60_000).await.unwrap();
    assert_eq!(fb.token, 2, "a takeover increments the fencing token");
    // The renewal of the old holder reports the loss.
    let lost = s.renew_leases(vec![fa.clone()], 60_000).await.unwrap();
    assert_eq!(lost, vec![fa]);
    assert!(
        s.renew_leases(vec![fb.clone()], 60_000)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn a_stale_holder_cannot_write_after_a_takeover(o: Opened) {
    let s = &o.store;
    s.create_session(record("f", 1)).await.unwrap();
    let a = Holder::from_name("host-a/10/x");
    let b = Holder::from_name("host-b/20/y");
    let fa = s.acquire_lease("f", &a, 100).await.unwrap();
    let mut turn = NewTurn::new("f", vec![entry("user", 1)]);
    turn.fence = Some(fa.clone());
    s.write_turn(turn.clone()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let fb = s.acquire_lease("f", &b, 60_000).await.unwrap();
    turn.entries = vec![entry("user", 2)];
    match s.write_turn(turn).await {
        Err(StoreError::Lease(LeaseError::Fenced { holder, .. })) => {
            assert_eq!(holder, b.as_str())
        }
        other => panic!("expected Fenced, got {other:?}"),
    }
    let mut by_b = NewTurn::new("f", vec![entry("user", 3)]);
    by_b.fence = Some(fb);
    s.write_turn(by_b).await.unwrap();
    let entries = s.history("f").await.unwrap();
    assert_eq!(
        entries,
        vec![entry("user", 1), entry("user", 3)],
        "nothing of the stale turn"
    );
}

async fn a_released_lease_is_free_at_once(o: Opened) {
    let s = &o.store;
    s.create_session(record("r", 1)).await.unwrap();
    let a = Holder::from_name("host-a/10/x");
    let b = Holder::from_name("host-b/20/y");
    let fa = s.acquire_lease("r", &a, 60_000).await.unwrap();
    s.release_lease(fa).await.unwrap();
    let fb = s.acquire_lease("r", &b, 60_000).await.unwrap();
    assert_eq!(fb.holder, b.as_str());
    // Stealing names the exact holder it takes from.
    let c = Holder::from_name("host-c/30/z");
    let wrong = s.steal_lease("r", &c, 1_000, "host-a/10/x").await;
    assert!(matches!(
        wrong,
        Err(StoreError::Lease(LeaseError::Held { .. }))
    ));
    let stolen: Fence = s.steal_lease("r", &c, 1_000, b.as_str()).await.unwrap();
    assert_eq!(stolen.token, fb.token + 1);
}

async fn concurrent_claims_have_one_winner(o: Opened) {
    let s = o.store.clone();
    s.create_session(record("c", 1)).await.unwrap();
    let claims = (0..8).map(|i| {
        let s = s.clone();
        tokio::spawn(async move {
            let holder = Holder::from_name(format!("host-{i}/1/x"));
            s.acquire_lease("c", &holder, 60_000).await
        })
    });
    let results = futures::future::join_all(claims).await;
    let won = results
        .iter()
        .filter(|r| r.as_ref().unwrap().is_ok())
        .count();
    assert_eq!(won, 1, "{results:?}");
}

async fn copy_round_trips_to_the_other_backend(o: Opened) {
    let s = &o.store;
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        s.create_session(record(id, i as i64 + 1)).await.unwrap();
        for t in 0..3 {
            s.append_ended_turn(
                id,
                vec![entry("user", t), entry("assistant", t)],
                "end_turn",
            )
            .await
            .unwrap();
        }
    }
    let mut turn = NewTurn::new("b", vec![entry("user", 9)]);
    turn.files = vec![
        SessionFile::new(files::UPLOAD, "uploads/ab.png".into(), "ab".repeat(32), 7),
        SessionFile::new(files::DELIVERED, "out/r.pdf".into(), "cd".repeat(32), 9),
    ];
    s.write_turn(turn).await.unwrap();
    s.add_agent_approval("coder", "network:pkg.example")
        .await
        .unwrap();
    s.add_agent_approval("other", "network:cdn.example")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let other = match &o.db {
        // From PostgreSQL to SQLite, and from SQLite to PostgreSQL when a server is there.
        Some(_) => Store::open(&dir.path().join("copy.db")).unwrap(),
        None => match postgres().await {
            Some(pg) => {
                let copied = copy::copy_all(s, &pg.store).await.unwrap();
                assert_eq!(copied.sessions, 3);
                assert_same(s, &pg.store).await;
                Store::open(&dir.path().join("copy.db")).unwrap()
            }
            None => Store::open(&dir.path().join("copy.db")).unwrap(),
        },
    };
    let copied = copy::copy_all(s, &other).await.unwrap();
    let counts = (
        copied.sessions,
        copied.turns,
        copied.entries,
        copied.files,
        copied.approvals,
    );
    assert_eq!(counts, (3, 10, 19, 2, 2));
    assert_same(s, &other).await;
    let again = copy::copy_all(s, &other).await;
    assert!(
        matches!(again, Err(StoreError::SessionExists(_))),
        "{again:?}"
    );
}

async fn assert_same(a: &Store, b: &Store) {
    assert_eq!(
        a.all_agent_approvals().await.unwrap(),
        b.all_agent_approvals().await.unwrap()
    );
    let left = a.list_summaries().await.unwrap();
    let right = b.list_summaries().await.unwrap();
    assert_eq!(left, right);
    for summary in left {
        let id = &summary.record.id;
        assert_eq!(
            a.turns(id).await.unwrap(),
            b.turns(id).await.unwrap(),
            "{id}"
        );
        assert_eq!(
            a.files(id).await.unwrap(),
            b.files(id).await.unwrap(),
            "{id}"
        );
    }
}

async fn always_allow_answers_are_kept_per_agent(o: Opened) {
    let store = &o.store;
    assert!(store.agent_approvals("coder").await.unwrap().is_empty());
    store
        .add_agent_approval("coder", "network:pkg.example")
        .await
        .unwrap();
    store
        .add_agent_approval("coder", "network:pkg.example")
        .await
        .unwrap();
    store
        .add_agent_approval("coder", "network:files.example")
        .await
        .unwrap();
    store
        .add_agent_approval("other", "network:cdn.example")
        .await
        .unwrap();
    assert_eq!(
        store.agent_approvals("coder").await.unwrap(),
        ["network:files.example", "network:pkg.example"]
    );
    assert_eq!(
        store.agent_approvals("other").await.unwrap(),
        ["network:cdn.example"]
    );
    assert!(store.agent_approvals("nobody").await.unwrap().is_empty());
}

macro_rules! on_each_backend {
    ($($case:ident),* $(,)?) => {
        mod on_sqlite {
            $(#[tokio::test]
            async fn $case() {
                super::$case(super::sqlite().await.unwrap()).await;
            })*
        }
        mod on_postgres {
            $(#[tokio::test]
            async fn $case() {
                if let Some(opened) = super::postgres().await {
                    super::$case(opened).await;
                }
            })*
        }
    };
}

on_each_backend!(
    history_round_trips,
    unknown_sessions_and_duplicates_are_errors,
    list_order_and_cascading_delete,
    a_held_lease_refuses_others_until_it_expires,
    a_stale_holder_cannot_write_after_a_takeover,
    a_released_lease_is_free_at_once,
    concurrent_claims_have_one_winner,
    copy_round_trips_to_the_other_backend,
    always_allow_answers_are_kept_per_agent,
);
