"""The facilitator's guide: session lengths, demo cells, agendas, and the guide `make navigation`
writes into README.md and docs/facilitator.md, on small made-up courses and on the real one."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_lib.checks import exercises
from course_tools._notebook_files import NotebookError, notebook_text
from course_tools.authoring import facilitator, navigation
from course_tools.authoring.facilitator import (
    BREAK_AFTER,
    FULL_DAY,
    GUIDE_BEGIN,
    GUIDE_END,
    HALF_DAY,
    Day,
    agenda,
    clock,
    demo_cells,
    session_minutes,
)

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# Session lengths


def test_session_minutes_reads_the_line_beside_the_outcome() -> None:
    title = (
        "# 01 Leaves\n\n<!-- outcome: tell leaves\n     from nodes -->\n<!-- session: 45 min -->"
    )
    assert session_minutes(title) == 45
    assert session_minutes("<!--session:   90   min-->") == 90
    assert session_minutes("<!-- session: 5 min -->") == 5
    assert session_minutes("<!-- session: 240 min -->") == 240


def test_a_missing_session_line_says_what_to_write() -> None:
    with pytest.raises(NotebookError) as caught:
        session_minutes("# 01 Leaves\n\n<!-- outcome: tell leaves from nodes -->")
    message = str(caught.value)
    assert message.startswith("no session line. Put `<!-- session: 45 min -->` beside the outcome")
    assert "the cell with the lesson's `# ` title" in message


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ("<!-- session: 45 -->", "'45'"),
        ("<!-- session: 45 minutes -->", "'45 minutes'"),
        ("<!-- session: about an hour -->", "'about an hour'"),
        ("<!-- session: 1 h -->", "'1 h'"),
        ("<!-- session: 45.5 min -->", "'45.5 min'"),
        ("<!-- session: -->", "''"),
    ],
)
def test_a_malformed_session_line_is_quoted_back(line: str, said: str) -> None:
    with pytest.raises(NotebookError) as caught:
        session_minutes(f"# 01 Leaves\n\n{line}")
    assert str(caught.value) == (
        f"the session line says {said}: write whole minutes, as in `<!-- session: 45 min -->`"
    )


@pytest.mark.parametrize("minutes", [0, 4, 241, 600])
def test_a_session_out_of_bounds_is_refused(minutes: int) -> None:
    with pytest.raises(NotebookError, match=f"a session of {minutes} min: give a lesson between"):
        session_minutes(f"<!-- session: {minutes} min -->")


def test_two_session_lines_are_refused() -> None:
    with pytest.raises(NotebookError, match="2 session lines in the title cell; keep one"):
        session_minutes("<!-- session: 45 min -->\n<!-- session: 60 min -->")


# ---------------------------------------------------------------------------------------------
# Demo cells


def _lesson(*cells: nbformat.NotebookNode) -> nbformat.NotebookNode:
    return new_notebook(cells=list(cells))


def _demo(source: str, shows: object) -> nbformat.NotebookNode:
    return new_code_cell(source, metadata={"course": {"demo": shows}})


def test_demo_cells_are_numbered_as_jupyter_numbers_code_cells() -> None:
    nb = _lesson(
        new_code_cell("%xmode minimal", metadata={"jupyter": {"source_hidden": True}}),
        new_markdown_cell("# 01 Leaves\n\nIntro."),
        new_code_cell("import jax"),
        _demo("jax.tree.leaves([1, None])", "a  None\n vanishes"),
        new_markdown_cell("Prose.\n\n## Sorting\n\n### Pitfall 4: keys come back sorted"),
        new_markdown_cell("More prose, no heading."),
        _demo("jax.tree.leaves({'b': 1, 'a': 2})", "sorted keys"),
    )
    assert demo_cells(nb) == (
        facilitator.Demo(3, "01 Leaves", "a None vanishes"),
        facilitator.Demo(4, "Pitfall 4: keys come back sorted", "sorted keys"),
    )
    assert demo_cells(_lesson(new_code_cell("1"))) == ()


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        (
            new_markdown_cell("## Leaves", metadata={"course": {"demo": "leaves"}}),
            "cell 1: only a code cell can be a demo",
        ),
        (_demo("1 + 1", ""), "cell 1: its course.demo metadata must say in words what"),
        (_demo("1 + 1", True), "cell 1: its course.demo metadata must say in words what"),
    ],
    ids=["markdown", "empty", "not-text"],
)
def test_a_demo_mark_that_says_nothing_is_an_error(
    cell: nbformat.NotebookNode, message: str
) -> None:
    with pytest.raises(NotebookError, match=re.escape(message)):
        demo_cells(_lesson(new_markdown_cell("# 01 Leaves"), cell))


# ---------------------------------------------------------------------------------------------
# Agendas


def _schedule(plan: facilitator.Agenda) -> list[tuple[str, str, str]]:
    return [(clock(slot.start), slot.kind, slot.lesson) for slot in plan.slots]


def test_half_day_breaks_before_ninety_minutes_and_stops_at_the_first_lesson_too_long() -> None:
    sessions = [("01", 45), ("02", 60), ("03", 75), ("04", 60), ("05", 30)]
    plan = agenda(sessions, HALF_DAY)
    assert _schedule(plan) == [
        ("09:00", "opening", ""),
        ("09:15", "lesson", "01"),  # 15 + 45 = 60 min since the start: no break yet
        ("10:00", "break", ""),  # 60 + 60 would make 120
        ("10:15", "lesson", "02"),
        ("11:15", "break", ""),
        ("11:30", "lesson", "03"),
        ("12:45", "closing", ""),
    ]
    # 04 would end at 13:45 with its closing: it and the shorter 05 after it wait, in order.
    assert plan.taught == ("01", "02", "03") and plan.left == ("04", "05")
    assert clock(plan.ends) == "13:00"


def test_full_day_takes_lunch_at_the_first_pause_from_noon() -> None:
    sessions = [("01", 45), ("02", 60), ("03", 75), ("04", 60), ("05", 75), ("06", 75)]
    plan = agenda(sessions, FULL_DAY)
    assert _schedule(plan)[-6:] == [
        ("11:30", "lesson", "03"),
        ("12:45", "lunch", ""),  # instead of a break: it is past noon
        ("13:45", "lesson", "04"),
        ("14:45", "break", ""),
        ("15:00", "lesson", "05"),
        ("16:15", "closing", ""),
    ]
    assert [slot.minutes for slot in plan.slots if slot.kind == "lunch"] == [60]
    assert plan.left == ("06",)  # a break and 75 min from 16:15 would end at 17:45


def test_a_day_too_short_for_any_session_teaches_none() -> None:
    plan = agenda([("07", 240)], HALF_DAY)
    assert plan.taught == () and plan.left == ("07",)
    assert _schedule(plan) == [("09:00", "opening", ""), ("09:15", "closing", "")]


def test_agendas_keep_their_rules_for_any_sessions() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        minutes = [int(m) for m in rng.choice([20, 30, 45, 60, 75, 90, 120], rng.integers(1, 12))]
        sessions = [(f"{i:02d}", m) for i, m in enumerate(minutes, 1)]
        day = Day("test", 8 * 60, int(rng.integers(10, 19)) * 60, lunch=bool(rng.integers(2)))
        plan = agenda(sessions, day)
        assert plan.taught + plan.left == tuple(label for label, _ in sessions)
        assert plan.slots[0].start == day.start and plan.ends <= day.end
        for before, after in zip(plan.slots, plan.slots[1:], strict=False):
            assert after.start == before.start + before.minutes  # no gaps, no overlaps
        teaching = 0
        for slot in plan.slots:
            if slot.kind in ("break", "lunch"):
                teaching = 0
            elif slot.kind in ("opening", "lesson"):
                teaching += slot.minutes
                assert teaching <= BREAK_AFTER or teaching == slot.minutes, (sessions, day)
        lunches = [slot for slot in plan.slots if slot.kind == "lunch"]
        assert len(lunches) <= (1 if day.lunch else 0)
        assert all(slot.start >= facilitator.LUNCH_FROM for slot in lunches)
        if plan.left:  # the next session, with the pause due before it, did not fit
            nxt, now = dict(sessions)[plan.left[0]], plan.slots[-1].start
            pause = 0
            if day.lunch and not lunches and now >= facilitator.LUNCH_FROM:
                pause = facilitator.LUNCH
            elif teaching + nxt > BREAK_AFTER:
                pause = facilitator.BREAK
            assert now + pause + nxt + facilitator.CLOSING > day.end, (sessions, day)


# ---------------------------------------------------------------------------------------------
# The guide, written by `make navigation`


def _write(path: Path, nb: nbformat.NotebookNode) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_text(nb), encoding="utf-8")


def _title(title: str, outcome: str, session: str | None) -> nbformat.NotebookNode:
    lines = [f"# {title}", "", f"<!-- outcome: {outcome} -->"]
    if session is not None:
        lines.append(f"<!-- session: {session} -->")
    return new_markdown_cell("\n".join([*lines, "", "Intro."]), id="title")


_README = f"""# Course

