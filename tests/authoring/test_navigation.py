"""The navigation cell tool, on small made-up courses and on temporary copies of the real one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_tools._notebook_files import NotebookError, notebook_text
from course_tools.authoring import exercises, navigation

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, nb: nbformat.NotebookNode) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_text(nb), encoding="utf-8")


def _lesson(title: str, outcome: str = "do what the lesson teaches") -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_markdown_cell(f"# {title}\n\n<!-- outcome: {outcome} -->\n\nIntro.", id="title"),
            new_code_cell("1 + 1", id="code"),
            new_markdown_cell("## Summary", id="summary"),
        ]
    )


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*.ipynb")
    }


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three lessons, one of them with a solution notebook and its generated exercises."""
    _write(tmp_path / "notebooks" / "00_start_here.ipynb", _lesson("Start here", "run the course"))
    _write(
        tmp_path / "notebooks" / "01_leaves.ipynb",
        _lesson("01 · Leaves and [nodes]", "tell leaves | nodes"),
    )
    _write(tmp_path / "notebooks" / "02_mapping.ipynb", _lesson("02 · Mapping", "map `f`"))
    solution = new_notebook(
        cells=[
            new_markdown_cell("# Exercises: leaves", id="title"),
            new_code_cell("### BEGIN SOLUTION\nx = 1\n### END SOLUTION", id="answer"),
        ]
    )
    _write(tmp_path / "solutions" / "01_leaves.ipynb", solution)
    (tmp_path / "README.md").write_text("# Course\n")
    monkeypatch.chdir(tmp_path)
    assert exercises.main([]) == 0
    return tmp_path


def test_navigation_lessons_link_neighbours_contents_and_exercises(course: Path) -> None:
    assert navigation.main([]) == 0
    first, middle, last = (
        _read(course / "notebooks" / name).cells[-1].source.split("\n")[1]
        for name in ("00_start_here.ipynb", "01_leaves.ipynb", "02_mapping.ipynb")
    )
    assert first == ("[Contents](../README.md) · [01 · Leaves and \\[nodes\\] →](01_leaves.ipynb)")
    assert middle == (
        "[← Start here](00_start_here.ipynb) · [Contents](../README.md)"
        " · [Exercises](../exercises/01_leaves.ipynb) · [02 · Mapping →](02_mapping.ipynb)"
    )
    assert last == "[← 01 · Leaves and \\[nodes\\]](01_leaves.ipynb) · [Contents](../README.md)"


def test_navigation_solutions_and_exercises_link_their_lesson(course: Path) -> None:
    navigation.main([])
    expected = (
        "[← Back to the lesson: 01 · Leaves and \\[nodes\\]](../notebooks/01_leaves.ipynb)"
        " · [Contents](../README.md)"
    )
    for folder in ("solutions", "exercises"):
        cell = _read(course / folder / "01_leaves.ipynb").cells[-1]
        assert cell.source.split("\n")[1] == expected


def test_navigation_cell_is_last_marked_and_has_a_fixed_id(course: Path) -> None:
    navigation.main([])
    for path in sorted(course.rglob("*.ipynb")):
        cells = _read(path).cells
        assert [navigation.is_navigation(c) for c in cells].count(True) == 1
        assert cells[-1].metadata == {"course": {"navigation": True}}
        assert cells[-1].id == "course-navigation"
        assert cells[-1].cell_type == "markdown"


def test_navigation_rerun_changes_nothing(course: Path) -> None:
    navigation.main([])
    before = _snapshot(course)
    assert navigation.main([]) == 0
    assert _snapshot(course) == before
    assert navigation.main(["--check"]) == 0


def test_navigation_agrees_with_the_exercise_generator(course: Path) -> None:
    navigation.main([])
    assert exercises.main(["--check"]) == 0
    exercises.main([])
    assert navigation.main(["--check"]) == 0


