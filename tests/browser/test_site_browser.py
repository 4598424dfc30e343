"""The course's website in Chromium, served from a loopback HTTP server with every other host
blocked: each page loads without errors, passes axe-core's WCAG 2.1 A and AA rules in the light and
the dark scheme, reflows at 320 px wide (no sideways scrolling), and shows its headings, code
cells, outputs and images; each role page is one click from the start page; the keyboard focus
shows at every stop of a lesson page; search finds lesson 04 for "static"; no solution code is on
any page; the widgets render from their saved state with no kernel and no network; the launch
menu of a lesson and of an exercise shows their Binder and Colab links; on a phone the menu button
opens the lesson list, and a laptop screen shows one search box. (Previous and next are checked in
the built HTML, by tests/authoring/test_site.py.)

(Not ``test_site.py``: tests/authoring/test_site.py has that name, and pytest refuses two test
modules of the same name in one run.)
"""

from __future__ import annotations

import functools
import http.server
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from axe import axe_problems
from lab_browser import (
    ACTION_TIMEOUT_MS,
    parse_stats,
    visible_focus_changes,
    whole_screenshots,
)
from site_support import ROOT, build_site, course_notebooks, leaks, reading_order, solution_secrets

if TYPE_CHECKING:
    from playwright.sync_api import ConsoleMessage, Request, Response

pytestmark = pytest.mark.browser

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
LOAD_TIMEOUT_MS = 120_000
QUIET_MS = 500


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


class _SiteHTTPServer(http.server.ThreadingHTTPServer):
    # socketserver's listen backlog is 5. Chromium opens several connections at once for a page's
    # scripts, fonts and images; on a busy machine the accepting thread falls behind, the kernel
    # drops the extra handshakes, and Chromium retries them for up to two minutes.
    request_queue_size = 128


@dataclass
class SiteServer:
    """The built site on a loopback HTTP server, and Chromium with every other host blocked."""

    base_url: str
    context: Any
    blocked: list[str] = field(default_factory=list)

    def url(self, name: str) -> str:
        return f"{self.base_url}/{name}.html"

    def name(self, url: str) -> str:
        return urllib.parse.urlsplit(url).path.lstrip("/").removesuffix(".html")


@pytest.fixture(scope="module")
def site(browser: Any) -> Iterator[SiteServer]:
    html_dir = build_site()
    handler = functools.partial(_QuietHandler, directory=str(html_dir))
    server = _SiteHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host = f"127.0.0.1:{server.server_address[1]}"
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, service_workers="block")
    served = SiteServer(f"http://{host}", context)

    def only_the_site(route: Any) -> None:
        if urllib.parse.urlsplit(route.request.url).netloc == host:
            route.continue_()
        else:
            served.blocked.append(route.request.url)
            route.abort("blockedbyclient")

    context.route("**/*", only_the_site)
    try:
        yield served
    finally:
        context.close()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@dataclass
class OpenPage:
    page: Any
    problems: list[str]


def _open(site: SiteServer, name: str, viewport: tuple[int, int] | None = None) -> OpenPage:
    page = site.context.new_page()
    if viewport is not None:
        page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    problems: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            problems.append(f"console error: {message.text}")

    def on_response(response: Response) -> None:
        if response.status >= 400:
            problems.append(f"HTTP {response.status}: {response.url}")

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.on("response", on_response)
    # Each request once, though two may ask for one URL. (Handlers are lambdas: Playwright marks
    # each handler it wraps, and a built-in method such as set.add cannot be marked.)
    pending: set[Request] = set()
    page.on("request", lambda r: pending.add(r))
    page.on("requestfinished", lambda r: pending.discard(r))
    page.on("requestfailed", lambda r: pending.discard(r))
    before = len(site.blocked)
    page.goto(site.url(name), wait_until="load")
    _wait_until_quiet(page, pending, name)
    problems += [f"tried to load from outside the site: {url}" for url in site.blocked[before:]]
    return OpenPage(page, problems)


