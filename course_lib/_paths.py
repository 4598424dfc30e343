"""Working by key path: masks and labels from rules on leaf names, and partition/combine.

A leaf's *name* is its key path written ``keystr(path, simple=True, separator="/")``:
``"layers/0/w"``. A *rule* is a function of that name: :func:`tree_mask` turns a rule that
returns a bool into a mask (a tree of Python bools with the structure of the tree),
:func:`tree_labels` one that returns a string into labels. Everything else takes those trees,
never a rule: :func:`partition` splits a tree by a mask into two trees with ``None`` where the
other one has the leaf, and :func:`combine` puts them back together. It is the idea of
``equinox.partition`` / ``equinox.combine``: ``None`` works as the placeholder because it is an
empty subtree, no leaf at all, so ``jax.jit`` and ``jax.grad`` see only the leaves that are there.

A mask holds Python bools, so under ``jax.jit`` it must be fixed when the function is built:
close over it. As a jitted argument its leaves would become traced arrays, and it cannot be a
static argument either, since dicts and lists are not hashable.
"""

from collections.abc import Callable, Mapping
from typing import Any

import jax
import numpy as np
from jax.tree_util import keystr

from ._errors import TreeStructureError
from ._leaves import same_structure
from ._typing import PyTree


def leaf_name(path: Any) -> str:
    """A key path as the name rules read: ``keystr(path, simple=True, separator="/")``.

    >>> leaf, = jax.tree_util.tree_flatten_with_path({"layers": [{"w": 1.0}]})[0]
    >>> leaf_name(leaf[0])
    'layers/0/w'
    """
    return keystr(path, simple=True, separator="/")


def tree_mask(tree: PyTree, rule: Callable[[str], bool]) -> PyTree:
    """A tree of Python bools with the structure of ``tree``: ``rule(name)`` for each leaf.

    ``name`` is the leaf's key path as ``keystr(path, simple=True, separator="/")``. The mask fits
    ``optax.masked`` as it is, and :func:`partition` and :func:`~course_lib.masked`.

    >>> params = {"layers": [{"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}], "norm": None}
    >>> tree_mask(params, lambda name: name.endswith("/w"))
    {'layers': [{'b': False, 'w': True}], 'norm': None}
    """
    if not callable(rule):
        raise TypeError(
            f"tree_mask: rule must be a function of a leaf's name, got {type(rule).__name__}."
        )

    def decide(path: Any, leaf: Any) -> bool:
        answer = rule(leaf_name(path))
        if not isinstance(answer, (bool, np.bool_)):
            raise TypeError(
                f"tree_mask: the rule returned {type(answer).__name__} {answer!r:.40} for "
                f"{leaf_name(path)!r}; "
                "it must return True or False (re.search returns a match or None: wrap it in "
                "bool())."
            )
        return bool(answer)

    return jax.tree.map_with_path(decide, tree)


def tree_labels(tree: PyTree, rule: Callable[[str], str]) -> PyTree:
    """A tree of strings with the structure of ``tree``: ``rule(name)`` for each leaf.

    The labels ``optax.multi_transform`` and :func:`~course_lib.multi_transform` take.

    >>> params = {"encoder": {"w": jnp.ones(2)}, "head": {"w": jnp.ones(2)}}
    >>> tree_labels(params, lambda name: name.split("/")[0])
    {'encoder': {'w': 'encoder'}, 'head': {'w': 'head'}}
    """

    def label(path: Any, leaf: Any) -> str:
        answer = rule(leaf_name(path))
        if not isinstance(answer, str):
            raise TypeError(
                f"tree_labels: the rule returned {type(answer).__name__} {answer!r:.40} for "
                f"{leaf_name(path)!r}; it must return a str."
            )
        return answer

    return jax.tree.map_with_path(label, tree)


def _mask_bool(path: Any, leaf: Any, where: str) -> bool:
    if isinstance(leaf, (bool, np.bool_)):
        return bool(leaf)
    if isinstance(leaf, jax.core.Tracer):
        raise TypeError(
            f"{where}: the mask leaf at {leaf_name(path)!r} is a traced array: the mask was "
            "passed to jax.jit as an argument. A mask decides what the program does, so it must "
            "be fixed when the function is built: close over it. (It cannot be a static argument "
            "either: dicts and lists are not hashable.)"
        )
    if (
        isinstance(leaf, (jax.Array, np.ndarray))
        and np.shape(leaf) == ()
        and np.dtype(leaf.dtype) == np.bool_
    ):
        return bool(leaf)
    raise TypeError(
        f"{where}: the mask leaf at {leaf_name(path)!r} is {type(leaf).__name__} {leaf!r:.40}, not "
        "True or False."
    )


