"""Lesson 08 self-checks: a guarded step with cond, layers in one scan, a clipping custom_vjp,
an ensemble vmap, and updates from a prefix tree of learning rates.

Two tests look inside the lesson module (``_lesson08``): its scan counter and its clipping rule.
"""

from __future__ import annotations

import inspect
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from exercise_support import LessonChecks, answer_id, check_output
from jax import lax
from jax_wording import WORDINGS, raising_withheld, withhold_jax_wording

from course_lib.checks import _lesson08

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_08 = (
    "08.guarded_step",
    "08.scan_layers",
    "08.clip_per_leaf",
    "08.ensemble_predict",
    "08.scaled_updates",
)


# --- 08.guarded_step ---------------------------------------------------------------------------


def guarded_with_where(params: Any, grads: Any, lr: Any) -> Any:
    leaves = jax.tree.leaves(grads)
    finite = jnp.stack([jnp.isfinite(g).all() for g in leaves]).all()
    new = jax.tree.map(lambda p, g: jnp.where(finite, p - lr * g, p).astype(p.dtype), params, grads)
    return new, jnp.logical_not(finite)


def guarded_with_python_if(params: Any, grads: Any, lr: Any) -> Any:
    if all(bool(jnp.isfinite(g).all()) for g in jax.tree.leaves(grads)):
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), jnp.bool_(False)
    return params, jnp.bool_(True)


def guarded_without_cast(params: Any, grads: Any, lr: Any) -> Any:
    finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grads)]))
    step = lambda p: jax.tree.map(lambda a, g: a - lr * g, p, grads)
    return lax.cond(finite, step, lambda p: p, params), ~finite


def guarded_branch_of_leaves(params: Any, grads: Any, lr: Any) -> Any:
    finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grads)]))
    step = lambda p: jax.tree.map(lambda a, g: (a - lr * g).astype(a.dtype), p, grads)
    return lax.cond(finite, step, jax.tree.leaves, params), ~finite


def guarded_always_steps(params: Any, grads: Any, lr: Any) -> Any:
    return jax.tree.map(lambda p, g: (p - lr * g).astype(p.dtype), params, grads), jnp.bool_(False)


PYTHON_IF_LINE = (
    f"fails under it: line {inspect.getsourcelines(guarded_with_python_if)[1] + 1} of "
    "guarded_with_python_if, `if all(bool("
)
"""Where the first message points for guarded_with_python_if: its line that reads the gradients."""


# --- 08.scan_layers ----------------------------------------------------------------------------


def scan_with_stacked_keys(layers: list[Any], h: Any) -> Any:
    ws = jnp.stack([layer["w"] for layer in layers])
    bs = jnp.stack([layer["b"] for layer in layers])
    return lax.scan(lambda h, wb: (jnp.tanh(h @ wb[0] + wb[1]), None), h, (ws, bs))[0]


def scan_with_one_bias(layers: list[Any], h: Any) -> Any:
    ws = jnp.stack([layer["w"] for layer in layers])  # the biases are not stacked
    return lax.scan(lambda h, wb: (jnp.tanh(h @ wb[0] + wb[1]), None), h, (ws, layers[0]["b"]))[0]


def scan_python_loop(layers: list[Any], h: Any) -> Any:
    for layer in layers:
        h = jnp.tanh(h @ layer["w"] + layer["b"])
    return h


def scan_returning_ys(layers: list[Any], h: Any) -> Any:
    stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers)

    def body(h: Any, p: Any) -> Any:
        h = jnp.tanh(h @ p["w"] + p["b"])
        return h, h

    return lax.scan(body, h, stacked)[1]


# --- 08.clip_per_leaf --------------------------------------------------------------------------


@jax.custom_vjp
def clip_with_flatten(params: Any, limit: float) -> Any:
    return params


def _flat_bwd(limit: float, g: Any) -> Any:
    leaves, treedef = jax.tree.flatten(g)
    return (
        jax.tree.unflatten(treedef, [jnp.minimum(jnp.maximum(x, -limit), limit) for x in leaves]),
        None,
    )


clip_with_flatten.defvjp(lambda p, limit: (p, limit), _flat_bwd)


@jax.custom_vjp
def clip_bare_tree(params: Any, limit: float) -> Any:
    return params


clip_bare_tree.defvjp(
    lambda p, limit: (p, limit),
    lambda limit, g: jax.tree.map(lambda x: jnp.clip(x, -limit, limit), g),
)


def clip_forward_values(params: Any, limit: float) -> Any:
    return jax.tree.map(lambda x: jnp.clip(x, -limit, limit), params)


@jax.custom_vjp
def clip_by_global_norm(params: Any, limit: float) -> Any:
    return params


