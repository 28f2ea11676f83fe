//! The ACP suite: `zeroclaw acp` over stdio (and the same messages over WebSocket) against the
//! loopback model server — lifecycle, prompts, cancellation, sessions, modes, configuration
//! options, MCP servers, persistence, usage, metrics, blobs, and the robustness run of
//! hostile lines. One test binary; each former file is a module (`acp_smoke::…`).

#[path = "../support/mod.rs"]
mod support;
#[path = "../tools_support/mod.rs"]
mod tools_support;

mod acp_blobs;
mod acp_cancel;
mod acp_client_fs;
mod acp_commands;
mod acp_config;
mod acp_config_options;
mod acp_cwd;
mod acp_errors;
mod acp_images;
mod acp_lifecycle;
mod acp_mcp;
mod acp_mcp_egress;
mod acp_mcp_install;
mod acp_metrics_file;
mod acp_modes;
mod acp_persistence;
mod acp_prompt;
mod acp_sandbox;
mod acp_session_list;
mod acp_smoke;
mod acp_terminal;
mod acp_usage;
mod robustness;
