"""Tree math (course_lib/_tree_math.py) against optax.tree_utils, NumPy and values worked by hand.

Every function is also run under ``jax.jit``, with ``None`` subtrees, and with the two mistakes
it must explain: trees of different structure, and a leaf that is not an array.
"""

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax.tree_utils as otu
import pytest

import course_lib as cl
from course_lib._leaves import same_structure


def make_x() -> dict:
    return {
        "w": jnp.array([[1.0, 2.0], [3.0, 4.0]]),
        "b": [jnp.array([0.5, -1.0]), None],
        "s": jnp.float32(2.0),
    }


def make_y() -> dict:
    return {
        "w": jnp.array([[10.0, 20.0], [30.0, 40.0]]),
        "b": [jnp.array([-2.0, 4.0]), None],
        "s": jnp.float32(-3.0),
    }


def leaves64(tree: object) -> list[np.ndarray]:
    return [np.asarray(leaf, np.float64) for leaf in jax.tree.leaves(tree)]


def assert_tree_equal(
    actual: object, expected: object, rtol: float = 1e-6, atol: float = 0.0
) -> None:
    """Same structure (None subtrees included) and leaves equal up to float32 rounding."""
    assert same_structure(actual, expected)
    for a, e in zip(leaves64(actual), leaves64(expected), strict=True):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol)


# --- tree_add --------------------------------------------------------------------------------


def test_tree_add_two_trees_by_hand() -> None:
    result = cl.tree_add(make_x(), make_y())
    expected = {
        "w": np.array([[11.0, 22.0], [33.0, 44.0]]),
        "b": [np.array([-1.5, 3.0]), None],
        "s": np.float32(-1.0),
    }
    assert_tree_equal(result, expected)


def test_tree_add_three_trees_matches_optax_and_numpy() -> None:
    x, y = make_x(), make_y()
    z = jax.tree.map(lambda leaf: jnp.full_like(leaf, 0.25), x)
    result = cl.tree_add(x, y, z, x)
    assert_tree_equal(result, otu.tree_add(x, y, z, x))
    numpy_sum = [2 * a + b + 0.25 for a, b in zip(leaves64(x), leaves64(y), strict=True)]
    for got, want in zip(leaves64(result), numpy_sum, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_tree_add_keeps_none_like_optax() -> None:
    result = cl.tree_add(
        {"a": None, "b": (None, jnp.ones(1))}, {"a": None, "b": (None, jnp.ones(1))}
    )
    assert result["a"] is None and result["b"][0] is None
    assert_tree_equal(
        result,
        otu.tree_add({"a": None, "b": (None, jnp.ones(1))}, {"a": None, "b": (None, jnp.ones(1))}),
    )


def test_tree_add_under_jit() -> None:
    x, y = make_x(), make_y()
    assert_tree_equal(jax.jit(cl.tree_add)(x, y, x), otu.tree_add(x, y, x))


def test_tree_add_structure_error_names_the_path() -> None:
    with pytest.raises(cl.TreeStructureError) as info:
        cl.tree_add({"layer": {"w": jnp.ones(2)}}, {"layer": {"v": jnp.ones(2)}})
    message = str(info.value)
    assert "at ['layer']" in message
    assert "['w'] only in tree_x" in message and "['v'] only in tree_y" in message


def test_tree_add_structure_error_in_a_third_tree() -> None:
    x = {"a": [jnp.ones(2), jnp.ones(2)]}
    with pytest.raises(
        cl.TreeStructureError,
        match=r"`more\[0\]`.*\n.*at \['a'\]: list of length 2 in tree_x, length 1",
    ):
        cl.tree_add(x, x, {"a": [jnp.ones(2)]})


def test_tree_add_string_leaf_names_the_path() -> None:
    tree = {"layer": {"w": jnp.ones(2), "act": "relu"}}
    with pytest.raises(
        cl.TreeLeafError, match=r"tree_add: the leaf at \['layer'\]\['act'\] is str 'relu'"
    ):
        cl.tree_add(tree, tree)


# --- tree_sub --------------------------------------------------------------------------------


def test_tree_sub_by_hand_and_against_optax() -> None:
    x, y = make_x(), make_y()
    result = cl.tree_sub(x, y)
    expected = {
        "w": np.array([[-9.0, -18.0], [-27.0, -36.0]]),
        "b": [np.array([2.5, -5.0]), None],
        "s": np.float32(5.0),
    }
    assert_tree_equal(result, expected)
    assert_tree_equal(result, otu.tree_sub(x, y))


def test_tree_sub_under_jit() -> None:
    x, y = make_x(), make_y()
    assert_tree_equal(jax.jit(cl.tree_sub)(x, y), otu.tree_sub(x, y))


def test_tree_sub_list_versus_tuple_names_the_path() -> None:
    with pytest.raises(cl.TreeStructureError, match=r"at \['b'\]: list in tree_x, tuple in tree_y"):
        cl.tree_sub({"b": [jnp.ones(1)]}, {"b": (jnp.ones(1),)})


# --- tree_scale and tree_add_scale -------------------------------------------------------------


@pytest.mark.parametrize("scalar", [0.5, -2, np.float32(3.0), jnp.float32(0.25)])
def test_tree_scale_matches_optax_and_numpy(scalar: Any) -> None:
    x = make_x()
    result = cl.tree_scale(scalar, x)
    assert_tree_equal(result, otu.tree_scale(scalar, x))
    for got, leaf in zip(leaves64(result), leaves64(x), strict=True):
        np.testing.assert_allclose(got, float(scalar) * leaf, rtol=1e-6)


def test_tree_scale_keeps_dtype_and_none() -> None:
    result = cl.tree_scale(0.5, [jnp.ones(2, jnp.bfloat16), None])
    assert result[1] is None and result[0].dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(result[0], np.float64), [0.5, 0.5])