def _norm_bwd(limit: float, g: Any) -> Any:
    norm = jnp.sqrt(sum(jnp.sum(x.astype(jnp.float32) ** 2) for x in jax.tree.leaves(g)))
    return jax.tree.map(lambda x: (x * jnp.minimum(1.0, limit / norm)).astype(x.dtype), g), None


clip_by_global_norm.defvjp(lambda p, limit: (p, limit), _norm_bwd)


# --- 08.ensemble_predict -----------------------------------------------------------------------


def ensemble_with_einsum(params: Any, x: Any) -> Any:
    m = params["member"]
    return params["shared"]["scale"] * (jnp.einsum("nd,mdk->mnk", x, m["w"]) + m["b"][:, None, :])


def ensemble_mapping_everything(params: Any, x: Any) -> Any:
    predict = lambda p, x: p["shared"]["scale"] * (x @ p["member"]["w"] + p["member"]["b"])
    return jax.vmap(predict, in_axes=(0, None))(params, x)


def ensemble_members_last(params: Any, x: Any) -> Any:
    predict = lambda p, x: p["shared"]["scale"] * (x @ p["member"]["w"] + p["member"]["b"])
    return jax.vmap(predict, in_axes=({"member": 0, "shared": None}, None), out_axes=2)(params, x)


# --- 08.scaled_updates -------------------------------------------------------------------------


def updates_with_broadcast(lrs: Any, grads: Any) -> Any:
    full = jax.tree.broadcast(lrs, grads)
    return jax.tree.map(lambda g, lr: (-lr * g).astype(g.dtype), grads, full)


def updates_grads_first(lrs: Any, grads: Any) -> Any:
    return jax.tree.map(lambda g, lr: -lr * g, grads, lrs)


def updates_uphill(lrs: Any, grads: Any) -> Any:
    return jax.tree.map(
        lambda lr, sub: jax.tree.map(lambda g: (lr * g).astype(g.dtype), sub), lrs, grads
    )


def updates_in_float32(lrs: Any, grads: Any) -> Any:
    return jax.tree.map(
        lambda lr, sub: jax.tree.map(lambda g: -jnp.float32(lr) * g, sub), lrs, grads
    )


# --- the course's answers, as the solution notebook writes them --------------------------------


def guarded_step(params: Any, grads: Any, lr: Any) -> Any:
    finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grads)]))

    def step(params: Any) -> Any:
        return jax.tree.map(lambda p, g: (p - lr * g).astype(p.dtype), params, grads)

    return lax.cond(finite, step, lambda params: params, params), ~finite


def scan_layers(layers: list[Any], h: Any) -> Any:
    stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers)
    return lax.scan(lambda h, p: (jnp.tanh(h @ p["w"] + p["b"]), None), h, stacked)[0]


@jax.custom_vjp
def clip_per_leaf(params: Any, limit: float) -> Any:
    return params


clip_per_leaf.defvjp(
    lambda params, limit: (params, limit),
    lambda limit, g: (jax.tree.map(lambda leaf: jnp.clip(leaf, -limit, limit), g), None),
)


def ensemble_predict(params: Any, x: Any) -> Any:
    def predict(p: Any, x: Any) -> Any:
        return p["shared"]["scale"] * (x @ p["member"]["w"] + p["member"]["b"])

    return jax.vmap(predict, in_axes=({"member": 0, "shared": None}, None))(params, x)


def scaled_updates(lrs: Any, grads: Any) -> Any:
    return jax.tree.map(
        lambda lr, sub: jax.tree.map(lambda g: (-lr * g).astype(g.dtype), sub), lrs, grads
    )


# --- each wrong answer with the fix its last hint gives, applied as written ---------------------


def scan_returning_the_carry(layers: list[Any], h: Any) -> Any:
    stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers)

    def body(h: Any, p: Any) -> Any:
        h = jnp.tanh(h @ p["w"] + p["b"])
        return h, h

    return lax.scan(body, h, stacked)[0]


def updates_mapping_lrs_first(lrs: Any, grads: Any) -> Any:
    return jax.tree.map(lambda lr, sub: jax.tree.map(lambda g: -lr * g, sub), lrs, grads)


def updates_cast_back(lrs: Any, grads: Any) -> Any:
    return jax.tree.map(
        lambda lr, sub: jax.tree.map(lambda g: (-jnp.float32(lr) * g).astype(g.dtype), sub),
        lrs,
        grads,
    )


