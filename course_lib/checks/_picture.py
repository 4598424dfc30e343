"""The picture a failing self-check shows when the answer's structure is not the expected one.

The text of the hint already names each difference by key path (``structure_difference``). In a
notebook the check also draws the two trees with ``viz.draw_diff``: the learner's result against
the expected one, each difference marked. The picture shows structure only: every leaf is drawn
by its shape and dtype (a string or other object by its type's name), so the expected tree shows
what to build, never the values to put in it. A terminal, or a grader's feedback file, gets the
text alone.
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from .._leaves import is_array_like, same_structure
from ._plain import rebuild_tree

if TYPE_CHECKING:
    from matplotlib.figure import Figure

NAMES = ("your result", "expected")


@functools.cache
def _stand_in(type_name: str) -> type:
    """One class per type name, so that two stand-ins of one type compare as the same leaf."""
    return type(type_name, (), {"__repr__": lambda self: type_name})


def _shape_only(leaf: Any) -> Any:
    if isinstance(leaf, (bool, int, float, complex)) or is_array_like(leaf):
        return jax.ShapeDtypeStruct(np.shape(leaf), np.asarray(leaf).dtype)
    return _stand_in(getattr(leaf, "type_name", type(leaf).__name__))()


def structure_only(tree: Any) -> Any:
    """``tree`` with each leaf replaced by what its shape and type say, and nothing of its value.

    >>> shapes = structure_only({"w": np.ones((2, 3), np.float32), "name": "dense", "scale": 0.5})
    >>> shapes["name"], shapes["w"]
    (str, ShapeDtypeStruct(shape=(2, 3), dtype=float32))
    """
    return jax.tree.map(_shape_only, tree)


def _tree(record: Any) -> Any:
    """The tree a plain result record stands for, or ``None`` when it is not a tree record."""
    if not isinstance(record, dict) or not ({"node", "leaf", "opaque"} & record.keys()):
        return None
    try:
        return rebuild_tree(record)
    except (ValueError, KeyError, TypeError):
        return None


def differing_structures(got: Any, expected: Any) -> tuple[Any, Any] | None:
    """The learner's tree and the expected one, structure only, when the two plain results are
    trees of different structures; ``None`` otherwise (the same structure, or not trees)."""
    mine, theirs = _tree(got), _tree(expected)
    if mine is None or theirs is None or same_structure(mine, theirs):
        return None
    return structure_only(mine), structure_only(theirs)


def structure_picture(got: Any, expected: Any) -> Figure | None:
    """``viz.draw_diff`` of the learner's result against the expected one, structure only; or
    ``None`` when their structures are the same (or they are not trees)."""
    pair = differing_structures(got, expected)
    if pair is None:
        return None
    # matplotlib is imported only here, when a picture is drawn: an exercise notebook that
    # passes its checks, and the grader's kernels, never load it.
    from ..viz import draw_diff

    return draw_diff(*pair, names=NAMES, title="your result against the expected structure")


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter kernel, where a figure can be shown under the cell."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None
