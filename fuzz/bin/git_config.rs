//! Fuzz target `git_config`: see [`zeroclaw_fuzz::targets::git_config`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::git_config::run);
