"""A whole tree kept in one contiguous buffer.

A jitted call pays a few microseconds for every leaf it receives, so a tree of thousands of small
leaves spends its time in dispatch, not arithmetic. :class:`FlatTree` keeps every leaf in one 1-D
buffer and remembers where each one lives. It is itself a pytree with a single leaf, so an
optimizer update over it is one kernel, and ``jax.grad`` of a function of a ``FlatTree`` returns a
``FlatTree`` of gradients. Inside ``jit`` the per-leaf views come from one ``lax.split``, whose
gradient is one concatenate.

Compiling a loss that reads hundreds of views is slow on the CPU backend (a 400-leaf MLP step took
~25 s against ~1.5 s for the plain tree, on JAX 0.10.2); running it is as fast as the tree. For
many small leaves, the cheapest pattern is a tree loss and a flat update.
"""

import functools
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import keystr

from ._errors import TreeLeafError, check_array_leaves
from ._leaves import is_array_like
from ._typing import PyTree


def _leaf_dtype(leaf: Any) -> np.dtype:
    """The dtype JAX gives a leaf (NumPy's float64 is float32 unless x64 is on), without copying
    it to a device."""
    found = getattr(leaf, "dtype", None)
    if found is None:
        return np.dtype(jnp.asarray(leaf).dtype)  # a Python scalar: JAX's default type for it
    return np.dtype(jax.dtypes.canonicalize_dtype(found))


@functools.partial(jax.jit, static_argnums=1)
def _pack(leaves: tuple[Any, ...], dtype: np.dtype) -> jax.Array:
    """Every leaf, flattened and cast, in one buffer: one compiled call per layout."""
    return jnp.concatenate([jnp.ravel(leaf).astype(dtype) for leaf in leaves])


def _views(buffer: jax.Array, layout: "FlatLayout") -> PyTree:
    # One `split` rather than a slice per leaf: its transpose is a single concatenate, so the
    # gradient of a loss over the views is one buffer, not one padded full-size buffer per leaf.
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in layout.shapes]
    pieces = jax.lax.split(buffer, sizes)
    leaves = [piece.reshape(shape) for piece, shape in zip(pieces, layout.shapes, strict=True)]
    return jax.tree.unflatten(layout.treedef, leaves)


@functools.partial(jax.jit, static_argnums=2)
def _view(buffer: jax.Array, offset: int, shape: tuple[int, ...]) -> jax.Array:
    """One leaf as a view of the buffer, compiled once per leaf shape and buffer size, whatever the
    offset. ``to_tree`` reads each leaf with it outside ``jit``: one program returning hundreds of
    views takes XLA's CPU backend about 5 ms per view to compile."""
    size = int(np.prod(shape, dtype=np.int64))
    return jax.lax.dynamic_slice(buffer, (offset,), (size,)).reshape(shape)


@dataclass(frozen=True)
class FlatLayout:
    """Where each leaf lives in the buffer: static, hashable, part of a ``FlatTree``'s structure."""

    treedef: jax.tree_util.PyTreeDef
    paths: tuple[str, ...]
    shapes: tuple[tuple[int, ...], ...]
    offsets: tuple[int, ...]
    dtype: np.dtype
    size: int


_MAX_LAYOUTS = 64
_LAYOUTS: dict[tuple[Any, ...], FlatLayout] = {}  # by _signature: structure, shapes, dtypes


def _signature(treedef: Any, leaves: list[Any], dtype: Any) -> tuple[Any, ...] | None:
    """What a layout depends on, cheaply; None for leaves without a shape and dtype (their layout is
    worked out on every call, never kept)."""
    try:
        return treedef, dtype, tuple((leaf.shape, leaf.dtype) for leaf in leaves)
    except AttributeError:
        return None


def _layout(tree: PyTree, dtype: Any) -> FlatLayout:
    """The layout of ``tree``'s array leaves in one buffer of ``dtype`` (default: their one
    dtype), refusing leaves of different dtypes with a message that names them."""
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    paths = tuple(keystr(path) for path, _ in with_paths)
    if dtype is None:
        first_with: dict[np.dtype, str] = {}  # each dtype, with the first leaf that has it
        for p, (_, leaf) in zip(paths, with_paths, strict=True):
            first_with.setdefault(_leaf_dtype(leaf), p)
        if len(first_with) > 1:
            examples = ", ".join(f"{dt} at {p}" for dt, p in first_with.items())
            raise TreeLeafError(
                f"FlatTree.from_tree: leaves have different dtypes ({examples}). "
                "Pass dtype=... to cast them all, or cast the tree first with tree_cast."
            )
        dtype = next(iter(first_with), jnp.float32)
    shapes = tuple(tuple(np.shape(leaf)) for _, leaf in with_paths)
    sizes = [int(np.prod(shape, dtype=np.int64)) for shape in shapes]
    offsets = tuple(int(o) for o in np.cumsum([0, *sizes[:-1]])) if sizes else ()
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(dtype))
    return FlatLayout(treedef, paths, shapes, offsets, dtype, sum(sizes))


