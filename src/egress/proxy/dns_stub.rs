//! Transparent egress's DNS stub, on 127.0.0.1:53 in the child's network namespace (the
//! child's `resolv.conf` names it; its `/etc/hosts` has `localhost` only): a query for one
//! name the policy allows (at one of its ports; in a supervised session, any well-formed
//! name, asked about when connected to) is answered with the name's synthetic address
//! ([`super::synthetic`]) for `A`, and with no records for any other type (`AAAA`
//! included: the child's namespace has no IPv6 route); any other name gets `NXDOMAIN`. Nothing
//! is resolved here: the proxy resolves the name when the child connects. A refused name is a
//! refusal of the call like a refused connection (`network: refused NAME — RULE`, reported
//! `via` dns, once per name). A small parser of its own (one question, no compression in
//! it), because a query is a few bytes and the stub must decide on exactly the name the proxy
//! later judges.

use std::net::Ipv4Addr;
use std::sync::Arc;

use tokio::net::UdpSocket;

use super::Inner;
use super::synthetic::Names;
use crate::egress::host::shown;
use crate::egress::{Host, Rule};

const TYPE_A: u16 = 1;
const CLASS_IN: u16 = 1;
const RCODE_FORMERR: u8 = 1;
const RCODE_SERVFAIL: u8 = 2;
const RCODE_NXDOMAIN: u8 = 3;
const RCODE_NOTIMP: u8 = 4;
/// Seconds a resolver may keep an answer (the address holds for the whole call).
const TTL: u32 = 60;

/// Answers queries on `socket` until the task is aborted.
pub(super) async fn serve(inner: Arc<Inner>, names: Arc<Names>, socket: UdpSocket) {
    let mut buf = [0u8; 512];
    loop {
        let (n, from) = match socket.recv_from(&mut buf).await {
            Ok(got) => got,
            Err(e) => {
                tracing::debug!(error = %e, "dns stub receive failed");
                continue;
            }
        };
        let Some((reply, refused)) = answer(&inner, &names, &buf[..n]) else {
            continue;
        };
        // Reported before the answer: once the child has it, its call may end at once.
        if let Some((name, rule)) = refused {
            inner.refuse_lookup(&name, rule).await;
        }
        let _ = socket.send_to(&reply, from).await;
    }
}

/// One parsed question.
struct Question<'a> {
    /// The name as asked, labels joined by dots.
    name: String,
    qtype: u16,
    qclass: u16,
    /// The question's bytes (echoed in the answer).
    raw: &'a [u8],
}

/// A name the stub refused (as shown: canonical, or escaped when it is no name) and why.
type Refused = (String, Rule);

/// The reply to `query` and the name refused if it was, or `None` for something that is not
/// a query at all.
fn answer(inner: &Inner, names: &Names, query: &[u8]) -> Option<(Vec<u8>, Option<Refused>)> {
    if query.len() < 12 || query[2] & 0x80 != 0 {
        return None;
    }
    let opcode = (query[2] >> 3) & 0x0f;
    let qdcount = u16::from_be_bytes([query[4], query[5]]);
    if opcode != 0 {
        return Some((reply(query, None, RCODE_NOTIMP, None), None));
    }
    let question = match (qdcount, question(&query[12..])) {
        (1, Some(q)) => q,
        _ => return Some((reply(query, None, RCODE_FORMERR, None), None)),
    };
    let allowed = match Host::parse(&question.name) {
        Ok(Host::Name(name)) => match judge(inner, &name) {
            Ok(()) => Ok(name),
            Err(rule) => Err((name, rule)),
        },
        Ok(Host::Ip(ip)) => Err((
            ip.to_string(),
            Rule::MalformedHost("an address, not a name".into()),
        )),
        Err(rule) => Err((shown(&question.name), rule)),
    };
    let name = match allowed {
        Ok(name) => name,
        Err((name, rule)) => {
            tracing::info!(%name, %rule, "dns stub: no answer");
            let nx = reply(query, Some(&question), RCODE_NXDOMAIN, None);
            return Some((nx, Some((name, rule))));
        }
    };
    if question.qclass != CLASS_IN || question.qtype != TYPE_A {
        return Some((reply(query, Some(&question), 0, None), None));
    }
    match names.address_for(&name) {
        Some(addr) => Some((reply(query, Some(&question), 0, Some(addr)), None)),
        None => Some((reply(query, Some(&question), RCODE_SERVFAIL, None), None)),
    }
}

