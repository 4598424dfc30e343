"""The leaf and node readers every module shares (course_lib/_leaves.py): leaf size above all.

A leaf's size is the number of elements it holds or describes: an array's element count, the
same count for a ``jax.ShapeDtypeStruct`` of that shape, 1 for a Python number, and no size for
an object that is no array. ``cl.tree_size``, ``cl.tree_summary`` and the pictures all count so.
"""

import dataclasses
from collections import namedtuple
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import course_lib as cl
from course_lib._leaves import (
    is_namedtuple,
    key_text,
    leaf_nbytes,
    leaf_size,
    same_structure,
    shorten,
)
from course_lib.viz._labels import leaf_totals

SIZES = [
    (jnp.ones((3, 2)), 6, 24),
    (np.ones((2, 5), dtype=np.float64), 10, 80),
    (jnp.zeros((0, 4)), 0, 0),
    (jnp.float32(2.0), 1, 4),
    (np.int8(3), 1, 1),
    (jnp.array(1.5, dtype=jnp.bfloat16), 1, 2),
    (jax.ShapeDtypeStruct((4, 5), jnp.float32), 20, 80),
    (jax.ShapeDtypeStruct((), jnp.int32), 1, 4),
    (jax.ShapeDtypeStruct((3, 0), jnp.float32), 0, 0),
    (0.5, 1, 4),
    (7, 1, 4),
    (True, 1, 1),
    (1j, 1, 8),
]


@pytest.mark.parametrize(("leaf", "size", "nbytes"), SIZES, ids=lambda v: repr(v)[:30])
def test_leaf_size_counts_elements_held_or_described(leaf: Any, size: int, nbytes: int) -> None:
    assert leaf_size(leaf) == size
    assert leaf_nbytes(leaf) == nbytes


def test_abstract_leaf_counts_like_the_array_it_describes() -> None:
    tree = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2, dtype=jnp.bfloat16), "s": jnp.float32(1)}
    abstract = jax.eval_shape(lambda: tree)
    assert all(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree.leaves(abstract))
    assert cl.tree_size(abstract) == cl.tree_size(tree) == 9
    assert cl.tree_bytes(abstract) == cl.tree_bytes(tree) == 24 + 4 + 4
    assert cl.tree_summary(abstract).size == cl.tree_summary(tree).size == 9


def test_objects_that_are_no_array_have_no_size() -> None:
    for leaf in ("relu", object(), b"xy"):
        assert leaf_size(leaf) is None and leaf_nbytes(leaf) is None
    # cl.tree_summary lists them with size 0; cl.tree_size refuses them with the path.
    assert cl.tree_summary({"act": "relu", "w": jnp.ones(3)}).size == 3
    with pytest.raises(cl.TreeLeafError, match=r"\['act'\]"):
        cl.tree_size({"act": "relu"})


def test_every_counter_agrees_with_leaf_size() -> None:
    leaves = [leaf for leaf, _, _ in SIZES]
    assert cl.tree_size(leaves) == sum(size for _, size, _ in SIZES)
    assert cl.tree_bytes(leaves) == sum(nbytes for _, _, nbytes in SIZES)
    summary = cl.tree_summary(leaves)
    assert [row.size for row in summary.rows] == [size for _, size, _ in SIZES]
    assert [leaf_totals(leaf).params for leaf in leaves] == [size for _, size, _ in SIZES]


def test_shorten_keeps_the_limit_with_one_ellipsis() -> None:
    assert shorten("relu", 4) == "relu"
    assert shorten("gelu_tanh", 5) == "gelu…"
    assert len(shorten("x" * 500, 120)) == 120 and shorten("x" * 500, 120).endswith("x…")


def test_namedtuple_and_key_text() -> None:
    Point = namedtuple("Point", "x y")
    assert is_namedtuple(Point(1, 2)) and not is_namedtuple((1, 2)) and not is_namedtuple([1])
    paths = [path for path, _ in jax.tree_util.tree_leaves_with_path(({"w": 1}, Point(1, [2])))]
    assert [key_text(path[-1]) for path in paths] == ["['w']", ".x", "[0]"]
    assert [key_text(path[0]) for path in paths] == ["[0]", "[1]", "[1]"]


def test_same_structure() -> None:
    assert same_structure({"a": 1.0, "b": None}, {"b": None, "a": jnp.ones(3)})
    assert not same_structure([1.0], (1.0,))
    assert not same_structure({"a": None}, {"a": 0.0})
    assert same_structure({"a": None}, {"a": 0.0}, is_leaf=lambda x: x is None)


def test_same_structure_tells_registered_dataclasses_apart() -> None:
    # jaxlib 0.10.2's PyTreeDef == holds for two dataclasses with the same fields; a jitted
    # function's cache can then reuse one class's program for the other (about 1 call in 100).
    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Weights:
        w: Any

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass(frozen=True)
    class FrozenWeights:
        w: Any

    assert same_structure(Weights(1.0), Weights(jnp.ones(2)))
    assert not same_structure(Weights(1.0), FrozenWeights(1.0))
    assert not same_structure({"m": [Weights(1.0)]}, {"m": [FrozenWeights(1.0)]})
    assert same_structure({"m": [FrozenWeights(1.0)]}, {"m": [FrozenWeights(2.0)]})
