"""A generated exercise notebook in JupyterLab: the first self-check's panel says "not attempted";
after the answer is typed into the exercise cell and both cells are run with Shift+Enter, it says
"passed". Then an answer of the wrong structure, typed into another exercise, makes its check draw
the learner's tree against the expected structure: an image under the check's panel. Run twice
more, that check shows what went wrong and both hints at once, the picture still under them."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from axe import axe_problems
from lab_browser import WIDGET_TIMEOUT, LabServer, PlaywrightTimeout, editor_text, type_into_cell

# One JupyterLab serves every test that needs one: make test runs them all in one process
# (--dist loadgroup), so that a second server and a second JupyterLab page are not started.
pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("lab")]

EXERCISES = "exercises/01_what_is_a_pytree.ipynb"
SOLUTIONS = "solutions/01_what_is_a_pytree.ipynb"


def _course(cell: dict) -> dict:
    return cell.get("metadata", {}).get("course", {}) or {}


def test_first_exercise_goes_from_not_attempted_to_passed(
    lab_server: LabServer, notebooks: Any, save_screenshot: Callable[[Any, str], Path]
) -> None:
    exercise_path = lab_server.course / EXERCISES
    if not exercise_path.exists():
        pytest.fail(
            f"{EXERCISES} is missing: `make exercises` writes it from {SOLUTIONS}", pytrace=False
        )
    exercises = nbformat.read(exercise_path, as_version=4)
    solutions = nbformat.read(lab_server.course / SOLUTIONS, as_version=4)
    exercise_at = next(
        (
            i
            for i, cell in enumerate(exercises.cells)
            if cell.cell_type == "code" and _course(cell).get("exercise")
        ),
        None,
    )
    assert exercise_at is not None, (
        f"{EXERCISES} has no cell with {{'course': {{'exercise': ...}}}} metadata"
    )
    exercise_id = _course(exercises.cells[exercise_at])["exercise"]
    check_at = next(
        (i for i, cell in enumerate(exercises.cells) if _course(cell).get("check") == exercise_id),
        None,
    )
    assert check_at is not None and check_at > exercise_at, (
        f"no check cell for {exercise_id} after its exercise"
    )
    answer = next(
        (cell.source for cell in solutions.cells if _course(cell).get("exercise") == exercise_id),
        None,
    )
    assert answer is not None, f"{SOLUTIONS} has no cell for {exercise_id}"
    assert "NotImplementedError" in exercises.cells[exercise_at].source

    page = notebooks.run(EXERCISES)
    try:
        problems = page.problems()
        assert not problems, f"{EXERCISES} as generated, after Run All Cells:\n  " + "\n  ".join(
            problems
        )
        before = _panel_text(page, check_at)
        assert re.search(rf"Not attempted yet {re.escape(exercise_id)}\b", before), (
            f"the check of {exercise_id} before any answer printed:\n{before}"
        )

        typed = type_into_cell(page, exercise_at, answer)
        assert typed == answer, f"the editor holds\n{typed!r}\ninstead of\n{answer!r}"
        prompt = page.cell(exercise_at).locator(".jp-InputArea-prompt")
        count_before = prompt.text_content()
        page.page.keyboard.press("Shift+Enter")  # run the exercise cell
        page.page.wait_for_function(
            "([el, before]) => /\\[\\d+\\]/.test(el.textContent) && el.textContent !== before",
            arg=[prompt.element_handle(), count_before],
            timeout=WIDGET_TIMEOUT * 1000,
        )
        page.cell(check_at).locator(".jp-InputArea-prompt").click()  # select the check cell
        page.page.keyboard.press("Shift+Enter")  # and run it
        try:
            page.page.wait_for_function(
                "([area, text]) => area.textContent.includes(text)",
                arg=[
                    page.cell(check_at).locator(".jp-OutputArea").element_handle(),
                    f"Passed {exercise_id} (",
                ],
                timeout=WIDGET_TIMEOUT * 1000,
            )
        except PlaywrightTimeout as error:
            raise AssertionError(
                f"after typing the answer and running both cells, the check of {exercise_id} "
                "printed:\n"
                f"{page.output_text(check_at)}\n(exercise cell output: "
                f"{page.output_text(exercise_at)!r}, "
                f"editor: {editor_text(page, exercise_at)!r})"
            ) from error
        save_screenshot(page, "exercises_01_after_first_answer")

        # a wrong structure: the check draws the picture under its text
        shaped_at = _cell_index(exercises, "exercise", WRONG_STRUCTURE_EXERCISE)
        shaped_check_at = _cell_index(exercises, "check", WRONG_STRUCTURE_EXERCISE)
        type_into_cell(page, shaped_at, WRONG_STRUCTURE_ANSWER)
        _run_cell(page, shaped_at)
        _run_cell(page, shaped_check_at)
        picture = page.cell(shaped_check_at).locator(".jp-OutputArea img[src^='data:image/png']")
        try:
            picture.first.wait_for(timeout=WIDGET_TIMEOUT * 1000)
        except PlaywrightTimeout as error:
            raise AssertionError(
                f"a wrong structure for {WRONG_STRUCTURE_EXERCISE} showed no picture under its "
                f"check; the check printed:\n{page.output_text(shaped_check_at)}"
            ) from error
        text = _panel_text(page, shaped_check_at)
        assert f"Incorrect {WRONG_STRUCTURE_EXERCISE}" in text, text
        assert "the picture below marks where your result's structure differs" in text, text
        assert "Hint 1/2" not in text, text
        after_header = text.split("; run the check again for a hint", 1)[1]
        diagnosis = after_header.split("(the picture below", 1)[0].strip()  # and its input
        save_screenshot(page, "exercises_01_wrong_structure_picture")

        # the same wrong answer checked twice more: one panel with what went wrong and both hints
        for _ in range(2):
            _run_cell(page, shaped_check_at)
        text = _panel_text(page, shaped_check_at)
        assert page.cell(shaped_check_at).locator("[role=status]").count() == 1, text
        for kept in (diagnosis, "Hint 1/2, the idea: ", "Hint 2/2, the fix: "):
            assert kept in text, f"{kept!r} is not in the third check's panel:\n{text}"
        assert text.index(diagnosis) < text.index("Hint 1/2") < text.index("Hint 2/2"), text
        assert picture.count() == 1, "the third check shows no picture under its panel"
        save_screenshot(page.cell(shaped_check_at), "exercises_01_third_check_both_hints")
        # the panels pass axe in JupyterLab's light theme and in its dark one
        for theme in ("JupyterLab Dark", "JupyterLab Light"):
            found = axe_problems(page.page, _panels(page))
            assert not found, "the check panels, axe (WCAG 2.1 AA):\n  " + "\n  ".join(found)
            _use_theme(page, theme)
            if theme == "JupyterLab Dark":
                save_screenshot(page.cell(shaped_check_at), "exercises_01_check_dark_theme")
    finally:
        page.close()


# an exercise of lesson 01 that returns a tree, and an answer that returns the leaves as a list
WRONG_STRUCTURE_EXERCISE = "01.replace_leaves"
WRONG_STRUCTURE_ANSWER = "def replace_leaves(tree, values):\n    return list(values)"


def _cell_index(notebook: Any, role: str, exercise_id: str) -> int:
    """The index of the cell whose course metadata says it is ``exercise_id``'s ``role``."""
    found = [i for i, cell in enumerate(notebook.cells) if _course(cell).get(role) == exercise_id]
    assert found, f"no {role} cell for {exercise_id} in {EXERCISES}"
    return found[0]


