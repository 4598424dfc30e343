"""A picture of a pytree: containers as boxes, leaves by shape and dtype, keys on the edges.

The layout is computed in points from the label lengths (labels are set in DejaVu Sans Mono,
which ships with matplotlib, so a label's width is known before anything is drawn), and the
figure is sized so that one data unit is one point: labels cannot overlap by construction.
Every subtree gets its own horizontal interval, wide enough for its labels and its children's
intervals; a parent sits centred over its first and last child.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from .. import PyTree
from .._leaves import children, key_text, leaf_spec
from ._figure import MAX_WIDTH_PX, PX_PER_PT, DescribedFigure, detached_figure
from ._labels import Totals, leaf_totals, node_label, totals_text

FONT = "DejaVu Sans Mono"
_EM = 0.61  # advance width of a DejaVu Sans Mono character (0.602 em), rounded up
LINE = 1.1  # height of one line of text, in em (1.04 measured), rounded up
_SPACING = 1.4  # distance between the lines of a two-line label, in em (measured), rounded up
PAD = 0.3  # box padding, in em
_NODE_FS, _EDGE_FS, _SIDE_FS = 9.0, 8.0, 8.0  # node labels, keys, sideways labels
_EDGE_LIFT = 3.0  # between a key and the top of its box
_STUB = 10.0  # vertical line from the bottom of a parent to its bar
_DROP = 8.0  # vertical line from the bar to the key above a child
_GAP, _GAP_COMPACT = 12.0, 3.0  # space between neighbouring subtrees
_MAX_WIDTH = MAX_WIDTH_PX / PX_PER_PT  # wider than this with level labels: turn labels sideways
_TURN_SAVING = 16.0  # a node's label turns sideways when that saves more than this much width
_MARGIN = 8.0

STYLES: dict[str, dict[str, Any]] = {
    "node": {"fc": "#dce8f5", "ec": "#3f6fa0", "ls": "-"},
    "leaf": {"fc": "#fbeed5", "ec": "#b8862b", "ls": "-"},
    "none": {"fc": "#ffffff", "ec": "#9a9a9a", "ls": "--"},
    "summary": {"fc": "#ececec", "ec": "#6f6f6f", "ls": "--"},
    "more": {"fc": "#f7f7f7", "ec": "#a0a0a0", "ls": ":"},
    # two trees (``draw_diff``): a place where they differ, and a part that only one of them has
    "changed": {"fc": "#fff1c2", "ec": "#c0392b", "ls": "-", "lw": 2.0},
    "only-a": {"fc": "#fde3e0", "ec": "#c0392b", "ls": "--", "lw": 1.5},
    "only-b": {"fc": "#e2f0dc", "ec": "#2e7d32", "ls": "--", "lw": 1.5},
}


@dataclass(eq=False)
class _Model:
    """One node of the whole tree, with its totals."""

    label: str
    edge: str
    kind: str  # "node", "leaf" or "none"
    totals: Totals
    kids: list[_Model] = field(default_factory=list)


@dataclass(eq=False)
class _Item:
    """One box of the drawing, and where it goes."""

    kind: str  # "node", "leaf", "none", "summary" (a collapsed subtree) or "more" (hidden siblings)
    text: str
    edge: str
    kids: list[_Item] = field(default_factory=list)
    rotated: bool = False
    depth: int = 0
    span: float = 0.0
    kids_width: float = 0.0
    x: float = 0.0
    top: float = 0.0
    bar: float = 0.0


def _model(node: Any, edge: str) -> _Model:
    kids = children(node)
    if kids is None:
        return _Model(leaf_spec(node), edge, "leaf", leaf_totals(node))
    if node is None:
        return _Model("None", edge, "none", Totals(0, 0, 0))
    models = [_model(child, key_text(key)) for key, child in kids]
    sums = Totals(*(sum(m.totals[i] for m in models) for i in range(3)))
    label = node_label(node) + ("" if models else " (empty)")
    return _Model(label, edge, "node", sums, models)


def _signature(node: _Model) -> tuple[Any, ...]:
    """The shape of a subtree without its leaves' shapes: alike subtrees (layers) share it."""
    if node.kind != "node":
        return (node.kind,)
    return (node.label, tuple((kid.edge, _signature(kid)) for kid in node.kids))


_FEW = 3  # children shown of a node whose many children are alike subtrees, when summarising


def _bottoms(node: _Model) -> int:
    """Boxes at the bottom of the full drawing: leaves, ``None`` and empty containers."""
    return sum(_bottoms(kid) for kid in node.kids) if node.kids else 1


