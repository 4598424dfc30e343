"""An ipywidgets explorer for large trees: open nodes by key path, read a leaf's details."""

from __future__ import annotations

import html
from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any

import ipywidgets as widgets
import jax
import numpy as np

from .. import PyTree
from .._leaves import (
    children,
    has_shape,
    human_bytes,
    is_abstract_array,
    key_text,
    leaf_spec,
    path_text,
)
from ._focus import FOCUS_CLASS, focus_style
from ._labels import Totals, node_label, totals, totals_text

KeyPath = str | Sequence[Any]
"""A key path: JAX's text for it (``"['encoder'][0]"``, ``""`` or ``"<root>"`` for the root), or
the tuple of key entries that ``jax.tree_util.tree_flatten_with_path`` gives."""

_INDENT_PX = 18
_SELECTED_CSS = (
    # The selected row: a tinted background and a bar at its left edge, which tells it apart
    # without colour (the details pane names it too).
    ".course-explorer .course-explorer-selected { background: #dbe8f6 !important; "
    "box-shadow: inset 4px 0 0 #1f5a96 !important; color: #111 !important; }"
)
_NOTE_SEARCH_LIMIT = 1_000
"""How many nodes `sorted_keys_note` looks through for a dict whose keys sort out of order."""


class _Row:
    """One node of the tree as the explorer shows it; children and widgets are made on demand."""

    def __init__(self, path: tuple[Any, ...], value: Any, depth: int):
        self.path = path
        self.value = value
        self.depth = depth
        self.pairs = children(value)
        self.is_leaf = self.pairs is None
        self.kids: list[_Row] | None = None
        self.expanded = False
        self.start = self.stop = 0  # the children on screen: kids[start:stop]
        self.button: widgets.Button | None = None
        self.more: widgets.Button | None = None
        self.before: widgets.Button | None = None
        self._totals: Totals | None = None

    @property
    def totals(self) -> Totals:
        if self._totals is None:
            self._totals = totals(self.value)
        return self._totals

    @property
    def key(self) -> str:
        return key_text(self.path[-1]) if self.path else "<root>"

    def children_rows(self) -> list[_Row]:
        if self.kids is None:
            self.kids = [
                _Row((*self.path, key), child, self.depth + 1) for key, child in self.pairs or []
            ]
        return self.kids

    def label(self) -> str:
        if self.is_leaf:
            spec = leaf_spec(self.value)
            if has_shape(self.value):
                spec += f" · {self.totals.params:,} params"
            return f"• {self.key}  {spec}"
        if self.value is None:
            return f"· {self.key}  None · empty subtree"
        if not self.pairs:
            return f"· {self.key}  {node_label(self.value)} · empty"
        arrow = "▾" if self.expanded else "▸"
        return f"{arrow} {self.key}  {node_label(self.value)} · {totals_text(self.totals)}"

    def tooltip(self) -> str:
        """The row's key path, and for a node that opens, whether it is open (a screen reader reads
        this after the label, so the arrow's meaning is said in words)."""
        if self.is_leaf or not self.pairs:
            return path_text(self.path)
        return f"{path_text(self.path)} · {'expanded' if self.expanded else 'collapsed'}"


