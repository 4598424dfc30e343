"""Which JAX is running, for the few lesson cells whose API arrived after the course's floor.

The course supports every JAX release from `JAX_FLOOR` on (pyproject.toml says the same, and a test
keeps the two equal). A cell that shows a newer spelling asks `jax_at_least` first, so that it
still runs on the floor.


Importing this module runs `require_supported_jax`: ``course_lib/__init__.py`` imports it first.
"""

from __future__ import annotations

import re

import jax

__all__ = ["JAX_FLOOR", "jax_at_least", "require_supported_jax", "version_tuple"]

JAX_FLOOR = "0.7.1"
_RELEASE = re.compile(r"\d+(?:\.\d+)*")


def version_tuple(version: str) -> tuple[int, ...]:
    """The release numbers at the start of ``version``, for comparing versions.

    >>> version_tuple("0.10.2"), version_tuple("0.9.0.1"), version_tuple("0.11.0.dev20261201")
    ((0, 10, 2), (0, 9, 0, 1), (0, 11, 0))
    """
    match = _RELEASE.match(version)
    if match is None:
        raise ValueError(f"not a release version: {version!r}")
    return tuple(int(part) for part in match.group().split("."))


def jax_at_least(version: str) -> bool:
    """Whether the running JAX is ``version`` or newer.

    >>> jax_at_least(JAX_FLOOR)
    True
    >>> jax_at_least("99.0")
    False
    """
    return version_tuple(jax.__version__) >= version_tuple(version)


def require_supported_jax() -> None:
    """Raise ImportError, naming both versions, when the running JAX is older than `JAX_FLOOR`."""
    if not jax_at_least(JAX_FLOOR):
        raise ImportError(
            f"pytree-course needs JAX {JAX_FLOOR} or newer, and this Python has JAX "
            f"{jax.__version__}. Upgrade it (pip install -U jax, or %pip install -U jax in a "
            "notebook), then restart the kernel."
        )


require_supported_jax()
