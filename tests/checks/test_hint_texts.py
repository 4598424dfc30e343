"""The texts the self-checks write: each piece of code in them between a pair of backticks.

The check panel sets what a pair of backticks holds on one line as code and shows an unpaired
backtick as it is, so every line of every string a checker module writes (a constant, or the
constant parts of an f-string, each replacement field standing for a word) holds an even number.
The lessons' tests check the same of the hints their wrong answers get
(``LessonChecks.test_a_hint_pairs_its_backticks``); this covers the texts no wrong answer of a
table reaches.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CHECKS = Path(__file__).resolve().parents[2] / "course_lib" / "checks"
WRITERS = sorted(
    [*CHECKS.glob("_lesson*.py")]
    + [CHECKS / f"{name}.py" for name in ("_kit", "_mistakes", "_evaluate", "_selfcheck")]
)


def texts(source: str) -> list[str]:
    """Each string of ``source``: a constant as it is, an f-string with ``x`` for each field.

    >>> texts('hint = f"returned `{got}`, expected " "`None`."')
    ['returned `x`, expected `None`.']
    """
    found = []
    inside_fstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.JoinedStr):
            parts = [v.value if isinstance(v, ast.Constant) else "x" for v in node.values]
            found.append("".join(str(part) for part in parts))
            inside_fstrings.update(id(v) for v in node.values)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in inside_fstrings
        ):
            found.append(node.value)
    return found


def unpaired(text: str) -> list[str]:
    """The lines of ``text`` with an odd number of backticks.

    >>> unpaired("use `jax.tree.map`\\nnot `jax.tree.leaves")
    ['not `jax.tree.leaves']
    """
    return [line for line in text.splitlines() if line.count("`") % 2]


@pytest.mark.parametrize("module", WRITERS, ids=lambda path: path.stem)
def test_every_text_pairs_its_backticks(module: Path) -> None:
    source = module.read_text(encoding="utf-8")
    assert [line for text in texts(source) for line in unpaired(text)] == []
