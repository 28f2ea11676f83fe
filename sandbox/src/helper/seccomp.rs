//! The seccomp filter, installed last: denies (EPERM) the kernel attack surface a tool never
//! needs, namespace creation, tracing, terminal injection, and — when the network is denied —
//! non-Unix sockets (or every socket on the Landlock-only backend). `clone3` gets ENOSYS so
//! libc falls back to `clone`, whose flags the filter can inspect; so does every x32 call,
//! which would otherwise pass under numbers the list does not name.
//!
//! One program, assembled here ([`bpf::Asm`]): one compare per denied number, a short chain
//! per argument check, about 80 instructions. The kernel's cost to load a filter (its JIT
//! compilation, and the emulation of every system call number for its allow cache) grows
//! with the program's length — about 0.7 µs per instruction on our CI machine — and is paid
//! on every cold start; seccompiler's generic layout (five instructions per denied number)
//! took 315 instructions, 220 µs to load. The tests check this program against seccompiler's
//! compilation of the same rules.

use crate::error::{SetupError, Stage};
use crate::helper::bpf::{self, Asm, To};
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
const CHMODS: &[(i64, u32)] = &[
    (libc::SYS_chmod, 1),
    (libc::SYS_fchmod, 1),
    (libc::SYS_fchmodat, 2),
    (452, 2), // fchmodat2
];
#[cfg(not(target_arch = "x86_64"))]
const CHMODS: &[(i64, u32)] = &[(libc::SYS_fchmod, 1), (libc::SYS_fchmodat, 2), (452, 2)];

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
    /// A Unix datagram socket: argument 0 is `AF_UNIX`, argument 1's type `SOCK_DGRAM`.
    UnixDatagram,
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
            ArgCheck::UnixDatagram => {
                asm.load(bpf::arg_low(0));
                asm.jump_if(BPF_JEQ, libc::AF_UNIX as u32, To::Next, allow);
                asm.load(bpf::arg_low(1));
                asm.and(0xf); // the type, without SOCK_NONBLOCK and SOCK_CLOEXEC
                asm.jump_if(BPF_JEQ, libc::SOCK_DGRAM as u32, deny, allow);
            }
        }
    }
}

/// The deny-list for `plan`: the numbers denied outright, and those denied when a check on
/// their arguments holds.
fn deny_list(plan: &SeccompPlan) -> (Vec<i64>, Vec<(i64, ArgCheck)>) {
    let mut outright = DENIED.to_vec();
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
    if plan.deny_attr_changes {
        // Owner changes (Landlock has no right for them either) go to the supervisor, which
        // accepts only the current owner and group.
        for (nr, mode_arg) in CHMODS {
            let mask = libc::S_ISUID | libc::S_ISGID;
            checked.push((
                *nr,
                ArgCheck::AnyBit {
                    arg: *mode_arg,
                    mask,
                },
            ));
        }
    }
    if plan.deny_all_sockets {
        outright.push(libc::SYS_socket);
    } else if plan.deny_inet {
        let unix = ArgCheck::NoneOf {
            arg: 0,
            values: &[libc::AF_UNIX as u32],
        };
        checked.push((libc::SYS_socket, unix));
    } else if plan.deny_attr_changes {
        // Landlock-only rung with the network allowed: `connect` is supervised (pathname Unix
        // sockets only inside the writable roots), but a Unix datagram socket reaches any
        // path with sendto/sendmsg, whose address a filter cannot read: no such sockets.
        checked.push((libc::SYS_socket, ArgCheck::UnixDatagram));
    }
    if plan.deny_attr_changes && !plan.deny_all_sockets {
        checked.push((libc::SYS_socketpair, ArgCheck::UnixDatagram));
    }
    (outright, checked)
}

fn nr(n: i64) -> u32 {
    u32::try_from(n).expect("system call numbers are small")
}

