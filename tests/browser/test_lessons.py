"""Every lesson runs in JupyterLab from the Run menu without errors and shows its plots; the
training playground (lesson 02) and the tree explorer (lesson 01) respond to the mouse and keyboard.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lab_browser import (
    ROOT,
    WIDGET_TIMEOUT,
    LabServer,
    NotebookPage,
    PlaywrightTimeout,
    parse_stats,
)

pytestmark = pytest.mark.browser

LESSONS = sorted(
    p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")
)
TREE_LESSON = "notebooks/01_what_is_a_pytree.ipynb"
TRAINING_LESSON = "notebooks/02_mapping_and_sgd.ipynb"
KEEP_OPEN = {TREE_LESSON, TRAINING_LESSON}  # their widgets are tested after the run


def _stem(relative: str) -> str:
    return relative.rsplit("/", 1)[-1].removesuffix(".ipynb")


@pytest.mark.parametrize("lesson", LESSONS, ids=_stem)
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
        save_screenshot(page, _stem(lesson))
        problems = page.problems()
        assert not problems, f"{lesson} after Run > Run All Cells:\n  " + "\n  ".join(problems)
        missing = page.missing_images()
        assert not missing, f"{lesson}: no PNG image on the page for " + ", ".join(missing)
        assert not page.console, f"{lesson}: errors in the page: {page.console}"
    finally:
        if lesson not in KEEP_OPEN:
            page.close()


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
    const readout = root.querySelector('.course-lr-slider .widget-readout');
    const plot = root.querySelector('img.course-loss-plot');
    if (!stats || !readout || !plot) return false;
    const text = [...stats.querySelectorAll('code')].map(c => c.textContent).join('\n');
    const m = text.match(/learning rate ([-+0-9.eE]+)/);
    const shown = parseFloat(readout.textContent);
    return !!m && text !== before.stats && plot.src !== before.src
        && Math.abs(parseFloat(m[1]) - shown) <= 0.01 * Math.abs(shown);
}"""


def _playground_state(root: Any) -> dict:
    """Read with textContent: innerText is empty while JupyterLab skips rendering an offscreen
    cell."""
    return root.evaluate(
        """(root) => ({
            stats: [...root.querySelectorAll('.course-training-stats code')]
                .map(c => c.textContent).join('\\n'),
            src: root.querySelector('img.course-loss-plot').getAttribute('src'),
            readout: root.querySelector('.course-lr-slider .widget-readout').textContent.trim()})"""
    )


def _wait_for_redraw(root: Any, before: dict, how: str) -> dict:
    """Wait until the kernel has answered the last move: the stats show the slider's value and both
    the text and the plot image differ from ``before``."""
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
            f"after moving the learning rate {how}, the playground did not redraw within "
            f"{WIDGET_TIMEOUT} s:\n"
            f"before: {before}\nnow: {now}"
        ) from error
    return _playground_state(root)


def _assert_redrawn_without_compiling(before: dict, after: dict, how: str) -> None:
    old, new = parse_stats(before["stats"]), parse_stats(after["stats"])
    assert not new["failed"], f"moving the learning rate {how}: the run failed:\n{after['stats']}"
    assert None not in (new["lr"], new["final_loss"], new["total"]), (
        f"unexpected stats text:\n{after['stats']}"
    )
    assert not math.isclose(new["lr"], old["lr"]), f"{how}: learning rate still {old['lr']}"
    assert new["final_loss"] != old["final_loss"], f"{how}: final loss still {old['final_loss']}"
    assert after["src"] != before["src"], f"{how}: the loss plot image did not change"
    assert new["total"] == old["total"] and new["this_change"] == 0, (
        f"moving the learning rate {how} compiled again:\nbefore: {before['stats']}\nafter: "
        f"{after['stats']}"
    )


def test_training_playground_learning_rate_by_keyboard_and_drag(
    notebooks: Any, save_screenshot: Callable[[Any, str], Path]
) -> None:
    page = notebooks.run(TRAINING_LESSON, keep=True)
    root = _widget(page, ".course-training", "viz.TrainingPlayground")
    root.scroll_into_view_if_needed()
    handle = root.locator(".course-lr-slider .noUi-handle")
    start = _playground_state(root)
    first = parse_stats(start["stats"])
    assert first["total"] is not None and not first["failed"], (
        f"the playground's first run:\n{start['stats']}"
    )

    # Keyboard: focus the handle, three steps to the right.
    handle.focus()
    for _ in range(3):
        handle.press("ArrowRight")
    after_keys = _wait_for_redraw(root, start, "with the keyboard")
    _assert_redrawn_without_compiling(start, after_keys, "with the keyboard")
    assert float(after_keys["readout"]) > float(start["readout"]), (
        "ArrowRight did not raise the learning rate"
    )

    # Mouse: drag the handle left by a fifth of the track.
    handle.scroll_into_view_if_needed()
    track = root.locator(".course-lr-slider .noUi-base").bounding_box()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    mouse = page.page.mouse
    mouse.move(x, y)
    mouse.down()
    mouse.move(x - track["width"] / 5, y, steps=8)
    mouse.up()
    after_drag = _wait_for_redraw(root, after_keys, "by dragging")
    _assert_redrawn_without_compiling(after_keys, after_drag, "by dragging")
    assert float(after_drag["readout"]) < float(after_keys["readout"]), (
        "dragging left did not lower the learning rate"
    )

    save_screenshot(root, "02_training_playground_after_moves")


# ---------------------------------------------------------------------------------------------
# The tree explorer

_ROWS_JS = """(root) => [...root.querySelectorAll('.course-explorer-tree button')].map(b => ({
    title: b.title, text: b.textContent,
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
                .some(b => b.title === path && b.classList.contains('course-explorer-expanded'))
                && [...root.querySelectorAll('.course-explorer-tree button')].some(b =>
                   b.title.startsWith(path) && b.title.length > path.length)""",
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
    # A leaf's row, clicked, fills the details pane with its path.
    leaf = new_leaves[0]["title"]
    _click_row(root, leaf)
    details = root.locator(".course-explorer-details")
    details.filter(has_text=leaf).wait_for(timeout=WIDGET_TIMEOUT * 1000)
    assert re.search(r"^leaf ", details.text_content(), re.MULTILINE), details.text_content()
    save_screenshot(root, "01_tree_explorer_expanded")
