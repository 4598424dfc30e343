"""Session fixtures for the browser tests: a copy of the course, `make lab` serving it, Chromium.

Chromium is Debian's `chromium` package driven by Playwright (`playwright install` is never used).
Without it the tests are skipped with a message saying how to install it, unless
COURSE_REQUIRE_BROWSER=1 (set by .ci/run), where they fail instead.

Screenshots go to test-artifacts/screenshots/ in the checkout (git-ignored, emptied at the start of
each run), or to COURSE_SCREENSHOT_DIR; the folder and each notebook's Run All time are printed at
the end of the run. Each shows a whole notebook or page, unless COURSE_SCREENSHOTS=first-screen (set
by .ci/run, where nobody looks at them): a whole lesson makes JupyterLab lay out and Chromium paint
a picture up to 30,000 pixels tall, several seconds of processor time each.

Under pytest-xdist (`make test` runs two processes, which share out the tests one by one), each
process has its own JupyterLab and Chromium, and hands its screenshots and Run All times to the main
one, which prints them. A test that needs a page another test kept open runs that notebook again
when the page is in the other process (`Notebooks.run`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from lab_browser import (
    CHROMIUM_FLAGS,
    INSTALL_HINT,
    ROOT,
    LabPage,
    LabServer,
    NotebookPage,
    chromium_main_process,
    copy_course,
    stop_process,
    whole_screenshots,
)

_written: list[Path] = []
_run_times: list[tuple[str, float]] = []


def screenshot_dir() -> Path:
    return Path(os.environ.get("COURSE_SCREENSHOT_DIR") or ROOT / "test-artifacts" / "screenshots")


def _required() -> bool:
    return os.environ.get("COURSE_REQUIRE_BROWSER", "").strip() not in ("", "0")


def _unavailable(message: str) -> NoReturn:
    if _required():
        pytest.fail(f"COURSE_REQUIRE_BROWSER is set but {message}", pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        _unavailable(f"Chromium is not installed: {INSTALL_HINT}")
    try:
        import playwright.sync_api  # noqa: F401 (only whether it imports)
    except ImportError:
        _unavailable("Playwright for Python is not installed: `make test` installs it into .venv")
    return path


@pytest.fixture(scope="session")
def lab_server(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    base = tmp_path_factory.mktemp("browser")
    server = LabServer(course=copy_course(base / "course"), state=base / "lab")
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser(chromium_path: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    main = None
    try:
        chromium = playwright.chromium.launch(
            executable_path=chromium_path, headless=True, args=list(CHROMIUM_FLAGS)
        )
        main = chromium_main_process(chromium_path)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()
        stop_process(main)  # by its process id; already gone after close(), unless close() failed


def pytest_configure(config: pytest.Config) -> None:
    """In the main process (not in an xdist worker): the default screenshot folder loses the
    pictures of an earlier run before any test writes one."""
    if hasattr(config, "workerinput") or "COURSE_SCREENSHOT_DIR" in os.environ:
        return
    for old in screenshot_dir().glob("*.png"):
        old.unlink()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """In an xdist worker: hand this process's Run All times and screenshots to the main one."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["browser_run_times"] = list(_run_times)
        workeroutput["browser_screenshots"] = [str(path) for path in _written]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """In the main process: what a finished xdist worker handed over."""
    handed = getattr(node, "workeroutput", {})
    _run_times.extend((name, seconds) for name, seconds in handed.get("browser_run_times", []))
    _written.extend(Path(path) for path in handed.get("browser_screenshots", []))


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """The screenshot folder (emptied by `pytest_configure`)."""
    folder = screenshot_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Notebooks:
    """Notebooks opened and run once per session in this process's JupyterLab page, kept open for
    the tests that need them again."""

    def __init__(self, server: LabServer, browser: Any) -> None:
        self.server, self.browser = server, browser
        self.lab: LabPage | None = None
        self.kept: dict[str, NotebookPage] = {}

    def run(self, relative: str, keep: bool = False) -> NotebookPage:
        """Open ``relative``, run all its cells, save; show the kept tab again when it was kept."""
        if relative in self.kept:
            return self.kept[relative].open()
        page = self.show(relative)
        try:
            page.run_all()
        except BaseException:
            page.close()
            raise
        _run_times.append((relative, page.run_seconds or 0.0))
        if keep:
            self.kept[relative] = page
        return page

    def show(self, relative: str) -> NotebookPage:
        """Open ``relative`` as it was saved, outputs and all, without running it."""
        if self.lab is None:
            self.lab = LabPage(self.server, self.browser)
        return self.lab.open(relative)

    def close_all(self) -> None:
        for page in self.kept.values():
            page.close()
        self.kept.clear()
        if self.lab is not None:
            self.lab.close()


@pytest.fixture(scope="session")
def notebooks(lab_server: LabServer, browser: Any) -> Iterator[Notebooks]:
    opened = Notebooks(lab_server, browser)
    yield opened
    opened.close_all()


@pytest.fixture
def save_screenshot(screenshots: Path) -> Callable[[Any, str], Path]:
    """``save_screenshot(target, name)``: a whole notebook (a NotebookPage) or one element (a
    Playwright locator), saved as ``name.png`` in the screenshot folder."""

    def save(target: Any, name: str) -> Path:
        path = screenshots / f"{name}.png"
        if isinstance(target, NotebookPage):
            target.screenshot(path, whole=whole_screenshots())
        else:
            target.screenshot(path=str(path))
        _written.append(path)
        return path

    return save


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _run_times:
        terminalreporter.write_sep("-", "Run All Cells in JupyterLab")
        for relative, seconds in _run_times:
            terminalreporter.write_line(f"{seconds:6.1f} s  {relative}")
    if _written:
        terminalreporter.write_sep("-", "browser screenshots")
        terminalreporter.write_line(f"{len(_written)} screenshots in {screenshot_dir()}")
