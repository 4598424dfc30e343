"""Error types and the checks that raise them, shared by the core modules."""

from collections.abc import Sequence

import jax
import numpy as np

from ._typing import PyTree


class TreeStructureError(ValueError):
    """Two trees that had to have the same structure do not."""


class TreeLeafError(TypeError):
    """A leaf is not what the operation needs (an array or a number)."""


def is_array_like(leaf: object) -> bool:
    """Whether ``leaf`` is an array or a number that JAX can compute with (tracers included)."""
    return isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float, complex))


def leaf_dtype(leaf: object) -> np.dtype:
    """The dtype of an array leaf as it is; for a Python number, the dtype JAX gives it (float32 for a float)."""
    dtype = getattr(leaf, "dtype", None)
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(jax.numpy.result_type(leaf))


def is_abstract_array(leaf: object) -> bool:
    """Whether ``leaf`` only describes an array (``jax.ShapeDtypeStruct``): a shape and a dtype, no values."""
    return isinstance(leaf, jax.ShapeDtypeStruct)


def check_array_leaves(tree: PyTree, where: str, abstract: bool = False) -> None:
    """Raise :class:`TreeLeafError` naming the first leaf of ``tree`` that is not array-like.

    With ``abstract=True``, ``jax.ShapeDtypeStruct`` leaves are accepted too (for counting).
    """
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        if not (is_array_like(leaf) or (abstract and is_abstract_array(leaf))):
            raise TreeLeafError(
                f"{where}: the leaf at {jax.tree_util.keystr(path) or '<root>'} is "
                f"{type(leaf).__name__} {leaf!r:.60}, not an array or a number. Keep configuration "
                "such as names and flags out of the leaves: mark it static (a dataclass field with "
                "metadata={'static': True}) or pass it separately."
            )


def check_same_structure(trees: Sequence[PyTree], names: Sequence[str], where: str) -> None:
    """Raise :class:`TreeStructureError`, listing every difference, if the trees differ in structure."""
    first = jax.tree.structure(trees[0])
    for tree, name in zip(trees[1:], names[1:]):
        if jax.tree.structure(tree) != first:
            from ._inspect import tree_diff  # local import: _inspect imports this module

            lines = "\n".join(
                f"  - {line}" for line in tree_diff(trees[0], tree, names=(names[0], name))
            )
            raise TreeStructureError(
                f"{where}: `{name}` must have the same structure as `{names[0]}`, and it does not:\n"
                f"{lines}\nBuild both from the same template, e.g. with jax.tree.map over `{names[0]}`."
            )