/// Whether the stub answers for `name`: allowed at one of the policy's ports, or (with an
/// approver) only missing from `allow_domains`, which the connection will ask about.
fn judge(inner: &Inner, name: &str) -> Result<(), Rule> {
    let decision = inner.policy.check_name(name);
    match decision.rule {
        _ if decision.allowed => Ok(()),
        Rule::NotInAllowDomains if inner.approver.is_some() => Ok(()),
        rule => Err(rule),
    }
}

/// The question at the start of `rest` (after the header).
fn question(rest: &[u8]) -> Option<Question<'_>> {
    let mut at = 0;
    let mut labels: Vec<String> = Vec::new();
    loop {
        let len = usize::from(*rest.get(at)?);
        at += 1;
        if len == 0 {
            break;
        }
        // A compression pointer (or a reserved label type) has no place in a question.
        if len & 0xc0 != 0 {
            return None;
        }
        let label = rest.get(at..at + len)?;
        // A dot inside a label would make the joined name another name's.
        if label.contains(&b'.') {
            return None;
        }
        // Bytes as sent: a NUL, a dot or a control character inside a label makes the joined
        // name one that `Host::parse` refuses, never a different allowed one.
        labels.push(label.iter().map(|&b| char::from(b)).collect());
        at += len;
    }
    let fixed = rest.get(at..at + 4)?;
    Some(Question {
        name: labels.join("."),
        qtype: u16::from_be_bytes([fixed[0], fixed[1]]),
        qclass: u16::from_be_bytes([fixed[2], fixed[3]]),
        raw: &rest[..at + 4],
    })
}

/// A response to `query` with `rcode`, echoing `question`, with one `A` record if `addr`.
fn reply(
    query: &[u8],
    question: Option<&Question<'_>>,
    rcode: u8,
    addr: Option<Ipv4Addr>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&query[..2]);
    // QR, the query's opcode and RD; RA; the rcode.
    out.push(0x80 | (query[2] & 0x79));
    out.push(0x80 | (rcode & 0x0f));
    out.extend_from_slice(&u16::from(question.is_some()).to_be_bytes());
    out.extend_from_slice(&u16::from(addr.is_some()).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    if let Some(q) = question {
        out.extend_from_slice(q.raw);
    }
    if let Some(addr) = addr {
        out.extend_from_slice(&[0xc0, 12]);
        out.extend_from_slice(&TYPE_A.to_be_bytes());
        out.extend_from_slice(&CLASS_IN.to_be_bytes());
        out.extend_from_slice(&TTL.to_be_bytes());
        out.extend_from_slice(&4u16.to_be_bytes());
        out.extend_from_slice(&addr.octets());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &[&[u8]], qtype: u16) -> Vec<u8> {
        let mut q = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        for label in name {
            q.push(label.len() as u8);
            q.extend_from_slice(label);
        }
        q.push(0);
        q.extend_from_slice(&qtype.to_be_bytes());
        q.extend_from_slice(&CLASS_IN.to_be_bytes());
        q
    }

    #[test]
    fn a_question_is_read_label_by_label() {
        let q = query(&[b"Git", b"example"], TYPE_A);
        let parsed = question(&q[12..]).unwrap();
        assert_eq!(parsed.name, "Git.example");
        assert_eq!((parsed.qtype, parsed.qclass), (TYPE_A, CLASS_IN));
        let nul = query(&[b"evil\0", b"allowed", b"example"], TYPE_A);
        let parsed = question(&nul[12..]).unwrap();
        assert!(Host::parse(&parsed.name).is_err(), "{:?}", parsed.name);
        assert!(question(&[0xc0, 12, 0, 1, 0, 1]).is_none());
        let dotted = query(&[b"evil.example", b"allowed"], TYPE_A);
        assert!(question(&dotted[12..]).is_none());
        assert!(question(&[3, b'a', b'b']).is_none());
    }

    #[test]
    fn a_reply_echoes_the_question_and_carries_one_address() {
        let q = query(&[b"a", b"example"], TYPE_A);
        let parsed = question(&q[12..]).unwrap();
        let r = reply(&q, Some(&parsed), 0, Some(Ipv4Addr::new(198, 18, 0, 1)));
        assert_eq!(&r[..2], &[0x12, 0x34]);
        assert_eq!(r[2] & 0x80, 0x80);
        assert_eq!(r[3] & 0x0f, 0);
        assert_eq!(u16::from_be_bytes([r[6], r[7]]), 1);
        assert_eq!(&r[r.len() - 4..], &[198, 18, 0, 1]);
        let nx = reply(&q, Some(&parsed), RCODE_NXDOMAIN, None);
        assert_eq!(nx[3] & 0x0f, RCODE_NXDOMAIN);
        assert_eq!(u16::from_be_bytes([nx[6], nx[7]]), 0);
    }
}
