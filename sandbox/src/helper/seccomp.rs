//! The seccomp filter, installed last: denies (EPERM) the kernel attack surface a tool never
//! needs, namespace creation, tracing, terminal injection, and — when the network is denied —
//! non-Unix sockets (or every socket on the Landlock-only backend). `clone3` gets ENOSYS so
//! libc falls back to `clone`, whose flags the filter can inspect. One program: each filter
//! loaded costs a JIT compilation at start and a run on every system call of the command.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op,
    SeccompCondition as Cond, SeccompFilter, SeccompRule, TargetArch, sock_filter,
};

use crate::error::{SetupError, Stage};
use crate::plan::SeccompPlan;

/// Syscalls denied outright.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_lookup_dcookie,
    libc::SYS_fanotify_init,
    libc::SYS_pidfd_getfd,
];

/// Mode changes with the index of their mode argument: on the Landlock-only rung they may not
/// set setuid/setgid bits. The other mode changes (and owner and time changes) go on to the
/// helper's supervisor (`notify/`, a later filter), which performs them only inside the
/// writable roots; an EPERM here takes precedence over its notification.
#[cfg(target_arch = "x86_64")]
const CHMODS: &[(i64, u8)] = &[
    (libc::SYS_chmod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (452, 2), // fchmodat2
];
#[cfg(not(target_arch = "x86_64"))]
const CHMODS: &[(i64, u8)] = &[(libc::SYS_fchmod, 1), (libc::SYS_fchmodat, 2), (452, 2)];

const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWTIME as u64,
];

const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;
const PER_LINUX: u64 = 0;
const PERSONALITY_QUERY: u64 = 0xffff_ffff;

fn arch() -> Result<TargetArch, SetupError> {
    TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| SetupError::new(Stage::Seccomp, format!("unsupported architecture: {e}")))
}

fn cond(arg: u8, len: Len, op: Op, value: u64) -> Cond {
    Cond::new(arg, len, op, value).expect("static seccomp condition")
}

fn rule(conds: Vec<Cond>) -> SeccompRule {
    SeccompRule::new(conds).expect("static seccomp rule")
}

fn rules(plan: &SeccompPlan) -> BTreeMap<i64, Vec<SeccompRule>> {
    let mut map: BTreeMap<i64, Vec<SeccompRule>> = DENIED.iter().map(|s| (*s, vec![])).collect();
    let ns = NAMESPACE_FLAGS
        .iter()
        .map(|f| rule(vec![cond(0, Len::Qword, Op::MaskedEq(*f), *f)]))
        .collect();
    map.insert(libc::SYS_clone, ns);
    let ioctl = [TIOCSTI, TIOCLINUX]
        .iter()
        .map(|r| rule(vec![cond(1, Len::Dword, Op::Eq, *r)]))
        .collect();
    map.insert(libc::SYS_ioctl, ioctl);
    map.insert(
        libc::SYS_personality,
        vec![rule(vec![
            cond(0, Len::Dword, Op::Ne, PER_LINUX),
            cond(0, Len::Dword, Op::Ne, PERSONALITY_QUERY),
        ])],
    );
    if plan.deny_attr_changes {
        // Owner changes (Landlock has no right for them either) go to the supervisor, which
        // accepts only the current owner and group.
        for (s, mode_arg) in CHMODS {
            let bits = [libc::S_ISUID as u64, libc::S_ISGID as u64];
            let set_bit = |b: u64| rule(vec![cond(*mode_arg, Len::Dword, Op::MaskedEq(b), b)]);
            map.insert(*s, bits.into_iter().map(set_bit).collect());
        }
    }
    if plan.deny_attr_changes && !plan.deny_all_sockets {
        // Landlock-only rung with the network allowed: `connect` is supervised (pathname Unix
        // sockets only inside the writable roots), but a Unix datagram socket reaches any
        // path with sendto/sendmsg, whose address a filter cannot read: no such sockets.
        let dgram = || {
            rule(vec![
                cond(0, Len::Dword, Op::Eq, libc::AF_UNIX as u64),
                cond(1, Len::Dword, Op::MaskedEq(0xf), libc::SOCK_DGRAM as u64),
            ])
        };
        map.insert(libc::SYS_socket, vec![dgram()]);
        map.insert(libc::SYS_socketpair, vec![dgram()]);
    }
    if plan.deny_all_sockets {
        map.insert(libc::SYS_socket, vec![]);
    } else if plan.deny_inet {
        map.insert(
            libc::SYS_socket,
            vec![rule(vec![cond(
                0,
                Len::Dword,
                Op::Ne,
                libc::AF_UNIX as u64,
            )])],
        );
    }
    map
}

