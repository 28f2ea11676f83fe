//! The address classes the proxy refuses unless an `allow_cidrs` entry names them: loopback,
//! private (RFC 1918, ULA, shared CGNAT space), link-local, multicast, broadcast, reserved and
//! unspecified. An IPv4-mapped IPv6 address is judged as the IPv4 address it carries.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The refused class `addr` belongs to, if any.
pub fn refused_class(addr: IpAddr) -> Option<&'static str> {
    match addr.to_canonical() {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(a: Ipv4Addr) -> Option<&'static str> {
    let [first, second, ..] = a.octets();
    Some(match () {
        () if a.is_unspecified() || first == 0 => "unspecified",
        () if a.is_loopback() => "loopback",
        () if a.is_private() => "private",
        () if first == 100 && (second & 0xc0) == 64 => "private",
        () if a.is_link_local() => "link-local",
        () if a.is_multicast() => "multicast",
        () if a.is_broadcast() => "broadcast",
        () if first >= 240 => "reserved",
        () => return None,
    })
}

fn v6_class(a: Ipv6Addr) -> Option<&'static str> {
    let first = a.segments()[0];
    Some(match () {
        () if a.is_unspecified() => "unspecified",
        () if a.is_loopback() => "loopback",
        () if (first & 0xfe00) == 0xfc00 => "private",
        () if (first & 0xffc0) == 0xfe80 || (first & 0xffc0) == 0xfec0 => "link-local",
        () if a.is_multicast() => "multicast",
        // NAT64 (64:ff9b::/96) reaches the IPv4 address in its low bits.
        () if a.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] => {
            let [.., hi, lo] = a.segments();
            let v4 = Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
            return v4_class(v4);
        }
        () => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Option<&'static str> {
        refused_class(s.parse().unwrap())
    }

    #[test]
    fn every_refused_class_is_recognized() {
        let cases = [
            ("127.0.0.1", "loopback"),
            ("127.255.0.9", "loopback"),
            ("::1", "loopback"),
            ("10.0.0.1", "private"),
            ("172.16.4.4", "private"),
            ("192.168.1.1", "private"),
            ("100.64.0.1", "private"),
            ("fd12::1", "private"),
            ("169.254.169.254", "link-local"),
            ("fe80::1", "link-local"),
            ("224.0.0.1", "multicast"),
            ("ff02::1", "multicast"),
            ("0.0.0.0", "unspecified"),
            ("::", "unspecified"),
            ("255.255.255.255", "broadcast"),
            ("240.0.0.1", "reserved"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.1.1.1", "private"),
            ("64:ff9b::a00:1", "private"),
        ];
        for (addr, want) in cases {
            assert_eq!(class(addr), Some(want), "{addr}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for addr in [
            "93.184.215.14",
            "1.1.1.1",
            "2606:4700::1111",
            "172.32.0.1",
            "100.128.0.1",
        ] {
            assert_eq!(class(addr), None, "{addr}");
        }
    }
}
