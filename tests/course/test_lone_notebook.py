"""A lesson opened alone, as in Colab or a fresh Jupyter, and the course installed into a
learner's own environment.

The environment holds a JAX from the middle of the supported range, Jupyter and the course's
other dependencies, but not the course. A lesson of a course that names no repository is copied
alone into an empty folder and run: its setup cell installs nothing, although pip could find a
package named ``pytree-course`` (the course's own wheel, in a folder pip is told to search, stands
for whatever the package index might serve under that name), and stops with what to do. The
setup cell of a course that names its repository installs from it (tests/authoring/test_launch.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course_tools.authoring.compat import build_environment

ROOT = Path(__file__).resolve().parents[2]
MIDDLE_JAX = "0.8.3"
LESSON = "02_mapping_and_sgd.ipynb"

pytestmark = pytest.mark.slow


def _installed(python: Path, name: str) -> str | None:
    code = (
        "import importlib.metadata as m\n"
        f"try: print(m.version({name!r}))\n"
        "except m.PackageNotFoundError: pass"
    )
    # Run outside the checkout: `python -c` puts the working folder on sys.path, and the
    # checkout's pytree_course.egg-info would pass for an installed course.
    out = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True, cwd=python.anchor
    )
    return out.stdout.strip() or None


def test_a_lone_lesson_installs_nothing_by_name_and_says_how_to_get_the_course(
    tmp_path: Path,
) -> None:
    env, _ = build_environment(ROOT, MIDDLE_JAX, course=False)
    python = env / "bin" / "python"
    assert _installed(python, "pytree-course") is None, f"{env} already holds the course"

    wheels = tmp_path / "wheels"
    subprocess.run(
        [sys.executable, "-m", "uv", "build", "--wheel", "--quiet", "--out-dir", str(wheels)],
        cwd=ROOT,
        check=True,
    )
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(ROOT / "notebooks" / LESSON, alone / LESSON)

    variables = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    variables.update(
        PATH=f"{env / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        PIP_FIND_LINKS=str(wheels),
        PIP_NO_INDEX="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    try:
        run = subprocess.run(
            [str(env / "bin" / "jupyter-execute"), "--inplace", "--timeout=300", LESSON],
            cwd=alone,
            env=variables,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode != 0, "the lesson ran without the course"
        said = run.stdout + run.stderr
        assert "names no repository to install it from" in said, said[-5000:]
        assert "`make lab`" in said and "ask whoever hosts the course" in said
        assert _installed(python, "pytree-course") is None, "the setup cell installed by name"
        assert _installed(python, "jax") == MIDDLE_JAX
    finally:
        subprocess.run(
            [sys.executable, "-m", "uv", "pip", "uninstall", "--quiet", "--no-config",
             "--python", str(python), "pytree-course"],
            check=False,
        )  # fmt: skip


def _uv(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "uv", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.parametrize("installer", ["uv pip", "pip", "pip of the wheel"])
def test_installing_the_course_from_its_checkout_keeps_the_learners_jax(
    installer: str, tmp_path: Path
) -> None:
    """`uv pip install .` run in the checkout reads pyproject.toml's [tool.uv] settings, which once
    pinned the lock's JAX and so replaced the learner's: the lock's pin lives in a dependency
    group now, which no installer reads unless asked."""
    env, _ = build_environment(ROOT, MIDDLE_JAX, course=False)
    python = env / "bin" / "python"
    assert _installed(python, "jax") == MIDDLE_JAX
    try:
        if installer == "uv pip":
            _uv("pip", "install", "--quiet", "--python", str(python), ".", cwd=ROOT)
        elif installer == "pip":
            subprocess.run([str(python), "-m", "pip", "install", "-q", "."], cwd=ROOT, check=True)
        else:
            _uv("build", "--wheel", "--quiet", "--out-dir", str(tmp_path), cwd=ROOT)
            wheel = next(tmp_path.glob("pytree_course-*.whl"))
            subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True)
        assert _installed(python, "pytree-course") is not None
        assert (_installed(python, "jax"), _installed(python, "jaxlib")) == (MIDDLE_JAX, MIDDLE_JAX)
    finally:
        _uv("pip", "uninstall", "--quiet", "--no-config", "--python", str(python),
            "pytree-course", cwd=ROOT)  # fmt: skip


def test_a_project_that_adds_the_course_keeps_its_jax(tmp_path: Path) -> None:
    """`uv add` of the course from another project resolves that project's pinned JAX."""
    _uv("init", "--bare", "--quiet", "--name", "learners-project", "--python", sys.executable, ".",
        cwd=tmp_path)  # fmt: skip
    pins = [f"jax=={MIDDLE_JAX}", f"jaxlib=={MIDDLE_JAX}", f"pytree-course @ {ROOT.as_uri()}"]
    _uv("add", "--no-sync", "--quiet", *pins, cwd=tmp_path)
    lock = (tmp_path / "uv.lock").read_text()
    for name in ("jax", "jaxlib"):
        assert f'name = "{name}"\nversion = "{MIDDLE_JAX}"' in lock, name
    assert 'name = "pytree-course"' in lock
