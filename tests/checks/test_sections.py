"""The lesson sections hints send a learner back to (``course_lib.checks._sections``): each is a
heading of its lesson as the notebook writes it, and the check modules name them only there.

These tests are about that module, so they import it.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from exercise_support import HEADINGS

from course_lib.checks import _sections
from course_lib.checks._spec import Exercise, Mistake

CHECKS = Path(_sections.__file__).parent
HEADING_LIKE = re.compile(r"\d\d ")


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


def _reread_positions(module: ast.Module) -> dict[str, int]:
    """Where each record or function a check module calls takes ``reread`` by position: the
    spec's records, and the module's own classes and functions with a field or parameter of
    that name."""
    positions = {
        record.__name__: [field.name for field in dataclasses.fields(record)].index("reread")
        for record in (Mistake, Exercise)
    }
    for node in ast.walk(module):
        if isinstance(node, ast.ClassDef):
            names = [
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            ]
        elif isinstance(node, ast.FunctionDef):
            names = [arg.arg for arg in node.args.posonlyargs + node.args.args]
        else:
            continue
        if "reread" in names:
            positions[node.name] = names.index("reread")
    return positions


def _rereads(module: ast.Module) -> list[ast.expr]:
    """Every value a check module passes as ``reread``, by keyword or by position."""
    positions = _reread_positions(module)
    values: list[ast.expr] = []
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        values += [keyword.value for keyword in node.keywords if keyword.arg == "reread"]
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if name in positions and len(node.args) > positions[name]:
            values.append(node.args[positions[name]])
    return values


def _forwards(value: ast.expr) -> bool:
    """Whether ``value`` hands on a reread given elsewhere: a variable or field named reread."""
    return (isinstance(value, ast.Name) and value.id == "reread") or (
        isinstance(value, ast.Attribute) and value.attr == "reread"
    )


def _unnamed_sections(source: str) -> list[str]:
    """Where a check module's source names a section other than by a constant of ``_sections``:
    a text shaped like a heading, or a reread that is no name imported from there."""
    module = ast.parse(source)
    imported = {
        alias.asname or alias.name
        for node in ast.walk(module)
        if isinstance(node, ast.ImportFrom) and node.module == "_sections"
        for alias in node.names
    }
    found = [
        f"{node.lineno}: {node.value!r}"
        for node in ast.walk(module)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and HEADING_LIKE.match(node.value)
    ]
    found += [
        f"{value.lineno}: reread={ast.unparse(value)}"
        for value in _rereads(module)
        if not (isinstance(value, ast.Name) and value.id in imported) and not _forwards(value)
    ]
    return found


def test_a_section_written_out_is_found_stale_or_not() -> None:
    """A heading typed as text is found whether or not a notebook still has it, and so is a reread
    that is no constant; a constant, or a reread handed on, is not."""
    source = """
from ._sections import MASKS
from ._spec import Mistake
a = Mistake("what", "idea", "fix", reread="09 Masks by key pathh")
b = Mistake("what", "idea", "fix", "09 Masks")
c = Mistake("what", "idea", "fix", GONE)
d = Mistake("what", "idea", "fix", reread=MASKS)
e = Mistake("what", "idea", "fix", steps.reread)
"""
    assert sorted(_unnamed_sections(source)) == [
        "4: '09 Masks by key pathh'",
        "4: reread='09 Masks by key pathh'",
        "5: '09 Masks'",
        "5: reread='09 Masks'",
        "6: reread=GONE",
    ]


def test_the_check_modules_name_sections_only_through_the_constants() -> None:
    """No check module writes a heading as text of its own or cites a section by anything but a
    constant of ``_sections``, and each constant is cited."""
    written: list[str] = []
    cited: set[str] = set()
    for path in sorted(CHECKS.glob("_*.py")):
        if path.name in ("__init__.py", "_sections.py"):
            continue
        source = path.read_text(encoding="utf-8")
        written += [f"{path.name}:{place}" for place in _unnamed_sections(source)]
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.module == "_sections":
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
