//! Fuzz target `rpc`: see [`zeroclaw_fuzz::targets::rpc`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::rpc::run);