/// `clone3` -> ENOSYS, ahead of the deny-list (seccompiler gives a filter one match action).
/// It only ever refuses, so it may come before the deny-list's architecture check: a foreign
/// architecture's call numbered like `clone3` gets ENOSYS, every other one meets that check.
fn clone3_prologue() -> [sock_filter; 3] {
    const LD_NR: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS, offset 0: seccomp_data.nr
    const JEQ: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET: u16 = 0x06; // BPF_RET | BPF_K
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let insn = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    [
        insn(LD_NR, 0, 0, 0),
        // Equal: the next instruction; otherwise skip it.
        insn(JEQ, 0, 1, libc::SYS_clone3 as u32),
        insn(RET, 0, 0, SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
    ]
}

/// Compiles the filter: `clone3` -> ENOSYS, then the EPERM deny-list.
pub fn compile(plan: &SeccompPlan) -> Result<BpfProgram, SetupError> {
    let deny = SeccompFilter::new(
        rules(plan),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(|e| SetupError::new(Stage::Seccomp, format!("build filter: {e}")))?;
    let deny: BpfProgram = deny.try_into().map_err(|e: seccompiler::BackendError| {
        SetupError::new(Stage::Seccomp, format!("compile filter: {e}"))
    })?;
    // Jumps are relative: the deny-list's are unchanged behind the prologue.
    Ok(clone3_prologue().into_iter().chain(deny).collect())
}

/// Installs the filter on the calling thread (no_new_privs is already set).
pub fn apply(plan: &SeccompPlan) -> Result<(), SetupError> {
    seccompiler::apply_filter(&compile(plan)?).map_err(|e| {
        SetupError::new(Stage::Seccomp, format!("seccomp(SET_MODE_FILTER): {e}"))
            .hint("the kernel needs CONFIG_SECCOMP_FILTER")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_compile_for_every_network_mode() {
        for plan in [
            SeccompPlan::default(),
            SeccompPlan {
                deny_inet: true,
                ..SeccompPlan::default()
            },
            SeccompPlan {
                deny_inet: true,
                deny_all_sockets: true,
                deny_attr_changes: true,
            },
        ] {
            let prog = compile(&plan).unwrap();
            assert!(prog.len() > clone3_prologue().len());
        }
    }

    #[test]
    fn deny_list_covers_the_security_classes() {
        let map = rules(&SeccompPlan {
            deny_inet: true,
            ..SeccompPlan::default()
        });
        for s in [
            libc::SYS_ptrace,
            libc::SYS_process_vm_readv,
            libc::SYS_bpf,
            libc::SYS_io_uring_setup,
            libc::SYS_userfaultfd,
            libc::SYS_keyctl,
            libc::SYS_unshare,
            libc::SYS_setns,
            libc::SYS_mount,
            libc::SYS_perf_event_open,
        ] {
            assert_eq!(
                map.get(&s).map(Vec::len),
                Some(0),
                "syscall {s} not denied outright"
            );
        }
        assert_eq!(map[&libc::SYS_clone].len(), NAMESPACE_FLAGS.len());
        assert_eq!(map[&libc::SYS_ioctl].len(), 2);
        assert!(map.contains_key(&libc::SYS_socket));
    }

    #[test]
    fn sockets_are_allowed_when_network_is_allowed() {
        let map = rules(&SeccompPlan::default());
        assert!(!map.contains_key(&libc::SYS_socket));
    }

    #[test]
    fn landlock_only_with_network_denies_unix_datagrams() {
        let map = rules(&SeccompPlan {
            deny_inet: false,
            deny_all_sockets: false,
            deny_attr_changes: true,
        });
        assert_eq!(map.get(&libc::SYS_socket).map(Vec::len), Some(1));
        assert_eq!(map.get(&libc::SYS_socketpair).map(Vec::len), Some(1));
        assert!(
            compile(&SeccompPlan {
                deny_attr_changes: true,
                ..SeccompPlan::default()
            })
            .is_ok()
        );
    }

    #[test]
    fn landlock_only_denies_every_socket() {
        let map = rules(&SeccompPlan {
            deny_inet: true,
            deny_all_sockets: true,
            deny_attr_changes: true,
        });
        assert_eq!(map.get(&libc::SYS_socket).map(Vec::len), Some(0));
        assert_eq!(map.get(&libc::SYS_fchmodat).map(Vec::len), Some(2));
    }
}
