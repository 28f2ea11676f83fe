//! The notifying filter (child side): the hand-built classic-BPF program that sends the
//! supervised syscalls to the listener, and its installation with
//! `SECCOMP_FILTER_FLAG_NEW_LISTENER`.

use std::os::fd::OwnedFd;

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

/// `ioctl(master, TIOCGPTPEER)`: the slave of a pty, opened by the supervisor (Landlock
/// grants the child `/dev/ptmx` but not the host's `/dev/pts`, which holds other sessions'
/// terminals).
pub(super) const TIOCGPTPEER: u32 = libc::TIOCGPTPEER as u32;

/// The classic-BPF program: a foreign architecture is allowed here (the deny filter kills
/// it), each supervised number, `connect`, `listen` and `ioctl(TIOCGPTPEER)` (and, on x86_64, every x32
/// call) return USER_NOTIF, anything else ALLOW.
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
        .chain([&libc::SYS_connect, &libc::SYS_listen])
        .map(|n| *n as u32);
    let mut asm = Asm::default();
    let (allow, notify, ioctl) = (asm.label(), asm.label(), asm.label());
    asm.load(SECCOMP_DATA_ARCH);
    asm.jump_if(BPF_JEQ, arch, To::Next, To::Label(allow));
    asm.load(SECCOMP_DATA_NR);
    if let Some(bit) = X32_SYSCALL_BIT {
        asm.jump_if(BPF_JGE, bit, To::Label(notify), To::Next);
    }
    for nr in numbers {
        asm.jump_if(BPF_JEQ, nr, To::Label(notify), To::Next);
    }
    asm.jump_if(
        BPF_JEQ,
        libc::SYS_ioctl as u32,
        To::Label(ioctl),
        To::Label(allow),
    );
    asm.place(ioctl);
    asm.load(bpf::arg_low(1));
    asm.jump_if(BPF_JEQ, TIOCGPTPEER, To::Label(notify), To::Label(allow));
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
    crate::sys::seccomp_install_listener(&prog).map_err(|e| {
        SetupError::os(Stage::Seccomp, "seccomp(SET_MODE_FILTER, NEW_LISTENER)", &e)
            .hint("supervising chmod/utimes needs Linux >= 5.9 (pidfd_getfd, user notifications)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_sends_each_supervised_call_to_the_listener() {
        let prog = program().unwrap();
        let arch = AUDIT_ARCH.unwrap();
        let run = |nr: i64, arg1: u64| bpf::run(&prog, nr as u32, arch, [3, arg1, 0, 0, 0, 0]);
        let notify = libc::SECCOMP_RET_USER_NOTIF;
        for nr in SUPERVISED
            .iter()
            .chain([&libc::SYS_connect, &libc::SYS_listen])
        {
            assert_eq!(run(*nr, 0), notify, "{nr}");
        }
        assert_eq!(run(libc::SYS_ioctl, TIOCGPTPEER.into()), notify);
        let high = 0xffff_0000_0000_0000 | u64::from(TIOCGPTPEER);
        assert_eq!(run(libc::SYS_ioctl, high), notify);
        let allow = libc::SECCOMP_RET_ALLOW;
        assert_eq!(run(libc::SYS_ioctl, 0x5401), allow); // TCGETS
        assert_eq!(run(libc::SYS_read, 0), allow);
        // A foreign architecture is allowed here (the deny filter kills it).
        let i386 = 0x4000_0003;
        assert_eq!(
            bpf::run(&prog, libc::SYS_fchmod as u32, i386, [0; 6]),
            allow
        );
    }
}