def _alike(node: _Model) -> bool:
    """Whether the children are subtrees of one shape (the layers of a model, say)."""
    return node.kids[0].kind == "node" and len({_signature(kid) for kid in node.kids}) == 1


def _opened(root: _Model, max_leaves: int) -> dict[int, int]:
    """Which nodes to open, and how many of their children to show, so the boxes at the bottom fit.

    When the whole tree does not fit, a node with more than a few alike subtrees (layers) shows
    the first few and one box for the rest, leaving room to show those few in depth. Then level
    by level: open the whole level when it fits; otherwise share what is left among the level's
    nodes, cheapest first, each opening whole if its share allows or else showing its first
    children and a box for the rest (or staying folded when its share is too small for that).
    """
    summarising = _bottoms(root) > max_leaves

    def natural(node: _Model) -> int:
        few = summarising and len(node.kids) > _FEW and _alike(node)
        return _FEW if few else len(node.kids)

    def cost(
        node: _Model, shown: int
    ) -> int:  # boxes added: the children shown, and one for the rest
        return shown - 1 + (shown < len(node.kids))

    opened: dict[int, int] = {}
    slots, level = 1, [root]
    while level:
        candidates = [n for n in level if n.kids]
        if slots + sum(cost(n, natural(n)) for n in candidates) <= max_leaves:
            for node in candidates:
                opened[id(node)], slots = natural(node), slots + cost(node, natural(node))
        else:
            order = sorted(
                range(len(candidates)),
                key=lambda i: (cost(candidates[i], natural(candidates[i])), i),
            )
            for j, i in enumerate(order):
                node = candidates[i]
                share = (max_leaves - slots) // (len(order) - j)
                if cost(node, natural(node)) <= share:
                    shown = natural(node)
                elif _alike(node):
                    shown = min(share, _FEW)
                else:
                    shown = share if share >= 2 else 0
                if shown >= 1:
                    opened[id(node)], slots = shown, slots + cost(node, shown)
        level = [kid for n in level if id(n) in opened for kid in n.kids[: opened[id(n)]]]
    return opened


def _items(node: _Model, opened: dict[int, int]) -> _Item:
    if node.kind != "node":
        return _Item(node.kind, node.label, node.edge)
    if id(node) not in opened:
        if not node.kids:
            return _Item("node", node.label, node.edge)
        return _Item("summary", node.label + "\n" + totals_text(node.totals, sep="\n"), node.edge)
    shown, hidden = node.kids[: opened[id(node)]], node.kids[opened[id(node)] :]
    kids = [_items(kid, opened) for kid in shown]
    if hidden:
        rest = Totals(*(sum(m.totals[i] for m in hidden) for i in range(3)))
        edge = hidden[0].edge if len(hidden) == 1 else f"{hidden[0].edge} … {hidden[-1].edge}"
        kids.append(_Item("more", f"{len(hidden):,} more\n" + totals_text(rest, sep="\n"), edge))
    return _Item("node", node.label, node.edge, kids)


def _box_size(text: str, fontsize: float) -> tuple[float, float]:
    lines = text.split("\n")
    width = max(len(line) for line in lines) * _EM * fontsize
    height = ((len(lines) - 1) * _SPACING + LINE) * fontsize
    return width + 2 * PAD * fontsize, height + 2 * PAD * fontsize


def _rotated_text(item: _Item) -> str:
    text = item.text.replace("\n", " · ")
    return f"{item.edge} {text}" if item.edge else text


def _level_width(item: _Item) -> float:
    edge = _box_size(item.edge, _EDGE_FS)[0] if item.edge else 0.0
    return max(_box_size(item.text, _NODE_FS)[0], edge)


def _own_width(item: _Item) -> float:
    return _box_size("x", _SIDE_FS)[1] if item.rotated else _level_width(item)


def _own_height(item: _Item) -> float:
    """Height of the box itself, below the item's top."""
    if item.rotated:
        return _box_size(_rotated_text(item), _SIDE_FS)[0]
    return _box_size(item.text, _NODE_FS)[1]


def _head(item: _Item) -> float:
    """Room above the item's top for the key on its edge."""
    return _box_size(item.edge, _EDGE_FS)[1] + _EDGE_LIFT if item.edge and not item.rotated else 0.0


def _measure(item: _Item, compact: bool, depth: int = 0) -> float:
    """Width of each subtree's interval; compact mode turns labels wider than what hangs below."""
    item.depth = depth
    gap = _GAP_COMPACT if compact else _GAP
    if item.kids:
        item.kids_width = sum(_measure(k, compact, depth + 1) for k in item.kids) + gap * (
            len(item.kids) - 1
        )
    turn = not item.kids or _level_width(item) > item.kids_width + _TURN_SAVING
    item.rotated = compact and depth > 0 and item.kind != "more" and turn
    item.span = max(_own_width(item), item.kids_width)
    return item.span


