"""Looking at trees: a per-leaf summary, the structural differences between two trees, and a
closeness assertion that names the leaf at fault."""

import html
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from ._leaves import (
    ATOL,
    RTOL,
    children,
    close_elements,
    human_bytes,
    is_array_like,
    is_namedtuple,
    key_text,
    leaf_dtype,
    leaf_nbytes,
    leaf_size,
    leaf_spec,
    metadata,
    path_text,
    same_structure,
)
from ._typing import PyTree


@dataclass(frozen=True)
class LeafRow:
    """One leaf of a :class:`TreeSummary`."""

    path: str
    shape: tuple[int, ...] | None
    dtype: str
    size: int
    nbytes: int


@dataclass(frozen=True)
class TreeSummary:
    """Key path, shape, dtype and size of every leaf, and totals; prints as text, shows a table."""

    rows: tuple[LeafRow, ...]

    @property
    def size(self) -> int:
        """Elements in all array leaves."""
        return sum(row.size for row in self.rows)

    @property
    def nbytes(self) -> int:
        """Bytes in all array leaves."""
        return sum(row.nbytes for row in self.rows)

    def _cells(self) -> list[tuple[str, str, str, str, str]]:
        cells = [("path", "shape", "dtype", "size", "bytes")]
        for row in self.rows:
            shape = "" if row.shape is None else str(row.shape)
            cells.append((row.path, shape, row.dtype, f"{row.size:,}", human_bytes(row.nbytes)))
        leaves = f"{len(self.rows)} lea{'f' if len(self.rows) == 1 else 'ves'}"
        cells.append((f"total: {leaves}", "", "", f"{self.size:,}", human_bytes(self.nbytes)))
        return cells

    def __str__(self) -> str:
        cells = self._cells()
        widths = [max(len(row[i]) for row in cells) for i in range(5)]
        lines = []
        for i, row in enumerate(cells):
            left = [row[j].ljust(widths[j]) for j in range(3)]
            right = [row[j].rjust(widths[j]) for j in range(3, 5)]
            lines.append("  ".join(left + right).rstrip())
            if i == 0 or i == len(cells) - 2:
                lines.append("-" * len(lines[0]))
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        cells = self._cells()
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cells[0])
        body = "".join(
            "<tr>" + "".join(f"<td><code>{html.escape(c)}</code></td>" for c in row) + "</tr>"
            for row in cells[1:-1]
        )
        total = "".join(f"<th>{html.escape(c)}</th>" for c in cells[-1])
        return (
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            f"<tfoot><tr>{total}</tr></tfoot></table>"
        )


def tree_summary(tree: PyTree) -> TreeSummary:
    """Summarise every leaf of ``tree`` by key path, with the total size and bytes.

    >>> print(tree_summary({"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}))
    path             shape   dtype    size  bytes
    ---------------------------------------------
    ['b']            (2,)    float32     2    8 B
    ['w']            (3, 2)  float32     6   24 B
    ---------------------------------------------
    total: 2 leaves                      8   32 B
    """
    rows = []
    for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
        size, nbytes = leaf_size(leaf), leaf_nbytes(leaf)
        if size is not None and nbytes is not None:
            rows.append(
                LeafRow(path_text(path), tuple(np.shape(leaf)), leaf_dtype(leaf).name, size, nbytes)
            )
        else:
            rows.append(LeafRow(path_text(path), None, type(leaf).__name__, 0, 0))
    return TreeSummary(tuple(rows))


class TreeDiff(list[str]):
    """The differences :func:`tree_diff` found, one plain sentence each; empty when none.

    ``paths`` holds the key path of each sentence, in the same order (the place a picture marks).
    """

    def __init__(self, found: Iterable[tuple[tuple[Any, ...], str]] = ()) -> None:
        pairs = list(found)
        super().__init__(sentence for _, sentence in pairs)
        self.paths: tuple[tuple[Any, ...], ...] = tuple(path for path, _ in pairs)

    def __repr__(self) -> str:
        if not self:
            return "TreeDiff: no differences"
        return f"TreeDiff: {len(self)} difference{'s' if len(self) > 1 else ''}\n" + "\n".join(
            f"  {line}" for line in self
        )


