"""A student copy of the course (`make student-release`): complete for a learner, without any
solution, its launch links on the student repository, and never written over a folder with files.

Each copy is built once for the module. The lessons and exercises of the plain copy are the source's
byte for byte, so the strict nbval that the source's notebooks pass in `make test` holds for them
as they are; nbval is not run again here.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from site_support import solution_regions

from course_tools.authoring import exercises, launch, navigation, student_release

ROOT = Path(__file__).resolve().parents[2]
STUDENT_URL = "https://github.com/example-school/pytree-course-students"
LEARNERS_FOLDERS = ("notebooks", "exercises")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("plain") / "course"
    assert student_release.main([str(dest), "--root", str(ROOT)]) == 0
    return dest


@pytest.fixture(scope="module")
def pointed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("pointed")  # exists and is empty: allowed
    assert student_release.main([str(dest), "--root", str(ROOT), "--repository", STUDENT_URL]) == 0
    return dest


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _strings(value: object) -> list[str]:
    """Every text in a notebook's JSON: cell sources, outputs, metadata."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        found = ["".join(value)] if value and all(isinstance(v, str) for v in value) else []
        return found + [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _normal(text: str) -> str:
    return " ".join(text.split())


def _answers() -> list[tuple[str, str]]:
    """Each answer of the source's solution notebooks (the code between ``### BEGIN SOLUTION`` and
    ``### END SOLUTION``, or a ``solution-only`` cell), whitespace normalised, with where it is;
    an answer that a lesson or exercise notebook shows too gives nothing away and is left out."""
    public = "\n".join(
        _normal(cell.source)
        for folder in LEARNERS_FOLDERS
        for path in sorted((ROOT / folder).glob("*.ipynb"))
        for cell in nbformat.read(path, as_version=4).cells
    )
    answers = [(where, _normal("\n".join(lines))) for where, lines in solution_regions()]
    return [(where, text) for where, text in answers if text and text not in public]


def _leaks(folder: Path) -> list[str]:
    """Each file under ``folder`` that holds an answer, with the answer's place in the solutions;
    notebooks are searched in every text they hold, outputs included. The self-checks' references
    in ``course_lib/checks``, which every learner installs, are searched too: none is written as
    an answer would be."""
    answers = _answers()
    assert len(answers) > 20, "the source's solutions hold no answers to look for"
    found = []
    for path in _files(folder):
        data = path.read_bytes()
        if path.suffix == ".ipynb":
            text = "\n".join(_normal(s) for s in _strings(json.loads(data)))
        else:
            text = _normal(data.decode("utf-8", errors="replace"))
        found += [f"{path.relative_to(folder)}: {where}" for where, a in answers if a in text]
    return found


@pytest.mark.parametrize("copy", ["plain", "pointed"])
def test_the_copy_holds_no_solution(copy: str, request: pytest.FixtureRequest) -> None:
    dest: Path = request.getfixturevalue(copy)
    assert not (dest / "solutions").exists()
    assert not [p for p in _files(dest) if "solution" in p.name.lower()]
    assert _leaks(dest) == []


def test_the_leak_search_finds_the_answers_in_the_source() -> None:
    assert _leaks(ROOT / "solutions")


def test_the_copy_is_a_course_a_learner_can_open(plain: Path) -> None:
    for name in student_release.RELEASED:
        assert (plain / name).exists(), name
    for folder in (*LEARNERS_FOLDERS, "course_lib", "binder"):
        source = {p.relative_to(ROOT / folder) for p in _files(ROOT / folder)}
        source = {p for p in source if "__pycache__" not in p.parts}
        assert {p.relative_to(plain / folder) for p in _files(plain / folder)} == source, folder
        for relative in source:
            assert (plain / folder / relative).read_bytes() == (
                ROOT / folder / relative
            ).read_bytes()
    for name in ("Makefile", "pyproject.toml", "uv.lock", "LICENSE", "CITATION.cff"):
        assert (plain / name).read_bytes() == (ROOT / name).read_bytes(), name
    assert "\nlab: " in (plain / "Makefile").read_text(encoding="utf-8")


def test_the_checks_need_no_solutions_folder(plain: Path) -> None:
    """The references the self-checks compare with are course_lib's own code (NumPy): no string
    in course_lib's code names the solutions folder, and every exercise's reference runs in the
    copy, on the copy's course_lib."""
    named = []
    for path in sorted((plain / "course_lib").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        named += [
            f"{path.name}:{node.lineno}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and "solutions" in node.value
        ]
    assert named == []
    probe = (
        "import course_lib, course_lib.checks as c\n"
        "for e in c.all_exercises():\n"
        "    c.reference_results(e, e.make_cases('check', 0))\n"
        "print(course_lib.__file__)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=plain,
        env={"PYTHONPATH": str(plain), "JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.strip() == str(plain / "course_lib" / "__init__.py")


def test_the_copy_opens_colab_and_binder_on_the_student_repository(pointed: Path) -> None:
    repo = launch.repository(pointed)
    assert repo == launch.parse_repository(STUDENT_URL)
    for folder in LEARNERS_FOLDERS:
        setup = launch.setup_source(repo, lesson=folder == "notebooks")
        for path in sorted((pointed / folder).glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            assert next(c for c in nb.cells if navigation.is_setup(c)).source == setup
            first = next(c.source for c in nb.cells if c.cell_type == "markdown")
            assert first.endswith(launch.colab_badge(repo, f"{folder}/{path.name}")), path
            # the lesson still links its exercises, which came from solutions that are gone
            if folder == "notebooks" and (ROOT / "exercises" / path.name).exists():
                assert f"../exercises/{path.name}" in path.read_text(encoding="utf-8"), path
    lock = subprocess.run(
        [sys.executable, "-m", "uv", "lock", "--check", "--offline", "--quiet"],
        cwd=pointed,
        capture_output=True,
        text=True,
    )
    assert lock.returncode == 0, lock.stderr  # `make lab`'s `uv sync --locked` accepts the copy


def test_a_folder_with_files_is_never_written_over(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mine.ipynb").write_text("a student's work")
    assert student_release.main([str(tmp_path), "--root", str(ROOT)]) == 2
    said = capsys.readouterr().err
    assert "exists and is not empty" in said and "Nothing was written." in said
    assert [p.name for p in tmp_path.iterdir()] == ["mine.ipynb"]
    assert (tmp_path / "mine.ipynb").read_text() == "a student's work"


def test_a_repository_that_is_not_github_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "copy"
    url = "https://gitlab.com/example-school/course"
    assert student_release.main([str(dest), "--root", str(ROOT), "--repository", url]) == 2
    assert "GitHub repository URL" in capsys.readouterr().err
    assert not dest.exists()


def test_the_exercise_generator_stops_in_the_copy(
    plain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = {p: p.read_bytes() for p in _files(plain / "exercises")}
    assert exercises.main(["--root", str(plain)]) == 2
    assert "no solutions/ folder" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in _files(plain / "exercises")} == before


def test_make_test_in_the_copy_says_the_tests_stayed_behind(plain: Path) -> None:
    """README's second command fails at once with a reason, before any environment is built."""
    ran = subprocess.run(["make", "test"], cwd=plain, capture_output=True, text=True, timeout=60)
    assert ran.returncode == 2
    assert "this copy of the course has no tests/" in ran.stderr
    assert not (plain / ".venv").exists()
