"""The course outside its own environment: the supported JAX range and the lock, the setup cell
every notebook starts with, the Colab badges and Binder's configuration."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import re
import shutil
import tomllib
from pathlib import Path
from typing import Any

import IPython
import jax
import nbformat
import pytest

from course_lib import JAX_FLOOR, jax_at_least
from course_lib._jax_version import require_supported_jax, version_tuple
from course_tools.authoring import binder, exercises, launch, navigation

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("notebooks", "solutions", "exercises")
TEST_URL = "https://github.com/example-org/pytree-course"
EXAMPLE = launch.Repository("example-org", "pytree-course")


def _pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def _locked_version(name: str) -> str:
    lock = (ROOT / "uv.lock").read_text(encoding="utf-8")
    found = re.search(rf'\[\[package\]\]\nname = "{name}"\nversion = "([^"]+)"', lock)
    assert found, f"{name} is not in uv.lock"
    return found.group(1)


# --- the range and the lock ---------------------------------------------------------------------


def test_the_library_accepts_every_jax_from_the_floor_and_pins_none() -> None:
    project = _pyproject()["project"]
    jax_requirements = [r for r in project["dependencies"] if re.match(r"jax(lib)?\b", r)]
    assert jax_requirements == [f"jax>={JAX_FLOOR}"]
    for extra in project["optional-dependencies"].values():
        assert not any(re.match(r"jax(lib)?\b", r) for r in extra)


def test_the_lock_pins_the_jax_the_committed_outputs_come_from() -> None:
    project = _pyproject()
    assert project["tool"]["uv"]["default-groups"] == ["course"]
    assert "constraint-dependencies" not in project["tool"]["uv"]  # `uv pip install .` reads it
    pins = project["dependency-groups"]["course"]
    pinned = {name: version for name, version in (c.split("==") for c in pins)}
    assert pinned["jax"] == pinned["jaxlib"] == _locked_version("jax") == _locked_version("jaxlib")


def test_a_jax_below_the_floor_gets_one_message_naming_both_versions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(jax, "__version__", "0.6.2")
    with pytest.raises(ImportError) as raised:
        require_supported_jax()
    message = str(raised.value)
    assert "0.6.2" in message and JAX_FLOOR in message and "pip install -U jax" in message
    assert not jax_at_least(JAX_FLOOR)


def test_versions_compare_by_release_numbers() -> None:
    assert version_tuple("0.10.2") > version_tuple("0.9.0.1") > version_tuple("0.9.0")
    assert version_tuple("0.11.0.dev20261201") > version_tuple("0.10.2")
    with pytest.raises(ValueError, match="not a release version"):
        version_tuple("main")


def test_binder_is_the_lock() -> None:
    files = binder.binder_files(ROOT)
    for path, text in files.items():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `make lock`"
    requirements = files[ROOT / "binder" / "requirements.txt"]
    assert f"jax=={_locked_version('jax')}\n" in requirements
    assert f"jupyterlab=={_locked_version('jupyterlab')}\n" in requirements
    assert "pytree-course" not in requirements  # postBuild installs it, without dependencies
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111


# --- the setup cell -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [p.relative_to(ROOT).as_posix() for f in FOLDERS for p in sorted((ROOT / f).glob("*.ipynb"))],
)
def test_every_notebook_runs_the_setup_cell_first(path: str) -> None:
    """The setup cell is the first code cell, so nothing runs before it, and a lesson's sets its
    short tracebacks itself: no other cell does. A lesson's title comes above it."""
    cells = nbformat.read(ROOT / path, as_version=4).cells
    first_code = next(cell for cell in cells if cell.cell_type == "code")
    assert navigation.is_setup(first_code)
    lesson = path.startswith("notebooks/")
    assert first_code.source == launch.setup_source(launch.repository(ROOT), lesson=lesson)
    others = [c.source for c in cells if c.cell_type == "code" and c is not first_code]
    assert not any("%xmode" in source or "%%capture" in source for source in others)
    above = cells[: cells.index(first_code)]
    assert all(c.cell_type == "markdown" for c in above)
    if lesson:  # a lesson opens on its title
        assert any(c.source.startswith("# ") for c in above), [c.source[:40] for c in above]
    assert first_code.metadata["jupyter"] == {"source_hidden": True}
    assert sum(navigation.is_setup(cell) for cell in cells) == 1
    assert not first_code.get("outputs"), "the setup cell printed where the course is installed"


class _Shell:
    """IPython as the setup cell sees it: ``%pip`` recorded, and the course there afterwards when
    ``installs``."""

    def __init__(self, installs: bool) -> None:
        self.installs = installs
        self.course_present = False
        self.lines: list[str] = []

    def run_line_magic(self, magic: str, line: str) -> None:
        self.lines.append(f"%{magic} {line}")
        self.course_present = self.installs


def _run_setup(
    monkeypatch: pytest.MonkeyPatch, source: str, jax_version: str | None, installs: bool
) -> tuple[_Shell, str]:
    """Run the setup cell's code as a kernel without the course would, with ``jax_version`` (or
    no JAX) installed; returns the shell and what the cell printed."""
    shell = _Shell(installs)
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        if name == "course_lib":
            return object() if shell.course_present else None
        return real_find_spec(name, *args)

    def version(name: str) -> str:
        if name == "jax" and jax_version is not None:
            return jax_version
        if name == "jax" and shell.course_present:
            return "0.10.2"  # what pip installed with the course
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, "setup-cell", "exec"), {})
    return shell, out.getvalue()


def test_the_setup_cell_does_nothing_where_the_course_is_installed() -> None:
    source = launch.setup_source(None)
    namespace: dict[str, object] = {}
    exec(compile(source, "setup-cell", "exec"), namespace)  # course_lib is importable here
    assert "course" not in namespace and "jax_before" not in namespace