def test_tree_scale_under_jit_with_a_traced_scalar() -> None:
    x = make_x()
    assert_tree_equal(jax.jit(cl.tree_scale)(jnp.float32(-1.5), x), otu.tree_scale(-1.5, x))


def test_tree_scale_string_leaf_names_the_path() -> None:
    with pytest.raises(cl.TreeLeafError, match=r"the leaf at \[1\] is str"):
        cl.tree_scale(2.0, [jnp.ones(1), "name"])


def test_tree_add_scale_is_an_sgd_step() -> None:
    params, grads = make_x(), make_y()
    result = cl.tree_add_scale(params, -0.1, grads)
    assert_tree_equal(result, otu.tree_add_scale(params, -0.1, grads))
    for got, p, g in zip(leaves64(result), leaves64(params), leaves64(grads), strict=True):
        np.testing.assert_allclose(got, p - 0.1 * g, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.asarray(result["w"]), [[0.0, 0.0], [0.0, 0.0]], atol=1e-6)


def test_tree_add_scale_under_jit() -> None:
    x, y = make_x(), make_y()
    assert_tree_equal(jax.jit(cl.tree_add_scale)(x, 2.0, y), otu.tree_add_scale(x, 2.0, y))


def test_tree_add_scale_structure_error_names_the_path() -> None:
    with pytest.raises(
        cl.TreeStructureError,
        match=r"at \['b'\]\[1\]: None \(an empty subtree\) in tree_x, "
        r"a leaf \(f32\[2\]\) in tree_y",
    ):
        cl.tree_add_scale({"b": [jnp.ones(2), None]}, 1.0, {"b": [jnp.ones(2), jnp.ones(2)]})


# --- tree_vdot, tree_sum, tree_norm -----------------------------------------------------------


def test_tree_vdot_by_hand_and_against_optax() -> None:
    x, y = make_x(), make_y()
    # w: 10 + 40 + 90 + 160 = 300; b: -1 - 4 = -5; s: -6
    assert float(cl.tree_vdot(x, y)) == 289.0
    assert float(otu.tree_vdot(x, y)) == 289.0
    assert float(cl.tree_vdot(x, y)) == float(
        sum(np.vdot(a, b) for a, b in zip(leaves64(x), leaves64(y), strict=True))
    )


