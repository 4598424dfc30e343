"""The canary: before any student is graded, the course's own solution of each lesson is graded
where the class will be, and must score full marks. A grading environment that cannot run the
course stops the run (exit 2, nothing written) instead of giving a class of zeros."""

import json
import os
import subprocess
import sys
from pathlib import Path

from test_grade import FAST, ROOT, grade, solution, write

BROKEN_KERNELS = 'raise SystemExit("this environment cannot start kernels")\n'


def broken_environment(tmp_path: Path) -> dict[str, str]:
    """The grader's environment with a PYTHONPATH that kernels (started as ``python -m
    ipykernel_launcher``) trip on, and the grader does not."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "ipykernel_launcher.py").write_text(BROKEN_KERNELS)
    return {**os.environ, "PYTHONPATH": str(shadow)}


def test_a_broken_kernel_environment_stops_the_run_before_grading(tmp_path: Path) -> None:
    write(tmp_path / "class", "ada", solution())
    out = tmp_path / "out"
    result = grade(
        [tmp_path / "class"], out, *FAST, "--warm-kernels", "off", env=broken_environment(tmp_path)
    )
    assert result.returncode == 2, result.stderr
    assert "the canary failed: the course's own solution of lesson 01" in result.stderr
    assert "could not start a kernel" in result.stderr and "--no-canary" in result.stderr
    assert not out.exists() or list(out.iterdir()) == []


def test_without_the_canary_the_same_fault_is_flagged_loudly(tmp_path: Path) -> None:
    for student in ("ada", "bo", "cy"):
        write(tmp_path / "class", student, solution())
    out = tmp_path / "out"
    result = grade(
        [tmp_path / "class"],
        out,
        *FAST,
        "--warm-kernels",
        "off",
        "--no-canary",
        "--quiet",
        env=broken_environment(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    assert "LIKELY GRADER FAULT: 3 of 3 notebooks of lesson 01 failed the notebook" in result.stderr
    assert "Likely grader fault" in (out / "report.html").read_text()
    assert json.loads((out / "gradebook.json").read_text())["canary"] == {"skipped": "--no-canary"}


def test_the_canary_is_recorded_and_a_wrong_student_is_no_fault(tmp_path: Path) -> None:
    write(tmp_path / "class", "ada", solution())
    broken = solution()
    for cell in broken.cells:
        cell.source = cell.source.replace("import course_lib", "import course_lib_typo")
    write(tmp_path / "class", "bo", broken)
    out = tmp_path / "out"
    result = grade([tmp_path / "class"], out, *FAST, "--quiet")
    assert result.returncode == 0, result.stderr
    book = json.loads((out / "gradebook.json").read_text())
    assert book["canary"] == {"lessons": {"01": "8/8"}}
    assert "LIKELY GRADER FAULT" not in result.stderr  # one notebook of two is a student's doing


def test_kernels_use_the_graders_course_lib_whatever_else_is_installed(tmp_path: Path) -> None:
    """A Python whose site-packages points at another copy of course_lib (an editable install of
    another checkout): the grader, started from this checkout, grades with its own, and so do its
    kernels, which may not even read the other copy."""
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["cp", "-r", str(ROOT / "course_lib"), str(other)], check=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python3*/site-packages"))
    (site / "other_course.pth").write_text(f"{other}\n")
    python = venv / "bin" / "python"
    ours = [p for p in sys.path if p.endswith("site-packages")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(ours)}
    found = subprocess.run(
        [str(python), "-c", "import course_lib; print(course_lib.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    )
    assert found.stdout.startswith(str(other))  # outside the checkout, the other copy wins
    write(tmp_path / "class", "ada", solution())
    out = tmp_path / "out"
    command = [str(python), "-m", "course_tools.grade", str(tmp_path / "class"), "--out", str(out)]
    result = subprocess.run(
        [*command, *FAST, "--quiet"], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert rows[1].split(",")[-3:-1] == ["8", "8"], rows


def installed_grader(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    """``course-grade`` as ``pip install .`` leaves it: course_lib and course_tools in a folder of
    their own, without the solutions/ that a checkout keeps beside them; run from elsewhere."""
    site = tmp_path / "site-packages"
    site.mkdir()
    for package in ("course_lib", "course_tools"):
        subprocess.run(["cp", "-r", str(ROOT / package), str(site)], check=True)
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop("COURSE_SOLUTIONS", None)
    return [sys.executable, "-m", "course_tools.grade"], env


def test_an_installed_grader_asks_for_the_solutions_and_grades_with_them(tmp_path: Path) -> None:
    command, env = installed_grader(tmp_path)
    write(tmp_path / "class", "ada", solution())
    out = tmp_path / "out"
    base = [*command, str(tmp_path / "class"), "--out", str(out), *FAST, "--quiet"]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*base, *extra], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
        )

    alone = run()
    assert alone.returncode == 2, alone.stderr
    assert (
        "no solutions folder: pass --solutions DIR (the instructor's solutions/ from the course's "
        "checkout)" in alone.stderr
    )
    wrong = run("--solutions", str(tmp_path / "class"))
    assert wrong.returncode == 2 and "no solution notebook (NN_stem.ipynb) there" in wrong.stderr
    assert not out.exists() or list(out.iterdir()) == []

    given = run("--solutions", str(ROOT / "solutions"))
    assert given.returncode == 0, given.stderr
    book = json.loads((out / "gradebook.json").read_text())
    assert book["canary"] == {"lessons": {"01": "8/8"}}
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert rows[1].split(",")[-3:-1] == ["8", "8"], rows
