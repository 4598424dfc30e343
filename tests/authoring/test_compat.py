"""Which middle JAX release CI runs beside the floor (course_tools/authoring/compat.py): the same
for a commit whatever the clone, and each of them for some commits; and which notebooks a release
runs."""

import importlib.util
import subprocess
from pathlib import Path

import pytest

from course_tools.authoring import compat
from course_tools.authoring.compat import MIDDLE_RELEASES, middle_release


def _git(folder: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args]
    return subprocess.run(command, cwd=folder, check=True, capture_output=True, text=True).stdout


def test_each_middle_release_has_its_commits_and_a_commit_keeps_its_release(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    chosen: dict[str, str] = {}
    for i in range(40):
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"commit {i}")
        chosen[_git(repo, "rev-parse", "HEAD").strip()] = middle_release(repo)[0]
        if set(chosen.values()) == set(MIDDLE_RELEASES):
            break
    assert set(chosen.values()) == set(MIDDLE_RELEASES)
    # A shallow clone of the last commit, which cannot count its history, chooses the same.
    head = _git(repo, "rev-parse", "HEAD").strip()
    shallow = tmp_path / "shallow"
    _git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow))
    assert middle_release(shallow)[0] == chosen[head]


def _fake_course(tmp_path: Path) -> tuple[Path, Path]:
    """A course folder with three lessons and their solutions, and an environment in it whose
    python, asked to execute notebooks, says that each one ran."""
    root = tmp_path / "course"
    for folder in ("notebooks", "solutions"):
        (root / folder).mkdir(parents=True)
        for name in ("00_a", "01_b", "02_c"):
            (root / folder / f"{name}.ipynb").write_text("{}")
    (root / "uv.lock").write_text("")
    env = root / "build" / "compat" / "jax-0.7.1"
    (env / "bin").mkdir(parents=True)
    python = env / "bin" / "python"
    python.write_text(
        '#!/bin/sh\nfor a in "$@"; do case "$a" in *.ipynb) echo "$a: ran, 1 self-checks passed";;'
        " esac; done\n"
    )
    python.chmod(0o755)
    return root, env


def _ran(out: str) -> list[str]:
    return sorted(line.split(":")[0] for line in out.splitlines() if ": ran" in line)


def test_lessons_only_runs_the_lessons_and_not_the_solutions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, env = _fake_course(tmp_path)
    monkeypatch.setattr(compat, "build_environment", lambda root, version: (env, True))
    lessons = ["notebooks/00_a.ipynb", "notebooks/01_b.ipynb", "notebooks/02_c.ipynb"]
    assert compat.main(["--root", str(root), "--jax", "0.7.1", "--lessons-only"]) == 0
    assert _ran(capsys.readouterr().out) == lessons
    assert compat.main(["--root", str(root), "--jax", "0.7.1"]) == 0
    assert _ran(capsys.readouterr().out) == lessons + [
        n.replace("notebooks", "solutions") for n in lessons
    ]


def test_a_release_runs_write_their_bytecode_where_the_machine_says_not_to(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The environment compiles only what the course imports, so the kernels and tests may write
    the bytecode of the rest, whatever PYTHONDONTWRITEBYTECODE says outside."""
    root, env = _fake_course(tmp_path)
    (env / "bin" / "python").write_text(
        '#!/bin/sh\nfor a in "$@"; do case "$a" in *.ipynb) '
        'echo "$a: ran, bytecode ${PYTHONDONTWRITEBYTECODE:-written}";; esac; done\n'
    )
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(compat, "build_environment", lambda root, version: (env, True))
    assert compat.main(["--root", str(root), "--jax", "0.7.1", "--lessons-only"]) == 0
    ran = [line for line in capsys.readouterr().out.splitlines() if ": ran" in line]
    assert len(ran) == 3 and all(line.endswith("bytecode written") for line in ran), ran


@pytest.mark.parametrize("name", compat._IMPORTED_BY_EVERY_RUN)
def test_what_a_new_environment_compiles_is_importable(name: str) -> None:
    assert importlib.util.find_spec(name) is not None, name
