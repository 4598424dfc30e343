"""Reading a tree one node at a time, for the pictures: children with keys, labels, totals.

Both the drawing and the explorer walk a tree node by node rather than leaf by leaf, so they
can show containers, ``None`` subtrees and the static metadata of registered classes.
"""

import dataclasses
import math
import re
from typing import Any, NamedTuple

import jax
import numpy as np
from jax.tree_util import default_registry, keystr

from .. import PyTree

_DTYPE_PREFIX = re.compile(r"^(bfloat|float|uint|int|complex)(\d+)")
_SHORT = {"bfloat": "bf", "float": "f", "uint": "u", "int": "i", "complex": "c"}


class Totals(NamedTuple):
    """How much a subtree holds: leaves (``None`` is not one), elements of array-like leaves, bytes."""

    leaves: int
    params: int
    nbytes: int


def children(node: Any) -> list[tuple[Any, Any]] | None:
    """The ``(key, child)`` pairs of ``node`` one level down, ``[]`` for ``None``, ``None`` for a leaf.

    The keys come from ``jax.tree_util.tree_flatten_with_path`` over a single level, which names
    namedtuple fields correctly (``flatten_one_level_with_keys`` repeats the first field's name
    for every child of a namedtuple in JAX 0.10).
    """
    if default_registry.flatten_one_level_with_keys(node) is None:
        return None
    pairs, _ = jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda x: x is not node)
    return [(path[0], child) for path, child in pairs]


def key_text(key: Any) -> str:
    """One key as JAX prints it in a key path: ``['w']``, ``[0]``, ``.b``."""
    return keystr((key,))


def path_text(path: tuple[Any, ...]) -> str:
    """A whole key path as JAX prints it; the root is ``<root>``."""
    return keystr(path) or "<root>"


def _is_namedtuple(node: Any) -> bool:
    return isinstance(node, tuple) and hasattr(type(node), "_fields")


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def node_label(node: Any) -> str:
    """The container's type, and for a registered class its static metadata.

    ``dict``, ``list``, ``tuple``, ``None``, a namedtuple's class name, or a registered class's
    name followed by its static fields (``Linear name='dense'``) or other metadata.
    """
    if node is None:
        return "None"
    kind = type(node).__name__
    if isinstance(node, (dict, list, tuple)) or _is_namedtuple(node):
        return kind
    flat = default_registry.flatten_one_level_with_keys(node)
    metadata = None if flat is None else flat[1]
    if metadata is None or metadata == () or metadata == []:
        return kind
    if dataclasses.is_dataclass(node):
        child_names = {getattr(key, "name", None) for key, _ in children(node) or []}
        static = [f.name for f in dataclasses.fields(node) if f.name not in child_names]
        if isinstance(metadata, tuple) and len(static) == len(metadata):
            shown = " ".join(f"{name}={_short(repr(value), 24)}" for name, value in zip(static, metadata))
            return f"{kind} {shown}"
    return f"{kind} {_short(repr(metadata), 30)}"


def _dtype_name(dtype: Any) -> str:
    name = np.dtype(dtype).name
    return _DTYPE_PREFIX.sub(lambda m: _SHORT[m[1]] + m[2], name)


def has_shape(leaf: Any) -> bool:
    """Whether the leaf describes an array: a JAX or NumPy array, a NumPy scalar, a ShapeDtypeStruct."""
    return hasattr(leaf, "shape") and hasattr(leaf, "dtype") and isinstance(getattr(leaf, "shape"), tuple)


def leaf_spec(leaf: Any) -> str:
    """``f32[3,2]`` for an array, the value for a Python number, a short repr or type name otherwise."""
    if has_shape(leaf):
        return f"{_dtype_name(leaf.dtype)}[{','.join(map(str, leaf.shape))}]"
    if isinstance(leaf, (bool, int, float, complex)):
        return _short(repr(leaf), 16)
    if isinstance(leaf, str):
        return _short(repr(leaf), 16)
    return _short(type(leaf).__name__, 24)


def leaf_totals(leaf: Any) -> Totals:
    """One leaf: its elements (a Python number is one) and bytes; other objects hold none."""
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
        return Totals(1, int(leaf.size), int(leaf.nbytes))
    if has_shape(leaf):
        size = math.prod(leaf.shape)
        return Totals(1, size, size * np.dtype(leaf.dtype).itemsize)
    if isinstance(leaf, (bool, int, float, complex)):
        return Totals(1, 1, np.dtype(jax.numpy.result_type(leaf)).itemsize)
    return Totals(1, 0, 0)


def totals(tree: PyTree) -> Totals:
    """Leaves, parameters (elements) and bytes in a whole subtree."""
    leaves = params = nbytes = 0
    for leaf in jax.tree.leaves(tree):
        one = leaf_totals(leaf)
        leaves, params, nbytes = leaves + 1, params + one.params, nbytes + one.nbytes
    return Totals(leaves, params, nbytes)


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 leaf``, ``12 leaves``, ``1,234 params``."""
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def totals_text(t: Totals, sep: str = " · ") -> str:
    """``12 leaves · 3,072 params``."""
    return f"{plural(t.leaves, 'leaf', 'leaves')}{sep}{plural(t.params, 'param')}"
