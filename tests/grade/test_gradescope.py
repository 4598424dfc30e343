"""The Gradescope autograder: the bundle written by ``course-grade --gradescope-autograder``, its
``run_autograder`` run under a temporary AUTOGRADER_ROOT, and each ``results.json`` checked against
Gradescope's format (gradescope-autograders.readthedocs.io, "Autograder Specifications")."""

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest
from test_grade import IDS, ROOT, WRONG_LEAF_PATHS, replace_body

from course_tools.grade import main

# Lesson 01, whose solution grades in about a quarter of lesson 02's time (each run grades it twice:
# the canary first): these tests are about the bundle and Gradescope's format, and every lesson's
# grading is tested in test_grade.py.
SOLVED = ROOT / "solutions" / "01_what_is_a_pytree.ipynb"
BLANK = ROOT / "exercises" / SOLVED.name
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
TOP_LEVEL = {"score", "execution_time", "output", "visibility", "stdout_visibility", "tests"}
TEST_FIELDS = {"score", "max_score", "status", "name", "output", "visibility"}


def check_results(document: dict[str, Any]) -> None:
    """Gradescope's results.json: known fields only, the right types, a total that adds up."""
    assert set(document) <= TOP_LEVEL, set(document) - TOP_LEVEL
    assert isinstance(document["score"], (int, float))
    assert isinstance(document["execution_time"], int) and document["execution_time"] >= 0
    assert isinstance(document["output"], str)
    assert document.get("visibility", "visible") in VISIBILITIES
    for test in document["tests"]:
        assert set(test) <= TEST_FIELDS, set(test) - TEST_FIELDS
        assert isinstance(test["name"], str) and isinstance(test["output"], str)
        assert 0 <= test["score"] <= test["max_score"]
        assert test["status"] in ("passed", "failed") and test["visibility"] in VISIBILITIES
    assert document["score"] == sum(t["score"] for t in document["tests"])


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle for lesson 01, unzipped as Gradescope lays it out: source/ and run_autograder."""
    base = tmp_path_factory.mktemp("gradescope")
    target = base / "autograder.zip"
    # A cell limit that the solution's cells keep on a busy machine: the canary grades them first.
    assert main(["--gradescope-autograder", str(target), "01", "--timeout", "20"]) == 0
    with zipfile.ZipFile(target) as archive:
        names = archive.namelist()
        assert {"setup.sh", "run_autograder", "requirements.txt", "gradescope.json"} <= set(names)
        assert "course/course_lib/__init__.py" in names and "course/pyproject.toml" in names
        assert f"course/solutions/{SOLVED.name}" in names
        assert archive.getinfo("run_autograder").external_attr >> 16 & 0o111
        archive.extractall(base / "source")
    return base / "source"


def run_autograder(
    bundle: Path, tmp_path: Path, notebook: nbformat.NotebookNode, **env: str
) -> dict[str, Any]:
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    nbformat.write(notebook, root / "submission" / SOLVED.name)
    (root / "source").symlink_to(bundle)
    # Gradescope's python3 is where setup.sh installed the course; here, this environment's.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    result = subprocess.run(
        ["bash", str(bundle / "run_autograder")],
        env={**os.environ, "AUTOGRADER_ROOT": str(root), "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads((root / "results" / "results.json").read_text())
    check_results(document)
    return document


def scores(document: dict[str, Any]) -> dict[str, float]:
    return {t["name"].split()[0]: t["score"] for t in document["tests"]}


def test_a_solved_notebook_gets_full_marks(bundle: Path, tmp_path: Path) -> None:
    document = run_autograder(bundle, tmp_path, nbformat.read(SOLVED, as_version=4))
    assert document["score"] == sum(t["max_score"] for t in document["tests"]) == 8
    assert len(document["tests"]) == len(IDS) and "visibility" not in document


def test_a_blank_notebook_gets_zero(bundle: Path, tmp_path: Path) -> None:
    document = run_autograder(bundle, tmp_path, nbformat.read(BLANK, as_version=4))
    assert document["score"] == 0
    assert all("not attempted" in t["output"] for t in document["tests"])


def test_a_half_right_notebook_gets_its_points_and_the_feedback_text(
    bundle: Path, tmp_path: Path
) -> None:
    notebook = replace_body(nbformat.read(SOLVED, as_version=4), "01.leaf_paths", WRONG_LEAF_PATHS)
    document = run_autograder(bundle, tmp_path, notebook)
    got = scores(document)
    assert got["01.leaf_paths"] == 0 and got["01.count_params"] == 2 and document["score"] < 8
    wrong = next(t for t in document["tests"] if t["name"].startswith("01.leaf_paths"))
    assert wrong["output"].startswith("01.leaf_paths (leaf_paths): not yet right, 0/2\n    ")


def test_a_notebook_that_loops_and_floods_still_gets_results(bundle: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(SOLVED, as_version=4)
    notebook.cells.insert(3, nbformat.v4.new_code_cell("print('x' * 20_000_000)"))
    # Asleep, not spinning: the grader stops both alike (test_grade.py spins), for 20 s of no CPU.
    notebook.cells.insert(
        4, nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(1)")
    )
    document = run_autograder(bundle, tmp_path, notebook)
    assert 0 < document["score"] <= 8
    assert "ran past the 20 s limit" in document["output"]


def test_a_broken_grading_environment_is_told_to_the_instructor_only(
    bundle: Path, tmp_path: Path
) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    # Kernels trip on these (cold ones start as `python -m ipykernel_launcher`, warm ones come
    # from a server that imports ipykernel); the grader itself imports neither.
    (shadow / "ipykernel_launcher.py").write_text("raise SystemExit('no kernels here')\n")
    (shadow / "ipykernel").mkdir()
    (shadow / "ipykernel" / "__init__.py").write_text("raise ImportError('no kernels here')\n")
    solved = nbformat.read(SOLVED, as_version=4)
    document = run_autograder(bundle, tmp_path, solved, PYTHONPATH=str(shadow))
    assert document["score"] == 0 and document["visibility"] == "hidden"
    assert document["output"].startswith("The grading environment is broken")
    assert "the canary failed" in document["output"]


def test_the_bundle_packs_the_solutions_that_solutions_names(tmp_path: Path) -> None:
    """An installed grader has no solutions/ beside it: --solutions says which ones to pack."""
    chosen = tmp_path / "instructor"
    chosen.mkdir()
    marked = SOLVED.read_bytes() + b"\n"  # still a notebook, but not the checkout's bytes
    (chosen / SOLVED.name).write_bytes(marked)
    target = tmp_path / "autograder.zip"
    assert main(["--gradescope-autograder", str(target), "01", "--solutions", str(chosen)]) == 0
    with zipfile.ZipFile(target) as archive:
        packed = [name for name in archive.namelist() if name.startswith("course/solutions/")]
        assert packed == [f"course/solutions/{SOLVED.name}"]
        assert archive.read(packed[0]) == marked
    empty = tmp_path / "empty"
    empty.mkdir()
    refused = tmp_path / "refused.zip"
    assert main(["--gradescope-autograder", str(refused), "--solutions", str(empty)]) == 2
    assert not refused.exists()
