//! Fuzz target `audit_canonical`: see [`zeroclaw_fuzz::targets::audit_canonical`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::audit_canonical::run);
