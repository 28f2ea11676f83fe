//! The synthetic addresses of transparent egress: the DNS stub answers an allowed name with
//! an address of 198.18.0.0/15 (the benchmarking range, never a real destination) that stands
//! for that name for the rest of the call; a connection to it is mapped back to the name,
//! which the proxy then resolves itself. One table per proxy (per call), bounded.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;

/// The first address of the range (198.18.0.0/15).
const BASE: u32 = u32::from_be_bytes([198, 18, 0, 0]);
/// Names given an address per call at most (the range holds 2^17).
const MAX_NAMES: u32 = 65_536;

/// Name ⇄ synthetic address, both ways.
#[derive(Debug, Default)]
pub(super) struct Names {
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    by_name: HashMap<String, Ipv4Addr>,
    by_addr: HashMap<Ipv4Addr, String>,
}

impl Names {
    /// The address standing for `name` (canonical), given on first use; `None` once the
    /// table is full.
    pub fn address_for(&self, name: &str) -> Option<Ipv4Addr> {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(addr) = t.by_name.get(name) {
            return Some(*addr);
        }
        let n = u32::try_from(t.by_name.len()).ok()?;
        if n >= MAX_NAMES {
            return None;
        }
        let addr = Ipv4Addr::from(BASE + 1 + n);
        t.by_name.insert(name.to_owned(), addr);
        t.by_addr.insert(addr, name.to_owned());
        Some(addr)
    }

    /// The name `addr` stands for, if the stub gave it out.
    pub fn name_of(&self, addr: Ipv4Addr) -> Option<String> {
        let t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        t.by_addr.get(&addr).cloned()
    }
}

/// Whether `addr` is in the synthetic range (198.18.0.0/15).
pub(super) fn is_synthetic(addr: Ipv4Addr) -> bool {
    u32::from(addr) >> 17 == BASE >> 17
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_keeps_its_address_and_maps_back() {
        let names = Names::default();
        let a = names.address_for("a.example").unwrap();
        let b = names.address_for("b.example").unwrap();
        assert_ne!(a, b);
        assert_eq!(names.address_for("a.example"), Some(a));
        assert_eq!(names.name_of(b).as_deref(), Some("b.example"));
        assert!(is_synthetic(a) && is_synthetic(b));
        assert!(is_synthetic(Ipv4Addr::new(198, 19, 255, 255)));
        assert!(!is_synthetic(Ipv4Addr::new(198, 20, 0, 1)));
        assert!(!is_synthetic(Ipv4Addr::new(198, 17, 255, 255)));
        assert_eq!(names.name_of(Ipv4Addr::new(198, 18, 9, 9)), None);
    }
}
