"""tree_bytes_per_device and leaf_shards (course_lib/_sharding.py), on the 8 CPU devices of the
tests."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import course_lib as cl
from course_lib._sharding import leaf_shards


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    # Explicit axes, JAX 0.10's default, named so that JAX 0.8 does not warn of the change
    explicit = (jax.sharding.AxisType.Explicit,) * 2
    return jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices("cpu"), axis_types=explicit)


def test_leaf_shards_of_a_split_and_a_replicated_leaf(mesh: Mesh) -> None:
    split = jax.device_put(jnp.ones((8, 12)), NamedSharding(mesh, P("data", "model")))
    copies = jax.device_put(jnp.ones(5), NamedSharding(mesh, P()))
    split_shards, copy_shards = leaf_shards(split), leaf_shards(copies)
    assert split_shards is not None and copy_shards is not None
    assert set(split_shards.values()) == {(4, 3)}
    assert set(copy_shards.values()) == {(5,)}
    assert sorted(d.id for d in split_shards) == list(range(8))


def test_leaf_shards_of_host_values_and_shapes_without_sharding() -> None:
    assert leaf_shards(np.ones(3)) is None
    assert leaf_shards(0.5) is None
    assert leaf_shards(jax.ShapeDtypeStruct((3,), jnp.float32)) is None


def test_bytes_per_device_counts_blocks_in_their_dtypes(mesh: Mesh) -> None:
    tree = {
        "w": jax.device_put(
            jnp.ones((8, 12), jnp.bfloat16), NamedSharding(mesh, P(None, "model"))
        ),  # 8 x 3 x 2 bytes
        "b": jax.device_put(
            jnp.ones(4, jnp.int8), NamedSharding(mesh, P())
        ),  # 4 bytes on every device
        "none": None,
        "lr": 0.1,
    }
    counts = cl.tree_bytes_per_device(tree)
    assert [d.id for d in counts] == list(range(8))
    assert set(counts.values()) == {8 * 3 * 2 + 4}


def test_bytes_per_device_of_abstract_leaves_equals_that_of_their_arrays(mesh: Mesh) -> None:
    sharding = NamedSharding(mesh, P("model", "data"))
    array = jax.device_put(jnp.ones((16, 6)), sharding)
    shape = jax.ShapeDtypeStruct((16, 6), jnp.float32, sharding=sharding)
    assert (
        cl.tree_bytes_per_device([shape])
        == cl.tree_bytes_per_device([array])
        == dict.fromkeys(jax.devices("cpu"), 4 * 3 * 4)
    )


def test_bytes_per_device_when_leaves_live_on_different_devices(mesh: Mesh) -> None:
    devices = jax.devices("cpu")
    tree = [
        jax.device_put(jnp.ones(10), devices[3]),
        jax.device_put(jnp.ones(2), devices[5]),
        jax.device_put(jnp.ones(1), devices[3]),
    ]
    counts = cl.tree_bytes_per_device(tree)
    assert {d.id: n for d, n in counts.items()} == {3: 44, 5: 8}


def test_bytes_per_device_sums_to_the_bytes_of_every_copy(mesh: Mesh) -> None:
    params = {"a": jnp.ones((8, 8)), "b": jnp.ones(8)}
    shardings = {"a": NamedSharding(mesh, P("data", "model")), "b": NamedSharding(mesh, P("model"))}
    placed = jax.device_put(params, shardings)
    # a is split over all 8 devices (one copy); b over 'model' only, so each block has 2 copies
    assert sum(cl.tree_bytes_per_device(placed).values()) == cl.tree_bytes(
        params["a"]
    ) + 2 * cl.tree_bytes(params["b"])


def test_an_empty_tree_lives_nowhere() -> None:
    assert cl.tree_bytes_per_device({"a": None, "b": []}) == {}
