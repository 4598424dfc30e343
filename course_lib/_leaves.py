"""Small predicates and readers over a tree's leaves and nodes, and the short texts made of them.

What a leaf is (:func:`is_array_like`, :func:`is_abstract_array`, :func:`has_shape`), what it holds
(:func:`leaf_dtype`, :func:`leaf_size`, :func:`leaf_nbytes`), whether two leaves are close
(:func:`close_elements`, with the library's tolerances), a node's children and metadata, a key's
and a path's text, and text shortening. Every module of the library that asks one of
these questions asks it here: the core, the self-checks, the grader and ``course_lib.viz``.
"""

import math
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import default_registry, keystr
from jax.typing import ArrayLike

_DTYPE_PREFIX = re.compile(r"^(bfloat|float|uint|int|complex)(\d+)")
_SHORT_DTYPE = {"bfloat": "bf", "float": "f", "uint": "u", "int": "i", "complex": "c"}


# --- leaves -------------------------------------------------------------------------------------


def is_array_like(leaf: object) -> bool:
    """Whether ``leaf`` is an array or a number that JAX can compute with (tracers included).

    >>> is_array_like(jnp.ones(2)), is_array_like(0.5), is_array_like("relu")
    (True, True, False)
    """
    return isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float, complex))


def is_abstract_array(leaf: object) -> bool:
    """Whether ``leaf`` only describes an array (``jax.ShapeDtypeStruct``): a shape and a dtype.

    >>> is_abstract_array(jax.ShapeDtypeStruct((2,), jnp.float32)), is_abstract_array(jnp.ones(2))
    (True, False)
    """
    return isinstance(leaf, jax.ShapeDtypeStruct)


def has_shape(leaf: Any) -> bool:
    """Whether ``leaf`` describes an array: a JAX or NumPy array or scalar, a ``ShapeDtypeStruct``.

    >>> has_shape(np.float32(1.0)), has_shape(1.0)
    (True, False)
    """
    return hasattr(leaf, "dtype") and isinstance(getattr(leaf, "shape", None), tuple)


def leaf_dtype(leaf: object) -> np.dtype:
    """The dtype of an array leaf as it is; for a Python number, the dtype JAX gives it.

    >>> leaf_dtype(np.ones(2)), leaf_dtype(0.5)
    (dtype('float64'), dtype('float32'))
    """
    dtype = getattr(leaf, "dtype", None)
    if dtype is not None:
        return np.dtype(dtype)
    return np.dtype(jax.numpy.result_type(leaf))


def leaf_size(leaf: Any) -> int | None:
    """Elements a leaf holds or describes, or ``None`` for an object that is no array.

    Arrays and abstract arrays (``jax.ShapeDtypeStruct``, what ``jax.eval_shape`` returns) count
    their elements, as an array of that shape would; a Python number counts 1. Every leaf size
    in the course is counted here.

    >>> leaf_size(jnp.ones((3, 2))), leaf_size(jax.ShapeDtypeStruct((4, 5), jnp.float32))
    (6, 20)
    >>> leaf_size(0.5), leaf_size(np.zeros((0, 3)))
    (1, 0)
    >>> leaf_size("relu") is None
    True
    """
    if has_shape(leaf):
        return math.prod(leaf.shape)
    if isinstance(leaf, (bool, int, float, complex)):
        return 1
    return None


def leaf_nbytes(leaf: Any) -> int | None:
    """Bytes a leaf holds or describes in its own dtype (a Python number as JAX stores it).

    ``None`` for an object that is no array.

    >>> leaf_nbytes(jax.ShapeDtypeStruct((4, 5), jnp.bfloat16)), leaf_nbytes(0.5)
    (40, 4)
    """
    size = leaf_size(leaf)
    return None if size is None else size * leaf_dtype(leaf).itemsize


# --- closeness ---------------------------------------------------------------------------------


RTOL = 1e-5
"""Default relative tolerance of every tree comparison: NumPy's, ``np.allclose``'s and optax's."""
ATOL = 1e-8
"""Default absolute tolerance of every tree comparison: NumPy's, ``np.allclose``'s and optax's."""


def close_elements(
    actual: ArrayLike,
    expected: ArrayLike,
    rtol: float = RTOL,
    atol: float = ATOL,
    equal_nan: bool = False,
) -> np.ndarray | jax.Array:
    """Which elements of two leaves of one shape are close: the one closeness of the library.

    An element is close when ``|actual - expected| <= atol + rtol * |expected|``, as in
    ``np.isclose``: the tolerance scales with ``expected``. The defaults are NumPy's
    (``rtol=1e-5``, ``atol=1e-8``), so ``cl.tree_allclose`` answers as ``np.allclose`` and
    ``optax.tree_utils.tree_allclose`` do; NaN is close to nothing, not even NaN, unless
    ``equal_nan``. Infinities are close to the same infinity. ``cl.tree_allclose``,
    ``cl.assert_trees_close`` and the self-checks' ``trees_close`` all compare leaves here; a
    caller that needs another tolerance passes it, named, with its reason.

    A traced leaf (under ``jit``) gives a traced mask; concrete leaves give a NumPy one.

    >>> actual = np.array([1.0, 1.0, np.nan, np.inf])
    >>> expected = np.array([1.000001, 1.1, np.nan, np.inf])
    >>> close_elements(actual, expected)
    array([ True, False, False,  True])
    >>> close_elements(0.0, 1e-7), close_elements(0.0, 1e-9)
    (array(False), array(True))
    >>> close_elements(np.nan, np.nan), close_elements(np.nan, np.nan, equal_nan=True)
    (array(False), array(True))
    """
    if isinstance(actual, jax.core.Tracer) or isinstance(expected, jax.core.Tracer):
        return jnp.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return np.asarray(
        np.isclose(
            np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol, equal_nan=equal_nan
        )
    )