class TreeExplorer:
    """Browse a large tree in a notebook: open and close nodes, click a leaf to see its details.

    Each node's row names its key, its type and what it holds (``▸ ['encoder']  dict · 12 leaves
    · 1,234,560 params``); a leaf's row gives its shape and dtype. Clicking a node opens or closes
    it and shows its totals; clicking a leaf shows its path, shape, dtype, size and, for arrays,
    mean, std, min and max. Children are built only when their parent opens, and a node with many
    children shows them ``page_size`` at a time, so a tree of 10,000 leaves opens at once.

    Display it by ending a cell with it (or ``display(explorer)``); ``explorer.widget`` is the
    ipywidgets box. The same actions work from code, which is how the tests drive it:
    :meth:`expand`, :meth:`collapse`, :meth:`select`, :meth:`show_more`, :meth:`show_previous`,
    and :attr:`details`, :meth:`visible_rows`, :meth:`label` to read the result.

    CSS classes, for browser tests: ``course-explorer`` (the whole explorer),
    ``course-explorer-tree`` (the scrolling list of rows), ``course-explorer-node`` (a node's row,
    a button), ``course-explorer-leaf`` (a leaf's row, a button), ``course-explorer-expanded`` (an
    open node's row), ``course-explorer-selected`` (the selected row), ``course-explorer-more``
    (the button that shows the next children), ``course-explorer-previous`` (the one that shows
    earlier children, after a jump into a long list), ``course-explorer-details`` (the details
    pane). Each row's tooltip (its ``title`` attribute) is its key path, e.g. ``['encoder']['w']``,
    and for a node that opens, a middle dot and ``expanded`` or ``collapsed`` after it
    (``['encoder'] · expanded``). Every control shows a 3 px focus ring when reached by keyboard
    (`focus_style`). The selected row has a bar at its left edge as well as a tint. Rows never
    shrink: a long list scrolls. The details pane sits next to the widest row.

    Dict keys are listed in the order JAX flattens a dict, sorted; where that differs from the
    order the dict was built in, a note above the details says so with the tree's own example
    (:attr:`note`, from :func:`sorted_keys_note`; class ``course-explorer-note``).

    >>> explorer = TreeExplorer({"w": jnp.ones((3, 2)), "b": jnp.zeros(2)})
    >>> for path, label in explorer.visible_rows():
    ...     print(label)
    ▾ <root>  dict · 2 leaves · 8 params
    • ['b']  f32[2] · 2 params
    • ['w']  f32[3,2] · 6 params
    >>> explorer.select("['w']")
    >>> print(explorer.details)
    path   ['w']
    leaf   f32[3,2] (jax.Array)
    shape  (3, 2)
    dtype  float32
    size   6 params · 24 B
    mean   1
    std    0
    min    1
    max    1
    """

    def __init__(self, tree: PyTree, page_size: int = 100, height: str = "420px"):
        if page_size < 1:
            raise ValueError(f"page_size must be at least 1, got {page_size}")
        self.page_size = page_size
        self._root = _Row((), tree, 0)
        self._selected: _Row | None = None
        self._details_text = "Click a leaf to see its details."
        self._tree_box = widgets.VBox(
            layout=widgets.Layout(
                max_height=height,
                overflow="auto",
                align_items="flex-start",
                flex="0 1 auto",  # as wide as its widest row, so the details sit beside it
                min_width="0",
                max_width="100%",
            )
        )
        self._tree_box.add_class("course-explorer-tree")
        self.note = sorted_keys_note(tree)
        """What the listed order of dict keys means, where the tree has keys that sort out of the
        order they were put in; ``None`` elsewhere."""
        self._details = widgets.HTML(
            layout=widgets.Layout(flex="1 1 16em", min_width="0", padding="0 0 0 24px")
        )
        self._details.add_class("course-explorer-details")
        self.widget = widgets.HBox(
            [self._tree_box, self._details, focus_style()],
            layout=widgets.Layout(width="100%", flex_flow="row wrap", align_items="flex-start"),
        )
        self.widget.add_class("course-explorer")
        self.widget.add_class(FOCUS_CLASS)
        self._layouts: dict[int, widgets.Layout] = {}
        if not self._root.is_leaf:
            self._open(self._root)
        self._show_details()
        self._refresh()

    # What a notebook displays.
    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}
        return {**bundle, "text/plain": repr(self)}

    def __repr__(self) -> str:
        return f"TreeExplorer({self._root.label()[2:]})"

    # Finding rows by path.
    def _find(self, path: KeyPath) -> _Row:
        if isinstance(path, str):
            text = path.strip()
            found = self._root if text in ("", "<root>") else self._find_text(self._root, text)
        else:
            found = self._root
            for key in path:
                if found.is_leaf:
                    found = None
                    break
                found = next((kid for kid in found.children_rows() if kid.path[-1] == key), None)
                if found is None:
                    break
        if found is None:
            raise KeyError(
                f"no node at {path_text(tuple(path)) if not isinstance(path, str) else path!s}"
            )
        return found

    def _find_text(self, row: _Row, rest: str) -> _Row | None:
        if not rest:
            return row
        if row.is_leaf:
            return None
        candidates = [kid for kid in row.children_rows() if rest.startswith(kid.key)]
        for kid in sorted(candidates, key=lambda kid: -len(kid.key)):
            found = self._find_text(kid, rest[len(kid.key) :])
            if found is not None:
                return found
        return None

    def _ancestors(self, row: _Row) -> list[_Row]:
        chain, current = [], self._root
        for key in row.path:
            chain.append(current)
            current = next(kid for kid in current.children_rows() if kid.path[-1] == key)
        return chain

    # Changing what is shown.
    def _open(self, row: _Row) -> None:
        if row.is_leaf:
            raise ValueError(
                f"{path_text(row.path)} is a leaf ({leaf_spec(row.value)}): select it instead"
            )
        row.children_rows()
        row.expanded = True
        row.stop = max(row.stop, min(self.page_size, len(row.kids or [])))
        if row.button is not None:
            row.button.add_class("course-explorer-expanded")
            row.button.description = row.label()
            row.button.tooltip = row.tooltip()

    def _close(self, row: _Row) -> None:
        row.expanded = False
        if row.button is not None:
            row.button.remove_class("course-explorer-expanded")
            row.button.description = row.label()
            row.button.tooltip = row.tooltip()

    def _reveal(self, row: _Row) -> None:
        """Open every ancestor of ``row`` and turn to the page of children that holds its branch."""
        for parent in self._ancestors(row):
            if not parent.expanded:
                self._open(parent)
            kids = parent.kids or []
            index = next(i for i, kid in enumerate(kids) if kid.path == row.path[: len(kid.path)])
            if not parent.start <= index < parent.stop:
                parent.start = index // self.page_size * self.page_size
                parent.stop = min(len(kids), parent.start + self.page_size)

    def expand(self, path: KeyPath = "") -> None:
        """Open the node at ``path`` and every node above it."""
        row = self._find(path)
        self._reveal(row)
        self._open(row)
        self._refresh()

    def collapse(self, path: KeyPath = "") -> None:
        """Close the node at ``path``; its children keep their own open or closed state."""
        self._close(self._find(path))
        self._refresh()

    def toggle(self, path: KeyPath = "") -> None:
        """Open the node at ``path`` if it is closed, close it if it is open."""
        row = self._find(path)
        (self.collapse if row.expanded else self.expand)(path)

    def show_more(self, path: KeyPath = "") -> None:
        """Show the next ``page_size`` children of the node at ``path``, below those on screen."""
        row = self._find(path)
        row.stop = min(len(row.children_rows()), row.stop + self.page_size)
        self._refresh()

    def show_previous(self, path: KeyPath = "") -> None:
        """Show the ``page_size`` children of the node at ``path`` above those on screen."""
        row = self._find(path)
        row.start = max(0, row.start - self.page_size)
        self._refresh()

    def select(self, path: KeyPath) -> None:
        """Select the leaf or node at ``path`` (opening the nodes above it) and show its details."""
        row = self._find(path)
        self._reveal(row)
        self._mark(row)
        self._show_details()
        self._refresh()

    def is_expanded(self, path: KeyPath = "") -> bool:
        """Whether the node at ``path`` is open."""
        return self._find(path).expanded

    # Reading what is shown.
    @property
    def details(self) -> str:
        """The details pane as plain text."""
        return self._details_text

    @property
    def selected(self) -> str | None:
        """The key path of the selected row, or ``None``."""
        return None if self._selected is None else path_text(self._selected.path)

    def label(self, path: KeyPath = "") -> str:
        """The text on the row of the node or leaf at ``path``."""
        return self._find(path).label()

    def visible_rows(self) -> list[tuple[str, str]]:
        """``(key path, label)`` for every row on screen, top to bottom, "more" buttons aside."""
        return [
            (path_text(row.path), row.label()) for row in self._visible() if isinstance(row, _Row)
        ]

    def close(self) -> None:
        """Close every widget the explorer made (they stop taking memory in the kernel)."""
        for row in self._all_built(self._root):
            for button in (row.button, row.more, row.before):
                if button is not None:
                    button.close()
        for layout in self._layouts.values():
            layout.close()
        for widget in (*self.widget.children, self.widget):
            widget.close()

    # Widgets.
    def _all_built(self, row: _Row) -> list[_Row]:
        out = [row]
        for kid in row.kids or []:
            out.extend(self._all_built(kid))
        return out

    def _visible(self) -> list[_Row | tuple[str, _Row]]:
        out: list[_Row | tuple[str, _Row]] = []

        def walk(row: _Row) -> None:
            out.append(row)
            if row.expanded:
                kids = row.children_rows()
                if row.start > 0:
                    out.append(("before", row))
                for kid in kids[row.start : row.stop]:
                    walk(kid)
                if row.stop < len(kids):
                    out.append(("more", row))

        walk(self._root)
        return out

    def layout_of_depth(self, depth: int) -> widgets.Layout:
        """The layout every row at ``depth`` shares: indented, and never squeezed by the list's
        height (``flex: none``), so the rows keep their spacing however many are open.

        >>> TreeExplorer({"a": 1}).layout_of_depth(2).flex
        'none'
        """
        if depth not in self._layouts:
            self._layouts[depth] = widgets.Layout(
                width="auto", flex="none", margin=f"1px 0 1px {depth * _INDENT_PX}px"
            )
        return self._layouts[depth]

    def _button(self, row: _Row) -> widgets.Button:
        if row.button is None:
            style = {"button_color": "transparent", "font_family": "monospace"}
            if not row.is_leaf:
                style["font_weight"] = "bold"
            button = widgets.Button(
                description=row.label(),
                tooltip=row.tooltip(),
                layout=self.layout_of_depth(row.depth),
                style=style,
            )
            button.add_class("course-explorer-leaf" if row.is_leaf else "course-explorer-node")
            if row.expanded:
                button.add_class("course-explorer-expanded")
            button.on_click(lambda _: self._clicked(row))
            row.button = button
        return row.button

    def _page_button(self, which: str, row: _Row) -> widgets.Button:
        """The button that shows the next (``which="more"``) or previous (``"before"``) children."""
        hidden = len(row.kids or []) - row.stop if which == "more" else row.start
        word = "more" if which == "more" else "before"
        text = f"… {hidden:,} {word}: show {min(hidden, self.page_size):,}"
        button = getattr(row, which)
        if button is None:
            button = widgets.Button(
                tooltip=path_text(row.path),
                layout=self.layout_of_depth(row.depth + 1),
                style={
                    "button_color": "transparent",
                    "font_family": "monospace",
                    "font_style": "italic",
                },
            )
            button.add_class(
                "course-explorer-more" if which == "more" else "course-explorer-previous"
            )
            action = self.show_more if which == "more" else self.show_previous
            button.on_click(lambda _: action(row.path))
            setattr(row, which, button)
        button.description = text
        return button

    def _clicked(self, row: _Row) -> None:
        if not row.is_leaf and row.pairs:
            (self._close if row.expanded else self._open)(row)
        self._mark(row)
        self._show_details()
        self._refresh()

    def _mark(self, row: _Row) -> None:
        old = self._selected
        if old is not None and old.button is not None:
            old.button.remove_class("course-explorer-selected")
        self._selected = row
        button = self._button(row)
        button.add_class("course-explorer-selected")

    def _refresh(self) -> None:
        rows = self._visible()
        self._tree_box.children = tuple(
            self._page_button(*row) if isinstance(row, tuple) else self._button(row) for row in rows
        )

    # Details.
    def _show_details(self) -> None:
        row = self._selected
        if row is not None:
            lines = _leaf_details(row) if row.is_leaf else _node_details(row)
            width = max(len(name) for name, _ in lines)
            self._details_text = "\n".join(f"{name:<{width}}  {value}" for name, value in lines)
        text = html.escape(self._details_text)
        note = (
            ""
            if self.note is None
            else f"<p class='course-explorer-note' style='margin:0 0 8px 0;line-height:1.4'>"
            f"{html.escape(self.note)}</p>"
        )
        self._details.value = (
            f"<style>{_SELECTED_CSS}</style>{note}"
            f"<pre style='margin:0;white-space:pre-wrap'>{text}</pre>"
        )