def test_tree_vdot_conjugates_the_first_tree_like_numpy() -> None:
    x = [jnp.array([1 + 2j, 3 - 1j])]
    y = [jnp.array([2 - 1j, 1j])]
    expected = np.vdot(np.array([1 + 2j, 3 - 1j]), np.array([2 - 1j, 1j]))
    np.testing.assert_allclose(complex(cl.tree_vdot(x, y)), expected, rtol=1e-6)
    np.testing.assert_allclose(complex(cl.tree_vdot(x, y)), complex(otu.tree_vdot(x, y)), rtol=1e-6)


def test_tree_vdot_under_jit_and_of_an_empty_tree() -> None:
    x, y = make_x(), make_y()
    assert float(jax.jit(cl.tree_vdot)(x, y)) == 289.0
    assert float(cl.tree_vdot({}, {})) == 0.0
    assert float(cl.tree_vdot({"a": None}, {"a": None})) == 0.0


def test_tree_vdot_structure_error_lists_every_difference() -> None:
    y = make_x()
    y["b"] = tuple(y["b"])  # a structural difference...
    y["w"] = jnp.ones(4)  # ...and a shape difference, reported with it
    with pytest.raises(cl.TreeStructureError) as info:
        cl.tree_vdot(make_x(), y)
    assert "at ['b']: list in tree_x, tuple in tree_y" in str(info.value)
    assert "at ['w']: shape (2, 2) in tree_x, (4,) in tree_y" in str(info.value)


def test_tree_sum_by_hand_and_against_optax() -> None:
    x = make_x()
    assert float(cl.tree_sum(x)) == 11.5  # 10 - 0.5 + 2
    assert float(cl.tree_sum(x)) == float(otu.tree_sum(x))
    assert float(cl.tree_sum(x)) == sum(leaf.sum() for leaf in leaves64(x))


def test_tree_sum_of_python_numbers_empty_tree_and_under_jit() -> None:
    assert float(cl.tree_sum([1.0, 2, (3.5, None)])) == 6.5
    assert float(cl.tree_sum({})) == 0.0
    assert float(jax.jit(cl.tree_sum)(make_x())) == 11.5


def test_tree_sum_string_leaf_names_the_path() -> None:
    with pytest.raises(cl.TreeLeafError, match=r"tree_sum: the leaf at \['name'\] is str 'mlp'"):
        cl.tree_sum({"name": "mlp", "w": jnp.ones(2)})


@pytest.mark.parametrize(
    ("ord_", "expected"),
    [
        (2, 5.0),
        (None, 5.0),
        (1, 7.0),
        (jnp.inf, 4.0),
        (np.inf, 4.0),
        ("inf", 4.0),
        ("infinity", 4.0),
    ],
)
def test_tree_norm_orders_by_hand(ord_: Any, expected: Any) -> None:
    tree = {"a": jnp.array([3.0, 0.0]), "b": [jnp.array(-4.0), None]}
    assert float(cl.tree_norm(tree, ord=ord_)) == expected
    assert float(cl.tree_norm(tree, ord=ord_, squared=True)) == expected**2
    assert float(otu.tree_norm(tree, ord=ord_)) == expected


@pytest.mark.parametrize("ord_", [2, 1, "inf"])
@pytest.mark.parametrize("squared", [False, True])
def test_tree_norm_matches_optax_and_numpy(ord_: Any, squared: Any) -> None:
    x = make_x()
    flat = np.concatenate([leaf.ravel() for leaf in leaves64(x)])
    numpy_norm = {
        2: np.linalg.norm(flat),
        1: np.linalg.norm(flat, 1),
        "inf": np.linalg.norm(flat, np.inf),
    }[ord_]
    expected = numpy_norm**2 if squared else numpy_norm
    np.testing.assert_allclose(
        float(cl.tree_norm(x, ord=ord_, squared=squared)), expected, rtol=1e-6
    )
    np.testing.assert_allclose(
        float(cl.tree_norm(x, ord=ord_, squared=squared)),
        float(otu.tree_norm(x, ord=ord_, squared=squared)),
        rtol=1e-6,
    )


