"""The confined kernel: hostile submissions graded in a real class run, each attack refused or
cleaned up, while the batch completes and honest students keep their full marks.

Each hostile notebook is the lesson 01 solution with one cell of attacks added after the imports.
The attacks record every one that was *not* refused with ``PermissionError`` in ``LEAKS``, and a
wrapper around ``count_params`` returns a wrong answer when ``LEAKS`` is not empty: full marks mean
that everything was refused inside the kernel, and the files and processes are checked from outside.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from test_grade import (
    IDS,
    NAME,
    ROOT,
    add_cell,
    by_student,
    cell_of,
    grade,
    solution,
    statuses,
    tree_hashes,
    write,
)

from course_tools.grade.sandbox._launcher import NO_LANDLOCK_ENV, NO_SOCKET_FILTER_ENV, landlock_abi

needs_landlock = pytest.mark.skipif(
    landlock_abi() < 6,
    reason="needs Linux with Landlock ABI 6+ (filesystem, TCP and signal scoping)",
)

ALL_PASSED = dict.fromkeys(IDS, "passed")
# Nothing here relies on a time limit, and a loaded machine can take seconds to import JAX.
GENEROUS = ["--timeout", "60", "--notebook-timeout", "600", "--memory-mb", "2048"]
# on the command line of every process a notebook leaves
MARKER = f"course-sandbox-test-{uuid.uuid4().hex}"
PRELUDE = """
import os, signal, socket, subprocess, sys, time
from glob import glob

LEAKS = ["the attacks did not run to the end"]  # removed by the last line of the cell

def attempt(what, action):
    try:
        action()
    except PermissionError:
        return
    LEAKS.append(what)
"""
WRAPPER = """
_honest_count_params = count_params

def count_params(tree):
    return -1 if LEAKS else _honest_count_params(tree)
"""


def hostile(attacks: str) -> nbformat.NotebookNode:
    """The solution with ``attacks`` run after the imports; ``count_params`` fails if any attack got
    through."""
    nb = add_cell(
        solution(), 2, PRELUDE + attacks + "\nLEAKS.remove('the attacks did not run to the end')\n"
    )
    index = nb.cells.index(cell_of(nb, "01.count_params"))
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(WRAPPER))
    return nb


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers() -> list[str]:
    """Command lines of live processes that carry this run's marker."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if MARKER in line and state != "Z":
                found.append(f"{entry.name}: {line}")
    return found


def run_grader(
    paths: list[Path], out: Path, env: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    return grade(paths, out, *extra, env=env, timeout=900)


def grader_env(base: Path, **extra: str) -> dict[str, str]:
    """The grader's environment with its own home and temporary folder, both made by the test."""
    for name in ("home", "tmp"):
        (base / name).mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in (NO_LANDLOCK_ENV, NO_SOCKET_FILTER_ENV)}
    return {**env, "HOME": str(base / "home"), "TMPDIR": str(base / "tmp"), **extra}


# --- one class of hostile and honest notebooks ---------------------------------------------------


class Scene:
    """Where everything of the hostile class run lies, and what the grader did."""

    def __init__(self, base: Path) -> None:
        self.base, self.folder, self.out = base, base / "class", base / "out"
        self.canaries = base / "canaries"  # an unrelated folder the test made
        self.victim = (
            base / "tmp" / "someone-else"
        )  # another user's work in the grader's temp folder
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        # UDP and unix sockets: Landlock does not cover them; the kernel's socket filter does.
        self.datagrams = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.datagrams.bind(("127.0.0.1", 0))
        self.udp_port = self.datagrams.getsockname()[1]
        self.unix_path = str(base / "grader.sock")  # outside every scratch folder
        self.abstract = f"\0course-grade-test-{os.getpid()}"
        self.unix_listeners: list[socket.socket] = []
        for address in (self.unix_path, self.abstract):
            listener = socket.socket(socket.AF_UNIX)
            listener.bind(address)
            listener.listen(8)
            self.unix_listeners.append(listener)

    def guarded(self) -> list[Path]:
        """Files that no notebook may change."""
        return [
            self.canaries / "canary.txt",
            self.victim / "notes.ipynb",
            self.base / "home" / "canary.txt",
            self.out / "canary.txt",
        ]


