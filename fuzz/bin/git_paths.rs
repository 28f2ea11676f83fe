//! Fuzz target `git_paths`: see [`zeroclaw_fuzz::targets::git_paths`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::git_paths::run);
