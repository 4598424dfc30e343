"""A picture of where two trees differ: both trees merged into one outline, each difference marked.

The outline has one row per node, children indented under their parent with the key in front, as
a file browser shows folders. The words come from the core's ``cl.tree_diff``: the row at each
difference's key path carries a red badge, and the sentence that ``tree_diff`` writes for it
stands beside the badge. The boxes say what differs: a red box holds both sides (``− list`` for
the first tree, ``+ tuple`` for the second), a dashed red box a part that only the first tree
has, a dashed green box a part only the second has. What both trees share is drawn once, styled
as `draw_tree` styles it, and folds into grey rows when the outline would be too long.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from jax.tree_util import DictKey
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from .. import PyTree, tree_diff
from .._leaves import children, key_text, leaf_spec
from ._draw import FONT, LINE, PAD, STYLES, describe_items, sized_axes
from ._figure import MAX_WIDTH_PX, PX_PER_PT, DescribedFigure
from ._labels import Totals, node_label, plural, totals, totals_text

_FS = 9.0  # the rows' labels
_PITCH = 22.0  # from one row to the next
_INDENT = 18.0  # per level of depth
_GAP = 6.0  # between the things on one row
_MARGIN = 8.0
_MOST = 12  # children listed under a node that differs in kind
# Advance of a DejaVu Sans Mono character as Agg draws it (0.625 em at 72 dpi). draw_tree's 0.61
# only spaces boxes apart; here the badge and sentence stand right after a box, so no less.
_EM = 0.63
_MAX_WIDTH = MAX_WIDTH_PX / PX_PER_PT - 2 * _MARGIN  # sentences and notes wrap to fit the page


@dataclass(eq=False)
class _Row:
    """One node of the merged tree: its key, its box, its badge, and the rows below it."""

    kind: str  # a style of `draw_tree` ("node", "leaf", "none", "summary", "more") or "changed",
    # "only-a", "only-b"
    text: str
    edge: str
    kids: list[_Row] = field(default_factory=list)
    badge: str = ""
    differs: bool = False  # a difference here or below
    held: Totals = Totals(0, 0, 0)  # what the first tree's subtree holds (for folding)


def _label(tree: Any) -> str:
    """One side of a difference: a leaf's spec, ``None``, or a node's type (and static fields)."""
    kids = children(tree)
    if kids is None:
        return leaf_spec(tree)
    if tree is None:
        return "None"
    return node_label(tree) + ("" if kids else " (empty)")


def _holding(tree: Any) -> str:
    """What a part that one tree alone has holds: ``f32[5]``, or ``dict, 2 leaves``."""
    count = totals(tree).leaves
    if children(tree) is None or not count:
        return _label(tree)
    return f"{_label(tree)}, {plural(count, 'leaf', 'leaves')}"


@dataclass
class _Merge:
    """The walk over both trees at once, with the badge of each key path that differs."""

    names: tuple[str, str]
    badges: dict[tuple[Any, ...], str]
    prefix: bool

    def row(self, a: Any, b: Any, edge: str, path: tuple[Any, ...]) -> _Row:
        badge = self.badges.get(path, "")
        kids_a, kids_b = children(a), children(b)
        if self.prefix and kids_a is None:  # a leaf of a prefix, and what it stands for in b
            return _Row("leaf", f"{leaf_spec(a)} → {_holding(b)}", edge, held=totals(b))
        if kids_a is None and kids_b is None:
            if badge:
                return _Row("changed", self._both(a, b), edge, badge=badge, differs=True)
            return _Row("leaf", leaf_spec(a), edge, held=totals(a))
        if kids_a is None or kids_b is None or type(a) is not type(b):
            # Two kinds of node (or a leaf and a node): the children of both are listed below, so
            # that what each side holds is in sight; past a dozen, the rest is counted.
            rows = self._children(kids_a or [], kids_b or [], path)
            if len(rows) > _MOST:
                rest = _Row("more", f"{len(rows) - _MOST + 2:,} more", "…", differs=True)
                rows = [*rows[: _MOST - 2], rest]
            return _Row("changed", self._both(a, b), edge, rows, badge, differs=True)
        if a is None:
            return _Row("none", "None", edge)
        rows = self._children(kids_a, kids_b, path)
        same_keys = len(rows) == len(kids_a) == len(kids_b)
        if badge and same_keys and node_label(a) != node_label(b):  # the node's metadata differs
            kind, text = "changed", self._both(a, b)
        else:
            kind, text = "node", _label(a)
        differs = bool(badge) or any(row.differs for row in rows)
        return _Row(kind, text, edge, rows, badge, differs, totals(a))

    def _children(
        self, kids_a: list[tuple[Any, Any]], kids_b: list[tuple[Any, Any]], path: tuple[Any, ...]
    ) -> list[_Row]:
        """The rows of both nodes' children: those under one key merged, the others marked as
        only in one tree; dict keys in sorted order, as JAX keeps them, else ``a``'s order first."""
        by_key_b = {key_text(key): (key, kid) for key, kid in kids_b}
        keys_a = {key_text(key) for key, _ in kids_a}
        rows = [
            (key_text(key), self.row(kid, by_key_b[key_text(key)][1], key_text(key), (*path, key)))
            if key_text(key) in by_key_b
            else (key_text(key), self._only(kid, 0, key_text(key)))
            for key, kid in kids_a
        ]
        rows += [
            (text, self._only(kid, 1, text))
            for text, (_, kid) in by_key_b.items()
            if text not in keys_a
        ]
        all_dict_keys = all(isinstance(key, DictKey) for key, _ in (*kids_a, *kids_b))
        if all_dict_keys:
            rows.sort(key=lambda pair: pair[0])
        return [row for _, row in rows]

    def _both(self, a: Any, b: Any) -> str:
        return f"− {_label(a)}  + {_label(b)}"

    def _only(self, tree: Any, side: int, edge: str) -> _Row:
        kind = ("only-a", "only-b")[side]
        return _Row(kind, f"only in {self.names[side]}: {_holding(tree)}", edge, differs=True)