def _full_mask(tree: PyTree, mask: PyTree, where: str) -> list[bool]:
    """One bool per leaf of ``tree``, in order, from a mask shaped like ``tree`` or a prefix."""
    if callable(mask) and not isinstance(mask, (bool, np.bool_)):
        raise TypeError(
            f"{where}: pass a mask, a tree of bools; build it from a rule with cl.tree_mask(tree, "
            "rule)."
        )
    try:
        broadcast = jax.tree.broadcast(mask, tree)
    except ValueError as error:
        raise TreeStructureError(
            f"{where}: the mask must have the structure of the tree (or be a prefix of it), and "
            "it does not:\n"
            f"{error}\nBuild it from the tree itself: cl.tree_mask(tree, rule)."
        ) from None
    return [
        _mask_bool(path, leaf, where)
        for path, leaf in jax.tree_util.tree_leaves_with_path(broadcast)
    ]


def partition(tree: PyTree, mask: PyTree) -> tuple[PyTree, PyTree]:
    """``(selected, rest)``: the leaves where ``mask`` is True and the others, ``None`` elsewhere.

    ``mask`` is a tree of bools with the structure of ``tree`` or a prefix of it (``True`` for a
    whole subtree), as :func:`tree_mask` builds. Both halves keep every container of ``tree``;
    ``combine(selected, rest)`` is ``tree`` again. Works under ``jax.jit`` with the mask closed
    over.

    >>> params = {"w": jnp.ones(2), "b": jnp.zeros(1)}
    >>> trained, frozen = partition(params, {"w": True, "b": False})
    >>> trained, frozen
    ({'b': None, 'w': Array([1., 1.], dtype=float32)}, {'b': Array([0.], dtype=float32), 'w': None})
    >>> jax.tree.all(jax.tree.map(jnp.array_equal, combine(trained, frozen), params))
    True
    """
    keep = _full_mask(tree, mask, "partition")
    leaves, treedef = jax.tree.flatten(tree)
    selected = [leaf if k else None for leaf, k in zip(leaves, keep, strict=True)]
    rest = [None if k else leaf for leaf, k in zip(leaves, keep, strict=True)]
    return _unflatten_with_nones(treedef, selected), _unflatten_with_nones(treedef, rest)


def _unflatten_with_nones(treedef: Any, leaves: list[Any]) -> PyTree:
    # None leaves must stay leaves here: unflatten puts them where the leaves were.
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _is_none(x: Any) -> bool:
    return x is None


def combine(*trees: PyTree) -> PyTree:
    """One tree from trees with ``None`` placeholders: at each place, the first leaf not ``None``.

    The inverse of :func:`partition`, as ``equinox.combine``: ``combine(*partition(t, m))``
    is ``t``.
    The trees must have one structure, ``None`` counting as a leaf.

    >>> combine({"w": None, "b": 1.0}, {"w": 2.0, "b": None})
    {'b': 1.0, 'w': 2.0}
    """
    if not trees:
        raise TypeError("combine: give at least one tree.")
    structures = [jax.tree.structure(t, is_leaf=_is_none) for t in trees]
    for i, structure in enumerate(structures[1:], start=1):
        if not same_structure(trees[i], trees[0], is_leaf=_is_none):
            raise TreeStructureError(
                f"combine: tree {i} does not have the structure of tree 0 (None counting as a "
                "leaf):\n"
                f"  tree 0: {structures[0]}\n  tree {i}: {structure}\n"
                "Combine the halves of one partition: partition keeps every container and puts "
                "None where a leaf went."
            )
    columns = zip(*(jax.tree.leaves(t, is_leaf=_is_none) for t in trees), strict=True)
    merged = [next((leaf for leaf in column if leaf is not None), None) for column in columns]
    return jax.tree_util.tree_unflatten(structures[0], merged)


def labels_as_masks(labels: PyTree, names: Mapping[str, Any], where: str) -> dict[str, PyTree]:
    """``{label: mask}`` from a tree of labels: per label of ``names``, True where a leaf has it.

    >>> labels_as_masks({"w": "a", "b": "b"}, {"a": 1, "b": 2}, "here")
    {'a': {'b': False, 'w': True}, 'b': {'b': True, 'w': False}}
    """
    if callable(labels):
        raise TypeError(
            f"{where}: pass labels, a tree of strings; build it from a rule with "
            "cl.tree_labels(tree, rule)."
        )
    for path, label in jax.tree_util.tree_leaves_with_path(labels):
        if not isinstance(label, str) or label not in names:
            raise ValueError(
                f"{where}: the label at {leaf_name(path)!r} is {label!r}, which names no "
                "optimizer; "
                f"the optimizers are {sorted(names)}."
            )
    return {name: jax.tree.map(lambda label, name=name: label == name, labels) for name in names}
