//! The stack of a child cloned to share our memory, with a guard page below it.

use std::io;

/// A cloned child's stack: `size` bytes (rounded up to pages) above a guard page, so that
/// an overflow faults instead of writing into whatever mapping lies below. Unmapped on drop.
pub(super) struct Stack {
    base: *mut libc::c_void,
    len: usize,
}

impl Stack {
    pub(super) fn map(size: usize) -> io::Result<Stack> {
        // SAFETY: sysconf reads no memory of ours.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let len = size.div_ceil(page) * page + page;
        // SAFETY: an anonymous private mapping at an address of the kernel's choosing touches
        // no existing memory; failure is checked below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let stack = Stack { base, len };
        // SAFETY: `base` starts the fresh mapping of `len` bytes (one page more than used).
        if unsafe { libc::mprotect(base, page, libc::PROT_NONE) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// Where the child starts: stacks grow down; mmap returns page-aligned memory.
    pub(super) fn top(&self) -> *mut libc::c_void {
        // SAFETY: one past the end of the mapping, which is `len` bytes long.
        unsafe { (self.base as *mut u8).add(self.len) as *mut libc::c_void }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping is ours; whoever ran on it has exec'd or exited (see the users).
        unsafe { libc::munmap(self.base, self.len) };
    }
}
