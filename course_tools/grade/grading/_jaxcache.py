"""JAX's compilation cache, filled by a trusted kernel, shared read-only by the kernels of a run.

Most of a solved notebook's grading time goes to XLA compiling small programs that every submission
of the lesson compiles again: JAX's operations on the grading inputs' shapes, the probes' own
programs, the jitted steps a right answer builds. When a run reaches a lesson's ``fill_after``-th
submission (``--compile-cache-after``, 8 by default), the grader runs the course's own solution
notebook of that lesson (its cells, then one probe per exercise) in a fenced kernel that may write
to a fresh cache folder; the submissions before it compile for themselves. When that kernel has
finished, the folder is made read-only and handed to every later kernel of the lesson: JAX there
reads compiled programs from it (``JAX_COMPILATION_CACHE_DIR``) and never tries to write one
(``JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=inf``); Landlock refuses writes there anyway. No
submission's kernel ever writes to the folder, so no submission can change what another one runs.

What a student's kernel can read there is compiled code of the course's answers, which it can read
already: ``course_lib.checks`` holds every exercise's reference. A cached program is the one XLA
compiles for the same module, options and backend, so grades do not depend on the cache: it is
used only where Landlock confines kernels (unconfined, a kernel could write to the folder), and a
lesson whose solution notebook is not next to ``course_lib`` (or whose filling kernel failed, or
compiled nothing, as lesson 01's) gets no cache.
"""

import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..sandbox import KernelCache

Fill = Callable[[str, KernelCache], Awaitable[bool]]
"""Runs a lesson's solution notebook in a kernel that writes to the given cache; ``True`` when it
answered every exercise. The grader supplies it (``Context.fill_cache``)."""


@dataclass
class SharedCache:
    """One cache folder per lesson under ``root``, each filled once, at the lesson's
    ``fill_after``-th submission (0: never); none unless ``enabled``."""

    root: Path
    enabled: bool
    fill_after: int = 8
    _ready: dict[str, KernelCache | None] = field(default_factory=dict)
    _locks: dict[str, threading.Lock] = field(default_factory=dict)
    _seen: dict[str, int] = field(default_factory=dict)
    _counting: threading.Lock = field(default_factory=threading.Lock)

    async def for_lesson(self, lesson: str, fill: Fill) -> KernelCache | None:
        """The read-only cache of ``lesson``, or ``None`` when this submission goes without one.

        The ``fill_after``-th submission of a lesson fills the cache (``fill`` runs the solution
        first, about one notebook's time); earlier ones, and those that arrive while it fills,
        compile for themselves and wait for nothing. A small run never pays for a fill it cannot
        repay.
        """
        if not self.enabled or self.fill_after < 1:
            return None
        with self._counting:
            self._seen[lesson] = seen = self._seen.get(lesson, 0) + 1
            lock = self._locks.setdefault(lesson, threading.Lock())
        if lesson in self._ready:
            return self._ready[lesson]
        if seen < self.fill_after or not lock.acquire(blocking=False):
            return None
        try:
            if lesson not in self._ready:
                self._ready[lesson] = await self._fill(lesson, fill)
        finally:
            lock.release()
        return self._ready[lesson]

    async def fill_now(self, lesson: str, fill: Fill) -> KernelCache | None:
        """Fill the cache of ``lesson`` now, with ``fill``, unless it has one or caching is off
        (then ``fill`` is not called). The canary does this: its kernel grades the solution."""
        if not self.enabled or self.fill_after < 1:
            return None
        with self._counting:
            lock = self._locks.setdefault(lesson, threading.Lock())
        if lesson not in self._ready and lock.acquire(blocking=False):
            try:
                self._ready[lesson] = await self._fill(lesson, fill)
            finally:
                lock.release()
        return self._ready.get(lesson)

    async def _fill(self, lesson: str, fill: Fill) -> KernelCache | None:
        """A fresh folder filled by ``fill``, made read-only; none when the fill failed or the
        lesson compiled nothing."""
        self.root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix=f"jax-cache-{lesson}-", dir=self.root))
        answered = await fill(lesson, KernelCache(str(folder), writable=True))
        if not answered or not any(folder.iterdir()):  # none: the lesson compiles nothing
            shutil.rmtree(folder, ignore_errors=True)
            return None
        for entry in folder.iterdir():
            entry.chmod(
                0o444
            )  # besides Landlock's rule; the folder stays removable with the scratch
        return KernelCache(str(folder), writable=False)
