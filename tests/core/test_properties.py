"""Properties of the tree functions over random trees (see strategies.py for what a tree can be).

Each function is compared with optax.tree_utils and with NumPy on the flattened leaves, and a
few laws tie the functions together.
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax.tree_utils as otu
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import tree_pairs, trees

import course_lib as cl
from course_lib._leaves import same_structure

# Modest: the whole file runs in well under 30 s on two cores.
modest = settings(max_examples=50, deadline=None)

scalars = st.floats(-4.0, 4.0, allow_nan=False, width=32)


def flat64(tree: object) -> np.ndarray:
    """Every element of every leaf, in leaf order, as one float64 vector."""
    parts = [np.asarray(leaf, np.float64).ravel() for leaf in jax.tree.leaves(tree)]
    return np.concatenate(parts) if parts else np.zeros(0)


def assert_same_tree(
    actual: object, expected: object, rtol: float = 1e-6, atol: float = 1e-6
) -> None:
    """Same structure, same leaf shapes, close values (checked here with NumPy, not course_lib)."""
    assert same_structure(actual, expected)
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        assert np.shape(a) == np.shape(e)
        np.testing.assert_allclose(
            np.asarray(a, np.float64), np.asarray(e, np.float64), rtol=rtol, atol=atol
        )


def numpy_map(fn: Callable[..., np.ndarray], *trees_: Any) -> Any:
    """``fn`` on float64 copies of matching leaves, rebuilt into the first tree's structure."""
    leaves = [jax.tree.leaves(t) for t in trees_]
    treedef = jax.tree.structure(trees_[0])
    return jax.tree.unflatten(
        treedef, [fn(*(np.asarray(x, np.float64) for x in xs)) for xs in zip(*leaves, strict=True)]
    )


# --- every function against optax and NumPy ---------------------------------------------------


@modest
@given(tree_pairs())
def test_tree_add_matches_optax_and_numpy(pair: tuple[Any, Any]) -> None:
    x, y = pair
    result = cl.tree_add(x, y, x)
    assert_same_tree(result, otu.tree_add(x, y, x))
    assert_same_tree(result, numpy_map(lambda a, b: 2 * a + b, x, y), rtol=1e-6, atol=1e-5)


@modest
@given(tree_pairs())
def test_tree_sub_matches_optax_and_numpy(pair: tuple[Any, Any]) -> None:
    x, y = pair
    result = cl.tree_sub(x, y)
    assert_same_tree(result, otu.tree_sub(x, y))
    assert_same_tree(result, numpy_map(np.subtract, x, y), atol=1e-5)


@modest
@given(trees(), scalars)
def test_tree_scale_matches_optax_and_numpy(tree: Any, scalar: float) -> None:
    result = cl.tree_scale(scalar, tree)
    assert_same_tree(result, otu.tree_scale(scalar, tree))
    assert_same_tree(result, numpy_map(lambda a: scalar * a, tree), atol=1e-5)


@modest
@given(tree_pairs(), scalars)
def test_tree_add_scale_matches_optax_and_numpy(pair: tuple[Any, Any], scalar: float) -> None:
    x, y = pair
    result = cl.tree_add_scale(x, scalar, y)
    assert_same_tree(result, otu.tree_add_scale(x, scalar, y))
    assert_same_tree(result, numpy_map(lambda a, b: a + scalar * b, x, y), atol=1e-4)


