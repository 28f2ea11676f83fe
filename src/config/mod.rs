//! Typed configuration: defaults <- `<config_dir>/config.toml` <- `ZEROCLAW_*` environment overlay.
