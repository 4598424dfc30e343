"""How a self-check's result looks: one object with a plain-text form and an HTML panel.

A notebook shows the panel (``_repr_html_``): the verdict said in a word and with an icon, its
colour only a border and a tint, each `code` span set as code and lines wrapping at spaces. nbval,
a terminal and a grader's log read the plain text (``__repr__``), which says the same.

A code row (a case's input) is one line that fits :data:`COLUMNS` in the plain text, cut between
words where it is longer (:func:`abridge`). The panel shows that line too, as the summary of a
disclosure whose body holds the whole text: a keyboard opens it with Enter or Space, and a screen
reader reads it as a button, collapsed or expanded.
"""

import dataclasses
import html
import re
from typing import Literal

from ._plain import abridge

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

    @property
    def prefix(self) -> str:
        """What stands before the text on its line of the plain text."""
        return f"  {self.label}: " if self.label else "  "

    @property
    def line(self) -> str:
        """A code row's text on one line of :data:`COLUMNS`, cut between words where it is
        longer; other rows' text as it is.

        >>> Row(label="input", text="{'w': f32[3],\\n 'b': None}", code=True).line
        "{'w': f32[3], 'b': None}"
        >>> row = Row(label="input", text=", ".join(["f32[2,3]"] * 12), code=True)
        >>> row.line[-21:], len(row.prefix + row.line), row.cut
        ('f32[2,3], f32[2,3], …', 100, True)
        """
        if not self.code:
            return self.text
        return abridge(" ".join(self.text.split()), COLUMNS - len(self.prefix))

    @property
    def cut(self) -> bool:
        """Whether :attr:`line` leaves out part of a code row's text (more than its line breaks)."""
        return self.code and self.line != " ".join(self.text.split())


COLUMNS = 100
"""The width of the plain text: a first message is at most six lines of it."""


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
            if row.label or row.code:
                lines.append(row.prefix + row.line)
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
        step = f" <span>{code_spans_html(self.next_step)}</span>" if self.next_step else ""
        head = (
            f'<div style="{_LINES}"><span aria-hidden="true">{_ICONS[self.tone]}</span> '
            f"<strong>{html.escape(self.word.capitalize())}</strong>"
            f" <code>{html.escape(self.exercise)}</code>{points}{';' if step else ''}{step}</div>"
        )
        # One line between the parts: no space on the page, a line break in the panel's text.
        parts = "\n".join([head, *(_row_html(row) for row in self.rows)])
        return f'<div role="status" style="{box}">\n{parts}\n</div>'


def _row_html(row: Row) -> str:
    text = f"<code>{html.escape(row.line)}</code>" if row.code else code_spans_html(row.text)
    label = f"<strong>{html.escape(row.label.capitalize())}:</strong> " if row.label else ""
    if not row.cut:
        return f'<div style="{_LINES} margin-top: 0.3em;">{label}{text}</div>'
    # The line as the plain text has it, and under it, one key press away, the whole text.
    return (
        f'<details style="margin-top: 0.3em;"><summary style="{_LINES} cursor: pointer;">'
        f"{label}{text}</summary>"
        f'<div style="{_LINES} margin: 0.2em 0 0 1.2em;"><code>{html.escape(row.text)}</code></div>'
        "</details>"
    )


_LINES = "white-space: pre-wrap; overflow-wrap: break-word; word-break: normal;"
"""A line breaks at spaces (a word is cut only when it is longer than the line), and a message's own
line breaks stay."""

_CODE = re.compile(r"`([^`\n]+)`")


def code_spans_html(text: str) -> str:
    """``text`` as HTML, each `span` in backticks set as code.

    >>> code_spans_html("use `a < b` here")
    'use <code>a &lt; b</code> here'
    """
    parts = _CODE.split(text)  # the text between spans, then a span, and so on
    return "".join(
        f"<code>{html.escape(part)}</code>" if i % 2 else html.escape(part)
        for i, part in enumerate(parts)
    )
