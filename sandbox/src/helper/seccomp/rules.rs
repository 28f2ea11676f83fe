//! The deny-list: which system calls the filter refuses, with which answer, and the checks
//! on their arguments.

use crate::helper::bpf::{self, Asm, To};
use crate::plan::SeccompPlan;

/// `fchmodat2` (Linux 6.6), `setxattrat` and `removexattrat` (6.13): the same numbers on
/// every architecture; libc may not name them.
pub(super) const SYS_FCHMODAT2: i64 = 452;
pub(super) const SYS_SETXATTRAT: i64 = 463;
pub(super) const SYS_GETXATTRAT: i64 = 464;
pub(super) const SYS_LISTXATTRAT: i64 = 465;
pub(super) const SYS_REMOVEXATTRAT: i64 = 466;

/// Syscalls denied outright on every rung.
pub(super) const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_process_madvise,
    libc::SYS_kcmp,
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
    libc::SYS_quotactl_fd,
    libc::SYS_syslog,
    libc::SYS_lookup_dcookie,
    libc::SYS_fanotify_init,
    libc::SYS_pidfd_getfd,
    libc::SYS_vhangup,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_get_mempolicy,
    libc::SYS_set_mempolicy,
    libc::SYS_set_mempolicy_home_node,
    libc::SYS_mbind,
    libc::SYS_migrate_pages,
    libc::SYS_move_pages,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_modify_ldt,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_uselib,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
    #[cfg(target_arch = "x86_64")]
    libc::SYS__sysctl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ustat,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_sysfs,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_nfsservctl,
    #[cfg(target_arch = "x86_64")]
    174, // create_module (removed; makes the 163..=180 run one range)
    #[cfg(target_arch = "x86_64")]
    177, // get_kernel_syms (removed)
    #[cfg(target_arch = "x86_64")]
    178, // query_module (removed)
];

/// Denied on the Landlock-only rung, which has no IPC namespace: the host's SysV IPC objects
/// and POSIX message queues.
pub(super) const HOST_IPC: &[i64] = &[
    libc::SYS_msgget,
    libc::SYS_msgsnd,
    libc::SYS_msgrcv,
    libc::SYS_msgctl,
    libc::SYS_semget,
    libc::SYS_semop,
    libc::SYS_semctl,
    libc::SYS_semtimedop,
    libc::SYS_shmget,
    libc::SYS_shmat,
    libc::SYS_shmctl,
    libc::SYS_shmdt,
    libc::SYS_mq_open,
    libc::SYS_mq_unlink,
    libc::SYS_mq_timedsend,
    libc::SYS_mq_timedreceive,
    libc::SYS_mq_notify,
    libc::SYS_mq_getsetattr,
];

/// Extended-attribute writes: EOPNOTSUPP on every rung.
pub(super) const XATTR_WRITES: &[i64] = &[
    libc::SYS_setxattr,
    libc::SYS_lsetxattr,
    libc::SYS_fsetxattr,
    SYS_SETXATTRAT,
    libc::SYS_removexattr,
    libc::SYS_lremovexattr,
    libc::SYS_fremovexattr,
    SYS_REMOVEXATTRAT,
];

/// Extended-attribute reads: EOPNOTSUPP on the Landlock-only rung, which does not cover them:
/// a denied path's attributes would be readable.
pub(super) const XATTR_READS: &[i64] = &[
    libc::SYS_getxattr,
    libc::SYS_lgetxattr,
    libc::SYS_fgetxattr,
    libc::SYS_listxattr,
    libc::SYS_llistxattr,
    libc::SYS_flistxattr,
    SYS_GETXATTRAT,
    SYS_LISTXATTRAT,
];

/// ENOSYS, so that libc falls back to a call the filter can inspect (`clone3` is checked
/// ahead of the architecture, see [`compile`]).
pub(super) const FALL_BACK: &[i64] = &[libc::SYS_openat2];

pub(super) const SETUID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;

