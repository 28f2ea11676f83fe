//! The Landlock ruleset: read+execute on the read-only roots (on the namespace backends, on
//! the new root that holds only them), everything on the writable roots, device access on the
//! device nodes; TCP denied and abstract-socket and signal scopes when the network is denied
//! or goes through the egress proxy on the host's loopback (then connecting to the proxy's two
//! ports is the one TCP right, and a kernel below ABI 4 is refused whatever `allow_partial`
//! says). ABI 6 is full enforcement; less is refused unless allowed.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use std::path::{Path, PathBuf};

use crate::error::{SetupError, Stage};
use crate::plan::{LANDLOCK_NET_ABI as NET_ABI, LandlockPlan};

/// The ABI whose rights we ask for; a kernel that offers less enforces only partially.
pub const TARGET_ABI: ABI = ABI::V6;

fn fail(call: &str, e: impl std::fmt::Display) -> SetupError {
    SetupError::new(Stage::Landlock, format!("{call}: {e}"))
        .hint("Landlock needs Linux >= 6.12 with lsm=landlock enabled (see `zeroclaw doctor`)")
}

/// Applies the ruleset; returns the kernel ABI and `full`/`partial`.
pub fn apply(plan: &LandlockPlan, allow_partial: bool) -> Result<(u32, String), SetupError> {
    let abi = crate::sys::landlock_abi().unwrap_or(0);
    if !plan.connect_tcp.is_empty() && abi < NET_ABI {
        // Best effort would drop the TCP rules silently: the proxy would be a suggestion.
        return Err(SetupError::new(
            Stage::Landlock,
            format!(
                "network proxy on the landlock backend needs Landlock ABI {NET_ABI} (TCP \
                 rules); this kernel has ABI {abi}"
            ),
        )
        .hint("upgrade to Linux >= 6.7, or use network deny or allow"));
    }
    let read = AccessFs::from_read(TARGET_ABI);
    let all = AccessFs::from_all(TARGET_ABI);
    let devices = read | AccessFs::WriteFile | AccessFs::IoctlDev;
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(|e| fail("handle_access(fs)", e))?;
    if plan.deny_network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(TARGET_ABI))
            .map_err(|e| fail("handle_access(net)", e))?
            .scope(Scope::from_all(TARGET_ABI))
            .map_err(|e| fail("scope", e))?;
    } else {
        ruleset = ruleset
            .scope(Scope::Signal)
            .map_err(|e| fail("scope(signal)", e))?;
    }
    let mut created = ruleset
        .create()
        .map_err(|e| fail("landlock_create_ruleset", e))?;
    for port in &plan.connect_tcp {
        created = created
            .add_rule(NetPort::new(*port, AccessNet::ConnectTcp))
            .map_err(|e| fail(&format!("landlock_add_rule(tcp connect {port})"), e))?;
    }
    // Without a pid namespace (Landlock-only rung: host paths, opened without symlinks) a rule
    // on /proc would show every process's cmdline; rules are inode-based, so /proc is granted
    // entry by entry instead (see `proc_entries`).
    let read_paths: Vec<PathBuf> = plan
        .read
        .iter()
        .flat_map(|p| {
            if plan.no_symlinks && p == Path::new("/proc") {
                crate::plan::subtract_on_host(proc_entries(), &plan.proc_hidden)
            } else {
                vec![p.clone()]
            }
        })
        .collect();
    for (paths, access) in [
        (&read_paths, read),
        (&plan.write, all),
        (&plan.devices, devices),
    ] {
        for path in paths {
            // On host paths (Landlock-only backend) no symlink on the way — the plan's paths are
            // canonical, and a link planted since planning, e.g. by another sandbox sharing a
            // writable root, would otherwise move the rule onto its target. Such a path gets
            // no rule (fail closed).
            let Ok(fd) = crate::sys::open_path(path, plan.no_symlinks) else {
                continue;
            };
            let is_dir = nix::sys::stat::fstat(&fd)
                .is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFDIR);
            let access = if is_dir {
                access
            } else {
                access & AccessFs::from_file(TARGET_ABI)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|e| fail(&format!("landlock_add_rule({})", path.display()), e))?;
        }
    }
    let status = created
        .restrict_self()
        .map_err(|e| fail("landlock_restrict_self", e))?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok((abi, "full".into())),
        RulesetStatus::PartiallyEnforced if allow_partial => Ok((abi, "partial".into())),
        RulesetStatus::PartiallyEnforced => Err(partial(abi)),
        RulesetStatus::NotEnforced => Err(SetupError::new(
            Stage::Landlock,
            "Landlock is not enforced",
        )
        .hint("enable Landlock (kernel >= 5.13, lsm=...,landlock) or choose another backend")),
    }
}

/// `/proc` without other processes: its entries that are not process directories (cpuinfo,
/// meminfo, stat, sys, ...; the `self`, `thread-self`, `mounts`, `net` links are left out, a
/// rule through them would land on a process directory) and the calling process's own
/// directory, which the command keeps across `execve`. `/proc/self/...` thus works for the
/// command itself; its descendants get no process directory at all, their own included
/// (Landlock can only take rights away after `restrict_self`).
fn proc_entries() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from(format!("/proc/{}", std::process::id()))];
    if let Ok(dir) = std::fs::read_dir("/proc") {
        out.extend(
            dir.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| !t.is_symlink()))
                .filter(|e| {
                    let name = e.file_name();
                    let name = name.as_encoded_bytes();
                    !name.is_empty() && !name.iter().all(u8::is_ascii_digit)
                })
                .map(|e| e.path()),
        );
    }
    out
}

fn partial(abi: u32) -> SetupError {
    SetupError::new(
        Stage::Landlock,
        format!("Landlock ABI {abi} enforces only part of the ruleset (need ABI 6)"),
    )
    .hint("upgrade to Linux >= 6.12, or set [sandbox] allow_partial = true to accept")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_entries_hold_no_other_process() {
        let entries = proc_entries();
        let own = PathBuf::from(format!("/proc/{}", std::process::id()));
        assert!(entries.contains(&own));
        assert!(entries.contains(&PathBuf::from("/proc/cpuinfo")));
        assert!(entries.contains(&PathBuf::from("/proc/sys")));
        for link in ["/proc/self", "/proc/thread-self", "/proc/mounts"] {
            assert!(!entries.contains(&PathBuf::from(link)), "{link}");
        }
        let numeric = |p: &PathBuf| {
            p.file_name()
                .is_some_and(|n| n.as_encoded_bytes().iter().all(u8::is_ascii_digit))
        };
        assert_eq!(entries.iter().filter(|p| numeric(p)).count(), 1);
    }
}
