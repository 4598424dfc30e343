"""Build the course's website from the committed notebooks (``make site``)::

    python -m course_tools.authoring.site [--root DIR] [--out DIR] [--repository URL]

Sphinx reads the course folder ``--root`` (default: the working directory) with the
configuration in ``docs/conf.py``; its pages are `SITE_PAGES`: the pages in ``docs/`` (the
start page, one page for each of learners, instructors, graders and authors, the pitfall index,
the API and the facilitator's guide), ``CONTRIBUTING.md`` and every notebook in ``notebooks/``
and ``exercises/``.
``solutions/`` is never read, so no solution can reach the site. myst-nb renders the outputs
saved in the notebooks; nothing is executed. The site goes to ``OUT/html`` (default ``OUT``:
``ROOT/build/site``), rebuilt from scratch each time, with Sphinx warnings as errors.

The pages use three JavaScript packages that myst-nb and Sphinx would load from a CDN: require.js
and the Jupyter widget manager (``@jupyter-widgets/html-manager``) for the widgets, and MathJax for
the lessons' ``$...$`` math. `vendor_static` fetches them once with ``npm pack`` into
``build/site-vendor/``, checks each tarball against its pinned integrity hash, and the site
serves them as its own static files, so that no page loads anything from outside the site.

Each lesson and exercise page has a Binder and a Colab link (`launch_links`) when the course has
a repository: pyproject.toml's ``[project.urls] Repository`` (see `course_tools.authoring.launch`),
which ``--repository URL`` or the environment variable ``COURSE_REPOSITORY_URL`` overrides (an
empty value: no links). Without one the site has no launch links.

Then every page's internal links are checked (`check_links`): a missing file or anchor is an
error, and so is a script, style sheet or image from outside the site. External links are only
listed, in ``OUT/external-links.txt``: there is no network to check them.

Exit status: 0 built and checked; 1 broken links or outside loads; 2 the build itself failed.
"""

from __future__ import annotations

import argparse
import base64
import fnmatch
import hashlib
import html.parser
import os
import posixpath
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .launch import LaunchSettingError, Repository, binder_url, colab_url, parse_repository
from .launch import repository as pyproject_repository

__all__ = [
    "LAUNCH_PAGES",
    "REPOSITORY_VARIABLE",
    "SITE_PAGES",
    "VENDOR",
    "LinkReport",
    "SiteError",
    "VendorPackage",
    "build",
    "check_links",
    "fetch_packages",
    "image_alt",
    "launch_links",
    "main",
    "site_pages",
    "site_repository",
    "vendor_static",
]


class SiteError(Exception):
    """The site cannot be built; the message says what is missing and what to do."""


SITE_PAGES = ("docs/*.md", "CONTRIBUTING.md", "notebooks/*.ipynb", "exercises/*.ipynb")
"""The files under the course folder that are the site's pages (Sphinx's ``include_patterns``)."""
LAUNCH_PAGES = ("notebooks/*.ipynb", "exercises/*.ipynb")
"""The pages that get Binder and Colab links: the lessons and the exercises."""
REPOSITORY_VARIABLE = "COURSE_REPOSITORY_URL"
"""Overrides pyproject.toml's repository for the site's launch links; empty: no links."""


def site_repository(root: Path, url: str | None = None) -> Repository | None:
    """The repository the site's launch links open: ``url`` if given, else the environment's
    ``COURSE_REPOSITORY_URL`` if set, else ``[project.urls] Repository`` in ``root/pyproject.toml``;
    None when that is empty or unset. Raises `SiteError` with `LaunchSettingError`'s message for
    a URL that is not a GitHub repository.

    >>> site_repository(Path("."), "https://github.com/octo/pytree-course")
    Repository(owner='octo', name='pytree-course')
    >>> site_repository(Path("."), "") is None
    True
    """
    where = "the site build's repository argument"
    if url is None:
        url = os.environ.get(REPOSITORY_VARIABLE)
        where = f"${REPOSITORY_VARIABLE}"
    try:
        if url is None:
            return pyproject_repository(root)
        return parse_repository(url) if url.strip() else None
    except LaunchSettingError as error:
        if url is None:
            raise SiteError(str(error)) from None
        raise SiteError(
            f"{error} The URL came from {where}, which overrides pyproject.toml."
        ) from None


