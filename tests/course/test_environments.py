"""The two environments from the one uv.lock: `make lab` installs the learner's (the course and
what its notebooks use, no extra), every other target adds the test, site and room extras, and
neither removes what the other installed."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
AUTHORS_ONLY = {"pytest", "playwright", "sphinx", "mypy", "ruff", "distributed", "hypothesis"}


def canonicalize_name(name: str) -> str:
    """A distribution's name as package indexes compare them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _recipe(target: str) -> list[str]:
    """The commands ``make TARGET`` runs from scratch (``-n -B``: printed, not run)."""
    made = subprocess.run(
        ["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return made.stdout.splitlines()


def _syncs(lines: list[str]) -> list[str]:
    return [line for line in lines if re.search(r"\buv sync\b", line)]


def test_make_lab_syncs_the_lock_without_an_extra() -> None:
    lines = _recipe("lab")
    (sync,) = _syncs(lines)
    assert "--locked" in sync and "--inexact" in sync
    assert "--extra" not in sync and "--all-extras" not in sync
    assert not [line for line in lines if line.startswith("rm ")]  # only a failed venv goes
    assert any("jupyter lab" in line for line in lines)


def test_the_other_targets_add_the_extras_and_remove_nothing() -> None:
    lines = _recipe(".venv/.installed")
    learner, authors = _syncs(lines)
    assert "--extra" not in learner
    assert re.findall(r"--extra (\w+)", authors) == ["test", "site", "room"]
    assert all("--locked" in sync and "--inexact" in sync for sync in (learner, authors))
    assert not [line for line in lines if line.startswith("rm ")]  # only a failed venv goes


def _learners_distributions() -> set[str]:
    """What `make lab` installs: the course's dependencies and the default group in uv.lock, and
    theirs, markers aside (so a little more than any one machine gets)."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    packages = {canonicalize_name(p["name"]): p for p in lock["package"]}
    course = packages["pytree-course"]
    todo = [d["name"] for d in course["dependencies"]]
    todo += [d["name"] for d in course.get("dev-dependencies", {}).get("course", [])]
    found: set[str] = set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name not in found:
            found.add(name)
            todo += [d["name"] for d in packages[name].get("dependencies", [])]
    return found


def _imports(source: str) -> set[str]:
    code = "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )
    found = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_the_learners_environment_holds_what_the_notebooks_and_course_lib_import() -> None:
    imported: set[str] = set()
    for folder in ("notebooks", "exercises"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            cells = nbformat.read(path, as_version=4).cells
            imported |= {m for c in cells if c.cell_type == "code" for m in _imports(c.source)}
    for path in sorted((ROOT / "course_lib").rglob("*.py")):
        imported |= _imports(path.read_text(encoding="utf-8"))
    third_party = imported - set(sys.stdlib_module_names) - {"course_lib", "__future__"}
    assert {"jax", "numpy", "matplotlib", "ipywidgets"} <= third_party
    distributions = importlib.metadata.packages_distributions()
    learners = _learners_distributions()
    missing = {
        module: distributions.get(module)
        for module in third_party
        if not {canonicalize_name(d) for d in distributions.get(module, [])} & learners
    }
    assert missing == {}
    assert {"jupyterlab", "ipykernel"} <= learners
    assert not AUTHORS_ONLY & learners
