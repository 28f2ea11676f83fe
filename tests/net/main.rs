//! The upstream suite: the OpenAI-compatible and Anthropic providers against loopback model
//! servers, and the egress proxy against loopback upstreams (plain and hostile, and through
//! the agent's own tool calls). One test binary; each former file is a module
//! (`provider_openai::…`).

#[path = "../egress_support/mod.rs"]
mod egress_support;
#[path = "../support/mod.rs"]
mod support;
#[path = "../tools_support/mod.rs"]
mod tools_support;

mod egress_approval;
mod egress_credentials;
mod egress_credentials_git;
mod egress_credentials_pip;
mod egress_credentials_proxy;
mod egress_hostile;
mod egress_parser;
mod egress_proxy;
mod egress_ssh;
mod egress_tools;
mod egress_transparent;
mod provider_anthropic;
mod provider_openai;
