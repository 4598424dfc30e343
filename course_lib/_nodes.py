"""Reading a tree one node at a time: children with their keys, and short texts for leaves,
paths and sizes. Shared by the inspection functions and the pictures in ``course_lib.viz``."""

import math
import re
from typing import Any

import jax
import numpy as np
from jax.tree_util import default_registry, keystr

from ._errors import leaf_dtype

_DTYPE_PREFIX = re.compile(r"^(bfloat|float|uint|int|complex)(\d+)")
_SHORT_DTYPE = {"bfloat": "bf", "float": "f", "uint": "u", "int": "i", "complex": "c"}


def children(node: Any) -> list[tuple[Any, Any]] | None:
    """The ``(key, child)`` pairs one level below ``node``: ``[]`` for ``None``, ``None`` for a leaf.

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


def path_text(path: tuple[Any, ...]) -> str:
    """A key path as JAX writes it, with ``<root>`` for the empty path.

    >>> path_text(())
    '<root>'
    """
    return keystr(path) or "<root>"


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending in an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def dtype_text(dtype: Any) -> str:
    """``f32``, ``bf16``, ``i64``, ``bool``.

    >>> dtype_text(jnp.bfloat16), dtype_text(np.int32)
    ('bf16', 'i32')
    """
    return _DTYPE_PREFIX.sub(lambda m: _SHORT_DTYPE[m[1]] + m[2], np.dtype(dtype).name)


def has_shape(leaf: Any) -> bool:
    """Whether ``leaf`` describes an array: a JAX or NumPy array or scalar, a ``ShapeDtypeStruct``."""
    return hasattr(leaf, "dtype") and isinstance(getattr(leaf, "shape", None), tuple)


def leaf_size(leaf: Any) -> int | None:
    """Elements a leaf holds or describes, or ``None`` for an object that is no array.

    Arrays and abstract arrays (``jax.ShapeDtypeStruct``, what ``jax.eval_shape`` returns) count
    their elements; a Python number counts 1. Every size in the course is counted here.

    >>> leaf_size(jnp.ones((3, 2))), leaf_size(jax.ShapeDtypeStruct((4, 5), jnp.float32)), leaf_size(0.5)
    (6, 20, 1)
    >>> leaf_size("relu") is None
    True
    """
    if has_shape(leaf):
        return math.prod(leaf.shape)
    if isinstance(leaf, (bool, int, float, complex)):
        return 1
    return None


def leaf_nbytes(leaf: Any) -> int | None:
    """Bytes a leaf holds or describes in its own dtype (a Python number as JAX stores it), or ``None``.

    >>> leaf_nbytes(jax.ShapeDtypeStruct((4, 5), jnp.bfloat16)), leaf_nbytes(0.5)
    (40, 4)
    """
    size = leaf_size(leaf)
    return None if size is None else size * leaf_dtype(leaf).itemsize


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
