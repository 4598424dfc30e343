"""Labels and totals for the pictures, on top of the core's readers (``course_lib._leaves``).

Both the drawing and the explorer walk a tree node by node rather than leaf by leaf, so they
can show containers, ``None`` subtrees and the static metadata of registered classes.
"""

import dataclasses
from typing import Any, NamedTuple

import jax

from .. import PyTree
from .._leaves import children, is_namedtuple, leaf_nbytes, leaf_size, shorten
from .._leaves import metadata as node_metadata


class Totals(NamedTuple):
    """What a subtree holds: leaves (``None`` is none), elements of array-like leaves, bytes."""

    leaves: int
    params: int
    nbytes: int


def node_label(node: Any) -> str:
    """The container's type, and for a registered class its static metadata.

    ``dict``, ``list``, ``tuple``, ``None``, a namedtuple's class name, or a registered class's
    name followed by its static fields (``Linear name='dense'``) or other metadata.
    """
    if node is None:
        return "None"
    kind = type(node).__name__
    if isinstance(node, (dict, list, tuple)) or is_namedtuple(node):
        return kind
    metadata = node_metadata(node)
    if metadata is None or metadata == () or metadata == []:
        return kind
    if dataclasses.is_dataclass(node):
        child_names = {getattr(key, "name", None) for key, _ in children(node) or []}
        static = [f.name for f in dataclasses.fields(node) if f.name not in child_names]
        if isinstance(metadata, tuple) and len(static) == len(metadata):
            shown = " ".join(
                f"{name}={shorten(repr(value), 24)}"
                for name, value in zip(static, metadata, strict=True)
            )
            return f"{kind} {shown}"
    return f"{kind} {shorten(repr(metadata), 30)}"


def leaf_totals(leaf: Any) -> Totals:
    """One leaf: its elements (a Python number is one) and bytes, counted as ``cl.tree_size`` does;
    other objects hold none."""
    return Totals(1, leaf_size(leaf) or 0, leaf_nbytes(leaf) or 0)


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
