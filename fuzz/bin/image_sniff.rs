//! Fuzz target `image_sniff`: see [`zeroclaw_fuzz::targets::image_sniff`].
#![cfg_attr(feature = "libfuzzer", no_main)]
zeroclaw_fuzz::target!(zeroclaw_fuzz::targets::image_sniff::run);