def sorted_keys_note(tree: PyTree) -> str | None:
    """A sentence saying that dict keys are listed sorted, with an example from ``tree``: two keys
    of one dict that sort in the other order than they were put in. ``None`` where every dict's
    keys were put in sorted order (then the order needs no word).

    >>> print(sorted_keys_note({f"block{i}": i for i in range(12)}))
    Dict keys are listed sorted, as JAX flattens a dict: ['block10'] comes before ['block2'].
    >>> sorted_keys_note({"a": 1, "b": [{"c": 2, "d": 3}]}) is None
    True
    """
    queue, seen = deque([tree]), 0
    while queue and seen < _NOTE_SEARCH_LIMIT:
        node = queue.popleft()
        seen += 1
        if type(node) in (dict, defaultdict):
            built = {key: i for i, key in enumerate(node)}
            pairs = children(node) or []
            ordered = [key for key, _ in pairs]
            for i, first in enumerate(ordered):
                later = next((k for k in ordered[i + 1 :] if built[k.key] < built[first.key]), None)
                if later is not None:
                    return (
                        "Dict keys are listed sorted, as JAX flattens a dict: "
                        f"{key_text(first)} comes before {key_text(later)}."
                    )
        queue.extend(child for _, child in children(node) or [])
    return None


def _type_name(leaf: Any) -> str:
    if isinstance(leaf, jax.Array):
        return "jax.Array"
    if isinstance(leaf, np.ndarray):
        return "numpy.ndarray"
    return type(leaf).__name__


