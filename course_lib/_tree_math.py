"""Arithmetic on whole trees, leaf by leaf.

Names and semantics follow ``optax.tree_utils``, so code moves between the two without surprises.
``None`` subtrees are empty and are skipped, as ``jax.tree.map`` skips them. Every function works
under ``jax.jit``.
"""

import functools
import math
import operator

import jax
import jax.numpy as jnp
import numpy as np

from ._errors import check_array_leaves, check_same_structure
from ._leaves import ATOL, RTOL, close_elements, leaf_nbytes, leaf_size, same_structure
from ._typing import PyTree, Scalar


def _checked(trees: tuple[PyTree, ...], names: tuple[str, ...], where: str) -> None:
    check_same_structure(trees, names, where)
    for tree in trees:
        check_array_leaves(tree, where)


def tree_add(tree_x: PyTree, tree_y: PyTree, *more: PyTree) -> PyTree:
    """Sum two or more trees of the same structure, leaf by leaf.

    >>> tree_add({"a": 1.0, "b": None}, {"a": 2.0, "b": None}, {"a": 3.0, "b": None})
    {'a': 6.0, 'b': None}
    """
    trees = (tree_x, tree_y, *more)
    _checked(trees, ("tree_x", "tree_y", *(f"more[{i}]" for i in range(len(more)))), "tree_add")
    return jax.tree.map(lambda *leaves: functools.reduce(operator.add, leaves), *trees)


def tree_sub(tree_x: PyTree, tree_y: PyTree) -> PyTree:
    """Subtract ``tree_y`` from ``tree_x``, leaf by leaf.

    >>> tree_sub([5.0, (2.0,)], [1.0, (0.5,)])
    [4.0, (1.5,)]
    """
    _checked((tree_x, tree_y), ("tree_x", "tree_y"), "tree_sub")
    return jax.tree.map(operator.sub, tree_x, tree_y)


def tree_scale(scalar: Scalar, tree: PyTree) -> PyTree:
    """Multiply every leaf of ``tree`` by ``scalar``.

    >>> tree_scale(2.0, {"w": jnp.ones(2)})
    {'w': Array([2., 2.], dtype=float32)}
    """
    check_array_leaves(tree, "tree_scale")
    return jax.tree.map(lambda leaf: scalar * leaf, tree)


def tree_add_scale(tree_x: PyTree, scalar: Scalar, tree_y: PyTree) -> PyTree:
    """Compute ``tree_x + scalar * tree_y`` leaf by leaf: the shape of an SGD step.

    >>> params, grads = {"w": jnp.ones(2)}, {"w": jnp.full(2, 0.5)}
    >>> tree_add_scale(params, -0.1, grads)
    {'w': Array([0.95, 0.95], dtype=float32)}
    """
    _checked((tree_x, tree_y), ("tree_x", "tree_y"), "tree_add_scale")
    return jax.tree.map(lambda x, y: x + scalar * y, tree_x, tree_y)