# --- nodes --------------------------------------------------------------------------------------


def is_namedtuple(node: Any) -> bool:
    """Whether ``node`` is a namedtuple (JAX flattens it by field name, a tuple by position).

    >>> from collections import namedtuple
    >>> Point = namedtuple("Point", "x y")
    >>> is_namedtuple(Point(1, 2)), is_namedtuple((1, 2))
    (True, False)
    """
    return isinstance(node, tuple) and hasattr(type(node), "_fields")


def same_structure(tree_a: Any, tree_b: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Whether two trees have one structure: the same nodes, keys and metadata, leaf for leaf.

    ``is_leaf`` is passed to ``jax.tree.structure`` for both trees.

    >>> same_structure({"w": 1.0, "b": None}, {"b": None, "w": jnp.ones(2)})
    True
    >>> same_structure([1.0], (1.0,))
    False

    The node types are compared as well: jaxlib 0.10.2's ``==`` takes two registered dataclasses
    with the same fields for one node (``jax.tree.map`` still refuses to pair them).
    """
    structure_a = jax.tree.structure(tree_a, is_leaf=is_leaf)
    structure_b = jax.tree.structure(tree_b, is_leaf=is_leaf)
    equal = structure_a == structure_b  # type: ignore[operator]  # jaxlib's stub leaves PyTreeDef.__eq__ unresolved
    return bool(equal) and _node_types(structure_a) == _node_types(structure_b)


def _node_types(treedef: Any) -> list[type]:
    """The type of every node of ``treedef``, parents before children; leaves count none."""
    node = treedef.node_data()
    if node is None:
        return []
    return [node[0], *(kind for child in treedef.children() for kind in _node_types(child))]


def children(node: Any) -> list[tuple[Any, Any]] | None:
    """The ``(key, child)`` pairs below ``node``: ``[]`` for ``None``, ``None`` for a leaf.

    The keys come from a one-level ``tree_flatten_with_path``: jaxlib 0.10's
    ``flatten_one_level_with_keys`` names every field of a namedtuple after the first one.

    >>> children({"b": None, "a": 1})
    [(DictKey(key='a'), 1), (DictKey(key='b'), None)]
    >>> children(3.0) is None
    True
    """
    if default_registry.flatten_one_level(node) is None:
        return None
    pairs, _ = jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda child: child is not node)
    return [(path[0], child) for path, child in pairs]


def metadata(node: Any) -> Any:
    """A node's auxiliary data: sorted keys for a dict, static fields for a registered dataclass."""
    flat = default_registry.flatten_one_level(node)
    return None if flat is None else flat[1]


def key_text(key: Any) -> str:
    """One key as JAX writes it in a key path: ``['w']``, ``[0]``, ``.b``.

    >>> key_text(jax.tree_util.DictKey("w")), key_text(jax.tree_util.SequenceKey(0))
    ("['w']", '[0]')
    """
    return keystr((key,))


def path_text(path: tuple[Any, ...]) -> str:
    """A key path as JAX writes it, with ``<root>`` for the empty path.

    >>> path_text(())
    '<root>'
    """
    return keystr(path) or "<root>"


# --- texts --------------------------------------------------------------------------------------


def shorten(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the last one an ellipsis (``…``) when cut.

    >>> shorten("relu", 8), shorten("a long activation name", 8)
    ('relu', 'a long …')
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def dtype_text(dtype: Any) -> str:
    """``f32``, ``bf16``, ``i64``, ``bool``.

    >>> dtype_text(jnp.bfloat16), dtype_text(np.int32)
    ('bf16', 'i32')
    """
    return _DTYPE_PREFIX.sub(lambda m: _SHORT_DTYPE[m[1]] + m[2], np.dtype(dtype).name)


def leaf_spec(leaf: Any) -> str:
    """``f32[3,2]`` for an array, the value for a Python number or string, else the type's name.

    >>> leaf_spec(jnp.ones((3, 2))), leaf_spec(0.5), leaf_spec(object())
    ('f32[3,2]', '0.5', 'object')
    """
    if has_shape(leaf):
        return f"{dtype_text(leaf.dtype)}[{','.join(map(str, leaf.shape))}]"
    if isinstance(leaf, (bool, int, float, complex, str)):
        return shorten(repr(leaf), 16)
    return shorten(type(leaf).__name__, 24)


def human_bytes(n: int) -> str:
    """``512 B``, ``1.5 KiB``, ``3.0 MiB``.

    >>> human_bytes(512), human_bytes(1536)
    ('512 B', '1.5 KiB')
    """
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
