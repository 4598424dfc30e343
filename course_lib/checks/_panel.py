"""How a self-check's result looks: one object with a plain-text form and an HTML panel.

A notebook shows the panel (``_repr_html_``): the verdict said in a word and with an icon, its
colour only a border and a tint, each `code` span set as code and lines wrapping at spaces. nbval,
a terminal and a grader's log read the plain text (``__repr__``), which says the same.
"""

import dataclasses
import html
import re
from typing import Literal

Tone = Literal["passed", "incorrect", "flagged", "waiting"]

_ICONS: dict[Tone, str] = {"passed": "✓", "incorrect": "✗", "flagged": "⚠", "waiting": "…"}
_COLOURS: dict[Tone, str] = {
    "passed": "var(--jp-success-color1, #2e7d32)",
    "incorrect": "var(--jp-error-color1, #c62828)",
    "flagged": "var(--jp-warn-color1, #ef6c00)",
    "waiting": "var(--jp-info-color1, #00838f)",
}
"""A border and a faint tint only: the words keep the theme's own text colour, and its contrast."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Row:
    """One line under a panel's header: an optional label (``"input"``) and its text."""

    text: str
    label: str = ""
    code: bool = False  # the whole text is code (a case's input), not prose with `code` spans


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckPanel:
    """What one check shows.

    >>> panel = CheckPanel(exercise="01.count", tone="incorrect", word="incorrect",
    ...                    points="0/2 points", rows=(Row(text="returned `2`"),))
    >>> panel
    01.count: incorrect (0/2 points)
      returned `2`
    >>> "<code>2</code>" in panel._repr_html_()
    True
    """

    exercise: str
    tone: Tone
    word: str  # the verdict in words: "passed", "incorrect", "not attempted yet", ...
    points: str = ""  # "2/2 points, 10 cases"
    next_step: str = ""  # "run the check again for a hint"
    rows: tuple[Row, ...] = ()

    @property
    def header(self) -> str:
        points = f" ({self.points})" if self.points else ""
        step = f"; {self.next_step}" if self.next_step else ""
        return f"{self.exercise}: {self.word}{points}{step}"

    @property
    def text(self) -> str:
        lines = [self.header]
        for row in self.rows:
            if row.label:
                lines.append(f"  {row.label}: {row.text}")
            else:
                lines += [f"  {line}" for line in row.text.splitlines()]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        colour = _COLOURS[self.tone]
        box = (
            f"border-left: 0.35em solid {colour}; padding: 0.4em 0.8em; margin: 0.2em 0;"
            f" background: color-mix(in srgb, {colour} 10%, transparent);"
            " font-family: var(--jp-content-font-family, sans-serif); line-height: 1.45;"
        )
        points = f" ({html.escape(self.points)})" if self.points else ""
        step = f" <span>{_inline(self.next_step)}</span>" if self.next_step else ""
        head = (
            f'<div style="{_LINES}"><span aria-hidden="true">{_ICONS[self.tone]}</span> '
            f"<strong>{html.escape(self.word.capitalize())}</strong>"
            f" <code>{html.escape(self.exercise)}</code>{points}{';' if step else ''}{step}</div>"
        )
        # One line between the parts: no space on the page, a line break in the panel's text.
        parts = "\n".join([head, *(_row_html(row) for row in self.rows)])
        return f'<div role="status" style="{box}">\n{parts}\n</div>'


def _row_html(row: Row) -> str:
    text = f"<code>{html.escape(row.text)}</code>" if row.code else _inline(row.text)
    label = f"<strong>{html.escape(row.label.capitalize())}:</strong> " if row.label else ""
    return f'<div style="{_LINES} margin-top: 0.3em;">{label}{text}</div>'


_LINES = "white-space: pre-wrap; overflow-wrap: break-word; word-break: normal;"
"""A line breaks at spaces (a word is cut only when it is longer than the line), and a message's own
line breaks stay."""

_CODE = re.compile(r"`([^`\n]+)`")


def _inline(text: str) -> str:
    """``text`` as HTML, each `span` in backticks set as code.

    >>> _inline("use `a < b` here")
    'use <code>a &lt; b</code> here'
    """
    parts = _CODE.split(text)  # the text between spans, then a span, and so on
    return "".join(
        f"<code>{html.escape(part)}</code>" if i % 2 else html.escape(part)
        for i, part in enumerate(parts)
    )