/// Calls that set a mode, with the index of their mode argument: no setuid/setgid bit. (The
/// other mode changes, and owner and time changes, go on to the supervisor on the
/// Landlock-only rung — `notify/`, a later filter; an EPERM here takes precedence.) `mkdir`
/// needs no check: the kernel keeps only the permission and sticky bits of its mode.
#[cfg(target_arch = "x86_64")]
pub(super) const MODE_SETTERS: &[(i64, u32)] = &[
    (libc::SYS_chmod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (SYS_FCHMODAT2, 2),
    (libc::SYS_creat, 1),
    (libc::SYS_mknod, 1),
    (libc::SYS_mknodat, 2),
];
#[cfg(not(target_arch = "x86_64"))]
pub(super) const MODE_SETTERS: &[(i64, u32)] = &[
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (SYS_FCHMODAT2, 2),
    (libc::SYS_mknodat, 2),
];

/// Opens with the index of their flags and mode arguments: no setuid/setgid mode with
/// `O_CREAT` or `O_TMPFILE` (without them the mode is unused).
#[cfg(target_arch = "x86_64")]
pub(super) const OPENS: &[(i64, u32, u32)] = &[(libc::SYS_open, 1, 2), (libc::SYS_openat, 2, 3)];
#[cfg(not(target_arch = "x86_64"))]
pub(super) const OPENS: &[(i64, u32, u32)] = &[(libc::SYS_openat, 2, 3)];

/// `O_CREAT` and the bit of `O_TMPFILE` that is not `O_DIRECTORY`: the flags that use a mode.
pub(super) const CREATING: u32 =
    libc::O_CREAT as u32 | (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32;

/// Calls that act on another process given by pid (argument 0; 0 is the caller): allowed on
/// the Landlock-only rung for the caller only.
pub(super) const OWN_PROCESS_ONLY: &[i64] = &[
    libc::SYS_prlimit64,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setattr,
];

/// `setpriority(PRIO_PROCESS, 0, ..)` and `ioprio_set(IOPRIO_WHO_PROCESS, 0, ..)`: the only
/// priority changes the Landlock-only rung allows (a process group or a uid reaches the host's
/// processes).
pub(super) const PRIO_PROCESS_SELF: &[(u32, u32)] = &[(0, 0), (1, 0)]; // PRIO_PROCESS is 0
pub(super) const IOPRIO_WHO_PROCESS_SELF: &[(u32, u32)] = &[(0, 1), (1, 0)];

/// `MSG_FASTOPEN`: a send on an unconnected TCP socket that connects it (TCP Fast Open), past
/// `connect` and its supervision.
pub(super) const MSG_FASTOPEN: u32 = libc::MSG_FASTOPEN as u32;

/// The sends with a flags argument (its index): `sendto`, `sendmsg`, `sendmmsg`.
pub(super) const FASTOPEN_SENDS: &[(i64, u32)] = &[
    (libc::SYS_sendto, 3),
    (libc::SYS_sendmsg, 2),
    (libc::SYS_sendmmsg, 3),
];

pub(super) const NAMESPACE_FLAGS: &[u32] = &[
    libc::CLONE_NEWUSER as u32,
    libc::CLONE_NEWNS as u32,
    libc::CLONE_NEWPID as u32,
    libc::CLONE_NEWNET as u32,
    libc::CLONE_NEWIPC as u32,
    libc::CLONE_NEWUTS as u32,
    libc::CLONE_NEWCGROUP as u32,
    libc::CLONE_NEWTIME as u32,
];

pub(super) const TIOCSTI: u32 = 0x5412;
pub(super) const TIOCLINUX: u32 = 0x541C;
pub(super) const PER_LINUX: u32 = 0;
pub(super) const PERSONALITY_QUERY: u32 = 0xffff_ffff;

/// A check on a system call's arguments (their low 32 bits); the call is denied when it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ArgCheck {
    /// Argument `arg` has one of the bits of `mask` set.
    AnyBit { arg: u32, mask: u32 },
    /// Argument `arg` is one of `values`.
    OneOf { arg: u32, values: &'static [u32] },
    /// Argument `arg` is none of `values`.
    NoneOf { arg: u32, values: &'static [u32] },
    /// Not every `(arg, value)` pair holds.
    Unless(&'static [(u32, u32)]),
    /// A file created with a setuid/setgid mode: argument `flags` has `O_CREAT` or
    /// `O_TMPFILE`, argument `mode` a setuid or setgid bit.
    CreatingSetuid { flags: u32, mode: u32 },
    /// A Unix datagram socket: argument 0 is `AF_UNIX`, argument 1's type `SOCK_DGRAM`; with
    /// `or_other_family`, also any socket whose argument 0 is not `AF_UNIX`.
    UnixDatagram { or_other_family: bool },
    /// `network = proxy` on the Landlock-only rung: any socket but a Unix stream or seqpacket
    /// one and a TCP stream (`AF_INET`/`AF_INET6`, `SOCK_STREAM`, protocol 0 or
    /// `IPPROTO_TCP`): no UDP, raw, packet, netlink or other family.
    TcpOrUnixStream,
}

impl ArgCheck {
    /// The check on the system call's data, ending in a jump to `deny` or `allow`.
    pub(super) fn emit(self, asm: &mut Asm, deny: To, allow: To) {
        use libc::{BPF_JEQ, BPF_JSET};
        match self {
            ArgCheck::AnyBit { arg, mask } => {
                asm.load(bpf::arg_low(arg));
                asm.jump_if(BPF_JSET, mask, deny, allow);
            }
            ArgCheck::OneOf { arg, values } => {
                asm.load(bpf::arg_low(arg));
                for (i, v) in values.iter().enumerate() {
                    let last = i + 1 == values.len();
                    asm.jump_if(BPF_JEQ, *v, deny, if last { allow } else { To::Next });
                }
            }
            ArgCheck::NoneOf { arg, values } => {
                asm.load(bpf::arg_low(arg));
                for (i, v) in values.iter().enumerate() {
                    let last = i + 1 == values.len();
                    asm.jump_if(BPF_JEQ, *v, allow, if last { deny } else { To::Next });
                }
            }
            ArgCheck::Unless(pairs) => {
                for (i, (arg, v)) in pairs.iter().enumerate() {
                    let last = i + 1 == pairs.len();
                    asm.load(bpf::arg_low(*arg));
                    asm.jump_if(BPF_JEQ, *v, if last { allow } else { To::Next }, deny);
                }
            }
            ArgCheck::CreatingSetuid { flags, mode } => {
                asm.load(bpf::arg_low(flags));
                asm.jump_if(BPF_JSET, CREATING, To::Next, allow);
                asm.load(bpf::arg_low(mode));
                asm.jump_if(BPF_JSET, SETUID_BITS, deny, allow);
            }
            ArgCheck::UnixDatagram { or_other_family } => {
                let other = if or_other_family { deny } else { allow };
                asm.load(bpf::arg_low(0));
                asm.jump_if(BPF_JEQ, libc::AF_UNIX as u32, To::Next, other);
                asm.load(bpf::arg_low(1));
                asm.and(0xf); // the type, without SOCK_NONBLOCK and SOCK_CLOEXEC
                asm.jump_if(BPF_JEQ, libc::SOCK_DGRAM as u32, deny, allow);
            }
            ArgCheck::TcpOrUnixStream => {
                let (unix, inet) = (asm.label(), asm.label());
                asm.load(bpf::arg_low(0));
                asm.jump_if(BPF_JEQ, libc::AF_UNIX as u32, To::Label(unix), To::Next);
                asm.jump_if(BPF_JEQ, libc::AF_INET as u32, To::Label(inet), To::Next);
                asm.jump_if(BPF_JEQ, libc::AF_INET6 as u32, To::Next, deny);
                asm.place(inet);
                asm.load(bpf::arg_low(1));
                asm.and(0xf);
                asm.jump_if(BPF_JEQ, libc::SOCK_STREAM as u32, To::Next, deny);
                asm.load(bpf::arg_low(2));
                asm.jump_if(BPF_JEQ, 0, allow, To::Next);
                asm.jump_if(BPF_JEQ, libc::IPPROTO_TCP as u32, allow, deny);
                asm.place(unix);
                asm.load(bpf::arg_low(1));
                asm.and(0xf);
                asm.jump_if(BPF_JEQ, libc::SOCK_DGRAM as u32, deny, allow);
            }
        }
    }
}

/// What a denied call answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Answer {
    Eperm,
    Enosys,
    Enotsup,
}

impl Answer {
    pub(super) const ALL: [Answer; 3] = [Answer::Eperm, Answer::Enosys, Answer::Enotsup];

    pub(super) fn errno(self) -> libc::c_int {
        match self {
            Answer::Eperm => libc::EPERM,
            Answer::Enosys => libc::ENOSYS,
            Answer::Enotsup => libc::EOPNOTSUPP,
        }
    }
}

/// The rules for `plan`.
pub(super) struct Rules {
    /// Numbers denied outright, with their answer.
    pub(super) outright: Vec<(i64, Answer)>,
    /// Numbers denied (EPERM) when a check on their arguments holds.
    pub(super) checked: Vec<(i64, ArgCheck)>,
}

/// The deny-list for `plan`.
pub(super) fn rules(plan: &SeccompPlan) -> Rules {
    let mut outright: Vec<(i64, Answer)> = DENIED.iter().map(|n| (*n, Answer::Eperm)).collect();
    outright.extend(XATTR_WRITES.iter().map(|n| (*n, Answer::Enotsup)));
    outright.extend(FALL_BACK.iter().map(|n| (*n, Answer::Enosys)));
    let namespaces = NAMESPACE_FLAGS.iter().fold(0, |all, f| all | *f);
    let mut checked = vec![
        (
            libc::SYS_clone,
            ArgCheck::AnyBit {
                arg: 0,
                mask: namespaces,
            },
        ),
        (
            libc::SYS_ioctl,
            ArgCheck::OneOf {
                arg: 1,
                values: &[TIOCSTI, TIOCLINUX],
            },
        ),
        (
            libc::SYS_personality,
            ArgCheck::NoneOf {
                arg: 0,
                values: &[PER_LINUX, PERSONALITY_QUERY],
            },
        ),
    ];
    for (nr, arg) in MODE_SETTERS {
        let check = ArgCheck::AnyBit {
            arg: *arg,
            mask: SETUID_BITS,
        };
        checked.push((*nr, check));
    }
    for (nr, flags, mode) in OPENS {
        let check = ArgCheck::CreatingSetuid {
            flags: *flags,
            mode: *mode,
        };
        checked.push((*nr, check));
    }
    if plan.deny_attr_changes {
        // The Landlock-only rung: no IPC or pid namespace of its own.
        outright.extend(HOST_IPC.iter().map(|n| (*n, Answer::Eperm)));
        outright.extend(XATTR_READS.iter().map(|n| (*n, Answer::Enotsup)));
        let own = ArgCheck::Unless(&[(0, 0)]);
        checked.extend(OWN_PROCESS_ONLY.iter().map(|n| (*n, own)));
        checked.push((libc::SYS_setpriority, ArgCheck::Unless(PRIO_PROCESS_SELF)));
        checked.push((
            libc::SYS_ioprio_set,
            ArgCheck::Unless(IOPRIO_WHO_PROCESS_SELF),
        ));
    }
    if plan.deny_attr_changes && plan.proxy_only.is_some() {
        // Landlock-only rung in proxy mode: the supervisor connects TCP sockets only to the
        // proxy's ports; nothing else may carry a packet (no UDP, so no DNS; no raw or packet
        // socket; no netlink), and no send may connect implicitly (`MSG_FASTOPEN`, which no
        // LSM hook sees).
        checked.push((libc::SYS_socket, ArgCheck::TcpOrUnixStream));
        let pair = ArgCheck::UnixDatagram {
            or_other_family: false,
        };
        checked.push((libc::SYS_socketpair, pair));
        for (nr, arg) in FASTOPEN_SENDS {
            let check = ArgCheck::AnyBit {
                arg: *arg,
                mask: MSG_FASTOPEN,
            };
            checked.push((*nr, check));
        }
    } else if plan.deny_attr_changes {
        // Landlock-only rung: `connect` is supervised (pathname Unix sockets only inside the
        // writable roots), but a Unix datagram socket reaches any path with sendto/sendmsg,
        // whose address a filter cannot read: no such sockets (nor, with the network denied,
        // any but Unix ones).
        let socket = ArgCheck::UnixDatagram {
            or_other_family: plan.deny_inet,
        };
        checked.push((libc::SYS_socket, socket));
        let pair = ArgCheck::UnixDatagram {
            or_other_family: false,
        };
        checked.push((libc::SYS_socketpair, pair));
    } else if plan.deny_inet {
        let unix = ArgCheck::NoneOf {
            arg: 0,
            values: &[libc::AF_UNIX as u32],
        };
        checked.push((libc::SYS_socket, unix));
    }
    outright.sort_unstable();
    outright.dedup();
    Rules { outright, checked }
}

/// The outright numbers as runs `(first, last, answer)` of consecutive numbers with the same
/// answer (`outright` is sorted).
pub(super) fn runs(outright: &[(i64, Answer)]) -> Vec<(u32, u32, Answer)> {
    let mut runs: Vec<(u32, u32, Answer)> = Vec::new();
    for (n, answer) in outright {
        let n = nr(*n);
        match runs.last_mut() {
            Some((_, last, a)) if *a == *answer && *last + 1 == n => *last = n,
            _ => runs.push((n, n, *answer)),
        }
    }
    runs
}

pub(super) fn nr(n: i64) -> u32 {
    u32::try_from(n).expect("system call numbers are small")
}