def _attacks(scene: Scene) -> dict[str, str]:
    honest = scene.folder / "honest_a" / NAME
    targets = [*scene.guarded(), scene.folder / "honest_b" / NAME]
    new_files = [p.with_name("planted.py") for p in targets]
    writes = "\n".join(
        f"attempt('write {p}', lambda: open({str(p)!r}, 'w').write('gotcha'))"
        for p in targets + new_files
    )
    return {
        "writer": writes + "\nfor p in glob('../*/*.ipynb') + glob('../../*/*.ipynb') + "
        "glob('../../../**/*.ipynb', recursive=True):\n"
        "    attempt('glob ' + p, lambda: open(p, 'w'))\n"
        "attempt('mkdir in the class folder', lambda: "
        f"os.mkdir({str(scene.folder / 'planted')!r}))\n"
        f"attempt('rename a canary', lambda: os.rename({str(scene.canaries / 'canary.txt')!r}, "
        "'stolen.txt'))\n",
        "reader": f"attempt('read a classmate', lambda: open({str(honest)!r}).read())\n"
        f"attempt('read solutions', lambda: open({str(ROOT / 'solutions' / NAME)!r}).read())\n"
        "attempt('read the grader', lambda: "
        f"open({str(ROOT / 'course_tools' / 'grade' / '_cli.py')!r}).read())\n"
        "try:\n"
        "    import course_tools.grade\n"
        "    LEAKS.append('import the grader')\n"
        "except (ImportError, PermissionError):\n"
        "    pass\n"
        f"attempt('list the checkout', lambda: os.listdir({str(ROOT)!r}))\n"
        f"attempt('list the class', lambda: os.listdir({str(scene.folder)!r}))\n"
        f"attempt('list the output folder', lambda: os.listdir({str(scene.out)!r}))\n"
        "attempt('read the home canary', lambda: "
        f"open({str(scene.base / 'home' / 'canary.txt')!r}).read())\n"
        "import course_lib.checks._lesson01 as checks  # the checks must stay importable and "
        "readable\n"
        "open(checks.__file__).read()\n",
        "network": "attempt('connect', lambda: socket.create_connection(('127.0.0.1', "
        f"{scene.port}), timeout=5))\n"
        f"attempt('connect ::1', lambda: socket.create_connection(('localhost', {scene.port}), "
        "timeout=5))\n"
        f"CURL = subprocess.run(['curl', '-s', '-m', '5', 'http://127.0.0.1:{scene.port}/'], "
        "capture_output=True).returncode\n"
        "if CURL != 7:  # 7: could not connect\n"
        "    LEAKS.append(f'curl exited {CURL}')\n"
        "attempt('bind a port', lambda: socket.socket().bind(('127.0.0.1', 0)))\n"
        "attempt('send UDP', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto("
        f"b'leak', ('127.0.0.1', {scene.udp_port})))\n"
        "attempt('make a UDP socket over IPv6', lambda: "
        "socket.socket(socket.AF_INET6, socket.SOCK_DGRAM))\n"
        "attempt('make a raw socket', lambda: "
        "socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))\n"
        "attempt('make a packet socket', lambda: "
        "socket.socket(socket.AF_PACKET, socket.SOCK_RAW))\n"
        "attempt('connect a named unix socket', lambda: "
        f"socket.socket(socket.AF_UNIX).connect({scene.unix_path!r}))\n"
        "attempt('connect an abstract unix socket', lambda: "
        f"socket.socket(socket.AF_UNIX).connect({scene.abstract!r}))\n"
        "attempt('send a unix datagram', lambda: "
        f"socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'leak', {scene.unix_path!r}))\n",
        "signals": "launcher = os.getppid()\n"
        "def parent(pid):\n"
        "    return int(open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "grader = parent(launcher)\n"
        "if b'_forkserver' in open(f'/proc/{grader}/cmdline', 'rb').read():  # a warm kernel\n"
        "    attempt('kill the fork server', lambda: os.kill(grader, signal.SIGKILL))\n"
        "    grader = parent(grader)\n"
        "for fd in map(int, os.listdir('/proc/self/fd')):\n"
        "    try:\n"
        "        if not os.readlink(f'/proc/self/fd/{fd}').startswith('socket:'):\n"
        "            continue\n"
        "        held = socket.socket(fileno=os.dup(fd))\n"
        "    except OSError:  # the listing's own descriptor, closed since\n"
        "        continue\n"
        "    if held.family == socket.AF_UNIX and held.type == socket.SOCK_SEQPACKET:\n"
        "        LEAKS.append('the fork server socket is open in the kernel')\n"
        "    held.close()\n"
        f"attempt('kill the grader', lambda: os.kill(grader, signal.SIGKILL))\n"
        f"attempt('kill the launcher', lambda: os.kill(launcher, signal.SIGKILL))\n"
        f"attempt('signal the test', lambda: os.kill({os.getpid()}, 0))\n"
        "import ctypes\n"
        "def trace(pid):  # PTRACE_SEIZE: attaches without stopping, were it allowed\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    if libc.ptrace(0x4206, pid, None, None) != 0:\n"
        "        raise OSError(ctypes.get_errno(), 'ptrace')\n"
        "attempt('trace the grader', lambda: trace(grader))\n",
        "privileges": "import resource\n"
        "def unlimited():\n"
        "    try:\n"
        "        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, "
        "resource.RLIM_INFINITY))\n"
        "    except ValueError as error:  # how Python reports EPERM here\n"
        "        raise PermissionError(str(error)) from None\n"
        "attempt('lift the memory limit', unlimited)\n"
        "attempt('open a raw socket', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, "
        "socket.IPPROTO_ICMP))\n"
        "attempt('read /etc/shadow', lambda: open('/etc/shadow').read())\n",
        "escaper": f"sleeper = [sys.executable, '-c', 'import time; time.sleep(300)', {MARKER!r}]\n"
        "detached = subprocess.Popen(sleeper, start_new_session=True)\n"
        "reader, writer = os.pipe()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    grandchild = os.fork()\n"
        "    if grandchild == 0:\n"
        "        os.execv(sys.executable, sleeper)\n"
        "    os.write(writer, str(grandchild).encode())\n"
        "    os._exit(0)\n"
        "orphan = int(os.read(reader, 32))\n"
        "time.sleep(0.5)\n"
        "os.kill(orphan, 0)  # the double-forked sleeper is alive, its parent gone\n"
        "if detached.poll() is not None:\n"
        "    LEAKS.append('the setsid sleeper did not start')\n",
    }


