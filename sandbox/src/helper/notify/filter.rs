//! The notifying filter (child side): the hand-built classic-BPF program that sends the
//! supervised syscalls to the listener, and its installation with
//! `SECCOMP_FILTER_FLAG_NEW_LISTENER`.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use crate::error::{SetupError, Stage};
use crate::helper::bpf::{
    self, AUDIT_ARCH, Asm, SECCOMP_DATA_ARCH, SECCOMP_DATA_NR, To, X32_SYSCALL_BIT,
};

/// `fchmodat2` (Linux 6.6), the same number on every architecture; libc may not name it.
pub(super) const SYS_FCHMODAT2: i64 = 452;

/// The supervised system calls.
#[cfg(target_arch = "x86_64")]
const SUPERVISED: &[i64] = &[
    libc::SYS_chown,
    libc::SYS_fchown,
    libc::SYS_lchown,
    libc::SYS_fchownat,
    libc::SYS_chmod,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    SYS_FCHMODAT2,
    libc::SYS_utimensat,
    libc::SYS_utimes,
    libc::SYS_futimesat,
    libc::SYS_utime,
];
#[cfg(not(target_arch = "x86_64"))]
const SUPERVISED: &[i64] = &[
    libc::SYS_fchown,
    libc::SYS_fchownat,
    libc::SYS_fchmod,
    libc::SYS_fchmodat,
    SYS_FCHMODAT2,
    libc::SYS_utimensat,
];

/// The classic-BPF program: a foreign architecture is allowed here (the deny filter kills
/// it), each supervised number and `connect` (and, on x86_64, every x32 call) return
/// USER_NOTIF, anything else ALLOW.
pub fn program() -> Result<Vec<libc::sock_filter>, SetupError> {
    use libc::{BPF_JEQ, BPF_JGE};
    let arch = AUDIT_ARCH.ok_or_else(|| {
        SetupError::new(
            Stage::Seccomp,
            format!(
                "supervising chmod/utimes is not implemented on {}",
                std::env::consts::ARCH
            ),
        )
        .hint("use a namespace backend on this architecture")
    })?;
    let numbers = SUPERVISED
        .iter()
        .chain([&libc::SYS_connect])
        .map(|n| *n as u32);
    let mut asm = Asm::default();
    let (allow, notify) = (asm.label(), asm.label());
    asm.load(SECCOMP_DATA_ARCH);
    asm.jump_if(BPF_JEQ, arch, To::Next, To::Label(allow));
    asm.load(SECCOMP_DATA_NR);
    if let Some(bit) = X32_SYSCALL_BIT {
        asm.jump_if(BPF_JGE, bit, To::Label(notify), To::Next);
    }
    for nr in numbers {
        asm.jump_if(BPF_JEQ, nr, To::Label(notify), To::Next);
    }
    asm.place(allow);
    asm.ret(libc::SECCOMP_RET_ALLOW);
    asm.place(notify);
    asm.ret(libc::SECCOMP_RET_USER_NOTIF);
    Ok(asm.finish())
}

/// Installs the notifying filter on the calling thread (no_new_privs is set) and returns its
/// listener.
pub fn install() -> Result<OwnedFd, SetupError> {
    let prog = program()?;
    let fd = bpf::install(
        &prog,
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_uint,
    )
    .map_err(|e| {
        SetupError::os(Stage::Seccomp, "seccomp(SET_MODE_FILTER, NEW_LISTENER)", &e)
            .hint("supervising chmod/utimes needs Linux >= 5.9 (pidfd_getfd, user notifications)")
    })?;
    // SAFETY: `fd` is the fresh listener descriptor the kernel just returned; we own it alone.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_sends_each_supervised_call_to_the_listener() {
        let prog = program().unwrap();
        let ret_notify = prog.last().unwrap();
        assert_eq!(ret_notify.k, libc::SECCOMP_RET_USER_NOTIF);
        let notify_at = prog.len() - 1;
        for nr in SUPERVISED.iter().chain([&libc::SYS_connect]) {
            let (i, ins) = prog
                .iter()
                .enumerate()
                .find(|(_, ins)| {
                    ins.code == (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16
                        && ins.k == *nr as u32
                })
                .unwrap_or_else(|| panic!("{nr} not in the filter"));
            assert_eq!(i + 1 + usize::from(ins.jt), notify_at, "{nr}");
        }
        // A foreign architecture jumps to ALLOW (the deny filter kills it).
        assert_eq!(2 + usize::from(prog[1].jf), notify_at - 1);
    }
}
