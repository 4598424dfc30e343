"""Where the course lives online, and the links that open a notebook there.

A course host says where the course's repository is with one setting in ``pyproject.toml``::

    [project.urls]
    Repository = "https://github.com/OWNER/REPO"

Everything else follows from it: the Colab badge in each notebook's first markdown cell, the
Binder and Colab links on the website's lesson and exercise pages, and what a notebook opened
alone installs (`install_requirement`). Without the setting there are no launch links at all, and
a notebook opened alone installs nothing: the course has no published package name that pip could
look up safely, so the setup cell stops and says how to get the course (`setup_source`).

>>> repo = Repository("octo", "pytree-course")
>>> colab_url(repo, "notebooks/01_what_is_a_pytree.ipynb")
'https://colab.research.google.com/github/octo/pytree-course/blob/main/notebooks/01_what_is_a_pytree.ipynb'
>>> binder_url(repo, "exercises/02_mapping_and_sgd.ipynb")
'https://mybinder.org/v2/gh/octo/pytree-course/main?labpath=exercises/02_mapping_and_sgd.ipynb'
>>> install_requirement(repo)
'pytree-course @ git+https://github.com/octo/pytree-course@main'
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from course_lib import JAX_FLOOR

__all__ = [
    "BRANCH",
    "PACKAGE",
    "LaunchSettingError",
    "Repository",
    "binder_url",
    "colab_badge",
    "colab_url",
    "install_requirement",
    "parse_repository",
    "repository",
    "setup_source",
    "with_badge",
]

PACKAGE = "pytree-course"
# The branch that launch links open and that a lone notebook installs from.
BRANCH = "main"
_GITHUB = re.compile(r"https://github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?")
_BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
_BADGE_LINE = re.compile(r"\n*^\[!\[Open In Colab\]\([^)]*\)\]\([^)]*\)[ \t]*$", re.MULTILINE)


class LaunchSettingError(ValueError):
    """``[project.urls] Repository`` in pyproject.toml is not a GitHub repository URL."""


@dataclass(frozen=True)
class Repository:
    """A GitHub repository, by owner and name."""

    owner: str
    name: str

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"


def parse_repository(url: str) -> Repository:
    """The repository that ``url`` names; raises `LaunchSettingError` for any other URL.

    >>> parse_repository("https://github.com/octo/pytree-course.git")
    Repository(owner='octo', name='pytree-course')
    """
    match = _GITHUB.fullmatch(url.strip())
    if match is None:
        raise LaunchSettingError(
            f"[project.urls] Repository in pyproject.toml is {url!r}; launch links need a GitHub "
            "repository URL such as https://github.com/OWNER/REPO (Colab and Binder open "
            "notebooks from GitHub). Remove the setting to build the course without launch links."
        )
    return Repository(match.group(1), match.group(2))


def repository(root: Path) -> Repository | None:
    """The repository set in ``root/pyproject.toml``, or None when none is set (or no file)."""
    if not (root / "pyproject.toml").is_file():
        return None
    with (root / "pyproject.toml").open("rb") as file:
        urls = tomllib.load(file).get("project", {}).get("urls", {})
    url = urls.get("Repository")
    return None if url is None else parse_repository(url)


def colab_url(repo: Repository, path: str) -> str:
    """The Colab address that opens the notebook at ``path`` (relative to the repository root)."""
    return f"https://colab.research.google.com/github/{repo.owner}/{repo.name}/blob/{BRANCH}/{path}"


def binder_url(repo: Repository, path: str) -> str:
    """The Binder address that builds the course's environment and opens ``path`` in JupyterLab."""
    return f"https://mybinder.org/v2/gh/{repo.owner}/{repo.name}/{BRANCH}?labpath={path}"


def colab_badge(repo: Repository, path: str) -> str:
    """The markdown of an "Open in Colab" badge for the notebook at ``path``.

    >>> colab_badge(Repository("octo", "c"), "notebooks/00_start_here.ipynb")[:40]
    '[![Open In Colab](https://colab.research'
    """
    return f"[![Open In Colab]({_BADGE})]({colab_url(repo, path)})"


def with_badge(markdown: str, badge: str | None) -> str:
    """``markdown`` ending in ``badge`` on a line of its own; any earlier badge goes first.

    >>> badge = colab_badge(Repository("octo", "c"), "notebooks/00_start_here.ipynb")
    >>> with_badge(with_badge("# Start here", badge), badge) == "# Start here\\n\\n" + badge
    True
    >>> with_badge("# Start here\\n\\n" + badge, None)
    '# Start here'
    """
    text = _BADGE_LINE.sub("", markdown)
    return f"{text}\n\n{badge}" if badge else text


def install_requirement(repo: Repository) -> str:
    """What a notebook opened alone asks pip for: the course from its repository's branch."""
    return f"{PACKAGE} @ git+{repo.url}@{BRANCH}"