LESSON02 = next((ROOT / "solutions").glob("02_*.ipynb"))
# Lesson 02 compiles programs (lesson 01 compiles none): the cache its solution fills is not empty.
CACHE_ATTACKS = """
import jax, jax.numpy as jnp
folder = os.environ.get('JAX_COMPILATION_CACHE_DIR', '')
entries = sorted(glob(os.path.join(folder, '*')))
if not folder or not entries:
    LEAKS.append('no filled compilation cache was shared with this kernel')
else:
    attempt('overwrite a cache entry', lambda: open(entries[0], 'wb').write(b'poison'))
    attempt('append to a cache entry', lambda: open(entries[0], 'ab').write(b'poison'))
    attempt('plant a cache entry', lambda: open(os.path.join(folder, 'x-cache'), 'wb'))
    attempt('remove a cache entry', lambda: os.remove(entries[0]))
    attempt('rename a cache entry', lambda: os.rename(entries[0], entries[0] + '.old'))
    attempt('make a folder in the cache', lambda: os.mkdir(os.path.join(folder, 'x')))
    # JAX itself told to write every new program: the write is refused, the program still runs.
    jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)
    if int(jax.jit(lambda x: x * 7 + 3)(jnp.arange(3))[2]) != 17:
        LEAKS.append('a program compiled beside the read-only cache ran wrong')
    if sorted(glob(os.path.join(folder, '*'))) != entries:
        LEAKS.append('the compilation cache changed')
"""
CACHE_WRAPPER = """
_honest_sgd_step = sgd_step

def sgd_step(params, grads, lr):
    return jax.tree.map(lambda p: p + 1, params) if LEAKS else _honest_sgd_step(params, grads, lr)
"""


