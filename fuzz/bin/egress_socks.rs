//! Fuzz target `egress_socks`: see [`zeroclaw_fuzz::targets::egress_socks`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::egress_socks::run);