@modest
@given(tree_pairs())
def test_tree_vdot_matches_optax_and_numpy(pair: tuple[Any, Any]) -> None:
    x, y = pair
    result = cl.tree_vdot(x, y)
    expected = float(np.dot(flat64(x), flat64(y)))
    np.testing.assert_allclose(float(result), float(otu.tree_vdot(x, y)), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(float(result), expected, rtol=1e-5, atol=1e-4)


@modest
@given(trees())
def test_tree_sum_matches_optax_and_numpy(tree: Any) -> None:
    result = float(cl.tree_sum(tree))
    np.testing.assert_allclose(result, float(otu.tree_sum(tree)), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(result, flat64(tree).sum(), rtol=1e-5, atol=1e-4)


@modest
@given(trees(), st.booleans())
def test_tree_norm_matches_optax_and_numpy(tree: Any, squared: bool) -> None:
    v = flat64(tree)
    numpy_norms: dict[int | str, float] = {
        2: np.sqrt(np.sum(v**2)),
        1: np.sum(np.abs(v)),
        "inf": np.max(np.abs(v), initial=0.0),  # an empty tree has norm 0 here
    }
    for ord_, expected in numpy_norms.items():
        if squared:
            expected = expected**2
        result = float(cl.tree_norm(tree, ord=ord_, squared=squared))
        np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-4, err_msg=f"ord={ord_}")
        if v.size:  # optax's inf-norm of a tree with no elements is -inf
            reference = float(otu.tree_norm(tree, ord=ord_, squared=squared))
            np.testing.assert_allclose(
                result, reference, rtol=1e-5, atol=1e-4, err_msg=f"ord={ord_}"
            )


@modest
@given(trees(), st.sampled_from([None, jnp.int32, jnp.bfloat16]))
def test_tree_like_constructors_match_optax_and_numpy(tree: Any, dtype: Any) -> None:
    for ours, theirs, value in [
        (cl.tree_zeros_like(tree, dtype), otu.tree_zeros_like(tree, dtype), 0.0),
        (cl.tree_ones_like(tree, dtype), otu.tree_ones_like(tree, dtype), 1.0),
        (cl.tree_full_like(tree, 3.0, dtype), otu.tree_full_like(tree, 3.0, dtype), 3.0),
    ]:
        assert same_structure(ours, tree)
        for ours_leaf, theirs_leaf, leaf in zip(
            jax.tree.leaves(ours), jax.tree.leaves(theirs), jax.tree.leaves(tree), strict=True
        ):
            assert ours_leaf.dtype == theirs_leaf.dtype == (dtype or leaf.dtype)
            np.testing.assert_array_equal(
                np.asarray(ours_leaf, np.float64), np.full(np.shape(leaf), value)
            )


@modest
@given(trees())
def test_tree_size_and_bytes_match_optax_and_numpy(tree: Any) -> None:
    numpy_leaves = [np.asarray(leaf) for leaf in jax.tree.leaves(tree)]
    assert cl.tree_size(tree) == int(otu.tree_size(tree)) == sum(a.size for a in numpy_leaves)
    assert cl.tree_bytes(tree) == sum(a.nbytes for a in numpy_leaves)
    assert cl.tree_bytes(cl.tree_cast(tree, jnp.bfloat16)) == 2 * sum(a.size for a in numpy_leaves)


@modest
@given(trees(), st.sampled_from([jnp.float16, jnp.bfloat16, jnp.int32]))
def test_tree_cast_matches_optax_and_numpy(tree: Any, dtype: Any) -> None:
    result = cl.tree_cast(tree, dtype)
    expected = otu.tree_cast(tree, dtype)
    assert same_structure(result, expected)
    for r, e, leaf in zip(
        jax.tree.leaves(result), jax.tree.leaves(expected), jax.tree.leaves(tree), strict=True
    ):
        assert r.dtype == e.dtype == jnp.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(r, np.float64), np.asarray(e, np.float64))
        np.testing.assert_array_equal(np.asarray(r), np.asarray(leaf).astype(jnp.dtype(dtype)))


@modest
@given(tree_pairs(), st.sampled_from([0.0, 1e-7, 1e-3]))
def test_tree_allclose_matches_optax_and_numpy(pair: tuple[Any, Any], noise: float) -> None:
    x, y = pair
    # y itself (far from x, almost surely) and x nudged by a noise that may or may not be tolerated.
    for other in (y, jax.tree.map(lambda a, b: a + noise * b, x, y)):
        ours = cl.tree_allclose(x, other)
        assert ours is True or ours is False
        assert ours == bool(otu.tree_allclose(x, other))
        as_float32 = [
            np.concatenate(
                [np.ravel(leaf) for leaf in jax.tree.leaves(t)] or [np.zeros(0, np.float32)]
            )
            for t in (x, other)
        ]
        first, second = as_float32
        assert ours == bool(np.allclose(first, second, rtol=1e-5, atol=1e-8))


# --- laws ---------------------------------------------------------------------------------------


