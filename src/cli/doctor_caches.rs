//! `zeroclaw doctor`'s persistent caches section: where they live, their scope, and each
//! principal's size (a bounded walk: [`crate::caches::sizes`]).

use serde_json::json;

use crate::caches::{Caches, sizes};

/// The section as text.
pub fn table(caches: &Caches) -> String {
    if !caches.enabled {
        return "\npersistent caches: off ([sandbox.caches] enabled = false)\n".to_owned();
    }
    let mut s = format!(
        "\npersistent caches ([sandbox.caches] scope = {}): {}\n",
        caches.scope.as_str(),
        caches.root.display()
    );
    let found = sizes(&caches.root);
    if found.is_empty() {
        s += "  (none yet)\n";
    }
    for size in found {
        let name = size.dir.file_name().unwrap_or_default().to_string_lossy();
        let at_least = if size.partial { "at least " } else { "" };
        s += &format!("  {name}: {at_least}{}\n", human(size.bytes));
    }
    s
}

/// The section as JSON.
pub fn json(caches: &Caches) -> serde_json::Value {
    json!({
        "enabled": caches.enabled,
        "scope": caches.scope.as_str(),
        "root": caches.root,
        "principals": if caches.enabled { sizes(&caches.root) } else { Vec::new() },
    })
}

fn human(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
