"""Confining a graded kernel: Landlock, no capabilities, a process cap, and no process left behind.

The grader starts every kernel through this file, run as a script before ``site`` (standard library
only, so it starts in milliseconds)::

    python -I -S _launcher.py POLICY_JSON -- python _kernel_main.py -f CONNECTION_FILE

The launcher joins the kernel's pids cgroup when it has one, becomes a child subreaper, puts itself
in a Landlock domain that only scopes signals and abstract sockets (so nothing inside the kernel's
domain can signal or trace it), and forks. The child listens on the kernel's unix sockets
(:func:`listen_on`), applies the kernel's own Landlock domain (files, TCP, signals) and socket
filter, drops every capability and ``exec``\\ s the kernel. The launcher then reaps
whatever is reparented to it and, when the kernel ends or it gets ``SIGTERM``, kills every process
left under it (a ``setsid`` or double-forked child included) before it exits the way the kernel did.

``python -I -S _launcher.py --probe`` applies a full policy to a throwaway process, tries what it
must refuse, and prints what held as JSON: the grader runs it once per batch.

The Landlock layer is a few ``ctypes`` calls (``landlock_create_ruleset``, ``landlock_add_rule``,
``landlock_restrict_self``; syscalls 444-446 on every architecture), following the kernel's
``include/uapi/linux/landlock.h``. Example, the ABI of this machine's kernel (0 without Landlock)::

    >>> landlock_abi() >= 0
    True
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2

# Filesystem rights (ABI 1 unless noted).
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15  # ABI 2, 3, 5
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ_ONLY = EXECUTE | READ_FILE | READ_DIR
READ_WRITE = (
    WRITE_FILE
    | READ_FILE
    | READ_DIR
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_SYM
    | REFER
    | TRUNCATE
)
DEVICE_RW = READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV

_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 24, 38
_PR_SET_CHILD_SUBREAPER, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 36, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
NO_LANDLOCK_ENV = "COURSE_GRADE_NO_LANDLOCK"  # for testing: behave as if the kernel had no Landlock
NO_SOCKET_FILTER_ENV = "COURSE_GRADE_NO_SOCKET_FILTER"  # for testing: as if seccomp were missing
KERNEL_NAME, LAUNCHER_NAME = "course-kernel", "course-launcher"  # warm ones, named by hand
EXIT_NOT_CONFINED = 70
EXIT_ORPHANED = 71  # the grader died while the launcher started: no kernel was run
EXIT_NO_SOCKETS = 72  # the kernel's unix sockets could not be made: no kernel was run


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _check(result: int) -> int:
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def _syscall(number: int, *args: object) -> int:
    return _check(_libc().syscall(ctypes.c_long(number), *args))


def _prctl(option: int, arg: int = 0) -> int:
    return _check(
        _libc().prctl(
            option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)
        )
    )


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when it has none (or is not Linux, or the call is
    blocked)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return _syscall(
            _SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)
        )
    except OSError:
        return 0


def handled_fs(abi: int) -> int:
    """Every filesystem right the kernel knows at ``abi``: all are denied unless a rule allows them.

    >>> handled_fs(1) == (1 << 13) - 1 and handled_fs(7) == (1 << 16) - 1
    True
    """
    rights = (1 << 13) - 1
    rights |= REFER if abi >= 2 else 0
    rights |= TRUNCATE if abi >= 3 else 0
    rights |= IOCTL_DEV if abi >= 5 else 0
    return rights


def restrict(
    abi: int,
    read: list[str],
    write: list[str],
    devices: list[str],
    bind_ports: list[int] | None,
    scope: bool,
) -> dict[str, object]:
    """Put the calling thread (and every later child) in a new Landlock domain; return what is
    enforced.

    ``read`` and ``write`` are folders or files (missing ones are skipped), ``devices`` files opened
    for reading and writing. With ``bind_ports`` a list, TCP ``bind`` is allowed on those ports only
    and TCP ``connect`` nowhere (ABI 4+); with ``None`` the network is left alone. ``scope`` stops
    signals and abstract unix sockets from crossing the domain's edge (ABI 6+). Raises ``OSError``
    on failure.
    """
    fs = handled_fs(abi) if (read or write or devices) else 0
    net = (BIND_TCP | CONNECT_TCP) if (bind_ports is not None and abi >= 4) else 0
    scoped = (SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET) if (scope and abi >= 6) else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _syscall(
        _SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    try:
        for paths, rights in ((read, READ_ONLY), (write, READ_WRITE), (devices, DEVICE_RW)):
            for path in paths:
                _allow_path(ruleset, path, rights & fs)
        for port in (bind_ports or []) if net else []:
            rule = _NetPortAttr(BIND_TCP, port)
            _syscall(_SYS_ADD_RULE, ruleset, _RULE_NET_PORT, ctypes.byref(rule), ctypes.c_uint32(0))
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)
        _syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0))
    finally:
        os.close(ruleset)
    return {
        "abi": abi,
        "filesystem": bool(fs),
        "network": "tcp" if net else "open",
        "signals": bool(scoped),
    }


# --- sockets: seccomp ---------------------------------------------------------------------------
# Landlock governs TCP only. A seccomp filter closes the rest: a confined process may create TCP
# stream sockets (which Landlock then keeps from connecting anywhere) and netlink sockets (the C
# library reads the network interfaces through them), and nothing else: no UDP, no raw or packet
# sockets, no unix sockets, named or abstract. Stream socket pairs (``socketpair``, connected to
# nothing outside) stay allowed, and so does ``accept``. io_uring, which can make sockets by
# itself, is refused, and so is every system call made through another architecture's table or
# x86-64's x32 numbers.

_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_AND_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x54, 0x06
_AF_UNIX, _AF_INET, _AF_INET6, _AF_NETLINK = 1, 2, 10, 16
_SOCK_STREAM, _SOCK_DGRAM, _SOCK_TYPE_MASK = 1, 2, 0xF
_X32_SYSCALL_BIT = 0x40000000  # x86-64's x32 calls: the same architecture, numbers with this bit
# machine: (audit architecture, socket's number, socketpair's, io_uring_setup's)
_SYSCALLS = {"x86_64": (0xC000003E, 41, 53, 425), "aarch64": (0xC00000B7, 198, 199, 425)}


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint16),
        ("jt", ctypes.c_uint8),
        ("jf", ctypes.c_uint8),
        ("k", ctypes.c_uint32),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def socket_filter(machine: str) -> list[tuple[int, int, int, int]]:
    """The seccomp program (BPF: code, jump if true, jump if false, constant) for ``machine``.

    Reads ``struct seccomp_data``: the number at offset 0, the architecture at 4, the low words of
    the first two arguments at 16 and 24. Jumps count instructions from the next one. Datagram
    socket pairs are refused too: one end can ``sendto`` any named datagram socket.

    >>> program = socket_filter("x86_64")
    >>> len(program), program[-1] == (_BPF_RET_K, 0, 0, _SECCOMP_RET_ERRNO | errno.EPERM)
    (19, True)
    """
    arch, socket_nr, socketpair_nr, io_uring_nr = _SYSCALLS[machine]
    deny = _SECCOMP_RET_ERRNO | errno.EPERM
    return [
        (_BPF_LD_W_ABS, 0, 0, 4),  # 0: the architecture
        (_BPF_JEQ_K, 0, 16, arch),  # 1: another table: deny
        (_BPF_LD_W_ABS, 0, 0, 0),  # 2: the system call
        (_BPF_JGE_K, 14, 0, _X32_SYSCALL_BIT),  # 3: an x32 call: deny
        (_BPF_JEQ_K, 13, 0, io_uring_nr),  # 4: io_uring_setup: deny
        (_BPF_JEQ_K, 8, 0, socketpair_nr),  # 5: socketpair: to 14
        (_BPF_JEQ_K, 0, 10, socket_nr),  # 6: not socket: allow
        (_BPF_LD_W_ABS, 0, 0, 16),  # 7: the address family
        (_BPF_JEQ_K, 2, 0, _AF_INET),  # 8: to 11
        (_BPF_JEQ_K, 1, 0, _AF_INET6),  # 9: to 11
        (_BPF_JEQ_K, 6, 7, _AF_NETLINK),  # 10: netlink: allow; any other family: deny
        (_BPF_LD_W_ABS, 0, 0, 24),  # 11: the socket's type
        (_BPF_AND_K, 0, 0, _SOCK_TYPE_MASK),  # 12: without SOCK_NONBLOCK and SOCK_CLOEXEC
        (_BPF_JEQ_K, 3, 4, _SOCK_STREAM),  # 13: TCP: allow; UDP, raw: deny
        (_BPF_LD_W_ABS, 0, 0, 24),  # 14: the pair's type
        (_BPF_AND_K, 0, 0, _SOCK_TYPE_MASK),  # 15
        (_BPF_JEQ_K, 1, 0, _SOCK_DGRAM),  # 16: datagrams: deny; streams, packets: allow
        (_BPF_RET_K, 0, 0, _SECCOMP_RET_ALLOW),  # 17
        (_BPF_RET_K, 0, 0, deny),  # 18
    ]


def close_sockets() -> None:
    """Install :func:`socket_filter` on the calling thread and its later children, for good.

    Needs ``no_new_privs`` (which :func:`restrict` sets). Raises ``OSError`` where the machine is
    not one the filter knows, or seccomp is missing.
    """
    machine = os.uname().machine
    if machine not in _SYSCALLS:
        raise OSError(errno.ENOSYS, f"no socket filter for {machine}")
    program = socket_filter(machine)
    instructions = (_SockFilter * len(program))(*(_SockFilter(*i) for i in program))
    fprog = _SockFprog(len(program), instructions)
    _check(
        _libc().prctl(
            _PR_SET_SECCOMP,
            ctypes.c_ulong(_SECCOMP_MODE_FILTER),
            ctypes.byref(fprog),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )
    )


def _allow_path(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        rule = _PathBeneathAttr(rights, fd)
        _syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0))
    finally:
        os.close(fd)


def drop_capabilities() -> None:
    """Give up every capability for good: root's bypasses (limits, raw sockets, ...) are gone after
    ``exec`` too."""
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    with open("/proc/sys/kernel/cap_last_cap") as file:
        last = int(file.read())
    for cap in range(last + 1):
        try:
            _prctl(_PR_CAPBSET_DROP, cap)
        except OSError as error:
            if (
                error.errno != errno.EPERM
            ):  # EPERM: not ours to drop (no CAP_SETPCAP); none to lose then
                raise
    try:
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
    except OSError:
        pass  # kernels before 4.3 have no ambient set
    header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(header), ctypes.byref(data)))


# --- the launcher --------------------------------------------------------------------------------


def _children(parent: int) -> list[int]:
    """Processes whose parent is ``parent`` (a scan of ``/proc``; threads are not listed there)."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as file:
                    stat = file.read()
            except OSError:
                continue
            fields = stat[stat.rindex(b")") + 2 :].split()
            if int(fields[1]) == parent:
                found.append(int(name))
    return found


