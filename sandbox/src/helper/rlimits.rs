//! Resource limits of the command (hard and soft alike, so it cannot raise them), and a
//! quarter of the launcher's for the per-user counts the host's uid shares.

use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit, setrlimit};

use crate::error::{SetupError, Stage};
use crate::profile::Limits;

/// Applies CPU, memory, process, file-size, open-file limits, disables core dumps and
/// lowers the message-queue and pending-signal limits.
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
    set(Resource::RLIMIT_CORE, "RLIMIT_CORE", 0)?;
    // Counted per user up to the host's uid (message-queue bytes, queued signals): a quarter
    // of the launcher's, so a child cannot take them all from the host's processes.
    for (res, name) in [
        (Resource::RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE"),
        (Resource::RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING"),
    ] {
        let (soft, hard) = getrlimit(res)
            .map_err(|e| SetupError::os(Stage::Rlimits, format!("getrlimit({name})"), &e.into()))?;
        if let Some(own) = [soft, hard]
            .into_iter()
            .filter(|v| *v != RLIM_INFINITY)
            .min()
        {
            set(res, name, own / 4)?;
        }
    }
    Ok(())
}