def _count(row: _Row) -> int:
    return 1 + sum(_count(kid) for kid in row.kids)


def _fold(row: _Row) -> _Row:
    """``row`` with every subtree that is the same in both trees folded into one row, and each
    run of such siblings into one row; the rows on the way to a difference stay open."""
    if not row.kids:
        return row
    kids: list[_Row] = []
    run: list[_Row] = []
    for kid in [*row.kids, None]:
        if kid is not None and not kid.differs:
            run.append(kid)
            continue
        if len(run) == 1:
            kids.append(_folded(run[0]))
        elif run:
            held = Totals(*(sum(same.held[i] for same in run) for i in range(3)))
            edge = f"{run[0].edge} … {run[-1].edge}"
            kids.append(_Row("more", f"{len(run):,} the same · {totals_text(held)}", edge))
        run = []
        if kid is not None:
            kids.append(_fold(kid))
    row.kids = kids
    return row


def _folded(row: _Row) -> _Row:
    if row.kind != "node" or not row.kids:
        return row
    return _Row("summary", f"{row.text} · {totals_text(row.held)}", row.edge)


def _width(text: str, fontsize: float = _FS) -> float:
    return len(text) * _EM * fontsize


def draw_diff(
    a: PyTree,
    b: PyTree,
    names: Sequence[str] = ("a", "b"),
    ax: Axes | None = None,
    max_rows: int = 40,
    title: str | None = None,
    prefix: bool = False,
) -> Figure:
    """Draw where trees ``a`` and ``b`` differ, and return the matplotlib ``Figure``.

    The two trees are merged into one outline, a row per node and its children indented below it
    with their keys in front. What both have is drawn once. Each difference is marked where it
    happens, with a red badge and, beside it, the sentence ``cl.tree_diff(a, b, names)`` writes:

    * a key (or list entry) only in ``a`` is a dashed red box, one only in ``b`` a dashed green
      box, each saying what it holds;
    * a node of another type (list against tuple, dict against a namedtuple or a registered
      class), ``None`` against a subtree, a leaf against a node, leaves of another shape or
      dtype, and a registered class whose static fields differ are red boxes with both sides:
      ``a``'s after ``−``, ``b``'s after ``+``;
    * a node whose keys differ carries the badge on its own row.

    Under a red box of two nodes the children of both are listed, merged by key, so that what
    each side holds can be seen (the first dozen or so, then a count).

    With ``prefix=True``, ``a`` is read as JAX reads a prefix tree (a sharding tree, the first
    tree of ``jax.tree.map``): each leaf of ``a`` stands for the whole subtree of ``b`` at its
    place, and its row says so (``NamedSharding → list, 10 leaves``); only nodes can differ.

    Leaf values are not compared, as in ``tree_diff``. When the outline would have more than
    ``max_rows`` rows, what is the same in both folds into grey rows with their counts, so one
    wrong leaf of a big model stays in sight. Without ``ax`` the figure is sized to the outline
    and shown once as a cell's value, as with `draw_tree`, with the sentences and the outline in
    words as its ``description``; with ``ax`` it is drawn into your axes.
    Sentences and notes wrap to fit the width of a notebook or of the course's website
    (`MAX_WIDTH_PX`). Every text is an artist of the axes whose gid names its role:
    ``diff-edge-*``, ``diff-<kind>-*`` for the boxes (kinds as above and as in `draw_tree`),
    ``diff-badge-*``, ``diff-sentence-<row>-<sentence>-<line>`` (one per line of a wrapped
    sentence), ``diff-title``, ``diff-note``.

    >>> import matplotlib; matplotlib.use("Agg")
    >>> fig = draw_diff({"w": jnp.ones((3, 2)), "b": 0.0}, {"w": jnp.ones((2, 2))}, ("mine", "ref"))
    >>> for text in fig.axes[0].texts:
    ...     if text.get_gid().startswith("diff-sentence"):
    ...         print(text.get_text())
    at <root>: dict keys differ: ['b'] only in mine
    at ['w']: shape (3, 2) in mine, (2, 2) in ref
    """
    if len(names) != 2:
        raise ValueError(f"names must be two strings, one per tree; got {names!r}")
    if max_rows < 2:
        raise ValueError(f"max_rows must be at least 2, got {max_rows}")
    found = tree_diff(a, b, names, prefix=prefix)
    badges: dict[tuple[Any, ...], str] = {}
    for path in found.paths:
        badges.setdefault(path, str(len(badges) + 1))
    sentences: dict[str, list[str]] = {}
    for path, sentence in zip(found.paths, found, strict=True):
        sentences.setdefault(badges[path], []).append(sentence)
    root = _Merge((names[0], names[1]), badges, prefix).row(a, b, "", ())
    if _count(root) > max_rows:
        root = _fold(root)
    legend = _legend(root, (names[0], names[1]), bool(found), prefix)
    fig = _render(root, sentences, ax, title, legend)
    if isinstance(fig, DescribedFigure):
        what = f"Where {names[0]} and {names[1]} differ, as one outline"
        fig.description = describe_items(root, what, title, [*found, *legend])
    return fig


