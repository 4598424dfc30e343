"""Warm kernels (sandbox/_forkserver.py, _forked.py): a kernel forked from the run's
process that has imported JAX sees what a freshly started kernel sees, holds nothing of the server,
ends with it, and the grades are the same; when the server cannot serve, kernels start fresh."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
from test_grade import NO_CANARY, add_cell, exercise_version, grade, replace_body, solution, write

from course_tools.grade.sandbox import KernelCache, kernel_env
from course_tools.grade.sandbox._forked import ForkServer
from course_tools.grade.sandbox._kernel import Confinement, Limits, Sandbox
from course_tools.grade.sandbox._launcher import landlock_abi, sandbox_level

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the fork server and its launcher are Linux only"
)
LEVEL = sandbox_level() if sys.platform.startswith("linux") else {}

# What a kernel can observe of how it was started, written to REPORT as JSON.
LOOK_AROUND = """
import json, os, random, resource, sys, tempfile
import course_lib.checks._lesson02, jax, numpy
seen = {
    "cwd": os.getcwd(),
    "argv": sys.argv,
    "path": sys.path,
    "environment": dict(os.environ),
    "descriptors": sorted(
        os.readlink(link).split(":[")[0] if not os.readlink(link).startswith("anon_inode")
        else os.readlink(link)
        for link in (f"/proc/self/fd/{fd}" for fd in os.listdir("/proc/self/fd"))
        if os.path.exists(link)
    ),
    "name": __name__,
    "main": type(sys.modules["__main__"]).__name__,
    "flags": str(sys.flags),
    "hash": hash("pytree"),
    "limits": [resource.getrlimit(r) for r in (resource.RLIMIT_CORE, resource.RLIMIT_FSIZE)],
    "session leader": os.getsid(0) == os.getpgid(0),
    "temporary": tempfile.gettempdir(),
    "stdout": type(sys.stdout).__name__,
    "x64": jax.config.jax_enable_x64,
    "platforms": jax.config.jax_platforms,
    "cache folder": jax.config.jax_compilation_cache_dir,
    "cache threshold": jax.config.jax_persistent_cache_min_compile_time_secs,
    "devices": str(jax.devices()),
    "course_lib": [course_lib.__file__, course_lib.checks._lesson02.__file__],
    "sum": float(jax.jit(lambda x: (x * x).sum())(jax.numpy.arange(4.0))),
    "random": [random.random(), float(numpy.random.rand()), os.urandom(8).hex()],
}
open(REPORT, "w").write(json.dumps(seen))
"""


def confinement() -> Confinement:
    """As the grader confines kernels here: its own sockets closed (so on unix sockets) where
    seccomp allows it."""
    return Confinement(landlock=landlock_abi() >= 1, sockets=LEVEL.get("network") == "closed")


async def look(base: Path, forks: ForkServer | None, **sandbox: Any) -> tuple[dict, Sandbox]:
    """What a kernel started with ``forks`` (None: fresh) reports, with its workdir as ``W``."""
    workdir = Path(tempfile.mkdtemp(dir=base))
    report = base / f"{workdir.name}.json"
    kernel = Sandbox(
        str(workdir),
        kernel_env(workdir),
        Limits(),
        confinement(),
        writable=[str(base)],
        forks=forks,
        **sandbox,
    )
    await kernel.start()
    try:
        result = await kernel.run(f"REPORT = {str(report)!r}\n" + LOOK_AROUND, 60)
        assert result.status == "ok", result
    finally:
        await kernel.stop()
    text = report.read_text().replace(str(workdir), "W")
    return json.loads(text), kernel


def test_a_forked_kernel_sees_what_a_fresh_kernel_sees(forks: ForkServer, tmp_path: Path) -> None:
    cache_folder = tmp_path / "cache"
    cache_folder.mkdir()
    cache = KernelCache(str(cache_folder), writable=False)

    async def both() -> tuple[tuple[dict, Sandbox], tuple[dict, Sandbox]]:
        return await look(tmp_path, None, cache=cache), await look(tmp_path, forks, cache=cache)

    (fresh, fresh_kernel), (forked, forked_kernel) = asyncio.run(both())
    assert (fresh_kernel.forked, forked_kernel.forked) == (False, True)
    random_fresh, random_forked = fresh.pop("random"), forked.pop("random")
    assert random_fresh != random_forked
    for seen in (fresh, forked):
        seen["argv"][2] = "CONNECTION_FILE"  # each kernel has its own
    # Nothing of the server's (its socket, a pidfd) is open in the kernel: the fresh kernel has
    # every kind of descriptor the forked one has, as often (here it has one eventfd more, opened
    # while ipykernel starts: importing JAX in a kernel opens none).
    assert not Counter(forked.pop("descriptors")) - Counter(fresh.pop("descriptors"))
    assert forked == fresh
    assert forked["cache folder"] == str(cache_folder) and forked["cache threshold"] == float("inf")


def test_forked_kernels_draw_their_own_random_numbers(forks: ForkServer, tmp_path: Path) -> None:
    async def two() -> list[dict]:
        return [(await look(tmp_path, forks))[0] for _ in range(2)]

    first, second = asyncio.run(two())
    assert all(a != b for a, b in zip(first["random"], second["random"], strict=True))


def test_a_kernel_with_another_environment_starts_fresh(forks: ForkServer, tmp_path: Path) -> None:
    assert asyncio.run(forks.ready())
    workdir = tmp_path / "w"
    workdir.mkdir()
    env = kernel_env(workdir)
    launcher = ["python", "-I", "-S", "launcher"]
    assert not forks.accepts(launcher, env)  # not a launcher command
    kernel = Sandbox(
        str(workdir),
        {**env, "XLA_FLAGS": "--xla_dump_to=/tmp"},
        Limits(),
        confinement(),
        forks=forks,
    )

    async def start_and_stop() -> None:
        await kernel.start()
        assert (await kernel.run("x = 1", 30)).status == "ok"
        await kernel.stop()

    asyncio.run(start_and_stop())
    assert not kernel.forked


def test_hanging_up_ends_the_server_and_every_kernel(tmp_path: Path) -> None:
    server = ForkServer(kernel_env(tmp_path), tmp_path)
    workdir = tmp_path / "w"
    workdir.mkdir()
    kernel = Sandbox(str(workdir), kernel_env(workdir), Limits(), confinement(), forks=server)

    async def start() -> None:
        await kernel.start()
        assert (await kernel.run("x = 1", 30)).status == "ok"

    asyncio.run(start())
    assert kernel.forked
    pids = [kernel.pid, kernel.kernel_pid]
    server.close()  # the grader ends without stopping its kernel
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pids if alive(pid)]
    assert server.process.poll() is not None
    asyncio.run(kernel.stop())


def alive(pid: int | None) -> bool:
    try:
        return pid is not None and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_dead_server_leaves_fresh_kernels(tmp_path: Path) -> None:
    server = ForkServer(kernel_env(tmp_path), tmp_path)
    assert asyncio.run(server.ready())
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait()
    workdir = tmp_path / "w"
    workdir.mkdir()
    kernel = Sandbox(str(workdir), kernel_env(workdir), Limits(), confinement(), forks=server)

    async def start_and_stop() -> str:
        await kernel.start()
        status = (await kernel.run("x = 1", 30)).status
        await kernel.stop()
        return status

    assert asyncio.run(start_and_stop()) == "ok"
    assert not kernel.forked
    server.close()


def test_grades_and_feedback_are_the_same_warm_or_fresh(tmp_path: Path) -> None:
    wrong = replace_body(solution(), "01.count_params", "    return 1")
    environment = add_cell(solution(), 2, "import os\nos.environ['COURSE_NOTE'] = 'set by me'\n")
    folder = tmp_path / "class"
    for student, notebook in [
        ("ann", solution()),
        ("ben", exercise_version()),
        ("cy", wrong),
        ("dee", environment),
    ]:
        write(folder, student, notebook)
    outputs = {}
    for warm in ("on", "off"):
        out = tmp_path / f"out-{warm}"
        done = grade([folder], out, "--quiet", "--jobs", "2", "--warm-kernels", warm, NO_CANARY)
        assert done.returncode == 0, done.stderr
        outputs[warm] = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert outputs["on"] == outputs["off"]
    assert len(outputs["on"]) > 4
