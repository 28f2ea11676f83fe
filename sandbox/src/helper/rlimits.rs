//! Resource limits of the command (hard and soft alike, so it cannot raise them).

use nix::sys::resource::{Resource, setrlimit};

use crate::error::{SetupError, Stage};
use crate::profile::Limits;

/// Applies CPU, memory, process, file-size, open-file limits and disables core dumps.
pub fn apply(l: &Limits) -> Result<(), SetupError> {
    let set = |res: Resource, name: &str, v: u64| {
        setrlimit(res, v, v).map_err(|e| {
            SetupError::os(Stage::Rlimits, format!("setrlimit({name}, {v})"), &e.into())
        })
    };
    set(Resource::RLIMIT_CPU, "RLIMIT_CPU", l.cpu_secs)?;
    set(Resource::RLIMIT_DATA, "RLIMIT_DATA", l.memory_bytes)?;
    set(Resource::RLIMIT_NPROC, "RLIMIT_NPROC", l.processes)?;
    set(Resource::RLIMIT_FSIZE, "RLIMIT_FSIZE", l.file_size_bytes)?;
    set(Resource::RLIMIT_NOFILE, "RLIMIT_NOFILE", l.open_files)?;
    set(Resource::RLIMIT_CORE, "RLIMIT_CORE", 0)
}
