"""FlatTree (course_lib/_flat.py): one buffer for a whole tree, a pytree itself."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import course_lib as cl
from course_lib import _flat
from course_lib._leaves import same_structure


def make_tree() -> dict:
    return {
        "w": jnp.arange(6.0).reshape(2, 3),
        "b": [jnp.array([10.0, 20.0]), None],
        "s": jnp.float32(-1.0),
    }


def loss(tree: dict) -> jax.Array:
    return jnp.sum(jnp.sin(tree["w"]) * tree["s"]) + jnp.sum(tree["b"][0] ** 2) * tree["s"]


def test_from_tree_buffer_layout_by_hand() -> None:
    flat = cl.FlatTree.from_tree(make_tree())
    # Leaves in jax.tree.leaves order: ['b'][0] (2), ['s'] (1), ['w'] (6).
    np.testing.assert_array_equal(
        np.asarray(flat.buffer), [10.0, 20.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    )
    assert flat.paths == ("['b'][0]", "['s']", "['w']")
    assert flat.layout.offsets == (0, 2, 3)
    assert flat.layout.shapes == ((2,), (), (2, 3))
    assert (flat.layout.size, flat.layout.dtype) == (9, np.dtype(np.float32))


def test_from_tree_to_tree_round_trip() -> None:
    tree = make_tree()
    back = cl.FlatTree.from_tree(tree).to_tree()
    assert same_structure(back, tree)
    assert back["b"][1] is None
    for a, b in zip(jax.tree.leaves(back), jax.tree.leaves(tree), strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_getitem_by_keystr_path() -> None:
    flat = cl.FlatTree.from_tree(make_tree())
    np.testing.assert_array_equal(np.asarray(flat["['w']"]), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(np.asarray(flat["['b'][0]"]), [10.0, 20.0])
    assert flat["['s']"].shape == () and float(flat["['s']"]) == -1.0
    for path, leaf in jax.tree_util.tree_leaves_with_path(make_tree()):
        np.testing.assert_array_equal(
            np.asarray(flat[jax.tree_util.keystr(path)]), np.asarray(leaf)
        )


def test_getitem_unknown_path_lists_the_paths() -> None:
    flat = cl.FlatTree.from_tree(make_tree())
    with pytest.raises(
        KeyError, match=r"no leaf at \['x'\]; the leaves are at \['b'\]\[0\], \['s'\], \['w'\]"
    ):
        flat["['x']"]


def test_mixed_dtypes_name_a_leaf_of_each_dtype() -> None:
    tree = {f"f{i}": jnp.ones(1) for i in range(6)} | {"z": jnp.ones(2, jnp.int32)}
    with pytest.raises(cl.TreeLeafError) as info:
        cl.FlatTree.from_tree(tree)
    message = str(info.value)
    assert "different dtypes (float32 at ['f0'], int32 at ['z'])" in message
    assert "dtype=" in message


def test_dtype_casts_every_leaf() -> None:
    tree = {"f": jnp.array([1.5, -2.0]), "i": jnp.array([3, 4], jnp.int32)}
    flat = cl.FlatTree.from_tree(tree, dtype=jnp.bfloat16)
    assert flat.buffer.dtype == jnp.bfloat16 and flat.layout.dtype == np.dtype(jnp.bfloat16)
    back = flat.to_tree()
    assert back["i"].dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(back["f"], np.float32), [1.5, -2.0])
    np.testing.assert_array_equal(np.asarray(back["i"], np.float32), [3.0, 4.0])
    as_float = cl.FlatTree.from_tree({"i": jnp.array([1, 2], jnp.int32)}, dtype=np.float32)
    assert as_float.buffer.dtype == jnp.float32


def test_string_leaf_names_the_path() -> None:
    with pytest.raises(cl.TreeLeafError, match=r"FlatTree.from_tree: the leaf at \['act'\] is str"):
        cl.FlatTree.from_tree({"w": jnp.ones(2), "act": "relu"})


@pytest.mark.parametrize("real_tree_first", [False, True])
def test_abstract_leaf_is_refused_before_and_after_a_real_tree_of_its_shapes(
    real_tree_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The layout of a structure, shapes and dtypes is kept after its first tree; a tree of
    ``ShapeDtypeStruct`` leaves has the same ones, and is refused by name all the same. The kept
    layouts start empty, as in a fresh process."""
    monkeypatch.setattr(_flat, "_LAYOUTS", {})
    shape = (5, 7)
    abstract = {"w": jax.ShapeDtypeStruct(shape, jnp.float32), "b": jnp.ones(3)}
    real = {"w": jnp.ones(shape), "b": jnp.ones(3)}
    refused = r"FlatTree.from_tree: the leaf at \['w'\] is ShapeDtypeStruct"
    if not real_tree_first:
        with pytest.raises(cl.TreeLeafError, match=refused):
            cl.FlatTree.from_tree(abstract)
    assert cl.FlatTree.from_tree(real).layout.shapes == ((3,), shape)
    with pytest.raises(cl.TreeLeafError, match=refused):
        cl.FlatTree.from_tree(abstract)


