"""Every lesson shows its outputs in JupyterLab, with its plots, and those outputs pass axe-core's
WCAG 2.1 A and AA rules; the lessons with widgets run in JupyterLab from the Run menu without
errors, and the training playground (lesson 02) and the tree explorer (lesson 01) respond to the
mouse and keyboard, and show the keyboard focus at every stop.

A lesson without widgets is judged on the outputs it was saved with, as a learner who opens it
first sees them: strict nbval (`make test`'s stage 3) holds those equal to a fresh kernel's, and
runs each such lesson top to bottom in the same kind of kernel, so running it again here only
repeated that run. A widget needs a live kernel to draw it, so those lessons run here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from axe import axe_problems
from lab_browser import (
    ROOT,
    WIDGET_TIMEOUT,
    LabServer,
    NotebookPage,
    PlaywrightTimeout,
    parse_stats,
    visible_focus_changes,
)

# One JupyterLab serves every test that needs one: make test runs them all in one process
# (--dist loadgroup), so that a second server and a second JupyterLab page are not started.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("lab")]

LESSONS = sorted(
    p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _shows_a_widget(relative: str) -> bool:
    nb = json.loads((ROOT / relative).read_text(encoding="utf-8"))
    outputs = [o for cell in nb["cells"] for o in cell.get("outputs", [])]
    return any(WIDGET_VIEW in o.get("data", {}) for o in outputs)


LIVE_LESSONS = [lesson for lesson in LESSONS if _shows_a_widget(lesson)]
SAVED_LESSONS = [lesson for lesson in LESSONS if lesson not in LIVE_LESSONS]
TREE_LESSON = "notebooks/01_what_is_a_pytree.ipynb"
TRAINING_LESSON = "notebooks/02_mapping_and_sgd.ipynb"
KEEP_OPEN = {TREE_LESSON, TRAINING_LESSON}  # their widgets are tested after the run


def _stem(relative: str) -> str:
    return relative.rsplit("/", 1)[-1].removesuffix(".ipynb")


def test_lessons_with_widgets_include_the_explorer_and_the_playground() -> None:
    assert {TREE_LESSON, TRAINING_LESSON} <= set(LIVE_LESSONS), LIVE_LESSONS
    assert SAVED_LESSONS, "every lesson shows a widget: none is judged on its saved outputs"


@pytest.mark.parametrize("lesson", LIVE_LESSONS, ids=_stem)
def test_lesson_runs_from_the_run_menu(
    lesson: str,
    notebooks: Any,
    lab_server: LabServer,
    save_screenshot: Callable[[Any, str], Path],
) -> None:
    page = notebooks.run(lesson, keep=lesson in KEEP_OPEN)
    try:
        connections = [
            json.loads(f.read_text())["transport"] for f in lab_server.runtime.glob("kernel-*.json")
        ]
        assert connections and set(connections) == {"ipc"}, (
            f"{lesson}: kernels should talk over unix sockets, not TCP ports: {connections}"
        )
        problems = page.problems()
        assert not problems, f"{lesson} after Run > Run All Cells:\n  " + "\n  ".join(problems)
        _assert_shows_its_outputs(page, lesson, save_screenshot)
    finally:
        if lesson not in KEEP_OPEN:
            page.close()


@pytest.mark.parametrize("lesson", SAVED_LESSONS, ids=_stem)
def test_lesson_shows_its_saved_outputs(
    lesson: str, notebooks: Any, save_screenshot: Callable[[Any, str], Path]
) -> None:
    page = notebooks.show(lesson)
    try:
        _assert_shows_its_outputs(page, lesson, save_screenshot)
    finally:
        page.close()


def _assert_shows_its_outputs(
    page: NotebookPage, lesson: str, save_screenshot: Callable[[Any, str], Path]
) -> None:
    """A screenshot; then every PNG the committed notebook shows is on the page, the page logged
    no error, and axe finds nothing in the outputs."""
    save_screenshot(page, _stem(lesson))
    missing = page.missing_images()
    assert not missing, f"{lesson}: no PNG image on the page for " + ", ".join(missing)
    assert not page.console, f"{lesson}: errors in the page: {page.console}"
    found = axe_problems(page.page, _outputs_only(page))
    assert not found, f"{lesson}'s outputs, axe (WCAG 2.1 AA):\n  " + "\n  ".join(found)


def _outputs_only(page: NotebookPage) -> dict:
    """What axe checks in JupyterLab: the lesson's outputs and widgets, not JupyterLab's own chrome
    (its prompts, toolbars, menus). Also left out: the ``<img>`` of JupyterLab's image renderer,
    which never writes an ``alt`` (no notebook front end reads one from an output yet; see the
    Jupyter enhancement pre-proposal jupyter/enhancement-proposals#120). The course's pictures
    carry their alt text in the output all the same (tests/course/test_notebooks.py), and the
    website shows it."""
    panel = page.panel
    return {
        "include": [[f"{panel} .jp-OutputArea-output"]],
        "exclude": [[f"{panel} .jp-RenderedImage > img"]],
    }


def _widget(page: NotebookPage, selector: str, what: str) -> Any:
    widget = page.page.locator(f"{page.panel} {selector}")
    if widget.count() == 0:
        pytest.fail(
            f"{page.relative} shows no {what} (no `{selector}` on the page after Run All Cells): "
            f"the lesson needs a cell that ends with it",
            pytrace=False,
        )
    return widget.first


# ---------------------------------------------------------------------------------------------
# The training playground

_STATS_SETTLED_JS = r"""([root, before]) => {
    const stats = root.querySelector('.course-training-stats');
    const box = root.querySelector('.course-lr-box input');
    const plot = root.querySelector('.course-loss-plot img');
    if (!stats || !box || !plot) return false;
    const text = [...stats.querySelectorAll('code')].map(c => c.textContent).join('\n');
    const m = text.match(/learning rate ([-+0-9.eE]+)/);
    const shown = parseFloat(box.value);
    return !!m && text !== before.stats && plot.src !== before.src
        && Math.abs(parseFloat(m[1]) - shown) <= 0.01 * Math.abs(shown);
}"""


def _playground_state(root: Any) -> dict:
    """Read with textContent: innerText is empty while JupyterLab skips rendering an offscreen
    cell."""
    return root.evaluate(
        """(root) => { const box = root.querySelector('.course-lr-box input');
            const plot = root.querySelector('.course-loss-plot img');
            return {stats: [...root.querySelectorAll('.course-training-stats code')]
                        .map(c => c.textContent).join('\\n'),
                    src: plot.getAttribute('src'), alt: plot.getAttribute('alt'),
                    shown: box.value.trim()}; }"""
    )


def _without_image(state: dict) -> dict:
    return {key: value for key, value in state.items() if key != "src"}


def _wait_for_redraw(root: Any, before: dict, how: str) -> dict:
    """Wait until the kernel has answered the last choice: the stats show the menu's value and
    both the text and the plot image differ from ``before``."""
    try:
        root.page.wait_for_function(
            _STATS_SETTLED_JS,
            arg=[root.element_handle(), {"stats": before["stats"], "src": before["src"]}],
            timeout=WIDGET_TIMEOUT * 1000,
            polling=100,
        )
    except PlaywrightTimeout as error:
        now = _playground_state(root)
        raise AssertionError(
            f"after choosing a learning rate {how}, the playground did not redraw within "
            f"{WIDGET_TIMEOUT} s:\n"
            f"before: {_without_image(before)}\nnow: {_without_image(now)}"
        ) from error
    return _playground_state(root)


def _assert_redrawn_without_compiling(before: dict, after: dict, how: str) -> None:
    old, new = parse_stats(before["stats"]), parse_stats(after["stats"])
    assert not new["failed"], f"choosing a learning rate {how}: the run failed:\n{after['stats']}"
    assert None not in (new["lr"], new["final_loss"], new["total"]), (
        f"unexpected stats text:\n{after['stats']}"
    )
    assert not math.isclose(new["lr"], old["lr"]), f"{how}: learning rate still {old['lr']}"
    assert new["final_loss"] != old["final_loss"], f"{how}: final loss still {old['final_loss']}"
    assert after["src"] != before["src"], f"{how}: the loss plot image did not change"
    assert after["alt"].startswith(f"Loss curve, learning rate {float(after['shown']):.3g}, "), (
        after["alt"]
    )
    assert new["total"] == old["total"] and new["this_change"] == 0, (
        f"choosing a learning rate {how} compiled again:\nbefore: {before['stats']}\nafter: "
        f"{after['stats']}"
    )


def test_training_playground_learning_rate_by_keyboard_and_mouse(
    notebooks: Any, save_screenshot: Callable[[Any, str], Path]
) -> None:
    page = notebooks.run(TRAINING_LESSON, keep=True)
    root = _widget(page, ".course-training", "viz.TrainingPlayground")
    root.scroll_into_view_if_needed()
    box = root.locator(".course-lr-box input")
    start = _playground_state(root)
    first = parse_stats(start["stats"])
    assert first["total"] is not None and not first["failed"], (
        f"the playground's first run:\n{start['stats']}"
    )
    # A screen reader names the box by its label and reads the value shown.
    label = root.locator(f"label[for='{box.get_attribute('id')}']")
    assert label.text_content().strip() == "or type a learning rate"

    # Keyboard: focus the box, type a new rate, Enter.
    box.focus()
    box.press("Control+A")
    box.press_sequentially("0.2")
    box.press("Enter")
    after_keys = _wait_for_redraw(root, start, "with the keyboard")
    _assert_redrawn_without_compiling(start, after_keys, "with the keyboard")
    assert float(after_keys["shown"]) == 0.2

    # Keyboard again: a rate on the log scale of buttons, pressed with the space bar.
    scale = root.locator(".course-lr-scale button")
    rates = [text.strip() for text in scale.all_text_contents()]
    scale.nth(rates.index("0.1")).focus()
    root.page.keyboard.press("Space")
    after_scale = _wait_for_redraw(root, after_keys, "on the scale, with the space bar")
    _assert_redrawn_without_compiling(after_keys, after_scale, "on the scale")
    assert float(after_scale["shown"]) == 0.1

    # Mouse: click into the box, type a small rate, click away.
    box.click(click_count=3)
    box.press_sequentially("0.002")
    root.locator(".course-training-stats").click()
    after_mouse = _wait_for_redraw(root, after_scale, "with the mouse")
    _assert_redrawn_without_compiling(after_scale, after_mouse, "with the mouse")
    assert float(after_mouse["shown"]) == 0.002

    # A rate off the scale is refused in words, and the box shows the rate in use again.
    box.click(click_count=3)
    box.press_sequentially("5")
    box.press("Enter")
    refusal = root.locator(".course-lr-notice [role=status]", has_text="5 is outside the scale")
    refusal.wait_for(timeout=WIDGET_TIMEOUT * 1000)
    assert float(box.input_value()) == 0.002

    # Every control of the widget shows the keyboard focus: each rate's button, then the boxes.
    scale.first.focus()
    root.page.keyboard.press("Shift+Tab")
    stops, unseen = visible_focus_changes(
        root.page, limit=len(rates) + 5, within=".course-training"
    )
    assert stops == len(rates) + 2, f"{len(rates)} rate buttons and two boxes, not {stops} stops"
    assert not unseen, f"focus not visible at: {unseen}"
    save_screenshot(root, "02_training_playground_after_choices")


# ---------------------------------------------------------------------------------------------
# The tree explorer

# A row's title is its key path; a node's adds " · expanded" or " · collapsed" (read as `path`).
_ROWS_JS = """(root) => [...root.querySelectorAll('.course-explorer-tree button')].map(b => ({
    title: b.title.split(' · ')[0], state: b.title.split(' · ')[1] || null, text: b.textContent,
    leaf: b.classList.contains('course-explorer-leaf'),
    node: b.classList.contains('course-explorer-node'),
    expanded: b.classList.contains('course-explorer-expanded')}))"""


def _rows(root: Any) -> list[dict]:
    return root.evaluate(_ROWS_JS)


def _click_row(root: Any, title: str) -> None:
    buttons = root.locator(".course-explorer-tree button")
    index = next(i for i, row in enumerate(_rows(root)) if row["title"] == title)
    buttons.nth(index).scroll_into_view_if_needed()
    buttons.nth(index).click()


def test_tree_explorer_expands_a_node_to_its_leaves(
    notebooks: Any, save_screenshot: Callable[[Any, str], Path]
) -> None:
    page = notebooks.run(TREE_LESSON, keep=True)
    root = _widget(page, ".course-explorer", "viz.TreeExplorer")
    root.scroll_into_view_if_needed()
    leaves_before = {row["title"] for row in _rows(root) if row["leaf"]}

    # Open the first closed node, then its first closed child, ... until leaves show up under it.
    opened: list[str] = []
    scope = None
    for _ in range(8):
        closed = [
            row
            for row in _rows(root)
            if row["node"]
            and not row["expanded"]
            and (scope is None or row["title"].startswith(scope))
        ]
        assert closed, f"no closed node to open under {scope!r}; rows: {_rows(root)}"
        path = closed[0]["title"]
        _click_row(root, path)
        root.page.wait_for_function(
            """([root, path]) => [...root.querySelectorAll('.course-explorer-tree button')]
                .some(b => b.title === path + ' · expanded'
                           && b.classList.contains('course-explorer-expanded'))
                && [...root.querySelectorAll('.course-explorer-tree button')].some(b =>
                   b.title.startsWith(path) && b.title.split(' · ')[0].length > path.length)""",
            arg=[root.element_handle(), path],
            timeout=WIDGET_TIMEOUT * 1000,
        )
        opened.append(path)
        scope = path
        new_leaves = [
            row
            for row in _rows(root)
            if row["leaf"] and row["title"].startswith(path) and row["title"] not in leaves_before
        ]
        if new_leaves:
            break
    else:
        pytest.fail(f"opened {opened} and no leaf appeared")

    assert all(row["text"].lstrip().startswith("•") for row in new_leaves), new_leaves
    # Each node says in words whether it is open (the arrow alone would not tell a screen reader).
    states = {row["title"]: row["state"] for row in _rows(root) if row["node"]}
    assert all(states[path] == "expanded" for path in opened), states
    assert set(states.values()) <= {"expanded", "collapsed", None}
    # A leaf's row, clicked, fills the details pane with its path.
    leaf = new_leaves[0]["title"]
    _click_row(root, leaf)
    details = root.locator(".course-explorer-details")
    details.filter(has_text=leaf).wait_for(timeout=WIDGET_TIMEOUT * 1000)
    assert re.search(r"^leaf ", details.text_content(), re.MULTILINE), details.text_content()
    save_screenshot(root, "01_tree_explorer_expanded")

    # From the keyboard: every row the Tab key reaches shows that it has the focus.
    root.locator(".course-explorer-tree button").first.focus()
    root.page.keyboard.press("Shift+Tab")
    stops, unseen = visible_focus_changes(root.page, limit=60, within=".course-explorer")
    assert stops >= 5, f"only {stops} rows reached by Tab"
    assert not unseen, f"focus not visible at: {unseen}"
