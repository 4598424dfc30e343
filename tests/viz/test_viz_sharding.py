"""The sharding pictures of course_lib.viz: each leaf's blocks with the devices that hold them, and
bytes per device."""

from typing import Any

import matplotlib
from jax.sharding import Mesh

matplotlib.use("Agg")

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import pytest
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from course_lib import viz
from course_lib.viz._sharding import device_ids_text


def _rectangles(ax: Axes) -> list[Rectangle]:
    patches = list(ax.patches)
    assert all(isinstance(p, Rectangle) for p in patches), patches
    return [p for p in patches if isinstance(p, Rectangle)]


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    # Explicit axes, JAX 0.10's default, named so that JAX 0.8 does not warn of the change
    explicit = (jax.sharding.AxisType.Explicit,) * 2
    return jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices("cpu"), axis_types=explicit)


def _labels(ax: Any) -> list[str]:
    return sorted(t.get_text() for t in ax.texts if t.get_gid() == "sharding-block")


def test_device_ids_text_writes_runs() -> None:
    assert device_ids_text([4, 0]) == "0,4"
    assert device_ids_text(list(range(8))) == "0-7"
    assert device_ids_text([1, 2, 3, 7]) == "1-3,7"


def test_draw_shardings_labels_each_block_with_its_devices(mesh: Mesh) -> None:
    tree = {
        "w": jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, P(None, "model"))),
        "norm": jax.device_put(jnp.ones(8), NamedSharding(mesh, P())),
        "host": 1.5,
    }
    fig = viz.draw_shardings(tree)
    assert isinstance(fig, Figure) and not plt.get_fignums()  # detached from pyplot
    norm_ax, w_ax = fig.axes[:2]  # leaves in key order: norm, w (the Python number is left out)
    assert _labels(norm_ax) == ["0-7"]
    assert _labels(w_ax) == ["0,4", "1,5", "2,6", "3,7"]
    assert w_ax.get_title() == "['w']\nf32[8,8] P(None, 'model')"
    assert len(w_ax.patches) == 4 and {p.get_width() for p in _rectangles(w_ax)} == {2}
    assert isinstance(fig, viz.DescribedFigure)
    assert fig.description.splitlines() == [  # its words say what each block's label says
        "How each leaf is laid out over the devices, one panel per leaf:",
        "['norm'] f32[8] P(): whole on devices 0-7",
        "['w'] f32[8,8] P(None, 'model'): 4 blocks: rows 0-7, columns 0-1 on devices 0,4; "
        "rows 0-7, columns 2-3 on devices 1,5; rows 0-7, columns 4-5 on devices 2,6; "
        "rows 0-7, columns 6-7 on devices 3,7",
    ]


def test_draw_shardings_draws_abstract_leaves_like_arrays(mesh: Mesh) -> None:
    sharding = NamedSharding(mesh, P("data", "model"))
    placed = viz.draw_shardings([jax.device_put(jnp.ones((4, 8)), sharding)])
    abstract = viz.draw_shardings([jax.ShapeDtypeStruct((4, 8), jnp.float32, sharding=sharding)])
    assert _labels(placed.axes[0]) == _labels(abstract.axes[0]) == [str(i) for i in range(8)]


def test_draw_shardings_shows_at_most_max_leaves(mesh: Mesh) -> None:
    tree = [jax.device_put(jnp.ones(4), NamedSharding(mesh, P())) for _ in range(5)]
    fig = viz.draw_shardings(tree, columns=2, max_leaves=3)
    assert sum(ax.axison for ax in fig.axes) == 3
    assert fig.get_suptitle() == "the first 3 of 5 leaves"
    assert fig.description.startswith(
        "How each leaf is laid out over the devices, one panel per leaf (the first 3 of 5 leaves):"
    )
    assert len(fig.description.splitlines()) == 1 + 3


def test_drawing_a_tree_that_lives_nowhere_says_what_to_do() -> None:
    with pytest.raises(ValueError, match="place it with jax.device_put"):
        viz.draw_shardings({"w": jnp.zeros(3).__array__(), "n": None})
    with pytest.raises(ValueError, match="give the shapes a sharding"):
        viz.draw_device_bytes([jax.ShapeDtypeStruct((3,), jnp.float32)])


def test_draw_device_bytes_has_one_bar_per_device(mesh: Mesh) -> None:
    devices = jax.devices("cpu")
    tree = {
        "a": jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("model"))),
        "b": jax.device_put(jnp.ones(3), devices[2]),
    }
    fig = viz.draw_device_bytes(tree)
    heights = [round(bar.get_height()) for bar in _rectangles(fig.axes[0])]
    assert heights == [32, 32, 44, 32, 32, 32, 32, 32]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [str(i) for i in range(8)]
    assert "44 B" in [t.get_text() for t in fig.axes[0].texts]
    assert isinstance(fig, viz.DescribedFigure)
    assert fig.description == "Bar chart, bytes per device: " + ", ".join(
        f"device {i} {'44 B' if i == 2 else '32 B'}" for i in range(8)
    )


def test_draw_device_bytes_into_given_axes(mesh: Mesh) -> None:
    fig, ax = plt.subplots()
    assert (
        viz.draw_device_bytes([jax.device_put(jnp.ones(2), NamedSharding(mesh, P()))], ax=ax) is fig
    )
    plt.close(fig)