@jax.tree_util.register_pytree_with_keys_class
class FlatTree:
    """A pytree stored as one 1-D array plus a static layout.

    The leaves' values are copied exactly, except on a backend whose programs flush subnormal
    float32 values (those below 1.2e-38 in size) to zero, as a TPU's do: there such a value can
    read back as 0 (from a tree of several leaves, whose copy is one compiled program).

    >>> params = {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)}
    >>> flat = FlatTree.from_tree(params)
    >>> flat.buffer
    Array([0., 0., 1., 1., 1., 1.], dtype=float32)
    >>> flat["['w']"]
    Array([[1., 1.],
           [1., 1.]], dtype=float32)
    >>> jax.tree.leaves(flat)  # one leaf, whatever the tree held
    [Array([0., 0., 1., 1., 1., 1.], dtype=float32)]
    """

    __slots__ = ("buffer", "layout")

    def __init__(self, buffer: jax.Array, layout: FlatLayout):
        self.buffer = buffer
        self.layout = layout

    @classmethod
    def from_tree(cls, tree: PyTree, dtype: Any = None) -> "FlatTree":
        """Copy the leaves of ``tree`` into one buffer of ``dtype`` (default: their common dtype).

        All leaves must share one dtype unless ``dtype`` is given; mixing dtypes silently would
        change the arithmetic, so it is an error that names the leaves. The copy is one jitted call,
        and the layout is worked out once per structure, shapes and dtypes: a second tree like the
        first costs about one dispatch.
        """
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        # Checked on every call, cached layout or not: an abstract leaf (jax.ShapeDtypeStruct) has
        # the shape and dtype of a real one, and must not reach _pack. One leaf of each type stands
        # for the others (a fifteenth of the time, for 2,000 leaves).
        if not all(map(is_array_like, {type(leaf): leaf for leaf in leaves}.values())):
            check_array_leaves(tree, "FlatTree.from_tree")
        signature = _signature(treedef, leaves, dtype)
        layout = _LAYOUTS.get(signature) if signature is not None else None
        if layout is None:
            layout = _layout(tree, dtype)
            if signature is not None:
                if len(_LAYOUTS) >= _MAX_LAYOUTS:
                    _LAYOUTS.pop(next(iter(_LAYOUTS)))  # the oldest
                _LAYOUTS[signature] = layout
        if len(leaves) > 1:
            buffer = _pack(tuple(leaves), layout.dtype)
        else:
            # A new array even for one leaf, so that donating the FlatTree never deletes the
            # caller's own array (a jitted identity may hand its input back).
            one = jnp.asarray(leaves[0]) if leaves else jnp.zeros((0,), layout.dtype)
            buffer = jnp.array(one.reshape(-1), dtype=layout.dtype, copy=True)
        return cls(buffer, layout)

    def to_tree(self) -> PyTree:
        """The tree again, each leaf a reshaped slice of the buffer (free inside ``jit``; outside,
        one small call per leaf, compiled once per leaf shape and buffer size).

        >>> FlatTree.from_tree({"a": jnp.arange(3.0), "b": None}).to_tree()
        {'a': Array([0., 1., 2.], dtype=float32), 'b': None}
        """
        layout = self.layout
        if not layout.shapes:
            return jax.tree.unflatten(layout.treedef, [])
        if isinstance(self.buffer, jax.core.Tracer):  # jit, grad, vmap: one split, traced
            return _views(self.buffer, layout)
        leaves = [
            _view(self.buffer, offset, shape)
            for offset, shape in zip(layout.offsets, layout.shapes, strict=True)
        ]
        return jax.tree.unflatten(layout.treedef, leaves)

    def __getitem__(self, path: str) -> jax.Array:
        """The leaf at ``path``, written as ``jax.tree_util.keystr`` writes it (``"['w']"``)."""
        try:
            index = self.layout.paths.index(path)
        except ValueError:
            raise KeyError(
                f"no leaf at {path}; the leaves are at {', '.join(self.layout.paths)}"
            ) from None
        return _view(self.buffer, self.layout.offsets[index], self.layout.shapes[index])

    @property
    def paths(self) -> tuple[str, ...]:
        """The key paths of the leaves, in buffer order."""
        return self.layout.paths

    def tree_flatten(self) -> tuple[tuple[jax.Array], FlatLayout]:
        return (self.buffer,), self.layout

    def tree_flatten_with_keys(
        self,
    ) -> tuple[tuple[tuple[jax.tree_util.GetAttrKey, jax.Array]], FlatLayout]:
        # The key path of the one leaf reads `.buffer` in summaries and error messages.
        return ((jax.tree_util.GetAttrKey("buffer"), self.buffer),), self.layout

    @classmethod
    def tree_unflatten(cls, layout: FlatLayout, children: tuple[Any, ...]) -> "FlatTree":
        # No validation here: transformations rebuild nodes with placeholder leaves.
        return cls(children[0], layout)

    def __repr__(self) -> str:
        return (
            f"FlatTree({len(self.layout.paths)} leaves, {self.layout.size:,} x "
            f"{self.layout.dtype.name}, "
            f"buffer={type(self.buffer).__name__})"
        )
