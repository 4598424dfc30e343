"""One submission's kernel, fenced in: fresh process, time limits, a memory limit, no stored output.

The kernel is a plain ``python3`` Jupyter kernel started by ``jupyter_client`` and driven by
``nbclient``. Around it:

* memory: ``RLIMIT_AS`` (set on the running kernel with ``prlimit``) makes a huge allocation fail
  with ``MemoryError``; a watchdog sums the resident memory of the kernel and its children every
  0.1 s and kills the process group past the limit.
* time: each cell has a limit; past it the kernel is interrupted, and killed when it does not
  answer after the interrupt.
* output: nothing a cell prints is kept, only counted (a flood costs the grader no memory); the
  error name and message of a failing cell are kept, shortened.
* files: the kernel runs in a scratch folder holding a copy of the notebook, with its standard
  streams sent to ``/dev/null``, core dumps off and written files capped at 256 MiB.
* confinement (with a :class:`Confinement`): the kernel is started through the launcher in
  ``_launcher.py``: Landlock (reads, writes, TCP, signals), no capabilities, a pids cgroup or a
  process-count watchdog, and a subreaper that ends every process the kernel started. To stop, the
  grader sends the launcher ``SIGTERM`` and waits for it; only if it lingers is its group killed,
  and the cgroup swept.
* start (with a :class:`~._forked.ForkServer`): the launcher is forked from the run's warm process,
  which has already imported JAX; its kernel is confined the same way before it runs ipykernel.
"""

import asyncio
import logging
import math
import os
import queue
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import psutil
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import ensure_async
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from course_lib._leaves import shorten

from ..._course import COURSE_LIB
from . import _kernel_main, _launcher
from ._forked import ForkedProcess, ForkedProvisioner, ForkServer

_TIMEOUT_NAME = "CourseGraderCellTimeout"
_QUIET = logging.getLogger("course_tools.grade.kernel")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False
_ERROR_TEXT_LIMIT = 300
_VIRTUAL_SLACK = 4 * 2**30  # JAX reserves address space for thread stacks and its allocator
_SOCKET_PATH_BYTES = 103  # the longest unix socket path every system takes (Linux 107, macOS 103)


@dataclass
class Limits:
    """The fence around every kernel."""

    cell_seconds: float = 30.0
    memory_bytes: int = 2 * 2**30
    startup_seconds: float = 60.0
    tasks: int = 512  # processes and threads of one kernel, its children included


@dataclass
class Confinement:
    """How kernels are confined: ``landlock`` where the probe found it works.

    The launcher is used either way.
    """

    landlock: bool
    read: list[str] = field(default_factory=lambda: _launcher.readable_paths(str(COURSE_LIB)))
    sockets: bool = False  # True: only TCP (which Landlock fences) and netlink sockets may be made


def descendants(pid: int) -> list[int] | None:
    """The pids of every process below ``pid``, from Linux's ``/proc/PID/task/TID/children``;
    ``None`` where the system has no such files.

    The watchdog asks ten times a second for each kernel. psutil's ``children(recursive=True)``
    reads every process on the machine for that, so on a busy machine the watchdogs' own cost grows
    with everything else that runs; this reads only the kernel's own tree. A process started
    between two reads can be missed once, and is found by the next look.

    >>> child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    >>> found = descendants(os.getpid())
    >>> found is None or child.pid in found
    True
    >>> child.kill()
    >>> child.wait()
    -9
    """
    if not os.path.exists(f"/proc/{pid}/task/{pid}/children"):
        return None
    found: list[int] = []
    waiting = [pid]
    while waiting:
        parent = waiting.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue  # it exited
        for thread in threads:
            try:
                with open(f"/proc/{parent}/task/{thread}/children") as listed:
                    children = [int(word) for word in listed.read().split()]
            except OSError:
                continue
            found += children
            waiting += children
    return found


def kernel_env(workdir: Path) -> dict[str, str]:
    """A kernel's environment (``_launcher.kernel_env``) for the grader's own ``course_lib``."""
    return _launcher.kernel_env(workdir, str(COURSE_LIB))


@dataclass(frozen=True)
class KernelCache:
    """The JAX compilation-cache folder one kernel gets: read-only, or writable for the kernel that
    fills it.

    >>> sorted(KernelCache("/tmp/c", writable=False).env().items())
    [('JAX_COMPILATION_CACHE_DIR', '/tmp/c'), ('JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS', 'inf')]
    """

    folder: str
    writable: bool

    def env(self) -> dict[str, str]:
        """JAX's settings for this kernel: the folder, and when to write a program there."""
        return {
            "JAX_COMPILATION_CACHE_DIR": self.folder,
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0" if self.writable else "inf",
        }


