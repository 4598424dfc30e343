"""The training playground's plot: a fixed log scale, the last runs kept fainter and named by
their rates, a learning rate chosen on a log slider or typed within its range, and a step count
kept within its range in words."""

from __future__ import annotations

import struct

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course_lib import viz


def _run(learning_rate: jax.Array, steps: int) -> np.ndarray:
    """Gradient descent on x**2 from x = 1, in closed form: no compilation, no device."""
    return (1 - 2 * float(learning_rate)) ** (2 * np.arange(steps, dtype=np.float64))


def _flat(learning_rate: jax.Array, steps: int) -> np.ndarray:
    """Losses that span much less than a decade."""
    return 1.0 + 0.01 * float(learning_rate) * np.cos(np.arange(steps))


def _playground(run=_run, **options) -> viz.TrainingPlayground:
    return viz.TrainingPlayground(run, **{"learning_rate": 0.1, "steps": 20, **options})


def test_the_loss_axis_is_log_whatever_the_losses_span() -> None:
    playground = _playground(_flat)
    assert np.ptp(playground.losses) < 0.01
    assert playground.axes.get_yscale() == "log"
    playground.lr_box.value = 0.5
    assert playground.axes.get_yscale() == "log"
    assert "(log scale)" in playground.plot_description


def test_earlier_runs_stay_fainter_newest_first_and_named_by_rate() -> None:
    playground = _playground(keep=3)
    for rate in (0.2, 0.3, 0.4, 0.05):
        playground.lr_box.value = rate
    assert [run.learning_rate for run in playground.kept] == [0.4, 0.3, 0.2]
    for line, run in zip(playground.kept_lines, playground.kept, strict=True):
        np.testing.assert_allclose(np.asarray(line.get_ydata()), run.losses)
        assert (line.get_alpha() or 1) < 1 and line.get_label() == f"{run.learning_rate:g}"
    np.testing.assert_allclose(np.asarray(playground.line.get_ydata()), _run(jnp.float32(0.05), 20))
    assert playground.line.get_label() == "0.05 (latest)"
    styles = {line.get_linestyle() for line in [playground.line, *playground.kept_lines]}
    assert len(styles) == 4, "each curve needs its own line style, not only its own colour"
    legend_box = playground.axes.get_legend()
    assert legend_box is not None
    legend = [text.get_text() for text in legend_box.get_texts()]
    assert legend == ["0.05 (latest)", "0.4", "0.3", "0.2"]
    assert "Earlier runs, fainter: 0.4 (dashed) falls" in playground.plot_description


def test_a_rate_run_again_leaves_the_kept_runs() -> None:
    playground = _playground()
    playground.lr_box.value = 0.2
    playground.lr_box.value = 0.3
    playground.lr_box.value = 0.2
    assert [run.learning_rate for run in playground.kept] == [0.3, 0.1]
    playground.steps_box.value = 30  # same rate, new steps: the rate's curve is replaced
    assert [run.learning_rate for run in playground.kept] == [0.3, 0.1]
    assert len(playground.losses) == 30


def test_no_kept_runs_draws_one_curve_and_no_legend() -> None:
    playground = _playground(keep=0)
    playground.lr_box.value = 0.2
    assert playground.kept == [] and playground.kept_lines == []
    assert playground.axes.get_legend() is None


def test_a_diverging_run_does_not_squash_the_others() -> None:
    playground = _playground(lr_range=(1e-3, 2.0))
    playground.lr_box.value = 1.5  # |1 - 3| = 2: the loss grows 4x a step
    low, high = playground.axes.get_ylim()
    assert high <= 10 * 1.5 * 1.0 and low < float(playground.kept[0].losses[-1])