def test_flat_tree_is_a_pytree_with_one_leaf() -> None:
    flat = cl.FlatTree.from_tree(make_tree())
    (leaf,) = jax.tree.leaves(flat)
    assert leaf is flat.buffer
    ((path, _),) = jax.tree_util.tree_leaves_with_path(flat)
    assert jax.tree_util.keystr(path) == ".buffer"
    doubled = jax.tree.map(lambda b: 2 * b, flat)
    assert isinstance(doubled, cl.FlatTree) and doubled.layout == flat.layout
    np.testing.assert_array_equal(np.asarray(doubled["['w']"]), 2 * np.arange(6.0).reshape(2, 3))


def test_tree_summary_of_a_flat_tree_names_its_buffer() -> None:
    summary = cl.tree_summary(cl.FlatTree.from_tree(make_tree()))
    assert [(r.path, r.shape, r.nbytes) for r in summary.rows] == [(".buffer", (9,), 36)]


def test_grad_of_a_function_of_a_flat_tree_is_a_flat_tree() -> None:
    tree = make_tree()
    flat = cl.FlatTree.from_tree(tree)
    flat_grads = jax.grad(lambda f: loss(f.to_tree()))(flat)
    assert isinstance(flat_grads, cl.FlatTree) and flat_grads.layout == flat.layout
    tree_grads = jax.grad(loss)(tree)
    np.testing.assert_allclose(
        np.asarray(flat_grads.buffer),
        np.asarray(cl.FlatTree.from_tree(tree_grads).buffer),
        rtol=1e-6,
    )
    # and by hand for one leaf: d/ds = sum(sin(w)) + sum(b**2)
    expected_ds = np.sum(np.sin(np.arange(6.0))) + 10.0**2 + 20.0**2
    np.testing.assert_allclose(float(flat_grads["['s']"]), expected_ds, rtol=1e-6)


def test_flat_tree_under_jit() -> None:
    tree = make_tree()
    flat = cl.FlatTree.from_tree(tree)
    scaled = jax.jit(lambda f: cl.tree_scale(3.0, f))(flat)
    assert isinstance(scaled, cl.FlatTree)
    np.testing.assert_array_equal(np.asarray(scaled.buffer), 3.0 * np.asarray(flat.buffer))
    built = jax.jit(cl.FlatTree.from_tree)(tree)
    np.testing.assert_array_equal(np.asarray(built.buffer), np.asarray(flat.buffer))
    w = jax.jit(lambda f: f.to_tree()["w"] + f["['s']"])(flat)
    np.testing.assert_array_equal(np.asarray(w), np.arange(6.0).reshape(2, 3) - 1.0)


def test_same_layout_reuses_the_compiled_program() -> None:
    double = jax.jit(lambda f: cl.tree_scale(2.0, f))
    a = cl.FlatTree.from_tree({"w": jnp.ones(3), "b": jnp.ones(2)})
    b = cl.FlatTree.from_tree({"w": jnp.zeros(3), "b": jnp.zeros(2)})
    other = cl.FlatTree.from_tree(
        {"w": jnp.ones(2), "b": jnp.ones(3)}
    )  # same buffer size, other layout
    double(a)
    with cl.count_compiles() as counter:
        double(b)
        double(other)
    assert counter.compiles == 1


def test_different_layouts_are_different_structures() -> None:
    a = cl.FlatTree.from_tree({"w": jnp.ones(3), "b": jnp.ones(2)})
    b = cl.FlatTree.from_tree({"w": jnp.ones(2), "b": jnp.ones(3)})
    with pytest.raises(cl.TreeStructureError, match=r"at <root>: FlatTree node metadata"):
        cl.tree_add(a, b)


def test_empty_tree() -> None:
    flat = cl.FlatTree.from_tree({"a": None, "b": []})
    assert flat.buffer.shape == (0,) and flat.buffer.dtype == jnp.float32
    assert flat.paths == () and flat.layout.size == 0
    assert flat.to_tree() == {"a": None, "b": []}
    assert repr(flat) == "FlatTree(0 leaves, 0 x float32, buffer=ArrayImpl)"