def cache_attacker() -> nbformat.NotebookNode:
    """Lesson 02's solution attacking the shared compilation cache; ``sgd_step`` fails on a leak."""
    nb = nbformat.read(LESSON02, as_version=4)
    index = nb.cells.index(cell_of(nb, "02.sgd_step"))
    done = "\nLEAKS.remove('the attacks did not run to the end')\n"
    nb.cells.insert(index + 1, nbformat.v4.new_code_cell(PRELUDE + CACHE_ATTACKS + done))
    nb.cells.insert(index + 2, nbformat.v4.new_code_cell(CACHE_WRAPPER))
    return nb


def _fork_bomb() -> str:
    return (
        "import subprocess, time\n"
        "children = []\n"
        "for _ in range(1500):  # bounded: even uncapped it stops here\n"
        "    try:\n"
        f"        children.append(subprocess.Popen(['sh', '-c', 'sleep 120', {MARKER!r}]))\n"
        "    except OSError:\n"
        "        time.sleep(0.005)\n"
    )


# The scene graded once: the scene, the grader's run, the files changed and created, what is left.
SceneRun = tuple[Scene, subprocess.CompletedProcess[str], dict[str, list[str]], list[str]]


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SceneRun]:
    scene = Scene(tmp_path_factory.mktemp("sandbox"))
    env = grader_env(scene.base)
    for path in scene.guarded():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("original")
    write(scene.folder, "honest_a", solution())
    write(scene.folder, "honest_b", solution())
    for student, attacks in _attacks(scene).items():
        write(scene.folder, student, hostile(attacks))
    write(scene.folder, "fork_bomb", add_cell(solution(), 2, _fork_bomb()))
    write(scene.folder, "cache", cache_attacker(), LESSON02.name)
    before = {**tree_hashes(scene.folder), **{str(p): digest(p) for p in scene.guarded()}}
    try:
        result = run_grader(
            [scene.folder], scene.out, env, *GENEROUS, "--jobs", "2", "--compile-cache-after", "1"
        )
        left = leftovers()
    finally:
        scene.listener.setblocking(False)
    after = {**tree_hashes(scene.folder), **{str(p): digest(p) for p in scene.guarded()}}
    changed = sorted(k for k in before if before[k] != after.get(k))
    yield scene, result, {"changed": changed, "new": sorted(set(after) - set(before))}, left
    for held in (scene.listener, scene.datagrams, *scene.unix_listeners):
        held.close()


@needs_landlock
def test_the_batch_completes_and_records_the_sandbox(scene: SceneRun) -> None:
    _, result, _, _ = scene
    assert result.returncode == 0, result.stderr[-3000:]
    book = json.loads((scene[0].out / "gradebook.json").read_text())
    level = book["grader"]["sandbox"]
    assert level["sandbox"] == "landlock" and level["filesystem"] and level["signals"], level
    assert level["network"] == "closed" and level["processes"] == "subreaper"
    assert "warning" not in result.stderr


@needs_landlock
@pytest.mark.parametrize(
    "student",
    [
        "honest_a",
        "honest_b",
        "writer",
        "reader",
        "network",
        "signals",
        "privileges",
        "escaper",
    ],
)
def test_every_attack_is_refused_and_full_marks_stay(scene: SceneRun, student: str) -> None:
    entry = by_student(scene[0].out)[student]
    assert statuses(entry) == ALL_PASSED, json.dumps(entry, indent=1)
    assert entry["points"] == 8 and not entry["notes"], entry["notes"]


