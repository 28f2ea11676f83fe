//! Which session store the shared protocol suites run on: each process's own SQLite file (the
//! default) or one PostgreSQL database per test. A test body runs unchanged under
//! [`with_postgres`]; [`on_postgres!`](crate::on_postgres) instantiates listed tests of a suite
//! once more on PostgreSQL (skipped with a printed reason when no server is configured, see
//! [`super::postgres`]). Every `zeroclaw` the support code spawns gets the store's URL.
#![allow(dead_code)]

use std::cell::RefCell;

use super::postgres::TestDb;

thread_local! {
    static URL: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// The environment that points a spawned `zeroclaw` at this thread's store (none: SQLite).
pub fn env() -> Vec<(String, String)> {
    URL.with(|u| u.borrow().clone())
        .map(|url| vec![("ZEROCLAW_store__url".to_owned(), url)])
        .unwrap_or_default()
}

/// The URL of this thread's PostgreSQL database, if its tests run on one.
pub fn url() -> Option<String> {
    URL.with(|u| u.borrow().clone())
}

/// Whether this thread's tests run on PostgreSQL.
pub fn on_postgres() -> bool {
    URL.with(|u| u.borrow().is_some())
}

/// Runs `body` with every `zeroclaw` it spawns on a fresh PostgreSQL database, dropped after.
pub fn with_postgres(body: impl FnOnce()) {
    let Some(db) = TestDb::create() else {
        return;
    };
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            URL.with(|u| u.borrow_mut().take());
        }
    }
    URL.with(|u| *u.borrow_mut() = Some(db.url.clone()));
    let _restore = Restore;
    body();
    drop(_restore);
    drop(db);
}

/// Runs the listed `#[test]` functions of this suite again on PostgreSQL (`on_postgres::name`).
#[macro_export]
macro_rules! on_postgres {
    ($($name:ident),* $(,)?) => {
        mod on_postgres {
            $(
                #[test]
                fn $name() {
                    $crate::support::store_under_test::with_postgres(super::$name);
                }
            )*
        }
    };
}
