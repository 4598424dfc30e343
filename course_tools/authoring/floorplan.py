"""The floor plan: a table of the project's packages and the grader's wings, each with the first
sentence of its own docstring, so the map in ``CONTRIBUTING.md`` says what the code says.

``make navigation`` writes it between the lines `FLOORPLAN_BEGIN` and `FLOORPLAN_END` of
``CONTRIBUTING.md`` (``--check`` reports it stale). Docstrings are read with :mod:`ast`: nothing is
imported.

>>> print(floorplan_table(Path(".")).splitlines()[2])
| `course_lib/` | course_lib: the small pytree library behind the pytree course. |
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

FLOORPLAN_BEGIN = (
    "<!-- BEGIN floor plan: `make navigation` writes it from the packages' docstrings -->"
)
FLOORPLAN_END = "<!-- END floor plan -->"
PACKAGES = (
    "course_lib",
    "course_lib/viz",
    "course_lib/checks",
    "course_tools",
    "course_tools/grade",
    "course_tools/grade/intake",
    "course_tools/grade/sandbox",
    "course_tools/grade/book",
    "course_tools/grade/grading",
    "course_tools/room",
    "course_tools/authoring",
)
"""In the order of the table: the library, then the tools; the grader's wings in import order."""
_SENTENCE = re.compile(r"(.+?[.!?])(?:\s|$)", re.DOTALL)


def first_sentence(docstring: str) -> str:
    """The docstring's first sentence, on one line.

    >>> first_sentence("Tree math.\\n\\nMore here.")
    'Tree math.'
    >>> first_sentence("The grader: it runs\\nkernels. Then more.")
    'The grader: it runs kernels.'
    """
    paragraph = docstring.strip().split("\n\n")[0]
    match = _SENTENCE.match(paragraph)
    return " ".join((match[1] if match else paragraph).split())


def floorplan_table(root: Path) -> str:
    """The markdown table of :data:`PACKAGES` under ``root``, one row each."""
    rows = ["| package | what it is |", "|---|---|"]
    for package in PACKAGES:
        source = (root / package / "__init__.py").read_text(encoding="utf-8")
        docstring = ast.get_docstring(ast.parse(source)) or ""
        text = first_sentence(docstring).replace("``", "`").replace("|", "/")
        rows.append(f"| `{package}/` | {text} |")
    return "\n".join(rows)