@needs_landlock
def test_the_shared_compilation_cache_is_read_only(scene: SceneRun) -> None:
    entry = by_student(scene[0].out)["cache"]
    assert entry["lesson"] == "02" and entry["status"] == "graded", entry
    assert all(e["status"] == "passed" for e in entry["exercises"]), json.dumps(entry, indent=1)
    assert entry["points"] == entry["max_points"] and not entry["notes"], entry["notes"]


@needs_landlock
def test_no_file_outside_the_scratch_folder_was_touched(scene: SceneRun) -> None:
    files = scene[2]
    assert files["changed"] == [] and files["new"] == [], files
    assert not (scene[0].folder / "planted").exists()
    assert (
        sorted(scene[0].base.rglob("planted*")) == []
        and sorted(scene[0].base.rglob("stolen*")) == []
    )
    assert (scene[0].canaries / "canary.txt").read_text() == "original"
    assert sorted(p.name for p in scene[0].out.iterdir()) == [
        "canary.txt",
        "feedback",
        "gradebook.csv",
        "gradebook.json",
        "report.html",
    ]


@needs_landlock
def test_the_loopback_listener_saw_no_connection(scene: SceneRun) -> None:
    with pytest.raises(BlockingIOError):
        scene[0].listener.accept()


@needs_landlock
def test_no_datagram_and_no_unix_connection_arrived(scene: SceneRun) -> None:
    scene[0].datagrams.setblocking(False)
    with pytest.raises(BlockingIOError):
        scene[0].datagrams.recvfrom(64)
    for listener in scene[0].unix_listeners:
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):
            listener.accept()


@needs_landlock
def test_no_process_outlives_its_grading(scene: SceneRun) -> None:
    assert scene[3] == [], scene[3]


@needs_landlock
def test_a_fork_bomb_is_capped_and_the_rest_is_graded(scene: SceneRun) -> None:
    entry = by_student(scene[0].out)["fork_bomb"]
    assert statuses(entry) == ALL_PASSED, json.dumps(entry, indent=1)
    assert any("started more than 512 processes and threads" in note for note in entry["notes"]), (
        entry["notes"]
    )


# --- without Landlock: graded, with a warning; or refused -----------------------------------------


def test_without_landlock_grading_runs_with_a_warning(tmp_path: Path) -> None:
    canary = tmp_path / "canary.txt"
    canary.write_text("original")
    folder = tmp_path / "class"
    write(folder, "honest", solution())
    seen = tmp_path / "cache-seen.txt"
    attack = (
        f"open({str(canary)!r}, 'w').write('gotcha')\n"
        f"import os; open({str(seen)!r}, 'w')"
        ".write(os.environ.get('JAX_COMPILATION_CACHE_DIR', '-'))"
    )
    write(folder, "writer", add_cell(solution(), 2, attack))
    env = grader_env(tmp_path, **{NO_LANDLOCK_ENV: "1"})
    result = run_grader([folder], tmp_path / "out", env, *GENEROUS, "--jobs", "2", "--quiet")
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stderr.startswith(
        "course-grade: warning: not sandboxed: Landlock was turned off"
    ), result.stderr
    level = json.loads((tmp_path / "out" / "gradebook.json").read_text())["grader"]["sandbox"]
    assert level["sandbox"] == "none" and level["reason"].startswith("not sandboxed: "), level
    assert by_student(tmp_path / "out")["honest"]["points"] == 8
    assert (
        canary.read_text() == "gotcha"
    )  # unconfined, the same write that the sandbox refuses gets through
    assert seen.read_text() == "-"  # so no compilation cache is shared: a kernel could write to it


