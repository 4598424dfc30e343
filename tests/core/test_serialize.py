"""save_tree and load_tree (course_lib/_serialize.py)."""

import os
import stat
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import course_lib as cl
from course_lib._leaves import same_structure


class Pair(NamedTuple):
    first: object
    second: object


def make_tree() -> dict:
    return {
        "w": jnp.arange(6.0).reshape(2, 3),
        "b": [jnp.array([1, 2], jnp.int32), None],
        "pair": Pair(jnp.float32(0.5), jnp.ones(2, jnp.bfloat16)),
    }


def assert_identical(actual: object, expected: object) -> None:
    assert same_structure(actual, expected)
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        np.testing.assert_array_equal(np.asarray(a, np.float64), np.asarray(e, np.float64))


def test_save_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    cl.save_tree(path, make_tree())
    assert_identical(cl.load_tree(path, like=make_tree()), make_tree())


def test_file_is_keyed_by_key_path(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    cl.save_tree(path, make_tree())
    with np.load(path) as data:
        stored = {name: data[name] for name in data.files if not name.startswith("__")}
    assert sorted(stored) == ["['b'][0]", "['pair'].first", "['pair'].second", "['w']"]
    np.testing.assert_array_equal(stored["['w']"], np.arange(6.0).reshape(2, 3))


def test_bfloat16_survives_the_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "half.npz"
    tree = {
        "h": jnp.array([1.5, -0.25, 3.0], jnp.bfloat16),
        "f8": jnp.array([0.5, 2.0], jnp.float8_e4m3fn),
    }
    cl.save_tree(path, tree)
    loaded = cl.load_tree(path, like=tree)
    assert loaded["h"].dtype == jnp.bfloat16 and loaded["f8"].dtype == jnp.float8_e4m3fn
    np.testing.assert_array_equal(np.asarray(loaded["h"], np.float32), [1.5, -0.25, 3.0])
    np.testing.assert_array_equal(np.asarray(loaded["f8"], np.float32), [0.5, 2.0])


def test_root_leaf_and_empty_tree(tmp_path: Path) -> None:
    cl.save_tree(tmp_path / "leaf.npz", jnp.arange(3.0))
    np.testing.assert_array_equal(
        np.asarray(cl.load_tree(tmp_path / "leaf.npz", like=jnp.zeros(3))), [0.0, 1.0, 2.0]
    )
    cl.save_tree(tmp_path / "empty.npz", {"a": None})
    assert cl.load_tree(tmp_path / "empty.npz", like={"a": None}) == {"a": None}


def test_like_may_be_shapes_only(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    cl.save_tree(path, make_tree())
    shapes = jax.eval_shape(make_tree)
    assert isinstance(shapes["w"], jax.ShapeDtypeStruct)
    assert_identical(cl.load_tree(path, like=shapes), make_tree())


def test_missing_key_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    tree = make_tree()
    del tree["w"]
    cl.save_tree(path, tree)
    with pytest.raises(cl.TreeStructureError) as info:
        cl.load_tree(path, like=make_tree())
    assert (
        str(info.value) == f"load_tree: {path} does not fit the structure of `like`:\n"
        "  - ['w'] is missing from the file"
    )


def test_extra_key_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    cl.save_tree(path, {**make_tree(), "extra": jnp.ones(1)})
    with pytest.raises(
        cl.TreeStructureError, match=r"\n  - \['extra'\] is in the file but not in `like`$"
    ):
        cl.load_tree(path, like=make_tree())


def test_wrong_shape_and_dtype_name_the_path(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    cl.save_tree(path, make_tree())
    like = make_tree()
    like["w"] = jnp.zeros((3, 2))
    like["b"][0] = jnp.zeros(2, jnp.float32)
    with pytest.raises(cl.TreeStructureError) as info:
        cl.load_tree(path, like=like)
    lines = str(info.value).splitlines()[1:]
    assert lines == [
        "  - ['b'][0] is int32[2] in the file, float32[2] in `like`",
        "  - ['w'] is float32[2, 3] in the file, float32[3, 2] in `like`",
    ]


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    cl.save_tree(path, make_tree())
    cl.save_tree(path, {**make_tree(), "w": jnp.zeros((2, 3))})  # overwrite in place
    assert os.listdir(tmp_path) == ["params.npz"]
    np.testing.assert_array_equal(
        np.asarray(cl.load_tree(path, like=make_tree())["w"]), np.zeros((2, 3))
    )


def test_failed_write_keeps_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "params.npz"
    cl.save_tree(path, make_tree())
    before = path.read_bytes()
    with pytest.raises(cl.TreeLeafError):
        cl.save_tree(path, {"w": "not an array"})
    (tmp_path / "taken").mkdir()
    with pytest.raises(IsADirectoryError):
        cl.save_tree(tmp_path / "taken", make_tree())  # written beside it, then the rename fails
    assert sorted(os.listdir(tmp_path)) == ["params.npz", "taken"]
    assert path.read_bytes() == before


def test_saved_file_has_the_usual_permissions(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    os.umask(umask)
    path = tmp_path / "params.npz"
    cl.save_tree(path, make_tree())
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_load_tree_refuses_the_same_paths_in_other_containers(tmp_path: Path) -> None:
    target = tmp_path / "pair.npz"
    cl.save_tree(target, (jnp.ones(2), jnp.zeros(1)))
    with pytest.raises(
        cl.TreeStructureError, match=r"PyTreeDef\(\(\*, \*\)\).*PyTreeDef\(\[\*, \*\]\)"
    ):
        cl.load_tree(target, like=[jnp.ones(2), jnp.zeros(1)])
    assert isinstance(cl.load_tree(target, like=(jnp.ones(2), jnp.zeros(1))), tuple)
