"""A live training widget: pick a learning rate or a step count, watch the loss curve redraw beside
the last few runs, and see whether that cost a compilation."""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets
import jax
import jax.numpy as jnp
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .. import count_compiles
from ._figure import MIN_LABEL_PT, SHARPNESS
from ._focus import FOCUS_CLASS, focus_style

RunFn = Callable[[jax.Array, int], Any]
"""``run(learning_rate, steps)``: train from the same start and return the loss at each step."""

MANTISSAS = (1, 2, 5)
"""The rates on the scale within each decade: 0.01, 0.02, 0.05, 0.1, ..."""
KEPT_STYLES = ("--", ":", "-.")
"""The line styles of the kept runs, newest first: told apart without colour."""


@dataclass(kw_only=True, frozen=True)
class Run:
    """One finished run: its learning rate, rounded as shown, and its losses."""

    learning_rate: float
    losses: np.ndarray

    def summary(self) -> str:
        """What happened to the loss, in words: ``'falls from 1 to 0.01'`` or ``'diverges'``."""
        first, last = float(self.losses[0]), float(self.losses[-1])
        if not math.isfinite(last):
            return f"starts at {first:.3g} and diverges"
        trend = "falls" if last < first else "rises" if last > first else "stays"
        return f"{trend} from {first:.3g} to {last:.3g}"


def log_scale(low: float, high: float) -> list[float]:
    """The rates from ``low`` to ``high``, both included, with 1, 2 and 5 in each decade between.

    >>> log_scale(1e-4, 0.3)
    [0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3]
    """
    stops = {low, high}
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        stops.update(
            rate for rate in (float(f"{m}e{exponent}") for m in MANTISSAS) if low <= rate <= high
        )
    return sorted(stops)