def test_require_sandbox_refuses_when_landlock_is_missing(tmp_path: Path) -> None:
    write(tmp_path / "class", "honest", solution())
    env = grader_env(tmp_path, **{NO_LANDLOCK_ENV: "1"})
    result = run_grader([tmp_path / "class"], tmp_path / "out", env, "--require-sandbox")
    assert result.returncode == 2
    assert "--require-sandbox was given but the kernels cannot be confined" in result.stderr
    assert not (tmp_path / "out" / "gradebook.json").exists()


@needs_landlock
def test_require_sandbox_refuses_when_sockets_cannot_be_closed(tmp_path: Path) -> None:
    write(tmp_path / "class", "honest", solution())
    env = grader_env(tmp_path, **{NO_SOCKET_FILTER_ENV: "1"})
    result = run_grader([tmp_path / "class"], tmp_path / "out", env, "--require-sandbox")
    assert result.returncode == 2, result.stderr
    assert "not every socket (network: tcp)" in result.stderr
    assert not (tmp_path / "out" / "gradebook.json").exists()


def test_sandbox_off_runs_unconfined_and_says_so(tmp_path: Path) -> None:
    write(tmp_path / "class", "honest", solution())
    env = grader_env(tmp_path)
    refused = run_grader(
        [tmp_path / "class"], tmp_path / "out", env, "--sandbox", "off", "--require-sandbox"
    )
    assert refused.returncode == 2 and "turned off with --sandbox off" in refused.stderr
    result = run_grader(
        [tmp_path / "class"], tmp_path / "out", env, *GENEROUS, "--sandbox", "off", "--quiet"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warning: not sandboxed: turned off with --sandbox off" in result.stderr
    assert (
        json.loads((tmp_path / "out" / "gradebook.json").read_text())["grader"]["sandbox"][
            "sandbox"
        ]
        == "off"
    )
    assert by_student(tmp_path / "out")["honest"]["points"] == 8


# --- the fenced kernel on its own: the process cap with a small limit, and the grader's backstop --


def _spawner(count: int) -> str:
    return (
        "import subprocess, time\n"
        "children = []\n"
        f"for _ in range({count}):\n"
        "    try:\n"
        f"        children.append(subprocess.Popen(['sleep', '60', {MARKER!r}]))\n"
        "    except OSError:\n"
        "        time.sleep(0.005)\n"
        "time.sleep(2)\n"
    )


def _in_sandbox(
    tmp_path: Path,
    limits_tasks: int,
    cells: list[str],
    before_stop: Callable[[Any], object] | None = None,
    memory_bytes: int = 2 * 2**30,
) -> list:
    import asyncio

    from course_tools.grade.sandbox import kernel_env
    from course_tools.grade.sandbox._kernel import Confinement, Limits, Sandbox

    async def scenario() -> list:
        limits = Limits(tasks=limits_tasks, memory_bytes=memory_bytes)
        sandbox = Sandbox(str(tmp_path), kernel_env(tmp_path), limits, Confinement(landlock=True))
        await sandbox.start()
        try:
            results = [await sandbox.run(cell, 120) for cell in cells]
            if before_stop is not None:
                before_stop(sandbox)
        finally:
            await sandbox.stop()
        return results

    return asyncio.run(scenario())


@needs_landlock
@pytest.mark.parametrize("cgroup", [True, False], ids=["pids-cgroup", "watchdog"])
def test_the_process_cap_holds_with_a_small_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup: bool
) -> None:
    from course_tools.grade.sandbox._launcher import PidsCgroup

    if cgroup and PidsCgroup.parent() is None:
        pytest.skip("this machine lets the grader make no pids cgroup; the watchdog case covers it")
    if not cgroup:
        monkeypatch.setattr(PidsCgroup, "_parent", [None])  # as where no pids cgroup can be made
    ok, bomb = _in_sandbox(tmp_path, 64, ["x = 1", _spawner(300)])
    assert ok.status == "ok"
    assert bomb.status == "died" and bomb.reason == "started more than 64 processes and threads", (
        bomb
    )
    assert leftovers() == []