def test_tree_norm_of_complex_leaves_matches_numpy() -> None:
    tree = [jnp.array([3 + 4j, 1j])]
    np.testing.assert_allclose(float(cl.tree_norm(tree)), np.linalg.norm([3 + 4j, 1j]), rtol=1e-6)
    np.testing.assert_allclose(float(cl.tree_norm(tree, ord=1)), 6.0, rtol=1e-6)
    np.testing.assert_allclose(float(cl.tree_norm(tree, ord="inf")), 5.0, rtol=1e-6)


@pytest.mark.parametrize("ord_", [2, 1, "inf"])
def test_tree_norm_under_jit(ord_: Any) -> None:
    x = make_x()
    jitted = jax.jit(lambda tree: cl.tree_norm(tree, ord=ord_))
    np.testing.assert_allclose(float(jitted(x)), float(otu.tree_norm(x, ord=ord_)), rtol=1e-6)


def test_tree_norm_of_an_empty_tree_is_a_float_zero_for_every_ord() -> None:
    for ord_ in (2, 1, "inf"):
        for squared in (False, True):
            norm = cl.tree_norm({"a": None}, ord=ord_, squared=squared)
            assert (norm.dtype, float(norm)) == (jnp.float32, 0.0)
    assert float(cl.tree_norm([jnp.zeros(0)], ord="inf")) == 0.0
    # Leaves of one dtype keep it: the empty-tree zero must not promote them.
    assert cl.tree_norm({"a": jnp.ones(2, jnp.bfloat16)}, ord="inf").dtype == jnp.bfloat16


def test_tree_norm_rejects_other_orders() -> None:
    with pytest.raises(ValueError, match="ord must be 2, 1 or inf, not 3"):
        cl.tree_norm(make_x(), ord=3)


# --- tree_zeros_like, tree_ones_like, tree_full_like ---------------------------------------------


@pytest.mark.parametrize("dtype", [None, jnp.int32, jnp.bfloat16])
def test_tree_zeros_ones_full_like_match_optax(dtype: Any) -> None:
    x = make_x()
    for ours, theirs, value in [
        (cl.tree_zeros_like(x, dtype), otu.tree_zeros_like(x, dtype), 0.0),
        (cl.tree_ones_like(x, dtype), otu.tree_ones_like(x, dtype), 1.0),
        (cl.tree_full_like(x, 7, dtype), otu.tree_full_like(x, 7, dtype), 7.0),
    ]:
        assert same_structure(ours, theirs) and same_structure(ours, x)
        for a, b, leaf in zip(
            jax.tree.leaves(ours), jax.tree.leaves(theirs), jax.tree.leaves(x), strict=True
        ):
            assert a.dtype == b.dtype == (dtype or leaf.dtype)
            np.testing.assert_array_equal(np.asarray(a, np.float64), np.full(leaf.shape, value))


def test_tree_zeros_like_of_python_numbers_and_under_jit() -> None:
    assert_tree_equal(cl.tree_zeros_like({"a": 3.0, "b": None}), {"a": np.float32(0.0), "b": None})
    result = jax.jit(lambda t: cl.tree_full_like(t, 0.5))(make_x())
    assert_tree_equal(result, otu.tree_full_like(make_x(), 0.5))
    zeros, ones = jax.jit(lambda t: (cl.tree_zeros_like(t), cl.tree_ones_like(t, jnp.int32)))(
        make_x()
    )
    assert_tree_equal(zeros, otu.tree_zeros_like(make_x()))
    assert_tree_equal(ones, otu.tree_ones_like(make_x(), jnp.int32))
    assert {leaf.dtype for leaf in jax.tree.leaves(ones)} == {jnp.dtype(jnp.int32)}