def _panels(page: Any) -> dict:
    """axe's context: the check panels of the notebook, and nothing of JupyterLab's own."""
    return {"include": [[f"{page.panel} .jp-OutputArea-output [role=status]"]]}


def _use_theme(page: Any, theme: str) -> None:
    """Switch JupyterLab to ``theme`` (Settings > Theme) and wait until its colours apply."""
    light = "false" if "Dark" in theme else "true"
    page.page.get_by_role("menuitem", name="Settings", exact=True).click()
    page.page.locator(".lm-Menu-item", has_text="Theme").first.hover()
    page.page.locator(".lm-Menu-item", has_text=theme).first.click()
    page.page.wait_for_function(
        "light => document.body.dataset.jpThemeLight === light", arg=light, timeout=30_000
    )
    page.page.wait_for_timeout(500)  # the theme's stylesheet applies after the attribute


def _panel_text(page: Any, index: int) -> str:
    """The text of the check panel under cell ``index`` (its HTML output), or all its output's text
    when it shows no panel (then the assertions that read it say what it showed instead)."""
    panel = page.cell(index).locator(".jp-OutputArea [role=status]")
    return (panel.first.text_content() or "") if panel.count() else page.output_text(index)


def _run_cell(page: Any, index: int) -> None:
    """Select cell ``index``, run it with Shift+Enter, and wait for its new execution count."""
    prompt = page.cell(index).locator(".jp-InputArea-prompt")
    before = prompt.text_content()
    prompt.click()
    page.page.keyboard.press("Shift+Enter")
    page.page.wait_for_function(
        "([el, before]) => /\\[\\d+\\]/.test(el.textContent) && el.textContent !== before",
        arg=[prompt.element_handle(), before],
        timeout=WIDGET_TIMEOUT * 1000,
    )