def _node_details(row: _Row) -> list[tuple[str, str]]:
    keys = [key_text(key) for key, _ in row.pairs or []]
    listed = ", ".join(keys[:6]) + (f", … ({len(keys):,} in all)" if len(keys) > 6 else "")
    t = row.totals
    lines = [
        ("path", path_text(row.path)),
        (
            "node",
            node_label(row.value)
            if row.value is not None
            else "None (an empty subtree: no leaves)",
        ),
        ("keys", listed or "(none)"),
        ("leaves", f"{t.leaves:,}"),
        ("size", f"{t.params:,} params · {human_bytes(t.nbytes)}"),
    ]
    return lines


def _leaf_details(row: _Row) -> list[tuple[str, str]]:
    leaf = row.value
    lines = [("path", path_text(row.path)), ("leaf", f"{leaf_spec(leaf)} ({_type_name(leaf)})")]
    if not has_shape(leaf):
        lines.append(("value", f"{leaf!r:.200}"))
        return lines
    t = row.totals
    lines += [
        ("shape", str(tuple(leaf.shape))),
        ("dtype", str(np.dtype(leaf.dtype))),
        ("size", f"{t.params:,} params · {human_bytes(t.nbytes)}"),
    ]
    if is_abstract_array(leaf):  # a jax.ShapeDtypeStruct has a shape and a dtype, no values
        return lines
    values = np.asarray(leaf)
    if values.size and values.dtype.kind in "biuf":
        v = values.astype(np.float64)
        finite = np.isfinite(v)
        if not finite.all():
            lines.append(("non-finite", f"{int((~finite).sum()):,} of {v.size:,}"))
            v = v[finite]
        if v.size:
            stats = (("mean", np.mean), ("std", np.std), ("min", np.min), ("max", np.max))
            lines += [(name, f"{fn(v):.4g}") for name, fn in stats]
    return lines
