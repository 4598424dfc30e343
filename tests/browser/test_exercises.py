"""A generated exercise notebook in JupyterLab: the first self-check says "not attempted"; after the
answer is typed into the exercise cell and both cells are run with Shift+Enter, it says "passed"."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from lab_browser import WIDGET_TIMEOUT, LabServer, PlaywrightTimeout, editor_text, type_into_cell

pytestmark = pytest.mark.browser

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
        before = page.output_text(check_at)
        assert re.search(rf"{re.escape(exercise_id)}: not attempted", before), (
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
                    f"{exercise_id}: passed",
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
    finally:
        page.close()
