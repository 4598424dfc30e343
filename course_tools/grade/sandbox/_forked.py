"""The grader's side of the fork server (``_forkserver.py``): start it, ask it for kernels, and
watch each forked launcher as ``subprocess.Popen`` would.

A :class:`ForkServer` belongs to one run (or one Dask worker) and works from any event loop. A
:class:`ForkedProvisioner` makes ``jupyter_client`` start a kernel through it; a kernel it cannot
start that way (another interpreter or environment, or a server that has gone) starts as usual.
"""

import asyncio
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from ..._course import COURSE_LIB
from . import _forkserver, _launcher
from ._forkserver import MESSAGE_BYTES
from ._kernel_main import KERNEL_COMMAND

SERVER = os.path.abspath(_forkserver.__file__)
READY_SECONDS = 120.0


class ForkServerError(RuntimeError):
    """The fork server could not start or answer."""


async def _readable(sock: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(sock.fileno(), wake)
    try:
        await ready
    finally:
        loop.remove_reader(sock.fileno())


class ForkedProcess:
    """A launcher forked by the server, with the part of ``Popen``'s interface that the kernel
    manager and the sandbox use. Signals go through a pidfd, so they never reach a reused pid."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int, pidfd: int, answers: socket.socket):
        self.pid, self.args = pid, [SERVER, str(pid)]
        self.returncode: int | None = None
        self._pidfd, self._answers = pidfd, answers

    def poll(self) -> int | None:
        if self.returncode is not None:
            return self.returncode
        try:
            message = self._answers.recv(MESSAGE_BYTES)
        except BlockingIOError:
            return None
        if message:
            self.returncode = os.waitstatus_to_exitcode(json.loads(message)["status"])
        elif select.select([self._pidfd], [], [], 0)[0]:
            self.returncode = -signal.SIGKILL  # the server died and no status will come
        else:
            return None
        self._release()
        return self.returncode

    def _release(self) -> None:
        if self._pidfd >= 0:
            self._answers.close()
            os.close(self._pidfd)
            self._pidfd = -1

    def __del__(self) -> None:  # a launcher whose end was never polled (its group was killed)
        self._release()

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            time.sleep(0.01)
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            try:
                signal.pidfd_send_signal(self._pidfd, signum)  # open until poll() saw the end
            except ProcessLookupError:
                pass  # ended since: there is nothing to signal

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class ForkServer:
    """The warm process of one run: started at once, ready a few seconds later (``ready()``).

    ``env`` is the kernels' environment; its per-kernel folders may differ from kernel to kernel
    (see :data:`~._forkserver.PER_KERNEL`), nothing else.
    """

    def __init__(self, env: dict[str, str], folder: Path):
        self.env, self.folder, self._owns_folder = env, folder, False
        self._control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, SERVER, str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                env=env,
                cwd=folder,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        self._state: bool | None = None  # ready, failed, or not known yet
        self._lock = threading.Lock()

    @classmethod
    def start(cls, under: Path | None = None) -> "ForkServer | None":
        """A server with a folder of its own (in ``under``, else the temporary folder) that
        ``close()`` removes; None where it cannot be started (kernels then start fresh)."""
        folder = Path(tempfile.mkdtemp(prefix="course-grade-warm-", dir=under))
        try:
            server = cls(_launcher.kernel_env(folder, str(COURSE_LIB)), folder)
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        server._owns_folder = True
        return server

    def _wait_ready(self) -> bool:
        with self._lock:
            if self._state is None:
                self._control.settimeout(READY_SECONDS)
                try:
                    self._state = json.loads(self._control.recv(MESSAGE_BYTES) or b"{}").get(
                        "ready", False
                    )
                except (OSError, ValueError):
                    self._state = False
                self._control.setblocking(False)
                if not self._state:
                    self.close()
            return bool(self._state)

    async def ready(self) -> bool:
        """Whether the server started (waited for once, off the event loop)."""
        if self._state is None:
            return await asyncio.get_running_loop().run_in_executor(None, self._wait_ready)
        return self._state

    def accepts(self, launcher: list[str], env: dict[str, str]) -> bool:
        """Whether a kernel of this launcher command and environment can be forked here."""
        try:
            _, command = _launcher.split_launcher_command(launcher)
        except ValueError:
            return False

        def shared(variables: dict[str, str]) -> dict[str, str]:
            return {k: v for k, v in variables.items() if k not in _forkserver.PER_KERNEL}

        return (
            bool(self._state)
            and command[: 1 + len(KERNEL_COMMAND)] == [sys.executable, *KERNEL_COMMAND]
            and shared(env) == shared(self.env)
        )

    async def launch(self, launcher: list[str], cwd: str, env: dict[str, str]) -> ForkedProcess:
        """Fork the launcher of ``launcher`` (a launcher command) in ``cwd`` with ``env``."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        request = json.dumps({"command": launcher, "cwd": cwd, "env": env}).encode()
        try:
            with theirs:
                socket.send_fds(self._control, [request], [theirs.fileno()])
            ours.setblocking(False)
            await asyncio.wait_for(_readable(ours), 30)
            message, fds, _, _ = socket.recv_fds(ours, MESSAGE_BYTES, 1, socket.MSG_CMSG_CLOEXEC)
        except (TimeoutError, OSError) as error:
            ours.close()
            raise ForkServerError(f"the fork server did not answer ({error!r})") from None
        answer = json.loads(message or b'{"error": "the fork server is gone"}')
        if "pid" not in answer:
            ours.close()
            for fd in fds:
                os.close(fd)
            raise ForkServerError(answer.get("error", "the fork server refused"))
        return ForkedProcess(answer["pid"], fds[0], ours)

    def give_up(self) -> None:
        """Accept no more kernels: the server failed, so the run goes on with fresh ones."""
        self._state = False

    def close(self) -> None:
        """Hang up: the server ends its launchers (and so their kernels) and exits."""
        self._control.close()
        if self._state is None:
            self.process.kill()  # still importing: it has no kernel to end
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self._owns_folder:
            shutil.rmtree(self.folder, ignore_errors=True)


class ForkedProvisioner(LocalProvisioner):
    """``LocalProvisioner`` whose kernels come from a :class:`ForkServer` when it accepts them."""

    forks: ForkServer | None = None

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        env = {**kwargs["env"], "JPY_PARENT_PID": str(os.getpid())}  # as jupyter_client sets it
        if self.forks is None or not self.forks.accepts(cmd, env):
            return await super().launch_kernel(cmd, **kwargs)
        try:
            process = await self.forks.launch(cmd, str(kwargs["cwd"]), env)
        except ForkServerError:
            self.forks.give_up()  # gone (a kernel without Landlock may kill it): fresh kernels
            return await super().launch_kernel(cmd, **kwargs)
        self.process = process  # type: ignore[assignment]  # Popen's look-alike: what is called
        self.pid = self.pgid = process.pid  # the launcher leads its own session and group
        self.cwd = kwargs["cwd"]
        return self.connection_info
