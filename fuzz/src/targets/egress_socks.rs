//! The SOCKS5 handshake (greeting, method choice, `CONNECT` request), from a client whose
//! bytes arrive in reads of any size. Properties: a requested host the proxy takes re-parses
//! to itself, and the proxy's only write before the request is its method choice.

use zeroclaw::egress::Host;
use zeroclaw::egress::proxy::fuzz;

use crate::Client;

pub fn run(data: &[u8]) {
    let [chunk, input @ ..] = data else {
        return;
    };
    let mut client = Client::new(input, usize::from(*chunk % 32));
    let asked = crate::block_on(fuzz::socks_handshake(&mut client));
    if let Ok((requested, _port)) = asked {
        assert_eq!(client.written, [5, 0]);
        if let Ok(host) = requested {
            assert_eq!(Host::parse(&host.to_string()).as_ref(), Ok(&host));
        }
    }
}