def _end_descendants() -> None:
    """Kill every process under this subreaper and reap them; orphans come back to it, so none
    escape."""
    me = os.getpid()
    while True:
        for pid in _children(me):
            try:
                os.kill(pid, signal.SIGKILL)  # our own children: their pids stay ours until reaped
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            return
        time.sleep(0.005)


def _child(policy: dict, command: list[str], run: Callable[[], object] | None = None) -> None:
    """In the forked child: limits, the kernel's Landlock domain, no capabilities, then the
    kernel: ``exec`` of ``command``, or ``run()`` in this process (a fork server's warm kernel)."""
    import resource

    for name in ("SIGINT", "SIGTERM"):
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # the launcher gone, the kernel goes too
    if run is not None:
        name_process(KERNEL_NAME)  # no exec gives it a command line of its own
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fsize = int(policy.get("file_size_bytes", 256 * 2**20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if policy.get("listen"):
        try:
            listen_on(policy["listen"], policy["listen_variable"])
        except OSError as error:
            os.write(
                2, f"course-grade: the kernel's sockets could not be made ({error})\n".encode()
            )
            os._exit(EXIT_NO_SOCKETS)
    if policy.get("landlock"):
        abi = landlock_abi()
        try:
            if abi < 1:
                raise OSError(errno.ENOSYS, "Landlock is not available")
            restrict(
                abi,
                policy["read"],
                policy["write"],
                policy["devices"],
                policy["bind_ports"],
                scope=True,
            )
            if policy.get("sockets") == "closed":
                close_sockets()
        except OSError as error:
            os.write(
                2,
                f"course-grade: the kernel could not be confined ({error}); "
                "it was not started\n".encode(),
            )
            os._exit(EXIT_NOT_CONFINED)
    try:
        drop_capabilities()
    except OSError:
        pass  # an unprivileged grader has none to drop
    if run is None:
        os.execvp(command[0], command)
    try:
        run()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else int(done.code is not None)
    import atexit

    atexit._run_exitfuncs()  # what a normal interpreter exit runs
    os._exit(code)


def name_process(name: str) -> None:
    """Set this process's name as ``ps`` and ``top`` show it (Linux keeps 15 bytes)."""
    try:
        with open("/proc/self/comm", "w") as file:
            file.write(name)
    except OSError:
        pass  # only a label


def launch(policy: dict, command: list[str], run: Callable[[], object] | None = None) -> int:
    """Run ``command`` confined by ``policy``; return an exit status mirroring it, after every
    descendant is gone. With ``run``, the confined child calls it instead of ``exec``."""
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if policy.get("cgroup"):
        try:
            with open(os.path.join(policy["cgroup"], "cgroup.procs"), "w") as file:
                file.write(str(os.getpid()))
        except OSError:
            pass  # the grader's process watchdog still counts
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    if policy.get("landlock") and landlock_abi() >= 6:
        try:
            restrict(
                landlock_abi(), [], [], [], None, scope=True
            )  # scoping only: the kernel's nested domain cannot reach us
        except OSError as error:
            os.write(2, f"course-grade: the launcher could not be confined ({error})\n".encode())
            return EXIT_NOT_CONFINED
    kernel = 0

    def stop(signum: int, frame: object) -> None:
        if kernel > 0:
            os.kill(
                kernel, signal.SIGKILL
            )  # not yet reaped (see below), so the pid is still our child's

    signal.signal(
        signal.SIGINT, lambda signum, frame: None
    )  # interrupts are for the kernel (same group)
    signal.signal(signal.SIGTERM, stop)
    # A grader (or a Dask worker) killed outright cannot stop its kernels: the launcher then hears
    # of its parent's death as SIGTERM and ends the kernel itself (a parent gone before the prctl
    # shows as a changed parent pid).
    parent = os.getppid()
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        return EXIT_ORPHANED
    kernel = os.fork()
    if kernel == 0:
        try:
            _child(policy, command, run)
        finally:
            os._exit(127)
    status = 0
    while True:
        try:
            found = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOWAIT)  # who ended, not yet reaped
        except ChildProcessError:
            break
        assert found is not None, "waitid returns None only under WNOHANG"
        ended = found.si_pid
        signal.pthread_sigmask(
            signal.SIG_BLOCK, {signal.SIGTERM}
        )  # no stop() between reaping and forgetting
        status_of = os.waitpid(ended, 0)[1]
        if ended == kernel:
            status, kernel = status_of, 0
            break
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    _end_descendants()
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


# --- a kernel's own sockets ----------------------------------------------------------------------
# The grader talks to a kernel over unix sockets in a folder of the kernel's own, so no other
# process can take an address first (as it can take a free TCP port between the grader's choosing
# it and the kernel's binding it). A kernel whose own sockets are closed (seccomp, above) cannot
# make them, so the launcher makes them before confining it, and ``_kernel_main.py`` hands them
# to ipykernel.


def listen_on(paths: list[str], variable: str) -> None:
    """Listen on a unix socket at each of ``paths``, kept open across ``exec``, and name them in
    the environment variable ``variable`` as JSON, ``{"ipc://PATH": descriptor}``."""
    import socket

    made = {}
    for path in paths:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.bind(path)
            sock.listen(100)  # ZeroMQ's own backlog
            made[f"ipc://{path}"] = fd = sock.detach()
        os.set_inheritable(fd, True)
    os.environ[variable] = json.dumps(made)


# --- the probe -----------------------------------------------------------------------------------


def probe() -> dict[str, object]:
    """Confine a forked child like a kernel and have it try what must then fail; report what
    held."""
    abi = landlock_abi()
    if os.environ.get(NO_LANDLOCK_ENV):
        return {
            "sandbox": "none",
            "reason": f"Landlock was turned off with {NO_LANDLOCK_ENV} (a switch for testing)",
        }
    if abi < 1:
        return {
            "sandbox": "none",
            "reason": "this kernel has no Landlock (Linux 5.13+ with Landlock enabled is needed)",
        }
    import socket
    import tempfile

    base = tempfile.mkdtemp(prefix="course-grade-probe-")
    inside, outside = os.path.join(base, "inside"), os.path.join(base, "outside")
    os.mkdir(inside)
    os.mkdir(outside)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            report = _probe_child(abi, inside, outside, listener.getsockname()[1])
            os.write(writer, json.dumps(report).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        text = pipe.read()
    os.waitpid(child, 0)
    listener.close()
    for folder in (inside, outside):
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
    os.rmdir(base)
    return json.loads(text) if text else {"sandbox": "none", "reason": "the Landlock probe died"}


def _probe_child(abi: int, inside: str, outside: str, port: int) -> dict[str, object]:
    import socket

    try:
        enforced = restrict(abi, [], [inside], [], [], scope=True)
    except OSError as error:
        return {
            "sandbox": "none",
            "reason": f"Landlock is there (ABI {abi}) but refused to confine a process ({error})",
        }
    if enforced["network"] == "tcp" and not os.environ.get(NO_SOCKET_FILTER_ENV):
        try:
            close_sockets()
        except OSError:
            pass
        else:
            kinds = [
                (socket.AF_INET, socket.SOCK_DGRAM),
                (socket.AF_INET, socket.SOCK_RAW),
                (socket.AF_UNIX, socket.SOCK_STREAM),
                (socket.AF_UNIX, socket.SOCK_DGRAM),
            ]
            attempts: list[Callable[[], object]] = [
                functools.partial(socket.socket, *kind) for kind in kinds
            ]
            attempts.append(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
            if os.uname().machine == "x86_64":  # an x32 call, refused even where x32 is off
                attempts.append(lambda: _x32_socket(socket.AF_UNIX, socket.SOCK_STREAM))
            closed = all(_refused(attempt) for attempt in attempts)
            enforced["network"] = "closed" if closed else "tcp"
    writes = not _refused(lambda: open(os.path.join(inside, "f"), "w"))
    enforced["filesystem"] = writes and _refused(lambda: open(os.path.join(outside, "f"), "w"))
    if enforced["network"] != "open" and not _refused(
        lambda: socket.create_connection(("127.0.0.1", port), timeout=2)
    ):
        enforced["network"] = "open"
    enforced["signals"] = bool(enforced["signals"]) and _refused(lambda: os.kill(os.getppid(), 0))
    return {"sandbox": "landlock", **enforced}


def _x32_socket(family: int, kind: int) -> int:
    """``socket`` through x86-64's x32 numbers: a descriptor, or ``OSError``."""
    fd = _syscall(_X32_SYSCALL_BIT | _SYSCALLS["x86_64"][1], family, kind, 0)
    os.close(fd)
    return fd


def _refused(attempt: Callable[[], object]) -> bool:
    try:
        result = attempt()
    except PermissionError:
        return True
    except OSError:
        return False
    if hasattr(result, "close"):
        result.close()
    return False


# --- the grader's side ---------------------------------------------------------------------------

LAUNCHER = os.path.abspath(__file__)
DEVICES = ["/dev/null", "/dev/zero", "/dev/full"]
# What a kernel may read beyond Python and course_lib: system libraries and tools, a few /etc files
# (the loader's cache, time zone, users, hosts), /proc and the CPU and cgroup facts JAX reads in
# /sys.
SYSTEM_READ = [
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/bin",
    "/sbin",
    "/proc",
    "/sys/devices/system",
    "/sys/fs/cgroup",
    "/dev/urandom",
    "/dev/random",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/fonts",
    "/etc/mime.types",
]


def readable_paths(course_lib: str) -> list[str]:
    """Folders and files every kernel may read: the interpreter's prefixes, the ``course_lib``
    package folder given (not the checkout around it, which holds ``solutions/`` and the grader),
    ``PYTHONPATH`` entries and :data:`SYSTEM_READ`.

    >>> paths = readable_paths("/srv/course/course_lib")
    >>> "/srv/course/course_lib" in paths and "/srv/course" not in paths
    True
    """
    prefixes = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    paths = [os.path.realpath(p) for p in sorted(prefixes)] + [course_lib]
    paths += [os.path.realpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return list(dict.fromkeys(paths + SYSTEM_READ))


_PASSED_ENV = {
    "PATH",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "PYTHONDONTWRITEBYTECODE",
    "SYSTEMROOT",
}


def kernel_env(workdir: Path, course_lib: str) -> dict[str, str]:
    """The kernel's environment: a few of the grader's variables (no secrets, no ``CI``), its own
    home, and ``course_lib/_kernel_site`` first on ``PYTHONPATH``, whose ``sitecustomize`` makes
    the kernel import the ``course_lib`` folder given (the grader's) and no other copy.

    Home, temporary, IPython and Matplotlib folders live in the submission's scratch folder, so
    nothing one notebook writes there (an IPython startup file, say) reaches the next notebook's
    kernel, and a confined kernel can write there.
    """
    home, temporary = workdir / ".home", workdir / ".tmp"
    home.mkdir(exist_ok=True)
    temporary.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k in _PASSED_ENV or k.startswith("LC_")}
    pin = os.path.join(course_lib, "_kernel_site")
    env["PYTHONPATH"] = os.pathsep.join([pin, *filter(None, [env.get("PYTHONPATH")])])
    env.update(
        HOME=str(home),
        TMPDIR=str(temporary),
        IPYTHONDIR=str(home / ".ipython"),
        MPLCONFIGDIR=str(home / ".matplotlib"),
        XDG_CACHE_HOME=str(home / ".cache"),
        JAX_PLATFORMS="cpu",
        MPLBACKEND="Agg",
        PYTHONHASHSEED="0",
        PYTHONNOUSERSITE="1",
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    return env


def launcher_command(policy: dict, command: list[str]) -> list[str]:
    """The command that runs ``command`` confined by ``policy``."""
    return [sys.executable, "-I", "-S", LAUNCHER, json.dumps(policy), "--", *command]


def split_launcher_command(launcher: list[str]) -> tuple[dict, list[str]]:
    """The policy and command of a :func:`launcher_command`.

    >>> split_launcher_command(launcher_command({"landlock": True}, ["python", "-V"]))
    ({'landlock': True}, ['python', '-V'])
    """
    if launcher[1:4] != ["-I", "-S", LAUNCHER] or launcher[5:6] != ["--"]:
        raise ValueError(f"not a launcher command: {launcher[:6]}")
    return json.loads(launcher[4]), launcher[6:]


def sandbox_level(enabled: bool = True) -> dict[str, object]:
    """What will confine each kernel, as the gradebook records it; ``reason`` says why when it is
    not Landlock.

    >>> sandbox_level(enabled=False)["reason"]
    'not sandboxed: turned off with --sandbox off'
    """
    if not enabled:
        return {"sandbox": "off", "reason": "not sandboxed: turned off with --sandbox off"}
    if not sys.platform.startswith("linux"):
        return {
            "sandbox": "none",
            "reason": f"not sandboxed: Landlock is Linux only (this is {sys.platform})",
        }
    import subprocess

    try:
        found = subprocess.run(
            [sys.executable, "-I", "-S", LAUNCHER, "--probe"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        level = json.loads(found.stdout)
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        level = {"sandbox": "none", "reason": f"the Landlock probe failed ({type(error).__name__})"}
    if level.get("sandbox") != "landlock":
        level["reason"] = f"not sandboxed: {level.get('reason', 'unknown')}"
    level["processes"] = "subreaper"
    level["process_limit"] = "cgroup pids.max" if PidsCgroup.parent() else "watchdog"
    return level


class PidsCgroup:
    """A pids cgroup of its own for one kernel: a hard cap on its processes and threads, and a list
    of them all.

    Made under the grader's own cgroup (v2 where the pids controller is delegated there, else the v1
    pids hierarchy) when the grader may create one; :meth:`create` returns ``None`` where it may
    not.
    """

    _parent: list[str | None] = []
    _count = 0

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def parent(cls) -> str | None:
        """Where this process may make pids cgroups, found once (``None``: nowhere)."""
        if not cls._parent:
            cls._parent.append(next((p for p in _cgroup_candidates() if _can_make_child(p)), None))
        return cls._parent[0]

    @classmethod
    def create(cls, limit: int) -> PidsCgroup | None:
        parent = cls.parent()
        if parent is None:
            return None
        cls._count += 1
        path = os.path.join(parent, f"course-grade-{os.getpid()}-{cls._count}")
        try:
            os.mkdir(path)
            with open(os.path.join(path, "pids.max"), "w") as file:
                file.write(str(limit))
        except OSError:
            return None
        return cls(path)

    def tripped(self) -> bool:
        """True once a fork or thread was refused for being over the limit."""
        try:
            with open(os.path.join(self.path, "pids.events")) as file:
                return any(line.split()[:1] == ["max"] and line.split()[1] != "0" for line in file)
        except (OSError, IndexError):
            return False

    def members(self) -> list[int]:
        try:
            with open(os.path.join(self.path, "cgroup.procs")) as file:
                return [int(line) for line in file if line.strip()]
        except OSError:
            return []

    def sweep(self) -> int:
        """Kill whatever is still inside (the launcher normally left nothing); return how many were
        killed."""
        killed = 0
        for _ in range(200):
            members = self.members()
            if not members:
                break
            for pid in members:
                if self._holds(pid):
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed += 1
                    except ProcessLookupError:
                        pass
            time.sleep(0.01)
        return killed

    def _holds(self, pid: int) -> bool:
        # Checked just before each kill, so a pid that left and was reused elsewhere is spared.
        tail = self.path.rsplit("/", 1)[-1]
        try:
            with open(f"/proc/{pid}/cgroup") as file:
                return any(line.rstrip().endswith("/" + tail) for line in file)
        except OSError:
            return False

    def remove(self) -> None:
        for _ in range(100):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.02)  # the last members are still being torn down


def _cgroup_candidates() -> list[str]:
    """This process's cgroup folders that can hold a pids limit: v2 first, then the v1 pids
    hierarchy."""
    try:
        with open("/proc/self/cgroup") as file:
            mine = [line.rstrip("\n").split(":", 2) for line in file]
        with open("/proc/self/mountinfo") as file:
            mounts = [line.split() for line in file]
    except OSError:
        return []
    found = []
    for fields in mounts:
        dash = fields.index("-")
        root, point, kind, options = (
            fields[3],
            fields[4],
            fields[dash + 1],
            fields[dash + 3].split(","),
        )
        for _, controllers, path in mine:
            v2 = kind == "cgroup2" and controllers == ""
            v1 = kind == "cgroup" and "pids" in controllers.split(",") and "pids" in options
            if v2 or v1:
                relative = os.path.relpath(path, root) if path.startswith(root) else None
                if relative is not None:
                    found.append(os.path.normpath(os.path.join(point, relative)))
    return sorted(found, key=lambda p: "pids" in p)


def _can_make_child(parent: str) -> bool:
    probe = os.path.join(parent, f"course-grade-probe-{os.getpid()}")
    try:
        os.mkdir(probe)
    except OSError:
        return False
    try:
        return os.access(os.path.join(probe, "pids.max"), os.W_OK)
    finally:
        os.rmdir(probe)


if __name__ == "__main__":
    if sys.argv[1:] == ["--probe"]:
        print(json.dumps(probe()))
        sys.exit(0)
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: python -I -S _launcher.py POLICY_JSON -- COMMAND... | --probe")
    sys.exit(launch(json.loads(sys.argv[1]), sys.argv[3:]))
