"""Type aliases shared by the library."""

from typing import Any, TypeAlias

import jax

PyTree: TypeAlias = Any
"""Any pytree: nested lists, tuples, dicts, ``None`` and registered classes, with leaves at the
ends."""

Scalar: TypeAlias = float | int | jax.Array
"""A Python number or a zero-dimensional array."""
