//! Classic-BPF building blocks for our two seccomp programs (the deny-list in `seccomp.rs`,
//! the notifying filter in `notify/filter.rs`): the `seccomp_data` layout, this architecture's
//! audit value, and a small assembler whose forward jumps name labels, resolved (and checked
//! to fit the 8-bit offsets) when the program is finished. Tests get an interpreter.

use libc::sock_filter;

#[cfg(target_arch = "x86_64")]
pub const AUDIT_ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
pub const AUDIT_ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(target_arch = "riscv64")]
pub const AUDIT_ARCH: Option<u32> = Some(0xC000_00F3);
#[cfg(not(any(
    target_arch = "x86_64",
    target_arch = "aarch64",
    target_arch = "riscv64"
)))]
pub const AUDIT_ARCH: Option<u32> = None;

/// x32 system calls carry this bit on x86_64 (the same architecture value as 64-bit calls):
/// a filter that names 64-bit numbers must catch them separately.
#[cfg(target_arch = "x86_64")]
pub const X32_SYSCALL_BIT: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
pub const X32_SYSCALL_BIT: Option<u32> = None;

/// Offsets in `struct seccomp_data`.
pub const SECCOMP_DATA_NR: u32 = 0;
pub const SECCOMP_DATA_ARCH: u32 = 4;
const SECCOMP_DATA_ARGS: u32 = 16;

/// Offset of the low 32 bits of argument `i` (what the kernel reads of an `int` argument).
pub const fn arg_low(i: u32) -> u32 {
    SECCOMP_DATA_ARGS + 8 * i + if cfg!(target_endian = "big") { 4 } else { 0 }
}

