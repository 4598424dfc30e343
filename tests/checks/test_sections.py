"""The lesson sections hints send a learner back to (``course_lib.checks._sections``): each is a
heading of its lesson as the notebook writes it, and the check modules name them only there.

These tests are about that module, so they import it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from exercise_support import HEADINGS

from course_lib.checks import _sections

CHECKS = Path(_sections.__file__).parent
SECTION = re.compile(r"\d\d \S")


def _constants() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(_sections).items()
        if name.isupper() and isinstance(value, str)
    }


def test_each_section_is_a_heading_of_its_lesson() -> None:
    """A renamed heading fails here, before a hint sends a learner to a section that is gone."""
    constants = _constants()
    assert constants
    missing = {name: text for name, text in constants.items() if text not in HEADINGS}
    assert not missing, missing


def test_the_check_modules_name_sections_only_through_the_constants() -> None:
    """No check module writes a heading as text of its own, and each constant is cited."""
    written: list[str] = []
    cited: set[str] = set()
    for path in sorted(CHECKS.glob("_*.py")):
        if path.name in ("__init__.py", "_sections.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if SECTION.match(node.value) and node.value in HEADINGS:
                    written.append(f"{path.name}:{node.lineno} {node.value!r}")
            elif isinstance(node, ast.ImportFrom) and node.module == "_sections":
                cited.update(alias.name for alias in node.names)
    assert not written, written
    assert cited == set(_constants()), set(_constants()) ^ cited


def test_no_check_sends_a_learner_ahead_to_a_later_lesson() -> None:
    """Every section a lesson's checks cite, for an exercise or for any of its mistakes, is in
    that lesson or an earlier one: a learner of lesson 02 has not met lesson 04 yet."""
    ahead: list[str] = []
    for path in sorted(CHECKS.glob("_lesson[0-9][0-9].py")):
        lesson = path.stem[-2:]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "_sections":
                for alias in node.names:
                    section = getattr(_sections, alias.name)
                    if section[:2] > lesson:
                        ahead.append(f"{path.name}: {alias.name} ({section!r})")
    assert not ahead, ahead
