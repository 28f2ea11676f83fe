//! One module per target: `run(data)` feeds the bytes to a parser as the program would, and
//! asserts the property that parser promises where there is one.

pub mod acp_params;
pub mod audit_canonical;
pub mod config_env;
pub mod egress_host;
pub mod egress_http;
pub mod egress_socks;
pub mod egress_tls;
pub mod git_config;
pub mod git_paths;
pub mod image_sniff;
pub mod rpc;
