//! A system call without libc, for children that share our memory but not our thread-local
//! storage.

/// A system call made without libc, so that it never touches `errno`: a child sharing our
/// memory but not our thread-local storage must not write our `errno`. Returns the kernel's
/// raw result (`-errno` on failure).
///
/// # Safety
/// As for the system call `nr` with these arguments.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(super) unsafe fn raw_syscall(nr: libc::c_long, args: [usize; 5]) -> isize {
    let ret: isize;
    // SAFETY: the caller vouches for the call; the asm follows the kernel's system call ABI
    // for this architecture and declares every register the kernel clobbers.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") args[0],
            in("rsi") args[1],
            in("rdx") args[2],
            in("r10") args[3],
            in("r8") args[4],
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") nr as usize,
            inlateout("x0") args[0] => ret,
            in("x1") args[1],
            in("x2") args[2],
            in("x3") args[3],
            in("x4") args[4],
            options(nostack),
        );
    }
    ret
}