def test_navigation_leaves_other_cells_alone(course: Path) -> None:
    path = course / "notebooks" / "01_leaves.ipynb"
    before = _read(path)
    navigation.main([])
    after = _read(path)
    first_code = next(i for i, cell in enumerate(before.cells) if cell.cell_type == "code")
    assert navigation.is_setup(after.cells[first_code])  # the title and prose come first
    assert [*after.cells[:first_code], *after.cells[first_code + 1 : -1]] == before.cells
    assert after.metadata == before.metadata


def test_check_exit_codes_and_writes_nothing(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(course)
    assert navigation.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "notebooks/00_start_here.ipynb: navigation, contents, setup cell or badge missing" in out
    assert "exercises/01_leaves.ipynb" in out and "make navigation" in out
    assert _snapshot(course) == before
    assert navigation.main([]) == 0
    assert navigation.main(["--check"]) == 0


def test_check_catches_hand_edits_and_moved_cells(course: Path) -> None:
    navigation.main([])
    path = course / "notebooks" / "02_mapping.ipynb"
    pristine = path.read_bytes()

    nb = _read(path)
    nb.cells[-1].source = nb.cells[-1].source.replace("Contents", "Index")
    _write(path, nb)
    assert navigation.main(["--check"]) == 1

    nb = nbformat.reads(pristine.decode(), as_version=4)
    nb.cells.insert(0, nb.cells.pop())  # right text, wrong place
    _write(path, nb)
    assert navigation.main(["--check"]) == 1
    assert navigation.main([]) == 0
    nb = _read(path)
    assert [navigation.is_navigation(c) for c in nb.cells] == [False, False, False, False, True]
    assert navigation.main(["--check"]) == 0
    assert path.read_bytes() == pristine


def test_navigation_replaces_rather_than_stacks(course: Path) -> None:
    navigation.main([])
    path = course / "notebooks" / "00_start_here.ipynb"
    nb = _read(path)
    stray = new_markdown_cell("old nav", metadata={"course": {"navigation": True}}, id="old-nav")
    nb.cells.insert(1, stray)
    _write(path, nb)
    navigation.main([])
    cells = _read(path).cells
    assert [c.id for c in cells] == [
        "title",
        "course-setup",
        "code",
        "summary",
        "course-navigation",
    ]


def test_navigation_follows_title_changes(course: Path) -> None:
    navigation.main([])
    nb = _read(course / "notebooks" / "02_mapping.ipynb")
    nb.cells[0].source = nb.cells[0].source.replace("# 02 · Mapping", "# 02 · Mapping over trees")
    _write(course / "notebooks" / "02_mapping.ipynb", nb)
    assert navigation.main(["--check"]) == 1  # lesson 01 names lesson 02 in its "next" link
    navigation.main([])
    assert (
        "[02 · Mapping over trees →]"
        in _read(course / "notebooks" / "01_leaves.ipynb").cells[-1].source
    )


def test_navigation_without_cell_ids(course: Path) -> None:
    nb = _lesson("Old format")
    nb.nbformat_minor = 4
    for cell in nb.cells:
        del cell["id"]
    _write(course / "notebooks" / "03_old.ipynb", nb)
    assert navigation.main([]) == 0
    last = _read(course / "notebooks" / "03_old.ipynb").cells[-1]
    assert navigation.is_navigation(last) and "id" not in last
    assert navigation.main(["--check"]) == 0


def test_navigation_skips_unnumbered_notebooks(course: Path) -> None:
    _write(course / "notebooks" / "scratch.ipynb", _lesson("Scratch"))
    navigation.main([])
    assert _read(course / "notebooks" / "scratch.ipynb").cells[-1].id == "summary"
    assert "Scratch" not in _read(course / "notebooks" / "02_mapping.ipynb").cells[-1].source


def test_navigation_unreadable_notebook_is_an_error(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (course / "notebooks" / "03_broken.ipynb").write_text("{not json")
    before = _snapshot(course)
    assert navigation.main([]) == 2
    assert (
        "notebooks/03_broken.ipynb: the file is not valid JSON (line 1" in capsys.readouterr().err
    )
    del before["notebooks/03_broken.ipynb"]
    after = _snapshot(course)
    del after["notebooks/03_broken.ipynb"]
    assert after == before


def test_navigation_on_a_copy_of_the_course(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("notebooks", "solutions", "exercises"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    assert navigation.main([]) == 0
    assert navigation.main(["--check"]) == 0
    for path in sorted((tmp_path / "notebooks").glob("*.ipynb")):
        original = _read(ROOT / "notebooks" / path.name).cells
        updated = _read(path).cells
        assert [c for c in updated if not navigation.is_navigation(c)] == [
            c for c in original if not navigation.is_navigation(c)
        ]
        assert navigation.is_navigation(updated[-1])


def test_cli_check_in_a_subprocess(course: Path) -> None:
    command = [sys.executable, "-m", "course_tools.authoring.navigation", "--check"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=course)
    assert result.returncode == 1, result.stderr
    assert "make navigation" in result.stdout


# ---------------------------------------------------------------------------------------------
# The pitfall table (the site's pitfall index, docs/pitfalls.md)


def _with_pitfalls(path: Path, *headings: str) -> None:
    nb = _read(path)
    nb.cells.insert(
        1, new_markdown_cell("\n\n".join(["Some prose.", *headings, "More prose."]), id="pitfalls")
    )
    _write(path, nb)


_INDEX = (
    f"# Pitfall index\n\n{navigation.PITFALLS_BEGIN}\nold table\n"
    f"{navigation.PITFALLS_END}\n\nAfter.\n"
)


def _write_index(course: Path, text: str = _INDEX) -> Path:
    index = course / navigation.PITFALL_PAGE
    index.parent.mkdir(exist_ok=True)
    index.write_text(text)
    return index


def test_pitfall_table_lists_numbered_headings_by_number(course: Path) -> None:
    _with_pitfalls(
        course / "notebooks" / "02_mapping.ipynb", "### Pitfall 2: `None` only | matches `None`"
    )
    _with_pitfalls(
        course / "notebooks" / "01_leaves.ipynb",
        "### Pitfall 10: dict keys come back sorted",
        "### Pitfall: an unnumbered one is left out",
        "## Pitfall 3: not a level-3 heading",
    )
    index = _write_index(course)
    assert navigation.main([]) == 0
    assert index.read_text() == (
        "# Pitfall index\n\n"
        f"{navigation.PITFALLS_BEGIN}\n"
        "| # | pitfall | lesson |\n"
        "|---|---|---|\n"
        "| 2 | [`None` only \\| matches `None`](../notebooks/02_mapping.ipynb#pitfall-2) "
        "| [02](../notebooks/02_mapping.ipynb) |\n"
        "| 10 | [dict keys come back sorted](../notebooks/01_leaves.ipynb#pitfall-10) "
        "| [01](../notebooks/01_leaves.ipynb) |\n"
        f"{navigation.PITFALLS_END}\n\nAfter.\n"
    )
    assert navigation.main(["--check"]) == 0


def test_pitfall_table_check_catches_a_renamed_heading(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lesson = course / "notebooks" / "01_leaves.ipynb"
    _with_pitfalls(lesson, "### Pitfall 1: leaves")
    index = _write_index(course)
    navigation.main([])
    nb = _read(lesson)
    pitfalls = next(cell for cell in nb.cells if cell.id == "pitfalls")
    pitfalls.source = pitfalls.source.replace("Pitfall 1: leaves", "Pitfall 1: leaves and nodes")
    _write(lesson, nb)
    before = index.read_text()
    capsys.readouterr()
    assert navigation.main(["--check"]) == 1
    assert "docs/pitfalls.md: pitfall table missing or out of date" in capsys.readouterr().out
    assert index.read_text() == before
    assert navigation.main([]) == 0
    assert "| 1 | [leaves and nodes](" in index.read_text()


def test_duplicate_pitfall_numbers_are_an_error(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_pitfalls(course / "notebooks" / "01_leaves.ipynb", "### Pitfall 4: one")
    _with_pitfalls(course / "notebooks" / "02_mapping.ipynb", "### Pitfall 4: another")
    index = _write_index(course)
    before = _snapshot(course)
    assert navigation.main([]) == 2
    error = capsys.readouterr().err
    assert (
        "Pitfall 4 is a heading in both notebooks/01_leaves.ipynb and notebooks/02_mapping.ipynb"
        in error
    )
    assert "Nothing was written." in error
    assert _snapshot(course) == before
    assert index.read_text() == _INDEX


def test_files_without_markers_are_left_alone(course: Path) -> None:
    _with_pitfalls(course / "notebooks" / "01_leaves.ipynb", "### Pitfall 1: leaves")
    readme, index = course / "README.md", _write_index(course, "# Pitfall index\n")
    before = readme.read_bytes(), index.read_bytes()
    assert navigation.main([]) == 0
    assert (readme.read_bytes(), index.read_bytes()) == before


@pytest.mark.parametrize(
    "name, text",
    [
        (navigation.PITFALL_PAGE, f"{navigation.PITFALLS_BEGIN}\nno end\n"),
        (navigation.PITFALL_PAGE, f"{navigation.PITFALLS_END}\n{navigation.PITFALLS_BEGIN}\n"),
        (
            navigation.PITFALL_PAGE,
            f"{navigation.PITFALLS_BEGIN}\n{navigation.PITFALLS_END}\n{navigation.PITFALLS_BEGIN}\n",
        ),
        ("README.md", f"{navigation.LESSONS_BEGIN}\nno end\n"),
    ],
    ids=["no-end", "reversed", "two-begins", "lessons-no-end"],
)
def test_broken_markers_are_an_error(
    course: Path, name: str, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = course / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    assert navigation.main([]) == 2
    assert f"{name}: a generated table needs one line" in capsys.readouterr().err
    assert path.read_text() == text


def test_the_course_readme_is_checked_and_holds_neither_pitfalls_nor_the_guide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The course's README: its lesson table is generated and a hand edit is reported stale; the
    pitfall table and the facilitator's guide are on the website, not in it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert navigation.PITFALLS_BEGIN not in readme and "### Before the day" not in readme
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    edited = readme.replace("| run the course,", "| run it,", 1)
    assert edited != readme
    (tmp_path / "README.md").write_text(edited, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert navigation.main(["--check"]) == 1
    assert "README.md: lesson table missing or out of date" in capsys.readouterr().out
    assert navigation.main([]) == 0
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == readme


def test_the_course_pitfall_index_lists_every_pitfall_linked_to_its_heading() -> None:
    text = (ROOT / navigation.PITFALL_PAGE).read_text(encoding="utf-8")
    table = text.split(f"{navigation.PITFALLS_BEGIN}\n")[1].split(f"\n{navigation.PITFALLS_END}")[0]
    rows = table.splitlines()[2:]
    pitfalls = navigation.course_pitfalls(ROOT)
    assert [int(row.split("|")[1]) for row in rows] == list(range(1, len(pitfalls) + 1))
    assert len(pitfalls) >= 16
    for row, pitfall in zip(rows, pitfalls, strict=True):
        assert f"](../notebooks/{pitfall.lesson.name}#pitfall-{pitfall.number}) |" in row, row


# ---------------------------------------------------------------------------------------------
# The tables of contents (README.md and lesson 00's contents cell)

_CONTENTS_README = (
    f"# Course\n\n## The lessons\n\n{navigation.LESSONS_BEGIN}\nold table\n"
    f"{navigation.LESSONS_END}\n\nAfter.\n"
)
# The rows the fixture's lessons give, written out by hand: title linked, outcome, `|` escaped.
_ROW_00 = "| [Start here]({}00_start_here.ipynb) | run the course |"
_ROW_01 = "| [01 · Leaves and \\[nodes\\]]({}01_leaves.ipynb) | tell leaves \\| nodes |"
_ROW_02 = "| [02 · Mapping]({}02_mapping.ipynb) | map `f` |"
_HEADER = ["| lesson | what you will be able to do |", "|---|---|"]


def _with_contents_cell(course: Path) -> None:
    """Lesson 00 gets an empty contents cell between two prose cells, as an author adds it."""
    path = course / "notebooks" / "00_start_here.ipynb"
    nb = _read(path)
    marked = new_markdown_cell("", metadata={"course": {"contents": True}}, id="course-contents")
    nb.cells[1:1] = [new_markdown_cell("Before.", id="before"), marked]
    nb.cells.insert(3, new_markdown_cell("After.", id="after"))
    _write(path, nb)
    (course / "README.md").write_text(_CONTENTS_README)


def _readme_table(course: Path) -> list[str]:
    text = (course / "README.md").read_text()
    return (
        text.split(navigation.LESSONS_BEGIN + "\n")[1]
        .split("\n" + navigation.LESSONS_END)[0]
        .split("\n")
    )


def _contents_cell(course: Path) -> nbformat.NotebookNode:
    cells = _read(course / "notebooks" / "00_start_here.ipynb").cells
    (cell,) = [cell for cell in cells if cell.get("id") == "course-contents"]
    return cell


def test_lesson_tables_are_written(course: Path) -> None:
    _with_contents_cell(course)
    assert navigation.main([]) == 0

    assert _readme_table(course) == [
        *_HEADER,
        _ROW_00.format("notebooks/"),
        _ROW_01.format("notebooks/"),
        _ROW_02.format("notebooks/"),
    ]
    readme = (course / "README.md").read_text()
    assert readme.startswith("# Course\n\n## The lessons\n\n") and readme.endswith("\n\nAfter.\n")

    cells = _read(course / "notebooks" / "00_start_here.ipynb").cells
    assert [cell.id for cell in cells] == [
        "title",
        "before",
        "course-contents",
        "after",
        "course-setup",
        "code",
        "summary",
        "course-navigation",
    ]
    contents = cells[2]
    assert contents.cell_type == "markdown"
    assert contents.metadata == {"course": {"contents": True}}
    table, comment = contents.source.split("\n\n")
    assert table.split("\n") == [*_HEADER, _ROW_01.format(""), _ROW_02.format("")]  # not 00 itself
    assert comment.startswith("<!-- Generated by `make navigation`")


def test_a_new_lesson_appears_in_both_tables(course: Path) -> None:
    _with_contents_cell(course)
    navigation.main([])
    _write(course / "notebooks" / "03_keys.ipynb", _lesson("03 Keys", "name leaves by key path"))
    assert navigation.main(["--check"]) == 1
    assert navigation.main([]) == 0
    row = "| [03 Keys]({}03_keys.ipynb) | name leaves by key path |"
    assert _readme_table(course)[-2:] == [_ROW_02.format("notebooks/"), row.format("notebooks/")]
    assert _contents_cell(course).source.split("\n\n")[0].split("\n")[-2:] == [
        _ROW_02.format(""),
        row.format(""),
    ]
    assert navigation.main(["--check"]) == 0


def test_lesson_tables_rerun_changes_nothing(course: Path) -> None:
    _with_contents_cell(course)
    navigation.main([])
    before = _snapshot(course), (course / "README.md").read_bytes()
    assert navigation.main([]) == 0
    assert (_snapshot(course), (course / "README.md").read_bytes()) == before
    assert navigation.main(["--check"]) == 0


def test_check_catches_stale_lesson_tables(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_contents_cell(course)
    navigation.main([])
    readme = course / "README.md"
    lesson_00 = course / "notebooks" / "00_start_here.ipynb"
    pristine = readme.read_bytes(), lesson_00.read_bytes()

    readme.write_text(readme.read_text().replace("run the course", "run it"))  # a hand edit
    capsys.readouterr()
    assert navigation.main(["--check"]) == 1
    assert "README.md: lesson table missing or out of date" in capsys.readouterr().out
    assert "run it" in readme.read_text()  # --check wrote nothing
    readme.write_bytes(pristine[0])

    nb = _read(lesson_00)
    nb.cells[2].source = nb.cells[2].source.replace("map `f`", "map things")
    _write(lesson_00, nb)
    assert navigation.main(["--check"]) == 1
    assert navigation.main([]) == 0
    assert (readme.read_bytes(), lesson_00.read_bytes()) == pristine

    # An outcome edited in its lesson makes both tables stale.
    path = course / "notebooks" / "02_mapping.ipynb"
    nb = _read(path)
    nb.cells[0].source = nb.cells[0].source.replace("map `f`", "map `f` over trees")
    _write(path, nb)
    capsys.readouterr()
    assert navigation.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "README.md" in out and "notebooks/00_start_here.ipynb" in out
    assert "notebooks/02_mapping.ipynb" not in out
    navigation.main([])
    assert "| map `f` over trees |" in readme.read_text()
    assert "| map `f` over trees |" in _contents_cell(course).source


def test_a_lesson_without_an_outcome_line_is_an_error(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = course / "notebooks" / "02_mapping.ipynb"
    nb = _read(path)
    outcome = "<!-- outcome: map `f` -->"
    nb.cells[0].source = nb.cells[0].source.replace(outcome, "")
    nb.cells[2].source += "\n\n" + outcome  # only the cell with the title counts
    _write(path, nb)
    before = _snapshot(course)
    assert navigation.main([]) == 2
    error = capsys.readouterr().err
    assert "notebooks/02_mapping.ipynb: no outcome line" in error
    assert "in the cell with the lesson's `# ` title" in error
    assert _snapshot(course) == before


def test_the_course_has_generated_lesson_tables() -> None:
    """README lists every lesson, lesson 00 every other one, each with an outcome."""
    lessons = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count(navigation.LESSONS_BEGIN) == 1 and readme.count(navigation.LESSONS_END) == 1
    rows = readme.split(navigation.LESSONS_BEGIN)[1].split(navigation.LESSONS_END)[0].split("\n")
    rows = [row for row in rows if row.startswith("| [")]
    assert [row.split("](notebooks/")[1].split(")")[0] for row in rows] == lessons

    cells = _read(ROOT / "notebooks" / "00_start_here.ipynb").cells
    (index,) = [i for i, cell in enumerate(cells) if navigation.is_contents(cell)]
    assert cells[index - 1].source.startswith("## How the course works")
    table = [row for row in cells[index].source.split("\n") if row.startswith("| [")]
    assert [row.split("](")[1].split(")")[0] for row in table] == lessons[1:]
    for row in rows + table:
        assert row.endswith(" |") and row.split(") | ")[1].strip(" |"), row


def test_two_contents_cells_are_an_error(course: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _with_contents_cell(course)
    path = course / "notebooks" / "01_leaves.ipynb"
    nb = _read(path)
    for cell_id in ("contents-a", "contents-b"):
        nb.cells.append(new_markdown_cell("", metadata={"course": {"contents": True}}, id=cell_id))
    _write(path, nb)
    before = _snapshot(course), (course / "README.md").read_bytes()
    assert navigation.main([]) == 2
    assert "notebooks/01_leaves.ipynb: 2 contents cells" in capsys.readouterr().err
    assert (_snapshot(course), (course / "README.md").read_bytes()) == before


_CONTENTS_MARKER = {"course": {"contents": True}}


@pytest.mark.parametrize(
    ("cell_id", "write"),
    [
        (navigation.NAVIGATION_ID, lambda nb: navigation.with_navigation(nb, "[Next](x)")),
        (navigation.SETUP_ID, lambda nb: navigation.with_setup(nb, "pass")),
        (navigation.CONTENTS_ID, lambda nb: navigation.with_contents(nb, "| table |")),
    ],
    ids=["navigation", "setup", "contents"],
)
def test_an_author_cell_with_a_reserved_id_is_refused_not_overwritten(
    cell_id: str, write: Callable[[nbformat.NotebookNode], object]
) -> None:
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Title", id="t"),
            new_markdown_cell("", metadata=_CONTENTS_MARKER, id="marker"),
            new_code_cell("x = 1", id=cell_id),
        ]
    )
    with pytest.raises(NotebookError, match=f"{cell_id!r}, reserved"):
        write(nb)