class TrainingPlayground:
    """A learning-rate slider, a step-count box and the loss curves they produce, redrawn live.

    Each change calls ``run(learning_rate, steps)`` with the learning rate as a float32 JAX
    scalar and the step count as a Python ``int``, counts the XLA compilations it causes
    (:func:`course_lib.count_compiles`), and redraws the curve. Beside it: the final loss, the
    compilations this change caused and the running total, so a learner sees that a well-written
    ``run`` compiles once, whatever the controls say. Making ``run`` that way is the lesson's job:
    pass the learning rate through as an array, and loop over a traced step count (a
    ``fori_loop`` up to ``steps`` into a buffer of ``max_steps`` losses, returning the first
    ``steps`` of them as NumPy) rather than making ``steps`` static. An error in ``run`` is
    shown in the stats instead of the curve.

    The loss axis is always logarithmic, so runs that end a hundredth apart still look apart.
    The latest run is drawn solid; the ``keep`` runs before it stay on the plot, fainter, each in
    its own line style and named by its rate in the legend (a new run at a kept rate replaces
    it).

    The learning rate has a scale of buttons, one per rate, from one end of ``lr_range`` to the
    other in even steps on a log scale (1, 2 and 5 in each decade: :func:`log_scale`), and a
    number box for typing any rate in the range: a value outside it is refused with a message that
    says the range, and the rate stays as it was. The step count has a number box: a count above
    ``max_steps`` (or below 1) runs as ``max_steps`` (or 1), which the box then shows, and a message
    says so. Each message stands under the box it is about. A typed value counts when it is
    entered (Enter, or leaving the box). The buttons and the boxes are named controls a screen
    reader reads as shown (a slider is not: ipywidgets' slider handle has no accessible name and
    reports its position as a power of ten). The curve is an image whose alt text says what it
    shows (:attr:`plot_description`).

    Display it by ending a cell with it; ``.widget`` is the ipywidgets box. From code (the tests
    do this): set ``lr_scale.value``, ``lr_box.value`` or ``steps_box.value``, then read
    :attr:`losses`, :attr:`kept`, :attr:`stats_text`, :attr:`compiles`, :attr:`png` or the
    curve itself, ``line.get_ydata()``.

    CSS classes, for browser tests: ``course-training`` (the whole widget), ``course-lr-scale``
    (the rate buttons), ``course-lr-box``, ``course-lr-notice`` (under it: why a typed rate was
    refused), ``course-steps-box``, ``course-steps-notice`` (under it: the count that ran instead
    of one typed out of range), ``course-loss-plot`` (the curve: an HTML widget holding one
    ``img``) and ``course-training-stats`` (the text beside it).

    >>> import numpy as np
    >>> def run(learning_rate, steps):  # gradient descent on x**2 from x = 1, in closed form
    ...     return (1 - 2 * float(learning_rate)) ** (2 * np.arange(steps))
    >>> playground = TrainingPlayground(run, learning_rate=0.1, steps=20, max_steps=50)
    >>> playground.steps_box.value = 30
    >>> playground.lr_box.value = 0.2
    >>> [run.learning_rate for run in playground.kept], playground.axes.get_yscale()
    ([0.1], 'log')
    >>> print(playground.stats_text)
    learning rate 0.2 · 30 steps
    final loss 1.36e-13
    compilations: 0 for this change, 0 in all
    >>> playground.lr_box.value = 5
    >>> print(playground.refusal)
    5 is outside the scale, 0.001 to 1: the rate stays 0.2.
    >>> print(playground.plot_description)
    Loss curve, learning rate 0.2, 30 steps: the loss falls from 1 to 1.36e-13 (log scale).
    Earlier runs, fainter: 0.1 (dashed) falls from 1 to 2.39e-06.
    >>> playground.steps_box.value = 9999
    >>> print(playground.refusal, playground.steps_box.value, len(playground.losses))
    At most 50 steps: ran 50, not 9999. 50 50
    """

    def __init__(
        self,
        run: RunFn,
        learning_rate: float = 0.1,
        steps: int = 100,
        lr_range: tuple[float, float] = (1e-3, 1.0),
        max_steps: int = 500,
        keep: int = 3,
    ):
        low, high = lr_range
        if not 0 < low < high:
            raise ValueError(f"lr_range must be two increasing positive numbers, got {lr_range}")
        if not low <= learning_rate <= high:
            raise ValueError(f"learning_rate {learning_rate} is outside lr_range {lr_range}")
        if not 1 <= steps <= max_steps:
            raise ValueError(f"steps must be between 1 and max_steps={max_steps}, got {steps}")
        if not 0 <= keep <= len(KEPT_STYLES):
            raise ValueError(f"keep must be between 0 and {len(KEPT_STYLES)}, got {keep}")
        self.run = run
        self.lr_range = (low, high)
        self.max_steps = max_steps
        self.keep = keep
        self.compiles = 0
        """Compilations caused by every run so far, the first included."""
        self.last_compiles = 0
        """Compilations caused by the latest run."""
        self.runs = 0
        self.losses = np.zeros(0)
        """The losses of the latest successful run, as NumPy."""
        self.kept: list[Run] = []
        """The runs drawn fainter behind the latest, newest first (at most ``keep``)."""
        self.error: str | None = None
        """The latest run's error as ``"TypeError: ..."``, or ``None`` when it succeeded."""
        self.refusal: str | None = None
        """Why the latest typed value was refused or replaced, or ``None``; shown under the box
        it was typed in, where the learner is looking, and read out by screen readers (a
        status)."""
        self.stats_text = ""
        """The text beside the curve."""
        self._latest: Run | None = None
        self._syncing = False

        self.stops = stops = log_scale(low, high)
        """The rates on the scale of buttons."""
        self.lr_scale = widgets.ToggleButtons(
            options=[(f"{rate:g}", rate) for rate in stops],
            value=learning_rate if learning_rate in stops else None,
            tooltips=[f"learning rate {rate:g}" for rate in stops],
            description="learning rate, log scale",
            style={"description_width": "initial", "button_width": "5.6em"},
            layout=widgets.Layout(flex_flow="row wrap", max_width="100%"),
        )
        self.lr_scale.add_class("course-lr-scale")
        self.lr_box = widgets.FloatText(
            value=learning_rate,
            description="or type a learning rate",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="260px"),
        )
        self.lr_box.add_class("course-lr-box")
        # Not a BoundedIntText: its box turns 9999 into the maximum before the kernel hears of it,
        # with no word; the kernel keeps the count in range here, and says so.
        self.steps_box = widgets.IntText(
            value=steps,
            step=1,
            description="steps",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="260px"),
        )
        self.steps_box.add_class("course-steps-box")
        self.notice = widgets.HTML()
        self.notice.add_class("course-lr-notice")
        self.steps_notice = widgets.HTML()
        self.steps_notice.add_class("course-steps-notice")
        self.png = b""
        """The curves as the latest redraw left them, a PNG of twice the pixels it is shown at."""
        self.plot_description = ""
        """The curves in words: the alt text of their image."""
        self.plot = widgets.HTML(layout=widgets.Layout(width="560px", max_width="100%"))
        self.plot.add_class("course-loss-plot")
        self.stats = widgets.HTML(layout=widgets.Layout(padding="0 0 0 12px"))
        self.stats.add_class("course-training-stats")
        self.widget = widgets.VBox(
            [
                widgets.VBox(
                    [self.lr_scale, self.lr_box, self.notice, self.steps_box, self.steps_notice]
                ),
                widgets.HBox([self.plot, self.stats], layout=widgets.Layout(flex_flow="row wrap")),
                focus_style(),
            ]
        )
        self.widget.add_class("course-training")
        self.widget.add_class(FOCUS_CLASS)

        self.figure = Figure(figsize=(5.6, 3.0), dpi=100, layout="constrained")
        FigureCanvasAgg(self.figure)
        self.axes = self.figure.add_subplot()
        self.axes.set_xlabel("step")
        self.axes.set_ylabel("loss (log scale)")
        self.axes.set_yscale("log")
        self.axes.grid(True, alpha=0.3)
        self.kept_lines = [
            self.axes.plot([], [], color="#555555", lw=1.3, ls=style, alpha=0.75)[0]
            for style in KEPT_STYLES[:keep]
        ]
        """The kept runs' curves, newest first."""
        (self.line,) = self.axes.plot([], [], color="#3f6fa0", lw=2.2)
        """The latest run's curve."""

        self.lr_scale.observe(self._picked, names="value")
        self.lr_box.observe(self._typed, names="value")
        self.steps_box.observe(self._stepped, names="value")
        self.update()

    @property
    def learning_rate(self) -> float:
        """The rate the latest run used, as the box shows it."""
        return float(self.lr_box.value)

    def _set_quietly(self, control: widgets.ValueWidget, value: float | None) -> None:
        self._syncing = True
        try:
            control.value = value
        finally:
            self._syncing = False

    def _picked(self, change: dict[str, Any]) -> None:
        if self._syncing or change["new"] is None:
            return
        self._set_quietly(self.lr_box, change["new"])
        self.update()

    def _typed(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        low, high = self.lr_range
        rate = float(change["new"])
        if not low <= rate <= high:  # also refuses nan
            self._set_quietly(self.lr_box, change["old"])
            self._say(
                f"{rate:g} is outside the scale, {low:g} to {high:g}: "
                f"the rate stays {change['old']:g}.",
                under=self.notice,
            )
            return
        self._set_quietly(self.lr_scale, rate if rate in self.stops else None)
        self.update()

    def _stepped(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        typed = int(change["new"])
        steps = min(max(typed, 1), self.max_steps)
        if steps == typed:
            self.update()
            return
        self._set_quietly(self.steps_box, steps)
        self.update()
        limit = f"At most {self.max_steps} steps" if typed > steps else "At least 1 step"
        self._say(f"{limit}: ran {steps}, not {typed}.", under=self.steps_notice)

    def update(self) -> None:
        """Run with the controls' values and redraw (the controls call this on every change)."""
        self._say(None)
        learning_rate = jnp.asarray(self.learning_rate, dtype=jnp.float32)
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
            if losses.ndim != 1 or not len(losses):
                self.error = (
                    f"ValueError: run returned losses of shape {losses.shape}; "
                    "expected one loss per step"
                )
            else:
                self.error = None
                self._keep(Run(learning_rate=self.learning_rate, losses=losses))
                self._redraw()
        self._write_stats()

    def _keep(self, latest: Run) -> None:
        """Make ``latest`` the solid curve; the one before it joins the kept runs."""
        if self._latest is not None:  # each rate at most once, newest first
            previous = self._latest
            older = [run for run in self.kept if run.learning_rate != previous.learning_rate]
            self.kept = [
                run for run in (previous, *older) if run.learning_rate != latest.learning_rate
            ][: self.keep]
        self._latest = latest
        self.losses = latest.losses

    def _redraw(self) -> None:
        runs = [self._latest, *self.kept] if self._latest is not None else []
        lines = [self.line, *self.kept_lines]
        for line, run in zip(lines, [*runs, *[None] * (len(lines) - len(runs))], strict=True):
            if run is None:
                line.set_data([], [])
                line.set_label("_hidden")
                continue
            line.set_data(np.arange(len(run.losses)), run.losses)
            line.set_label(f"{run.learning_rate:.3g}" + (" (latest)" if line is self.line else ""))
        self.axes.set_xlim(0, max(max(len(run.losses) for run in runs) - 1, 1))
        positive = np.concatenate([run.losses[np.isfinite(run.losses)] for run in runs])
        positive = positive[positive > 0]
        if positive.size:
            # A diverging run climbs far past its start: show up to ten times the highest start.
            start = max(float(run.losses[0]) for run in runs if math.isfinite(run.losses[0]))
            top = min(float(positive.max()), 10 * start)
            self.axes.set_ylim(float(positive.min()) / 1.5, top * 1.5)
        self.axes.set_title(f"learning rate {self.learning_rate:.3g}", fontsize=10)
        if self.kept:
            self.axes.legend(
                handles=lines[: len(runs)],  # the latest first
                loc="upper left",  # beside the axes, where it hides no curve
                bbox_to_anchor=(1.02, 1.0),
                title="learning rate",
                fontsize=MIN_LABEL_PT + 1,
                title_fontsize=MIN_LABEL_PT + 1,
            )
        elif (legend := self.axes.get_legend()) is not None:
            legend.remove()
        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=self.figure.dpi * SHARPNESS)
        self.png = buffer.getvalue()
        self.plot_description = self._describe()
        source = "data:image/png;base64," + base64.b64encode(self.png).decode()
        alt = html.escape(self.plot_description, quote=True)
        width = round(self.figure.get_figwidth() * self.figure.dpi)
        self.plot.value = (
            f'<img src="{source}" alt="{alt}" width="{width}" style="max-width: 100%; '
            'height: auto">'
        )

    def _describe(self) -> str:
        assert self._latest is not None
        text = (
            f"Loss curve, learning rate {self.learning_rate:.3g}, {len(self.losses)} steps: "
            f"the loss {self._latest.summary()} (log scale)."
        )
        if self.kept:
            names = {"--": "dashed", ":": "dotted", "-.": "dash-dotted"}
            earlier = "; ".join(
                f"{run.learning_rate:.3g} ({names[style]}) {run.summary()}"
                for run, style in zip(self.kept, KEPT_STYLES, strict=False)
            )
            text += f"\nEarlier runs, fainter: {earlier}."
        return text

    def _say(self, refusal: str | None, under: widgets.HTML | None = None) -> None:
        """Show ``refusal`` under the box it is about, the notice ``under`` it, and clear the
        other notice (``None``: clear both)."""
        self.refusal = refusal
        said = "" if refusal is None else f'<p role="status">{html.escape(refusal)}</p>'
        for notice in (self.notice, self.steps_notice):
            notice.value = said if notice is under else ""

    def _write_stats(self) -> None:
        lines = [f"learning rate {self.learning_rate:.3g} · {self.steps_box.value} steps"]
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
        lr, steps = self.learning_rate, self.steps_box.value
        return f"TrainingPlayground(learning_rate={lr:.3g}, steps={steps})"

    def close(self) -> None:
        """Close the widgets (they stop taking memory in the kernel)."""
        parts = (
            self.lr_scale,
            self.lr_box,
            self.steps_box,
            self.notice,
            self.steps_notice,
            self.plot,
            self.stats,
            *self.widget.children,
            self.widget,
        )
        for widget in parts:
            widget.close()