def _vdot(x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.vdot(jnp.asarray(x), jnp.asarray(y), precision=jax.lax.Precision.HIGHEST)


def tree_vdot(tree_x: PyTree, tree_y: PyTree) -> jax.Array:
    """Inner product of two trees: the sum over leaves of ``vdot(x, y)`` (conjugating ``x``).

    >>> tree_vdot({"a": jnp.array([1.0, 2.0])}, {"a": jnp.array([3.0, 4.0])})
    Array(11., dtype=float32)
    """
    _checked((tree_x, tree_y), ("tree_x", "tree_y"), "tree_vdot")
    return jnp.asarray(jax.tree.reduce(operator.add, jax.tree.map(_vdot, tree_x, tree_y), 0))


def tree_sum(tree: PyTree) -> jax.Array:
    """Sum of every element of every leaf.

    >>> tree_sum({"a": jnp.ones(3), "b": [jnp.full(2, 2.0)]})
    Array(7., dtype=float32)
    """
    check_array_leaves(tree, "tree_sum")
    return jnp.asarray(jax.tree.reduce(operator.add, jax.tree.map(jnp.sum, tree), 0))


def _squared_magnitude(leaf: jax.Array) -> jax.Array:
    leaf = jnp.asarray(leaf)
    return jnp.square(leaf.real) + jnp.square(leaf.imag)


def tree_norm(tree: PyTree, ord: int | float | str | None = 2, squared: bool = False) -> jax.Array:
    """Vector norm of the whole tree, as if its leaves were one long vector.

    ``ord`` is 2 (or ``None``), 1, or ``inf`` (``jnp.inf``, ``"inf"``). An empty tree has norm 0, a
    float32 0.0 whatever the ``ord`` (optax gives ``-inf`` for the inf-norm of an empty tree).

    >>> tree = {"a": jnp.array([3.0]), "b": jnp.array([-4.0])}
    >>> tree_norm(tree), tree_norm(tree, ord=1), tree_norm(tree, ord="inf")
    (Array(5., dtype=float32), Array(7., dtype=float32), Array(4., dtype=float32))
    """
    check_array_leaves(tree, "tree_norm")
    if ord not in (None, 1, 2, math.inf, "inf", "infinity"):
        raise ValueError(f"tree_norm: ord must be 2, 1 or inf, not {ord!r}.")
    if not jax.tree.leaves(tree):
        return jnp.asarray(0.0)  # a norm is a float, whatever the ord: the 0 of an empty sum
    if ord is None or ord == 2:
        total = tree_sum(jax.tree.map(_squared_magnitude, tree))
        return total if squared else jnp.sqrt(total)
    if ord == 1:
        norm = tree_sum(jax.tree.map(jnp.abs, tree))
    else:
        maxima = jax.tree.map(lambda leaf: jnp.max(jnp.abs(leaf), initial=0.0), tree)
        norm = jnp.asarray(jax.tree.reduce(jnp.maximum, maxima))
    return jnp.square(norm) if squared else norm


def tree_zeros_like(tree: PyTree, dtype: jnp.dtype | None = None) -> PyTree:
    """Zeros with the structure, shapes and (unless ``dtype`` is given) dtypes of ``tree``.

    >>> tree_zeros_like({"w": jnp.ones((2,)), "skip": None})
    {'skip': None, 'w': Array([0., 0.], dtype=float32)}
    """
    return tree_full_like(tree, 0, dtype)


def tree_ones_like(tree: PyTree, dtype: jnp.dtype | None = None) -> PyTree:
    """A tree of ones shaped like ``tree``.

    >>> tree_ones_like([jnp.zeros(2, dtype=jnp.int32)])
    [Array([1, 1], dtype=int32)]
    """
    return tree_full_like(tree, 1, dtype)


def tree_full_like(tree: PyTree, fill_value: Scalar, dtype: jnp.dtype | None = None) -> PyTree:
    """A tree shaped like ``tree`` with every element set to ``fill_value``.

    >>> tree_full_like({"b": jnp.zeros(2)}, 0.5)
    {'b': Array([0.5, 0.5], dtype=float32)}
    """
    check_array_leaves(tree, "tree_full_like")
    return jax.tree.map(lambda leaf: jnp.full_like(leaf, fill_value, dtype=dtype), tree)


def tree_size(tree: PyTree) -> int:
    """Number of elements in all leaves together: the parameter count of a model.

    Abstract leaves (``jax.ShapeDtypeStruct``, as ``jax.eval_shape`` returns) count too, so a
    model can be counted without allocating it.

    >>> tree_size({"w": jnp.ones((3, 2)), "b": jnp.zeros(2)})
    8
    >>> tree_size(jax.eval_shape(lambda: {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}))
    8
    """
    check_array_leaves(tree, "tree_size", abstract=True)
    return sum(leaf_size(leaf) or 0 for leaf in jax.tree.leaves(tree))


def tree_bytes(tree: PyTree) -> int:
    """Bytes taken by all leaves together, each in its own dtype.

    A Python number counts as the scalar JAX makes of it (4 bytes for a ``float``); a NumPy
    ``float64`` array counts 8 bytes an element, though JAX would store it as ``float32``.

    Abstract leaves (``jax.ShapeDtypeStruct``) count as the arrays they describe.

    >>> tree_bytes({"w": jnp.ones((3, 2)), "b": jnp.zeros(2, dtype=jnp.bfloat16), "lr": 0.1})
    32
    """
    check_array_leaves(tree, "tree_bytes", abstract=True)
    return sum(leaf_nbytes(leaf) or 0 for leaf in jax.tree.leaves(tree))


def tree_cast(tree: PyTree, dtype: jnp.dtype | None) -> PyTree:
    """Cast every leaf to ``dtype``; ``dtype=None`` returns the tree unchanged.

    >>> tree_cast({"w": jnp.ones(2)}, jnp.bfloat16)
    {'w': Array([1, 1], dtype=bfloat16)}
    """
    if dtype is None:
        return tree
    check_array_leaves(tree, "tree_cast")
    return jax.tree.map(lambda leaf: jnp.asarray(leaf).astype(dtype), tree)


def tree_allclose(
    actual: PyTree,
    expected: PyTree,
    rtol: float = RTOL,
    atol: float = ATOL,
    equal_nan: bool = False,
) -> bool | jax.Array:
    """Whether two trees have the same structure and leaves that are close (as ``np.allclose``).

    Closeness and its defaults are :func:`close_elements`'s. Unlike
    ``optax.tree_utils.tree_allclose``, trees of different structure, or leaves of different
    shapes, give ``False`` rather than an error or a broadcast, and the answer is a Python
    ``bool``. Under ``jit`` the values are not known until the program runs, so there the answer
    is a traced boolean array (structure and shapes are still decided at once).

    >>> tree_allclose({"a": jnp.ones(2)}, {"a": jnp.ones(2) + 1e-7})
    True
    >>> tree_allclose({"a": jnp.ones(2)}, {"b": jnp.ones(2)})
    False
    >>> jax.jit(tree_allclose)({"a": jnp.ones(2)}, {"a": jnp.zeros(2)})
    Array(False, dtype=bool)
    """
    if not same_structure(actual, expected):
        return False
    check_array_leaves(actual, "tree_allclose")
    check_array_leaves(expected, "tree_allclose")
    traced = []
    for x, y in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        if np.shape(x) != np.shape(y):
            return False
        close = close_elements(x, y, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if isinstance(close, jax.core.Tracer):
            traced.append(jnp.all(close))
        elif not close.all():
            return False
    return functools.reduce(jnp.logical_and, traced) if traced else True
