"""A failing self-check whose answer has the wrong structure draws it against the expected one.

In a notebook the hint's text is followed by ``viz.draw_diff`` of the learner's result against
the expected structure; in a terminal (and in the grader) the text is all there is. The picture
shows shapes and types, never the expected values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest
from matplotlib.figure import Figure

from course_lib._leaves import same_structure
from course_lib.checks import _selfcheck, check
from course_lib.checks._panel import CheckPanel

pytestmark = pytest.mark.usefixtures("fresh_checks")


def _top_level_mask(params: dict[str, Any]) -> dict[str, bool]:
    """A typical first try at lesson 09's mask: one bool per top-level key, not per leaf."""
    return {name: name.endswith("w") for name in params}


def _average_the_list(trees: list[Any]) -> Any:
    """A typical slip in lesson 02: mapping over the list of trees as if it were one tree."""
    return jax.tree.map(lambda *leaves: sum(leaves) / len(leaves), trees)


# one exercise per lesson whose typical wrong answer has the wrong structure, and a key path the
# picture must name
WRONG_STRUCTURE: list[tuple[str, Callable[..., Any], str]] = [
    ("01.replace_leaves", lambda tree, values: list(values), "<root>: list in your result"),
    ("02.average_trees", _average_the_list, "<root>: list in your result"),
    ("03.decay_weights", lambda params, rate: jax.tree.leaves(params), "<root>: list in your"),
    ("09.decay_mask", _top_level_mask, "in your result, a dict node in expected"),
]


def _texts(figure: Figure) -> list[str]:
    return [text.get_text() for text in figure.axes[0].texts]


@pytest.mark.parametrize(("exercise_id", "answer", "sentence"), WRONG_STRUCTURE)
def test_a_wrong_structure_is_drawn_under_the_hint(
    exercise_id: str,
    answer: Callable[..., Any],
    sentence: str,
    shown: list[Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    check(exercise_id, answer, strict=False)
    assert capsys.readouterr().out == ""  # a notebook gets the panel and the picture
    panel, figure = shown
    assert isinstance(panel, CheckPanel) and repr(panel).startswith(f"{exercise_id}: incorrect")
    assert "the picture below marks where your result's structure differs" in repr(panel)
    assert isinstance(figure, Figure)
    texts = _texts(figure)
    # A long sentence wraps onto the next label: read the labels as one text.
    assert any(t.startswith("at ") for t in texts) and sentence in " ".join(texts), texts
    assert any(t == "your result against the expected structure" for t in texts)
    assert any((t.get_gid() or "").startswith("diff-badge") for t in figure.axes[0].texts)


def test_the_picture_shows_the_expected_structure_not_its_values(shown: list[Any]) -> None:
    # replace_leaves' expected leaves are the strings it was given: the picture must not show them
    check("01.replace_leaves", lambda tree, values: list(values), strict=False)
    _, figure = shown
    texts = " ".join(_texts(figure))
    assert "new_" not in texts
    assert "str" in texts


def test_a_terminal_gets_the_text_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert not _selfcheck.in_notebook()
    check("09.decay_mask", _top_level_mask, strict=False)
    printed = capsys.readouterr().out
    assert "09.decay_mask: incorrect" in printed
    assert "picture" not in printed


def test_the_right_structure_with_wrong_values_draws_nothing(shown: list[Any]) -> None:
    check("01.replace_leaves", lambda tree, values: jax.tree.map(lambda _: 0.0, tree), strict=False)
    [panel] = shown
    assert isinstance(panel, CheckPanel) and "picture" not in repr(panel)


def test_each_run_of_a_failed_check_keeps_the_picture(shown: list[Any]) -> None:
    """The picture belongs to what went wrong, which every further run shows again above its
    hints: a third run shows the panel with both hints, and the picture under it."""
    for _ in range(3):
        check("09.decay_mask", _top_level_mask, strict=False)
    kinds = [(isinstance(item, CheckPanel), isinstance(item, Figure)) for item in shown]
    assert kinds == [(True, False), (False, True)] * 3, shown
    assert "hint 2/2, the fix" in repr(shown[-2]) and "picture below" in repr(shown[-2])


def test_a_strict_check_raises_without_drawing(shown: list[Any]) -> None:
    with pytest.raises(_selfcheck.CheckFailedError):
        check("09.decay_mask", _top_level_mask, strict=True)
    assert shown == []


def test_structure_only_keeps_shapes_and_types() -> None:
    from course_lib.checks._picture import structure_only

    tree = {"w": np.ones((2, 3), np.float32), "names": ["a", "b"], "flag": True, "none": None}
    shapes = structure_only(tree)
    assert same_structure(shapes, tree)
    assert shapes["w"] == jax.ShapeDtypeStruct((2, 3), np.float32)
    assert shapes["flag"] == jax.ShapeDtypeStruct((), np.bool_)
    assert repr(shapes["names"][0]) == "str" and type(shapes["names"][0]) is type(
        shapes["names"][1]
    )
