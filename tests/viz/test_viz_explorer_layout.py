"""The tree explorer's layout: rows that keep their spacing, a details pane beside the rows, a
selected row marked by more than colour, and a note on why dict keys are listed sorted."""

from __future__ import annotations

from collections import OrderedDict, defaultdict

import jax.numpy as jnp

from course_lib import viz
from course_lib.viz._explorer import sorted_keys_note


def _blocks(n: int = 12) -> dict:
    return {f"block{i}": {"w": jnp.ones((2, 2)), "b": jnp.zeros(2)} for i in range(n)}


def test_rows_never_shrink_so_their_spacing_stays_when_a_node_opens() -> None:
    explorer = viz.TreeExplorer([jnp.ones(2)] * 30, page_size=10)
    explorer.select("[3]")
    tree_box = explorer.widget.children[0]
    rows = tree_box.children
    assert any("course-explorer-more" in row._dom_classes for row in rows)
    assert all(row.layout.flex == "none" for row in rows), [row.layout.flex for row in rows]
    assert tree_box.layout.overflow == "auto"


def test_the_details_sit_beside_the_widest_row_and_wrap_below_on_a_narrow_screen() -> None:
    explorer = viz.TreeExplorer(_blocks())
    tree_box, details, _ = explorer.widget.children
    assert tree_box.layout.flex == "0 1 auto"  # as wide as its rows, not a share of the width
    assert (
        details.layout.flex.startswith("1 ") and "course-explorer-details" in details._dom_classes
    )
    assert explorer.widget.layout.flex_flow == "row wrap"


def test_the_selected_row_has_a_bar_not_only_a_colour() -> None:
    explorer = viz.TreeExplorer(_blocks(2))
    explorer.select("['block1']['w']")
    selected = [
        row
        for row in explorer.widget.children[0].children
        if "course-explorer-selected" in row._dom_classes
    ]
    assert [row.tooltip for row in selected] == ["['block1']['w']"]
    assert selected[0].button_style == ""  # no ipywidgets colour style of its own
    css = explorer.widget.children[1].value
    assert ".course-explorer-selected" in css and "box-shadow: inset 4px 0 0" in css


def test_a_note_says_why_block10_comes_before_block2() -> None:
    explorer = viz.TreeExplorer(_blocks())
    labels = [label for _, label in explorer.visible_rows()]
    assert labels[3].startswith("▸ ['block10']")  # sorted as strings, as JAX flattens
    assert explorer.note == (
        "Dict keys are listed sorted, as JAX flattens a dict: ['block10'] comes before ['block2']."
    )
    details = explorer.widget.children[1].value
    assert "course-explorer-note" in details and "[&#x27;block10&#x27;]" in details
    explorer.select("['block0']['w']")  # the note stays beside any selection
    assert "course-explorer-note" in explorer.widget.children[1].value


def test_no_note_where_every_dict_was_built_in_sorted_order() -> None:
    explorer = viz.TreeExplorer({"a": jnp.ones(2), "b": [{"c": 1.0, "d": 2.0}]})
    assert explorer.note is None
    assert "course-explorer-note" not in explorer.widget.children[1].value


def test_the_note_finds_dicts_deep_inside_and_only_those_that_sort() -> None:
    assert sorted_keys_note([1.0, ({"z": 1.0, "a": 2.0},)]) == (
        "Dict keys are listed sorted, as JAX flattens a dict: ['a'] comes before ['z']."
    )
    assert sorted_keys_note(defaultdict(float, {"y": 1.0, "x": 2.0})) is not None
    assert sorted_keys_note(OrderedDict(z=1.0, a=2.0)) is None  # JAX keeps an OrderedDict's order
    assert sorted_keys_note(jnp.ones(3)) is None