def test_tree_full_like_string_leaf_names_the_path() -> None:
    with pytest.raises(
        cl.TreeLeafError, match=r"tree_full_like: the leaf at \['cfg'\]\[0\] is str"
    ):
        cl.tree_ones_like({"cfg": ["adam"], "w": jnp.ones(1)})


# --- tree_size, tree_bytes, tree_cast
# ----------------------------------------------------------------


def test_tree_size_counts_elements_like_optax_and_numpy() -> None:
    x = make_x()
    assert cl.tree_size(x) == 7
    assert (
        cl.tree_size(x)
        == int(otu.tree_size(x))
        == sum(np.size(leaf) for leaf in jax.tree.leaves(x))
    )
    assert cl.tree_size({"a": None, "b": [1.0, 2]}) == 2
    assert cl.tree_size({}) == 0


def test_tree_size_and_bytes_under_jit_are_static() -> None:
    sizes = jax.jit(lambda t: (cl.tree_size(t), cl.tree_bytes(t)))(make_x())
    assert (int(sizes[0]), int(sizes[1])) == (7, 28)


def test_tree_bytes_by_hand() -> None:
    tree = {
        "f32": jnp.ones((2, 3)),
        "bf16": jnp.ones(4, jnp.bfloat16),
        "i8": jnp.ones(5, jnp.int8),
        "none": None,
    }
    assert cl.tree_bytes(tree) == 24 + 8 + 5
    assert cl.tree_bytes(tree) == sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(tree))


def test_tree_bytes_counts_numpy_leaves_in_their_own_dtype() -> None:
    tree = {"f64": np.ones(3), "i16": np.ones(2, np.int16)}
    assert cl.tree_bytes(tree) == np.ones(3).nbytes + np.ones(2, np.int16).nbytes == 28


def test_tree_bytes_counts_python_numbers_as_jax_scalars() -> None:
    # JAX stores a Python float as float32 and an int as int32 (x64 is off).
    assert jnp.asarray(0.1).nbytes == 4
    assert cl.tree_bytes({"lr": 0.1, "steps": 3, "flag": True}) == 4 + 4 + 1


def test_tree_cast_matches_optax_and_numpy() -> None:
    x = make_x()
    result = cl.tree_cast(x, jnp.bfloat16)
    expected = otu.tree_cast(x, jnp.bfloat16)
    assert same_structure(result, expected)
    for r, e, leaf in zip(
        jax.tree.leaves(result), jax.tree.leaves(expected), jax.tree.leaves(x), strict=True
    ):
        assert r.dtype == e.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(r), np.asarray(leaf).astype(jnp.bfloat16))


def test_tree_cast_none_dtype_returns_the_same_tree() -> None:
    x = make_x()
    assert cl.tree_cast(x, None) is x
    assert otu.tree_cast(x, None) is x


def test_tree_cast_python_numbers_and_under_jit() -> None:
    result = cl.tree_cast({"lr": 0.5, "n": None}, jnp.int32)
    assert result["n"] is None and result["lr"].dtype == jnp.int32 and int(result["lr"]) == 0
    jitted = jax.jit(lambda t: cl.tree_cast(t, jnp.float16))(make_x())
    assert {leaf.dtype for leaf in jax.tree.leaves(jitted)} == {jnp.dtype(jnp.float16)}


def test_tree_cast_string_leaf_names_the_path() -> None:
    with pytest.raises(cl.TreeLeafError, match=r"tree_cast: the leaf at \['act'\] is str"):
        cl.tree_cast({"act": "gelu"}, jnp.float16)


# --- tree_allclose -------------------------------------------------------------------------------


def test_tree_allclose_matches_optax_on_close_and_far_trees() -> None:
    x, y = make_x(), make_y()
    nudged = cl.tree_add_scale(x, 1e-7, y)
    for other, expected in [(x, True), (nudged, True), (y, False)]:
        assert cl.tree_allclose(x, other) is expected
        assert bool(otu.tree_allclose(x, other)) is expected