def _children(node: Any) -> tuple[list[tuple[Any, Any]], Any] | None:
    """Children with their keys and the node's metadata, or ``None`` for a leaf."""
    kids = children(node)
    return None if kids is None else (kids, metadata(node))


def _same_metadata(meta_a: Any, meta_b: Any) -> bool:
    # Static fields may hold values whose == is elementwise (NumPy arrays); JAX then cannot
    # compare the two structures either, so anything but a plain True counts as different.
    try:
        return bool(meta_a == meta_b)
    except (TypeError, ValueError):
        return meta_a is meta_b


def _kind(node: Any) -> str:
    if node is None:
        return "None"
    kind = type(node).__name__
    if is_namedtuple(node):
        return f"namedtuple {kind}"
    return kind


def _leaf_phrase(leaf: Any) -> str:
    # In a comparison the Python type matters too: 1 and 1.0 are different leaves.
    if isinstance(leaf, (bool, int, float, complex)):
        return f"{type(leaf).__name__} {leaf!r}"
    return leaf_spec(leaf)


def _node_phrase(node: Any) -> str:
    return "None (an empty subtree)" if node is None else f"a {_kind(node)} node"


def _walk_diff(
    path: tuple[Any, ...], a: Any, b: Any, names: Sequence[str], prefix: bool
) -> Iterator[tuple[tuple[Any, ...], str]]:
    where = path_text(path)
    na, nb = names
    ca, cb = _children(a), _children(b)
    if prefix and ca is None:  # a leaf of a prefix stands for whatever b has at its place
        return
    if ca is None and cb is None:
        sa, sb = _leaf_phrase(a), _leaf_phrase(b)
        if is_array_like(a) and is_array_like(b):
            shape_a, shape_b = np.shape(a), np.shape(b)
            if shape_a != shape_b:
                yield path, f"at {where}: shape {shape_a} in {na}, {shape_b} in {nb}"
            dtype_a, dtype_b = leaf_dtype(a), leaf_dtype(b)
            if dtype_a != dtype_b:
                yield path, f"at {where}: dtype {dtype_a} in {na}, {dtype_b} in {nb}"
        elif type(a) is not type(b):
            yield path, f"at {where}: leaf {sa} in {na}, leaf {sb} in {nb}"
        return
    if ca is None or cb is None:
        da = f"a leaf ({_leaf_phrase(a)})" if ca is None else _node_phrase(a)
        db = f"a leaf ({_leaf_phrase(b)})" if cb is None else _node_phrase(b)
        yield path, f"at {where}: {da} in {na}, {db} in {nb}"
        return
    if type(a) is not type(b):
        yield path, f"at {where}: {_kind(a)} in {na}, {_kind(b)} in {nb}"
        return
    (kids_a, meta_a), (kids_b, meta_b) = ca, cb
    keys_a = [key_text(k) for k, _ in kids_a]
    keys_b = [key_text(k) for k, _ in kids_b]
    if isinstance(a, (list, tuple)) and not is_namedtuple(a) and len(kids_a) != len(kids_b):
        yield (
            path,
            f"at {where}: {_kind(a)} of length {len(kids_a)} in {na}, length {len(kids_b)} in {nb}",
        )
        return
    if keys_a != keys_b:
        only_a = [k for k in keys_a if k not in keys_b]
        only_b = [k for k in keys_b if k not in keys_a]
        parts = []
        if only_a:
            parts.append(f"{', '.join(only_a)} only in {na}")
        if only_b:
            parts.append(f"{', '.join(only_b)} only in {nb}")
        if not parts:  # an OrderedDict remembers its order, and the order is part of the structure
            parts.append(
                f"the same keys in another order ({', '.join(keys_a)} in {na}, "
                f"{', '.join(keys_b)} in {nb})"
            )
        yield path, f"at {where}: {_kind(a)} keys differ: {'; '.join(parts)}"
    elif not isinstance(a, dict) and not _same_metadata(meta_a, meta_b):
        yield (
            path,
            f"at {where}: {_kind(a)} node metadata (static fields) {meta_a!r} in {na}, "
            f"{meta_b!r} in {nb}",
        )
    by_key_b = dict(zip(keys_b, kids_b, strict=True))
    for name, (key, child_a) in zip(keys_a, kids_a, strict=True):
        if name in by_key_b:
            yield from _walk_diff((*path, key), child_a, by_key_b[name][1], names, prefix)


