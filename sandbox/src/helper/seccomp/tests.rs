use super::rules::*;
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
            .flat_map(|f| bits(SETUID_BITS).map(move |m| rule(vec![bit(flags, f), bit(mode, m)])))
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
        ArgCheck::TcpOrUnixStream => {
            let mut rules = vec![
                rule(vec![
                    cond(0, Op::Eq, libc::AF_UNIX as u64),
                    cond(1, Op::MaskedEq(0xf), libc::SOCK_DGRAM as u64),
                ]),
                rule(
                    [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6]
                        .iter()
                        .map(|f| cond(0, Op::Ne, *f as u64))
                        .collect(),
                ),
            ];
            for family in [libc::AF_INET, libc::AF_INET6] {
                let family = cond(0, Op::Eq, family as u64);
                for kind in (0..16).filter(|t| *t != libc::SOCK_STREAM as u64) {
                    rules.push(rule(vec![family.clone(), cond(1, Op::MaskedEq(0xf), kind)]));
                }
                rules.push(rule(vec![
                    family,
                    cond(1, Op::MaskedEq(0xf), libc::SOCK_STREAM as u64),
                    cond(2, Op::Ne, 0),
                    cond(2, Op::Ne, libc::IPPROTO_TCP as u64),
                ]));
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

fn plans() -> [SeccompPlan; 5] {
    let plan = |deny_inet, deny_attr_changes| SeccompPlan {
        deny_inet,
        deny_attr_changes,
        proxy_only: None,
    };
    [
        plan(false, false), // namespaces, network allowed
        plan(true, false),  // namespaces, network denied
        plan(false, true),  // Landlock only, network allowed
        plan(true, true),   // Landlock only, network denied
        SeccompPlan {
            proxy_only: Some(PORTS),
            ..plan(false, true) // Landlock only, network through the proxy
        },
    ]
}

const PORTS: crate::egress::handover::ProxyPorts = crate::egress::handover::ProxyPorts {
    http: 40001,
    socks: 40002,
};

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
            libc::AF_PACKET,
        ]
        .map(|f| f as u64),
    );
    v.extend([libc::IPPROTO_TCP as u64, u64::from(MSG_FASTOPEN)]);
    let dgram = libc::SOCK_DGRAM as u64;
    v.extend([
        dgram,
        dgram | libc::SOCK_CLOEXEC as u64,
        dgram | libc::SOCK_NONBLOCK as u64,
    ]);
    v.extend([
        libc::SOCK_STREAM as u64,
        libc::SOCK_STREAM as u64 | libc::SOCK_CLOEXEC as u64,
        libc::SOCK_RAW as u64,
        libc::SOCK_SEQPACKET as u64,
    ]);
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
fn proxy_mode_on_the_landlock_rung_leaves_tcp_streams_only() {
    let proxy = verdicts(plans()[4]);
    let allowed = verdicts(plans()[2]);
    let (inet, inet6, unix) = (
        libc::AF_INET as u64,
        libc::AF_INET6 as u64,
        libc::AF_UNIX as u64,
    );
    let (stream, dgram, raw) = (
        libc::SOCK_STREAM as u64,
        libc::SOCK_DGRAM as u64,
        libc::SOCK_RAW as u64,
    );
    let cloexec = libc::SOCK_CLOEXEC as u64 | libc::SOCK_NONBLOCK as u64;
    let tcp = libc::IPPROTO_TCP as u64;
    let socket = |args: [u64; 3]| [args[0], args[1], args[2], 0, 0, 0];
    for ok in [
        [inet, stream, 0],
        [inet6, stream | cloexec, tcp],
        [unix, stream, 0],
        [unix, libc::SOCK_SEQPACKET as u64, 0],
    ] {
        assert_eq!(proxy(libc::SYS_socket, socket(ok)), ALLOW, "{ok:?}");
    }
    for refused in [
        [inet, dgram, 0],
        [inet6, dgram | cloexec, libc::IPPROTO_UDP as u64],
        [inet, raw, libc::IPPROTO_ICMP as u64],
        [inet, stream, libc::IPPROTO_SCTP as u64],
        [inet, libc::SOCK_SEQPACKET as u64, 0],
        [libc::AF_PACKET as u64, raw, 0],
        [libc::AF_NETLINK as u64, dgram, 0],
        [unix, dgram, 0],
    ] {
        assert_eq!(
            proxy(libc::SYS_socket, socket(refused)),
            EPERM,
            "{refused:?}"
        );
        // The control: with the network allowed, only Unix datagrams are refused.
        let control = if refused[0] == unix { EPERM } else { ALLOW };
        assert_eq!(
            allowed(libc::SYS_socket, socket(refused)),
            control,
            "{refused:?}"
        );
    }
    let fastopen = u64::from(MSG_FASTOPEN) | libc::MSG_NOSIGNAL as u64;
    for (nr, arg) in FASTOPEN_SENDS {
        let mut args = [3, 0, 0, 0, 0, 0];
        assert_eq!(proxy(*nr, args), ALLOW, "{nr}");
        args[*arg as usize] = fastopen;
        assert_eq!(proxy(*nr, args), EPERM, "{nr} with MSG_FASTOPEN");
        assert_eq!(allowed(*nr, args), ALLOW, "{nr} with the network allowed");
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
        // Proxy mode on the Landlock-only rung checks sockets and sends more closely.
        let most = if plan.proxy_only.is_some() { 140 } else { 125 };
        assert!(len <= most, "{plan:?}: {len} instructions");
    }
}
