"""README.md, CONTRIBUTING.md and the website's pages in docs/, as a reader meets them: every
Python block runs as written (in a fresh namespace, in block order), every link to a file of the
repository leads to one, README stays a short front door, and it opens the same four doors as the
site's start page."""

import re
from pathlib import Path

import pytest
from page_support import PAGES, ROOT, page_text

BLOCK = re.compile(r"^ *```python\n(.*?)^ *```$", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
DOOR = re.compile(r"^- \*\*\[(\w+)\]\(([^)]+)\)\*\*: (.*?)(?=^- |\n\n)", re.DOTALL | re.MULTILINE)
ROLE_PAGES = ("docs/learner.md", "docs/instructor.md", "docs/grader.md", "docs/author.md")


def python_blocks(text: str) -> list[str]:
    """The code of each ```python fenced block of a Markdown text, indented ones (in a list item)
    included, with the indentation removed.

    >>> python_blocks("prose\\n```python\\nx = 1\\n```\\n```sh\\nls\\n```\\n")
    ['x = 1\\n']
    >>> python_blocks("1. Run:\\n\\n   ```python\\n   x = 1\\n   y = 2\\n   ```\\n")
    ['x = 1\\ny = 2\\n']
    """
    blocks = []
    for match in BLOCK.finditer(text):
        indent = len(match.group(0)) - len(match.group(0).lstrip(" "))
        blocks.append("".join(line[indent:] for line in match.group(1).splitlines(keepends=True)))
    return blocks


BLOCKS = [(page, source) for page in PAGES for source in python_blocks(page_text(page))]


def test_the_pages_have_python_blocks() -> None:
    assert {"docs/learner.md", "docs/api.md"} <= {page for page, _ in BLOCKS}


@pytest.mark.parametrize(
    "page, source", BLOCKS, ids=[f"{page}-block{i}" for i, (page, _) in enumerate(BLOCKS)]
)
def test_each_python_block_runs_as_written(
    page: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a learner runs it: checks print their verdict (under CI they would raise instead).
    monkeypatch.setenv("COURSE_STRICT_CHECKS", "0")
    exec(compile(source, page, "exec"), {"__name__": "__readme__"})


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub (and the site, `myst_heading_anchors`) makes it.

    >>> _slug("Opening a lesson online: Colab and Binder")
    'opening-a-lesson-online-colab-and-binder'
    """
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {
        _slug(line.lstrip("#"))
        for line in page.read_text(encoding="utf-8").splitlines()
        if re.match(r"#{1,6} ", line)
    }


@pytest.mark.parametrize("page", PAGES)
def test_links_to_the_repository_lead_to_its_files_and_headings(page: str) -> None:
    """As GitHub shows the page. (The site checks its own links when it is built.)"""
    broken = []
    for target in LINK.findall(page_text(page)):
        if re.match(r"[a-z]+:", target):
            continue  # an address on the web
        path, _, anchor = target.partition("#")
        file = (ROOT / page).parent / path if path else ROOT / page
        if not file.exists():
            broken.append(f"{target}: no file {path}")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {path or page}")
    assert not broken, f"{page}:\n  " + "\n  ".join(broken)


def test_the_readme_is_a_short_front_door() -> None:
    readme = page_text("README.md")
    assert len(readme.splitlines()) <= 200
    headings = re.findall(r"^## (.*)", readme, re.MULTILINE)
    assert headings == [
        "Two commands",
        "Colab and Binder",
        "The lessons",
        "One page for each of you",
    ]
    assert "```mermaid" in readme  # the picture


def test_the_readme_and_the_start_page_open_the_same_four_doors() -> None:
    readme = [
        (role, target, " ".join(text.split()))
        for role, target, text in DOOR.findall(page_text("README.md"))
    ]
    index = DOOR.findall(page_text("docs/index.md"))
    assert [target for _, target, _ in readme] == list(ROLE_PAGES)
    assert [
        (role, f"docs/{target}", " ".join(text.split())) for role, target, text in index
    ] == readme
    start = page_text("docs/index.md").split("\n\n")
    assert start[1].startswith("- **[Learners](learner.md)**")  # the doors come first