def launch_links(repo: Repository | None, path: str) -> list[tuple[str, str]]:
    """The launch links, ``(text, URL)``, of the page made from ``path`` (relative to the course
    folder): Binder and Colab for a lesson or an exercise (`LAUNCH_PAGES`) when ``repo`` is set;
    none for any other page, and none at all without a repository.

    >>> repo = Repository("octo", "pytree-course")
    >>> [text for text, _ in launch_links(repo, "exercises/02_mapping_and_sgd.ipynb")]
    ['Binder', 'Colab']
    >>> launch_links(repo, "docs/index.md"), launch_links(None, "notebooks/01_x.ipynb")
    ([], [])
    """
    if repo is None or not any(fnmatch.fnmatch(path, pattern) for pattern in LAUNCH_PAGES):
        return []
    return [("Binder", binder_url(repo, path)), ("Colab", colab_url(repo, path))]


@dataclass(frozen=True)
class VendorPackage:
    """An npm package the site serves itself: which files, copied where under ``_static/``."""

    name: str
    version: str
    integrity: str
    licence: str
    source: str
    """The folder inside the package the files are taken from (``.`` for its top)."""
    patterns: tuple[str, ...]
    """Glob patterns under ``source``; what matches keeps its path below ``source``."""
    target: str
    """The folder under ``_static/`` they go to."""

    @property
    def spec(self) -> str:
        return f"{self.name}@{self.version}"


VENDOR = (
    VendorPackage(
        "requirejs",
        "2.3.8",
        "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        "MIT",
        ".",
        ("require.js",),
        "vendor/requirejs",
    ),
    VendorPackage(
        "@jupyter-widgets/html-manager",
        "1.0.15",
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        "BSD-3-Clause",
        "dist",
        ("embed-amd.js", "embed.js.LICENSE.txt", "*.woff2", "*.woff", "*.ttf", "*.eot", "*.svg"),
        "vendor/html-manager",
    ),
    VendorPackage(
        "mathjax",
        "3.2.2",
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        "Apache-2.0",
        "es5",
        # The combined TeX component and what it loads on demand (TeX extensions, fonts, the
        # menu and its accessibility tools); not the other combined builds.
        ("tex-mml-chtml.js", "input/**/*", "output/chtml/**/*", "a11y/**/*", "ui/**/*", "sre/**/*"),
        "vendor/mathjax",
    ),
)
"""The vendored packages. Their pages' paths are in ``docs/conf.py``."""

_MANIFEST = "vendor/VENDORED.txt"


