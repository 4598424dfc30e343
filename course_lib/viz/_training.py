"""A live training widget: pick a learning rate or a step count, watch the loss curve redraw, and
see whether that cost a compilation."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import count_compiles
from ._focus import FOCUS_CLASS, focus_style

RunFn = Callable[[jax.Array, int], Any]
"""``run(learning_rate, steps)``: train from the same start and return the loss at each step."""


class TrainingPlayground:
    """A learning-rate box, a step-count box and the loss curve they produce, redrawn live.

    Each change calls ``run(learning_rate, steps)`` with the learning rate as a float32 JAX
    scalar and the step count as a Python ``int``, counts the XLA compilations it causes
    (:func:`course_lib.count_compiles`), and redraws the curve. Beside it: the final loss, the
    compilations this change caused and the running total, so a learner sees that a well-written
    ``run`` compiles once, whatever the controls say. Making ``run`` that way is the lesson's job:
    pass the learning rate through as an array, and loop over a traced step count (a
    ``fori_loop`` up to ``steps`` into a buffer of ``max_steps`` losses, returning the first
    ``steps`` of them as NumPy) rather than making ``steps`` static. An error in ``run`` is
    shown in the stats instead of the curve.

    The controls are two number boxes, the learning rate (within ``lr_range``) and the steps: a
    new value counts when it is entered (Enter, or leaving the box) or stepped with the arrow keys.
    They are native form controls, which a screen reader names by their labels and reads as shown,
    and which JupyterLab leaves every key to (it takes the arrow keys from a menu or a slider in a
    notebook, to move between cells). The curve is an image whose alt text says what it shows
    (:attr:`plot_description`).

    Display it by ending a cell with it; ``.widget`` is the ipywidgets box. From code (the tests
    do this): set ``lr_box.value`` or ``steps_box.value``, then read :attr:`losses`,
    :attr:`stats_text`, :attr:`compiles`, :attr:`png` or the curve itself, ``line.get_ydata()``.

    CSS classes, for browser tests: ``course-training`` (the whole widget), ``course-lr-box``,
    ``course-steps-box``, ``course-loss-plot`` (the curve: an HTML widget holding one ``img``) and
    ``course-training-stats`` (the text beside it).

    >>> import numpy as np
    >>> def run(learning_rate, steps):  # gradient descent on x**2 from x = 1, in closed form
    ...     return (1 - 2 * float(learning_rate)) ** (2 * np.arange(steps))
    >>> playground = TrainingPlayground(run, learning_rate=0.1, steps=20, max_steps=50)
    >>> playground.steps_box.value = 30
    >>> len(playground.losses), len(playground.line.get_ydata())
    (30, 30)
    >>> print(playground.stats_text)
    learning rate 0.1 · 30 steps
    final loss 2.39e-06
    compilations: 0 for this change, 0 in all
    >>> print(playground.plot_description)
    Loss curve, learning rate 0.1, 30 steps: the loss falls from 1 to 2.39e-06.
    """

    def __init__(
        self,
        run: RunFn,
        learning_rate: float = 0.1,
        steps: int = 100,
        lr_range: tuple[float, float] = (1e-3, 1.0),
        max_steps: int = 500,
    ):
        low, high = lr_range
        if not 0 < low < high:
            raise ValueError(f"lr_range must be two increasing positive numbers, got {lr_range}")
        if not low <= learning_rate <= high:
            raise ValueError(f"learning_rate {learning_rate} is outside lr_range {lr_range}")
        if not 1 <= steps <= max_steps:
            raise ValueError(f"steps must be between 1 and max_steps={max_steps}, got {steps}")
        self.run = run
        self.compiles = 0
        """Compilations caused by every run so far, the first included."""
        self.last_compiles = 0
        """Compilations caused by the latest run."""
        self.runs = 0
        self.losses = np.zeros(0)
        """The losses of the latest successful run, as NumPy."""
        self.error: str | None = None
        """The latest run's error as ``"TypeError: ..."``, or ``None`` when it succeeded."""
        self.stats_text = ""
        """The text beside the curve."""

        self.lr_box = widgets.BoundedFloatText(
            value=learning_rate,
            min=low,
            max=high,
            step=0.01,
            description="learning rate",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="260px"),
        )
        self.lr_box.add_class("course-lr-box")
        self.steps_box = widgets.BoundedIntText(
            value=steps,
            min=1,
            max=max_steps,
            step=1,
            description="steps",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="260px"),
        )
        self.steps_box.add_class("course-steps-box")
        self.png = b""
        """The curve as the latest redraw left it, a PNG."""
        self.plot_description = ""
        """The curve in words: the alt text of its image."""
        self.plot = widgets.HTML(layout=widgets.Layout(width="480px"))
        self.plot.add_class("course-loss-plot")
        self.stats = widgets.HTML(layout=widgets.Layout(padding="0 0 0 12px"))
        self.stats.add_class("course-training-stats")
        self.widget = widgets.VBox(
            [
                widgets.VBox([self.lr_box, self.steps_box]),
                widgets.HBox([self.plot, self.stats]),
                focus_style(),
            ]
        )
        self.widget.add_class("course-training")
        self.widget.add_class(FOCUS_CLASS)

        self.figure = Figure(figsize=(4.8, 3.0), dpi=100, layout="constrained")
        FigureCanvasAgg(self.figure)
        self.axes = self.figure.add_subplot()
        self.axes.set_xlabel("step")
        self.axes.set_ylabel("loss")
        self.axes.grid(True, alpha=0.3)
        (self.line,) = self.axes.plot([], [], color="#3f6fa0", lw=1.5)

        self.lr_box.observe(self._changed, names="value")
        self.steps_box.observe(self._changed, names="value")
        self.update()

    def _changed(self, change: dict[str, Any]) -> None:
        self.update()

    def update(self) -> None:
        """Run with the controls' values and redraw (the controls call this on every change)."""
        learning_rate = jnp.asarray(self.lr_box.value, dtype=jnp.float32)
        steps = int(self.steps_box.value)
        try:
            with count_compiles() as counter:
                losses = np.asarray(self.run(learning_rate, steps))
        except Exception as error:  # noqa: BLE001 (any error of the learner's `run` is shown to them)
            self.error = f"{type(error).__name__}: {error}"
            self.last_compiles = counter.compiles
            self.compiles += counter.compiles
        else:
            self.runs += 1
            self.last_compiles = counter.compiles
            self.compiles += counter.compiles
            if losses.ndim != 1:
                self.error = (
                    f"ValueError: run returned losses of shape {losses.shape}; "
                    "expected one loss per step"
                )
            else:
                self.error = None
                self.losses = losses
                self._redraw()
        self._write_stats()

    def _redraw(self) -> None:
        losses = self.losses
        steps = np.arange(len(losses))
        self.line.set_data(steps, losses)
        finite = losses[np.isfinite(losses)]
        spread = finite.size and (finite > 0).all() and finite.max() > 100 * finite.min()
        self.axes.set_yscale("log" if spread else "linear")  # log only when it spans decades
        self.axes.set_xlim(0, max(len(losses) - 1, 1))
        if finite.size:
            low, high = float(finite.min()), float(finite.max())
            if self.axes.get_yscale() == "log":
                self.axes.set_ylim(low / 1.5, high * 1.5)
            else:
                margin = (high - low) * 0.05 or 1.0
                self.axes.set_ylim(low - margin, high + margin)
        self.axes.set_title(f"learning rate {self.lr_box.value:.3g}", fontsize=10)
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png")
        self.png = buffer.getvalue()
        self.plot_description = self._describe()
        source = "data:image/png;base64," + base64.b64encode(self.png).decode()
        alt = html.escape(self.plot_description, quote=True)
        self.plot.value = f'<img src="{source}" alt="{alt}" style="max-width: 100%">'

    def _describe(self) -> str:
        losses = self.losses
        head = f"Loss curve, learning rate {self.lr_box.value:.3g}, {len(losses)} steps: "
        first, last = float(losses[0]), float(losses[-1])
        if not math.isfinite(last):
            return head + f"the loss starts at {first:.3g} and diverges."
        trend = "falls" if last < first else "rises" if last > first else "stays"
        return head + f"the loss {trend} from {first:.3g} to {last:.3g}."

    def _write_stats(self) -> None:
        lines = [f"learning rate {self.lr_box.value:.3g} · {self.steps_box.value} steps"]
        if self.error is not None:
            lines.append(f"run failed: {self.error}")
        elif len(self.losses):
            final = float(self.losses[-1])
            lines.append(
                f"final loss {final:.3g}" + ("" if math.isfinite(final) else " (diverged)")
            )
        lines.append(f"compilations: {self.last_compiles} for this change, {self.compiles} in all")
        self.stats_text = "\n".join(lines)
        self.stats.value = "<br>".join(f"<code>{html.escape(line)}</code>" for line in lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = self.widget._repr_mimebundle_(**kwargs) or {}
        return {**bundle, "text/plain": repr(self)}

    def __repr__(self) -> str:
        lr, steps = self.lr_box.value, self.steps_box.value
        return f"TrainingPlayground(learning_rate={lr:.3g}, steps={steps})"

    def close(self) -> None:
        """Close the widgets (they stop taking memory in the kernel)."""
        parts = (
            self.lr_box,
            self.steps_box,
            self.plot,
            self.stats,
            *self.widget.children,
            self.widget,
        )
        for widget in parts:
            widget.close()
