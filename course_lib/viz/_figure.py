"""The figures the course draws: detached from pyplot, carrying a description of what they show,
which a notebook keeps as the picture's plain text and alt text, and shown sharp at the size they
are drawn for: a PNG of twice the pixels, which the notebook and the website show at half its size.

A point of a drawing is `PX_PER_PT` CSS pixels on the page, as with Jupyter's own 100 dpi figures;
the drawings fit `MAX_WIDTH_PX`, so that nothing scales them down on a laptop screen, and their
smallest text is `MIN_LABEL_PT`, which is at least `MIN_LABEL_PX` pixels high there.
"""

from __future__ import annotations

import base64
import io
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

PX_PER_PT = 100 / 72
"""CSS pixels per point of a drawing on the page (Jupyter's inline figures are 100 dpi)."""
SHARPNESS = 2
"""Pixels of the PNG per CSS pixel: sharp on a high-resolution screen."""
MAX_WIDTH_PX = 720
"""The widest a drawing is shown: the website's content column on a 1366 px laptop screen is
757 px wide, a notebook's output area in JupyterLab wider."""
MIN_LABEL_PX = 11
"""The smallest text of a drawing, in CSS pixels, where it is shown at its size."""
MIN_LABEL_PT = 8.0
"""The smallest font size the drawings use: 8 pt is 11.1 CSS pixels."""


class DescribedFigure(Figure):
    """A matplotlib ``Figure`` with a :attr:`description` in words.

    A notebook shows the picture as a PNG of `SHARPNESS` times the pixels, with its ``width`` in
    CSS pixels (`PX_PER_PT` per point) in the output's metadata; the description is the output's
    ``text/plain`` (instead of ``<Figure size 400x300 with 1 Axes>``) and its ``alt`` (IPython's
    place for an image's alternative text), which the course's website gives the ``<img>``.

    >>> fig = detached_figure((2, 1))
    >>> fig.description = "an empty picture"
    >>> data, metadata = fig._repr_mimebundle_()
    >>> data["text/plain"], metadata
    ('an empty picture', {'image/png': {'width': 200, 'alt': 'an empty picture'}})
    """

    description = ""

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, str], dict[str, dict[str, Any]]] | None:
        if not self.description:
            return None  # IPython's own formatters do it all
        png, metadata = _png_output(self)
        return {"text/plain": self.description, "image/png": png}, {"image/png": metadata}

    def sharp_png(self) -> tuple[bytes, int]:
        """The picture as PNG bytes at `SHARPNESS` times its pixels, and its width on the page in
        CSS pixels (the PNG's width divided by `SHARPNESS`)."""
        buffer = io.BytesIO()
        # The PNG's width, a multiple of SHARPNESS, is the page width times SHARPNESS exactly.
        self.savefig(buffer, format="png", dpi=72 * PX_PER_PT * SHARPNESS, facecolor="white")
        png = buffer.getvalue()
        return png, int.from_bytes(png[16:20], "big") // SHARPNESS


def _png_output(fig: DescribedFigure) -> tuple[str, dict[str, Any]]:
    """The figure's PNG output: base64 text, and metadata with its alt text and page width."""
    png, width = fig.sharp_png()
    metadata: dict[str, Any] = {"width": width}
    if fig.description:
        metadata["alt"] = fig.description
    return base64.b64encode(png).decode(), metadata


def _show_sharp_in_ipython() -> None:
    """Make IPython show a `DescribedFigure` by `_png_output`. Its inline backend registers a PNG
    printer for every matplotlib ``Figure``, which IPython prefers to a figure's own
    ``_repr_mimebundle_`` and which draws at one pixel per pixel, without the alt text; a printer
    for the subclass comes first."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:
        shell.display_formatter.formatters["image/png"].for_type(DescribedFigure, _png_output)


def detached_figure(size: tuple[float, float], **options: Any) -> DescribedFigure:
    """A new `DescribedFigure` of ``size`` inches (``options`` go to ``plt.figure``).

    It is made by pyplot, which loads the notebook's backend and with it the formatter that shows
    figures as images, then closed, so that a notebook shows it once, as the cell's value, and
    not a second time when the cell ends; it keeps an Agg canvas for saving and measuring.
    """
    fig = plt.figure(figsize=size, FigureClass=DescribedFigure, **options)
    plt.close(fig)
    _show_sharp_in_ipython()
    FigureCanvasAgg(fig)
    assert isinstance(fig, DescribedFigure)  # pyplot's stubs say Figure
    return fig
