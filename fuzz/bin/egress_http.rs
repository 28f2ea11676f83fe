//! Fuzz target `egress_http`: see [`zeroclaw_fuzz::targets::egress_http`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::egress_http::run);
