"""The two frozen values a run is graded with: what the grades depend on, and how the run goes."""

from dataclasses import dataclass
from typing import Any

import course_lib

from ..sandbox import Limits, SandboxLevel


@dataclass(frozen=True)
class Settings:
    """What the grades depend on, fixed before the first notebook: recorded in the gradebook; a
    journal, a record or a Dask worker with other settings is refused.

    >>> Settings(seed=3, sandbox=SandboxLevel.probe(enabled=False)).recorded()["seed"]
    3
    """

    sandbox: SandboxLevel
    seed: int = 0
    forbid: tuple[str, ...] = ()
    cell_timeout: float = 30.0
    notebook_timeout: float = 300.0
    memory_mb: int = 2048

    @property
    def limits(self) -> Limits:
        """One kernel's limits."""
        return Limits(cell_seconds=self.cell_timeout, memory_bytes=self.memory_mb * 2**20)

    def recorded(self) -> dict[str, Any]:
        """The settings as ``gradebook.json`` and the journal record them."""
        return {
            "course_lib": course_lib.__version__,
            "seed": self.seed,
            "forbidden_packages": list(self.forbid),
            "cell_timeout_s": self.cell_timeout,
            "notebook_timeout_s": self.notebook_timeout,
            "memory_mb": self.memory_mb,
            "sandbox": self.sandbox.as_dict(),
        }


@dataclass(frozen=True)
class RunOptions:
    """How a run goes; the grades are the same whatever these are."""

    jobs: int = 1
    quiet: bool = False
    # A lesson's shared compilation cache is filled at its N-th submission (0: no cache).
    cache_after: int = 8
    # True: confined kernels are forked from one process of the run that has imported JAX
    # (``--warm-kernels off``: each starts a fresh Python).
    warm_kernels: bool = True
