"""Run the course on other JAX releases: every lesson, every solution and the unit tests.

::

    python -m course_tools.authoring.compat [--jax VERSION ...] [--middle] [--lessons-only]
        [--jobs N] [TEST ...]

For each JAX release (default: the course's floor, `course_lib.JAX_FLOOR`; ``--middle`` adds one of
:data:`MIDDLE_RELEASES` in turn, see :func:`middle_release`) it builds an
environment in ``build/compat/jax-VERSION/``: the course's lock (``uv.lock``, exported with
``uv export``) with only ``jax`` and ``jaxlib`` replaced, and the course installed from this
checkout. An environment whose lock and release have not changed is reused. Then, in it:

1. every lesson and solution (``--lessons-only``: every lesson) runs top to bottom in a fresh
   kernel, without writing anything back (`course_tools.authoring.execute` ``--no-write``): no
   cell may raise, every cell that declares the error it shows (``# Raises TypeError`` on its
   first line) must raise it, and every self-check must say "passed" (``COURSE_STRICT_CHECKS=1``
   turns anything else into an error);
2. pytest runs the ``TEST`` arguments (`make compat` passes ``course_lib``'s tests and its
   doctests).

Outputs are not compared: the committed ones come from the lock's JAX, and the words a release
prints may differ. One line per notebook and a summary per release are printed; the exit status
is 1 when anything failed on any release, 2 when an environment could not be built.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from course_lib import JAX_FLOOR

from .binder import locked_requirements

__all__ = [
    "MIDDLE_RELEASES",
    "CompatError",
    "ReleaseResult",
    "build_environment",
    "main",
    "middle_release",
    "run_release",
]

LESSON_FOLDERS = ("notebooks", "solutions")
MIDDLE_RELEASES = ("0.8.3", "0.9.2")
"""The newest patch of each minor release between the floor and the lock's JAX. CI runs one of them
(``--middle``) beside the floor, in turn (:func:`middle_release`)."""
_NOTEBOOK_LINE = re.compile(r"^(?:notebooks|solutions)/\S+\.ipynb: ")
_CHECKS = re.compile(r"(\d+) self-checks passed")
_PYTEST_TAIL = re.compile(r"^=*\s*(\d+ (?:passed|failed).*?)\s*=*$", re.MULTILINE)


class CompatError(Exception):
    """An environment for a JAX release could not be built; the message says why."""


@dataclass(frozen=True)
class ReleaseResult:
    """What happened on one JAX release."""

    version: str
    notebooks: int
    failed: list[str]
    checks_passed: int
    tests: str
    tests_ok: bool
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.failed and self.tests_ok


def _uv(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "uv", *args]
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CompatError(f"`uv {' '.join(args)}` failed:\n{result.stdout}{result.stderr}")
    return result


def build_environment(root: Path, version: str, *, course: bool = True) -> tuple[Path, bool]:
    """The environment for JAX ``version`` under ``root/build/compat``, built when missing or stale.

    With ``course=False`` it holds everything but the course, and pip: a learner's Jupyter where
    a notebook's setup cell has the course to install. Returns its folder and whether it was
    reused.
    """
    lock = (root / "uv.lock").read_bytes()
    stamp_text = f"{hashlib.sha256(lock).hexdigest()} jax=={version} course={course}\n"
    env = root / "build" / "compat" / (f"jax-{version}" if course else f"jax-{version}-bare")
    stamp = env / ".course-compat"
    if stamp.is_file() and stamp.read_text() == stamp_text:
        return env, True
    if env.exists():
        shutil.rmtree(env)
    python = env / "bin" / "python"
    seed = () if course else ("--seed",)  # pip, for the setup cell's %pip
    # --no-config: this environment is made from the exported lock alone, whatever pyproject.toml's
    # [tool.uv] says (its overrides and default groups are the course environment's).
    _uv("venv", "--quiet", "--no-config", *seed, "--python", sys.executable, str(env), cwd=root)
    requirements, overrides = env / "requirements.txt", env / "overrides.txt"
    try:
        requirements.write_text(locked_requirements(root))
    except RuntimeError as error:
        raise CompatError(str(error)) from None
    overrides.write_text(f"jax=={version}\njaxlib=={version}\n")
    _uv(
        "pip", "install", "--quiet", "--no-config", "--python", str(python),
        "-r", str(requirements), "--override", str(overrides), cwd=root,
    )  # fmt: skip
    if course:
        _uv(
            "pip", "install", "--quiet", "--no-config", "--python", str(python), "--no-deps",
            "--editable", str(root), cwd=root,
        )  # fmt: skip
        _compile_what_runs(python, root)
    stamp.write_text(stamp_text)
    return env, False


_IMPORTED_BY_EVERY_RUN = (
    "course_lib.checks",
    "course_lib.viz",
    "course_tools.authoring.execute",
    "ipykernel.kernelapp",
    "hypothesis",
    "xdist",
)
"""What each kernel and test process of :func:`run_release` imports (JAX and the rest with them)."""


def _compile_what_runs(python: Path, root: Path) -> None:
    """Write the bytecode of what the kernels and tests import, by importing it once.

    The environment holds about 140 MB of Python, of which the lessons and tests import a fifth:
    compiling it all (``uv pip install --compile-bytecode``) costs more than these imports do. The
    runs themselves may write bytecode too (:func:`_environment`), so a module left out here is
    compiled once, by the first process that imports it, rather than by every one.
    """
    code = "import importlib, sys\nfor name in sys.argv[1:]: importlib.import_module(name)"
    imported = subprocess.run(
        [str(python), "-c", code, *_IMPORTED_BY_EVERY_RUN],
        cwd=root,
        env=_environment(python.parent.parent),
        capture_output=True,
        text=True,
        check=False,
    )
    if imported.returncode != 0:
        raise CompatError(f"the new environment cannot import the course:\n{imported.stderr}")


def _environment(env: Path) -> dict[str, str]:
    variables = dict(os.environ)
    # The environment is the course's own build folder: its runs write their bytecode there.
    variables.pop("PYTHONDONTWRITEBYTECODE", None)
    variables["PATH"] = f"{env / 'bin'}{os.pathsep}{variables.get('PATH', '')}"
    variables["VIRTUAL_ENV"] = str(env)
    variables["COURSE_STRICT_CHECKS"] = "1"
    return variables


def _split(items: list[Path], parts: int) -> list[list[Path]]:
    return [chunk for chunk in (items[i::parts] for i in range(parts)) if chunk]


def middle_release(root: Path) -> tuple[str, str]:
    """The middle release CI runs at ``root``'s commit, and why: the one whose turn the commit's
    hash gives (its value modulo the number of :data:`MIDDLE_RELEASES`), so a commit always gets
    the same one, commits get each about as often, and a shallow clone knows it too; the first
    where git cannot say.

    >>> middle_release(Path("/")) == (MIDDLE_RELEASES[0], "no git commit here, so the first")
    True
    """
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    commit = found.stdout.strip()
    if found.returncode != 0 or not commit:
        return MIDDLE_RELEASES[0], "no git commit here, so the first"
    turn = int(commit, 16) % len(MIDDLE_RELEASES)
    return MIDDLE_RELEASES[
        turn
    ], f"commit {commit[:12]}: its hash modulo {len(MIDDLE_RELEASES)} is {turn}"


def run_release(
    root: Path,
    version: str,
    tests: Sequence[str],
    jobs: int = 2,
    folders: Sequence[str] = LESSON_FOLDERS,
) -> ReleaseResult:
    """Build (or reuse) the environment for ``version``, then run the notebooks of ``folders`` and
    ``tests`` there, side by side (pytest's output goes to a file until the notebooks are done)."""
    started = time.monotonic()
    print(f"== JAX {version} ==", flush=True)
    env, reused = build_environment(root, version)
    print(f"environment: {env.relative_to(root)} ({'reused' if reused else 'built'})", flush=True)
    variables = _environment(env)
    python = str(env / "bin" / "python")
    notebooks = sorted(p for folder in folders for p in (root / folder).glob("*.ipynb"))
    runs = [
        subprocess.Popen(
            [python, "-m", "course_tools.authoring.execute", "--no-write", *map(str, chunk)],
            cwd=root,
            env=variables,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for chunk in _split([p.relative_to(root) for p in notebooks], jobs)
    ]
    pytest_output = tempfile.TemporaryFile(mode="w+")
    pytest_run = (
        subprocess.Popen(
            [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", *tests],
            cwd=root,
            env=variables,
            stdout=pytest_output,
            stderr=subprocess.STDOUT,
            text=True,
        )
        if tests
        else None
    )
    failed: list[str] = []
    checks_passed = 0
    details: list[str] = []
    for run in runs:
        output, _ = run.communicate()
        for line in output.splitlines():
            if _NOTEBOOK_LINE.match(line):
                print(line, flush=True)
                if "FAILED" in line:
                    failed.append(line.split(":", 1)[0])
                found = _CHECKS.search(line)
                checks_passed += int(found.group(1)) if found else 0
        if run.returncode != 0:
            details.append(output)
    for text in details:
        print(text, file=sys.stderr, flush=True)
    tests_summary, tests_ok = "no tests asked for", True
    with pytest_output:
        if pytest_run is not None:
            code = pytest_run.wait()
            pytest_output.seek(0)
            text = pytest_output.read()
            tails = _PYTEST_TAIL.findall(text)
            tests_summary = tails[-1] if tails else f"pytest exited {code}"
            tests_ok = code == 0
            if not tests_ok:
                print(text[-25000:], file=sys.stderr)
    result_ = ReleaseResult(
        version=version,
        notebooks=len(notebooks),
        failed=failed,
        checks_passed=checks_passed,
        tests=tests_summary,
        tests_ok=tests_ok,
        seconds=time.monotonic() - started,
    )
    print(
        f"JAX {version}: {len(notebooks) - len(failed)}/{len(notebooks)} notebooks ran, "
        f"{checks_passed} self-checks passed; unit tests: {tests_summary} "
        f"({result_.seconds:.0f} s)",
        flush=True,
    )
    return result_


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.authoring.compat",
        description="Run every lesson, solution and unit test on other JAX releases.",
    )
    parser.add_argument(
        "--jax",
        action="append",
        metavar="VERSION",
        help=f"a JAX release to run on (repeatable; default: the floor, {JAX_FLOOR})",
    )
    parser.add_argument(
        "--middle",
        action="store_true",
        help="the middle release whose turn it is (see middle_release) instead of the floor",
    )
    parser.add_argument(
        "--lessons-only",
        action="store_true",
        help="run the lessons, not the solutions (as CI does: course_lib's unit tests run every "
        "exercise's reference and right answers)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at once (default 2)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the course folder")
    parser.add_argument("tests", nargs="*", help="what pytest runs in each environment")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    if not (root / "uv.lock").is_file():
        print(f"compat: {root}/uv.lock is missing: run this in the course folder", file=sys.stderr)
        return 2
    releases = list(args.jax or ([] if args.middle else [JAX_FLOOR]))
    if args.middle:
        middle, why = middle_release(root)
        print(f"compat: the middle release {middle} ({why})", flush=True)
        releases.append(middle)
    results = []
    for version in releases:
        try:
            folders = LESSON_FOLDERS[:1] if args.lessons_only else LESSON_FOLDERS
            results.append(run_release(root, version, args.tests, max(1, args.jobs), folders))
        except CompatError as error:
            print(f"compat: JAX {version}: {error}", file=sys.stderr)
            return 2
    print("\nJAX      notebooks  self-checks  unit tests")
    for r in results:
        mark = "ok  " if r.ok else "FAIL"
        ran = f"{r.notebooks - len(r.failed)}/{r.notebooks}"
        print(f"{r.version:<8} {ran:>9}  {r.checks_passed:>11}  {r.tests}  {mark}")
        for name in r.failed:
            print(f"         failed: {name}")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
