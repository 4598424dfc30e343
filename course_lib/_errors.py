"""Error types and the checks that raise them, shared by the core modules."""

from collections.abc import Sequence

import jax

from ._leaves import is_abstract_array, is_array_like, path_text, same_structure
from ._typing import PyTree


class TreeStructureError(ValueError):
    """Two trees that had to have the same structure do not."""


class TreeLeafError(TypeError):
    """A leaf is not what the operation needs (an array or a number)."""


def check_array_leaves(tree: PyTree, where: str, abstract: bool = False) -> None:
    """Raise :class:`TreeLeafError` naming the first leaf of ``tree`` that is not array-like.

    With ``abstract=True``, ``jax.ShapeDtypeStruct`` leaves are accepted too (for counting).
    """
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        if not (is_array_like(leaf) or (abstract and is_abstract_array(leaf))):
            raise TreeLeafError(
                f"{where}: the leaf at {path_text(path)} is "
                f"{type(leaf).__name__} {leaf!r:.60}, not an array or a number. Keep configuration "
                "such as names and flags out of the leaves: mark it static (a dataclass field with "
                "metadata={'static': True}) or pass it separately."
            )


def check_same_structure(trees: Sequence[PyTree], names: Sequence[str], where: str) -> None:
    """Raise :class:`TreeStructureError`, listing every difference, unless the trees match."""
    for tree, name in zip(trees[1:], names[1:], strict=True):
        if not same_structure(trees[0], tree):
            from ._inspect import tree_diff  # local import: _inspect imports this module

            lines = "\n".join(
                f"  - {line}" for line in tree_diff(trees[0], tree, names=(names[0], name))
            )
            raise TreeStructureError(
                f"{where}: `{name}` must have the same structure as `{names[0]}`, and it does "
                "not:\n"
                f"{lines}\nBuild both from the same template, e.g. with jax.tree.map over "
                f"`{names[0]}`."
            )