pub fn stmt(code: u32, k: u32) -> sock_filter {
    sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

pub fn jump(code: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// A place in a program being assembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(usize);

/// Where a conditional jump goes: on to the next instruction, or to a label.
#[derive(Debug, Clone, Copy)]
pub enum To {
    Next,
    Label(Label),
}

/// An assembler for straight-line programs with forward jumps to labels.
#[derive(Default)]
pub struct Asm {
    prog: Vec<sock_filter>,
    /// Jumps to resolve: (instruction index, true target, false target).
    fixups: Vec<(usize, To, To)>,
    /// Each label's instruction index, once placed.
    labels: Vec<Option<usize>>,
}

impl Asm {
    pub fn label(&mut self) -> Label {
        self.labels.push(None);
        Label(self.labels.len() - 1)
    }

    /// Places `label` at the next instruction.
    pub fn place(&mut self, label: Label) {
        debug_assert!(self.labels[label.0].is_none(), "label placed twice");
        self.labels[label.0] = Some(self.prog.len());
    }

    /// Loads the 32-bit word at `offset` of `seccomp_data`.
    pub fn load(&mut self, offset: u32) {
        self.prog
            .push(stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, offset));
    }

    pub fn ret(&mut self, action: u32) {
        self.prog.push(stmt(libc::BPF_RET | libc::BPF_K, action));
    }

    /// `A &= k`.
    pub fn and(&mut self, k: u32) {
        self.prog
            .push(stmt(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, k));
    }

    /// A conditional jump (`BPF_JEQ`, `BPF_JGE`, `BPF_JSET`, ...) comparing A with `k`.
    pub fn jump_if(&mut self, op: u32, k: u32, yes: To, no: To) {
        self.fixups.push((self.prog.len(), yes, no));
        self.prog
            .push(jump(libc::BPF_JMP | op | libc::BPF_K, k, 0, 0));
    }

    /// The program, every jump resolved. Panics on a label never placed, a backward jump or
    /// one longer than 255 instructions: the programs are fixed shapes, so that is a bug here
    /// (and the unit tests build every shape).
    pub fn finish(mut self) -> Vec<sock_filter> {
        for &(at, yes, no) in &self.fixups {
            let offset = |to: To| -> u8 {
                let target = match to {
                    To::Next => return 0,
                    To::Label(l) => self.labels[l.0].expect("jump to a label never placed"),
                };
                let distance = target.checked_sub(at + 1).expect("backward jump");
                u8::try_from(distance).expect("jump longer than 255 instructions")
            };
            self.prog[at].jt = offset(yes);
            self.prog[at].jf = offset(no);
        }
        self.prog
    }
}

pub use crate::sys::seccomp_install as install;

/// Runs `prog` on one system call as the kernel would, returning its action.
#[cfg(test)]
pub fn run(prog: &[sock_filter], nr: u32, arch: u32, args: [u64; 6]) -> u32 {
    let mut data = Vec::with_capacity(64);
    data.extend_from_slice(&nr.to_ne_bytes());
    data.extend_from_slice(&arch.to_ne_bytes());
    data.extend_from_slice(&0u64.to_ne_bytes()); // instruction pointer
    for a in args {
        data.extend_from_slice(&a.to_ne_bytes());
    }
    let word = |off: u32| {
        let off = off as usize;
        u32::from_ne_bytes(data[off..off + 4].try_into().unwrap())
    };
    let (mut a, mut pc) = (0u32, 0usize);
    loop {
        let ins = prog[pc];
        let code = u32::from(ins.code);
        pc += 1;
        match code {
            c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => a = word(ins.k),
            c if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => a &= ins.k,
            c if c == libc::BPF_RET | libc::BPF_K => return ins.k,
            c if c == libc::BPF_RET | libc::BPF_A => return a,
            c if c == libc::BPF_JMP | libc::BPF_JA => pc += ins.k as usize,
            c if c & 0x07 == libc::BPF_JMP => {
                let taken = match c & 0xf0 {
                    op if op == libc::BPF_JEQ => a == ins.k,
                    op if op == libc::BPF_JGT => a > ins.k,
                    op if op == libc::BPF_JGE => a >= ins.k,
                    op if op == libc::BPF_JSET => a & ins.k != 0,
                    op => panic!("unexpected jump {op:#x}"),
                };
                pc += usize::from(if taken { ins.jt } else { ins.jf });
            }
            c => panic!("unexpected instruction {c:#x}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jumps_resolve_to_their_labels() {
        let mut asm = Asm::default();
        let (yes, no) = (asm.label(), asm.label());
        asm.load(SECCOMP_DATA_NR);
        asm.jump_if(libc::BPF_JEQ, 7, To::Label(yes), To::Next);
        asm.jump_if(libc::BPF_JSET, 0x10, To::Label(yes), To::Label(no));
        asm.place(no);
        asm.ret(1);
        asm.place(yes);
        asm.ret(2);
        let prog = asm.finish();
        assert_eq!((prog[1].jt, prog[1].jf), (2, 0));
        assert_eq!((prog[2].jt, prog[2].jf), (1, 0));
        assert_eq!(run(&prog, 7, 0, [0; 6]), 2);
        assert_eq!(run(&prog, 0x10, 0, [0; 6]), 2);
        assert_eq!(run(&prog, 8, 0, [0; 6]), 1);
    }

    #[test]
    #[should_panic(expected = "longer than 255")]
    fn a_jump_too_far_is_refused() {
        let mut asm = Asm::default();
        let end = asm.label();
        asm.jump_if(libc::BPF_JEQ, 0, To::Label(end), To::Next);
        for _ in 0..300 {
            asm.load(0);
        }
        asm.place(end);
        asm.ret(0);
        asm.finish();
    }

    #[test]
    fn the_low_word_of_an_argument_is_what_a_load_reads() {
        let mut asm = Asm::default();
        asm.load(arg_low(1));
        let mut prog = asm.finish();
        prog.push(stmt(libc::BPF_RET | libc::BPF_A, 0));
        assert_eq!(run(&prog, 0, 0, [0, 0x1_0000_5412, 0, 0, 0, 0]), 0x5412);
    }
}
