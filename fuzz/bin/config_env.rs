//! Fuzz target `config_env`: see [`zeroclaw_fuzz::targets::config_env`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::config_env::run);
