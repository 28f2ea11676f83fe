//! The notifying filter (child side): the hand-built classic-BPF program that sends the
//! supervised syscalls to the listener, and its installation with
//! `SECCOMP_FILTER_FLAG_NEW_LISTENER`.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};

use crate::error::{SetupError, Stage};
use crate::helper::bpf::{
    self, AUDIT_ARCH, SECCOMP_DATA_ARCH, SECCOMP_DATA_NR, X32_SYSCALL_BIT, jump, stmt,
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
/// it), each supervised number (and, on x86_64, every x32 call) returns USER_NOTIF, anything
/// else ALLOW. With `connect` (network allowed), `connect` is supervised too.
pub fn program(connect: bool) -> Result<Vec<libc::sock_filter>, SetupError> {
    use libc::{BPF_ABS, BPF_JEQ, BPF_JGE, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};
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
    let numbers: Vec<u32> = SUPERVISED
        .iter()
        .chain(connect.then_some(&libc::SYS_connect))
        .map(|n| *n as u32)
        .collect();
    let x32 = usize::from(X32_SYSCALL_BIT.is_some());
    // Layout: [0] ld arch, [1] jeq arch, [2] ld nr, [3..3+x32) jge x32, then one jeq per
    // number, then ret ALLOW, ret USER_NOTIF.
    let first_cmp = 3;
    let allow = first_cmp + x32 + numbers.len();
    let notify = allow + 1;
    let offset = |from: usize, to: usize| -> u8 {
        u8::try_from(to - from - 1).expect("short seccomp program")
    };
    let mut prog = vec![
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_ARCH),
        jump(BPF_JMP | BPF_JEQ | BPF_K, arch, 0, offset(1, allow)),
        stmt(BPF_LD | BPF_W | BPF_ABS, SECCOMP_DATA_NR),
    ];
    if let Some(bit) = X32_SYSCALL_BIT {
        let at = prog.len();
        prog.push(jump(BPF_JMP | BPF_JGE | BPF_K, bit, offset(at, notify), 0));
    }
    for nr in numbers {
        let at = prog.len();
        prog.push(jump(BPF_JMP | BPF_JEQ | BPF_K, nr, offset(at, notify), 0));
    }
    prog.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_ALLOW));
    prog.push(stmt(BPF_RET | BPF_K, libc::SECCOMP_RET_USER_NOTIF));
    debug_assert_eq!(prog.len(), notify + 1);
    Ok(prog)
}

/// Installs the notifying filter on the calling thread (no_new_privs is set) and returns its
/// listener.
pub fn install(connect: bool) -> Result<OwnedFd, SetupError> {
    let prog = program(connect)?;
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
        let prog = program(true).unwrap();
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
        // Without network, connect is not supervised.
        let jeq = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
        let prog = program(false).unwrap();
        assert!(
            !prog
                .iter()
                .any(|i| i.code == jeq && i.k == libc::SYS_connect as u32)
        );
    }
}
