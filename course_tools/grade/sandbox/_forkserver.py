"""The fork server: one warm process per run that forks every confined kernel, so that ``import
jax`` is paid once per run rather than once per submission.

The grader starts it as a script, with the kernels' environment and one end of a socket pair::

    python _forkserver.py FD

It imports :data:`WARM` (NumPy, JAX, ipykernel and course_lib: no backend is initialized), checks
that no Python thread was started (a fork copies only the thread that calls it), says it is ready,
and then only forks. A request carries a kernel's
launcher command (see ``_launcher.launcher_command``), folder and environment, together with one end
of a fresh socket pair. For each, the server forks a launcher, answers on that socket with the
launcher's pid and a pidfd for it, and once the launcher has ended, with its wait status.

The forked launcher first closes every descriptor it inherited (the server's socket among them, so
no kernel can ask for a sibling of its own), starts a session, and takes the requested folder and
environment. Then it does what the launcher script does (``_launcher.launch``), except that the
confined child runs ipykernel in its own process, with the modules already imported, instead of
``exec``-ing Python. The server never runs a notebook's code.

JAX reads some settings from the environment when it is imported, so the grader only sends requests
whose environment equals the server's apart from :data:`PER_KERNEL`: folders nothing imported has
read yet, and the compilation-cache settings, which the kernel sets through ``jax.config``
(:data:`CACHE_SETTINGS`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import selectors
import signal
import socket
import sys
import threading
from types import ModuleType

# What a kernel imports before its first cell (ipykernel's debugger brings debugpy); JAX with the
# MLIR dialects its first lowering loads; course_lib and its checks (every lesson's module too),
# which the notebook imports. Not the probes' runner: a probe removes course_lib.checks and its
# modules from sys.modules and imports them afresh.
WARM = (
    "numpy",
    "jax",
    "jax.numpy",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.debugger",
    "jaxlib.mlir.dialects.mhlo",
    "jaxlib.mlir.dialects.chlo",
    "jaxlib.mlir.dialects.builtin",
    "jaxlib.mlir.dialects.func",
    "course_lib",
    "course_lib.checks",
)
CACHE_SETTINGS = {
    "JAX_COMPILATION_CACHE_DIR": "jax_compilation_cache_dir",
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "jax_persistent_cache_min_compile_time_secs",
}
PER_KERNEL = frozenset(
    {"HOME", "TMPDIR", "IPYTHONDIR", "MPLCONFIGDIR", "XDG_CACHE_HOME", "JPY_PARENT_PID"}
    | set(CACHE_SETTINGS)
)
MESSAGE_BYTES = 1 << 20  # the largest message either side reads


def _load_beside(filename: str) -> ModuleType:
    """The module in ``filename`` beside this file, without putting this folder on ``sys.path``."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), filename)
    spec = importlib.util.spec_from_file_location(f"_course_grade_{filename[1:-3]}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_kernel(arguments: list[str], kernel: ModuleType) -> None:
    """In the confined child: what ``python _kernel_main.py ARGUMENTS`` would do."""
    import tempfile

    tempfile.tempdir = None  # found again from this kernel's TMPDIR
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # NumPy's global generator, drawn afresh as in a new process
    jax = sys.modules["jax"]
    for variable, option in CACHE_SETTINGS.items():
        if variable in os.environ:
            value: object = os.environ[variable]
            if option.endswith("_secs"):
                value = float(str(value))
            jax.config.update(option, value)
    kernel.main(arguments)


def _become_launcher(
    request: dict, confine: ModuleType, kernel: ModuleType, imported: dict[str, str]
) -> int:
    """In the forked launcher: a clean slate of descriptors, signals, session, folder and
    environment (with what the warm imports added to it, as they would have), then
    ``_launcher.launch``."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    confine.name_process(confine.LAUNCHER_NAME)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, os.sysconf("SC_OPEN_MAX"))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update({**imported, **request["env"]})
    policy, command = confine.split_launcher_command(request["command"])
    arguments = command[1 + len(kernel.KERNEL_COMMAND) :]  # after python _kernel_main.py
    return int(confine.launch(policy, command, run=lambda: _run_kernel(arguments, kernel)))


def serve(control: socket.socket) -> None:
    """Import :data:`WARM`, say so, then fork a launcher per request until the grader hangs up."""
    # No parent-death signal: it would follow the thread that started the server, and a Dask worker
    # may retire that thread. The grader's end of the socket closes when the grader ends, however
    # it ends, and the server then stops every launcher and leaves.
    confine, kernel = _load_beside("_launcher.py"), _load_beside("_kernel_main.py")
    before = dict(os.environ)
    for name in WARM:
        importlib.import_module(name)
    sys.modules["course_lib.checks"].all_exercises()  # imports every lesson's module
    imported = {k: v for k, v in os.environ.items() if k not in before}  # JAX sets a few
    if threading.active_count() != 1:
        control.sendall(
            json.dumps({"ready": False, "reason": "an import started a thread"}).encode()
        )
        return
    wake_read, wake_write = os.pipe()
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    control.sendall(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    answers: dict[int, socket.socket] = {}
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    while True:
        for key, _ in selector.select():
            if key.fileobj is not control:
                while True:
                    try:
                        if not os.read(wake_read, 4096):
                            break
                    except BlockingIOError:
                        break
                continue
            message, fds, _, _ = socket.recv_fds(control, MESSAGE_BYTES, 1, socket.MSG_CMSG_CLOEXEC)
            if not message:  # the grader closed its end: end every launcher, then leave
                for pid in answers:
                    os.kill(pid, signal.SIGTERM)
                return
            answer = socket.socket(fileno=fds[0])
            try:
                pid = os.fork()
            except OSError as error:
                answer.sendall(json.dumps({"error": f"fork failed: {error}"}).encode())
                answer.close()
                continue
            if pid == 0:
                code = 1
                try:
                    for held in (control, answer, *answers.values()):
                        held.detach()  # closed below by number; their objects must not close a
                        # descriptor number the kernel reuses
                    selector.close()
                    code = _become_launcher(json.loads(message), confine, kernel, imported)
                finally:
                    os._exit(code)
            pidfd = os.pidfd_open(pid)  # not reaped yet, so the pid is still this child's
            try:
                socket.send_fds(answer, [json.dumps({"pid": pid}).encode()], [pidfd])
            except OSError:  # the grader stopped waiting for it: nobody else would end it
                os.kill(pid, signal.SIGTERM)
            os.close(pidfd)
            answers[pid] = answer
        _reap(answers)


def _reap(answers: dict[int, socket.socket]) -> None:
    """Collect every ended launcher and send its wait status to whoever asked for it."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        answer = answers.pop(pid, None)
        if answer is not None:
            try:
                answer.sendall(json.dumps({"status": status}).encode())
            except OSError:
                pass  # the grader stopped listening for this one
            answer.close()


if __name__ == "__main__":
    del sys.path[0]  # this folder: a kernel's imports must not find the grader's modules
    serve(socket.socket(fileno=int(sys.argv[1])))
