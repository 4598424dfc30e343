"""The exercise generator, against the golden notebooks in tests/authoring/golden/.

tests/authoring/golden/solutions/99_golden.ipynb is a hand-made solution notebook; its expected
exercise version is committed as tests/authoring/golden/exercises/99_golden.ipynb. After an intended
change to the generator, regenerate it with
``python -m course_tools.authoring.exercises tests/authoring/golden/solutions/99_golden.ipynb``
and read the diff.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from course_tools._notebook_files import notebook_text
from course_tools.authoring import exercises

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_SOLUTION = GOLDEN / "solutions" / "99_golden.ipynb"
GOLDEN_EXERCISE = GOLDEN / "exercises" / "99_golden.ipynb"
STUB = 'raise NotImplementedError("Write your answer here, then run the check.")'


@pytest.fixture
def course(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A course folder holding a copy of the golden solution; the working directory."""
    (tmp_path / "solutions").mkdir()
    shutil.copy(GOLDEN_SOLUTION, tmp_path / "solutions" / GOLDEN_SOLUTION.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _solution_lines(nb: nbformat.NotebookNode) -> list[str]:
    """Every non-blank line strictly inside a solution region of any code cell."""
    lines: list[str] = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.split("\n"):
            if line.strip() == exercises.BEGIN_MARKER:
                inside = True
            elif line.strip() == exercises.END_MARKER:
                inside = False
            elif inside and line.strip():
                lines.append(line.strip())
    return lines


def _write(path: Path, nb: nbformat.NotebookNode) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook_text(nb), encoding="utf-8")


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_generate_golden_byte_identical(course: Path) -> None:
    assert exercises.main([]) == 0
    assert (course / "exercises" / "99_golden.ipynb").read_bytes() == GOLDEN_EXERCISE.read_bytes()


def test_generate_committed_golden_is_current() -> None:
    assert exercises.main(["--check", str(GOLDEN_SOLUTION)]) == 0


def test_generate_writes_what_nbformat_writes(course: Path) -> None:
    exercises.main([])
    written = (course / "exercises" / "99_golden.ipynb").read_text(encoding="utf-8")
    buffer = io.StringIO()
    nbformat.write(nbformat.reads(written, as_version=4), buffer)
    assert buffer.getvalue() == written


def test_generate_idempotent(course: Path) -> None:
    target = course / "exercises" / "99_golden.ipynb"
    exercises.main([])
    first, first_mtime = target.read_bytes(), target.stat().st_mtime_ns
    assert exercises.main([]) == 0
    assert target.read_bytes() == first
    assert target.stat().st_mtime_ns == first_mtime  # unchanged files are not rewritten
    assert exercises.main(["--check"]) == 0


def test_generate_no_solution_text_leaks() -> None:
    solution = nbformat.read(GOLDEN_SOLUTION, as_version=4)
    lines = _solution_lines(solution)
    assert len(lines) == 5  # the golden file has solutions worth leaking
    text = GOLDEN_EXERCISE.read_text(encoding="utf-8")
    sources = "\n".join(cell.source for cell in nbformat.reads(text, as_version=4).cells)
    for line in lines:
        assert line not in sources
        assert json.dumps(line)[1:-1] not in text
    assert "### BEGIN" not in text and "### END" not in text


def test_generate_stub_at_marker_indentation() -> None:
    cells = {c.id: c for c in nbformat.read(GOLDEN_EXERCISE, as_version=4).cells}
    assert cells["scale-solution"].source.endswith("\n    " + STUB)
    norm = cells["norm-solution"].source.split("\n")
    assert norm[3] == "        " + STUB and norm[4] == "    " + STUB and norm[5] == ""
    assert cells["answer-solution"].source == STUB + "\nanswer"


def test_generate_outputs_and_counts_stripped() -> None:
    exercise = nbformat.read(GOLDEN_EXERCISE, as_version=4)
    code = [cell for cell in exercise.cells if cell.cell_type == "code"]
    assert code
    for cell in code:
        assert cell.outputs == []
        assert cell.execution_count is None
        assert "execution" not in cell.metadata
    assert "widgets" not in exercise.metadata
    assert exercise.metadata.kernelspec.name == "python3"


def test_generate_keeps_metadata_and_cell_ids() -> None:
    solution = nbformat.read(GOLDEN_SOLUTION, as_version=4)
    exercise = nbformat.read(GOLDEN_EXERCISE, as_version=4)
    kept = [c for c in solution.cells if "solution-only" not in c.metadata.get("tags", [])]
    assert [c.id for c in exercise.cells] == ["exercise-banner"] + [c.id for c in kept]
    ids = {c.id: c.metadata.get("course", {}).get("exercise") for c in exercise.cells}
    assert ids["scale-solution"] == "99.scale"
    assert ids["norm-solution"] == "99.norm"
    assert ids["answer-solution"] == "99.answer"
    setup = next(c for c in exercise.cells if c.id == "setup")
    assert setup.metadata == {"jupyter": {"source_hidden": True}}


def test_generate_drops_solution_only_cells() -> None:
    text = GOLDEN_EXERCISE.read_text(encoding="utf-8")
    assert "Why this works" not in text
    assert "shown to authors only" not in text
    assert "solution-only" not in text


def test_generate_banner_first_and_names_source() -> None:
    banner = nbformat.read(GOLDEN_EXERCISE, as_version=4).cells[0]
    assert banner.cell_type == "markdown"
    assert banner.metadata == {"course": {"banner": True}}
    assert "`solutions/99_golden.ipynb`" in banner.source
    assert "`make exercises`" in banner.source