def test_the_rate_buttons_step_evenly_on_a_log_scale_and_the_box_follows() -> None:
    playground = _playground(lr_range=(1e-4, 0.3))
    scale = playground.lr_scale
    assert [label for label, _ in scale.options][:4] == ["0.0001", "0.0002", "0.0005", "0.001"]
    assert scale.options[-1] == ("0.3", 0.3) and scale.value == 0.1
    ratios = np.diff(np.log10(playground.stops))
    assert ratios.max() < 0.41, "no two neighbouring rates more than 2.5 times apart"
    scale.value = 0.02
    assert playground.lr_box.value == 0.02 and playground.learning_rate == 0.02
    assert playground.stats_text.startswith("learning rate 0.02 · 20 steps")
    playground.lr_box.value = 0.0123  # typed, between two buttons: none is pressed
    assert scale.value is None and playground.learning_rate == 0.0123
    playground.lr_box.value = 0.2
    assert scale.value == 0.2


@pytest.mark.parametrize(
    ("low", "high", "stops"),
    [
        (1e-3, 1.0, [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]),
        (0.003, 0.04, [0.003, 0.005, 0.01, 0.02, 0.04]),
        (0.1, 0.15, [0.1, 0.15]),
    ],
)
def test_log_scale_keeps_both_ends(low: float, high: float, stops: list[float]) -> None:
    assert viz._training.log_scale(low, high) == stops


@pytest.mark.parametrize("typed", [5.0, 0.0, -0.1, float("nan")])
def test_a_typed_rate_outside_the_range_is_refused_in_words(typed: float) -> None:
    playground = _playground(lr_range=(1e-4, 0.3))
    runs, losses = playground.runs, playground.losses
    playground.lr_box.value = typed
    assert playground.runs == runs and playground.losses is losses
    assert playground.lr_box.value == 0.1 and playground.lr_scale.value == 0.1
    # Said under the box the rate was typed in, as a status, rather than under the plot.
    said = f"{typed:g} is outside the scale, 0.0001 to 0.3: the rate stays 0.1."
    assert playground.refusal == said
    assert playground.notice.value == f'<p role="status">{said}</p>'
    controls = playground.widget.children[0].children
    assert controls.index(playground.notice) == controls.index(playground.lr_box) + 1
    assert "outside" not in playground.stats_text
    playground.lr_box.value = 0.2  # the next accepted rate clears the message
    assert playground.refusal is None and playground.notice.value == ""


def test_a_step_count_out_of_range_runs_the_nearest_and_says_so() -> None:
    playground = _playground(max_steps=50)
    # No maximum for the browser's box to clamp to before the kernel hears what was typed.
    assert "max" not in playground.steps_box.keys
    controls = playground.widget.children[0].children
    assert controls.index(playground.steps_notice) == controls.index(playground.steps_box) + 1
    for typed, ran, said in [
        (9999, 50, "At most 50 steps: ran 50, not 9999."),
        (0, 1, "At least 1 step: ran 1, not 0."),
    ]:
        playground.steps_box.value = typed
        assert playground.steps_box.value == ran and len(playground.losses) == ran
        assert playground.stats_text.startswith(f"learning rate 0.1 · {ran} steps")
        # Said under the steps box, as a status, like a refused rate under the rate's box.
        assert playground.refusal == said
        assert playground.steps_notice.value == f'<p role="status">{said}</p>'
        assert playground.notice.value == ""
    playground.lr_box.value = 5.0  # a refused rate: its message alone, under its own box
    assert playground.steps_notice.value == "" and "5 is outside" in playground.notice.value
    playground.steps_box.value = 30  # a count in range runs as typed, and clears the message
    assert playground.refusal is None and playground.notice.value == ""
    assert len(playground.losses) == 30


def test_the_plot_is_twice_the_pixels_it_is_shown_at() -> None:
    playground = _playground()
    width, height = struct.unpack(">II", playground.png[16:24])
    assert 'width="560"' in playground.plot.value
    assert (width, height) == (1120, 600)


def test_bad_keep_is_refused() -> None:
    with pytest.raises(ValueError, match="keep must be between 0 and 3, got 4"):
        _playground(keep=4)
