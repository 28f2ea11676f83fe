//! Which transport the shared protocol suites run over: stdio (`zeroclaw acp`, the default) or
//! WebSocket to a `zeroclaw daemon` over TCP or its Unix socket. A test body runs unchanged
//! under [`with_transport`]; [`over_websocket!`](crate::over_websocket) instantiates listed
//! tests of a suite once more per WebSocket transport.
#![allow(dead_code)]

use std::cell::Cell;

/// How the test client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `zeroclaw acp`, NDJSON over stdin/stdout.
    Stdio,
    /// `zeroclaw daemon`, WebSocket `/acp` over `tcp:127.0.0.1:0` with a bearer token.
    WsTcp,
    /// `zeroclaw daemon`, WebSocket `/acp` over its Unix socket (peer credentials, no token).
    WsUnix,
}

thread_local! {
    static CURRENT: Cell<Transport> = const { Cell::new(Transport::Stdio) };
}

/// The transport clients spawned on this thread use.
pub fn current() -> Transport {
    CURRENT.with(Cell::get)
}

/// Runs `body` with clients spawned on this thread using `transport`.
pub fn with_transport(transport: Transport, body: impl FnOnce()) {
    struct Restore(Transport);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(transport)));
    body();
}

/// Runs the listed `#[test]` functions of this suite again over WebSocket, once over TCP
/// (`over_ws_tcp::name`) and once over the Unix socket (`over_ws_unix::name`).
#[macro_export]
macro_rules! over_websocket {
    ($($name:ident),* $(,)?) => {
        mod over_ws_tcp {
            $(
                #[test]
                fn $name() {
                    use $crate::support::ws_transport::{Transport, with_transport};
                    with_transport(Transport::WsTcp, super::$name);
                }
            )*
        }
        mod over_ws_unix {
            $(
                #[test]
                fn $name() {
                    use $crate::support::ws_transport::{Transport, with_transport};
                    with_transport(Transport::WsUnix, super::$name);
                }
            )*
        }
    };
}
