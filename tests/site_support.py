"""What the site tests (tests/authoring/test_site.py, tests/browser/) expect of the built site,
worked out from the course's files, not from the site's own code: which pages there must be, in
which order, and which solution lines must appear on none of them. The tests' site is built with
launch links to `TEST_REPOSITORY`, whatever pyproject.toml says."""

from __future__ import annotations

import fcntl
import hashlib
import html.parser
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from course_tools.authoring.exercises import BEGIN_MARKER, END_MARKER, SOLUTION_ONLY_TAG
from course_tools.authoring.site import build

ROOT = Path(__file__).resolve().parents[1]
START_PAGE = "docs/index"
REFERENCE_PAGES = (
    "docs/learner",
    "docs/pitfalls",
    "docs/instructor",
    "docs/facilitator",
    "docs/grader",
    "docs/author",
    "docs/api",
    "CONTRIBUTING",
)
# The repository the tests' site has its Binder and Colab links to (not the course's own setting).
TEST_REPOSITORY = "https://github.com/example-org/pytree-course"
# Shorter solution lines ("return y", ")") also occur in ordinary prose and code.
MIN_SECRET_CHARS = 12


def course_notebooks() -> list[str]:
    """Every lesson and exercise notebook, as its page name: ``notebooks/01_what_is_a_pytree``."""
    return [
        path.relative_to(ROOT).with_suffix("").as_posix()
        for folder in ("notebooks", "exercises")
        for path in sorted((ROOT / folder).glob("*.ipynb"))
    ]


def reading_order() -> list[str]:
    """The pages in the order previous/next walk them: start, lessons, exercises, reference."""
    return [START_PAGE, *course_notebooks(), *REFERENCE_PAGES]


def _checkout_digest() -> str | None:
    """A digest of every file git would commit here (tracked, or new and not ignored), names and
    contents; None outside a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    digest = hashlib.sha256(TEST_REPOSITORY.encode())
    for name in sorted(set(listed.decode().split("\0")) - {""}):
        path = ROOT / name
        if path.is_file():  # a tracked file deleted in the work tree is simply not there
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_site() -> Path:
    """The site as `make site` builds it, with launch links to `TEST_REPOSITORY`; returns its HTML
    folder.

    Built once per state of the checkout: kept in ``build/test-site/DIGEST/`` (see
    `_checkout_digest`), so that the site tests and the browser tests, in separate pytest runs,
    share one build, and any change to any file of the course builds it again.
    """
    key = _checkout_digest()
    cache = ROOT / "build" / "test-site"
    if key is None:
        cache.mkdir(parents=True, exist_ok=True)
        return build(ROOT, Path(tempfile.mkdtemp(dir=cache)), repository=TEST_REPOSITORY)
    done = cache / key
    cache.mkdir(parents=True, exist_ok=True)
    # `make test` runs the site tests and the browser tests at the same time: the second to ask
    # waits here for the first one's build instead of building the same site again.
    with open(cache / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (done / "html" / "index.html").is_file():
            for old in cache.iterdir():  # builds of earlier states of the checkout
                if old.name != "lock" and not old.name.startswith(key):
                    shutil.rmtree(old, ignore_errors=True)
            building = Path(tempfile.mkdtemp(dir=cache, prefix=f"{key}-building-"))
            build(ROOT, building, repository=TEST_REPOSITORY)
            building.rename(done)
    return done / "html"


def _normal(line: str) -> str:
    return " ".join(line.split())


def _sources(path: Path) -> list[tuple[str, list[str]]]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return [
        (
            "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"],
            cell["metadata"].get("tags", []),
        )
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
    ]


def solution_regions() -> list[tuple[str, list[str]]]:
    """Every answer in ``solutions/``: each region between the markers, and each cell tagged
    ``solution-only``, as ``(where, lines)``."""
    regions = []
    for path in sorted((ROOT / "solutions").glob("*.ipynb")):
        for index, (source, tags) in enumerate(_sources(path)):
            where = f"solutions/{path.name}, code cell {index}"
            if SOLUTION_ONLY_TAG in tags:
                regions.append((where, source.split("\n")))
                continue
            region: list[str] | None = None
            for line in source.split("\n"):
                if line.strip() == BEGIN_MARKER:
                    region = []
                elif line.strip() == END_MARKER and region is not None:
                    regions.append((where, region))
                    region = None
                elif region is not None:
                    region.append(line)
    return regions


def _public_sources() -> list[str]:
    sources = []
    for folder in ("notebooks", "exercises"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            nb = json.loads(path.read_text(encoding="utf-8"))
            for cell in nb["cells"]:
                source = cell["source"]
                sources.append("".join(source) if isinstance(source, list) else source)
    return sources


@dataclass(frozen=True)
class Secret:
    where: str
    text: str


def solution_secrets() -> list[Secret]:
    """What must not be on the site: each solution line of at least `MIN_SECRET_CHARS` characters
    and each whole region of two lines or more, unless a lesson or exercise notebook contains
    that text too. The lessons and exercises are on the site by design: text that is also theirs
    gives nothing away."""
    public = "\n".join(_normal(source) for source in _public_sources())
    secrets = []
    for where, lines in solution_regions():
        normal = [_normal(line) for line in lines if line.strip()]
        secrets += [
            Secret(where, line)
            for line in normal
            if len(line) >= MIN_SECRET_CHARS and line not in public
        ]
        block = " ".join(normal)
        if len(normal) >= 2 and block not in public:
            secrets.append(Secret(where, block))
    return secrets


class _Tags(html.parser.HTMLParser):
    def __init__(self, name: str) -> None:
        super().__init__(convert_charrefs=True)
        self.name = name
        self.found: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == self.name:
            self.found.append(dict(attrs))


def start_tags(markup: str, name: str) -> list[dict[str, str | None]]:
    """The attributes of every ``<name ...>`` tag in ``markup``, in order."""
    parser = _Tags(name)
    parser.feed(markup)
    return parser.found


class _Text(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "style":
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "style" and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def html_text(markup: str) -> str:
    """The text of an HTML page, scripts included (widget state is a script), entities decoded."""
    parser = _Text()
    parser.feed(markup)
    return "".join(parser.parts)


def leaks(text: str, secrets: list[Secret]) -> list[Secret]:
    """The secrets that ``text`` contains, with all whitespace runs read as one space."""
    flat = _normal(text)
    return [secret for secret in secrets if secret.text in flat]


def says_what_it_shows(alt: str | None) -> bool:
    """Whether ``alt`` could tell a reader what a picture shows: not missing, not matplotlib's
    ``<Figure size ...>``, not a file name, and a sentence long."""
    return (
        alt is not None
        and not alt.startswith("<Figure")
        and not re.search(r"\.(png|svg|jpe?g)\b", alt)
        and len(alt.split()) >= 6
    )
