//! The upstream suite: the OpenAI-compatible and Anthropic providers against loopback model
//! servers, and the egress proxy against loopback upstreams (plain and hostile). One test
//! binary; each former file is a module (`provider_openai::…`).

#[path = "../egress_support/mod.rs"]
mod egress_support;
#[path = "../support/mod.rs"]
mod support;

mod egress_hostile;
mod egress_proxy;
mod provider_anthropic;
mod provider_openai;
