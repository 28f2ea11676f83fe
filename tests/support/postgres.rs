//! A private PostgreSQL database per test on the server named by `ZC_TEST_POSTGRES_URL`
//! (`.ci/run` starts one with `.ci/postgres.sh`). Without the variable the test is skipped with
//! a printed reason; with `CI=true` that is a failure. The database is dropped when the
//! [`TestDb`] is.

use std::sync::atomic::{AtomicU32, Ordering};

/// The variable naming the server's admin URL.
pub const URL_VAR: &str = "ZC_TEST_POSTGRES_URL";

/// One database made for one test.
pub struct TestDb {
    admin_url: String,
    pub name: String,
    /// The URL of this test's database.
    pub url: String,
}

impl TestDb {
    /// A new empty database; `None` (reason printed) when no server is configured.
    pub fn create() -> Option<TestDb> {
        let Ok(admin_url) = std::env::var(URL_VAR) else {
            super::require_feature(&format!(
                "{URL_VAR} is not set (start a server with .ci/postgres.sh)"
            ));
            return None;
        };
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "zc_test_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        admin(&admin_url, &format!("CREATE DATABASE {name}"));
        let url = database_url(&admin_url, &name);
        Some(TestDb {
            admin_url,
            name,
            url,
        })
    }

    /// Runs `sql` in this database (tests that tamper with rows or inspect them).
    pub fn execute(&self, sql: &str) -> u64 {
        run(&self.url, sql)
    }

    /// The first column of the first row of `sql` as text.
    pub fn query_text(&self, sql: &str) -> Option<String> {
        let url = self.url.clone();
        let sql = sql.to_owned();
        on_runtime(async move {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            let row = client.query_opt(&sql, &[]).await.unwrap()?;
            Some(row.get::<_, String>(0))
        })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        let admin_url = self.admin_url.clone();
        // Its own thread: a drop may happen inside a runtime.
        let _ = std::thread::spawn(move || admin(&admin_url, &sql)).join();
    }
}

/// `admin_url` with its database replaced by `name`.
fn database_url(admin_url: &str, name: &str) -> String {
    let (base, query) = match admin_url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (admin_url, None),
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

/// Runs the statements of `sql` in the database at `url`.
pub fn batch(url: &str, sql: &str) {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    on_runtime(async move {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .batch_execute(&sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    })
}

/// The first column of every row of `sql` in the database at `url`, as text.
pub fn texts(url: &str, sql: &str) -> Vec<String> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    on_runtime(async move {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let rows = client
            .query(&sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
        rows.iter().map(|r| r.get::<_, String>(0)).collect()
    })
}

fn admin(url: &str, sql: &str) {
    run(url, sql);
}

fn run(url: &str, sql: &str) -> u64 {
    let url = url.to_owned();
    let sql = sql.to_owned();
    on_runtime(async move {
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
        tokio::spawn(conn);
        client
            .execute(&sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    })
}

fn on_runtime<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(work)
    })
    .join()
    .unwrap()
}
