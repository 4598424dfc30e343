"""The course's website, as `make site` builds it: Sphinx warnings are errors, one page per
notebook, previous and next in reading order, no solution code anywhere, whole internal links,
nothing loaded from outside the site, the start page's four doors, each role page whole, and the
pitfall index and the widgets built from the course's own files.

The site is built once for this module (about 10 s of CPU), with Binder and Colab links to
site_support.TEST_REPOSITORY. tests/browser/test_site.py opens it in Chromium.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import posixpath
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from site_support import (
    REFERENCE_PAGES,
    ROOT,
    START_PAGE,
    TEST_REPOSITORY,
    build_site,
    course_notebooks,
    html_text,
    leaks,
    reading_order,
    says_what_it_shows,
    solution_regions,
    solution_secrets,
    start_tags,
)

from course_lib._shown_errors import declared_error
from course_tools.authoring import site

pytestmark = pytest.mark.slow

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


@pytest.fixture(scope="module")
def html_dir() -> Path:
    return build_site()


def _page(html_dir: Path, name: str) -> str:
    return (html_dir / f"{name}.html").read_text(encoding="utf-8")


def _notebook(name: str) -> dict:
    return json.loads((ROOT / f"{name}.ipynb").read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


# ---------------------------------------------------------------------------------------------
# Pages


def test_every_notebook_has_exactly_one_page(html_dir: Path) -> None:
    pages = [p.relative_to(html_dir).with_suffix("").as_posix() for p in site.site_pages(html_dir)]
    assert sorted(pages) == sorted(reading_order())
    assert len(course_notebooks()) >= 13  # 7 lessons and 6 exercise notebooks at least
    assert not list(html_dir.rglob("*solution*")), "a file of solutions/ reached the site"


def test_each_notebook_page_has_its_title(html_dir: Path) -> None:
    for name in course_notebooks():
        title = next(
            line[2:].strip()
            for cell in _notebook(name)["cells"]
            if cell["cell_type"] == "markdown"
            for line in _source(cell).splitlines()
            if line.startswith("# ")
        )
        headings = re.findall(r"<h1>(.*?)</h1>", _page(html_dir, name), re.S)
        texts = [
            " ".join(html_text(h).split()).removesuffix(" #").removesuffix("#") for h in headings
        ]
        assert title.replace("`", "") in texts, f"{name}: no h1 {title!r} among {texts}"


def _title(html_dir: Path, name: str) -> str:
    match = re.search(r"<title>(.*?)</title>", _page(html_dir, name), re.S)
    return " ".join(html_text(match.group(1)).split()) if match else ""


def test_each_page_has_a_title_that_names_it_once(html_dir: Path) -> None:
    """The start page is titled with the site's name alone (its heading is that name); every other
    page with its own heading, then the site's name: no title says a name twice, none is shared."""
    titles = {name: _title(html_dir, name) for name in reading_order()}
    site_name = titles.pop(START_PAGE)
    assert site_name and " — " not in site_name, site_name
    for name, title in titles.items():
        heading = title.removesuffix(f" — {site_name}")
        assert heading != title and heading and heading != site_name, f"{name}: {title!r}"
    assert len(set(titles.values())) == len(titles), "two pages share a title"


def _prev_next(html_dir: Path, name: str) -> dict[str, str]:
    """The pages that ``name``'s "previous" and "next" links open, as names like its own."""
    return {
        side: posixpath.normpath(
            posixpath.join(posixpath.dirname(name), link["href"] or "")
        ).removesuffix(".html")
        for link in start_tags(_page(html_dir, name), "a")
        for side in ("left-prev", "right-next")
        if side in (link.get("class") or "").split()
    }


def test_previous_and_next_walk_the_pages_in_order(html_dir: Path) -> None:
    order = reading_order()
    walked = {name: _prev_next(html_dir, name) for name in order}
    assert "left-prev" not in walked[order[0]] and "right-next" not in walked[order[-1]]
    for here, following in itertools.pairwise(order):
        assert walked[here].get("right-next") == following, here
        assert walked[following].get("left-prev") == here, following


