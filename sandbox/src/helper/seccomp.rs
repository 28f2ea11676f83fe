//! The seccomp filter, installed last: denies (EPERM) the kernel attack surface a tool never
//! needs, namespace creation, tracing, terminal injection, setuid/setgid modes on every path
//! that sets a mode (`chmod` family, `open`/`openat`/`creat` with `O_CREAT` or `O_TMPFILE`,
//! `mknod`), when the network is denied non-Unix sockets, and on the Landlock-only rung Unix
//! datagram sockets (their `sendto` address is out of a filter's reach). Extended-attribute writes get EOPNOTSUPP (a filter cannot read the
//! name, and `security.capability` or a POSIX ACL must not be set; tools take EOPNOTSUPP for
//! "this filesystem has none"). `openat2`, whose mode sits in a struct a filter cannot read,
//! and `clone3`, whose flags do, get ENOSYS so libc falls back to `openat` and `clone`; so
//! does every x32 call, which would otherwise pass under numbers the list does not name. On
//! the Landlock-only rung, which has no namespaces, SysV IPC and POSIX message queues (the
//! host's) are denied, and so are rlimit, scheduling and I/O-priority changes of any process
//! but the caller (`pid` 0) and extended-attribute reads (Landlock does not cover them).
//!
//! One program, assembled here ([`bpf::Asm`]): runs of consecutive denied numbers become one
//! range check, other numbers one compare each, checks on arguments a short chain shared by
//! every call that uses the same one. The kernel's cost to load a filter (its JIT
//! compilation, and the emulation of every system call number for its allow cache) grows
//! with the program's length — about 0.7 µs per instruction on our CI machine — and is paid
//! on every cold start; seccompiler's generic layout (five instructions per denied number)
//! took 315 instructions, 220 µs to load. This one has 88–91 instructions on the namespace
//! backends and 114–119 on the Landlock-only rung (`the_program_is_short` fails above 125).
//! The tests check this program against seccompiler's compilation of the same rules.

use crate::error::{SetupError, Stage};
use crate::helper::bpf::{self, Asm, Label, To};
use crate::plan::SeccompPlan;

/// `fchmodat2` (Linux 6.6), `setxattrat` and `removexattrat` (6.13): the same numbers on
/// every architecture; libc may not name them.
const SYS_FCHMODAT2: i64 = 452;
const SYS_SETXATTRAT: i64 = 463;
const SYS_GETXATTRAT: i64 = 464;
const SYS_LISTXATTRAT: i64 = 465;
const SYS_REMOVEXATTRAT: i64 = 466;

