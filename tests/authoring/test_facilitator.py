"""The facilitator's guide: demo cells, agendas, and the page `make navigation` writes as
docs/facilitator.md, its sessions computed from each lesson's live path, on small made-up courses
and on the real one."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_lib.checks import exercises
from course_tools._notebook_files import NotebookError, notebook_text
from course_tools.authoring import facilitator, live_path, navigation
from course_tools.authoring.facilitator import (
    BREAK_AFTER,
    FULL_DAY,
    HALF_DAY,
    Day,
    agenda,
    clock,
    demo_cells,
    lesson_plan,
    set_up_minutes,
)

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------
# Sessions, computed


def test_a_lesson_plan_takes_its_session_from_the_live_path() -> None:
    gf = {"tags": [live_path.GOING_FURTHER_TAG]}
    nb = new_notebook(
        cells=[
            new_markdown_cell("# 01 Leaves\n\n" + "word " * 298),
            new_code_cell("x = 1"),
            new_markdown_cell("## Going further: more\n\n" + "word " * 500, metadata=gf),
            new_code_cell("y = 2", metadata=gf),
        ]
    )
    plan = lesson_plan(nb, "01_leaves.ipynb", "01 Leaves", "tell leaves", "# 01 Leaves")
    points = sum(exercise.points for exercise in exercises("01"))
    # 300 words read (3 min), one code cell (1 min), every exercise of lesson 01 at 4 min a point.
    assert plan.time == live_path.SessionTime(3, 1, 4 * points)
    assert plan.minutes == 5 * -(-(4 + 4 * points) // 5)
    assert plan.live is not None and plan.live.going_further == ("Going further: more",)


def test_a_typed_session_line_is_refused_with_what_to_do() -> None:
    with pytest.raises(NotebookError) as caught:
        lesson_plan(new_notebook(), "01_x.ipynb", "01 X", "x", "# 01 X\n<!-- session: 45 min -->")
    message = str(caught.value)
    assert message.startswith("the title cell types a session length (`<!-- session: ... -->`)")
    assert "delete the line" in message and "live path" in message


def test_lesson_00_is_sent_home_without_a_session() -> None:
    plan = lesson_plan(new_notebook(), "00_start.ipynb", "Start", "run it", "# Start")
    assert plan.minutes is None and plan.time is None and plan.live is None


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
    plan = agenda(sessions, HALF_DAY, learners=10)
    assert _schedule(plan) == [
        ("09:00", "opening", ""),
        ("09:15", "lesson", "01"),  # 45 min taught since the set-up: no break yet
        ("10:00", "break", ""),  # 45 + 60 would make 105
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
    plan = agenda(sessions, FULL_DAY, learners=10)
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
    plan = agenda([("07", 240)], HALF_DAY, learners=10)
    assert plan.taught == () and plan.left == ("07",)
    assert _schedule(plan) == [("09:00", "opening", ""), ("09:15", "closing", "")]


def test_the_set_up_grows_with_the_room_and_moves_the_day_after_it() -> None:
    sessions = [("01", 45), ("02", 60)]
    small, large = agenda(sessions, HALF_DAY, learners=10), agenda(sessions, HALF_DAY, learners=30)
    assert [slot.minutes for slot in (small.slots[0], large.slots[0])] == [15, 25]
    assert large.slots[1].start - small.slots[1].start == 10
    sizes = range(1, 200)
    assert all(set_up_minutes(n) % 5 == 0 for n in sizes)
    assert all(set_up_minutes(n) <= set_up_minutes(n + 1) for n in sizes)
    assert all(set_up_minutes(n) >= 10 + n / 2 for n in sizes)


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
            elif slot.kind == "lesson":
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


def _title(title: str, outcome: str) -> nbformat.NotebookNode:
    lines = [f"# {title}", "", f"<!-- outcome: {outcome} -->", "", "Intro."]
    return new_markdown_cell("\n".join(lines), id="title")


_GOING_FURTHER = {"tags": [live_path.GOING_FURTHER_TAG]}


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Lesson 00 (sent home) and lesson 01, with a demo cell on its live path and a
    going-further section that has a demo of its own; a README and a docs/ folder."""
    _write(
        tmp_path / "notebooks" / "00_start_here.ipynb",
        new_notebook(cells=[_title("Start here", "run the course")]),
    )
    _write(
        tmp_path / "notebooks" / "01_leaves.ipynb",
        new_notebook(
            cells=[
                _title("01 Leaves", "tell leaves from nodes"),
                new_markdown_cell("## Pitfall 1: `None` is no leaf", id="pitfall"),
                new_code_cell("import jax", id="imports"),
                new_code_cell(
                    "jax.tree.leaves([1, None])",
                    id="demo",
                    metadata={"course": {"demo": "a `None` vanishes"}},
                ),
                new_markdown_cell(
                    "## Going further: drawing\n\n## Containers and leaves",
                    id="further",
                    metadata=_GOING_FURTHER,
                ),
                new_code_cell(
                    "jax.tree.structure([1])",
                    id="skipped-demo",
                    metadata={"course": {"demo": "a structure"}, **_GOING_FURTHER},
                ),
            ]
        ),
    )
    (tmp_path / "README.md").write_text("# Course\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _page(course: Path) -> str:
    return (course / "docs" / "facilitator.md").read_text(encoding="utf-8")


def test_navigation_writes_the_guide_on_the_site(course: Path) -> None:
    assert navigation.main([]) == 0
    page = _page(course)
    assert page.startswith("# Facilitator's guide\n\n<!-- Generated by `make navigation`")
    assert "## Before the day: the room and the venue" in page
    assert "### Start here (sent home in advance)" in page
    # 01's live path: 5 words ("01 Leaves", "Intro.", "Pitfall 1 ...") and 2 code cells; every
    # exercise of lesson 01 but 01.count_params, whose section is going further, is core.
    listed = exercises("01")
    core = [exercise for exercise in listed if exercise.id != "01.count_params"]
    minutes = 4 * sum(exercise.points for exercise in core)
    session = facilitator.duration(5 * -(-(1 + 2 + minutes) // 5))
    assert f"### 01 Leaves ({session})" in page
    assert f"**Session:** 1 min reading 9 words, 2 min running 2 code cells, {minutes} min" in page
    assert "**Skipped live** (its *Going further* sections): drawing." in page
    assert "**Outcome:** *you will be able to* tell leaves from nodes." in page
    # The setup cell that navigation adds first is [1]: the demo is numbered as it will run, and
    # the one in the going-further section is not run live.
    assert "- `[3]` a `None` vanishes (under *Pitfall 1: `None` is no leaf*)" in page
    assert "a structure" not in page
    assert "[01 Leaves](../notebooks/01_leaves.ipynb)" in page
    assert "(../exercises/01_leaves.ipynb)" in page
    first = clock(9 * 60 + set_up_minutes(facilitator.ROOM_SIZE))  # after the room's set-up
    assert f"| {first} | [01 Leaves](../notebooks/01_leaves.ipynb) ({session}) |" in page
    assert (course / "README.md").read_text(encoding="utf-8") == "# Course\n"
    assert navigation.main(["--check"]) == 0


def test_the_guide_gives_each_exercise_its_points_minutes_and_mistakes(course: Path) -> None:
    navigation.main([])
    page = _page(course)
    listed = exercises("01")
    total = sum(exercise.points for exercise in listed)
    assert f"**Exercises:** {len(listed)}, worth {total} points. Optional in a workshop: " in page
    rows = [line for line in page.split("\n") if line.startswith("| `01.")]
    assert len(rows) == len(listed)
    for row, exercise in zip(rows, listed, strict=True):
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert cells[0] == f"`{exercise.id}`: {exercise.title}"
        assert cells[1] == str(exercise.points)
        minutes = str(exercise.minutes)
        optional = exercise.id == "01.count_params"  # its reread is "Containers and leaves"
        assert cells[2] == (f"{minutes} (optional)" if optional else minutes)
        assert cells[3] == "; ".join(exercise.mistakes)
    prose = " ".join(page.split())
    for words in ("**Fast finishers.**", "(client isolation)", "accept incoming connections"):
        assert words in prose, words


def test_check_catches_a_stale_guide(course: Path, capsys: pytest.CaptureFixture[str]) -> None:
    navigation.main([])
    lesson = course / "notebooks" / "01_leaves.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    nb.cells.insert(3, new_code_cell("x = 1", id="new"))  # one more cell to run: a longer session
    _write(lesson, nb)
    pristine = _page(course)
    capsys.readouterr()
    assert navigation.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "docs/facilitator.md: facilitator's guide missing or out of date" in out
    assert _page(course) == pristine  # --check wrote nothing
    assert navigation.main([]) == 0
    assert "3 min running 3 code cells" in _page(course)
    assert "- `[4]` a `None` vanishes" in _page(course)
    assert navigation.main(["--check"]) == 0


def test_check_catches_a_hand_edit_and_a_missing_page(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    navigation.main([])
    page = course / "docs" / "facilitator.md"
    page.write_text(page.read_text(encoding="utf-8").replace("Welcome", "Hello"), encoding="utf-8")
    capsys.readouterr()
    assert navigation.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "docs/facilitator.md: facilitator's guide missing or out of date" in out
    assert "README.md" not in out
    page.unlink()
    assert navigation.main(["--check"]) == 1
    assert navigation.main([]) == 0 and page.exists()


def test_a_lesson_with_a_typed_session_line_stops_the_guide(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lesson = course / "notebooks" / "01_leaves.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    nb.cells[0].source += "\n<!-- session: 45 min -->"
    _write(lesson, nb)
    before = lesson.read_bytes()
    assert navigation.main([]) == 2
    error = capsys.readouterr().err
    assert "notebooks/01_leaves.ipynb: the title cell types a session length" in error
    assert "Nothing was written." in error
    assert lesson.read_bytes() == before
    assert not (course / "docs" / "facilitator.md").exists()


def test_a_broken_going_further_section_stops_the_guide(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lesson = course / "notebooks" / "01_leaves.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    nb.cells[4].source = "## Drawing"  # tagged, but its heading no longer says so
    _write(lesson, nb)
    assert navigation.main([]) == 2
    error = capsys.readouterr().err
    # Cell 5 once navigation's setup cell comes first, as in every committed lesson.
    assert "notebooks/01_leaves.ipynb: cell 5: a going-further section starts with" in error


def test_no_guide_without_a_docs_folder(course: Path) -> None:
    (course / "docs").rmdir()
    assert navigation.main([]) == 0
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


def test_every_lesson_has_a_session_and_live_demos_at_their_committed_numbers() -> None:
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
            if cell.cell_type == "code"
            and "demo" in cell.metadata.get("course", {})
            and live_path.GOING_FURTHER_TAG not in cell.metadata.get("tags", [])
        ]
        assert [demo.cell for demo in plan.demos] == counts, plan.name  # Jupyter's [N]


def test_the_site_page_is_the_guide_of_the_real_course() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "\nfacilitator\n" in index
    page = (ROOT / "docs" / "facilitator.md").read_text(encoding="utf-8")
    assert page == facilitator.site_page(_real_plans())
    for exercise in (e for lesson in range(1, 10) for e in exercises(f"{lesson:02d}")):
        assert f"| `{exercise.id}`: {exercise.title} | {exercise.points} |" in page
    # Each agenda's heading ends when its table does.
    headings = re.findall(r"### (?:Half|Full) day, 09:00–(\d\d:\d\d)\n", page)
    ends = re.findall(r"\| (\d\d:\d\d) \| End \|", page)
    assert len(headings) == 2 and headings == ends
    assert "pairs with a neighbour" in page and "sticky note" in page
    for words in ("course-room serve", "Colab", "Binder", "USB", "make site"):
        assert words in page, words