def test_every_picture_on_the_site_says_what_it_shows(html_dir: Path) -> None:
    """A notebook's pictures carry their text alternative (tests/course/test_notebooks.py) to the
    page's ``<img alt>``; the theme's own images (the logos in the launch menu) name themselves."""
    bad = [
        f"{name}: {image.get('src')} alt={image.get('alt')!r}"
        for name in reading_order()
        for image in start_tags(_page(html_dir, name), "img")
        if not (
            says_what_it_shows(image.get("alt"))
            or (image.get("alt") or "").endswith(("logo", "logo image"))
        )
    ]
    assert not bad, "pictures without a text alternative:\n" + "\n".join(bad)
    pictures = sum(
        "_images/" in (image.get("src") or "")
        for name in course_notebooks()
        for image in start_tags(_page(html_dir, name), "img")
    )
    assert pictures >= 14  # the lessons' pictures, each with its alt


def test_top_index_leads_to_the_start_page(html_dir: Path) -> None:
    top = (html_dir / "index.html").read_text(encoding="utf-8")
    assert f'url={START_PAGE}.html"' in top
    assert (html_dir / f"{START_PAGE}.html").is_file()


def test_download_link_serves_the_committed_notebook(html_dir: Path) -> None:
    for name in course_notebooks():
        page = _page(html_dir, name)
        depth = "../" * name.count("/")
        link = f'href="{depth}_sources/{name}.ipynb"'
        assert link in page, f"{name}: no download link {link}"
        served = html_dir / "_sources" / f"{name}.ipynb"
        assert served.read_bytes() == (ROOT / f"{name}.ipynb").read_bytes(), name


# ---------------------------------------------------------------------------------------------
# Solutions


def _site_texts(html_dir: Path) -> Iterator[tuple[str, str]]:
    """(file, text) for everything the site serves that is made from the course: pages (as
    text), sources, search index. _static/ holds only the theme's and the vendored files."""
    for path in sorted(html_dir.rglob("*")):
        relative = path.relative_to(html_dir)
        if not path.is_file() or relative.parts[0] == "_static" or path.suffix in (".png", ".inv"):
            continue
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".html":
            text = html_text(text)
        elif path.suffix == ".ipynb":
            text = "\n".join(_source(cell) for cell in json.loads(text)["cells"])
        yield relative.as_posix(), text


def test_no_solution_code_anywhere_on_the_site(html_dir: Path) -> None:
    secrets = solution_secrets()
    regions = solution_regions()
    assert len(regions) >= 6, "expected the solution regions of six solution notebooks at least"
    solutions_with_secrets = {secret.where.split(",")[0] for secret in secrets}
    assert solutions_with_secrets == {where.split(",")[0] for where, _ in regions}
    found = []
    for where, text in _site_texts(html_dir):
        found += [
            f"{where}: {secret.text!r} (from {secret.where})" for secret in leaks(text, secrets)
        ]
    assert not found, "solution code on the site:\n" + "\n".join(found)


def test_the_leak_check_finds_a_solution_line_in_a_page() -> None:
    secret = max(solution_secrets(), key=lambda s: len(s.text))
    words = secret.text.split(" ")
    page = "<pre>" + "".join(f'<span class="n">{w}</span>\n  ' for w in words) + "</pre>"
    assert leaks(html_text(page), [secret]) == [secret]
    assert leaks(html_text("<pre>raise NotImplementedError()</pre>"), [secret]) == []


# ---------------------------------------------------------------------------------------------
# Links and loads