def _manifest(packages: Sequence[VendorPackage]) -> str:
    lines = [
        "Fetched with `npm pack` and checked against pinned hashes; used from here, not a CDN.",
        "",
    ]
    lines += [
        f"{p.spec}  licence {p.licence}  {', '.join(p.patterns)} from {p.source}/ in {p.target}/"
        for p in packages
    ]
    return "\n".join(lines) + "\n"


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _npm_pack(package: VendorPackage, folder: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise SiteError("npm is not installed")
    try:
        result = subprocess.run(
            [npm, "pack", "--silent", "--pack-destination", str(folder), package.spec],
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise SiteError(f"`npm pack {package.spec}` did not finish within 300 s") from None
    tarballs = sorted(folder.glob("*.tgz"))
    if result.returncode != 0 or len(tarballs) != 1:
        message = (result.stderr or result.stdout).strip().splitlines()
        raise SiteError(
            f"`npm pack {package.spec}` failed: {message[-1] if message else result.returncode}"
        )
    return tarballs[0]


def _unpack(package: VendorPackage, tarball: Path, static: Path) -> None:
    data = tarball.read_bytes()
    if _integrity(data) != package.integrity:
        raise SiteError(
            f"{package.spec} from npm does not match its pinned integrity hash "
            f"(got {_integrity(data)[:30]}...): the registry served different bytes"
        )
    with tempfile.TemporaryDirectory() as scratch, tarfile.open(tarball) as archive:
        archive.extractall(scratch, filter="data")
        top = Path(scratch) / "package"
        source = top / package.source
        target = static / package.target
        copied = 0
        for pattern in package.patterns:
            for path in sorted(source.glob(pattern)):
                if path.is_file():
                    destination = target / path.relative_to(source)
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, destination)
                    copied += 1
        if copied == 0:
            raise SiteError(
                f"{package.spec}: nothing matched {package.patterns} in {package.source}/"
            )
        for licence in ("LICENSE", "LICENSE.txt", "LICENSE.md"):
            if (top / licence).is_file():
                shutil.copy2(top / licence, target / "LICENSE")


def fetch_packages(packages: Sequence[VendorPackage], folder: Path) -> Path:
    """``folder/static``, holding the files of ``packages``: fetched with ``npm pack``, checked
    against their pinned hashes and unpacked the first time, then reused while the list is the
    same (``static/vendor/VENDORED.txt`` names them).

    Raises `SiteError` when npm is missing or a package cannot be fetched or does not match.
    """
    static = folder / "static"
    manifest = static / _MANIFEST
    if manifest.is_file() and manifest.read_text(encoding="utf-8") == _manifest(packages):
        return static
    folder.mkdir(parents=True, exist_ok=True)
    print(f">> fetching {', '.join(p.spec for p in packages)} with npm into {folder}/ (once)")
    with tempfile.TemporaryDirectory(dir=folder) as scratch:
        fresh = Path(scratch) / "static"
        for index, package in enumerate(packages):
            pack = Path(scratch) / f"pack{index}"
            pack.mkdir()
            _unpack(package, _npm_pack(package, pack), fresh)
        (fresh / _MANIFEST).parent.mkdir(parents=True, exist_ok=True)
        (fresh / _MANIFEST).write_text(_manifest(packages), encoding="utf-8")
        if static.exists():
            shutil.rmtree(static)
        fresh.rename(static)
    return static


def vendor_static(root: Path) -> Path:
    """The folder with the vendored files (``vendor/...``), fetched into ``build/site-vendor/``
    under ``root`` the first time (`fetch_packages`); Sphinx copies it into the site's
    ``_static/``.

    Raises `SiteError`, saying what to do, when npm is missing or cannot fetch them.
    """
    try:
        return fetch_packages(VENDOR, root / "build" / "site-vendor")
    except SiteError as error:
        raise SiteError(
            "the site's JavaScript (require.js, the Jupyter widget manager, MathJax) could not be "
            f"fetched: {error}. `make site` needs npm (`apt-get install -y npm`) and the npm "
            f"registry once; after that it works offline from {root / 'build' / 'site-vendor'}/."
        ) from None


def image_alt(cell: Any) -> str | None:
    """The text alternative of the picture(s) a notebook ``cell`` (an ``nbformat`` node) shows: its
    ``mystnb.image.alt``, else the ``alt`` that IPython keeps in its image outputs' metadata; None
    when it has neither. The site gives it to the pictures' ``<img>``.

    Raises `SiteError` when the cell's images have different alts: myst-nb gives every image of a
    cell the same one, so such a cell must be split.
    """
    given = cell.metadata.get("mystnb", {}).get("image", {}).get("alt")
    if given:
        return str(given)
    alts = {
        str(output.metadata[mime]["alt"])
        for output in cell.get("outputs", [])
        for mime in output.get("data", {})
        if mime.startswith("image/") and output.get("metadata", {}).get(mime, {}).get("alt")
    }
    if len(alts) > 1:
        raise SiteError(
            "a cell shows pictures with different alt texts, but the site can give a cell's "
            f"pictures one alt: split it into one cell per picture ({sorted(alts)[0][:60]!r}...)"
        )
    return alts.pop() if alts else None


def _html_files(html_dir: Path) -> list[Path]:
    """Every HTML file the site serves as a page (``_static/`` holds the theme's templates)."""
    return sorted(
        p for p in html_dir.rglob("*.html") if p.relative_to(html_dir).parts[0] != "_static"
    )


# What Sphinx adds at the top of the site: the search, the two indexes, and the ``index.html``
# that leads to the start page.
_SPHINX_PAGES = frozenset({"index.html", "search.html", "genindex.html", "py-modindex.html"})


def site_pages(html_dir: Path) -> list[Path]:
    """The site's pages: the pages of ``docs/``, ``CONTRIBUTING.md``'s, the lessons and the
    exercises (not what Sphinx adds, `_SPHINX_PAGES`)."""
    return [
        p for p in _html_files(html_dir) if p.relative_to(html_dir).as_posix() not in _SPHINX_PAGES
    ]


def build(root: Path, out: Path, repository: str | None = None) -> Path:
    """Build the site from ``root/docs`` into ``out/html`` (from scratch, warnings are errors),
    with launch links to ``repository`` (see `site_repository`: None reads the environment, then
    pyproject.toml; "" means no links).

    Returns the HTML folder; raises `SiteError` with Sphinx's output when the build fails, and
    with `LaunchSettingError`'s message, before building, for a repository URL it cannot use.
    """
    docs = root / "docs"
    if not (docs / "conf.py").is_file():
        raise SiteError(f"{docs}/conf.py is missing: run this in the course folder or pass --root")
    repo = site_repository(root, repository)
    # docs/conf.py reads it back with site_repository: the same repository, or none.
    environment = {**os.environ, REPOSITORY_VARIABLE: "" if repo is None else repo.url}
    vendor_static(root)
    html_dir, doctrees = out / "html", out / "doctrees"
    for stale in (html_dir, doctrees):
        if stale.exists():
            shutil.rmtree(stale)
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-E",
        "-b",
        "html",
        "-c",
        str(docs),
        "-d",
        str(doctrees),
        str(root),
        str(html_dir),
    ]
    result = subprocess.run(
        command, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=environment
    )
    if result.returncode != 0:
        raise SiteError(
            f"sphinx-build failed (exit {result.returncode}):\n{result.stdout}{result.stderr}"
        )
    return html_dir


