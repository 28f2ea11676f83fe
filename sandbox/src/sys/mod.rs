//! The syscall layer: thin wrappers over the system calls that nix and libc do not wrap
//! safely, split by concern. The only module of the crate allowed `unsafe` (the crate root
//! denies it everywhere else); each `unsafe` block here says why it is sound.

mod activation;
mod at;
mod fd;
mod mount;
mod netdev;
mod probe;
mod process;
mod raw;
mod raw_tcp;
mod seccomp;
mod stack;
mod userns;
mod xattr;

pub use activation::*;
pub use at::*;
pub use fd::*;
pub use mount::*;
pub use netdev::*;
pub use probe::*;
pub use process::*;
pub use raw_tcp::*;
pub use seccomp::*;
pub use userns::*;
pub use xattr::*;