def test_tree_allclose_respects_rtol_and_atol() -> None:
    a, b = {"v": jnp.array([100.0])}, {"v": jnp.array([100.5])}
    # |a - b| = 0.5 <= atol + rtol * |b| decides, as in np.allclose
    assert cl.tree_allclose(a, b) is False
    assert cl.tree_allclose(a, b, rtol=1e-2) is True
    assert cl.tree_allclose(a, b, atol=0.6) is True
    assert cl.tree_allclose(a, b, rtol=4e-3, atol=0.0) is False
    assert np.allclose(100.0, 100.5, rtol=1e-2) and not np.allclose(
        100.0, 100.5, rtol=4e-3, atol=0.0
    )


def test_tree_allclose_nan_only_with_equal_nan() -> None:
    a = [jnp.array([1.0, jnp.nan])]
    assert cl.tree_allclose(a, a) is False
    assert cl.tree_allclose(a, a, equal_nan=True) is True


def test_tree_allclose_different_structure_or_shape_is_false() -> None:
    # optax raises on a structure mismatch and broadcasts shapes; ours answers False to both.
    assert cl.tree_allclose({"a": jnp.ones(2)}, {"b": jnp.ones(2)}) is False
    assert cl.tree_allclose([jnp.ones(2)], (jnp.ones(2),)) is False
    assert cl.tree_allclose([jnp.ones(3)], [jnp.ones(1)]) is False
    assert bool(otu.tree_allclose([jnp.ones(3)], [jnp.ones(1)])) is True


def test_tree_allclose_with_none_subtrees() -> None:
    assert cl.tree_allclose({"a": None, "b": 1.0}, {"a": None, "b": 1.0}) is True
    assert cl.tree_allclose({"a": None}, {"a": 0.0}) is False


def test_tree_allclose_under_jit() -> None:
    x, y = make_x(), make_y()
    jitted = jax.jit(cl.tree_allclose)
    assert bool(jitted(x, x)) is True
    assert bool(jitted(x, y)) is False
    assert bool(jax.jit(lambda a, b: cl.tree_allclose(a, b, atol=100.0))(x, y)) is True


def test_tree_allclose_string_leaf_names_the_path() -> None:
    with pytest.raises(cl.TreeLeafError, match=r"the leaf at \['act'\] is str"):
        cl.tree_allclose({"act": "relu"}, {"act": "relu"})


# --- abstract leaves ----------------------------------------------------------------------------


def _abstract_model() -> dict:
    def init() -> dict:
        return {
            "w": jnp.ones((3, 2)),
            "b": jnp.zeros(2, jnp.bfloat16),
            "blocks": [{"k": jnp.ones((4, 5, 6), jnp.int8)}, None],
        }

    return jax.eval_shape(init)


def test_tree_size_and_bytes_count_shape_dtype_structs_as_the_arrays_they_describe() -> None:
    abstract = _abstract_model()
    assert isinstance(abstract["w"], jax.ShapeDtypeStruct)
    concrete = jax.tree.map(lambda s: np.zeros(s.shape, s.dtype), abstract)
    assert cl.tree_size(abstract) == cl.tree_size(concrete) == 6 + 2 + 120
    assert cl.tree_bytes(abstract) == cl.tree_bytes(concrete) == 6 * 4 + 2 * 2 + 120 * 1


def test_abstract_leaves_are_counted_alike_by_size_summary_and_pictures() -> None:
    from course_lib import viz  # the pictures' totals must agree with the core's count

    abstract = _abstract_model()
    summary = cl.tree_summary(abstract)
    assert (
        (summary.size, summary.nbytes)
        == (cl.tree_size(abstract), cl.tree_bytes(abstract))
        == (128, 148)
    )
    assert "· 3 leaves · 128 params" in viz.TreeExplorer(abstract).label()
    assert "bfloat16" in str(summary)


def test_tree_norm_still_refuses_abstract_leaves() -> None:
    with pytest.raises(cl.TreeLeafError, match="ShapeDtypeStruct"):
        cl.tree_norm(_abstract_model())
