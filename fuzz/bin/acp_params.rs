//! Fuzz target `acp_params`: see [`zeroclaw_fuzz::targets::acp_params`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::acp_params::run);
