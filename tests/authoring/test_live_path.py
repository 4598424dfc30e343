"""Each lesson's live path: the going-further convention, the rule that turns a live path into a
session's minutes, and every lesson held to its budget."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_lib.checks import exercises
from course_tools._notebook_files import NotebookError
from course_tools.authoring import launch, live_path, navigation
from course_tools.authoring.live_path import (
    GOING_FURTHER_TAG,
    SESSION_BUDGETS,
    SessionTime,
    going_further_sections,
    names_from_going_further,
    optional_exercises,
    session_time,
)

ROOT = Path(__file__).resolve().parents[2]
_TAG = {"tags": [GOING_FURTHER_TAG]}


def _further(source: str, cell_type: str = "markdown") -> nbformat.NotebookNode:
    if cell_type == "code":
        return new_code_cell(source, metadata=_TAG)
    return new_markdown_cell(source, metadata=_TAG)


# ---------------------------------------------------------------------------------------------
# The convention


def test_sections_are_runs_of_tagged_cells_opened_by_their_heading() -> None:
    nb = new_notebook(
        cells=[
            new_markdown_cell("## Live"),
            _further("### Going further: one\n\nText."),
            _further("x = 1", "code"),
            _further("### Going further: two"),  # right after the first: one run
            new_markdown_cell("## Back on the live path"),
            _further("## Going further: last"),
        ]
    )
    assert going_further_sections(nb) == ((1, 3), (5, 5))
    assert live_path.live_path(nb).going_further == (
        "Going further: one",
        "Going further: two",
        "Going further: last",
    )


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        (
            [new_markdown_cell("## Going further: untagged")],
            "cell 0: its heading opens a going-further section, so tag it, and every cell of "
            "the section, 'going-further'",
        ),
        (
            [new_markdown_cell("## Live"), _further("Text without a heading.")],
            "cell 1: a going-further section starts with a markdown cell whose first line is a "
            "heading beginning 'Going further:'",
        ),
        (
            [_further("Intro.\n\n## Going further: too late")],
            "cell 0: a going-further section starts with a markdown cell whose first line",
        ),
        (
            [_further("## Going further: x"), new_code_cell("y = 2")],
            "cell 1: the live path resumes here, after a going-further section, so start the "
            "cell with a heading (or tag it 'going-further' too)",
        ),
    ],
    ids=["untagged-heading", "no-heading", "heading-not-first", "no-heading-after"],
)
def test_a_section_a_reader_cannot_see_is_an_error(
    cells: list[nbformat.NotebookNode], message: str
) -> None:
    with pytest.raises(NotebookError, match=re.escape(message)):
        going_further_sections(new_notebook(cells=cells))


def test_a_live_cell_may_not_need_a_going_further_name() -> None:
    nb = new_notebook(
        cells=[
            new_code_cell("import jax\nparams = {'w': 1}"),
            _further("## Going further: helpers"),
            _further("def helper(tree, scale):\n    return scale\nlimit = 3", "code"),
            new_markdown_cell("## Back"),
            new_code_cell("%%capture\nhelper(params, 2)"),
            new_code_cell("limit = 4\nlimit + len(params)"),  # bound live before it is used
            new_code_cell("[scale for scale in range(limit)]"),  # a comprehension's own name
        ]
    )
    assert names_from_going_further(nb) == ["cell 4 uses 'helper'"]


# ---------------------------------------------------------------------------------------------
# The rule


def test_the_live_path_counts_what_a_learner_reads_and_runs() -> None:
    nb = new_notebook(
        cells=[
            new_code_cell("# setup", metadata={"course": {"setup": True}}),
            new_code_cell("%xmode minimal", metadata={"jupyter": {"source_hidden": True}}),
            new_markdown_cell("# 01 T\n\n<!-- outcome: not read -->\n\n- one | two ---"),
            new_code_cell("1"),
            _further("## Going further: skipped words here"),
            _further("2", "code"),
            new_markdown_cell("## End", metadata={"course": {"navigation": True}}),
        ]
    )
    assert live_path.live_path(nb) == live_path.LivePath(
        words=4, code_cells=1, going_further=("Going further: skipped words here",)
    )


def test_a_colab_badge_is_not_words_a_learner_reads() -> None:
    """A student copy with a repository gets badges under its titles; its sessions stay the same."""
    title = "# 01 T\n\nTwo words."
    badge = launch.colab_badge(launch.Repository("octo", "c"), "notebooks/01_t.ipynb")
    plain, badged = (
        live_path.live_path(new_notebook(cells=[new_markdown_cell(text)]))
        for text in (title, launch.with_badge(title, badge))
    )
    assert plain.words == badged.words == 4


def test_an_exercise_is_optional_when_its_section_is_going_further() -> None:
    first, *rest = exercises("01")
    heading = first.reread.split(" ", 1)[1]
    nb = new_notebook(
        cells=[
            _further(f"## Going further: counting\n\n## {heading}"),
            new_markdown_cell("## Summary"),
        ]
    )
    assert optional_exercises(nb, "01") == (first,)
    time = session_time(nb, "01")
    assert time == SessionTime(1, 0, sum(e.minutes for e in rest))
    assert time.minutes % 5 == 0 and time.minutes >= 1 + time.exercises


def test_each_exercise_says_it_is_optional_exactly_when_its_lesson_makes_it_so() -> None:
    for lesson, nb in _lessons():
        declared = tuple(e for e in exercises(lesson) if e.optional)
        assert declared == optional_exercises(nb, lesson), lesson


def test_exercise_minutes_are_four_per_point() -> None:
    for exercise in (e for lesson in range(1, 10) for e in exercises(f"{lesson:02d}")):
        assert exercise.minutes == 4 * exercise.points


# ---------------------------------------------------------------------------------------------
# The real lessons


def _lessons() -> list[tuple[str, nbformat.NotebookNode]]:
    return [
        (path.name[:2], nbformat.read(path, as_version=4))
        for path in navigation.lesson_paths(ROOT)
        if not path.name.startswith("00")
    ]


def test_every_lesson_fits_its_session_budget() -> None:
    lessons = _lessons()
    assert [number for number, _ in lessons] == sorted(SESSION_BUDGETS)
    over = {}
    for number, nb in lessons:
        minutes = session_time(nb, number).minutes
        if minutes > SESSION_BUDGETS[number]:
            over[number] = (minutes, SESSION_BUDGETS[number])
    assert over == {}, "lesson: (session by the rule, budget)"


def test_every_lesson_has_going_further_sections_a_workshop_can_skip() -> None:
    for number, nb in _lessons():
        assert going_further_sections(nb), number
        assert names_from_going_further(nb) == [], number
        for first, last in going_further_sections(nb):
            # The site shows the heading as a heading and the note under it says what to do.
            assert "*A workshop skips this section" in nb.cells[first].source, (number, first)
            assert all(GOING_FURTHER_TAG in c.metadata["tags"] for c in nb.cells[first : last + 1])


def test_the_command_prints_each_lesson_against_its_budget(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert live_path.main([str(ROOT)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("| lesson | live path: words | code cells |")
    assert [row.split(" | ")[0] for row in out[2:]] == [f"| {n}" for n in sorted(SESSION_BUDGETS)]
    assert not any("(over)" in row for row in out)


def test_the_command_names_a_lesson_over_budget_and_a_broken_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lesson = tmp_path / "notebooks" / "01_leaves.ipynb"
    lesson.parent.mkdir()
    nbformat.write(new_notebook(cells=[new_markdown_cell("# 01 Leaves")]), lesson)
    monkeypatch.setitem(SESSION_BUDGETS, "01", 5)
    assert live_path.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "| 5 min (over) |" in out and "Over budget: 01. Move a section" in out
    nbformat.write(new_notebook(cells=[_further("No heading.")]), lesson)
    assert live_path.main([str(tmp_path)]) == 2
    assert "01_leaves.ipynb: cell 0: a going-further section starts with" in capsys.readouterr().err