@modest
@given(trees())
def test_flatten_unflatten_round_trip(tree: Any) -> None:
    leaves, treedef = jax.tree.flatten(tree)
    rebuilt = jax.tree.unflatten(treedef, leaves)
    assert same_structure(rebuilt, tree)
    assert all(a is b for a, b in zip(jax.tree.leaves(rebuilt), leaves, strict=True))
    assert cl.tree_diff(tree, rebuilt) == []


def backend_flushes_subnormals() -> bool:
    """Whether the default backend's programs flush subnormal float32 values to zero even where
    they only move them (a TPU's do; the CPU's keep them), seen in one compiled concatenate."""
    tiny = np.array([1e-42], np.float32)
    moved = jax.jit(lambda a, b: jnp.concatenate([a, b]))(tiny, tiny)
    return not np.array_equal(np.asarray(moved), np.concatenate([tiny, tiny]))


def assert_kept(actual: np.ndarray, expected: np.ndarray) -> None:
    """Equal, except that where the backend flushes subnormals a subnormal may read back as 0
    (on a TPU, one that went through a compiled concatenate does; a plain copy keeps it)."""
    if BACKEND_FLUSHES_SUBNORMALS:
        subnormal = (expected != 0) & (np.abs(expected) < np.finfo(np.float32).tiny)
        actual = np.where(subnormal & (actual == 0), expected, actual)
    np.testing.assert_array_equal(actual, expected)


BACKEND_FLUSHES_SUBNORMALS = backend_flushes_subnormals()


@modest
@given(trees())
# A subnormal value (1.98e-42) among normal ones, in two leaves and in one.
@example([jnp.zeros(()), jnp.asarray(np.float32(1.98e-42))])
@example({"w": jnp.asarray(np.array([-1.5, -1.98e-42, 3.0], np.float32))})
def test_flat_tree_round_trip(tree: Any) -> None:
    """Every value comes back exactly, in the buffer and in the tree read back from it, except
    that a backend that flushes subnormals may flush them here too."""
    flat = cl.FlatTree.from_tree(tree)
    assert flat.buffer.shape == (cl.tree_size(tree),)
    assert_kept(np.asarray(flat.buffer, np.float64), flat64(tree))
    back = flat.to_tree()
    assert same_structure(back, tree)
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(tree), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert_kept(np.asarray(a), np.asarray(b))


@modest
@given(trees())
def test_tree_diff_of_a_tree_with_itself_is_empty(tree: Any) -> None:
    assert cl.tree_diff(tree, tree) == []
    copy = jax.tree.map(lambda leaf: leaf + 0, tree)
    assert cl.tree_diff(tree, copy) == []


@modest
@given(trees().filter(lambda t: len(jax.tree.leaves(t)) > 0), st.data())
def test_tree_diff_finds_one_changed_shape(tree: Any, data: st.DataObject) -> None:
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(tree)
    index = data.draw(st.integers(0, len(with_paths) - 1), label="leaf index")
    path, leaf = with_paths[index]
    changed = [leaf for _, leaf in with_paths]
    changed[index] = jnp.zeros((*leaf.shape, 2), leaf.dtype)
    diff = cl.tree_diff(tree, jax.tree.unflatten(treedef, changed))
    where = jax.tree_util.keystr(path) or "<root>"
    assert diff == [f"at {where}: shape {leaf.shape} in a, {(*leaf.shape, 2)} in b"]


@modest
@given(tree_pairs())
def test_add_then_sub_gives_back_x(pair: tuple[Any, Any]) -> None:
    x, y = pair
    assert_same_tree(cl.tree_sub(cl.tree_add(x, y), y), x, rtol=1e-6, atol=1e-5)


@modest
@given(trees())
def test_vdot_with_itself_is_squared_norm(tree: Any) -> None:
    norm = float(cl.tree_norm(tree))
    np.testing.assert_allclose(float(cl.tree_vdot(tree, tree)), norm**2, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(
        float(cl.tree_norm(tree, squared=True)), norm**2, rtol=1e-5, atol=1e-4
    )


@modest
@given(trees())
def test_summary_totals_agree_with_size_and_bytes(tree: Any) -> None:
    summary = cl.tree_summary(tree)
    assert summary.size == cl.tree_size(tree)
    assert summary.nbytes == cl.tree_bytes(tree)
    assert [row.path for row in summary.rows] == [
        jax.tree_util.keystr(p) or "<root>" for p, _ in jax.tree_util.tree_leaves_with_path(tree)
    ]
