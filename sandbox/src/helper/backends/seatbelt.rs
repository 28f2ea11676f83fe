//! The Seatbelt backend's child-side entry (macOS): `sandbox-exec -p <profile> -- command`.

#[cfg(target_os = "macos")]
use std::ffi::OsString;
#[cfg(target_os = "macos")]
use std::path::Path;

#[cfg(target_os = "macos")]
use super::super::report::send;
use crate::error::{SetupError, Stage};
use crate::plan::Plan;
#[cfg(target_os = "macos")]
use crate::wire::{Enforcement, Message};

/// Seatbelt: `sandbox-exec -p <profile> -- command` (macOS only).
pub(crate) fn run(plan: &Plan) -> Result<i32, SetupError> {
    #[cfg(target_os = "macos")]
    {
        let sbpl = crate::seatbelt::profile(plan);
        let mut args: Vec<OsString> = vec!["-p".into(), sbpl.into(), "--".into()];
        args.extend(plan.argv.iter().cloned());
        std::env::set_current_dir(&plan.cwd).map_err(|e| {
            SetupError::os(Stage::Chdir, format!("chdir({})", plan.cwd.display()), &e)
        })?;
        send(&Message::Ready(Enforcement {
            backend: "seatbelt".into(),
            ..Enforcement::default()
        }));
        let err =
            super::super::exec::exec_path(Path::new("/usr/bin/sandbox-exec"), &args, &plan.env);
        return Err(SetupError::os(
            Stage::Exec,
            "execve(/usr/bin/sandbox-exec)",
            &err,
        ));
    }
    #[cfg(not(target_os = "macos"))]
    Err(SetupError::new(
        Stage::Exec,
        format!("seatbelt is macOS only (argv {:?})", plan.argv.len()),
    )
    .hint("choose backend = \"auto\" on Linux"))
}