/// Syscalls denied outright on every rung.
const DENIED: &[i64] = &[
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
const HOST_IPC: &[i64] = &[
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
const XATTR_WRITES: &[i64] = &[
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
const XATTR_READS: &[i64] = &[
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
const FALL_BACK: &[i64] = &[libc::SYS_openat2];

const SETUID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;

/// Calls that set a mode, with the index of their mode argument: no setuid/setgid bit. (The
/// other mode changes, and owner and time changes, go on to the supervisor on the
/// Landlock-only rung — `notify/`, a later filter; an EPERM here takes precedence.) `mkdir`
/// needs no check: the kernel keeps only the permission and sticky bits of its mode.
#[cfg(target_arch = "x86_64")]
const MODE_SETTERS: &[(i64, u32)] = &[
    (libc::SYS_chmod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (SYS_FCHMODAT2, 2),
    (libc::SYS_creat, 1),
    (libc::SYS_mknod, 1),
    (libc::SYS_mknodat, 2),
];
#[cfg(not(target_arch = "x86_64"))]
const MODE_SETTERS: &[(i64, u32)] = &[
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (SYS_FCHMODAT2, 2),
    (libc::SYS_mknodat, 2),
];

/// Opens with the index of their flags and mode arguments: no setuid/setgid mode with
/// `O_CREAT` or `O_TMPFILE` (without them the mode is unused).
#[cfg(target_arch = "x86_64")]
const OPENS: &[(i64, u32, u32)] = &[(libc::SYS_open, 1, 2), (libc::SYS_openat, 2, 3)];
#[cfg(not(target_arch = "x86_64"))]
const OPENS: &[(i64, u32, u32)] = &[(libc::SYS_openat, 2, 3)];

/// `O_CREAT` and the bit of `O_TMPFILE` that is not `O_DIRECTORY`: the flags that use a mode.
const CREATING: u32 = libc::O_CREAT as u32 | (libc::O_TMPFILE & !libc::O_DIRECTORY) as u32;

/// Calls that act on another process given by pid (argument 0; 0 is the caller): allowed on
/// the Landlock-only rung for the caller only.
const OWN_PROCESS_ONLY: &[i64] = &[
    libc::SYS_prlimit64,
    libc::SYS_sched_setaffinity,
    libc::SYS_sched_setscheduler,
    libc::SYS_sched_setparam,
    libc::SYS_sched_setattr,
];

/// `setpriority(PRIO_PROCESS, 0, ..)` and `ioprio_set(IOPRIO_WHO_PROCESS, 0, ..)`: the only
/// priority changes the Landlock-only rung allows (a process group or a uid reaches the host's
/// processes).
const PRIO_PROCESS_SELF: &[(u32, u32)] = &[(0, 0), (1, 0)]; // PRIO_PROCESS is 0
const IOPRIO_WHO_PROCESS_SELF: &[(u32, u32)] = &[(0, 1), (1, 0)];

const NAMESPACE_FLAGS: &[u32] = &[
    libc::CLONE_NEWUSER as u32,
    libc::CLONE_NEWNS as u32,
    libc::CLONE_NEWPID as u32,
    libc::CLONE_NEWNET as u32,
    libc::CLONE_NEWIPC as u32,
    libc::CLONE_NEWUTS as u32,
    libc::CLONE_NEWCGROUP as u32,
    libc::CLONE_NEWTIME as u32,
];

const TIOCSTI: u32 = 0x5412;
const TIOCLINUX: u32 = 0x541C;
const PER_LINUX: u32 = 0;
const PERSONALITY_QUERY: u32 = 0xffff_ffff;

/// A check on a system call's arguments (their low 32 bits); the call is denied when it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArgCheck {
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
}

impl ArgCheck {
    /// The check on the system call's data, ending in a jump to `deny` or `allow`.
    fn emit(self, asm: &mut Asm, deny: To, allow: To) {
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
        }
    }
}

/// What a denied call answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Answer {
    Eperm,
    Enosys,
    Enotsup,
}

impl Answer {
    const ALL: [Answer; 3] = [Answer::Eperm, Answer::Enosys, Answer::Enotsup];

    fn errno(self) -> libc::c_int {
        match self {
            Answer::Eperm => libc::EPERM,
            Answer::Enosys => libc::ENOSYS,
            Answer::Enotsup => libc::EOPNOTSUPP,
        }
    }
}

/// The rules for `plan`.
struct Rules {
    /// Numbers denied outright, with their answer.
    outright: Vec<(i64, Answer)>,
    /// Numbers denied (EPERM) when a check on their arguments holds.
    checked: Vec<(i64, ArgCheck)>,
}

/// The deny-list for `plan`.
fn rules(plan: &SeccompPlan) -> Rules {
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
    if plan.deny_attr_changes {
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
fn runs(outright: &[(i64, Answer)]) -> Vec<(u32, u32, Answer)> {
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

fn nr(n: i64) -> u32 {
    u32::try_from(n).expect("system call numbers are small")
}

/// Compiles the filter: `clone3` -> ENOSYS (ahead of the architecture check: it only ever
/// refuses, and a foreign architecture's call so numbered gets ENOSYS too), a foreign
/// architecture killed, x32 calls ENOSYS, then the deny-list; everything else allowed.
pub fn compile(plan: &SeccompPlan) -> Result<Vec<libc::sock_filter>, SetupError> {
    use libc::{BPF_JEQ, BPF_JGE, BPF_JGT};
    let arch = bpf::AUDIT_ARCH.ok_or_else(|| {
        SetupError::new(
            Stage::Seccomp,
            format!("unsupported architecture: {}", std::env::consts::ARCH),
        )
    })?;
    let errno = |e: libc::c_int| libc::SECCOMP_RET_ERRNO | e as u32;
    let Rules { outright, checked } = rules(plan);
    let mut asm = Asm::default();
    let allow_at = asm.label();
    let answers: Vec<(Answer, Label)> = Answer::ALL.iter().map(|a| (*a, asm.label())).collect();
    let answer = |a: Answer| {
        let (_, label) = answers.iter().find(|(x, _)| *x == a).expect("every answer");
        To::Label(*label)
    };
    let eperm_at = answer(Answer::Eperm);
    let (enosys, kill) = (answer(Answer::Enosys), asm.label());
    asm.load(bpf::SECCOMP_DATA_NR);
    asm.jump_if(BPF_JEQ, nr(libc::SYS_clone3), enosys, To::Next);
    asm.load(bpf::SECCOMP_DATA_ARCH);
    asm.jump_if(BPF_JEQ, arch, To::Next, To::Label(kill));
    asm.load(bpf::SECCOMP_DATA_NR);
    if let Some(bit) = bpf::X32_SYSCALL_BIT {
        asm.jump_if(BPF_JGE, bit, enosys, To::Next);
    }
    for (first, last, a) in runs(&outright) {
        if first == last {
            asm.jump_if(BPF_JEQ, first, answer(a), To::Next);
        } else {
            let past = asm.label();
            asm.jump_if(BPF_JGE, first, To::Next, To::Label(past));
            asm.jump_if(BPF_JGT, last, To::Next, answer(a));
            asm.place(past);
        }
    }
    // One chain per distinct check, shared by the numbers that use it.
    let mut chains: Vec<(ArgCheck, Label)> = Vec::new();
    for (n, check) in &checked {
        let chain = match chains.iter().find(|(c, _)| c == check) {
            Some((_, label)) => *label,
            None => {
                let label = asm.label();
                chains.push((*check, label));
                label
            }
        };
        asm.jump_if(BPF_JEQ, nr(*n), To::Label(chain), To::Next);
    }
    asm.ret(libc::SECCOMP_RET_ALLOW);
    for (check, chain) in chains {
        asm.place(chain);
        check.emit(&mut asm, eperm_at, To::Label(allow_at));
    }
    asm.place(allow_at);
    asm.ret(libc::SECCOMP_RET_ALLOW);
    for (a, label) in answers {
        asm.place(label);
        asm.ret(errno(a.errno()));
    }
    asm.place(kill);
    asm.ret(libc::SECCOMP_RET_KILL_PROCESS);
    Ok(asm.finish())
}

/// Installs the filter on the calling thread (no_new_privs is already set).
pub fn apply(plan: &SeccompPlan) -> Result<(), SetupError> {
    bpf::install(&compile(plan)?, 0).map(drop).map_err(|e| {
        SetupError::os(Stage::Seccomp, "seccomp(SET_MODE_FILTER)", &e)
            .hint("the kernel needs CONFIG_SECCOMP_FILTER")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use seccompiler::{
        SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition as Cond,
        SeccompFilter, SeccompRule, TargetArch,
    };

    fn cond(arg: u32, op: Op, value: u64) -> Cond {
        Cond::new(arg as u8, Len::Dword, op, value).unwrap()
    }

    fn rule(conds: Vec<Cond>) -> SeccompRule {
        SeccompRule::new(conds).unwrap()
    }

    /// Argument `arg` has bit `bit` set.
    fn bit(arg: u32, bit: u32) -> Cond {
        cond(arg, Op::MaskedEq(bit.into()), bit.into())
    }

    /// The bits of `mask`, one by one.
    fn bits(mask: u32) -> impl Iterator<Item = u32> {
        (0..32).map(|i| 1u32 << i).filter(move |b| mask & b != 0)
    }

    /// seccompiler's rules for one of our checks (a call matching any rule is denied).
    fn reference_rules(check: ArgCheck) -> Vec<SeccompRule> {
        match check {
            ArgCheck::AnyBit { arg, mask } => bits(mask).map(|b| rule(vec![bit(arg, b)])).collect(),
            ArgCheck::OneOf { arg, values } => values
                .iter()
                .map(|v| rule(vec![cond(arg, Op::Eq, (*v).into())]))
                .collect(),
            ArgCheck::NoneOf { arg, values } => vec![rule(
                values
                    .iter()
                    .map(|v| cond(arg, Op::Ne, (*v).into()))
                    .collect(),
            )],
            ArgCheck::Unless(pairs) => pairs
                .iter()
                .map(|(arg, v)| rule(vec![cond(*arg, Op::Ne, (*v).into())]))
                .collect(),
            ArgCheck::CreatingSetuid { flags, mode } => bits(CREATING)
                .flat_map(|f| {
                    bits(SETUID_BITS).map(move |m| rule(vec![bit(flags, f), bit(mode, m)]))
                })
                .collect(),
            ArgCheck::UnixDatagram { or_other_family } => {
                let mut rules = vec![rule(vec![
                    cond(0, Op::Eq, libc::AF_UNIX as u64),
                    cond(1, Op::MaskedEq(0xf), libc::SOCK_DGRAM as u64),
                ])];
                if or_other_family {
                    rules.push(rule(vec![cond(0, Op::Ne, libc::AF_UNIX as u64)]));
                }
                rules
            }
        }
    }

    /// The same rules written for seccompiler, one program per answer (seccompiler has one
    /// action per filter), plus `clone3`'s ENOSYS: the reference each verdict is checked
    /// against. They are disjoint, so the kernel's precedence among them never matters.
    fn reference(plan: &SeccompPlan) -> Vec<Vec<libc::sock_filter>> {
        let Rules { outright, checked } = rules(plan);
        let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
        let mut programs = Vec::new();
        for answer in Answer::ALL {
            let mut map: BTreeMap<i64, Vec<SeccompRule>> = outright
                .iter()
                .filter(|(_, a)| *a == answer)
                .map(|(n, _)| (*n, vec![]))
                .collect();
            if answer == Answer::Eperm {
                for (n, check) in &checked {
                    map.entry(*n).or_default().extend(reference_rules(*check));
                }
            }
            let filter = SeccompFilter::new(
                map,
                SeccompAction::Allow,
                SeccompAction::Errno(answer.errno() as u32),
                arch,
            )
            .unwrap();
            let prog: seccompiler::BpfProgram = filter.try_into().unwrap();
            programs.push(
                prog.iter()
                    .map(|i| libc::sock_filter {
                        code: i.code,
                        jt: i.jt,
                        jf: i.jf,
                        k: i.k,
                    })
                    .collect(),
            );
        }
        programs.push(vec![
            bpf::stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0),
            bpf::jump(
                libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
                libc::SYS_clone3 as u32,
                0,
                1,
            ),
            bpf::stmt(
                libc::BPF_RET | libc::BPF_K,
                libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
            ),
            bpf::stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW),
        ]);
        programs
    }

    /// The reference verdict: the one program that does not allow the call, if any.
    fn reference_verdict(programs: &[Vec<libc::sock_filter>], nr: u32, args: [u64; 6]) -> u32 {
        let arch = bpf::AUDIT_ARCH.unwrap();
        let mut denied = programs
            .iter()
            .map(|p| bpf::run(p, nr, arch, args))
            .filter(|v| *v != libc::SECCOMP_RET_ALLOW);
        let verdict = denied.next().unwrap_or(libc::SECCOMP_RET_ALLOW);
        assert_eq!(denied.next(), None, "overlapping rules for syscall {nr}");
        verdict
    }

    fn plans() -> [SeccompPlan; 4] {
        let plan = |deny_inet, deny_attr_changes| SeccompPlan {
            deny_inet,
            deny_attr_changes,
        };
        [
            plan(false, false), // namespaces, network allowed
            plan(true, false),  // namespaces, network denied
            plan(false, true),  // Landlock only, network allowed
            plan(true, true),   // Landlock only, network denied
        ]
    }

    /// Argument values that sit on every edge the rules test: each namespace flag, the
    /// terminal requests with and without high bits, socket families and types, mode bits,
    /// open flags, pids and priority targets.
    fn argument_values() -> Vec<u64> {
        let mut v = vec![0, 1, 2, 3, 0xf, 0x8000_0000, 0xffff_ffff, u64::MAX, 1 << 32];
        v.extend(NAMESPACE_FLAGS.iter().map(|f| u64::from(*f)));
        v.extend(NAMESPACE_FLAGS.iter().map(|f| u64::from(*f) | 1 << 40));
        v.push(u64::from(
            libc::CLONE_VM as u32 | libc::CLONE_FS as u32 | libc::SIGCHLD as u32,
        ));
        for r in [TIOCSTI, TIOCLINUX] {
            v.extend([
                u64::from(r),
                u64::from(r) | 0xffff_ffff_0000_0000,
                u64::from(r) + 1,
            ]);
        }
        v.extend(
            [
                libc::AF_UNIX,
                libc::AF_INET,
                libc::AF_INET6,
                libc::AF_NETLINK,
            ]
            .map(|f| f as u64),
        );
        let dgram = libc::SOCK_DGRAM as u64;
        v.extend([
            dgram,
            dgram | libc::SOCK_CLOEXEC as u64,
            dgram | libc::SOCK_NONBLOCK as u64,
        ]);
        v.push(libc::SOCK_STREAM as u64);
        v.extend([0o4755u64, 0o2755, 0o6755, 0o755, 0o644, 0o1777, 0o104755]);
        let creat = (libc::O_CREAT | libc::O_WRONLY) as u64;
        v.extend([
            creat,
            (libc::O_TMPFILE | libc::O_RDWR) as u64,
            (libc::O_RDONLY | libc::O_CLOEXEC) as u64,
            libc::O_DIRECTORY as u64,
        ]);
        v.extend([4242, 1 << 32 | 0o4755]);
        v
    }

    #[test]
    fn every_verdict_matches_the_reference_compilation() {
        let arch = bpf::AUDIT_ARCH.unwrap();
        let values = argument_values();
        for plan in plans() {
            let ours = compile(&plan).unwrap();
            let theirs = reference(&plan);
            for nr in 0..=470u32 {
                for a in &values {
                    for b in [0, values[3], 0o4755, *a] {
                        let args = [*a, *a, *a, *a, 0, 0];
                        let args = if b == *a { args } else { [*a, b, b, b, 0, 0] };
                        let flip = [b, *a, b, *a, 0, 0];
                        for args in [args, flip] {
                            assert_eq!(
                                bpf::run(&ours, nr, arch, args),
                                reference_verdict(&theirs, nr, args),
                                "{plan:?}: syscall {nr} with {args:x?}"
                            );
                        }
                    }
                }
            }
        }
    }

    fn verdicts(plan: SeccompPlan) -> impl Fn(i64, [u64; 6]) -> u32 {
        let prog = compile(&plan).unwrap();
        move |nr, args| bpf::run(&prog, nr as u32, bpf::AUDIT_ARCH.unwrap(), args)
    }

    const EPERM: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;

    #[test]
    fn the_attack_surface_is_denied() {
        let verdict = verdicts(SeccompPlan {
            deny_inet: true,
            ..SeccompPlan::default()
        });
        for nr in [
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
            libc::SYS_kcmp,
            libc::SYS_swapon,
            libc::SYS_reboot,
            libc::SYS_quotactl,
            libc::SYS_init_module,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_modify_ldt,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_iopl,
        ] {
            assert_eq!(verdict(nr, [0; 6]), EPERM, "syscall {nr}");
        }
        let user_ns = libc::CLONE_NEWUSER as u64 | libc::SIGCHLD as u64;
        assert_eq!(verdict(libc::SYS_clone, [user_ns, 0, 0, 0, 0, 0]), EPERM);
        let high_tiocsti = 0xdead_0000_0000_0000 | u64::from(TIOCSTI);
        assert_eq!(
            verdict(libc::SYS_ioctl, [0, high_tiocsti, 0, 0, 0, 0]),
            EPERM
        );
        let inet = libc::AF_INET as u64;
        assert_eq!(verdict(libc::SYS_socket, [inet, 1, 0, 0, 0, 0]), EPERM);
        assert_eq!(
            verdict(libc::SYS_clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
            ALLOW
        );
        assert_eq!(
            verdict(libc::SYS_socket, [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]),
            ALLOW
        );
        assert_eq!(verdict(libc::SYS_read, [0; 6]), ALLOW);
        // Neighbours of the ranges stay allowed.
        assert_eq!(verdict(libc::SYS_waitid, [0; 6]), ALLOW);
        assert_eq!(verdict(libc::SYS_getxattr, [0; 6]), ALLOW);
    }

    #[test]
    fn setuid_modes_and_capability_xattrs_are_refused_on_every_rung() {
        let at = libc::AT_FDCWD as u32 as u64;
        let creat = (libc::O_CREAT | libc::O_WRONLY) as u64;
        let enotsup = libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32;
        let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
        for plan in plans() {
            let verdict = verdicts(plan);
            assert_eq!(verdict(libc::SYS_fchmodat, [at, 1, 0o4755, 0, 0, 0]), EPERM);
            assert_eq!(verdict(libc::SYS_fchmod, [3, 0o2755, 0, 0, 0, 0]), EPERM);
            assert_eq!(verdict(SYS_FCHMODAT2, [at, 1, 0o6755, 0, 0, 0]), EPERM);
            assert_eq!(
                verdict(libc::SYS_openat, [at, 1, creat, 0o4755, 0, 0]),
                EPERM
            );
            assert_eq!(
                verdict(libc::SYS_mknodat, [at, 1, 0o104755, 0, 0, 0]),
                EPERM
            );
            // Ordinary modes, and a mode without O_CREAT (unused), pass.
            assert_eq!(verdict(libc::SYS_fchmodat, [at, 1, 0o755, 0, 0, 0]), ALLOW);
            assert_eq!(
                verdict(libc::SYS_openat, [at, 1, creat, 0o644, 0, 0]),
                ALLOW
            );
            assert_eq!(verdict(libc::SYS_openat, [at, 1, 0, 0o4755, 0, 0]), ALLOW);
            assert_eq!(verdict(libc::SYS_fsetxattr, [3, 1, 1, 20, 0, 0]), enotsup);
            assert_eq!(verdict(SYS_SETXATTRAT, [0; 6]), enotsup);
            assert_eq!(verdict(libc::SYS_openat2, [0; 6]), enosys);
        }
    }

    #[test]
    fn the_landlock_rung_keeps_to_its_own_processes_and_ipc() {
        let ns = verdicts(SeccompPlan::default());
        let ll = verdicts(SeccompPlan {
            deny_attr_changes: true,
            ..SeccompPlan::default()
        });
        let prio = libc::PRIO_PROCESS as u64;
        for (nr, other, own) in [
            (libc::SYS_prlimit64, [4242, 0, 0, 0, 0, 0], [0; 6]),
            (
                libc::SYS_sched_setaffinity,
                [4242, 8, 0, 0, 0, 0],
                [0, 8, 0, 0, 0, 0],
            ),
            (
                libc::SYS_setpriority,
                [prio, 4242, 5, 0, 0, 0],
                [prio, 0, 5, 0, 0, 0],
            ),
            (
                libc::SYS_setpriority,
                [libc::PRIO_USER as u64, 0, 5, 0, 0, 0],
                [prio, 0, 5, 0, 0, 0],
            ),
            (libc::SYS_ioprio_set, [3, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]),
        ] {
            assert_eq!(ll(nr, other), EPERM, "{nr} {other:?}");
            assert_eq!(ll(nr, own), ALLOW, "{nr} {own:?}");
            assert_eq!(ns(nr, other), ALLOW, "{nr} {other:?} in namespaces");
        }
        for nr in [
            libc::SYS_shmget,
            libc::SYS_msgget,
            libc::SYS_semget,
            libc::SYS_mq_open,
        ] {
            assert_eq!(ll(nr, [0; 6]), EPERM, "{nr}");
            assert_eq!(ns(nr, [0; 6]), ALLOW, "{nr} in namespaces");
        }
        let enotsup = libc::SECCOMP_RET_ERRNO | libc::EOPNOTSUPP as u32;
        for nr in [libc::SYS_lgetxattr, libc::SYS_flistxattr, SYS_GETXATTRAT] {
            assert_eq!(ll(nr, [0; 6]), enotsup, "{nr}");
            assert_eq!(ns(nr, [0; 6]), ALLOW, "{nr} in namespaces");
        }
    }

    #[test]
    fn a_foreign_architecture_is_killed_and_clone3_gets_enosys() {
        let prog = compile(&SeccompPlan::default()).unwrap();
        let i386 = 0x4000_0003;
        assert_eq!(
            bpf::run(&prog, 1, i386, [0; 6]),
            libc::SECCOMP_RET_KILL_PROCESS
        );
        let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
        let clone3 = libc::SYS_clone3 as u32;
        assert_eq!(
            bpf::run(&prog, clone3, bpf::AUDIT_ARCH.unwrap(), [0; 6]),
            enosys
        );
        assert_eq!(bpf::run(&prog, clone3, i386, [0; 6]), enosys);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_calls_get_enosys() {
        let prog = compile(&SeccompPlan::default()).unwrap();
        let enosys = libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32;
        for nr in [libc::SYS_ptrace, libc::SYS_unshare, libc::SYS_read, 521] {
            let x32 = 0x4000_0000 | nr as u32;
            assert_eq!(
                bpf::run(&prog, x32, bpf::AUDIT_ARCH.unwrap(), [0; 6]),
                enosys
            );
        }
    }

    #[test]
    fn the_program_is_short() {
        for plan in plans() {
            let len = compile(&plan).unwrap().len();
            eprintln!("{plan:?}: {len} instructions");
            assert!(len <= 125, "{plan:?}: {len} instructions");
        }
    }
}