/// Compiles the filter: `clone3` -> ENOSYS (ahead of the architecture check: it only ever
/// refuses, and a foreign architecture's call so numbered gets ENOSYS too), a foreign
/// architecture killed, x32 calls ENOSYS, then the EPERM deny-list; everything else allowed.
pub fn compile(plan: &SeccompPlan) -> Result<Vec<libc::sock_filter>, SetupError> {
    use libc::{BPF_JEQ, BPF_JGE};
    let arch = bpf::AUDIT_ARCH.ok_or_else(|| {
        SetupError::new(
            Stage::Seccomp,
            format!("unsupported architecture: {}", std::env::consts::ARCH),
        )
    })?;
    let errno = |e: libc::c_int| libc::SECCOMP_RET_ERRNO | e as u32;
    let (outright, checked) = deny_list(plan);
    let mut asm = Asm::default();
    let (allow_at, eperm_at) = (asm.label(), asm.label());
    let (enosys, kill) = (asm.label(), asm.label());
    asm.load(bpf::SECCOMP_DATA_NR);
    asm.jump_if(BPF_JEQ, nr(libc::SYS_clone3), To::Label(enosys), To::Next);
    asm.load(bpf::SECCOMP_DATA_ARCH);
    asm.jump_if(BPF_JEQ, arch, To::Next, To::Label(kill));
    asm.load(bpf::SECCOMP_DATA_NR);
    if let Some(bit) = bpf::X32_SYSCALL_BIT {
        asm.jump_if(BPF_JGE, bit, To::Label(enosys), To::Next);
    }
    for n in &outright {
        asm.jump_if(BPF_JEQ, nr(*n), To::Label(eperm_at), To::Next);
    }
    let chains: Vec<_> = checked.iter().map(|_| asm.label()).collect();
    for ((n, _), chain) in checked.iter().zip(&chains) {
        asm.jump_if(BPF_JEQ, nr(*n), To::Label(*chain), To::Next);
    }
    asm.ret(libc::SECCOMP_RET_ALLOW);
    for ((_, check), chain) in checked.iter().zip(chains) {
        asm.place(chain);
        check.emit(&mut asm, To::Label(eperm_at), To::Label(allow_at));
    }
    for (label, action) in [
        (allow_at, libc::SECCOMP_RET_ALLOW),
        (eperm_at, errno(libc::EPERM)),
        (enosys, errno(libc::ENOSYS)),
        (kill, libc::SECCOMP_RET_KILL_PROCESS),
    ] {
        asm.place(label);
        asm.ret(action);
    }
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

    /// The same rules written for seccompiler (the deny-list as it was compiled before we
    /// assembled it by hand): the reference each verdict is checked against.
    fn reference(plan: &SeccompPlan) -> Vec<libc::sock_filter> {
        let cond = |arg: u8, len: Len, op: Op, value: u64| Cond::new(arg, len, op, value).unwrap();
        let rule = |conds: Vec<Cond>| SeccompRule::new(conds).unwrap();
        let mut map: BTreeMap<i64, Vec<SeccompRule>> =
            DENIED.iter().map(|s| (*s, vec![])).collect();
        let ns = NAMESPACE_FLAGS.iter().map(|f| u64::from(*f));
        let ns = ns.map(|f| rule(vec![cond(0, Len::Qword, Op::MaskedEq(f), f)]));
        map.insert(libc::SYS_clone, ns.collect());
        let ioctl = [TIOCSTI, TIOCLINUX].map(|r| rule(vec![cond(1, Len::Dword, Op::Eq, r.into())]));
        map.insert(libc::SYS_ioctl, ioctl.into());
        map.insert(
            libc::SYS_personality,
            vec![rule(vec![
                cond(0, Len::Dword, Op::Ne, PER_LINUX.into()),
                cond(0, Len::Dword, Op::Ne, PERSONALITY_QUERY.into()),
            ])],
        );
        if plan.deny_attr_changes {
            for (s, mode_arg) in CHMODS {
                let arg = *mode_arg as u8;
                let set_bit = |b: u64| rule(vec![cond(arg, Len::Dword, Op::MaskedEq(b), b)]);
                let bits = [libc::S_ISUID, libc::S_ISGID].map(u64::from);
                map.insert(*s, bits.into_iter().map(set_bit).collect());
            }
        }
        if plan.deny_attr_changes && !plan.deny_all_sockets {
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
            let unix = cond(0, Len::Dword, Op::Ne, libc::AF_UNIX as u64);
            map.insert(libc::SYS_socket, vec![rule(vec![unix])]);
        }
        let arch = TargetArch::try_from(std::env::consts::ARCH).unwrap();
        let deny = SeccompFilter::new(
            map,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .unwrap();
        let deny: seccompiler::BpfProgram = deny.try_into().unwrap();
        let clone3 = [
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
        ];
        let deny = deny.iter().map(|i| libc::sock_filter {
            code: i.code,
            jt: i.jt,
            jf: i.jf,
            k: i.k,
        });
        clone3.into_iter().chain(deny).collect()
    }

    fn plans() -> [SeccompPlan; 6] {
        let plan = |deny_inet, deny_all_sockets, deny_attr_changes| SeccompPlan {
            deny_inet,
            deny_all_sockets,
            deny_attr_changes,
        };
        [
            plan(false, false, false), // namespaces, network allowed
            plan(true, false, false),  // namespaces, network denied
            plan(false, false, true),  // Landlock only, network allowed
            plan(true, true, true),    // Landlock only, network denied
            plan(true, false, true),   // not built by the planner: precedence only
            plan(false, true, false),
        ]
    }

    /// Argument values that sit on every edge the rules test: each namespace flag, the
    /// terminal requests with and without high bits, socket families and types, mode bits.
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
        v.extend([0o4755u64, 0o2755, 0o6755, 0o755, 0o644, 0o1777]);
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
                    for b in [0, values[3], *a] {
                        let args = [*a, *a, *a, 0, 0, 0];
                        let args = if b == *a { args } else { [*a, b, b, 0, 0, 0] };
                        assert_eq!(
                            bpf::run(&ours, nr, arch, args),
                            bpf::run(&theirs, nr, arch, args),
                            "{plan:?}: syscall {nr} with {args:x?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_attack_surface_is_denied() {
        let prog = compile(&SeccompPlan {
            deny_inet: true,
            ..SeccompPlan::default()
        })
        .unwrap();
        let arch = bpf::AUDIT_ARCH.unwrap();
        let eperm = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
        let verdict = |nr: i64, args: [u64; 6]| bpf::run(&prog, nr as u32, arch, args);
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
        ] {
            assert_eq!(verdict(nr, [0; 6]), eperm, "syscall {nr}");
        }
        let user_ns = libc::CLONE_NEWUSER as u64 | libc::SIGCHLD as u64;
        assert_eq!(verdict(libc::SYS_clone, [user_ns, 0, 0, 0, 0, 0]), eperm);
        let high_tiocsti = 0xdead_0000_0000_0000 | u64::from(TIOCSTI);
        assert_eq!(
            verdict(libc::SYS_ioctl, [0, high_tiocsti, 0, 0, 0, 0]),
            eperm
        );
        let inet = libc::AF_INET as u64;
        assert_eq!(verdict(libc::SYS_socket, [inet, 1, 0, 0, 0, 0]), eperm);
        let allow = libc::SECCOMP_RET_ALLOW;
        assert_eq!(
            verdict(libc::SYS_clone, [libc::SIGCHLD as u64, 0, 0, 0, 0, 0]),
            allow
        );
        assert_eq!(
            verdict(libc::SYS_socket, [libc::AF_UNIX as u64, 1, 0, 0, 0, 0]),
            allow
        );
        assert_eq!(verdict(libc::SYS_read, [0; 6]), allow);
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
            assert!(len <= 90, "{plan:?}: {len} instructions");
        }
    }
}