def test_internal_links_resolve_and_nothing_loads_from_outside(
    html_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = site.check_links(html_dir)
    assert not report.broken, "\n".join(report.broken)
    assert not report.outside_loads, "\n".join(report.outside_loads)
    with capsys.disabled():
        print(f"\n{len(report.external)} external links on the site, not checked (no network):")
        for link in report.external:
            print(f"  {link}")


def test_the_link_check_reports_what_is_wrong(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "page.html").write_text(
        '<p id="here">x</p><a href="#here">ok</a><a href="../b.html#there">ok</a>'
        '<a href="../missing.html">broken</a><a href="../b.html#nowhere">bad anchor</a>'
        '<a href="https://example.org/x">external</a><script '
        'src="https://cdn.example.org/x.js"></script>'
        '<img src="data:image/png;base64,AAAA"><link href="../style.css" rel="stylesheet">'
    )
    (tmp_path / "b.html").write_text('<h1 id="there">b</h1>')
    (tmp_path / "style.css").write_text("")
    report = site.check_links(tmp_path)
    assert report.broken == [
        "a/page.html: '../missing.html': no file missing.html",
        "a/page.html: '../b.html#nowhere': no id 'nowhere' in b.html",
    ]
    assert report.outside_loads == ["a/page.html: <script src='https://cdn.example.org/x.js'>"]
    assert report.external == ["https://example.org/x"]


def test_pages_use_the_vendored_javascript(html_dir: Path) -> None:
    lesson = _page(html_dir, "notebooks/02_mapping_and_sgd")  # math and a widget
    for script in (
        "vendor/requirejs/require.js",
        "vendor/html-manager/embed-amd.js",
        "vendor/mathjax/tex-mml-chtml.js",
    ):
        assert f'src="../_static/{script}' in lesson, script
        assert (html_dir / "_static" / script).is_file()
    assert 'data-jupyter-widgets-cdn="about:blank/"' in lesson
    manifest = (html_dir / "_static" / "vendor" / "VENDORED.txt").read_text()
    for package in site.VENDOR:
        assert f"{package.spec}  licence {package.licence}" in manifest


# ---------------------------------------------------------------------------------------------
# Launch links

_LAUNCH_HREF = re.compile(r'href="(https://(?:mybinder\.org|colab\.research\.google\.com)/[^"]*)"')


def test_lesson_and_exercise_pages_launch_binder_and_colab(html_dir: Path) -> None:
    """Written out here, not taken from course_tools.authoring.launch: the addresses Binder and
    Colab understand."""
    assert TEST_REPOSITORY == "https://github.com/example-org/pytree-course"
    for name in course_notebooks():
        assert sorted(_LAUNCH_HREF.findall(_page(html_dir, name))) == [
            f"https://colab.research.google.com/github/example-org/pytree-course/blob/main/{name}.ipynb",
            f"https://mybinder.org/v2/gh/example-org/pytree-course/main?labpath={name}.ipynb",
        ], name
    for name in (START_PAGE, *REFERENCE_PAGES):
        assert _LAUNCH_HREF.findall(_page(html_dir, name)) == [], name


def test_without_a_repository_there_are_no_launch_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(site.REPOSITORY_VARIABLE, raising=False)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "pytree-course"\n')
    assert site.site_repository(tmp_path) is None
    assert site.site_repository(tmp_path / "no-course-here") is None
    for name in course_notebooks():
        assert site.launch_links(None, f"{name}.ipynb") == [], name
    # An empty setting outweighs pyproject.toml's.
    (tmp_path / "pyproject.toml").write_text(
        '[project.urls]\nRepository = "https://github.com/octo/pytree-course"\n'
    )
    assert site.site_repository(tmp_path) is not None
    assert site.site_repository(tmp_path, "") is None
    monkeypatch.setenv(site.REPOSITORY_VARIABLE, "")
    assert site.site_repository(tmp_path) is None
    monkeypatch.setenv(site.REPOSITORY_VARIABLE, "https://github.com/elsewhere/course.git")
    repo = site.site_repository(tmp_path)
    assert repo is not None and repo.url == "https://github.com/elsewhere/course"


def test_a_repository_that_is_not_on_github_fails_the_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "conf.py").write_text("")
    need = r"launch links need a GitHub repository URL such as https://github\.com/OWNER/REPO"
    monkeypatch.delenv(site.REPOSITORY_VARIABLE, raising=False)
    with pytest.raises(site.SiteError, match=rf"'https://gitlab\.com/o/r'; {need}.*argument"):
        site.build(tmp_path, tmp_path / "out", repository="https://gitlab.com/o/r")
    monkeypatch.setenv(site.REPOSITORY_VARIABLE, "github.com/o/r")
    with pytest.raises(site.SiteError, match=rf"{need}.*\$COURSE_REPOSITORY_URL"):
        site.build(tmp_path, tmp_path / "out")
    monkeypatch.delenv(site.REPOSITORY_VARIABLE)
    (tmp_path / "pyproject.toml").write_text('[project.urls]\nRepository = "octo/course"\n')
    with pytest.raises(site.SiteError, match=rf"^\[project\.urls\] Repository .*{need}"):
        site.build(tmp_path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def _course_site() -> Any:
    """docs/_ext/course_site.py, the Sphinx extension (not a package module)."""
    spec = importlib.util.spec_from_file_location("course_site", ROOT / "docs/_ext/course_site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pages_leave_out_the_colab_badge() -> None:
    """Its image is on colab.research.google.com: the site would load it from outside."""
    badge = (
        "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]"
        "(https://colab.research.google.com/github/o/r/blob/main/notebooks/00_start_here.ipynb)"
    )
    nb = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {},
        "cells": [
            {"cell_type": "markdown", "id": "a", "metadata": {}, "source": f"# Hi\n\n{badge}"}
        ],
    }
    page = _course_site().site_notebook(json.dumps(nb))
    assert page.cells[0].source == "# Hi"


# ---------------------------------------------------------------------------------------------
# Generated from the course's files

_PITFALL = re.compile(r"^### Pitfall (\d+): (.+)$", re.M)


def test_pitfall_index_links_every_numbered_pitfall_heading(html_dir: Path) -> None:
    expected = {}
    for name in course_notebooks():
        if name.startswith("notebooks/"):
            for cell in _notebook(name)["cells"]:
                if cell["cell_type"] == "markdown":
                    for number, title in _PITFALL.findall(_source(cell)):
                        expected[int(number)] = (name, title.replace("`", ""))
    assert len(expected) >= 16
    index = _page(html_dir, "docs/pitfalls")
    rows = re.findall(
        r"<tr class=\"row-(?:odd|even)\"><td><p>(\d+)</p></td>\s*<td><p>(.*?)</p></td>", index, re.S
    )
    assert [int(number) for number, _ in rows] == sorted(expected)
    for number, cell in rows:
        lesson, title = expected[int(number)]
        link = re.search(r'href="([^"]+)"', cell)
        assert link is not None, cell
        href = link.group(1)
        assert href == f"../{lesson}.html#pitfall-{number}"
        assert " ".join(html_text(cell).split()) == title
        target = _page(html_dir, lesson)
        section = re.search(
            rf'<section id="pitfall-{number}">\s*(?:<span id="[^"]*"></span>)*<h3>(.*?)<a ',
            target,
            re.S,
        )
        assert section is not None, f"{lesson}: no section with the anchor pitfall-{number}"
        assert " ".join(html_text(section.group(1)).split()) == f"Pitfall {number}: {title}"


CODE_COLUMNS = 85
"""The characters of a code line that the site's content column shows whole on a 1366 px laptop
screen (14 px DejaVu Sans Mono in 721 px; tests/browser/test_site_browser.py checks the lessons'
pages there)."""


def test_code_cells_fit_the_sites_column() -> None:
    """Every line of the lessons', the solutions' and the exercises' code cells (an exercise's
    stubs are its own lines) fits the site's column, as the JAX documentation keeps its code near
    80 columns; hidden setup cells, which the site leaves out or folds, are not read."""
    too_long = []
    for folder in ("notebooks", "solutions", "exercises"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
                if cell["cell_type"] != "code" or cell["metadata"].get("jupyter", {}).get(
                    "source_hidden"
                ):
                    continue
                too_long += [
                    f"{folder}/{path.name} cell {index}: {len(line)} characters: {line.strip()}"
                    for line in _source(cell).splitlines()
                    if len(line) > CODE_COLUMNS
                ]
    assert not too_long, f"code lines over {CODE_COLUMNS} characters:\n  " + "\n  ".join(too_long)


def test_the_pitfall_index_and_the_api_page_show_what_a_reader_needs(html_dir: Path) -> None:
    """No instructions for the course's authors on the pitfall index, and no reST markup left
    unrendered (a literal that starts with a space shows its backticks) on the API page."""
    pitfalls = html_text(_page(html_dir, "docs/pitfalls").split("<article", 1)[1])
    assert "make navigation" not in pitfalls
    api = html_text(_page(html_dir, "docs/api").split("<article", 1)[1])
    assert "``" not in api, api[api.index("``") - 60 : api.index("``") + 60]


ROLE_PAGES = ("docs/learner", "docs/instructor", "docs/grader", "docs/author")


def test_the_start_page_leads_with_a_door_for_each_role(html_dir: Path) -> None:
    article = _page(html_dir, START_PAGE).split("<article", 1)[1]
    links = [tag["href"] for tag in start_tags(article, "a") if tag.get("class") != "headerlink"]
    assert links[:4] == [f"{name.removeprefix('docs/')}.html" for name in ROLE_PAGES]


def test_each_role_page_shows_all_of_its_markdown(html_dir: Path) -> None:
    """Every heading of each role page's source is on its page, and so is every heading of
    CONTRIBUTING.md, a page of its own that the authors' page links to."""
    assert 'href="../CONTRIBUTING.html"' in _page(html_dir, "docs/author")
    for name in (*ROLE_PAGES, "CONTRIBUTING"):
        source = (ROOT / f"{name}.md").read_text(encoding="utf-8")
        shown = {
            " ".join(html_text(heading).split()).removesuffix("#").strip()
            for _, heading in re.findall(r"<h([1-4])>(.*?)</h\1>", _page(html_dir, name), re.S)
        }
        headings = re.findall(r"^#{1,4} (.+)$", source, re.M)
        assert len(headings) >= 3, name
        missing = [h for h in headings if h.replace("`", "") not in shown]
        assert not missing, f"{name}: headings not shown as headings: {missing}"
    grader = html_text(_page(html_dir, "docs/grader"))
    assert "Grading on Gradescope" in grader and "What the grader defends" in grader
    instructor = html_text(_page(html_dir, "docs/instructor"))
    assert "What the room defends" in instructor and "git-pull?repo=" in instructor


def test_widgets_render_from_saved_state_with_a_note(html_dir: Path) -> None:
    with_widgets = 0
    for name in course_notebooks():
        nb = _notebook(name)
        views = [
            output["data"][WIDGET_VIEW]["model_id"]
            for cell in nb["cells"]
            if cell["cell_type"] == "code"
            for output in cell.get("outputs", [])
            if WIDGET_VIEW in output.get("data", {})
        ]
        page = _page(html_dir, name)
        assert page.count("course-widget-note") == len(views), name
        if not views:
            continue
        with_widgets += 1
        state = re.search(rf'<script type="{re.escape(WIDGET_STATE)}">(.*?)</script>', page, re.S)
        assert state is not None, f"{name}: no saved widget state on the page"
        models = json.loads(state.group(1))["state"]
        for model_id in views:
            assert model_id in models, f"{name}: widget {model_id} has no saved state"
            assert re.search(
                rf'<script type="{re.escape(WIDGET_VIEW)}">\s*{{[^<]*"{model_id}"', page
            ), model_id
    assert with_widgets >= 2  # the tree explorer (01) and the training playground (02)


def test_tracebacks_are_as_short_as_in_the_notebooks(html_dir: Path) -> None:
    """A page shows each error its notebook shows, as short: the deliberate errors of a lesson
    (cells that declare them, ``# Raises TypeError``) as the one line each printed."""
    for name in course_notebooks():
        nb = _notebook(name)
        code = [cell for cell in nb["cells"] if cell["cell_type"] == "code"]
        errors = [o for c in code for o in c.get("outputs", []) if o["output_type"] == "error"]
        page = html_text(_page(html_dir, name))
        stored = sum(
            "Traceback (most recent call last)" in "\n".join(e["traceback"]) for e in errors
        )
        assert page.count("Traceback (most recent call last)") == stored, name
        lines = [re.sub(r"\x1b\[[0-9;]*m", "", e["traceback"][-1]) for e in errors]
        lines += [
            "".join(output["text"])
            for cell in code
            if declared_error(_source(cell))
            for output in cell.get("outputs", [])
            if output.get("name") == "stderr"
        ]
        for text in lines:
            last = text.strip().splitlines()[-1]
            assert " ".join(last.split()) in " ".join(page.split()), f"{name}: {last!r}"


def test_hidden_setup_cells_stay_hidden(html_dir: Path) -> None:
    for name in course_notebooks():
        page = html_text(_page(html_dir, name))
        assert "Generated by `make navigation`" not in page, name
        assert 'run_line_magic("xmode"' not in page, name


def test_reference_pages_exist_and_api_page_documents_course_lib(html_dir: Path) -> None:
    import course_lib

    for name in REFERENCE_PAGES:
        assert (html_dir / f"{name}.html").is_file()
    api = _page(html_dir, "docs/api")
    public = [
        name
        for name in vars(course_lib)
        if not name.startswith("_")
        and callable(getattr(course_lib, name))
        and not isinstance(getattr(course_lib, name), type(course_lib))
    ]
    assert len(public) >= 30
    for name in public:
        assert f'id="course_lib.{name}"' in api, f"course_lib.{name} is not on the API page"
    assert api.count('class="doctest highlight-default notranslate"') >= 10
    assert "Alias for field number" not in api  # Python's filler for NamedTuple fields
    for name in ("viz.TreeExplorer", "viz.TrainingPlayground", "checks.check", "checks.progress"):
        assert f'id="course_lib.{name}"' in api, name


def test_notebook_links_to_readme_go_to_the_start_page(html_dir: Path) -> None:
    page = _page(html_dir, "notebooks/01_what_is_a_pytree")
    assert "README.md" not in page
    assert re.search(
        r'<a class="reference internal" href="../docs/index.html"><span class="std '
        r'std-doc">Contents',
        page,
    )
    assert 'href="../exercises/01_what_is_a_pytree.html"' in page


# ---------------------------------------------------------------------------------------------
# The vendored JavaScript


def test_vendor_fetch_without_npm_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-npm-here"))
    with pytest.raises(
        site.SiteError,
        match=r"npm is not installed\. `make site` needs npm \(`apt-get install -y npm`\)",
    ):
        site.vendor_static(tmp_path)
    assert not (tmp_path / "build" / "site-vendor" / "static").exists()


def test_vendor_fetch_refuses_a_tarball_that_does_not_match_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forged(package: site.VendorPackage, folder: Path) -> Path:
        tarball = folder / "forged.tgz"
        tarball.write_bytes(b"not the package")
        return tarball

    monkeypatch.setattr(site, "_npm_pack", forged)
    with pytest.raises(
        site.SiteError, match=r"requirejs@2\.3\.8 from npm does not match its pinned integrity hash"
    ):
        site.vendor_static(tmp_path)
    assert not (tmp_path / "build" / "site-vendor" / "static").exists()


def test_vendored_files_are_reused_offline(
    html_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "no-npm-here"))  # html_dir's build fetched them
    static = site.vendor_static(ROOT)
    assert (static / "vendor" / "html-manager" / "embed-amd.js").is_file()


def test_a_sphinx_warning_fails_the_build(html_dir: Path, tmp_path: Path) -> None:
    """A copy of the course whose first lesson links a page that does not exist and shows an
    image that does not exist, and whose learners' page links a heading that the instructors'
    page does not have: the build fails, naming the three, and nothing else."""
    for part in ("docs", "notebooks", "exercises"):
        shutil.copytree(ROOT / part, tmp_path / part)
    shutil.copy2(ROOT / "CONTRIBUTING.md", tmp_path / "CONTRIBUTING.md")  # the authors' page
    lesson = tmp_path / "notebooks" / "00_start_here.ipynb"
    nb = json.loads(lesson.read_text(encoding="utf-8"))
    nb["cells"].insert(
        2,
        {
            "cell_type": "markdown",
            "id": "broken",
            "metadata": {},
            "source": "See [lesson 09](09_missing.ipynb).\n\n![a plot](missing.png)",
        },
    )
    lesson.write_text(json.dumps(nb), encoding="utf-8")
    learner = tmp_path / "docs" / "learner.md"
    learner.write_text(
        learner.read_text(encoding="utf-8") + "\nSee [the room](instructor.md#no-such-heading).\n",
        encoding="utf-8",
    )
    (tmp_path / "build").mkdir()
    # The JavaScript html_dir's build fetched: no second download.
    (tmp_path / "build" / "site-vendor").symlink_to(ROOT / "build" / "site-vendor")
    with pytest.raises(site.SiteError) as failed:
        site.build(tmp_path, tmp_path / "out")
    warnings = [
        line for line in str(failed.value).splitlines() if "WARNING" in line or "ERROR" in line
    ]
    assert len(warnings) == 3, warnings
    in_lesson = [line for line in warnings if "notebooks/00_start_here.ipynb" in line]
    assert len(in_lesson) == 2, warnings
    assert "09_missing.ipynb" in " ".join(in_lesson) and "missing.png" in " ".join(in_lesson)
    (in_page,) = [line for line in warnings if "docs/learner.md" in line]
    assert "no-such-heading" in in_page, in_page
