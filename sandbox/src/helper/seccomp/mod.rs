//! The seccomp filter, installed last: denies (EPERM) the kernel attack surface a tool never
//! needs, namespace creation, tracing, terminal injection, setuid/setgid modes on every path
//! that sets a mode (`chmod` family, `open`/`openat`/`creat` with `O_CREAT` or `O_TMPFILE`,
//! `mknod`), when the network is denied non-Unix sockets, and on the Landlock-only rung Unix
//! datagram sockets (their `sendto` address is out of a filter's reach) — there, in proxy
//! mode, also every socket but Unix streams and TCP streams (no UDP, raw, packet or netlink
//! socket) and `MSG_FASTOPEN` sends (an implicit connect past the supervised `connect`). Extended-attribute writes get EOPNOTSUPP (a filter cannot read the
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
//! backends and 114–119 on the Landlock-only rung, 134 there in proxy mode
//! (`the_program_is_short` fails above 125, 140 in proxy mode).
//! The tests check this program against seccompiler's compilation of the same rules.

mod rules;
#[cfg(test)]
mod tests;

use crate::error::{SetupError, Stage};
use crate::helper::bpf::{self, Asm, Label, To};
use crate::plan::SeccompPlan;
use rules::{Answer, ArgCheck, Rules, nr, rules, runs};

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