def test_generate_banner_replaced_not_stacked(course: Path) -> None:
    # Feed an exercise notebook (banner included) back in as a solution.
    exercises.main([])
    shutil.copy(course / "exercises" / "99_golden.ipynb", course / "solutions" / "98_again.ipynb")
    assert exercises.main([]) == 0
    again = nbformat.read(course / "exercises" / "98_again.ipynb", as_version=4)
    assert [exercises.is_banner(c) for c in again.cells].count(True) == 1
    assert "`solutions/98_again.ipynb`" in again.cells[0].source


BAD_SOURCES = {
    "nested": ("def f():\n    ### BEGIN SOLUTION\n    ### BEGIN SOLUTION\n    return 1", "nested"),
    "unterminated": ("def f():\n    ### BEGIN SOLUTION\n    return 1", "has no"),
    "end_without_begin": ("def f():\n    return 1\n    ### END SOLUTION", "without a"),
    "mistyped": (
        "def f():\n    ## BEGIN SOLUTION\n    return 1\n    ### END SOLUTION",
        "looks like",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_SOURCES))
def test_generate_marker_error_names_cell_and_writes_nothing(
    course: Path, case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    source, words = BAD_SOURCES[case]
    bad = new_notebook(
        cells=[
            new_markdown_cell("# Broken", id="title"),
            new_code_cell(source, id="broken", metadata={"course": {"exercise": "50.broken"}}),
        ]
    )
    _write(course / "solutions" / "50_broken.ipynb", bad)
    before = _tree(course)

    assert exercises.main([]) == 2
    err = capsys.readouterr().err
    assert "solutions/50_broken.ipynb: cell 1 (exercise 50.broken): line " in err
    assert words in err
    assert _tree(course) == before  # not even the good golden exercise was written


def test_generate_marker_in_markdown_is_an_error(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = new_notebook(cells=[new_markdown_cell("### BEGIN SOLUTION\nsecret", id="m")])
    _write(course / "solutions" / "51_markdown.ipynb", bad)
    assert exercises.main([]) == 2
    assert "51_markdown.ipynb: cell 0: line 1: solution markers work only in code cells" in (
        capsys.readouterr().err
    )
    assert not (course / "exercises").exists()


def test_check_exit_codes(course: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = course / "exercises" / "99_golden.ipynb"
    assert exercises.main(["--check"]) == 1  # missing
    out = capsys.readouterr().out
    assert "exercises/99_golden.ipynb is missing" in out and "make exercises" in out
    assert not target.exists()

    assert exercises.main([]) == 0
    assert exercises.main(["--check"]) == 0

    target.write_bytes(target.read_bytes().replace(b"Golden exercise", b"Edited by hand"))
    edited = target.read_bytes()
    capsys.readouterr()
    assert exercises.main(["--check"]) == 1  # different
    out = capsys.readouterr().out
    assert "exercises/99_golden.ipynb differs from solutions/99_golden.ipynb" in out
    assert target.read_bytes() == edited  # --check wrote nothing


def test_check_reports_orphans_and_generate_removes_them(
    course: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exercises.main([])
    shutil.copy(course / "exercises" / "99_golden.ipynb", course / "exercises" / "97_gone.ipynb")
    capsys.readouterr()
    assert exercises.main(["--check"]) == 1
    assert "exercises/97_gone.ipynb has no solution notebook" in capsys.readouterr().out
    assert exercises.main([]) == 0
    assert not (course / "exercises" / "97_gone.ipynb").exists()
    assert exercises.main(["--check"]) == 0


def test_generate_leaves_hand_made_orphans_alone(course: Path) -> None:
    _write(course / "exercises" / "96_hand.ipynb", new_notebook(cells=[new_markdown_cell("x")]))
    assert exercises.main([]) == 1
    assert (course / "exercises" / "96_hand.ipynb").exists()


def test_exercise_path_requires_solutions_folder() -> None:
    with pytest.raises(exercises.NotebookError, match="not in a folder named solutions"):
        exercises.exercise_path("notebooks/01_what_is_a_pytree.ipynb")


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("", ""),
        ("x = 1\n", "x = 1\n"),
        ("### BEGIN SOLUTION\n### END SOLUTION\n", STUB + "\n"),
        ("\t### BEGIN SOLUTION\n\tx\n\t### END SOLUTION", "\t" + STUB),
        ("if a:\n  ### BEGIN SOLUTION  \n  b\n  ### END SOLUTION\nc", f"if a:\n  {STUB}\nc"),
    ],
)
def test_clear_solutions_cases(source: str, expected: str) -> None:
    assert exercises.clear_solutions(source) == expected


def test_clear_solutions_custom_message_is_valid_python() -> None:
    stub = exercises.clear_solutions("### BEGIN SOLUTION\n### END SOLUTION", 'Use "jax.tree.map".')
    with pytest.raises(NotImplementedError, match='Use "jax.tree.map".'):
        exec(stub)


def test_cli_check_in_a_subprocess(course: Path) -> None:
    # One real `python -m` run (each costs seconds: importing nbformat is slow here).
    command = [sys.executable, "-m", "course_tools.authoring.exercises", "--check"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=course)
    assert result.returncode == 1, result.stderr
    assert "exercises/99_golden.ipynb is missing" in result.stdout
    assert not (course / "exercises").exists()