## Teaching a live workshop

Intro.

{GUIDE_BEGIN}
{GUIDE_END}

## Grading a class
"""


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Lesson 00 (sent home) and lesson 01, with a session line and a demo cell; a README with
    the guide's markers and a docs/ folder."""
    _write(
        tmp_path / "notebooks" / "00_start_here.ipynb",
        new_notebook(cells=[_title("Start here", "run the course", None)]),
    )
    _write(
        tmp_path / "notebooks" / "01_leaves.ipynb",
        new_notebook(
            cells=[
                _title("01 Leaves", "tell leaves from nodes", "45 min"),
                new_markdown_cell("## Pitfall 1: `None` is no leaf", id="pitfall"),
                new_code_cell("import jax", id="imports"),
                new_code_cell(
                    "jax.tree.leaves([1, None])",
                    id="demo",
                    metadata={"course": {"demo": "a `None` vanishes"}},
                ),
            ]
        ),
    )
    (tmp_path / "README.md").write_text(_README, encoding="utf-8")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _guide(course: Path) -> str:
    text = (course / "README.md").read_text(encoding="utf-8")
    return text.split(GUIDE_BEGIN + "\n")[1].split("\n" + GUIDE_END)[0]


def test_navigation_writes_the_guide_in_the_readme_and_the_site(course: Path) -> None:
    assert navigation.main([]) == 0
    guide = _guide(course)
    assert guide.startswith("### Before the day: the room checklist\n")
    assert "#### Start here (sent home in advance)" in guide
    assert "#### 01 Leaves (45 min)" in guide
    assert "**Outcome:** *you will be able to* tell leaves from nodes." in guide
    # The setup cell that navigation adds first is [1]: the demo is numbered as it will run.
    assert "- `[3]` a `None` vanishes (under *Pitfall 1: `None` is no leaf*)" in guide
    assert "[its exercises](exercises/01_leaves.ipynb)" in guide
    # Lesson 00 is sent home and has no session; 01 alone fits a half day.
    assert "| 09:15 | [01 Leaves](notebooks/01_leaves.ipynb) (45 min) |" in guide
    assert "Lesson 01 fits (45 min of sessions)." in guide
    readme = (course / "README.md").read_text(encoding="utf-8")
    assert readme.startswith(_README.split(GUIDE_BEGIN)[0])
    assert readme.endswith(GUIDE_END + "\n\n## Grading a class\n")

    page = (course / "docs" / "facilitator.md").read_text(encoding="utf-8")
    assert page.startswith("# Facilitator's guide\n\n<!-- Generated by `make navigation`")
    assert "## Before the day: the room checklist" in page and "### 01 Leaves (45 min)" in page
    assert "[01 Leaves](../notebooks/01_leaves.ipynb)" in page
    assert "(../exercises/01_leaves.ipynb)" in page
    assert navigation.main(["--check"]) == 0