def _place(item: _Item, left: float, gap: float) -> None:
    if not item.kids:
        item.x = left + item.span / 2
        return
    start = left + (item.span - item.kids_width) / 2
    for kid in item.kids:
        _place(kid, start, gap)
        start += kid.span + gap
    half = _own_width(item) / 2
    centre = (item.kids[0].x + item.kids[-1].x) / 2
    item.x = min(max(centre, left + half), left + item.span - half)


def _walk(item: _Item) -> list[_Item]:
    out = [item]
    for kid in item.kids:
        out.extend(_walk(kid))
    return out


def _rows(items: list[_Item]) -> None:
    """The top of each depth: below the tallest parent of the depth above, its bar, and the keys."""
    depth = max(item.depth for item in items)
    tall = [0.0] * (depth + 1)
    head = [0.0] * (depth + 1)
    for item in items:
        head[item.depth] = max(head[item.depth], _head(item))
        if item.kids:
            tall[item.depth] = max(tall[item.depth], _own_height(item))
    tops = [0.0]
    for d in range(depth):
        tops.append(tops[d] - tall[d] - _STUB - _DROP - head[d + 1])
    for item in items:
        item.top = tops[item.depth]
        item.bar = tops[item.depth + 1] + head[item.depth + 1] + _DROP if item.kids else 0.0


def _layout(root: _Item) -> list[_Item]:
    """Positions for every item: level labels first, sideways labels if those are too wide."""
    if _measure(root, compact=False) > _MAX_WIDTH:
        _measure(root, compact=True)
    _place(root, 0.0, _GAP_COMPACT if any(i.rotated for i in _walk(root)) else _GAP)
    items = _walk(root)
    _rows(items)
    return items


def _edges(items: list[_Item]) -> list[list[tuple[float, float]]]:
    segments = []
    for item in items:
        if not item.kids:
            continue
        xs = [k.x for k in item.kids] + [item.x]
        segments.append([(item.x, item.top - _own_height(item) / 2), (item.x, item.bar)])
        segments.append([(min(xs), item.bar), (max(xs), item.bar)])
        segments.extend([(k.x, item.bar), (k.x, k.top - _own_height(k) / 2)] for k in item.kids)
    return segments


def _draw_item(ax: Axes, item: _Item, index: int) -> None:
    style = STYLES[item.kind]
    box = {"boxstyle": f"round,pad={PAD}", "lw": 1.0, **style}
    if item.rotated:
        ax.text(
            item.x,
            item.top - PAD * _SIDE_FS,
            _rotated_text(item),
            rotation=-90,
            ha="center",
            va="top",
            fontsize=_SIDE_FS,
            family=FONT,
            bbox=box,
            zorder=3,
            gid=f"tree-{item.kind}-{index}",
        )
        return
    ax.text(
        item.x,
        item.top - _own_height(item) / 2,
        item.text,
        ha="center",
        va="center",
        fontsize=_NODE_FS,
        family=FONT,
        bbox=box,
        zorder=3,
        gid=f"tree-{item.kind}-{index}",
    )
    if item.edge:
        ax.text(
            item.x,
            item.top + _EDGE_LIFT,
            item.edge,
            ha="center",
            va="bottom",
            fontsize=_EDGE_FS,
            family=FONT,
            color="#444444",
            zorder=4,
            gid=f"tree-edge-{index}",
            bbox={"boxstyle": "square,pad=0.15", "fc": "white", "ec": "none"},
        )


def sized_axes(ax: Axes | None, x0: float, x1: float, y0: float, y1: float) -> Axes:
    """Axes that show the box from ``(x0, y0)`` to ``(x1, y1)``, one data unit to a point.

    Without ``ax``: a new figure of the box's size (at least 72 × 36 points, the box centred
    across and at the top; `detached_figure`). With ``ax``: that axes, at an equal aspect. Both
    pictures of the course are drawn this way.
    """
    if ax is None:
        width, height = max(x1 - x0, 72.0), max(y1 - y0, 36.0)
        ax = detached_figure((width / 72, height / 72)).add_axes((0, 0, 1, 1))
        x_pad = (width - (x1 - x0)) / 2
        x0, x1, y0 = x0 - x_pad, x1 + x_pad, y1 - height
    else:
        ax.set_aspect("equal")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_axis_off()
    return ax