# The setup cell's code. It must run before course_lib exists, so it imports nothing of the course,
# and it must not import JAX: lesson 07's next cell sets XLA_FLAGS, which JAX reads at import.
_SETUP = """\
# Generated by `make navigation`. Where the course is not installed (Colab, a fresh Jupyter), this
# installs it into this kernel from the course's repository, keeping the JAX that is already here.
# Elsewhere it does nothing.
import importlib.util

if importlib.util.find_spec("course_lib") is None:
    import importlib.metadata
    import re
    import shlex

    from IPython import get_ipython

    course, floor = {requirement!r}, {floor!r}
    try:
        jax_before = importlib.metadata.version("jax")
    except importlib.metadata.PackageNotFoundError:
        jax_before = None
    release = lambda v: tuple(int(n) for n in re.findall(r"\\d+", v)[:3])
    if jax_before and release(jax_before) < release(floor):
        raise RuntimeError(
            f"This kernel has JAX {{jax_before}}; the course needs JAX {{floor}} or newer. "
            "Run `%pip install -U jax`, restart the kernel, then run this cell again."
        )
    keep = f" jax=={{jax_before}}" if jax_before else ""
    get_ipython().run_line_magic("pip", f"install --quiet {{shlex.quote(course)}}{{keep}}")
    importlib.invalidate_caches()
    if importlib.util.find_spec("course_lib") is None:
        raise RuntimeError(
            f"Could not install the course ({{course}}): pip's message is above. Without a "
            "network, run the course where it is installed instead (clone it, then `make lab`)."
        )
    jax_now = importlib.metadata.version("jax")
    kept = "kept" if jax_now == jax_before else "installed"
    print(f"Installed the course ({{course}}) into this kernel; JAX {{jax_now}} {{kept}}.")"""

# The setup cell of a course that names no repository: installing by the package name would fetch
# whatever the package index serves under it, which is not this course.
_SETUP_WITHOUT_REPOSITORY = """\
# Generated by `make navigation`. Where the course is not installed (Colab, a fresh Jupyter), this
# says how to get it: the course names no repository to install it from. Elsewhere it does
# nothing.
import importlib.util

if importlib.util.find_spec("course_lib") is None:
    raise RuntimeError(
        "This notebook needs the pytree course, which this kernel does not have, and the course "
        "names no repository to install it from. Clone the course and run `make lab` in its "
        "folder, then open the notebook there; or ask whoever hosts the course for its address."
    )"""


# What a lesson's setup cell adds: the lessons' deliberate errors show as IPython's minimal
# traceback, the error's type and message alone, and a cell that declares the error it shows runs
# through course_lib._shown_errors, so that Run All goes on past it in every front end (Colab has
# no cell tags). The module is imported by the first such cell: importing it here would import JAX
# before lesson 07 sets XLA_FLAGS. Exercises keep the full traceback, which points at the line of
# the learner's code that failed.
_MINIMAL_TRACEBACKS = """

# A lesson's deliberate errors show as their last line: the error's type and its message.
import contextlib
import io

from IPython import get_ipython

with contextlib.redirect_stdout(io.StringIO()):  # %xmode would print the mode it sets
    get_ipython().run_line_magic("xmode", "minimal")


# A cell whose first line names an error ("# Raises TypeError") shows it, and the lesson runs on.
def _shown_error(lines):
    if lines and lines[0].startswith("# Raises "):
        from course_lib._shown_errors import declared_cell

        return declared_cell(lines)
    return lines


_hooks = get_ipython().input_transformers_post
_hooks[:] = [hook for hook in _hooks if getattr(hook, "__name__", "") != "_shown_error"]
_hooks.append(_shown_error)
del _hooks, _shown_error, contextlib, io"""


def setup_source(repo: Repository | None, *, lesson: bool = False) -> str:
    """The code of every notebook's hidden setup cell (generated by `make navigation`).

    With a repository it installs ``install_requirement(repo)`` with ``%pip`` when ``course_lib``
    cannot be imported, pinning the JAX already installed so that pip cannot replace it; below the
    course's floor it stops and says to upgrade instead. Without one it installs nothing and stops,
    saying how to get the course. A lesson's (``lesson=True``) then sets IPython's minimal
    tracebacks, silently, and registers the input transformer that lets a cell declare the error it
    shows (`course_lib._shown_errors`).

    >>> print(setup_source(Repository("octo", "c")).splitlines()[12])
        course, floor = 'pytree-course @ git+https://github.com/octo/c@main', '0.7.1'
    >>> "pip" in setup_source(None)
    False
    >>> setup_source(None, lesson=True).splitlines()[-2:]
    ['_hooks.append(_shown_error)', 'del _hooks, _shown_error, contextlib, io']
    """
    if repo is None:
        source = _SETUP_WITHOUT_REPOSITORY
    else:
        source = _SETUP.format(requirement=install_requirement(repo), floor=JAX_FLOOR)
    return source + _MINIMAL_TRACEBACKS if lesson else source