def test_the_guide_names_each_exercise_with_its_points_and_mistakes(course: Path) -> None:
    navigation.main([])
    guide = _guide(course)
    listed = exercises("01")
    total = sum(exercise.points for exercise in listed)
    assert f"**Exercises:** {len(listed)}, worth {total} points." in guide
    rows = [line for line in guide.split("\n") if line.startswith("| `01.")]
    assert len(rows) == len(listed)
    for row, exercise in zip(rows, listed, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert cells[0] == f"`{exercise.id}`: {exercise.title}"
        assert cells[1] == str(exercise.points)
        assert cells[2] == "; ".join(exercise.mistakes)


def test_check_catches_a_stale_guide_in_both_places(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    navigation.main([])
    lesson = course / "notebooks" / "01_leaves.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    (title,) = [cell for cell in nb.cells if cell.get("id") == "title"]
    title.source = title.source.replace("45 min", "60 min")
    _write(lesson, nb)
    pristine = (
        (course / "README.md").read_bytes(),
        (course / "docs" / "facilitator.md").read_bytes(),
    )
    capsys.readouterr()
    assert navigation.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "README.md: facilitator's guide missing or out of date" in out
    assert "docs/facilitator.md: facilitator's guide missing or out of date" in out
    assert "notebooks/01_leaves.ipynb" not in out
    after = (course / "README.md").read_bytes(), (course / "docs" / "facilitator.md").read_bytes()
    assert after == pristine  # --check wrote nothing
    assert navigation.main([]) == 0
    assert "#### 01 Leaves (1 h)" in _guide(course)
    assert navigation.main(["--check"]) == 0


def test_check_catches_a_hand_edit_and_a_missing_page(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    navigation.main([])
    page = course / "docs" / "facilitator.md"
    page.write_text(page.read_text(encoding="utf-8").replace("45 min", "30 min"), encoding="utf-8")
    capsys.readouterr()
    assert navigation.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "docs/facilitator.md: facilitator's guide missing or out of date" in out
    assert "README.md" not in out
    page.unlink()
    assert navigation.main(["--check"]) == 1
    assert navigation.main([]) == 0 and page.exists()


def test_a_demo_moved_by_a_new_cell_makes_the_guide_stale(course: Path) -> None:
    navigation.main([])
    lesson = course / "notebooks" / "01_leaves.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    nb.cells.insert(2, new_code_cell("x = 1", id="new"))
    _write(lesson, nb)
    assert navigation.main(["--check"]) == 1
    navigation.main([])
    assert "- `[4]` a `None` vanishes" in _guide(course)


def test_a_lesson_without_a_session_line_stops_the_guide(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lesson = course / "notebooks" / "01_leaves.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace("<!-- session: 45 min -->", "")
    _write(lesson, nb)
    before = (course / "README.md").read_bytes(), lesson.read_bytes()
    assert navigation.main([]) == 2
    error = capsys.readouterr().err
    assert "notebooks/01_leaves.ipynb: no session line. Put `<!-- session: 45 min -->`" in error
    assert "Nothing was written." in error
    assert ((course / "README.md").read_bytes(), lesson.read_bytes()) == before
    assert not (course / "docs" / "facilitator.md").exists()


def test_no_guide_and_no_session_lines_without_its_markers_or_docs(course: Path) -> None:
    (course / "README.md").write_text("# Course\n", encoding="utf-8")
    (course / "docs").rmdir()
    lesson = course / "notebooks" / "01_leaves.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace("<!-- session: 45 min -->", "")
    _write(lesson, nb)
    assert navigation.main([]) == 0
    assert (course / "README.md").read_text(encoding="utf-8") == "# Course\n"
    assert not (course / "docs").exists()


# ---------------------------------------------------------------------------------------------
# The real course


def _real_plans() -> list[facilitator.LessonPlan]:
    plans = []
    for path in navigation.lesson_paths(ROOT):
        nb = nbformat.read(path, as_version=4)
        title = next(c.source for c in nb.cells if c.cell_type == "markdown")
        plans.append(
            facilitator.lesson_plan(
                nb,
                path.name,
                navigation.notebook_title(nb, path.stem),
                navigation.lesson_outcome(nb) or "",
                title,
            )
        )
    return plans


def test_every_lesson_has_a_session_and_demos_at_their_committed_numbers() -> None:
    plans = _real_plans()
    assert [plan.number for plan in plans] == [f"{n:02d}" for n in range(10)]
    assert plans[0].minutes is None
    for plan in plans[1:]:
        assert plan.minutes is not None and plan.minutes % 5 == 0, plan.name
        assert 3 <= len(plan.demos) <= 5, plan.name
        nb = nbformat.read(ROOT / "notebooks" / plan.name, as_version=4)
        counts = [
            cell.execution_count
            for cell in nb.cells
            if cell.cell_type == "code" and "demo" in cell.metadata.get("course", {})
        ]
        assert [demo.cell for demo in plan.demos] == counts, plan.name  # Jupyter's [N]


def test_the_course_readme_teaches_a_workshop_before_grading_a_class() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    workshop = readme.index("\n## Teaching a live workshop\n")
    begin, end = readme.index(f"\n{GUIDE_BEGIN}\n"), readme.index(f"\n{GUIDE_END}\n")
    room = readme.index("\n## The workshop room: who is stuck on what, live\n")
    grading = readme.index("\n## Grading a class\n")
    assert workshop < begin < end < room < grading
    assert re.findall(r"^## .*", readme[workshop:room], re.M) == ["## Teaching a live workshop"]
    # The guide's pointer to the room's usage reaches that section's heading.
    assert "](#the-workshop-room-who-is-stuck-on-what-live)" in readme[workshop:end]
    guide = readme[begin:end]
    for exercise in (e for lesson in range(1, 10) for e in exercises(f"{lesson:02d}")):
        assert f"| `{exercise.id}`: {exercise.title} | {exercise.points} |" in guide
    for label in ("Half day, 09:00–13:00", "Full day, 09:00–17:00"):
        assert f"#### {label}" in guide
    for words in ("course-room serve", "Colab", "Binder", "USB", "make site"):
        assert words in guide, words


def test_the_site_lists_the_facilitator_page_after_the_instructor_page() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "\ninstructor\nfacilitator\n```" in index
    page = (ROOT / "docs" / "facilitator.md").read_text(encoding="utf-8")
    assert page == facilitator.site_page(_real_plans())