def tree_diff(
    tree_a: PyTree, tree_b: PyTree, names: Sequence[str] = ("a", "b"), prefix: bool = False
) -> TreeDiff:
    """Every structural difference between two trees, by key path, in plain language.

    Reports container types, dict keys, sequence lengths, node metadata (such as a static
    dataclass field), and each leaf's shape and dtype. Leaf values are not compared.

    With ``prefix=True``, ``tree_a`` is read as JAX reads a prefix tree (the first tree of
    ``jax.tree.map``, a sharding tree, ``in_axes``): each of its leaves stands for the whole
    subtree of ``tree_b`` at its place, so only its nodes are compared, and the answer is empty
    exactly when ``tree_a`` is a prefix of ``tree_b``.

    >>> tree_diff({"w": jnp.ones(3), "b": [1.0]}, {"w": jnp.ones(2), "c": (1.0,)})
    TreeDiff: 2 differences
      at <root>: dict keys differ: ['b'] only in a; ['c'] only in b
      at ['w']: shape (3,) in a, (2,) in b
    >>> tree_diff({"w": 0, "layers": 1}, {"w": jnp.ones(2), "layers": [jnp.ones(2)]}, prefix=True)
    TreeDiff: no differences
    """
    return TreeDiff(_walk_diff((), tree_a, tree_b, names, prefix))


def assert_trees_close(
    actual: PyTree,
    expected: PyTree,
    rtol: float = RTOL,
    atol: float = ATOL,
    equal_nan: bool = False,
) -> None:
    """Raise ``AssertionError`` unless the trees match in structure and their leaves are close.

    Structure is compared first (the message lists every difference); then leaves, in order, and
    the message names the first leaf that differs, with the largest difference and where it is.
    Closeness and its defaults (``rtol=1e-5``, ``atol=1e-8``, NaN unequal to NaN unless
    ``equal_nan``) are those of ``cl.tree_allclose``; leaves that are no arrays must be equal.

    >>> assert_trees_close({"w": jnp.ones(2)}, {"w": jnp.array([1.0, 1.5])})
    Traceback (most recent call last):
    AssertionError: leaf ['w'] differs: 1 of 2 elements not close (rtol=1e-05, atol=1e-08); \
largest difference 0.5 at index (1,): actual 1.0, expected 1.5
    """
    if not same_structure(actual, expected):
        lines = "\n".join(
            f"  {line}" for line in tree_diff(actual, expected, ("actual", "expected"))
        )
        raise AssertionError(
            "trees differ in structure:\n"
            f"  actual:   {jax.tree.structure(actual)}\n"
            f"  expected: {jax.tree.structure(expected)}\n{lines}"
        )
    pairs = zip(jax.tree_util.tree_leaves_with_path(actual), jax.tree.leaves(expected), strict=True)
    for (path, leaf_a), leaf_e in pairs:
        where = path_text(path)
        if not (is_array_like(leaf_a) and is_array_like(leaf_e)):
            if leaf_a != leaf_e:
                raise AssertionError(
                    f"leaf {where} differs: actual {leaf_a!r}, expected {leaf_e!r}"
                )
            continue
        a, e = np.asarray(leaf_a), np.asarray(leaf_e)
        if a.shape != e.shape:
            raise AssertionError(f"leaf {where} has shape {a.shape}, expected {e.shape}")
        close = np.asarray(close_elements(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan))
        if not close.all():
            gap = np.where(close, 0, np.abs(a.astype(np.float64) - e.astype(np.float64)))
            worst = np.unravel_index(np.argmax(gap), a.shape) if a.shape else ()
            index = tuple(int(i) for i in worst)
            raise AssertionError(
                f"leaf {where} differs: {int((~close).sum())} of {a.size} elements not close "
                f"(rtol={rtol:.3g}, atol={atol:.3g}); largest difference {gap[worst]:.3g} at index "
                f"{index}: actual {a[worst].item()!r}, expected {e[worst].item()!r}"
            )
