"""How the grader talks to a kernel. Where a confined kernel's own sockets are closed, over unix
sockets that the launcher made in a folder of the kernel's own, so no other process can take an
address first; where they cannot be closed, over TCP ports (which Landlock fences), and a kernel
that loses one of its ports to another process at start is started once more."""

from __future__ import annotations

import asyncio
import json
import socket
import stat
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from jupyter_client.connect import LocalPortCache

from course_tools.grade.sandbox import kernel_env
from course_tools.grade.sandbox._forked import ForkServer
from course_tools.grade.sandbox._kernel import Confinement, Limits, Sandbox
from course_tools.grade.sandbox._launcher import sandbox_level

LEVEL = sandbox_level() if sys.platform.startswith("linux") else {}
needs_closed_sockets = pytest.mark.skipif(
    LEVEL.get("network") != "closed",
    reason="needs Linux with Landlock ABI 4+ and seccomp (kernels whose own sockets are closed)",
)
needs_tcp_fence = pytest.mark.skipif(
    LEVEL.get("sandbox") != "landlock" or LEVEL.get("network") == "open",
    reason="needs Linux with Landlock ABI 4+ (TCP ports fenced)",
)
CHANNELS = ("shell_port", "iopub_port", "stdin_port", "hb_port", "control_port")
# socket(AF_UNIX, SOCK_STREAM) through x86-64's x32 numbers (the same architecture, bit 30 set):
# refused by the socket filter, whether or not this machine's kernel serves x32 calls.
X32_SOCKET = """
import ctypes, os, platform
if platform.machine() == "x86_64":
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(ctypes.c_long(0x40000000 | 41), 1, 1, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    os.close(fd)
else:
    raise PermissionError("no x32 calls on this machine")
"""


def _seen_by_the_grader(sandbox: Sandbox) -> dict[str, Any]:
    """The kernel's connection file and folder, and the sockets its process holds."""
    assert sandbox.km is not None and sandbox.kernel_pid is not None
    connection = Path(sandbox.km.connection_file)
    kernel = psutil.Process(sandbox.kernel_pid)
    return {
        "info": json.loads(connection.read_text()),
        "folder": connection.parent,
        "folder mode": stat.S_IMODE(connection.parent.stat().st_mode) & 0o777,
        "tcp": [c for c in kernel.net_connections("inet") if c.status == psutil.CONN_LISTEN],
        "unix": {c.laddr for c in kernel.net_connections("unix")},
    }


@needs_closed_sockets
@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "forked"])
def test_a_confined_kernel_listens_on_unix_sockets_it_cannot_make_itself(
    tmp_path: Path, forks: ForkServer, warm: bool
) -> None:
    async def scenario() -> tuple[dict[str, Any], list[Any], Sandbox]:
        sandbox = Sandbox(
            str(tmp_path),
            kernel_env(tmp_path),
            Limits(),
            Confinement(landlock=True, sockets=True),
            forks=forks if warm else None,
        )
        await sandbox.start()
        try:
            seen = _seen_by_the_grader(sandbox)
            cells = [
                await sandbox.run("import socket\nsocket.socket(socket.AF_UNIX)", 60),
                await sandbox.run(X32_SOCKET, 60),
                await sandbox.run("socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)", 60),
                await sandbox.run("a, b = socket.socketpair()\na.send(b'x')\nb.recv(1)", 60),
            ]
        finally:
            await sandbox.stop()
        return seen, cells, sandbox

    seen, (make_one, x32, datagram_pair, stream_pair), sandbox = asyncio.run(scenario())
    assert sandbox.forked == warm and sandbox.start_retries == 0
    info = seen["info"]
    assert info["transport"] == "ipc"
    assert {f"{info['ip']}-{info[channel]}" for channel in CHANNELS} <= seen["unix"]
    assert Path(info["ip"]).parent == seen["folder"] and seen["folder mode"] == 0o700
    assert seen["tcp"] == [], "the kernel should listen on no TCP port"
    for refused in (make_one, x32, datagram_pair):
        assert (refused.status, refused.ename) == ("error", "PermissionError"), refused
    assert stream_pair.status == "ok", stream_pair
    assert not seen["folder"].exists(), "the kernel's folder should go with it"


@needs_tcp_fence
def test_over_tcp_a_kernel_that_loses_a_port_at_start_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race, made certain: the first port chosen is one another process listens on."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    first = [taken.getsockname()[1]]
    choose = LocalPortCache.find_available_port

    def choose_taken_first(self: LocalPortCache, ip: str) -> int:
        return first.pop() if first else choose(self, ip)

    monkeypatch.setattr(LocalPortCache, "find_available_port", choose_taken_first)

    async def scenario() -> tuple[str, int, str]:
        sandbox = Sandbox(
            str(tmp_path), kernel_env(tmp_path), Limits(), Confinement(landlock=True, sockets=False)
        )
        await sandbox.start()
        try:
            result = await sandbox.run("print(1)", 60)
        finally:
            await sandbox.stop()
        return sandbox.transport, sandbox.start_retries, result.status

    with taken:
        assert asyncio.run(scenario()) == ("tcp", 1, "ok")