def draw_tree(
    tree: PyTree, ax: Axes | None = None, max_leaves: int = 50, title: str | None = None
) -> Figure:
    """Draw ``tree`` top-down and return the matplotlib ``Figure``.

    Containers are blue boxes named by type (``dict``, ``list``, ``tuple``, a namedtuple's class,
    a registered class with its static fields such as ``Linear name='dense'``); ``None`` is a
    dashed empty subtree; leaves are orange boxes with shape and dtype (``f32[3,2]``) or a Python
    number's value; each edge carries its key (``['w']``, ``[0]``, ``.b``). Trees with more than
    ``max_leaves`` leaves are summarised: deeper subtrees fold into grey boxes that give their
    leaf and parameter counts, and a node with too many children shows the first ones and a box
    for the rest. Wide trees turn their bottom labels sideways, with the key in front.

    Without ``ax`` the figure is sized to the tree and detached from pyplot, so a notebook
    shows it once, as the cell's value (``plt.show()`` does not see it; ``fig.savefig`` works).
    It is then a `DescribedFigure` whose ``description`` gives the boxes in words, one line each,
    indented by depth: the picture's plain text and alt text in a notebook and on the website.
    With ``ax`` the drawing is scaled into your axes, whose figure is returned; give it room,
    since labels keep their font size.

    Every label is a text artist of ``fig.axes[0]`` (or ``ax``) whose gid names its role:
    ``tree-node-*``, ``tree-leaf-*``, ``tree-none-*``, ``tree-summary-*``, ``tree-more-*``,
    ``tree-edge-*``, ``tree-title``, ``tree-note``.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig = draw_tree({"w": jnp.ones((3, 2)), "b": jnp.zeros(2)})
    >>> sorted(t.get_text() for t in fig.axes[0].texts)
    ["['b']", "['w']", 'dict', 'f32[2]', 'f32[3,2]']
    """
    if max_leaves < 2:
        raise ValueError(f"max_leaves must be at least 2, got {max_leaves}")
    model = _model(tree, "")
    root = _items(model, _opened(model, max_leaves))
    items = _layout(root)

    notes = []
    if any(item.kind in ("summary", "more") for item in items):
        notes.append(f"{totals_text(model.totals)} in all; grey boxes are folded subtrees")
    top = max(item.top + _head(item) for item in items) + 4.0
    heading = [(title, 11.0, "tree-title")] if title else []
    heading += [(note, 8.0, "tree-note") for note in notes]
    width = max([root.span] + [len(text) * _EM * size for text, size, _ in heading])
    bottom = min(item.top - _own_height(item) for item in items)
    height_top = top + sum(LINE * size + 4.0 for _, size, _ in heading)

    x0, x1 = (
        -_MARGIN + min(0.0, (root.span - width) / 2),
        _MARGIN + max(root.span, (root.span + width) / 2),
    )
    y0, y1 = bottom - _MARGIN, height_top + _MARGIN
    ax = sized_axes(ax, x0, x1, y0, y1)

    ax.add_collection(LineCollection(_edges(items), colors="#8a8a8a", linewidths=1.0, zorder=1))
    for index, item in enumerate(items):
        _draw_item(ax, item, index)
    y = height_top
    for text, size, gid in heading:
        y -= LINE * size + 4.0
        ax.text(
            root.span / 2,
            y,
            text,
            ha="center",
            va="bottom",
            fontsize=size,
            family=FONT,
            gid=gid,
            color="#222222" if gid == "tree-title" else "#666666",
        )
    fig = ax.figure
    if isinstance(fig, DescribedFigure):
        fig.description = describe_items(root, "A tree, drawn top down", title, notes)
    return fig  # type: ignore[return-value]  # a top-level Axes: never a SubFigure


class Outlined(Protocol):
    """A box of a drawing, as `describe_items` reads it (`draw_tree`'s and `draw_diff`'s)."""

    @property
    def text(self) -> str: ...
    @property
    def edge(self) -> str: ...
    @property
    def kids(self) -> Sequence[Outlined]: ...


def describe_items(root: Outlined, what: str, title: str | None, notes: Sequence[str]) -> str:
    """The drawing in words: ``what``, the title and notes, then one line per box, indented by
    depth, each with the key on its edge.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> print(draw_tree({"w": 1.0, "b": None}, title="t").description)
    A tree, drawn top down: t.
    dict
      ['b'] None
      ['w'] 1.0
    """
    head = (
        what
        + (f": {title}" if title else "")
        + "."
        + "".join(f" {n[0].upper()}{n[1:]}." for n in notes)
    )
    lines = [head]

    def walk(item: Outlined, depth: int) -> None:
        text = ", ".join(line.strip() for line in item.text.splitlines())
        lines.append("  " * depth + (f"{item.edge} " if item.edge else "") + text)
        for kid in item.kids:
            walk(kid, depth + 1)

    walk(root, 0)
    return "\n".join(lines)