def _wait_until_quiet(page: Any, pending: set[Request], name: str) -> None:
    """Wait until no request of the page is open for QUIET_MS: widgets, math and fonts load after
    the load event, later on a busy machine. (Playwright's docs advise against its own
    "networkidle", which twice never came on a busy machine; this wait counts the page's request
    events alone, and names the requests still open when it gives up.)"""
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < QUIET_MS / 1000:
        if time.monotonic() > deadline:
            still = sorted(request.url for request in pending)
            pytest.fail(f"{name}: requests open after {LOAD_TIMEOUT_MS} ms: {still}")
        page.wait_for_timeout(100)  # lets Playwright deliver the page's request events
        if pending:
            quiet_since = time.monotonic()


def _notebook(name: str) -> dict:
    return json.loads((ROOT / f"{name}.ipynb").read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _headings(nb: dict) -> list[str]:
    """The ``#``, ``##`` and ``###`` headings of the notebook's markdown, as the page shows them."""
    found = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown" or cell["metadata"].get("course", {}).get("navigation"):
            continue
        fenced = False
        for line in _source(cell).splitlines():
            if line.startswith("```"):
                fenced = not fenced
            match = re.match(r"#{1,3} (.+)", line)
            if match and not fenced:
                found.append(" ".join(match.group(1).replace("`", "").split()))
    return found


def _shown_code_cells(nb: dict) -> list[dict]:
    """Code cells the page shows: all but a hidden cell with no output (the setup cell)."""
    return [
        cell
        for cell in nb["cells"]
        if cell["cell_type"] == "code"
        and not (
            cell["metadata"].get("jupyter", {}).get("source_hidden") and not cell.get("outputs")
        )
    ]


_PAGE_HEADINGS_JS = """() => [...document.querySelectorAll('article h1, article h2, article h3')]
    .map(h => h.textContent.replace(/#\\s*$/, '').replace(/\\s+/g, ' ').trim())"""
_BROKEN_IMAGES_JS = """() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0)
    .map(i => i.getAttribute('src'))"""


def _stem(name: str) -> str:
    return name.replace("/", "_")


REFLOW_WIDTH = 320
LAPTOP = (1366, 768)
PHONE = (390, 844)
_OVERFLOWING_JS = """(width) => [...document.querySelectorAll('body *')].filter(el => {
    if (el.getBoundingClientRect().right <= width + 1) return false;
    for (let box = el.parentElement; box; box = box.parentElement) {  // inside its own scroll box
        if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(box).overflowX)
            && box.getBoundingClientRect().right <= width + 1) return false;
    }
    return true;
}).slice(0, 5).map(el => el.tagName.toLowerCase() + '.' + el.className + ': '
                         + el.textContent.trim().slice(0, 50))"""


# Output text (printed values, error messages) that is wider than its box.
_CUT_OUTPUTS_JS = """() => [...document.querySelectorAll('div.cell_output .output pre')]
    .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
    .map(pre => pre.textContent.trim().slice(0, 60))"""


_CUT_CODE_JS = _CUT_OUTPUTS_JS.replace("div.cell_output .output pre", "div.cell_input pre")


def _assert_reflows(page: Any, name: str) -> None:
    """On a laptop screen no output is cut off on the right: printed values and error messages
    wrap, as JupyterLab wraps them; nor is a lesson's code. At 320 CSS px wide the page does not
    scroll sideways (WCAG 2.1 1.4.10, reflow): only a code block, a wide table or a drawing in
    characters may, inside its own box."""
    page.set_viewport_size({"width": LAPTOP[0], "height": LAPTOP[1]})
    cut = page.evaluate(_CUT_OUTPUTS_JS)
    assert not cut, f"{name}: outputs cut off at {LAPTOP[0]} px:\n  " + "\n  ".join(cut)
    if name.startswith("notebooks/"):  # the code cells of a lesson show whole
        cut = page.evaluate(_CUT_CODE_JS)
        assert not cut, f"{name}: code cut off at {LAPTOP[0]} px:\n  " + "\n  ".join(cut)
    page.set_viewport_size({"width": REFLOW_WIDTH, "height": 640})
    wide = page.evaluate("() => document.documentElement.scrollWidth")
    assert wide <= REFLOW_WIDTH, (
        f"{name} is {wide} px wide at {REFLOW_WIDTH} px, because of:\n  "
        + "\n  ".join(page.evaluate(_OVERFLOWING_JS, REFLOW_WIDTH))
    )


def _assert_axe_finds_nothing_in_either_scheme(page: Any, name: str) -> None:
    """axe (WCAG 2.1 A and AA) on ``page`` in the light and the dark scheme, which the site takes
    from the reader's system setting."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_function(f"document.documentElement.dataset.theme === '{scheme}'")
        found = axe_problems(page)
        assert not found, f"{name}, {scheme} scheme: axe (WCAG 2.1 AA):\n  " + "\n  ".join(found)


@pytest.mark.parametrize("name", reading_order(), ids=_stem)
def test_page_loads_and_shows_its_notebook(name: str, site: SiteServer, screenshots: Path) -> None:
    opened = _open(site, name)
    page = opened.page
    try:
        shot = screenshots / f"site-{_stem(name)}.png"
        page.screenshot(path=str(shot), full_page=whole_screenshots())
        assert not opened.problems, f"{name}:\n  " + "\n  ".join(opened.problems)
        _assert_axe_finds_nothing_in_either_scheme(page, name)
        _assert_reflows(page, name)
        assert page.evaluate(_BROKEN_IMAGES_JS) == [], f"{name}: images that did not load"
        leaked = leaks(page.evaluate("() => document.body.textContent"), solution_secrets())
        assert not leaked, f"{name} shows solution code: {[s.text for s in leaked]}"
        if name not in course_notebooks():
            return
        nb = _notebook(name)
        shown = page.evaluate(_PAGE_HEADINGS_JS)
        missing = [h for h in _headings(nb) if h not in shown]
        assert not missing, f"{name}: headings not on the page: {missing}"
        cells = _shown_code_cells(nb)
        assert page.locator("article div.cell").count() == len(cells), name
        with_outputs = [c for c in cells if c.get("outputs")]
        assert page.locator("article div.cell:has(div.cell_output)").count() == len(with_outputs), (
            name
        )
        pngs = sum("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))
        assert page.locator("article div.cell_output img[src*='_images/']").count() == pngs, name
        if name.startswith("exercises/"):
            assert "NotImplementedError" in page.locator("article").text_content()
        copy_buttons = page.locator("article div.cell_input button.copybtn").count()
        assert copy_buttons == page.locator("article div.cell_input").count() > 0, (
            f"{name}: copy buttons"
        )
        download = page.locator("a.btn-download-source-button")
        assert download.count() == 1 and download.get_attribute("href").endswith(
            f"_sources/{name}.ipynb"
        )
    finally:
        page.close()


@pytest.mark.parametrize("name", ["search", "genindex", "py-modindex"])
def test_sphinx_own_pages_pass_axe(name: str, site: SiteServer) -> None:
    """The search page and the indexes, which are not in the reading order, pass axe and reflow
    at 320 px too."""
    opened = _open(site, name)
    try:
        _assert_axe_finds_nothing_in_either_scheme(opened.page, name)
        _assert_reflows(opened.page, name)
    finally:
        opened.page.close()


# The start page's four doors, by the text of their links (tests/authoring/test_site.py checks
# that they come first; test_page_loads_and_shows_its_notebook runs axe on each page they open).
_DOORS = {
    "Learners": "docs/learner",
    "Instructors": "docs/instructor",
    "Graders": "docs/grader",
    "Authors": "docs/author",
}


def test_each_role_page_is_one_click_from_the_start_page(site: SiteServer) -> None:
    opened = _open(site, "docs/index")
    page = opened.page
    try:
        for text, name in _DOORS.items():
            page.locator("article").get_by_role("link", name=text, exact=True).click()
            page.wait_for_url(site.url(name))
            heading = page.locator("article h1").first.text_content() or ""
            assert heading.startswith(f"For {text.lower()}"), f"{text}: {heading!r}"
            page.go_back(wait_until="domcontentloaded")
            assert site.name(page.url) == "docs/index"
        assert not opened.problems, opened.problems
    finally:
        page.close()


def test_every_stop_of_a_lesson_page_shows_the_keyboard_focus(site: SiteServer) -> None:
    """Tab from the top of lesson 02's page (math, a widget, a launch menu) to the end: at every
    stop the focused element looks different from how it looks without the focus."""
    opened = _open(site, "notebooks/02_mapping_and_sgd")
    try:
        stops, unseen = visible_focus_changes(opened.page, limit=400)
        assert stops > 40, f"only {stops} stops: the walk did not get through the page"
        assert not unseen, "focus not visible at:\n  " + "\n  ".join(unseen)
    finally:
        opened.page.close()


def test_math_renders_offline(site: SiteServer) -> None:
    opened = _open(site, "notebooks/02_mapping_and_sgd")
    try:
        opened.page.wait_for_selector("mjx-container", timeout=LOAD_TIMEOUT_MS)
        assert opened.page.locator("mjx-container").count() >= 2
        assert not opened.problems, opened.problems
    finally:
        opened.page.close()


@pytest.fixture
def new_page(site: SiteServer) -> Iterator[Any]:
    """A new tab of the site's browser, closed after the test."""
    page = site.context.new_page()
    yield page
    page.close()


def _search(site: SiteServer, page: Any, query: str, result: str) -> Any:
    """The first search result for ``query`` that the CSS selector ``result`` matches (inside
    ``#search-results``), once ``page``, on the site's search page, shows it."""
    query_string = urllib.parse.urlencode({"q": query})
    page.goto(f"{site.base_url}/search.html?{query_string}", wait_until="load")
    found = page.locator(f"#search-results {result}").first
    found.wait_for(timeout=LOAD_TIMEOUT_MS)
    return found


def test_search_for_static_finds_lesson_04(site: SiteServer, new_page: Any) -> None:
    link = _search(site, new_page, "static", "a[href*='notebooks/04_static_fields.html']")
    assert "Static fields" in link.text_content()


def test_search_for_a_pitfall_by_number_finds_its_heading_first(
    site: SiteServer, new_page: Any
) -> None:
    href = _search(site, new_page, "Pitfall 17", "li > a").get_attribute("href")
    assert href.startswith("notebooks/07_devices_and_abstract_trees.html#"), href
    # The result leads to the heading: its anchor stands right before it.
    target = href.split("#", 1)[1]
    new_page.goto(f"{site.base_url}/{href}", wait_until="load")
    heading = new_page.locator(f"[id='{target}'] ~ h3, [id='{target}'] + h3").first
    assert heading.text_content().startswith("Pitfall 17:")


def _widget_note_follows(page: Any, selector: str) -> bool:
    return page.evaluate(
        """(sel) => { const w = document.querySelector(sel);
                      const out = w && w.closest('div.cell_output');
                      const note = out && out.querySelector('.course-widget-note');
                      return !!note && note.textContent.includes('Live in Jupyter'); }""",
        selector,
    )


def test_widgets_render_from_saved_state_offline(site: SiteServer, screenshots: Path) -> None:
    opened = _open(site, "notebooks/01_what_is_a_pytree")
    try:
        explorer = opened.page.locator(".course-explorer").first
        explorer.wait_for(state="visible", timeout=LOAD_TIMEOUT_MS)
        saved = (
            next(  # the root row as the notebook printed it: "<root>  dict · 48 leaves · ..."
                "".join(o["data"]["text/plain"])
                for c in _notebook("notebooks/01_what_is_a_pytree")["cells"]
                for o in c.get("outputs", [])
                if WIDGET_VIEW in o.get("data", {})
            )
            .removeprefix("TreeExplorer(")
            .removesuffix(")")
        )
        root_row = explorer.locator(".course-explorer-node").first
        assert " ".join(saved.split()) in " ".join(root_row.text_content().split())
        assert _widget_note_follows(opened.page, ".course-explorer")
        explorer.screenshot(path=str(screenshots / "site-widget-tree-explorer.png"))
        assert not opened.problems, opened.problems
    finally:
        opened.page.close()

    opened = _open(site, "notebooks/02_mapping_and_sgd")
    try:
        training = opened.page.locator(".course-training").first
        training.wait_for(state="visible", timeout=LOAD_TIMEOUT_MS)
        assert training.locator(".course-lr-box input").is_visible()
        opened.page.wait_for_function(
            "() => { const i = document.querySelector('.course-loss-plot img');"
            " return !!i && i.complete && i.naturalWidth > 0; }",
            timeout=LOAD_TIMEOUT_MS,
        )
        stats = parse_stats(training.locator(".course-training-stats").text_content())
        assert stats["lr"] == pytest.approx(0.05) and stats["final_loss"] is not None
        assert _widget_note_follows(opened.page, ".course-training")
        training.screenshot(path=str(screenshots / "site-widget-training-playground.png"))
        assert not opened.problems, opened.problems
    finally:
        opened.page.close()


def test_menu_button_opens_the_lesson_list_on_a_phone(site: SiteServer, screenshots: Path) -> None:
    """On a phone the sidebar is folded away; the visible menu button at the top of the article
    opens it as a dialog, and a lesson link in it leads to that lesson."""
    opened = _open(site, "notebooks/07_devices_and_abstract_trees", viewport=PHONE)
    page = opened.page
    try:
        menu_button = page.get_by_role("button", name="Toggle primary sidebar")
        assert menu_button.count() == 1 and menu_button.is_visible()
        lesson = page.locator("#pst-primary-sidebar-modal").get_by_role(
            "link", name="08 Trees through transformations"
        )
        assert not lesson.is_visible()
        menu_button.click()
        lesson.wait_for(state="visible", timeout=5_000)
        page.screenshot(path=str(screenshots / "site-menu-open-390px.png"))
        lesson.click()
        page.wait_for_url(site.url("notebooks/08_trees_through_transformations"))
        assert page.locator("article h1").first.text_content().startswith("08 Trees through")
        assert not opened.problems, opened.problems
    finally:
        page.close()


def test_a_laptop_screen_shows_one_search_box_and_the_menu_button_folds_the_sidebar(
    site: SiteServer,
) -> None:
    opened = _open(site, "notebooks/07_devices_and_abstract_trees", viewport=LAPTOP)
    page = opened.page
    try:
        assert page.locator(".search-button-field:visible").count() == 1
        sidebar = page.locator("#pst-primary-sidebar")
        assert sidebar.is_visible()
        page.get_by_role("button", name="Toggle primary sidebar").click()
        sidebar.wait_for(state="hidden", timeout=5_000)
        assert not opened.problems, opened.problems
    finally:
        page.close()


# The site has launch links to site_support.TEST_REPOSITORY; the addresses are written out.
_LAUNCH_TARGETS = {
    "notebooks/01_what_is_a_pytree": {
        "Binder": "https://mybinder.org/v2/gh/example-org/pytree-course/main"
        "?labpath=notebooks/01_what_is_a_pytree.ipynb",
        "Colab": "https://colab.research.google.com/github/example-org/pytree-course/blob/main"
        "/notebooks/01_what_is_a_pytree.ipynb",
    },
    "exercises/02_mapping_and_sgd": {
        "Binder": "https://mybinder.org/v2/gh/example-org/pytree-course/main"
        "?labpath=exercises/02_mapping_and_sgd.ipynb",
        "Colab": "https://colab.research.google.com/github/example-org/pytree-course/blob/main"
        "/exercises/02_mapping_and_sgd.ipynb",
    },
}


@pytest.mark.parametrize("name", list(_LAUNCH_TARGETS), ids=_stem)
def test_launch_menu_opens_binder_and_colab(name: str, site: SiteServer, screenshots: Path) -> None:
    opened = _open(site, name)
    page = opened.page
    try:
        menu = page.locator(".dropdown-launch-buttons")
        assert menu.count() == 1, f"{name}: no launch menu"
        links = menu.locator("a.dropdown-item")
        assert not links.first.is_visible()
        menu.locator("button.dropdown-toggle").click()
        for text, href in _LAUNCH_TARGETS[name].items():
            link = menu.locator("a.dropdown-item", has_text=text)
            link.wait_for(state="visible")
            assert link.get_attribute("href") == href, f"{name}: {text}"
        assert links.count() == 2
        page.screenshot(path=str(screenshots / f"site-launch-{_stem(name)}.png"))
        assert not opened.problems, opened.problems
    finally:
        page.close()
