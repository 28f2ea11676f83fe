//! Kernel feature probes (the Landlock ABI, whether seccomp filters can be installed) and the
//! calling thread's own confinement as the kernel sees it (seccomp mode, capability sets).

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

/// The calling thread's seccomp mode (`PR_GET_SECCOMP`): 0 without a filter, 2 with one (a
/// thread in strict mode is killed by the call instead).
pub fn seccomp_mode() -> std::io::Result<i32> {
    // SAFETY: PR_GET_SECCOMP takes no pointer argument; the call only returns an integer.
    let r = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// The calling thread's effective, permitted and inheritable capability sets (`capget`, one
/// call, version 3: 64 bits each).
pub fn capability_sets() -> std::io::Result<[u64; 3]> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: version 3 makes the kernel write exactly two `Data` structs (the layout of
    // `struct __user_cap_data_struct`) into `data`, a live array of two; it reads `header`, a
    // live `struct __user_cap_header_struct`, and may write its version field.
    let r = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let join = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    Ok([
        join(data[0].effective, data[1].effective),
        join(data[0].permitted, data[1].permitted),
        join(data[0].inheritable, data[1].inheritable),
    ])
}

#[cfg(test)]
mod tests {
    /// `capget` reads what `/proc/self/status` shows.
    #[test]
    fn capability_sets_match_proc_status() {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let field = |name: &str| {
            let line = status.lines().find(|l| l.starts_with(name)).unwrap();
            u64::from_str_radix(line[name.len()..].trim(), 16).unwrap()
        };
        let [effective, permitted, inheritable] = super::capability_sets().unwrap();
        assert_eq!(effective, field("CapEff:"));
        assert_eq!(permitted, field("CapPrm:"));
        assert_eq!(inheritable, field("CapInh:"));
    }

    #[test]
    fn an_unfiltered_thread_has_seccomp_mode_0() {
        // The test harness installs no filter.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let expected = if status.contains("Seccomp:\t2") { 2 } else { 0 };
        assert_eq!(super::seccomp_mode().unwrap(), expected);
    }
}
