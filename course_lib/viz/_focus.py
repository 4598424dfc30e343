"""A keyboard focus ring that shows on the course's widgets, in JupyterLab as on the website."""

from __future__ import annotations

import ipywidgets as widgets

FOCUS_CLASS = "course-focus"
"""The class of a widget box whose controls get the ring."""
FOCUS_COLOR = "#2563eb"
"""The ring's blue: 5.2:1 against white and 3.4:1 against JupyterLab's dark background (#111)."""
_CSS = (
    f".{FOCUS_CLASS} :focus-visible {{ outline: 3px solid {FOCUS_COLOR} !important; "
    "outline-offset: 1px; }\n"
    # The explorer's rows sit in a scrolling list, which would clip a ring drawn outside them.
    f".{FOCUS_CLASS} .course-explorer-tree :focus-visible {{ outline-offset: -3px; }}"
)


def focus_style() -> widgets.HTML:
    """An empty widget whose style sheet draws a 3 px ring around whichever control inside a box of
    class `FOCUS_CLASS` has the keyboard focus. ipywidgets' own focus mark, a 1 px border in a pale
    blue, is too faint to see (WCAG 2.4.7); the page has no other way to take the course's CSS.

    >>> "outline: 3px solid" in focus_style().value
    True
    """
    return widgets.HTML(f"<style>{_CSS}</style>", layout=widgets.Layout(display="none"))
