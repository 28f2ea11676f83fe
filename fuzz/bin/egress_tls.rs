//! Fuzz target `egress_tls`: see [`zeroclaw_fuzz::targets::egress_tls`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::egress_tls::run);
