//! The `ZEROCLAW_*` environment overlay, through the whole load (paths, TOML scalars, merge,
//! typed deserialization and validation) with no config file. Input: `NAME=value` lines; a
//! name without the prefix gets it. Property: loading ends (a value taken literally is retried
//! once per key) with a configuration or an error, never a panic.

use std::path::Path;

use zeroclaw::config::Config;

pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let vars: Vec<(String, String)> = text
        .split('\n')
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| {
            let name = if name.starts_with("ZEROCLAW_") {
                name.to_owned()
            } else {
                format!("ZEROCLAW_{name}")
            };
            (name, value.to_owned())
        })
        .collect();
    let _ = Config::load_with_env(Path::new("/nonexistent/zeroclaw-fuzz"), vars);
}