def kernel_transport(confinement: Confinement | None) -> str:
    """How the grader talks to a kernel: ``ipc`` (unix sockets in a folder of the kernel's own,
    which no other process can take first), or ``tcp`` where Landlock fences TCP ports but unix
    sockets cannot be closed to the kernel (no seccomp), and on systems without unix sockets.

    >>> kernel_transport(Confinement(landlock=True, sockets=False))
    'tcp'
    """
    if os.name != "posix" or (
        confinement is not None and confinement.landlock and not confinement.sockets
    ):
        return "tcp"
    return "ipc"


class _ConfinedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command goes through the launcher, with a policy per kernel:
    ``python _kernel_main.py``, which runs ipykernel on the sockets the launcher made."""

    policy: Callable[[AsyncKernelManager], dict[str, Any]]

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        # Built here, not read from the kernel spec: a spec that `ipykernel install` wrote may put
        # interpreter options first, and only this command runs on the launcher's sockets.
        command = [sys.executable, *_kernel_main.KERNEL_COMMAND, "-f", self.connection_file]
        return _launcher.launcher_command(self.policy(self), command + (extra_arguments or []))


class _ReadyClient(AsyncKernelClient):
    """The kernel client, ready as soon as the kernel answers on both channels.

    jupyter_client's own wait then listens on IOPub until 0.2 s pass in silence, to drop the status
    messages of its ``kernel_info`` requests; nbclient ignores every message that does not answer
    its own request, so here they stay unread, and the 0.2 s of every kernel start are saved.
    """

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (math.inf if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                reply = await self.shell_channel.get_msg(timeout=1)
            except queue.Empty:
                reply = {}
            if reply.get("msg_type") == "kernel_info_reply":
                try:
                    await self.iopub_channel.get_msg(timeout=0.2)  # IOPub is connected too
                except queue.Empty:
                    pass  # a slow IOPub: ask again
                else:
                    self._handle_kernel_info_reply(reply)
                    return
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")


@dataclass
class CellResult:
    """How a cell ended: ``ok``, ``error`` (``ename``, ``evalue``), ``timeout``, or ``died``."""

    status: str
    ename: str = ""
    evalue: str = ""
    reason: str = ""
    output_bytes: int = 0


class KernelStartError(RuntimeError):
    """The kernel did not start; ``died`` when its process ended by itself (rather than not
    answering in time, or being refused its confinement)."""

    def __init__(self, message: str, died: bool = False):
        super().__init__(message)
        self.died = died


def _shorten(text: str, limit: int = _ERROR_TEXT_LIMIT) -> str:
    return shorten(" ".join(str(text).split()), limit)


class _Client(NotebookClient):
    """``NotebookClient`` keeping no outputs: it counts their bytes and remembers the last error."""

    output_bytes: int = 0
    last_error: tuple[str, str] | None = None
    last_reply: dict[str, Any]

    def output(
        self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int
    ) -> None:
        content = msg.get("content", {})
        kind = msg.get("msg_type")
        if kind == "stream":
            self.output_bytes += len(content.get("text", ""))
        elif kind in ("display_data", "execute_result"):
            self.output_bytes += sum(len(str(v)) for v in content.get("data", {}).values())
        elif kind == "error":
            self.last_error = (
                _shorten(content.get("ename", "")),
                _shorten(content.get("evalue", "")),
            )
        return None

    def handle_comm_msg(self, outs: list[Any], msg: dict[str, Any], cell_index: int) -> None:
        return None  # widgets are not graded; their messages are dropped

    def remember_reply(
        self, cell: Any, cell_index: int, execute_reply: dict[str, Any] | None
    ) -> None:
        self.last_reply = (execute_reply or {}).get("content", {})


def _signal_name(code: int | None) -> str:
    if code is None:
        return "the kernel stopped answering"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with status {code}"


class Sandbox:
    """A fresh kernel for one submission: await ``start()``, ``run(source, seconds)``, ``stop()``.

    With a ``cache`` (:class:`~._jaxcache.KernelCache`), JAX in the kernel uses that compilation
    cache folder: readable only, unless the cache says it is the filling kernel's. With ``forks``
    and a confinement, the kernel is forked from that warm process when it accepts it.
    """

    def __init__(
        self,
        workdir: str,
        env: dict[str, str],
        limits: Limits,
        confinement: Confinement | None = None,
        writable: list[str] | None = None,
        cache: KernelCache | None = None,
        forks: ForkServer | None = None,
    ):
        self.workdir, self.limits, self.forks = workdir, limits, forks
        self.env = {**env, **(cache.env() if cache else {})}
        self.confinement, self.writable = confinement, [workdir, *(writable or [])]
        self.readable = [cache.folder] if cache else []
        if cache is not None and cache.writable:
            self.writable.append(cache.folder)
        self.km: AsyncKernelManager | None = None
        self.client: _Client | None = None
        self.pid: int | None = None  # the launcher's with a confinement, else the kernel's
        self.kernel_pid: int | None = None
        self.forked = False  # whether the fork server started this kernel
        self._cgroup: _launcher.PidsCgroup | None = None
        self.killed_for: str = ""
        self._killed = False
        self._watchdog: asyncio.Task[None] | None = None
        self._scratch = nbformat.v4.new_notebook()
        self.transport = kernel_transport(confinement)
        self.start_retries = 0  # kernels that died at start over TCP and were started again
        self._connection: tempfile.TemporaryDirectory[str] | None = None

    def _policy(self, km: AsyncKernelManager) -> dict[str, Any]:
        assert self.confinement is not None
        ports = [km.shell_port, km.iopub_port, km.stdin_port, km.hb_port, km.control_port]
        ipc = self.transport == "ipc"
        return {
            "landlock": self.confinement.landlock,
            "sockets": "closed" if self.confinement.sockets else "open",
            "read": [
                *self.confinement.read,
                *self.readable,
                os.path.realpath(km.connection_file),
                *_kernel_main.KERNEL_COMMAND,
            ],
            "write": self.writable,
            "devices": _launcher.DEVICES,
            "listen": [f"{km.ip}-{port}" for port in ports] if ipc else [],
            "listen_variable": _kernel_main.SOCKETS_ENV,
            "bind_ports": [] if ipc else ports,  # over unix sockets, no TCP at all
            "cgroup": self._cgroup.path if self._cgroup else None,
        }

    async def start(self) -> None:
        """Start the kernel; over TCP, a kernel that died at start (another process may have taken
        one of its ports first) is started once more. Raises :class:`KernelStartError`."""
        try:
            await self._start()
        except KernelStartError as error:
            if self.transport != "tcp" or not error.died:
                raise
            self.start_retries += 1
            self._killed, self.killed_for = False, ""
            await self._start()

    def _connection_file(self) -> str:
        """A new connection file in a folder of this kernel's own, beside its unix sockets: in the
        temporary folder, else in ``/tmp`` where the temporary folder's path is too long for a
        socket's; where neither fits, the kernel talks TCP."""
        if self._connection is not None:
            self._connection.cleanup()
        for parent in (None, "/tmp"):
            self._connection = tempfile.TemporaryDirectory(prefix="course-kernel-", dir=parent)
            longest = os.path.join(self._connection.name, "kernel-ipc-99")
            if self.transport != "ipc" or len(os.fsencode(longest)) <= _SOCKET_PATH_BYTES:
                break
            self._connection.cleanup()
        else:
            self.transport = "tcp"
            self._connection = tempfile.TemporaryDirectory(prefix="course-kernel-")
        return os.path.join(self._connection.name, "kernel.json")

    async def _start(self) -> None:
        try:
            connection_file = self._connection_file()  # first: it may fall back to TCP
        except OSError as error:
            raise KernelStartError(
                f"no folder for the kernel's connection file could be made ({error})"
            ) from None
        options: dict[str, Any] = {
            "kernel_name": "python3",
            "log": _QUIET,
            "transport": self.transport,
            "connection_file": connection_file,
        }
        if self.confinement is None:
            self.km = AsyncKernelManager(**options)
        else:
            self._cgroup = _launcher.PidsCgroup.create(self.limits.tasks)
            self.km = _ConfinedKernelManager(**options)
            self.km.policy = self._policy
            if self.forks is not None and await self.forks.ready():
                provisioner = ForkedProvisioner(kernel_spec=self.km.kernel_spec, parent=self.km)
                provisioner.forks = self.forks
                self.km.provisioner = provisioner
        self.km.client_factory = _ReadyClient
        try:
            await asyncio.wait_for(
                self.km.start_kernel(
                    cwd=self.workdir,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    extra_arguments=["--HistoryManager.hist_file=:memory:"],
                ),
                self.limits.startup_seconds,
            )
            self.pid = self.km.provisioner.process.pid  # type: ignore[union-attr]  # started just above
            self.forked = isinstance(self.km.provisioner.process, ForkedProcess)  # type: ignore[union-attr]  # as above
            self.client = _Client(
                self._scratch,
                km=self.km,
                timeout=None,
                startup_timeout=int(self.limits.startup_seconds),
                allow_errors=True,
                interrupt_on_timeout=True,
                error_on_timeout={"ename": _TIMEOUT_NAME, "evalue": "", "traceback": []},
                iopub_timeout=2,
                store_widget_state=False,
                record_timing=False,
            )
            self.client.log = _QUIET
            self.client.on_cell_executed = self.client.remember_reply
            self.client.output_bytes = 0
            self.client.last_error = None
            self.client.last_reply = {}
            await self.client.async_start_new_kernel_client()
            self.kernel_pid = self._find_kernel()
            self._fence()
        except Exception as error:  # noqa: BLE001 (whatever failed, the kernel is stopped and reported)
            code = self._launcher_code()
            await self.stop()
            if code == _launcher.EXIT_NOT_CONFINED:
                raise KernelStartError(
                    "the kernel could not be confined (Landlock refused), so it was not started"
                ) from None
            if code == _launcher.EXIT_NO_SOCKETS:
                raise KernelStartError(
                    "the kernel's unix sockets could not be made, so it was not started"
                ) from None
            raise KernelStartError(
                _shorten(f"{type(error).__name__}: {error}"), died=code is not None
            ) from None
        self._watchdog = asyncio.ensure_future(self._watch())

    def _launcher_code(self) -> int | None:
        process = getattr(self.km, "provisioner", None) and self.km.provisioner.process  # type: ignore[union-attr]  # getattr guards it
        return process.poll() if process is not None else None

    def _find_kernel(self) -> int | None:
        """The kernel's pid: the launcher's one child (the kernel answered), or the process."""
        if self.confinement is None:
            return self.pid
        children = psutil.Process(self.pid).children()
        if len(children) != 1:
            raise RuntimeError(f"the launcher has {len(children)} children, not one kernel")
        return children[0].pid

    def _fence(self) -> None:
        # Where the system refuses to set limits on another process, the watchdog still holds.
        try:
            process = psutil.Process(self.kernel_pid)
            virtual = process.memory_info().vms + self.limits.memory_bytes + _VIRTUAL_SLACK
            process.rlimit(psutil.RLIMIT_AS, (virtual, virtual))
            process.rlimit(psutil.RLIMIT_CORE, (0, 0))
            process.rlimit(psutil.RLIMIT_FSIZE, (256 * 2**20, 256 * 2**20))
        except (psutil.Error, OSError, AttributeError):
            pass

    def _resident(self) -> tuple[int, int]:
        """Resident bytes and count of processes under the launcher (orphans come back to it)."""
        try:
            root = psutil.Process(self.pid)
            below = descendants(root.pid)
            if below is None:
                processes = [root, *root.children(recursive=True)]
            else:
                processes = [root]
                for pid in below:
                    try:
                        processes.append(psutil.Process(pid))
                    except psutil.Error:
                        pass  # gone since it was listed
        except psutil.Error:
            return 0, 0
        total = 0
        for process in processes:
            try:
                total += process.memory_info().rss
            except psutil.Error:
                pass
        return total, len(processes)

    def _too_many(self, processes: int) -> bool:
        """Over the process cap: the cgroup refused a fork, or (no cgroup) the count says so."""
        if self.confinement is None:
            return False
        return processes > self.limits.tasks or (
            self._cgroup is not None and self._cgroup.tripped()
        )

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            resident, processes = self._resident()
            if resident > self.limits.memory_bytes:
                self.killed_for = (
                    f"used more than the {self.limits.memory_bytes / 2**30:.1f} GiB memory limit"
                )
            elif self._too_many(processes):
                self.killed_for = f"started more than {self.limits.tasks} processes and threads"
            else:
                continue
            self._kill()
            return

    def _kill(self) -> None:
        """Kill the kernel now; with a launcher, it then ends every process the kernel left."""
        self._killed = True
        process = getattr(self.km, "provisioner", None) and self.km.provisioner.process  # type: ignore[union-attr]  # getattr guards it
        if self.confinement is not None and process is not None:
            process.send_signal(signal.SIGTERM)  # Popen's own call: never a reused pid
            return
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)  # the kernel leads its own session and group
        except (ProcessLookupError, PermissionError):
            pass

    async def _launcher_gone(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the launcher (or unconfined kernel) to exit."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while self._launcher_code() is None and loop.time() < deadline:
            await asyncio.sleep(0.02)
        return self._launcher_code() is not None

    async def _death_reason(self) -> str:
        if self.killed_for:
            return self.killed_for
        if self.confinement is not None:
            await self._launcher_gone(
                3
            )  # it exits the way the kernel did, once the kernel's children are gone
        return _signal_name(self._launcher_code())

    async def run(self, source: str, seconds: float) -> CellResult:
        """Run one cell with a time limit; never raises for what the cell does."""
        assert self.client is not None
        client = self.client
        cell = nbformat.v4.new_code_cell(source)
        self._scratch.cells = [cell]
        client.timeout = max(1, math.ceil(seconds))
        client.last_error = None
        client.last_reply = {}
        client.output_bytes = 0
        try:
            await client.async_execute_cell(cell, 0, store_history=False)
        except DeadKernelError:
            self._kill()
            return CellResult(
                "died", reason=await self._death_reason(), output_bytes=client.output_bytes
            )
        except CellTimeoutError:
            return await self._after_timeout(client.output_bytes)
        except Exception as error:  # noqa: BLE001 (anything else from the client: treat the kernel as lost)
            self._kill()
            return CellResult(
                "died", reason=_shorten(f"lost contact with the kernel ({type(error).__name__})")
            )
        if not await self._alive():
            self._kill()
            return CellResult(
                "died", reason=await self._death_reason(), output_bytes=client.output_bytes
            )
        reply = client.last_reply if isinstance(client.last_reply, dict) else {}
        if reply.get("ename") == _TIMEOUT_NAME:
            return await self._after_timeout(client.output_bytes)
        if reply.get("status") == "error" or client.last_error is not None:
            ename, evalue = client.last_error or ("", "")
            ename = ename or _shorten(reply.get("ename", "")) or "Error"
            evalue = evalue or _shorten(reply.get("evalue", ""))
            return CellResult("error", ename, evalue, output_bytes=client.output_bytes)
        return CellResult("ok", output_bytes=client.output_bytes)

    async def _after_timeout(self, output_bytes: int) -> CellResult:
        """The kernel was interrupted; check it answers, or kill it so the caller restarts one."""
        assert self.client is not None
        self.client.timeout = 3
        self.client.last_error = None
        self.client.last_reply = {}
        probe = nbformat.v4.new_code_cell("pass")
        self._scratch.cells = [probe]
        try:
            await self.client.async_execute_cell(probe, 0, store_history=False)
            answered = self.client.last_reply.get("status") == "ok" and await self._alive()
        except Exception:  # noqa: BLE001 (a kernel that broke in any way did not answer)
            answered = False
        if answered:
            return CellResult("timeout", output_bytes=output_bytes)
        self._kill()
        return CellResult(
            "timeout",
            reason="did not stop when interrupted, so the kernel was killed",
            output_bytes=output_bytes,
        )

    async def _alive(self) -> bool:
        try:
            return bool(await self.km.is_alive())  # type: ignore[union-attr]  # called on a started kernel
        except Exception:  # noqa: BLE001 (a kernel that cannot say is not alive)
            return False

    @property
    def usable(self) -> bool:
        """False once the kernel was killed or died."""
        process = getattr(self.km, "provisioner", None) and self.km.provisioner.process  # type: ignore[union-attr]  # getattr guards it
        return process is not None and process.poll() is None and not self._killed

    async def stop(self) -> None:
        """End the kernel and every process it started, and release everything; never raises."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._kill()
        if self.confinement is not None and not await self._launcher_gone(5):
            try:
                os.killpg(self.pid, signal.SIGKILL)  # type: ignore[arg-type]  # a launcher that lingers: its group
            except (ProcessLookupError, PermissionError, TypeError):
                pass
        if self.client is not None and self.client.kc is not None:
            try:
                self.client.kc.stop_channels()
            except Exception:  # noqa: BLE001 (stop never raises)
                pass
        if self.km is not None:
            try:
                if self.km.has_kernel and self._launcher_code() is None:
                    await asyncio.wait_for(self.km.shutdown_kernel(now=True), 10)
            except Exception:  # noqa: BLE001 (stop never raises)
                pass
            try:
                await ensure_async(self.km.cleanup_resources())
            except Exception:  # noqa: BLE001 (stop never raises)
                pass
        if self._cgroup is not None:
            self._cgroup.sweep()  # a backstop: the launcher normally left nothing there
            self._cgroup.remove()
        if self._connection is not None:
            self._connection.cleanup()
            self._connection = None