# guarded_with_python_if holds two mistakes (SEVERAL_MISTAKES).
FIXED: list[tuple[str, Any, Any]] = [
    ("08.guarded_step", guarded_without_cast, guarded_step),
    ("08.guarded_step", guarded_branch_of_leaves, guarded_step),
    ("08.guarded_step", guarded_always_steps, guarded_step),
    ("08.scan_layers", scan_python_loop, scan_layers),
    ("08.scan_layers", scan_with_one_bias, scan_layers),
    ("08.scan_layers", scan_returning_ys, scan_returning_the_carry),
    ("08.clip_per_leaf", clip_bare_tree, clip_per_leaf),
    ("08.clip_per_leaf", clip_forward_values, clip_per_leaf),
    ("08.clip_per_leaf", clip_by_global_norm, clip_per_leaf),
    ("08.ensemble_predict", ensemble_mapping_everything, ensemble_predict),
    ("08.ensemble_predict", ensemble_members_last, ensemble_predict),
    ("08.scaled_updates", updates_grads_first, updates_mapping_lrs_first),
    ("08.scaled_updates", updates_uphill, scaled_updates),
    ("08.scaled_updates", updates_in_float32, updates_cast_back),
]


NAMED: dict[str, dict[str, str]] = {
    "08.guarded_step": {
        "uses a Python `if` on a traced value": PYTHON_IF_LINE,
        "has `lax.cond` branches whose dtypes differ (Pitfall 21)": "return different dtypes",
        "steps even when a gradient holds a `NaN` or an inf": (
            "a gradient leaf holds a `NaN` or an inf"
        ),
    },
    "08.scan_layers": {
        "loops over the layers in Python, unrolling every one": "tanh outside any `scan`",
        "returns the stacked outputs instead of the final carry": "(`scan`'s `ys`)",
    },
    "08.clip_per_leaf": {
        "returns a bare tree from the backward rule (Pitfall 22)": "the rule returns a dict",
        "changes the forward value instead of passing `params` through": (
            "the forward value is not `params` unchanged"
        ),
        "clips by the global norm instead of each leaf on its own": (
            "computed from the norm of the whole tree"
        ),
    },
    "08.ensemble_predict": {
        "maps over the shared parameters too": (
            "Its `in_axes` maps the shared scale over the member axis too"
        ),
        "puts the member axis last instead of first": "the member axis is not first",
    },
    "08.scaled_updates": {
        "maps over the gradients first, so the prefix tree of rates is not the first tree": (
            "raised given the prefix `lrs`"
        ),
        "climbs: the update is `-lr * g`": "the updates point uphill",
        "returns `float32` updates for `bfloat16` gradients": (
            "has dtype `float32`, expected `bfloat16`"
        ),
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in the ``wrong`` table pins."""


class TestLesson08(LessonChecks):
    ids = LESSON_08
    points = 13
    right = {
        "08.guarded_step": guarded_step,
        "08.scan_layers": scan_layers,
        "08.clip_per_leaf": clip_per_leaf,
        "08.ensemble_predict": ensemble_predict,
        "08.scaled_updates": scaled_updates,
    }
    also_right = (
        ("08.guarded_step", guarded_with_where),
        ("08.scan_layers", scan_with_stacked_keys),
        ("08.clip_per_leaf", clip_with_flatten),
        ("08.ensemble_predict", ensemble_with_einsum),
        ("08.scaled_updates", updates_with_broadcast),
    )
    wrong = (
        ("08.guarded_step", guarded_with_python_if, PYTHON_IF_LINE),
        ("08.guarded_step", guarded_without_cast, "return different dtypes"),
        ("08.guarded_step", guarded_always_steps, "a gradient leaf holds a `NaN` or an inf"),
        ("08.guarded_step", guarded_branch_of_leaves, "return trees of different structures"),
        ("08.scan_layers", scan_python_loop, "tanh outside any `scan`"),
        ("08.scan_layers", scan_returning_ys, "(`scan`'s `ys`)"),
        ("08.scan_layers", scan_with_one_bias, "differ in their leading axis"),
        ("08.clip_per_leaf", clip_bare_tree, "the rule returns a dict"),
        ("08.clip_per_leaf", clip_forward_values, "the forward value is not `params` unchanged"),
        ("08.clip_per_leaf", clip_by_global_norm, "computed from the norm of the whole tree"),
        (
            "08.ensemble_predict",
            ensemble_mapping_everything,
            "Its `in_axes` maps the shared scale over the member axis too",
        ),
        ("08.ensemble_predict", ensemble_members_last, "the member axis is not first"),
        ("08.scaled_updates", updates_grads_first, "raised given the prefix `lrs`"),
        ("08.scaled_updates", updates_uphill, "the updates point uphill"),
        ("08.scaled_updates", updates_in_float32, "has dtype `float32`, expected `bfloat16`"),
    )
    named = NAMED
    fixed = FIXED


def test_the_scan_check_reads_the_program_not_the_values() -> None:
    """A loop and a scan give the same numbers; only the scan has one scan of the depth's length."""
    layers = [{"w": np.eye(3, dtype=np.float32), "b": np.zeros(3, np.float32)} for _ in range(4)]
    h = np.ones((2, 3), np.float32)
    with jax.numpy_rank_promotion("allow"):
        loop = _lesson08._scan_eqns(jax.make_jaxpr(scan_python_loop)(layers, h).jaxpr)
        scan = _lesson08._scan_eqns(jax.make_jaxpr(_lesson08._scan_layers)(layers, h).jaxpr)
    assert loop == ([], 4)
    assert scan == ([4], 0)


def test_the_reference_clip_leaves_the_values_and_clips_each_gradient_entry() -> None:
    params: dict[str, Any] = {"w": jnp.array([1.0, -2.0]), "b": None}
    grads = jax.grad(
        lambda p: jnp.sum(jnp.array([3.0, 0.25]) * _lesson08._clip_per_leaf(p, 0.5)["w"])
    )(params)
    assert np.allclose(grads["w"], [0.5, 0.25]) and grads["b"] is None
    forward = _lesson08._clip_per_leaf(params, 0.5)
    assert str(jax.tree.structure(forward)) == str(jax.tree.structure(params))
    assert np.array_equal(forward["w"], params["w"])


# --- hints that do not depend on the wording of JAX's errors --------------------------------------

# Each answer that JAX refuses, and its hint: found by measuring what the refused call was handed
# (the cond's branches, the scan's xs, the backward rule called on its own) or by a controlled call
# (without jit; on square ensemble inputs; with one learning rate per gradient leaf).
REFUSED: list[tuple[str, Any, str]] = [
    ("08.guarded_step", guarded_with_python_if, "runs without `jit` and fails under it"),
    ("08.guarded_step", guarded_without_cast, "the first branch returns float32"),
    ("08.guarded_step", guarded_branch_of_leaves, "return trees of different structures"),
    ("08.scan_layers", scan_with_one_bias, "The leading sizes of `xs` are: [0] "),
    ("08.clip_per_leaf", clip_bare_tree, "the rule returns a dict"),
    ("08.ensemble_predict", ensemble_mapping_everything, "maps the shared scale over the member"),
    ("08.scaled_updates", updates_grads_first, "runs given one learning rate per gradient leaf"),
]


@pytest.mark.parametrize("wording", WORDINGS)
@pytest.mark.parametrize(("exercise_id", "answer", "hint"), REFUSED, ids=answer_id)
def test_hint_survives_jax_wording(
    exercise_id: str,
    answer: Any,
    hint: str,
    wording: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """JAX's error withheld or reworded where it is raised (inside the answer; for the custom_vjp,
    in the backward pass, where the check reads it): the targeted hint is still given."""
    withhold_jax_wording(monkeypatch, wording, _lesson08)
    out = check_output(exercise_id, raising_withheld(answer, wording), capsys)
    assert hint in out, out


def test_a_refusal_the_probes_cannot_explain_gets_the_error_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """vmap refuses x mapped over an axis it does not have: the square controlled call refuses it
    too, so no cause is named, only what JAX raised."""

    def ensemble_mapping_x_twice(params: Any, x: Any) -> Any:
        predict = lambda p, x: p["shared"]["scale"] * (x @ p["member"]["w"] + p["member"]["b"])
        return jax.vmap(predict, in_axes=({"member": 0, "shared": None}, 2))(params, x)

    out = check_output("08.ensemble_predict", ensemble_mapping_x_twice, capsys)
    assert "raised ValueError" in out and "over the member axis too" not in out, out


def test_mapping_everything_is_told_at_a_tpus_matmul_precision(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On a TPU a float32 product runs at JAX's default precision, one bfloat16 pass: the probe
    that tells which mapping ran compares with NumPy's products within the tolerance rule's
    allowance for that, and names the mistake as on a CPU."""

    def ensemble_mapping_everything_in_bfloat16(params: Any, x: Any) -> Any:
        def predict(p: Any, x: Any) -> Any:
            rounded = (x.astype(jnp.bfloat16) @ p["member"]["w"].astype(jnp.bfloat16)).astype(
                jnp.float32
            )
            return p["shared"]["scale"] * (rounded + p["member"]["b"])

        return jax.vmap(predict, in_axes=(0, None))(params, x)

    out = check_output("08.ensemble_predict", ensemble_mapping_everything_in_bfloat16, capsys)
    assert "maps the shared scale over the member" in out, out
