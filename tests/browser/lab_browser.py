"""Drive the course's JupyterLab in a real Chromium: start `make lab` on a copy of the course, open
notebooks, use the menus, read back what the learner would see.

The server is the one `make lab` starts: ``make -s lab LAB_ARGS=...`` run in a temporary copy of
the course whose ``.venv`` is a symbolic link to the checkout's environment. The Makefile's recipe,
its ``jupyter`` binary and its options are therefore the same; only ``$(CURDIR)``, the
``--ServerApp.root_dir`` the recipe passes, is the copy. (Overriding ``root_dir`` through
``LAB_ARGS`` instead does not work: traitlets refuses a second value for it.) Before starting,
``make -q`` must say the environment is up to date, so that make never tries to rebuild ``.venv``
through the link.

Everything that is read back comes from the page (prompts, rendered outputs, widgets) or from the
notebook file JupyterLab itself saved after the run (execution counts and error outputs of every
cell, hidden cells included: their prompt is not on the page).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from course_tools.authoring.execute import error_cell_problems

PlaywrightTimeout: type[Exception]
try:
    from playwright.sync_api import TimeoutError as _PlaywrightTimeout

    PlaywrightTimeout = _PlaywrightTimeout
except ImportError:  # the session fixtures skip (or fail) with a message saying what is missing
    PlaywrightTimeout = TimeoutError

ROOT = Path(__file__).resolve().parents[2]
COURSE_PARTS = (
    "notebooks",
    "exercises",
    "solutions",
    "README.md",
    "Makefile",
    "pyproject.toml",
    "uv.lock",
)
CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)
INSTALL_HINT = (
    "install it with `apt-get install -y chromium` (as root); `.ci/run` does that before "
    "`make test`"
)

# Seconds. The first kernel start plus `import jax` takes ~10 s on a loaded 2-core machine.
SERVER_TIMEOUT = 120
READY_TIMEOUT = 180
RUN_TIMEOUT = 300
WIDGET_TIMEOUT = 60
ACTION_TIMEOUT_MS = 30_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_course(destination: Path) -> Path:
    """Copy the course into ``destination`` (modification times kept) and link the environment."""
    destination.mkdir(parents=True, exist_ok=True)
    for name in COURSE_PARTS:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(
                source, destination / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints")
            )
        elif source.exists():
            shutil.copy2(source, destination / name)
    (destination / ".venv").symlink_to(ROOT / ".venv", target_is_directory=True)
    return destination


def write_lab_settings(settings_dir: Path) -> None:
    """User settings for the isolated JupyterLab: no news or update checks (no toast, no
    network), and every cell of a notebook on the page as soon as it opens (windowing mode "none").
    By default JupyterLab attaches a long notebook's cells in the page's idle moments: with two
    test processes busy, a lesson then took from 2 to 68 s to open."""
    settings = {
        "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "notebook-extension/tracker": {"windowingMode": "none"},
    }
    for name, values in settings.items():
        path = settings_dir / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@dataclass
class LabServer:
    """`make lab` serving a copy of the course on loopback, with a token."""

    course: Path
    state: Path
    port: int = 0
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen | None = None
    log_path: Path | None = None
    # Kernels talk to the server over unix sockets in this private folder, so no other process
    # can take one of their ports first. Kept short: a socket's path holds at most 107 bytes.
    runtime: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="lab-")))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "JUPYTERLAB_SETTINGS_DIR": str(self.state / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(self.state / "workspaces"),
            "JUPYTER_RUNTIME_DIR": str(self.runtime),
            # Kernels inherit this: checks print their verdict as they do for a learner, even
            # where CI is set (which would otherwise make a failing check raise).
            "COURSE_STRICT_CHECKS": "0",
        }

    def start(self) -> None:
        stale = subprocess.run(
            ["make", "-s", "-q", ".venv/.installed"],
            cwd=self.course,
            capture_output=True,
            text=True,
        )
        if stale.returncode != 0:
            raise RuntimeError(
                "the course environment .venv is missing or older than pyproject.toml or uv.lock; "
                "run `make lab` or `make test` once to build it (the browser tests never rebuild "
                "it)"
            )
        write_lab_settings(self.state / "settings")
        last_error = ""
        for _ in range(3):  # a free port can be taken between choosing it and binding it
            self.port = free_port()
            self.log_path = self.state / f"jupyterlab-{self.port}.log"
            args = (
                f"--no-browser --ip=127.0.0.1 --port={self.port} --ServerApp.port_retries=0 "
                f"--IdentityProvider.token={self.token} "
                # window.jupyterapp: the tests open and close notebooks in one loaded JupyterLab
                "--LabApp.expose_app_in_browser=True --KernelManager.transport=ipc"
            )
            with open(self.log_path, "wb") as log:
                self.process = subprocess.Popen(
                    ["make", "-s", "lab", f"LAB_ARGS={args}"],
                    cwd=self.course,
                    env=self.env(),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: stopped as one below
                )
            try:
                self._wait_until_up()
            except _PortTakenError as error:
                last_error = str(error)
                self.stop()
                continue
            self._check_serves_the_copy()
            return
        raise RuntimeError(f"JupyterLab did not start: {last_error}")

    def log_tail(self, chars: int = 3000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_text(errors="replace")[-chars:]

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + SERVER_TIMEOUT
        process = self.process
        assert process is not None, "start() sets it"
        while True:
            try:
                self.api("GET", "/api/status")
                return
            except OSError:
                pass
            if process.poll() is not None:
                tail = self.log_tail()
                if "already in use" in tail or "Address already in use" in tail:
                    raise _PortTakenError(tail)
                raise RuntimeError(f"`make lab` exited with {process.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"JupyterLab did not answer within {SERVER_TIMEOUT} s:\n{self.log_tail()}"
                )
            time.sleep(0.25)

    def _check_serves_the_copy(self) -> None:
        line = f"Serving notebooks from local directory: {self.course}"
        deadline = time.monotonic() + 10
        while line not in self.log_tail(100_000):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the server does not say it serves {self.course}:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def api(self, method: str, path: str, timeout: float = 10) -> Any:
        request = urllib.request.Request(
            self.base_url + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def url(self, workspace: str) -> str:
        """The URL of JupyterLab in a workspace of its own (a new name: nothing to restore)."""
        return f"{self.base_url}/lab/workspaces/{workspace}?token={self.token}"

    def shutdown_sessions(self, relative: str | None = None) -> None:
        """Shut down the kernels of ``relative`` (or of every notebook) through the REST API."""
        with contextlib.suppress(OSError, ValueError):
            for session in self.api("GET", "/api/sessions"):
                if relative is None or session.get("path") == relative:
                    with contextlib.suppress(OSError):
                        self.api("DELETE", f"/api/sessions/{session['id']}", timeout=30)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            self.shutdown_sessions()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # make may have exited first; nothing of its group may outlive the tests
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        shutil.rmtree(self.runtime, ignore_errors=True)


class _PortTakenError(RuntimeError):
    pass


def chromium_main_process(executable: str) -> Any:
    """The main process (a ``psutil.Process``) of the Chromium this test process launched, or None.

    Playwright starts it through its driver, so it is a descendant of this process; renderer, GPU
    and zygote helpers are its children and carry ``--type=``.
    """
    import psutil

    wanted = {os.path.realpath(executable), os.path.realpath("/usr/lib/chromium/chromium")}
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            exe = os.path.realpath(child.exe())
            if (exe in wanted or os.path.basename(exe) == "chromium") and not any(
                arg.startswith("--type=") for arg in child.cmdline()
            ):
                return child
    return None


def stop_process(process: Any, timeout: float = 10) -> None:
    """Terminate a ``psutil.Process`` (then kill it) unless it has already exited."""
    if process is None:
        return
    import psutil

    with contextlib.suppress(psutil.Error):
        if not process.is_running() or process.status() == psutil.STATUS_ZOMBIE:
            return
        process.terminate()
        try:
            process.wait(timeout)
        except psutil.TimeoutExpired:
            process.kill()


# ---------------------------------------------------------------------------------------------
# Notebook pages

_APP_READY_JS = "() => !!window.jupyterapp && !!document.querySelector('#jp-main-dock-panel')"

# Opens ``path`` (or shows its tab when it is open) and answers its panel's element id.
_OPEN_JS = """async (path) => {
    const app = window.jupyterapp;
    await app.restored;
    const widget = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
    app.shell.activateById(widget.id);
    return widget.id;
}"""

# Closes the tab without asking to save (a test may have typed into it).
_DISPOSE_JS = """(id) => { for (const w of window.jupyterapp.shell.widgets('main'))
    if (w.id === id) w.dispose(); }"""

_READY_JS = """([panelSelector, cells]) => {
    const panel = document.querySelector(panelSelector);
    if (!panel) return false;
    const kernel = panel.querySelector('.jp-KernelName');
    const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    return !!kernel && !!indicator && kernel.textContent.trim() !== 'No Kernel'
        && kernel.textContent.trim() !== ''
        && indicator.dataset.status === 'idle'
        && panel.querySelectorAll('.jp-Notebook .jp-Cell').length === cells;
}"""

_STATE_JS = """(panelSelector) => {
    const panel = document.querySelector(panelSelector);
    if (!panel) return 'no notebook panel';
    const kernel = panel.querySelector('.jp-KernelName');
    const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    return `kernel ${kernel && kernel.textContent.trim()}, `
        + `status ${indicator && indicator.dataset.status}, `
        + `${panel.querySelectorAll('.jp-Notebook .jp-Cell').length} cells`;
}"""

_PROMPTS_JS = """(panelSelector) => {
    const panel = document.querySelector(panelSelector);
    return [...panel.querySelectorAll('.jp-Notebook .jp-Cell.jp-CodeCell')]
        .map(cell => { const p = cell.querySelector('.jp-InputArea-prompt');
                       return p ? p.textContent.trim() : null; });
}"""

# "Clear Outputs of All Cells" also blanks every prompt: "[ ]:".
_CLEARED_JS = r"""(panelSelector) => [...document.querySelector(panelSelector)
    .querySelectorAll('.jp-Notebook .jp-Cell.jp-CodeCell .jp-InputArea-prompt')]
    .every(p => !/\d|\*/.test(p.textContent))"""

# Done: the kernel is idle, no cell is queued or running ([*]), and at least one prompt has a number
# or an error is shown (after "Clear Outputs of All Cells" neither is there, so this cannot pass
# before the run has started; an error in a first, hidden cell leaves no number anywhere).
_RUN_DONE_JS = r"""(panelSelector) => {
    const panel = document.querySelector(panelSelector);
    const indicator = panel.querySelector('.jp-Notebook-ExecutionIndicator');
    const prompts = [...panel.querySelectorAll(
        '.jp-Notebook .jp-Cell.jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent);
    const stderr = panel.querySelector(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']");
    return indicator.dataset.status === 'idle'
        && !prompts.some(text => text.includes('*'))
        && (prompts.some(text => /\[\d+\]/.test(text)) || !!stderr);
}"""


_TWO_FRAMES_JS = (
    "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
)


def code_cell_indices(nb: nbformat.NotebookNode) -> list[int]:
    return [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]


def has_png(cell: nbformat.NotebookNode) -> bool:
    return any("image/png" in output.get("data", {}) for output in cell.get("outputs", []))


def first_line(cell: nbformat.NotebookNode) -> str:
    lines = cell.source.strip().splitlines()
    return lines[0][:80] if lines else ""


class LabPage:
    """JupyterLab loaded once in one browser page, in a workspace of its own; the notebooks of a
    test process open in it as tabs, one after the other (loading JupyterLab takes seconds)."""

    def __init__(self, server: LabServer, browser: Any) -> None:
        self.server = server
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(ACTION_TIMEOUT_MS)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(f"page error: {error}"))
        self.page.goto(server.url("t" + secrets.token_hex(6)), wait_until="domcontentloaded")
        self.page.wait_for_function(_APP_READY_JS, timeout=READY_TIMEOUT * 1000, polling=250)

    def open(self, relative: str) -> NotebookPage:
        return NotebookPage(self, relative).open()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.page.close()


def whole_screenshots() -> bool:
    """True unless COURSE_SCREENSHOTS=first-screen: screenshots of whole pages and notebooks
    (tests/browser/conftest.py says why CI takes only the first screen)."""
    setting = os.environ.get("COURSE_SCREENSHOTS", "whole").strip() or "whole"
    if setting not in ("whole", "first-screen"):
        raise ValueError(
            f"COURSE_SCREENSHOTS={setting!r}: use 'whole' (the default) or 'first-screen'"
        )
    return setting == "whole"


# Where the focused element is (with a margin for a ring drawn outside it, clamped to the
# viewport), what it is, and whether it is a stop already seen or outside `within`.
_FOCUS_STOP_JS = """(within) => {
    const el = document.activeElement;
    if (!el || el === document.body) return {end: 'the focus left the page'};
    if (within && !el.closest(within)) return {end: 'the focus left ' + within};
    if (el.dataset.courseFocusSeen) return {end: 'back at a stop already seen'};
    el.dataset.courseFocusSeen = '1';
    // Where a transition moves it into view on focus (a skip link), measure where it ends.
    for (const animation of document.getAnimations()) {
        try { animation.finish(); } catch (endless) { /* an infinite one: left running */ }
    }
    const r = el.getBoundingClientRect(), m = 8;
    const x = Math.max(0, r.left - m), y = Math.max(0, r.top - m);
    const w = Math.min(innerWidth, r.right + m) - x, h = Math.min(innerHeight, r.bottom + m) - y;
    const text = (el.getAttribute('aria-label') || el.textContent || el.title || '').trim();
    return {what: el.tagName.toLowerCase() + (el.className && typeof el.className === 'string'
                ? '.' + el.className.trim().split(/\\s+/).slice(0, 2).join('.') : '')
                + ' "' + text.replace(/\\s+/g, ' ').slice(0, 40) + '"',
            clip: w > 0 && h > 0 ? {x, y, width: w, height: h} : null};
}"""
_SETTLE_JS = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def visible_focus_changes(
    page: Any, limit: int, within: str | None = None
) -> tuple[int, list[str]]:
    """Press Tab up to ``limit`` times from where the focus is, until the focus leaves the page (or
    the element ``within`` selects) or comes back to a stop it has seen. At each stop, compare a
    picture of the focused element and what surrounds it with a picture of the same place after
    the element loses the focus (WCAG 2.4.7: the focus must be visible).

    Returns the number of stops and, for each stop where the two pictures are the same, what it is.
    """
    unseen: list[str] = []
    stops = 0
    for _ in range(limit):
        page.keyboard.press("Tab")
        stop = page.evaluate(_FOCUS_STOP_JS, within)
        if "end" in stop:
            break
        stops += 1
        if stop["clip"] is None:
            unseen.append(f"{stop['what']} (outside the window)")
            continue
        focused = page.screenshot(clip=stop["clip"], animations="disabled")
        page.evaluate(
            "() => { window.__courseFocused = document.activeElement; "
            "document.activeElement.blur(); }"
        )
        page.evaluate(_SETTLE_JS)
        plain = page.screenshot(clip=stop["clip"], animations="disabled")
        page.evaluate("() => window.__courseFocused.focus({preventScroll: true})")
        if focused == plain:
            unseen.append(stop["what"])
    return stops, unseen


class NotebookPage:
    """One notebook open in the test process's JupyterLab page (``LabPage``), in its own tab."""

    def __init__(self, lab: LabPage, relative: str) -> None:
        self.lab = lab
        self.server = lab.server
        self.page = lab.page
        self.relative = relative
        self.path = self.server.course / relative
        self.notebook = nbformat.read(self.path, as_version=4)  # as opened, before any run
        self.panel_id = ""  # the id of this notebook's panel element, once open
        self._errors_before = len(lab.errors)
        self.saved: nbformat.NotebookNode | None = None
        self.run_seconds: float | None = None

    @property
    def panel(self) -> str:
        """The selector of this notebook's panel (its tab's content)."""
        return f'[id="{self.panel_id}"]'

    @property
    def console(self) -> list[str]:
        """The page's errors since this notebook was opened."""
        return self.lab.errors[self._errors_before :]

    # Opening and running
    def open(self) -> NotebookPage:
        """Open the notebook in its own tab (or show its tab again) and wait for an idle kernel."""
        self.panel_id = self.page.evaluate(_OPEN_JS, self.relative)
        try:
            self.page.wait_for_function(
                _READY_JS,
                arg=[self.panel, len(self.notebook.cells)],
                timeout=READY_TIMEOUT * 1000,
                polling=250,
            )
        except PlaywrightTimeout as error:
            seen = self.page.evaluate(_STATE_JS, self.panel)
            raise AssertionError(
                f"{self.relative} did not open with an idle kernel within {READY_TIMEOUT} s "
                f"(expected {len(self.notebook.cells)} cells on the page); the page shows {seen}"
            ) from error
        return self

    def menu(self, menu: str, command: str) -> None:
        """Click ``menu`` in JupyterLab's menu bar, then the item that runs ``command``."""
        self.page.get_by_role("menuitem", name=menu, exact=True).click()
        item = self.page.locator(f".lm-Menu-item[data-command='{command}']")
        item.wait_for(state="visible")
        item.click()

    def run_all(self) -> None:
        """Clear every output (Edit menu), run all cells (Run menu), wait, save (File menu)."""
        self.menu("Edit", "editmenu:clear-all")
        self.page.wait_for_function(_CLEARED_JS, arg=self.panel)
        start = time.monotonic()
        self.menu("Run", "runmenu:run-all")
        try:
            self.page.wait_for_function(
                _RUN_DONE_JS, arg=self.panel, timeout=RUN_TIMEOUT * 1000, polling=250
            )
        except PlaywrightTimeout as error:
            prompts = self.page.evaluate(_PROMPTS_JS, self.panel)
            raise AssertionError(
                f"{self.relative}: Run All Cells did not finish within {RUN_TIMEOUT} s; "
                f"code cell prompts: {prompts}"
            ) from error
        self.run_seconds = time.monotonic() - start
        self.saved = self.save()

    def save(self) -> nbformat.NotebookNode:
        """Save through the File menu and read back the file JupyterLab wrote."""
        before = self.path.stat().st_mtime_ns
        self.menu("File", "docmanager:save")
        deadline = time.monotonic() + 60
        while True:
            if self.path.stat().st_mtime_ns != before:
                try:
                    return nbformat.read(self.path, as_version=4)
                except (json.JSONDecodeError, nbformat.reader.NotJSONError):
                    pass  # caught mid-write
            if time.monotonic() > deadline:
                raise AssertionError(f"JupyterLab did not save {self.relative} within 60 s")
            self.page.wait_for_timeout(100)

    # Reading
    def cell(self, index: int) -> Any:
        return self.page.locator(f"{self.panel} .jp-Notebook .jp-Cell").nth(index)

    def output_text(self, index: int) -> str:
        """The text of a cell's outputs (textContent: innerText is empty for an offscreen cell)."""
        return self.cell(index).locator(".jp-OutputArea").text_content() or ""

    def problems(self) -> list[str]:
        """What is wrong with the saved run: unexecuted cells, errors raised, and cells that declare
        the error they show (``# Raises TypeError``) but showed none."""
        assert self.saved is not None, "run_all() first"
        found: list[str] = []
        skipped: list[str] = []
        if len(self.saved.cells) != len(self.notebook.cells):
            found.append(
                f"the saved notebook has {len(self.saved.cells)} cells, the original "
                f"{len(self.notebook.cells)}"
            )
            return found
        shown_wrong = dict(error_cell_problems(self.saved))  # the notebook runner's own rules
        for i in code_cell_indices(self.notebook):
            original, ran = self.notebook.cells[i], self.saved.cells[i]
            where = f"cell {i} ({first_line(original)!r})"
            errors = [o for o in ran.get("outputs", []) if o.get("output_type") == "error"]
            if ran.get("execution_count") is None:
                skipped.append(where)
            if errors:
                error = errors[0]
                found.append(f"{where} raised {error.get('ename')}: {error.get('evalue')}")
            elif i in shown_wrong and ran.get("execution_count") is not None:
                found.append(f"{where}: {shown_wrong[i]}")
        if len(skipped) > 3:
            found.append(
                f"{len(skipped)} cells were not executed, from {skipped[0]} on (Run All stops at "
                "an error)"
            )
        else:
            found += [f"{where} was not executed" for where in skipped]
        return found

    def missing_images(self) -> list[str]:
        """Cells that showed a PNG in the committed notebook and show no PNG image on the page
        now."""
        missing = []
        for i in code_cell_indices(self.notebook):
            if has_png(self.notebook.cells[i]):
                images = self.cell(i).locator(".jp-OutputArea img[src^='data:image/png']")
                if images.count() == 0:
                    missing.append(f"cell {i} ({first_line(self.notebook.cells[i])!r})")
        return missing

    # Pictures
    def screenshot(self, path: Path, whole: bool = True) -> Path:
        """The whole notebook in one picture (the viewport is stretched to the notebook's height),
        or with ``whole=False`` its first screen."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if not whole:
            self.page.screenshot(path=str(path))
            return path
        viewport = self.page.viewport_size
        extra = self.page.evaluate(
            """(sel) => { const outer = document.querySelector(sel + ' .jp-WindowedPanel-outer')
                         || document.querySelector(sel + ' .jp-Notebook');
                         return outer ? Math.max(0, outer.scrollHeight - outer.clientHeight)
                                      : 0; }""",
            self.panel,
        )
        height = min(viewport["height"] + int(extra) + 40, 30_000)
        try:
            self.page.set_viewport_size({"width": viewport["width"], "height": height})
            self.page.evaluate(
                "(sel) => { const o = document.querySelector(sel + ' .jp-WindowedPanel-outer');"
                " if (o) o.scrollTop = 0; }",
                self.panel,
            )
            self.page.evaluate(_TWO_FRAMES_JS)  # JupyterLab lays itself out again after the resize
            self.page.screenshot(path=str(path), full_page=True)
        finally:
            self.page.set_viewport_size(viewport)
        return path

    def close(self) -> None:
        """Close the tab, unsaved changes and all, and shut its kernel down."""
        with contextlib.suppress(Exception):
            self.page.evaluate(_DISPOSE_JS, self.panel_id)
        self.server.shutdown_sessions(self.relative)


# ---------------------------------------------------------------------------------------------
# Typing into a cell


def type_into_cell(notebook: NotebookPage, index: int, source: str) -> str:
    """Replace the source of cell ``index`` by typing ``source`` key by key; return the editor's
    text.

    JupyterLab's editor indents each new line by itself; after each Enter, Shift+Home selects that
    automatic indentation so that the line typed next, with its own indentation, replaces it.
    """
    keyboard = notebook.page.keyboard
    editor = notebook.cell(index).locator(".cm-content")
    editor.scroll_into_view_if_needed()
    editor.click()
    keyboard.press("Control+a")
    keyboard.press("Delete")
    for number, line in enumerate(source.split("\n")):
        if number:
            keyboard.press("Enter")
            keyboard.press("Shift+Home")
        if line:
            keyboard.type(line)
    return editor_text(notebook, index)


def editor_text(notebook: NotebookPage, index: int) -> str:
    return (
        notebook.cell(index)
        .locator(".cm-content")
        .evaluate(
            "e => [...e.querySelectorAll('.cm-line')].map(line => line.textContent).join('\\n')"
        )
    )


NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf"


def parse_stats(text: str) -> dict[str, Any]:
    """The numbers in TrainingPlayground's stats text (see course_lib.viz._training)."""
    lr = re.search(rf"learning rate ({NUMBER})", text)
    loss = re.search(rf"final loss ({NUMBER})", text)
    compiles = re.search(r"compilations: (\d+) for this change, (\d+) in all", text)
    return {
        "lr": float(lr.group(1)) if lr else None,
        "final_loss": loss.group(1) if loss else None,
        "this_change": int(compiles.group(1)) if compiles else None,
        "total": int(compiles.group(2)) if compiles else None,
        "failed": "run failed" in text,
    }