def _kinds(row: _Row) -> set[str]:
    return {row.kind, *(kind for kid in row.kids for kind in _kinds(kid))}


def _legend(root: _Row, names: tuple[str, str], found: bool, prefix: bool) -> list[str]:
    """The key to the marks the picture uses, and only those."""
    kinds = _kinds(root)
    marks = [
        f"thick box: differs (− {names[0]}, + {names[1]})" if "changed" in kinds else "",
        "dashed box: only in the tree it names" if kinds & {"only-a", "only-b"} else "",
        "dashed grey: None, an empty subtree" if "none" in kinds else "",
        "dotted: the same in both, folded" if kinds & {"more", "summary"} else "",
    ]
    lines = [" · ".join(mark for mark in marks if mark)] if found else []
    if not found:
        lines.append("no differences in structure, shapes or dtypes")
    if prefix and "leaf" in kinds:  # a prefix's leaf rows read `x → y`
        lines.append(f"x → y: a leaf x of {names[0]}, read as a prefix, stands for y in {names[1]}")
    return [line for line in lines if line]


def _flatten(row: _Row, depth: int = 0) -> list[tuple[int, _Row]]:
    out = [(depth, row)]
    for kid in row.kids:
        out += _flatten(kid, depth + 1)
    return out


def _wrapped(texts: Sequence[str], room: float, fontsize: float = 8.0) -> list[tuple[int, str]]:
    """``(which text, line)``: each of ``texts`` broken at spaces into lines no wider than ``room``
    points (a word longer than that stays whole)."""
    chars = max(20, int(room // (_EM * fontsize)))
    return [
        (n, line)
        for n, text in enumerate(texts)
        for line in textwrap.wrap(text, chars, break_long_words=False)
    ]


def _render(
    root: _Row,
    sentences: dict[str, list[str]],
    ax: Axes | None,
    title: str | None,
    notes: list[str],
) -> Figure:
    rows = _flatten(root)
    heading = ([(title, 11.0, "diff-title")] if title else []) + [
        (line, 8.0, "diff-note") for _, line in _wrapped(notes, _MAX_WIDTH)
    ]
    top = sum(LINE * size + 4.0 for _, size, _ in heading)
    badge_room = _width("00", 8.0) + 2 * _GAP
    placed = []  # (row, depth, y, x of its box, x after its box)
    lines_of: dict[int, list[tuple[int, str]]] = {}  # a badged row's sentences, wrapped to fit
    y = -top - _PITCH / 2
    for depth, row in rows:
        x = depth * _INDENT + (_width(row.edge, 8.0) + _GAP if row.edge else 0.0)
        end = x + _width(row.text) + 2 * PAD * _FS
        placed.append((row, depth, y, x, end))
        if row.badge:
            lines_of[id(row)] = _wrapped(sentences[row.badge], _MAX_WIDTH - end - badge_room)
        y -= _PITCH * max(1, len(lines_of.get(id(row), [])))
    bottom = y + _PITCH / 2
    widths = [
        end + (badge_room + max(_width(s, 8.0) for _, s in lines_of[id(row)]) if row.badge else 0)
        for row, _, _, _, end in placed
    ]
    width = max(widths + [_width(text, size) for text, size, _ in heading])
    x0, x1, y0, y1 = -_MARGIN, width + _MARGIN, bottom - _MARGIN, _MARGIN
    ax = sized_axes(ax, x0, x1, y0, y1)

    text_y = 0.0
    for text, size, gid in heading:
        text_y -= LINE * size + 4.0
        ax.text(0.0, text_y, text, fontsize=size, family=FONT, gid=gid, va="bottom", color="#333")
    where = {id(row): (depth, y) for row, depth, y, _, _ in placed}
    lines = []
    for row, depth, y, _, _ in placed:
        if row.kids:
            rail = depth * _INDENT + _INDENT / 2
            last = where[id(row.kids[-1])][1]
            lines.append([(rail, y - LINE * _FS / 2 - PAD * _FS), (rail, last)])
            lines += [
                [(rail, where[id(kid)][1]), ((depth + 1) * _INDENT - 2.0, where[id(kid)][1])]
                for kid in row.kids
            ]
    ax.add_collection(LineCollection(lines, colors="#8a8a8a", linewidths=1.0, zorder=1))
    for index, (row, depth, y, x, end) in enumerate(placed):
        if row.edge:
            ax.text(
                depth * _INDENT,
                y,
                row.edge,
                fontsize=8.0,
                family=FONT,
                va="center",
                color="#444444",
                gid=f"diff-edge-{index}",
            )
        box = {"boxstyle": f"round,pad={PAD}", "lw": 1.0, **STYLES[row.kind]}
        ax.text(
            x + PAD * _FS,
            y,
            row.text,
            fontsize=_FS,
            family=FONT,
            va="center",
            bbox=box,
            zorder=3,
            gid=f"diff-{row.kind}-{index}",
        )
        if not row.badge:
            continue
        ax.text(
            end + _GAP + _width("0", 8.0),
            y,
            row.badge,
            fontsize=8.0,
            family=FONT,
            ha="center",
            va="center",
            color="white",
            weight="bold",
            zorder=4,
            gid=f"diff-badge-{index}",
            bbox={"boxstyle": "circle,pad=0.25", "fc": "#c0392b", "ec": "none"},
        )
        for line, (number, part) in enumerate(lines_of[id(row)]):
            ax.text(
                end + badge_room,
                y - line * _PITCH,
                part,
                fontsize=8.0,
                family=FONT,
                va="center",
                color="#7b241c",
                gid=f"diff-sentence-{index}-{number}-{line}",
            )
    return ax.figure  # type: ignore[return-value]  # a top-level Axes: never a SubFigure
