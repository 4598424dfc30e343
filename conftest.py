"""Strict JAX for every test and doctest (rank promotion raises), and `jax`/`jnp` in every
doctest's namespace, as in the library's docstring examples; 8 CPU devices, as lesson 07 has;
one persistent compilation cache for every test process; no workshop room; nbval's kernels on unix
sockets."""

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from fast_compiles import only_the_cpu_backend, start_the_backend_with_fast_compiles

from course_lib import checks

# A room the developer joined (course_lib.checks.join_room keeps it for 12 hours) must not hear the
# tests' checks, nor add its notice to what they print: neither here nor in the kernels, graders
# and nbval runs the tests start, which inherit this. The room's own tests join on purpose.
os.environ["COURSE_ROOM"] = "off"

jax.config.update("jax_numpy_rank_promotion", "raise")
# The same 8 simulated CPU devices as lesson 07 (set before anything starts a backend).
jax.config.update("jax_num_cpu_devices", 8)

# XLA compiling is about half the time of the in-process tests, and much of it repeats: the same
# program in different tests and in both pytest processes, and all of it again in the next run.
# Every test process (not the kernels or graders that tests start) shares one compilation cache in
# build/, kept between runs. A cached program is the one XLA would compile for the same module,
# options, backend and jaxlib, so no result changes, and JAX still reports a compilation for each
# program it loads from the cache, so no compile count changes either (`course_lib.count_compiles`).
COMPILATION_CACHE = Path(__file__).parent / "build" / "jax-cache"
COMPILATION_CACHE_LIMIT = 1 << 30  # bytes; past this the next run starts the cache again
jax.config.update("jax_compilation_cache_dir", str(COMPILATION_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

# On a machine whose JAX has only its CPU backend, the test processes compile without XLA's costly
# optimisation; what they start keeps XLA's defaults (tests/fast_compiles.py).
if only_the_cpu_backend():
    start_the_backend_with_fast_compiles()


def pytest_configure(config: pytest.Config) -> None:
    """nbval's kernels on unix sockets; then, in the main process only, before any worker starts:
    keep the cache under its limit."""
    if os.name == "posix" and config.pluginmanager.hasplugin("nbval"):
        _nbval_kernels_on_unix_sockets()
    if hasattr(config, "workerinput") or not COMPILATION_CACHE.is_dir():
        return
    size = sum(entry.stat().st_size for entry in COMPILATION_CACHE.iterdir())
    if size > COMPILATION_CACHE_LIMIT:
        shutil.rmtree(COMPILATION_CACHE, ignore_errors=True)


def _nbval_kernels_on_unix_sockets() -> None:
    """Each nbval kernel listens on unix sockets in a new private folder, as the grader's and
    ``make notebooks``' kernels do (tests/kernel_support.py says why)."""
    import nbval.kernel
    from kernel_support import UnixSocketKernelManager

    nbval.kernel.KernelManager = UnixSocketKernelManager


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    doctest_namespace["jax"] = jax
    doctest_namespace["jnp"] = jnp


@pytest.fixture
def fresh_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Checks print rather than raise (``CI`` and ``COURSE_STRICT_CHECKS`` unset), and no hint
    was shown yet. A module of self-check tests asks for it in every test with
    ``pytestmark = pytest.mark.usefixtures("fresh_checks")``."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("COURSE_STRICT_CHECKS", raising=False)
    checks.set_strict(None)
    checks.reset_hints()
    yield
    checks.set_strict(None)
    checks.reset_hints()


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the checks display, as if they ran in a notebook: the list fills as they display."""
    displayed: list[Any] = []
    monkeypatch.setattr("course_lib.checks._selfcheck.in_notebook", lambda: True)
    monkeypatch.setattr("IPython.display.display", lambda *objects: displayed.extend(objects))
    return displayed
