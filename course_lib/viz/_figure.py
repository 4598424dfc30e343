"""The figures the course draws: detached from pyplot, and carrying a description of what they show,
which a notebook keeps as the picture's plain text and alt text."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


class DescribedFigure(Figure):
    """A matplotlib ``Figure`` with a :attr:`description` in words.

    A notebook shows the picture as usual, with the description as the output's ``text/plain``
    (instead of ``<Figure size 400x300 with 1 Axes>``) and as its ``alt`` (IPython's place for an
    image's alternative text, in the output's metadata), which the course's website gives the
    ``<img>``.

    >>> fig = detached_figure((2, 1))
    >>> fig.description = "an empty picture"
    >>> fig._repr_mimebundle_()
    ({'text/plain': 'an empty picture'}, {'image/png': {'alt': 'an empty picture'}})
    """

    description = ""

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, str], dict[str, dict[str, str]]] | None:
        if not self.description:
            return None  # IPython's own formatters do it all
        return {"text/plain": self.description}, {"image/png": {"alt": self.description}}


def detached_figure(size: tuple[float, float], **options: Any) -> DescribedFigure:
    """A new `DescribedFigure` of ``size`` inches (``options`` go to ``plt.figure``).

    It is made by pyplot, which loads the notebook's backend and with it the formatter that shows
    figures as images, then closed, so that a notebook shows it once, as the cell's value, and
    not a second time when the cell ends; it keeps an Agg canvas for saving and measuring.
    """
    fig = plt.figure(figsize=size, FigureClass=DescribedFigure, **options)
    plt.close(fig)
    FigureCanvasAgg(fig)
    assert isinstance(fig, DescribedFigure)  # pyplot's stubs say Figure
    return fig
