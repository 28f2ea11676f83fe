//! A `CONNECT` tunnel's first bytes read as a TLS ClientHello (rustls's `Acceptor`) for the
//! server name the proxy checks against the requested host. Properties: the bytes kept (to be
//! sent upstream) are exactly the bytes read, and a server name that [`Host::parse`] takes
//! re-parses to itself.

use zeroclaw::egress::Host;
use zeroclaw::egress::proxy::fuzz;

use crate::Client;

pub fn run(data: &[u8]) {
    let [chunk, input @ ..] = data else {
        return;
    };
    let mut client = Client::new(input, usize::from(*chunk) * 17 + 1);
    let Ok((bytes, sni)) = crate::block_on(fuzz::client_hello(&mut client)) else {
        return;
    };
    assert!(input.starts_with(&bytes));
    if let Some(Ok(host)) = sni.as_deref().map(Host::parse) {
        assert_eq!(Host::parse(&host.to_string()).as_ref(), Ok(&host));
    }
}
