//! Fuzz target `egress_host`: see [`zeroclaw_fuzz::targets::egress_host`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::egress_host::run);
