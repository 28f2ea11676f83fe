//! The HTTP proxy's request head: the raw head as the proxy's scanner reads it (for a head
//! naming both `Content-Length` and `Transfer-Encoding`), and the parsed request line and
//! headers through the proxy's target check. The head is parsed by `httparse`, the parser
//! hyper serves the proxy with. Properties: whenever hyper's parser reads a complete head
//! naming both framings, the scanner saw both too (whatever the read sizes: else the proxy
//! forwards a request whose body length two parties read differently); a target the check
//! accepts is a host that re-parses to itself, named by the request's authority, with no
//! userinfo.

use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::{Method, Uri};
use zeroclaw::egress::Host;
use zeroclaw::egress::proxy::fuzz;

pub fn run(data: &[u8]) {
    let [chunk, head @ ..] = data else {
        return;
    };
    let mut slots = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut slots);
    let Ok(httparse::Status::Complete(_)) = req.parse(head) else {
        return;
    };
    let named = |name: &str| {
        req.headers
            .iter()
            .any(|h| h.name.eq_ignore_ascii_case(name))
    };
    let both = named("content-length") && named("transfer-encoding");
    let scanned = fuzz::head_names_both(head, usize::from(*chunk));
    if both {
        assert!(scanned, "hyper reads both framings, the scanner did not");
    }
    let (Some(method), Some(path)) = (req.method, req.path) else {
        return;
    };
    let Ok(method) = Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let Ok(uri) = path.parse::<Uri>() else {
        return;
    };
    let mut headers = HeaderMap::new();
    for h in req.headers.iter() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(h.name.as_bytes()),
            HeaderValue::from_bytes(h.value),
        ) else {
            return;
        };
        headers.append(name, value);
    }
    let Some(Ok(host)) = fuzz::checked_target(&method, &uri, &headers, scanned) else {
        return;
    };
    assert!(!both);
    assert_eq!(Host::parse(&host.to_string()).as_ref(), Ok(&host));
    let authority = uri.authority().expect("checked above");
    assert!(!authority.as_str().contains('@'));
    assert_eq!(Host::parse(authority.host()).as_ref(), Ok(&host));
}