def test_repr() -> None:
    assert (
        repr(cl.FlatTree.from_tree(make_tree()))
        == "FlatTree(3 leaves, 9 x float32, buffer=ArrayImpl)"
    )


def test_from_tree_single_leaf_is_a_copy_so_donation_spares_the_caller() -> None:
    leaf = jnp.arange(4.0)
    flat = cl.FlatTree.from_tree([leaf])
    assert flat.buffer is not leaf
    opt = cl.sgd(0.5)
    opt.apply_gradients(cl.FlatTree.from_tree([jnp.ones(4)]), opt.init(flat), flat)
    assert not leaf.is_deleted() and flat.buffer.is_deleted()


def test_to_tree_gradient_is_one_concatenate_not_a_padded_buffer_per_leaf() -> None:
    flat = cl.FlatTree.from_tree([{"w": jnp.ones((2, 2)), "b": jnp.zeros(2)} for _ in range(3)])

    def loss(f: cl.FlatTree) -> jax.Array | int:
        return sum(jnp.sum(leaf**2) for leaf in jax.tree.leaves(f.to_tree()))

    jaxpr = str(jax.make_jaxpr(jax.grad(loss))(flat))
    assert "pad[" not in jaxpr and jaxpr.count("concatenate[") == 1


def test_to_tree_outside_jit_compiles_per_leaf_shape_not_per_layout() -> None:
    """One program returning every view would compile again for each new layout, and for seconds
    with hundreds of leaves on the CPU backend; outside ``jit`` each leaf is read by a program
    compiled once per shape (and buffer size), so another tree of those shapes compiles nothing."""

    def tree_of(name: str) -> dict:
        return {f"{name}{i:02d}": jnp.full((2, 3), float(i)) for i in range(40)} | {
            "b": jnp.arange(5.0)
        }

    cl.FlatTree.from_tree(tree_of("p")).to_tree()
    tree = tree_of("q")  # another structure, so another layout
    flat = cl.FlatTree.from_tree(tree)
    with cl.count_compiles() as counter:
        back = flat.to_tree()
        leaf = flat["['q07']"]
    assert counter.compiles == 0
    assert same_structure(back, tree)
    for path in ("q00", "q07", "q39", "b"):
        np.testing.assert_array_equal(back[path], tree[path])
    np.testing.assert_array_equal(leaf, tree["q07"])


def test_a_second_tree_like_the_first_costs_no_compile_and_gets_its_own_values() -> None:
    first = cl.FlatTree.from_tree({"w": jnp.ones((2, 3)), "b": jnp.zeros(2)})
    tree = {"w": jnp.asarray(np.full((2, 3), 5.0, np.float32)), "b": jnp.asarray([0.0, 1.0])}
    with cl.count_compiles() as counter:
        second = cl.FlatTree.from_tree(tree)
    assert counter.compiles == 0
    assert second.layout == first.layout
    np.testing.assert_array_equal(second.buffer, [0.0, 1.0, 5, 5, 5, 5, 5, 5])


@pytest.mark.parametrize(
    "other",
    [
        {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)},  # same structure and size, other shapes
        {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)},  # another size
        {"w": jnp.ones((2, 3)), "c": jnp.zeros(2)},  # another key
    ],
)
def test_a_remembered_layout_is_never_given_to_another_tree(other: dict) -> None:
    cl.FlatTree.from_tree({"w": jnp.ones((2, 3)), "b": jnp.zeros(2)})
    flat = cl.FlatTree.from_tree(other)
    assert same_structure(flat.to_tree(), other)
    np.testing.assert_array_equal(flat.to_tree()["w"], other["w"])


def test_mixed_dtypes_are_refused_even_after_the_structure_was_seen() -> None:
    cl.FlatTree.from_tree({"w": jnp.ones(3), "b": jnp.ones(2)})
    with pytest.raises(cl.TreeLeafError, match=r"float32 at \['b'\], int32 at \['w'\]"):
        cl.FlatTree.from_tree({"w": jnp.ones(3, jnp.int32), "b": jnp.ones(2)})


def test_numpy_and_python_leaves_take_the_dtype_jax_gives_them() -> None:
    flat = cl.FlatTree.from_tree({"a": np.arange(3.0), "b": 2.0})
    assert flat.buffer.dtype == jnp.float32 and flat.layout.dtype == np.float32
    np.testing.assert_array_equal(flat.buffer, [0.0, 1.0, 2.0, 2.0])