# ---------------------------------------------------------------------------------------------
# Links

_LOADS = {
    ("script", "src"),
    ("link", "href"),
    ("img", "src"),
    ("iframe", "src"),
    ("source", "src"),
    ("video", "src"),
    ("audio", "src"),
    ("embed", "src"),
    ("object", "data"),
}


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, value)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name == "id" or (tag == "a" and name == "name"):
                self.ids.add(value)
            if (tag, name) in _LOADS or (tag == "a" and name == "href"):
                self.links.append((tag, name, value))


@dataclass
class LinkReport:
    """What `check_links` found: broken internal links, loads from outside, external links."""

    broken: list[str] = field(default_factory=list)
    outside_loads: list[str] = field(default_factory=list)
    external: list[str] = field(default_factory=list)


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        cache[path] = page
    return cache[path]


def check_links(html_dir: Path) -> LinkReport:
    """Check every link, script, style sheet and image of every HTML file under ``html_dir``.

    An internal reference must name an existing file (and, in a page, an existing ``id``);
    ``data:``, ``mailto:`` and ``javascript:`` ones are skipped; anything with a host is an
    outside load (for scripts, styles, images, frames) or an external link (for ``<a>``).
    """
    report = LinkReport()
    pages: dict[Path, _Page] = {}
    external: set[str] = set()
    root = html_dir.resolve()
    for path in _html_files(root):
        where = path.relative_to(root).as_posix()
        for tag, attribute, value in _parse(path, pages).links:
            url = urllib.parse.urlsplit(value.strip())
            if url.scheme in ("data", "mailto", "javascript", "about"):
                continue
            if url.scheme or url.netloc:
                if tag == "a":
                    external.add(value)
                else:
                    report.outside_loads.append(f"{where}: <{tag} {attribute}={value!r}>")
                continue
            target = path
            if url.path:
                relative = urllib.parse.unquote(url.path)
                if relative.startswith("/"):
                    report.broken.append(
                        f"{where}: {value!r} is absolute; the site must work from any folder"
                    )
                    continue
                joined = posixpath.normpath(
                    posixpath.join(path.parent.relative_to(root).as_posix(), relative)
                )
                target = root / joined
                if target.is_dir():
                    target = target / "index.html"
                if joined.startswith("..") or not target.is_file():
                    report.broken.append(f"{where}: {value!r}: no file {joined}")
                    continue
            if url.fragment and target.suffix == ".html":
                fragment = urllib.parse.unquote(url.fragment)
                if fragment not in _parse(target, pages).ids:
                    report.broken.append(
                        f"{where}: {value!r}: no id {fragment!r} in "
                        f"{target.relative_to(root).as_posix()}"
                    )
    report.external = sorted(external)
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point; returns the exit status (see the module docstring)."""
    parser = argparse.ArgumentParser(
        prog="python -m course_tools.authoring.site",
        description="Build the course's website from the committed notebooks and check its links.",
    )
    parser.add_argument("--root", type=Path, default=Path("."), help="course folder (default: .)")
    parser.add_argument(
        "--out", type=Path, default=None, help="output folder (default: ROOT/build/site)"
    )
    parser.add_argument(
        "--repository",
        default=None,
        help="GitHub URL the Binder and Colab links open; '' for none (default: "
        f"${REPOSITORY_VARIABLE}, else [project.urls] Repository in pyproject.toml)",
    )
    args = parser.parse_args(argv)
    root = args.root.resolve()
    out = (args.out or root / "build" / "site").resolve()
    start = time.monotonic()
    try:
        html_dir = build(root, out, args.repository)
    except SiteError as error:
        print(f"The site was not built: {error}", file=sys.stderr)
        return 2
    seconds = time.monotonic() - start
    report = check_links(html_dir)
    (out / "external-links.txt").write_text(
        "".join(f"{link}\n" for link in report.external), encoding="utf-8"
    )
    print(
        f">> {len(site_pages(html_dir))} pages in {html_dir}/ in {seconds:.1f} s; open index.html"
    )
    print(
        f">> {len(report.external)} external links, not checked (no network): "
        f"{out}/external-links.txt"
    )
    for problem in report.broken + report.outside_loads:
        print(problem, file=sys.stderr)
    if report.broken or report.outside_loads:
        print(
            f"{len(report.broken)} broken links, {len(report.outside_loads)} loads from outside "
            "the site",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