@needs_landlock
def test_a_killed_launcher_leaves_nothing_behind(tmp_path: Path) -> None:
    """The launcher normally ends everything; if it is SIGKILLed anyway, the grader's cgroup sweep
    does."""
    import signal

    from course_tools.grade.sandbox._launcher import PidsCgroup

    if PidsCgroup.parent() is None:
        pytest.skip(
            "the backstop sweep needs a pids cgroup, which this machine does not let the grader "
            "make"
        )
    escape = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', {MARKER!r}], "
        "start_new_session=True)"
    )
    seen: list[list[str]] = []

    def kill_launcher(sandbox: object) -> None:
        import time

        time.sleep(1)
        seen.append(leftovers())
        os.kill(sandbox.pid, signal.SIGKILL)  # type: ignore[attr-defined]  # set once started

    (result,) = _in_sandbox(tmp_path, 512, [escape], kill_launcher)
    assert result.status == "ok"
    assert len(seen[0]) == 1, seen  # the escaped sleeper was running
    assert leftovers() == []


@needs_landlock
def test_an_escaped_child_still_counts_for_the_memory_limit(tmp_path: Path) -> None:
    hog = (
        "[sys.executable, '-c', 'import time; hog = b\\'x\\' * (400 * 2**20); time.sleep(60)', "
        f"{MARKER!r}]"
    )
    escape = (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv(sys.executable, {hog})\n"
        "    os._exit(0)\n"
        "time.sleep(30)\n"
    )
    (result,) = _in_sandbox(tmp_path, 512, [escape], memory_bytes=300 * 2**20)
    assert result.status == "died" and "memory limit" in result.reason, result
    assert leftovers() == []


@needs_landlock
def test_a_grader_killed_outright_takes_its_kernels_with_it(tmp_path: Path) -> None:
    """A SIGKILLed grader (or Dask worker) cannot stop its kernels: each launcher hears of it and
    ends its own."""
    import signal

    import psutil

    script = tmp_path / "grader.py"
    script.write_text(
        "import asyncio, sys, time\n"
        "from pathlib import Path\n"
        "from course_tools.grade.sandbox import kernel_env\n"
        "from course_tools.grade.sandbox._kernel import Confinement, Limits, Sandbox\n"
        "async def main():\n"
        "    folder = Path(sys.argv[1])\n"
        "    sandbox = Sandbox(str(folder), kernel_env(folder), Limits(tasks=512, memory_bytes=2 "
        "* 2**30), Confinement(landlock=True))\n"
        "    await sandbox.start()\n"
        "    await sandbox.run('x = 1', 120)\n"
        "    print(sandbox.pid, flush=True)\n"
        "    time.sleep(300)\n"
        "asyncio.run(main())\n"
    )
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    grader = subprocess.Popen(
        [sys.executable, str(script), str(scratch)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert grader.stdout is not None
        launcher = psutil.Process(int(grader.stdout.readline()))
        kernels = launcher.children(recursive=True)
        assert kernels, "the launcher runs the kernel"
        os.kill(grader.pid, signal.SIGKILL)
        grader.wait(30)
        gone, alive = psutil.wait_procs([launcher, *kernels], timeout=30)
        assert alive == [], f"still running after their grader was killed: {alive}"
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait(30)
        assert grader.stdout is not None
        grader.stdout.close()


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="/proc's children files are Linux's"
)
def test_the_watchdog_finds_grandchildren_as_psutil_does() -> None:
    import psutil

    from course_tools.grade.sandbox._kernel import descendants

    starter = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        try:
            found = descendants(child.pid)
            assert found == [grandchild]
            assert set(found) == {p.pid for p in psutil.Process(child.pid).children(recursive=True)}
            assert {child.pid, grandchild} <= set(descendants(os.getpid()) or [])
        finally:
            for pid in (grandchild, child.pid):
                psutil.Process(pid).kill()
