"""Hypothesis strategies for random pytrees.

A tree is built from dicts, lists, tuples, ``None``, the namedtuple :class:`Pair` and the
registered dataclass :class:`Layer` (whose ``activation`` is a static field), with float32 array
leaves of small random shapes. :func:`tree_pairs` draws two trees of one structure and shapes,
for the functions that combine trees leaf by leaf.
"""

import dataclasses
from typing import Any, NamedTuple

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import jax
import jax.numpy as jnp
import numpy as np


class Pair(NamedTuple):
    first: Any
    second: Any


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Layer:
    weight: Any
    bias: Any
    activation: str = dataclasses.field(default="relu", metadata={"static": True})


# Few distinct shapes, because every new shape costs each eager JAX operation a compilation.
# A scalar, vectors and matrices, and an empty leaf, where reductions go wrong.
shapes = st.sampled_from([(), (1,), (3,), (2, 2), (3, 1), (0,)])
_values = st.floats(-8.0, 8.0, width=32, allow_nan=False, allow_infinity=False)


def arrays(shape: tuple[int, ...]) -> st.SearchStrategy[jax.Array]:
    """A float32 JAX array of ``shape`` with moderate values."""
    return hnp.arrays(np.float32, shape, elements=_values).map(jnp.asarray)


def leaves() -> st.SearchStrategy[jax.Array]:
    return shapes.flatmap(arrays)


def _nodes(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(["a", "b", "c", "w", "bias"])
    return st.one_of(
        st.dictionaries(keys, children, max_size=3),
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.builds(Pair, children, children),
        st.builds(Layer, children, children, st.sampled_from(["relu", "tanh"])),
    )


def trees(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Random nested trees; ``None`` appears as an empty subtree."""
    base = st.one_of(leaves(), leaves(), leaves(), st.none())
    return st.recursive(base, _nodes, max_leaves=max_leaves)


def like(tree: Any) -> st.SearchStrategy[Any]:
    """Another tree with the structure and leaf shapes of ``tree``, and fresh values."""
    leaves_, treedef = jax.tree.flatten(tree)
    return st.tuples(*(arrays(np.shape(leaf)) for leaf in leaves_)).map(
        lambda new: jax.tree.unflatten(treedef, list(new))
    )


def tree_pairs(max_leaves: int = 6) -> st.SearchStrategy[tuple[Any, Any]]:
    """Two trees of one structure and one set of shapes."""
    return trees(max_leaves).flatmap(lambda tree: st.tuples(st.just(tree), like(tree)))
