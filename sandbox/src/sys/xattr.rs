//! Extended attributes of a path itself (never following a symlink), for the transactional
//! workspace's landing: overlayfs marks an opaque upper directory with `*.overlay.opaque`.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| io::ErrorKind::InvalidInput.into())
}

fn c_name(name: &str) -> io::Result<CString> {
    CString::new(name).map_err(|_| io::ErrorKind::InvalidInput.into())
}

/// `lgetxattr(path, name)`: the attribute's value, `None` if `path` has no such attribute.
pub fn lgetxattr(path: &Path, name: &str) -> io::Result<Option<Vec<u8>>> {
    let (p, n) = (c_path(path)?, c_name(name)?);
    let mut buf = vec![0u8; 256];
    loop {
        // SAFETY: `p` and `n` are live NUL-terminated strings; `buf` is a live, writable
        // buffer of the length passed, and the kernel writes at most that many bytes.
        let rc =
            unsafe { libc::lgetxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        if rc >= 0 {
            buf.truncate(rc as usize);
            return Ok(Some(buf));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::ENODATA) => return Ok(None),
            Some(libc::ERANGE) if buf.len() < 1 << 16 => buf.resize(buf.len() * 4, 0),
            _ => return Err(err),
        }
    }
}

/// `lsetxattr(path, name, value, 0)`: sets (creates or replaces) the attribute (the tests
/// make opaque directories with it).
#[cfg_attr(not(test), allow(dead_code))]
pub fn lsetxattr(path: &Path, name: &str, value: &[u8]) -> io::Result<()> {
    let (p, n) = (c_path(path)?, c_name(name)?);
    // SAFETY: `p` and `n` are live NUL-terminated strings and `value` a live buffer of the
    // length passed, which the kernel only reads.
    let rc = unsafe {
        libc::lsetxattr(
            p.as_ptr(),
            n.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `lremovexattr(path, name)`: removes the attribute; one `path` does not have is no error.
pub fn lremovexattr(path: &Path, name: &str) -> io::Result<()> {
    let (p, n) = (c_path(path)?, c_name(name)?);
    // SAFETY: `p` and `n` are live NUL-terminated strings, which the kernel only reads.
    let rc = unsafe { libc::lremovexattr(p.as_ptr(), n.as_ptr()) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::ENODATA) => Ok(()),
        _ => Err(err),
    }
}
