"""The sharding pictures of course_lib.viz: each leaf's blocks with the devices that hold them, in
the colours JAX's own drawing gives them, and bytes per device, one layout or several."""

import re
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
from matplotlib.colors import to_hex
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


@pytest.mark.parametrize(
    "spec", [P(None, "model"), P("model", None), P("data", "model"), P("data"), P()], ids=str
)
def test_draw_shardings_colours_each_block_as_jax_draws_it_with_device_colors(
    mesh: Mesh, spec: P, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One scheme: JAX's own drawing with ``color_map=viz.DEVICE_COLORS`` gives every block the
    colour that draw_shardings gives it (read from the background colours JAX prints)."""
    leaf = jax.device_put(jnp.ones((8, 8)), NamedSharding(mesh, spec))
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich prints colours into the captured output,
    monkeypatch.setenv("COLORTERM", "truecolor")  # as 24-bit ones
    monkeypatch.delenv("NO_COLOR", raising=False)
    jax.debug.visualize_array_sharding(leaf, color_map=viz.DEVICE_COLORS)
    printed = capsys.readouterr().out
    seen = []  # JAX's blocks' backgrounds, in reading order, each once
    for line in printed.splitlines():
        for rgb in re.findall(r"48;2;(\d+);(\d+);(\d+)m", line):
            color = "#" + "".join(f"{int(c):02x}" for c in rgb)
            if color not in seen:
                seen.append(color)
    fig = viz.draw_shardings([leaf])
    drawn = [
        to_hex(patch.get_facecolor())
        for patch in sorted(_rectangles(fig.axes[0]), key=lambda p: (p.get_y(), p.get_x()))
    ]
    assert seen and seen == list(dict.fromkeys(drawn)), (seen, drawn)


def test_draw_device_bytes_compares_layouts_in_the_unit_of_its_labels(mesh: Mesh) -> None:
    matrix = jnp.ones((32, 64))  # 8 KiB
    replicated = {"w": jax.device_put(matrix, NamedSharding(mesh, P()))}
    by_rules = {"w": jax.device_put(matrix, NamedSharding(mesh, P(None, "model")))}
    fig = viz.draw_device_bytes(replicated, by_rules, names=("replicated", "by rules"))
    ax = fig.axes[0]
    bars = _rectangles(ax)
    assert [round(b.get_height(), 2) for b in bars] == [8.0] * 8 + [2.0] * 8
    assert ax.get_ylabel() == "KiB"
    labels = [t.get_text() for t in ax.texts]
    assert labels == ["8.0 KiB"] * 8 + ["2.0 KiB"] * 8
    assert bars[0].get_hatch() != bars[8].get_hatch()  # told apart without colour too
    legend = ax.get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["replicated", "by rules"]
    assert isinstance(fig, viz.DescribedFigure)
    assert fig.description.startswith(
        "Bar chart, bytes per device, replicated against by rules: "
        "device 0: replicated 8.0 KiB, by rules 2.0 KiB; device 1: "
    )
    with pytest.raises(ValueError, match="names must name each of the 2 trees"):
        viz.draw_device_bytes(replicated, by_rules)
