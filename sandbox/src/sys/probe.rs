//! Kernel feature probes: the Landlock ABI and whether seccomp filters can be installed.

/// The running kernel's Landlock ABI version, `None` when Landlock is unavailable.
pub fn landlock_abi() -> Option<u32> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attribute pointer, size 0 and the VERSION flag the call only returns
    // an integer; no memory is read or written.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(v).ok().filter(|v| *v > 0)
}

/// Whether seccomp filters can be installed: the kernel answers `SECCOMP_GET_ACTION_AVAIL`
/// for the errno action the filter uses (EINVAL without `CONFIG_SECCOMP_FILTER`).
pub fn seccomp_filters_available() -> bool {
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: the call reads the live `u32` it is given and writes nothing.
    let r = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_ACTION_AVAIL,
            0u32,
            &action as *const u32,
        )
    };
    r == 0
}
