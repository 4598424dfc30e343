"""Pictures of a tree spread over devices: each leaf's layout, and the bytes on each device."""

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap, to_hex
from matplotlib.figure import Figure, SubFigure
from matplotlib.patches import Rectangle

from .. import PyTree
from .._leaves import human_bytes, leaf_spec, path_text
from .._sharding import leaf_shards, tree_bytes_per_device
from ._figure import MAX_WIDTH_PX, MIN_LABEL_PT, PX_PER_PT, DescribedFigure, detached_figure

_COLORS = ("#1f4e8c", "#8c2d19", "#2d6b2d", "#6b3d8c", "#7a5a00", "#00666b", "#8c1f5a", "#4d4d4d")
"""The colours of a layout's blocks, each dark enough for white labels at 6.3:1 or more."""
DEVICE_COLORS = ListedColormap(_COLORS, name="course-devices")
"""The same colours as a matplotlib colour map, for ``jax.debug.visualize_array_sharding(x,
color_map=viz.DEVICE_COLORS)``: JAX then colours each block of ``x`` as `draw_shardings` does, and
writes white labels on them (its default map puts white text on pale pink, at 2.1:1)."""
_PANEL = (2.3, 2.1)  # inches, at 72 points each: three panels fit the page's width (MAX_WIDTH_PX)
_FIT = int(MAX_WIDTH_PX // (_PANEL[0] * 72 * PX_PER_PT))


def device_ids_text(ids: list[int]) -> str:
    """Device ids as runs: ``0-3,6``.

    >>> device_ids_text([0, 1, 2, 3, 6])
    '0-3,6'
    """
    runs: list[list[int]] = []
    for i in sorted(ids):
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ",".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _layout_text(leaf: Any) -> str:
    sharding = leaf.sharding
    spec = getattr(sharding, "spec", None)
    if spec is not None:
        # P(...) as JAX 0.10 prints it; earlier releases print PartitionSpec(...)
        return "P(" + ", ".join(repr(axis) for axis in spec) + ")"
    if len(sharding.device_set) == 1:
        return "one device"
    return type(sharding).__name__


def _blocks(leaf: Any) -> dict[tuple[int, int, int, int], list[int]]:
    """``{(row0, row1, col0, col1): [device ids]}``: the leaf as a matrix (a vector is one row)."""
    shape = leaf.shape
    rows, cols = (shape[0], shape[1]) if len(shape) >= 2 else (1, shape[0] if shape else 1)
    found: dict[tuple[int, int, int, int], list[int]] = {}
    for device, index in leaf.sharding.devices_indices_map(shape).items():
        if len(shape) >= 2:
            r, c = index[0].indices(rows), index[1].indices(cols)
        else:
            r, c = (0, 1, 1), index[0].indices(cols) if shape else (0, 1, 1)
        found.setdefault((r[0], r[1], c[0], c[1]), []).append(device.id)
    return found


def block_colors(leaf: Any) -> dict[tuple[int, int, int, int], str]:
    """The colour of each block of ``leaf`` (keyed as `_blocks` keys them), the one
    ``jax.debug.visualize_array_sharding(leaf, color_map=DEVICE_COLORS)`` gives it.

    JAX colours the blocks by their place, not by their devices: for ``n`` blocks in reading
    order it takes ``n`` evenly spaced points of the colour map, from its first colour to its
    last, and hands them out striding by about half of ``n``.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> list(block_colors(jax.device_put(jnp.ones(3))).values())
    ['#1f4e8c']
    """
    blocks = sorted(_blocks(leaf), key=lambda block: (block[0], block[2]))  # reading order
    count = len(blocks)
    points = np.linspace(0, 1, count)
    order, place = [], 0
    for _ in range(count):
        order.append(place)
        place = (place + count // 2 + (count % 2 == 0)) % count
    return {
        block: to_hex(DEVICE_COLORS(points[point]))
        for block, point in zip(blocks, order, strict=True)
    }


def _draw_leaf(ax: Axes, path: str, leaf: Any) -> None:
    shape = leaf.shape
    rows, cols = (shape[0], shape[1]) if len(shape) >= 2 else (1, shape[0] if shape else 1)
    colors = block_colors(leaf)
    for (r0, r1, c0, c1), ids in sorted(_blocks(leaf).items()):
        color = colors[(r0, r1, c0, c1)]
        ax.add_patch(
            Rectangle((c0, r0), c1 - c0, r1 - r0, facecolor=color, edgecolor="white", lw=1.5)
        )
        ax.text(
            (c0 + c1) / 2,
            (r0 + r1) / 2,
            device_ids_text(ids),
            ha="center",
            va="center",
            fontsize=MIN_LABEL_PT,
            color="white",
            gid="sharding-block",
        )
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(
        f"{path}\n{leaf_spec(leaf)} {_layout_text(leaf)}", fontsize=MIN_LABEL_PT, family="monospace"
    )


def draw_shardings(tree: PyTree, columns: int = _FIT, max_leaves: int = 24) -> DescribedFigure:
    """Draw how every leaf of ``tree`` is laid out over the devices, one small panel per leaf,
    ``columns`` panels to a line (at most 3, which fit the width of a notebook or of the course's
    website, so that the labels are shown at their size).

    A panel is the leaf as a matrix (a vector is one row, a scalar one cell; beyond two dimensions
    the first two are drawn), cut into the blocks the devices hold; each block is labelled with
    the ids of the devices that hold it (``0-3``: devices 0 to 3 hold copies). The title gives
    the key path, shape, dtype and ``PartitionSpec``. Leaves that live on no device (NumPy
    arrays, Python numbers, shapes without a sharding) are left out; abstract leaves with a
    sharding are drawn as their arrays would be. The figure's ``description`` says each block and
    the devices that hold it in words.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig = draw_shardings({"w": jax.device_put(jnp.ones((4, 2)))})
    >>> [t.get_text() for t in fig.axes[0].texts], fig.axes[0].get_title()
    (['0'], "['w']\\nf32[4,2] one device")
    """
    placed = [
        (path_text(p), leaf)
        for p, leaf in jax.tree_util.tree_leaves_with_path(tree)
        if leaf_shards(leaf)
    ]
    if not placed:
        raise ValueError(
            "no leaf of this tree lives on a device: place it with jax.device_put, or give the "
            "shapes a sharding"
        )
    shown = placed[:max_leaves]
    columns = max(1, min(columns, _FIT, len(shown)))
    lines = -(-len(shown) // columns)
    fig = detached_figure((_PANEL[0] * columns, _PANEL[1] * lines), layout="constrained")
    axes = fig.subplots(lines, columns, squeeze=False)
    for ax, (path, leaf) in zip(axes.flat, shown, strict=False):  # the grid may have spare axes
        _draw_leaf(ax, path, leaf)
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_axis_off()
    head = "How each leaf is laid out over the devices, one panel per leaf"
    if len(placed) > len(shown):
        fig.suptitle(f"the first {len(shown)} of {len(placed)} leaves", fontsize=9)
        head += f" (the first {len(shown)} of {len(placed)} leaves)"
    fig.description = "\n".join([head + ":", *(_leaf_words(path, leaf) for path, leaf in shown)])
    return fig


def _devices_words(ids: list[int]) -> str:
    return ("device " if len(ids) == 1 else "devices ") + device_ids_text(ids)


def _leaf_words(path: str, leaf: Any) -> str:
    """One panel of `draw_shardings` in words: the leaf, then each block and who holds it."""
    blocks = sorted(_blocks(leaf).items())
    head = f"{path} {leaf_spec(leaf)} {_layout_text(leaf)}"
    if len(blocks) == 1:
        return f"{head}: whole on {_devices_words(blocks[0][1])}"
    parts = [
        f"rows {r0}-{r1 - 1}, columns {c0}-{c1 - 1} on {_devices_words(ids)}"
        for (r0, r1, c0, c1), ids in blocks
    ]
    return f"{head}: {len(blocks)} blocks: " + "; ".join(parts)


_LAYOUT_BARS = (("#1f4e8c", ""), ("#7a5a00", "//"), ("#2d6b2d", ".."), ("#6b3d8c", "xx"))
"""Colour and hatching of each tree's bars in `draw_device_bytes`: told apart by pattern too."""


def _unit(largest: float) -> tuple[str, int]:
    """The unit `human_bytes` writes ``largest`` in, and its size in bytes."""
    for power, unit in enumerate(("B", "KiB", "MiB")):
        if largest < 1024 ** (power + 1):
            return unit, 1024**power
    return "GiB", 1024**3


def draw_device_bytes(
    tree: PyTree,
    *others: PyTree,
    names: Sequence[str] = (),
    ax: Axes | None = None,
    title: str = "bytes per device",
) -> Figure | SubFigure:
    """A labelled bar per device: the bytes of ``tree`` it holds (``cl.tree_bytes_per_device``).
    Give ``others`` (the same model in other layouts) and ``names``, one per tree, to compare
    them: a group of bars per device, one bar per tree, each tree in its own colour and
    hatching, with a legend. The axis counts in the unit of the bars' labels.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig = draw_device_bytes({"w": jax.device_put(jnp.ones((4, 2)))})
    >>> [round(bar.get_height()) for bar in fig.axes[0].patches], fig.axes[0].get_ylabel()
    ([32], 'B')
    """
    trees = (tree, *others)
    if others and len(names) != len(trees):
        raise ValueError(
            f"names must name each of the {len(trees)} trees compared, got {list(names)!r}"
        )
    per_tree = [tree_bytes_per_device(one) for one in trees]
    if not all(per_tree):
        raise ValueError(
            "no leaf of this tree lives on a device: place it with jax.device_put, or give the "
            "shapes a sharding"
        )
    devices = sorted({device for totals in per_tree for device in totals}, key=lambda d: d.id)
    fig: Figure | SubFigure
    if ax is None:
        width = max(3.0, 0.6 * len(devices) * (1 + 0.5 * len(others)) + 1.5)
        widest = MAX_WIDTH_PX / (72 * PX_PER_PT)  # inches
        fig = detached_figure((min(width, widest), 2.6 + 0.6 * bool(others)), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    unit, size = _unit(max(n for totals in per_tree for n in totals.values()))
    step = 0.8 / len(trees)
    for k, totals in enumerate(per_tree):
        counts = [totals.get(device, 0) for device in devices]
        color, hatch = _LAYOUT_BARS[k % len(_LAYOUT_BARS)]
        bars = ax.bar(
            np.arange(len(devices)) + (k - (len(trees) - 1) / 2) * step,
            [n / size for n in counts],
            width=step,
            color=color,
            hatch=hatch,
            edgecolor="white",
            label=names[k] if others else None,
        )
        # Side by side, the bars are too narrow for their labels across: they stand upright.
        ax.bar_label(
            bars,
            labels=[human_bytes(n) for n in counts],
            fontsize=MIN_LABEL_PT,
            rotation=90 if others else 0,
            padding=2,
        )
    ax.set_xticks(np.arange(len(devices)), [str(device.id) for device in devices])
    ax.set(xlabel="device id", ylabel=unit, title=title)
    ax.margins(y=0.45 if others else 0.2)
    if others:
        ax.legend(  # under the axis, clear of the bars' labels
            fontsize=MIN_LABEL_PT,
            loc="upper center",
            bbox_to_anchor=(0.5, -0.25),
            ncols=len(trees),
            frameon=False,
        )
    if isinstance(fig, DescribedFigure):
        if others:
            fig.description = f"Bar chart, {title}, {' against '.join(names)}: " + "; ".join(
                f"device {device.id}: "
                + ", ".join(
                    f"{name} {human_bytes(totals.get(device, 0))}"
                    for name, totals in zip(names, per_tree, strict=True)
                )
                for device in devices
            )
        else:
            fig.description = f"Bar chart, {title}: " + ", ".join(
                f"device {device.id} {human_bytes(per_tree[0][device])}" for device in devices
            )
    return fig