def test_the_setup_cell_installs_the_course_and_pins_the_jax_it_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shell, out = _run_setup(monkeypatch, launch.setup_source(EXAMPLE), "0.8.3", installs=True)
    assert shell.lines == [
        "%pip install --quiet "
        "'pytree-course @ git+https://github.com/example-org/pytree-course@main' jax==0.8.3"
    ]
    assert out == (
        "Installed the course (pytree-course @ git+https://github.com/example-org/pytree-course"
        "@main) into this kernel; JAX 0.8.3 kept.\n"
    )


def test_the_setup_cell_without_jax_lets_pip_choose_it(monkeypatch: pytest.MonkeyPatch) -> None:
    shell, out = _run_setup(monkeypatch, launch.setup_source(EXAMPLE), None, installs=True)
    assert shell.lines == [f"%pip install --quiet '{launch.install_requirement(EXAMPLE)}'"]
    assert out.endswith("into this kernel; JAX 0.10.2 installed.\n")


def test_the_setup_cell_refuses_a_jax_below_the_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError) as raised:
        _run_setup(monkeypatch, launch.setup_source(EXAMPLE), "0.6.2", installs=True)
    assert "JAX 0.6.2" in str(raised.value) and f"JAX {JAX_FLOOR} or newer" in str(raised.value)


def test_the_setup_cell_says_what_to_do_when_pip_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match="Could not install the course .*make lab"):
        _run_setup(monkeypatch, launch.setup_source(EXAMPLE), "0.9.0", installs=False)


@pytest.mark.parametrize("jax_version", ["0.9.0", None])
def test_without_a_repository_the_setup_cell_installs_nothing_and_says_how_to_get_the_course(
    monkeypatch: pytest.MonkeyPatch, jax_version: str | None
) -> None:
    """No package index is asked for the course by name: whoever registered it there would run
    their code in the kernel."""
    with pytest.raises(RuntimeError) as raised:
        _run_setup(monkeypatch, launch.setup_source(None), jax_version, installs=True)
    message = str(raised.value)
    assert "`make lab`" in message and "ask whoever hosts the course" in message
    assert "pip" not in launch.setup_source(None)


# --- badges -------------------------------------------------------------------------------------


def _course_copy(tmp_path: Path, url: str | None) -> Path:
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, tmp_path / folder)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if url is not None:
        section = "\n[project.optional-dependencies]"
        urls = f'\n[project.urls]\nRepository = "{url}"\n'
        assert section in text
        text = text.replace(section, urls + section)
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return tmp_path


def _first_markdown(path: Path) -> str:
    cells = nbformat.read(path, as_version=4).cells
    return next(cell.source for cell in cells if cell.cell_type == "markdown")


def test_a_repository_url_puts_a_colab_badge_on_lessons_and_exercises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _course_copy(tmp_path, TEST_URL + ".git")
    monkeypatch.chdir(root)
    assert exercises.main([]) == 0  # the banner carries the exercise's own badge
    assert navigation.main([]) == 0
    assert navigation.main(["--check"]) == 0 and exercises.main(["--check"]) == 0
    badge = (
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/example-org/pytree-course/blob/main/{})"
    )
    for folder in ("notebooks", "exercises"):
        for path in sorted((root / folder).glob("*.ipynb")):
            first = _first_markdown(path)
            assert first.endswith("\n\n" + badge.format(f"{folder}/{path.name}")), path
            assert first.count("colab-badge.svg") == 1
    for path in sorted((root / "solutions").glob("*.ipynb")):
        assert "colab-badge.svg" not in path.read_text(encoding="utf-8")
    setup = launch.setup_source(launch.repository(root), lesson=True)
    assert "'pytree-course @ git+https://github.com/example-org/pytree-course@main'" in setup
    lesson = nbformat.read(root / "notebooks" / "02_mapping_and_sgd.ipynb", as_version=4)
    assert next(c for c in lesson.cells if c.cell_type == "code").source == setup

    # The URL goes: so do the badges, and the setup cell installs nothing again.
    _course_copy(tmp_path / "again", None)
    for folder in FOLDERS:
        shutil.rmtree(tmp_path / "again" / folder)
        shutil.copytree(root / folder, tmp_path / "again" / folder)
    monkeypatch.chdir(tmp_path / "again")
    assert exercises.main([]) == 0 and navigation.main([]) == 0
    for folder in FOLDERS:
        for path in sorted((tmp_path / "again" / folder).glob("*.ipynb")):
            assert "colab-badge.svg" not in path.read_text(encoding="utf-8")
            assert path.read_bytes() == (ROOT / folder / path.name).read_bytes(), path


def test_a_repository_url_that_is_not_github_is_refused(tmp_path: Path) -> None:
    root = _course_copy(tmp_path, "https://gitlab.com/example-org/pytree-course")
    with pytest.raises(launch.LaunchSettingError, match="GitHub repository URL"):
        launch.repository(root)


def test_the_course_itself_sets_no_url_and_has_no_badges() -> None:
    assert launch.repository(ROOT) is None
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            assert "colab-badge.svg" not in path.read_text(encoding="utf-8"), path


# --- deprecations -------------------------------------------------------------------------------


def test_no_committed_output_shows_a_deprecation_warning() -> None:
    """`make test` runs the notebooks with DeprecationWarnings as errors; a warning that reached
    a committed output (a cell's own code is shown its warnings, not stopped) fails here."""
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
                for output in cell.get("outputs", []):
                    text = output.get("text", "") + output.get("evalue", "")
                    assert "DeprecationWarning" not in text, f"{path.name}, cell {index}"
