"""Exercises of lesson 06, optimizer state is a pytree: momentum, Adam, checkpoints, a scan carry.

The judges here go beyond "the values differ": for a wrong answer they recompute the usual wrong
algorithms (old velocity, no bias correction, the count off by one, eps inside the square root, ...)
from the case's own inputs and say which one the answer matches.
"""

import collections
import functools
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import keystr

from .._leaves import close_elements, is_namedtuple, same_structure
from ._kit import (
    Layer,
    Point,
    as_judged,
    attempt,
    dtyped_plain,
    error_text,
    first_leaf_path,
    float_tolerance,
    float_tree,
    in_parts,
    input_changes,
    measured_calls,
    random_f32,
    random_like,
    random_shape,
    random_tree,
    small_shape,
    structure_difference,
    tree_judge,
    trees_close,
    without_backticks,
)
from ._mistakes import Variant, first_mistake, lead
from ._plain import describe, rebuild_tree, tree_plain
from ._sections import (
    ADAM,
    CHECKPOINTS,
    MOMENTUM,
    PITFALL_1,
    PITFALL_11,
    PITFALL_14,
    PITFALL_15,
    SGD_UPDATE,
    TRAINING,
    WHAT_JIT_SEES,
)
from ._spec import Case, Exercise, Mistake


class AdamState(NamedTuple):
    """The exercises' Adam state (the notebook defines the same class): no learning rate inside."""

    count: Any
    mu: Any
    nu: Any


# --- small helpers ---------------------------------------------------------------------------


_LAYER = (2, 3)
"""The shape of a layer's weight matrix in the optimizer cases: its shapes are among
``SMALL_SHAPES`` (few shapes on purpose, so that eager ``jnp`` operations compile once; the trees
vary in their containers instead)."""


def _array_leaf(rng: np.random.Generator) -> Any:
    """A float32 or int32 array, NumPy or JAX: what a checkpoint holds."""
    if rng.random() < 0.25:
        array: np.ndarray = rng.integers(-9, 10, size=random_shape(rng)).astype(np.int32)
    else:
        array = random_f32(rng, *random_shape(rng))
    return jax.device_put(array) if rng.random() < 0.5 else array


def _structure_problem(mine: Any, theirs: Any, what: str) -> str | None:
    """The structure difference between two rebuilt trees, by key path, or ``None``."""
    lines = structure_difference(mine, theirs)
    if not lines:
        return None
    return f"{what} has another structure than expected:\n" + "\n".join(
        f"  {line}" for line in lines
    )


_leaf_judge = tree_judge()


def _leaf_problem(
    mine: Any, theirs: Any, what: str, tolerance: tuple[float, float] | None = None
) -> str | None:
    judge = _leaf_judge if tolerance is None else tree_judge(*tolerance)
    problem = judge(tree_plain(mine), tree_plain(theirs), Case(()))
    return None if problem is None else f"{what}: {problem}"


# --- 06.momentum_step ------------------------------------------------------------------------


def _momentum_step(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    velocity = jax.tree.map(lambda v, g: beta * v + g, velocity, grads)
    return jax.tree.map(lambda p, v: p - lr * v, params, velocity), velocity


def _momentum_case(
    rng: np.random.Generator,
    params: Any,
    label: str,
    lr: Any = 0.1,
    beta: float = 0.9,
    first: bool = False,
) -> Case:
    grads = random_like(rng, params)
    velocity = jax.tree.map(np.zeros_like, params) if first else random_like(rng, params)
    return Case((params, grads, velocity, lr, beta), label=label)


def _momentum_cases(rng: np.random.Generator) -> list[Case]:
    m, n = _LAYER
    cases = [
        _momentum_case(
            rng,
            {"w": random_f32(rng, m, n), "b": random_f32(rng, n)},
            "the first step (velocity all zeros)",
            first=True,
        ),
        _momentum_case(
            rng,
            {"w": random_f32(rng, m, n), "b": random_f32(rng, n)},
            "a layer with a velocity from earlier steps",
        ),
        _momentum_case(
            rng,
            {
                "encoder": {"w": random_f32(rng, m, n), "b": None},
                "decoder": None,
                "scale": random_f32(rng),
            },
            "a dict with `None` subtrees",
            beta=0.5,
        ),
        _momentum_case(
            rng,
            [
                Layer(w=random_f32(rng, m, n), b=None),
                Layer(w=random_f32(rng, m, n), b=random_f32(rng, n)),
            ],
            "a list of namedtuples with a `None` field",
        ),
        _momentum_case(
            rng,
            collections.OrderedDict(
                z=(random_f32(rng, n), jax.device_put(random_f32(rng, 3))),
                a=Point(x=random_f32(rng), y=None),
            ),
            "an `OrderedDict` of tuples and a namedtuple, with `lr` a `float32` array",
            lr=jax.device_put(np.float32(0.05)),
        ),
        _momentum_case(
            rng, {"w": random_f32(rng, n), "b": random_f32(rng)}, "`beta = 0`: plain SGD", beta=0.0
        ),
    ]
    for i in range(3):
        tree = float_tree(rng)
        cases.append(
            _momentum_case(
                rng, tree, f"random tree {i + 1}, {describe(tree, 100)}", lr=0.01 * (i + 1)
            )
        )
    layers, nested = (
        "layers, from rest and moving",
        "None subtrees, namedtuples and OrderedDicts",
    )
    return in_parts(
        cases, [layers, layers, nested, nested, nested] + ["plain SGD and random trees"] * 4
    )


def _swapped(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    new_params, new_velocity = _momentum_step(params, grads, velocity, lr, beta)
    return new_velocity, new_params


def _old_velocity(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    _, new_velocity = _momentum_step(params, grads, velocity, lr, beta)
    return jax.tree.map(lambda p, v: p - lr * v, params, velocity), new_velocity


def _stale_velocity(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    new_params, _ = _momentum_step(params, grads, velocity, lr, beta)
    return new_params, velocity


def _uphill(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    _, new_velocity = _momentum_step(params, grads, velocity, lr, beta)
    return jax.tree.map(lambda p, v: p + lr * v, params, new_velocity), new_velocity


def _nesterov(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    _, v = _momentum_step(params, grads, velocity, lr, beta)
    return jax.tree.map(lambda p, v, g: p - lr * (g + beta * v), params, v, grads), v


def _dampened(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    v = jax.tree.map(lambda v, g: beta * v + (1 - beta) * g, velocity, grads)
    return jax.tree.map(lambda p, v: p - lr * v, params, v), v


def _lr_inside_minus(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    v = jax.tree.map(lambda v, g: beta * v - lr * g, velocity, grads)
    return jax.tree.map(lambda p, v: p + v, params, v), v


def _lr_inside_plus(params: Any, grads: Any, velocity: Any, lr: Any, beta: Any) -> tuple[Any, Any]:
    v = jax.tree.map(lambda v, g: beta * v + lr * g, velocity, grads)
    return jax.tree.map(lambda p, v: p - v, params, v), v


def _lr_inside(sign: str) -> Mistake:
    return Mistake(
        f"your velocity has the learning rate inside (`v = beta * v {sign} lr * g`).",
        "The velocity is a running sum of gradients alone, as `optax` keeps it; the learning rate "
        "applies only when the params move, so that a new `lr` does not rescale the velocity "
        "built up so far.",
        "`v = beta * v + g` for the velocity, then `p - lr * v` for the params.",
    )


_MOMENTUM_VARIANTS: tuple[tuple[Callable[..., tuple[Any, Any]], Mistake], ...] = (
    (
        _swapped,
        Mistake(
            "the two results are swapped: the first is the new velocity, the second the new "
            "params.",
            "The order of a returned tuple is part of the function's contract: the caller "
            "unpacks it by position, `new_params, new_velocity = momentum_step(...)`.",
            "Return `(new_params, new_velocity)`, in that order.",
        ),
    ),
    (
        _old_velocity,
        Mistake(
            "the new params were moved with the old velocity, the one that came in.",
            "Momentum first folds this step's gradient into the velocity and then moves along "
            "the result, so the gradient of this step counts at once (as in "
            "`optax.sgd(momentum=beta)`).",
            "Compute the new velocity first, then `p - lr * v` with that new velocity.",
        ),
    ),
    (
        _stale_velocity,
        Mistake(
            "the params are right, but the velocity returned is the one that came in.",
            "The velocity is state carried from step to step: each step hands the updated one "
            "on, or the next step starts from the old one.",
            "Return the velocity you computed in this step as the second result.",
        ),
    ),
    (
        _dampened,
        Mistake(
            "your velocity averages the gradients, `beta * v + (1 - beta) * g`.",
            "Momentum here, as in `optax.sgd(momentum=beta)`, adds the whole gradient to the "
            "decayed velocity; the factor `(1 - beta)` belongs to other variants, and to Adam's "
            "moments.",
            "`v = beta * v + g`.",
        ),
    ),
    (_lr_inside_minus, _lr_inside("-")),
    (_lr_inside_plus, _lr_inside("+")),
    (
        _uphill,
        Mistake(
            "the params moved uphill: `lr * v` was added to them.",
            "The velocity sums gradients, which point where the loss grows: a descent step "
            "moves against it.",
            "`p - lr * v`.",
            reread=SGD_UPDATE,
        ),
    ),
    (
        _nesterov,
        Mistake(
            "that is the Nesterov step, `p - lr * (g + beta * v)`.",
            "This exercise asks for plain momentum, `optax.sgd(momentum=beta)` without "
            "`nesterov=True`: the params move along the new velocity itself.",
            "`p - lr * v`, with the new `v`.",
        ),
    ),
)
"""The usual wrong momentum steps, tried in this order: a function that takes a step's arguments
and does it wrong in one way, and that way's mistake."""


def _pairs_problem(mine: Any, theirs: Any) -> Mistake | None:
    """The mistake of one ``jax.tree.map`` returning ``(p, v)`` at each leaf: one tree of pairs
    shaped like the params, where two trees were due (``None`` for any other answer)."""
    pairs = jax.tree.map(lambda p, v: (p, v), theirs[0], theirs[1])
    if not same_structure(mine, pairs) or not jax.tree.leaves(theirs[0]):
        return None
    first = first_leaf_path(theirs[0])
    return Mistake(
        f"returned one tree shaped like the params with a pair at each leaf (at {first}, and "
        "at every other), where a tuple of two trees, the params and the velocity, was expected.",
        "`jax.tree.map` builds one tree of whatever its function returns at each leaf, so a "
        "function returning `(p, v)` nests a pair in every leaf; unpacking that tree by position "
        "takes its own entries, not two trees.",
        "Map twice, the velocity first and then the params with it; or keep the one map and split "
        "its pairs, `jax.tree.transpose(jax.tree.structure(params), jax.tree.structure((0, 0)), "
        "pairs)`.",
    )


def _judge_momentum(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    mine, theirs = rebuild_tree(got), rebuild_tree(expected)
    pairs = _pairs_problem(mine, theirs)
    if pairs is not None:
        return pairs
    if not (type(mine) is tuple and len(mine) == 2):
        if isinstance(mine, list):
            return Mistake(
                "returned a list, not a tuple.",
                "The step returns two trees in a tuple, and the container around them counts: "
                "a list is another node type than a tuple, so `[a, b]` and `(a, b)` are different "
                "trees (Pitfall 14).",
                "Return `new_params, new_velocity`: a comma between the two makes a tuple.",
                reread=PITFALL_14,
            )
        return Mistake(
            f"returned {describe(mine, 80)}, not a tuple of two trees.",
            "A momentum step changes two trees, the params and the velocity, and hands both "
            "back: the next step takes the velocity in again.",
            "Return `(new_params, new_velocity)`.",
        )
    problem = _structure_problem(mine[0], theirs[0], "new_params")
    if problem is not None:
        return problem
    problem = _structure_problem(mine[1], theirs[1], "the new velocity")
    if problem is not None:
        return Mistake(
            problem,
            "The velocity is a tree shaped like the params, `None` subtrees, containers and all, "
            "so that the next step can map over `params`, `grads` and `velocity` together.",
            "Build the new velocity with `jax.tree.map` over `velocity` and `grads`: it keeps "
            "every container and `None` subtree.",
        )
    if trees_close(mine, theirs):
        return _leaf_problem(mine, theirs, "the result")
    variants = [
        Variant(mistake=mistake, build=functools.partial(wrongly, *case.args))
        for wrongly, mistake in _MOMENTUM_VARIANTS
    ]
    return first_mistake(mine, variants, rebuilt=True) or _leaf_problem(mine, theirs, "the result")


MOMENTUM_STEP = Exercise(
    id="06.momentum_step",
    name="momentum_step",
    title="A momentum step over a whole tree",
    points=2,
    cases=_momentum_cases,
    reference=_momentum_step,
    probe=lambda fn, case: tree_plain(fn(*case.args, **case.kwargs)),
    judge=_judge_momentum,
    hints=(
        (
            "Momentum keeps a velocity tree shaped like the params: first the new velocity from "
            "the old one and the gradient, then the params move along that new velocity."
        ),
        (
            "`v = beta * v + g` and `p - lr * v` with the new `v`, each one `jax.tree.map`; "
            "return `(new_params, new_velocity)`."
        ),
    ),
    reread=MOMENTUM,
    forbidden=("momentum", "tree_add", "tree_add_scale", "tree_scale", "tree_sub"),
    mistakes=(
        "moves the parameters with the old velocity",
        "averages the gradients into the velocity (dampened momentum)",
        "puts the learning rate inside the velocity",
        "returns the velocity as a list of leaves",
        "swaps the two results",
        "returns the velocity that came in",
        "returns a list instead of a tuple",
        "returns one tree of `(p, v)` pairs from a single map",
    ),
)


# --- 06.adam_init ----------------------------------------------------------------------------


def _adam_init(params: Any) -> AdamState:
    return AdamState(
        jnp.zeros((), jnp.int32),
        jax.tree.map(jnp.zeros_like, params),
        jax.tree.map(jnp.zeros_like, params),
    )


def _half_leaf(rng: np.random.Generator) -> Any:
    return jax.device_put(random_f32(rng, *small_shape(rng)).astype(np.float16))


def _init_cases(rng: np.random.Generator) -> list[Case]:
    m, n = _LAYER
    cases = [
        Case(
            ({"w": random_f32(rng, m, n), "b": random_f32(rng, n)},),
            label=f"a layer with `w` of shape `({m}, {n})` and `b` of shape `({n},)`",
        ),
        Case(
            ({"encoder": {"w": random_f32(rng, m, n), "b": None}, "decoder": None},),
            label="a dict with `None` subtrees",
        ),
        Case(
            (
                [
                    Layer(w=random_f32(rng, m, n), b=None),
                    Point(x=random_f32(rng), y=jax.device_put(random_f32(rng, n))),
                ],
            ),
            label="a list of namedtuples",
        ),
        Case(
            ({"w": _half_leaf(rng), "b": jax.device_put(random_f32(rng, n))},),
            label="`float16` weights next to `float32` biases (the moments keep each leaf's dtype)",
        ),
    ]
    for i in range(3):
        tree = float_tree(rng)
        if i == 1:
            tree["half"] = _half_leaf(rng)
        cases.append(Case((tree,), label=f"random tree {i + 1}, {describe(tree, 100)}"))
    layers, named = "a layer and None subtrees", "namedtuples and float16 weights"
    return in_parts(cases, [layers, layers, named, named] + ["random trees"] * (len(cases) - 4))


_THE_CLASS = "Return `AdamState(count=..., mu=..., nu=...)`, the class defined above the exercise."


def _state_problem(state: Any, what: str) -> Mistake | None:
    """What is wrong with an Adam state's form (its type, fields, count), or ``None``."""
    if type(state) is tuple:
        return Mistake(
            f"{what} is a plain tuple, not an `AdamState`.",
            "The state is a namedtuple, `AdamState`: a node type of its own with the fields "
            "`count`, `mu` and `nu`, which a plain tuple of the same values is not (Pitfall 14).",
            _THE_CLASS,
            reread=PITFALL_14,
        )
    if not is_namedtuple(state):
        return Mistake(
            f"{what} is {describe(state, 80)}, not an `AdamState`.",
            "Adam's state is one tree, an `AdamState` that holds the count and the two moment "
            "trees; the optimizer hands it from step to step.",
            _THE_CLASS,
        )
    fields = tuple(type(state)._fields)
    if type(state).__name__ != "AdamState" or fields != AdamState._fields:
        return Mistake(
            f"{what} is a namedtuple {type(state).__name__} with the fields {', '.join(fields)}, "
            "not the `AdamState` defined above, whose fields are `count, mu, nu`.",
            "A namedtuple's class and fields are part of the tree structure: `cl.AdamState`, "
            "with its `learning_rate` field, is another node type than the exercise's `AdamState`.",
            "Use the `AdamState` of the notebook cell above the exercise, with exactly the "
            "fields `count`, `mu` and `nu`.",
            reread=PITFALL_14,
        )
    count = state.count
    if not isinstance(count, np.ndarray):
        return Mistake(
            f"the count in {what} is {describe(count, 40)}, a Python {type(count).__name__}.",
            "The count is data that changes every step: as a Python number it is weakly "
            "typed, and a jitted step that gets it first as a number, then as the `int32` array "
            "a step returns, compiles twice (lesson 05, Pitfall 11). `optax` keeps it an `int32` "
            "array.",
            "Start the count as an `int32` scalar array, `jnp.zeros((), jnp.int32)`.",
            reread=PITFALL_11,
        )
    if count.shape != () or count.dtype != np.int32:
        return Mistake(
            f"the count in {what} is an array of dtype `{count.dtype}` and shape `{count.shape}`.",
            "The count is one whole number per state, the steps taken: an `int32` scalar, shape "
            "`()`, as `optax` keeps it.",
            "Start it as `jnp.zeros((), jnp.int32)`; adding 1 keeps that dtype and shape.",
        )
    return None


def _moments_mistake(problem: str, fix: str) -> Mistake:
    return Mistake(
        problem,
        "`mu` and `nu` hold one moment per parameter, in trees shaped like `params` (the same "
        "containers and `None` subtrees), so that one `jax.tree.map` can walk `params`, `grads`, "
        "`mu` and `nu` together.",
        fix,
    )


def _judge_init(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    mine, theirs = rebuild_tree(got), rebuild_tree(expected)
    problem = _state_problem(mine, "the state")
    if problem is not None:
        return problem
    if int(mine.count) != 0:
        return Mistake(
            f"the count starts at {int(mine.count)}.",
            "The state before the first step has taken no step yet: its count is 0, and the "
            "first step makes it 1.",
            "Start the count as `jnp.zeros((), jnp.int32)`.",
        )
    for field in ("mu", "nu"):
        text = _structure_problem(
            getattr(mine, field), getattr(theirs, field), f"the state's {field}"
        )
        if text is not None:
            return _moments_mistake(
                text,
                f"Build {field} with `jax.tree.map` over `params`, not from `jax.tree.leaves`: "
                "`jax.tree.map` keeps every container and `None` subtree.",
            )
    text = _leaf_problem(mine, theirs, "the state")
    if text is not None and trees_close(mine, theirs):
        return Mistake(
            text,
            "Each moment has the dtype of its parameter, as `optax`'s moments do: a `float16` "
            "parameter gets `float16` moments, and its shape too.",
            "`jnp.zeros_like(leaf)` keeps each leaf's dtype and shape, where `jnp.zeros(shape)` "
            "makes `float32`.",
        )
    return text


ADAM_INIT = Exercise(
    id="06.adam_init",
    name="adam_init",
    title="An Adam state for any parameter tree",
    points=1,
    cases=_init_cases,
    reference=_adam_init,
    probe=lambda fn, case: tree_plain(fn(*case.args)),
    judge=_judge_init,
    hints=(
        (
            "Adam's state is a step count and two trees shaped like the params (the same "
            "structure, shapes and dtypes), all starting at zero."
        ),
        (
            "`AdamState(count=jnp.zeros((), jnp.int32), mu=jax.tree.map(jnp.zeros_like, params), "
            "nu=jax.tree.map(jnp.zeros_like, params))`."
        ),
    ),
    reread=ADAM,
    forbidden=("adam", "tree_zeros_like", "tree_full_like"),
    mistakes=(
        "returns a plain tuple instead of the state class",
        "keeps the count as a Python int",
        "makes `float32` moments for `float16` parameters",
        "builds the moments as lists of leaves",
        "returns the course's own `AdamState`, whose fields differ",
    ),
)


# --- 06.adam_step ----------------------------------------------------------------------------


def _adam_step(
    params: Any,
    grads: Any,
    state: AdamState,
    lr: Any,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
) -> tuple[Any, AdamState]:
    count = state.count + 1
    mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
    nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g**2, state.nu, grads)
    c1, c2 = 1 - b1**count, 1 - b2**count
    new = jax.tree.map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, mu, nu)
    return new, AdamState(count, mu, nu)


def adam_tolerance(lr: Any, b1: float = 0.9, b2: float = 0.999) -> tuple[float, float]:
    """The tolerance rule (:func:`float_tolerance`) for an Adam step's result: float32's, plus
    ``lr`` times the error of the step ``m_hat / (sqrt(v_hat) + eps)``, of size about 1, whose bias
    corrections ``1 - b**count`` magnify the error of an approximate power by up to
    ``1 / (1 - b)`` (a TPU's power is a few ulps off: 3e-5 at ``lr=0.1``)."""
    rtol, atol = float_tolerance()
    step_rtol, _ = float_tolerance(amplification=1 / (1 - max(b1, b2)))
    return rtol, atol + abs(float(lr)) * step_rtol


def _adam_variant(
    params: Any,
    grads: Any,
    state: Any,
    lr: Any,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    *,
    bias: bool = True,
    shift: int = 0,
    eps_inside: bool = False,
    square: bool = True,
    old_moments: bool = False,
    undamped: bool = False,
) -> tuple[Any, AdamState]:
    """One Adam step done wrong in one of the usual ways (NumPy, float32)."""
    count = np.asarray(state.count) + 1
    keep1, keep2 = (1.0, 1.0) if undamped else (1 - b1, 1 - b2)
    mu = jax.tree.map(lambda m, g: b1 * np.asarray(m) + keep1 * np.asarray(g), state.mu, grads)
    nu = jax.tree.map(
        lambda v, g: b2 * np.asarray(v) + keep2 * (np.square(g) if square else np.asarray(g)),
        state.nu,
        grads,
    )
    t = np.float32(count + shift)
    c1, c2 = (1 - b1**t, 1 - b2**t) if bias else (1.0, 1.0)
    use_mu, use_nu = (state.mu, state.nu) if old_moments else (mu, nu)

    def move(p: Any, m: Any, v: Any) -> Any:
        m_hat, v_hat = np.asarray(m) / c1, np.asarray(v) / c2
        step = m_hat / (np.sqrt(v_hat + eps) if eps_inside else np.sqrt(v_hat) + eps)
        return (np.asarray(p) - lr * step).astype(np.float32)

    new = jax.tree.map(move, params, use_mu, use_nu)
    return new, AdamState(np.asarray(count, np.int32), mu, nu)


_ADAM_VARIANTS: tuple[tuple[dict[str, Any], Mistake], ...] = (
    (
        {"bias": False},
        Mistake(
            "this is Adam without bias correction: the params moved with `mu` and `nu` as they "
            "are.",
            "`mu` and `nu` start at zero, so in the first steps they are too small; dividing by "
            "`1 - b1**count` and `1 - b2**count`, with the count of this step, undoes that bias "
            "(most at step 1).",
            "`mu_hat = mu / (1 - b1**count)` and `nu_hat = nu / (1 - b2**count)`, with the new "
            "count, then move the params with `mu_hat` and `nu_hat`.",
        ),
    ),
    (
        {"shift": -1},
        Mistake(
            "the bias correction used the count from before this step (off by one).",
            "The count goes up first: the first step is step 1, and on a fresh state the old "
            "count would divide by `1 - b1**0 = 0`.",
            "Compute `count = state.count + 1` first, and correct with that count.",
        ),
    ),
    (
        {"shift": 1},
        Mistake(
            "the bias correction used `count + 1` after the count was already increased (off by "
            "one).",
            "The first step is step 1: once increased, the count is this step's own number, "
            "the one the bias correction uses.",
            "Increase the count once, `count = state.count + 1`, and correct with that count "
            "itself.",
        ),
    ),
    (
        {"eps_inside": True},
        Mistake(
            "`eps` went inside the square root: the params moved by `m_hat / sqrt(v_hat + eps)`.",
            "Adam adds `eps` to the square root, outside it. With small gradients the two differ "
            "a lot: `sqrt(eps)` is `1e-4` for `eps = 1e-8`.",
            "`m_hat / (sqrt(v_hat) + eps)`.",
        ),
    ),
    (
        {"square": False},
        Mistake(
            "`nu` averages the gradients themselves, not their squares.",
            "`nu` estimates the mean of `g**2`, the second moment, whose square root scales each "
            "parameter's step.",
            "`nu = b2 * nu + (1 - b2) * g**2`.",
        ),
    ),
    (
        {"old_moments": True},
        Mistake(
            "the params moved with the old `mu` and `nu`, those from before this step.",
            "Adam first updates both moments with this step's gradient, then moves the params "
            "with the new moments.",
            "Compute the new `mu` and `nu` first, then map over `params` and the new `mu` and "
            "`nu`.",
        ),
    ),
    (
        {"undamped": True},
        Mistake(
            "the moments add the whole gradient: `b1 * mu + g`, `b2 * nu + g**2`.",
            "Adam's moments are running averages: the new gradient enters with the weight `1 - "
            "b1` (and `1 - b2`), so that the moments stay on the scale of the gradients.",
            "`mu = b1 * mu + (1 - b1) * g` and `nu = b2 * nu + (1 - b2) * g**2`.",
        ),
    ),
)


def _adam_probe(fn: Callable[..., Any], case: Case) -> list[Any]:
    """Run ``fn`` for several steps, feeding it its own params and state back; record every step."""
    params, grads_seq, state, lr = case.args
    records = []
    for grads in grads_seq:
        out = fn(params, grads, state, lr, **case.kwargs)
        records.append(tree_plain(out))
        if not (
            isinstance(out, tuple)
            and len(out) == 2
            and all(hasattr(out[1], f) for f in AdamState._fields)
        ):
            # The judge says what is wrong with this step; a next one would only fail in a muddle.
            break
        params, state = out
    return records


def _judge_adam(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    params, grads_seq, state, lr = case.args
    # The wrong variants are computed on rebuilt trees, the containers the learner's results come
    # back in.
    params, state, kwargs = as_judged(params), AdamState(*as_judged(state)), dict(case.kwargs)
    for i, (record, want) in enumerate(
        zip(got, expected, strict=False)
    ):  # the probe may stop early
        at = f"at step {i + 1} of {len(expected)}: " if len(expected) > 1 else ""
        mine, theirs = rebuild_tree(record), rebuild_tree(want)
        if not (isinstance(mine, tuple) and not is_namedtuple(mine) and len(mine) == 2):
            return Mistake(
                f"{at}returned {describe(mine, 80)}, not a pair.",
                "An Adam step changes the params and the state, and hands both back: the next "
                "step takes the state in again.",
                "Return `(new_params, new_state)`, the new state an `AdamState`.",
            )
        problem: str | Mistake | None = _structure_problem(mine[0], theirs[0], "new_params")
        problem = problem or _state_problem(mine[1], "the new state")
        if problem is None:
            for field in ("mu", "nu"):
                text = _structure_problem(
                    getattr(mine[1], field), getattr(theirs[1], field), f"the new state's {field}"
                )
                if text:
                    problem = _moments_mistake(
                        text,
                        f"Compute the new {field} with `jax.tree.map` over `state.{field}` and "
                        "`grads`: it keeps every container and `None` subtree.",
                    )
                    break
        if problem is not None:
            return lead(at, problem)
        count, want_count = int(mine[1].count), int(theirs[1].count)
        tolerance = adam_tolerance(lr, kwargs.get("b1", 0.9), kwargs.get("b2", 0.999))
        if trees_close(mine, theirs, *tolerance):
            text = _leaf_problem(mine, theirs, "the result", tolerance)
            if text is not None:
                return lead(at, text)
            params, state = theirs[0], AdamState(*theirs[1])
            continue
        if count == want_count - 1 and trees_close(mine[0], theirs[0], *tolerance):
            return Mistake(
                f"{at}the params are right, but the new state's count is {count}, expected "
                f"{want_count}.",
                "The count is state: the step that corrects with `count + 1` must also return it, "
                "or the next step corrects its bias with the same count again.",
                "Put the increased count into the new state: `AdamState(count=state.count + 1, "
                "...)`.",
            )
        grads = as_judged(grads_seq[i])
        variants = [
            Variant(
                mistake=mistake,
                build=functools.partial(_adam_variant, params, grads, state, lr, **kwargs, **flags),
            )
            for flags, mistake in _ADAM_VARIANTS
        ]
        rtol, atol = tolerance
        found = first_mistake(mine, variants, rtol=rtol, atol=atol, rebuilt=True)
        if found:
            return lead(at, found)
        if count != want_count:
            return Mistake(
                f"{at}the new state's count is {count}, expected {want_count}.",
                "The count numbers the steps taken: each step adds exactly 1.",
                "`count = state.count + 1`, returned in the new state.",
            )
        return lead(
            at,
            _leaf_problem(mine, theirs, "the result", tolerance)
            or "the result differs from the expected one.",
        )
    if len(got) < len(expected):
        return f"stopped after step {len(got)} of {len(expected)}."
    return None


def _adam_case(
    rng: np.random.Generator,
    params: Any,
    label: str,
    lr: float = 0.1,
    fresh: bool = True,
    steps: int = 3,
    scale: float = 1.0,
    **kwargs: float,
) -> Case:
    grads_seq = [random_like(rng, params, scale) for _ in range(steps)]
    if fresh:
        state = AdamState(
            jax.device_put(np.int32(0)),
            jax.tree.map(np.zeros_like, params),
            jax.tree.map(np.zeros_like, params),
        )
    else:
        mu = random_like(rng, params, 0.1 * scale)
        nu = jax.tree.map(
            lambda m: (np.square(m) + 1e-3 * scale**2).astype(np.float32),
            random_like(rng, params, scale),
        )
        state = AdamState(jax.device_put(np.int32(rng.integers(3, 20))), mu, nu)
    shown = (
        f"params {describe(params, 100)}, {steps} steps of gradients, a state with "
        f"count={int(state.count)}, lr={lr}"
    ) + "".join(f", {k}={v}" for k, v in kwargs.items())
    return Case((params, grads_seq, state, lr), kwargs=kwargs, label=label, shown=shown)


def _adam_cases(rng: np.random.Generator) -> list[Case]:
    m, n = _LAYER
    cases = [
        _adam_case(
            rng,
            {"w": random_f32(rng, m, n), "b": random_f32(rng, n)},
            "a layer, from a fresh state",
        ),
        _adam_case(
            rng,
            {"encoder": {"w": random_f32(rng, m, n), "b": None}, "decoder": None},
            "a dict with `None` subtrees",
            lr=0.01,
        ),
        _adam_case(
            rng,
            [
                Layer(w=random_f32(rng, m, n), b=None),
                Point(x=random_f32(rng), y=random_f32(rng, n)),
            ],
            "namedtuples, from a state 3 to 19 steps old",
            lr=0.05,
            fresh=False,
        ),
        _adam_case(
            rng,
            ({"w": random_f32(rng, n)}, [random_f32(rng, m, n)]),
            "other betas, `b1=0.8` and `b2=0.99`",
            b1=0.8,
            b2=0.99,
        ),
        _adam_case(
            rng,
            {"w": random_f32(rng, n), "b": random_f32(rng)},
            "gradients of size about 0.001, where `eps` matters",
            lr=0.01,
            scale=1e-3,
        ),
    ]
    for i in range(2):
        tree = float_tree(rng)
        cases.append(
            _adam_case(
                rng, tree, f"random tree {i + 1}, {describe(tree, 100)}", lr=0.02, fresh=i == 0
            )
        )
    layers, later = "a layer and None subtrees", "older states, other betas and a small eps"
    return in_parts(cases, [layers, layers, later, later, later, "random trees", "random trees"])


ADAM_STEP = Exercise(
    id="06.adam_step",
    name="adam_step",
    title="An Adam step: one map over four trees",
    points=3,
    cases=_adam_cases,
    reference=_adam_step,
    probe=_adam_probe,
    judge=_judge_adam,
    hints=(
        (
            "One Adam step: the count goes up first, both moments update from the gradient, and "
            "the bias correction uses the new count; one `jax.tree.map` can take `params`, `mu` "
            "and `nu` together."
        ),
        (
            "`mu = b1*mu + (1-b1)*g`, `nu = b2*nu + (1-b2)*g**2`, `mu_hat = mu / (1 - "
            "b1**count)`, `nu_hat = nu / (1 - b2**count)`, `p - lr * mu_hat / (sqrt(nu_hat) + "
            "eps)`; return `(new_params, AdamState(count, mu, nu))`."
        ),
    ),
    reread=ADAM,
    forbidden=("adam",),
    mistakes=(
        "leaves out the bias correction",
        "corrects with the count from before the step",
        "adds one to a count already increased",
        "puts `eps` inside the square root",
        "does not increase the count",
        "returns a plain tuple as the new state",
    ),
)


# --- 06.save_checkpoint ----------------------------------------------------------------------


def _save_checkpoint(path: Any, tree: Any) -> None:
    arrays: dict[str, Any] = {
        keystr(p): np.asarray(leaf) for p, leaf in jax.tree_util.tree_leaves_with_path(tree)
    }
    np.savez(path, **arrays)


def _object_entries(path: Path) -> list[str]:
    """The entries of an ``.npz`` file whose arrays hold Python objects (pickled), read from each
    entry's ``.npy`` header: nothing is unpickled, and no message is read."""
    found = []
    try:
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                with archive.open(name) as entry:
                    version = np.lib.format.read_magic(entry)
                    read = (
                        np.lib.format.read_array_header_1_0
                        if version == (1, 0)
                        else np.lib.format.read_array_header_2_0
                    )
                    if read(entry)[2].hasobject:
                        found.append(name.removesuffix(".npy"))
    except Exception:  # noqa: BLE001 (a file that is no archive holds no object arrays either)
        return []
    return found


def _read_npz(path: Path) -> dict[str, Any]:
    """The entries of an ``.npz`` file, or why it cannot be read without pickle: the error, and
    the entries that hold Python objects."""
    try:
        with np.load(path, allow_pickle=False) as data:
            return {"entries": {name: data[name] for name in data.files}}
    except Exception as error:  # noqa: BLE001 (whatever the learner wrote)
        return {"unreadable": error_text(error, 300), "objects": _object_entries(path)}


def _save_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any]:
    """Call ``fn`` with a path in a fresh temporary folder, then read back what it wrote."""
    name, tree = case.args
    with tempfile.TemporaryDirectory(prefix="course-06-", ignore_cleanup_errors=True) as scratch:
        folder = Path(scratch)
        target = folder / name
        fn(target if case.info.get("as_path") else str(target), tree)
        found = sorted(os.listdir(folder))
        record: dict[str, Any] = {"files": found}
        if target.is_file():
            record.update(_read_npz(target))
        return record


def _spec_text(array: Any) -> str:
    return describe(np.asarray(array))


def _none_paths(tree: Any) -> set[str]:
    """The key paths of the ``None`` subtrees of ``tree``, as ``keystr`` writes them."""
    pairs = jax.tree_util.tree_leaves_with_path(tree, is_leaf=lambda x: x is None)
    return {keystr(path) for path, leaf in pairs if leaf is None}


def _judge_save(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    name, tree = case.args
    if not isinstance(got, dict) or "files" not in got:
        return "the check could not read what `save_checkpoint` wrote."
    if "entries" not in got and "unreadable" not in got:
        if got["files"]:
            return Mistake(
                f"nothing was written at the path you were given ({name}); the folder holds "
                f"{got['files']}.",
                "The caller chooses the file, its suffix included: `restore_checkpoint(path, "
                "...)` looks for it at that very path.",
                "Call `np.savez(path, ...)` with `path` as given, adding nothing to it (`np.savez` "
                "adds `.npz` only to a name that lacks it).",
            )
        return Mistake(
            "nothing was written: the folder stayed empty.",
            "Saving has one effect, a file at `path`, and the check reads that file back.",
            "Write the arrays with `np.savez(path, **arrays)`.",
        )
    if "unreadable" in got:
        objects = got.get("objects")
        if objects:
            what = (
                "the file holds pickled Python objects, not plain arrays (in the entries "
                f"{', '.join(objects[:3])})."
            )
            if set(objects) <= _none_paths(tree):
                return Mistake(
                    what,
                    "`None` subtrees hold no leaves, so they write nothing. An entry for `None` is "
                    "stored as a pickled Python object, which `np.load` refuses unless told to "
                    "unpickle.",
                    "Save only the leaves, the pairs `jax.tree_util.tree_leaves_with_path(tree)` "
                    "gives without `is_leaf`, each as `np.asarray(leaf)`.",
                    reread=PITFALL_1,
                )
            return Mistake(
                what,
                "A checkpoint holds plain arrays, which `np.load` reads without unpickling "
                "anything; anything else is stored as a pickled Python object, which `np.load` "
                "refuses by default.",
                "Save each leaf as `np.asarray(leaf)`, and nothing but the leaves.",
            )
        return f"the file is not an `.npz` archive NumPy can read ({got['unreadable']})."
    mine, theirs = got["entries"], expected["entries"]
    if set(mine) == set(theirs):
        for key in theirs:
            a, e = np.asarray(mine[key]), np.asarray(theirs[key])
            if a.shape != e.shape or a.dtype != e.dtype:
                return Mistake(
                    f"the entry {key} holds {_spec_text(a)}, expected {_spec_text(e)}.",
                    "A checkpoint stores each leaf unchanged, its shape and dtype included, so "
                    "that restoring gives back the same arrays.",
                    "Store `np.asarray(leaf)` for each leaf, with no cast and no reshape.",
                )
            if not np.array_equal(a, e):
                return f"the entry {key} holds other values than the leaf at {key}."
        return None
    example = next(iter(theirs), "")
    if theirs and all(k.startswith("arr_") for k in mine) and len(mine) == len(theirs):
        return Mistake(
            "the entries are named "
            f"{', '.join(sorted(mine)[:3])}{', ...' if len(mine) > 3 else ''}: `np.savez` got the "
            "arrays by position.",
            "A checkpoint must say which array is which: named by its key path, an entry can be "
            "found again whatever the order, and a misfit can be reported by name.",
            "Pass the arrays as keywords, `np.savez(path, **arrays)`, with `arrays` a dict from "
            f"`jax.tree_util.keystr(key_path)` to the leaf (such as {example}).",
        )
    missing = [k for k in theirs if k not in mine]
    extra = [k for k in mine if k not in theirs]
    if extra:
        return Mistake(
            f"the file has an entry named {extra[0]!r}, which is not the key path of a leaf as "
            f"`jax.tree_util.keystr` writes it (such as {missing[0] if missing else example}).",
            "The entries are named in one agreed spelling, `keystr`'s, so that "
            "`restore_checkpoint` can compute the same names from its template.",
            "Name each entry `jax.tree_util.keystr(key_path)`, with the key paths of "
            "`jax.tree_util.tree_leaves_with_path(tree)`.",
        )
    return Mistake(
        f"the entry {missing[0]} is missing.",
        "Every leaf gets one entry, named by its key path; only `None` subtrees, which hold no "
        "leaves, write nothing.",
        "Write one entry for each pair of `jax.tree_util.tree_leaves_with_path(tree)`.",
    )


def _training_state(rng: np.random.Generator) -> dict[str, Any]:
    m, n = (int(k) for k in rng.integers(2, 5, size=2))
    params = {"w": random_f32(rng, m, n), "b": jax.device_put(random_f32(rng, n))}
    opt = AdamState(
        jax.device_put(np.int32(rng.integers(1, 50))),
        random_like(rng, params),
        random_like(rng, params),
    )
    return {"params": params, "opt": opt}


def _save_cases(rng: np.random.Generator) -> list[Case]:
    m, n = (int(k) for k in rng.integers(2, 5, size=2))
    leaf = lambda: _array_leaf(rng)
    cases = [
        Case(("layer.npz", {"w": random_f32(rng, m, n), "b": random_f32(rng, n)}), label="a layer"),
        Case(
            ("state.npz", _training_state(rng)),
            label="a training state: params and an `AdamState` with an `int32` count",
        ),
        Case(
            ("ckpt.npz", [leaf(), None, {"z": leaf(), "a": None}]),
            label="a list with `None` subtrees",
            info={"as_path": True},
        ),
        Case(
            (
                "model.npz",
                (
                    Layer(w=leaf(), b=leaf()),
                    collections.OrderedDict(z=leaf(), a=Point(x=leaf(), y=None)),
                ),
            ),
            label="namedtuples and an `OrderedDict`",
        ),
    ]
    for i in range(3):
        tree = {
            "params": random_tree(rng, depth=3, none_rate=0.3, leaf=_array_leaf),
            "step": jax.device_put(np.int32(i + 1)),
        }
        label = f"random tree {i + 1}, {describe(tree, 100)}"
        cases.append(Case((f"random_{i + 1}.npz", tree), label=label, info={"as_path": i == 1}))
    layers, nested = (
        "a layer and a training state",
        "None subtrees, namedtuples and OrderedDicts",
    )
    return in_parts(cases, [layers, layers, nested, nested] + ["random trees"] * (len(cases) - 4))


SAVE_CHECKPOINT = Exercise(
    id="06.save_checkpoint",
    name="save_checkpoint",
    title="Save a tree, one entry per key path",
    points=2,
    cases=_save_cases,
    reference=_save_checkpoint,
    probe=_save_probe,
    judge=_judge_save,
    hints=(
        (
            "A checkpoint names each array by its key path, so that it can be read back by name; "
            "`None` subtrees have no leaves and so no entries, and nothing else belongs in the "
            "file."
        ),
        (
            "`np.savez(path, **{jax.tree_util.keystr(p): np.asarray(leaf) for p, leaf in "
            "jax.tree_util.tree_leaves_with_path(tree)})`."
        ),
    ),
    reread=CHECKPOINTS,
    forbidden=("save_tree", "load_tree"),
    mistakes=(
        "names the entries `arr_0`, `arr_1`, ... by position",
        "names the entries by something other than the leaves' key paths",
        "adds `.npz` to a path that already ends in it",
        "writes entries for `None` subtrees",
    ),
)


# --- 06.restore_checkpoint -------------------------------------------------------------------


def _restore_checkpoint(path: Any, like: Any) -> Any:
    with np.load(path, allow_pickle=False) as data:
        stored = {name: data[name] for name in data.files}
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(like)
    wanted = {keystr(p): leaf for p, leaf in with_paths}
    problems = [f"{name} is missing from the file" for name in wanted if name not in stored]
    problems += [
        f"{name} is in the file but not in `like`" for name in stored if name not in wanted
    ]
    problems += [
        f"{name} has shape {stored[name].shape} in the file, {np.shape(leaf)} in `like`"
        for name, leaf in wanted.items()
        if name in stored and stored[name].shape != np.shape(leaf)
    ]
    if problems:
        raise ValueError("the checkpoint does not fit `like`: " + "; ".join(problems))
    return jax.tree.unflatten(treedef, [jax.device_put(stored[name]) for name in wanted])


def _restore_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any]:
    """Write the case's entries to a fresh ``.npz``, call ``fn`` on it, record a tree or error."""
    name, like = case.args
    with tempfile.TemporaryDirectory(prefix="course-06-", ignore_cleanup_errors=True) as folder:
        target = Path(folder) / name
        np.savez(target, **case.info["entries"])
        out, error = attempt(lambda: fn(str(target), like))
        if error is not None:
            message = without_backticks(str(error).replace(folder, "<folder>"))[:600]
            return {
                "raised": type(error).__name__,
                "value_error": isinstance(error, ValueError),
                "message": message,
            }
        return {"returned": tree_plain(out)}


_MISFIT = {
    "missing": "`like` has a leaf at {path} that the file does not hold",
    "extra": "the file holds an entry {path} that `like` has no leaf for",
    "shape": "the entry {path} has another shape in the file than in `like`",
    "renamed": "the file's key paths are not those of `like` ({path}, for one)",
}


def _judge_restore(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if not isinstance(got, dict):
        return "the check could not read what `restore_checkpoint` did."
    kind, offending = case.info["kind"], list(case.info["offending"])
    if "raised" in expected:
        why = _MISFIT[kind].format(path=offending[0])
        if "returned" in got:
            return Mistake(
                f"returned a tree, but {why}.",
                "A checkpoint that does not fit must not load halfway: compare the file with "
                "`like`, names and shapes, before building anything, and refuse a misfit.",
                "Before unflattening, compare the set of entry names and each entry's shape "
                "with those of `like`, and raise `ValueError` naming the first misfit's key path.",
            )
        if not got["value_error"]:
            return Mistake(
                f"raised {got['raised']} ({got['message'][:120]}), not a `ValueError`: {why}.",
                "A misfit is an error of its own, found by comparing the file with `like` "
                "before reading anything; a `KeyError` or a shape error from halfway through the "
                "loading is an accident that says little.",
                "Check every key path and shape first, and raise `ValueError` naming the path.",
            )
        if not any(path in got["message"] for path in offending):
            return Mistake(
                f"the `ValueError` says {got['message'][:160]!r}, but not where: {why}.",
                "A refused checkpoint must say which leaf does not fit, or its user cannot tell "
                "what changed since it was written.",
                "Put the offending key path in the message, written as `jax.tree_util.keystr` "
                f"writes it (here {offending[0]}).",
            )
        return None
    if "raised" in got:
        return (
            f"raised {got['raised']}: {got['message'][:200]}; but this file fits `like` and "
            "should load."
        )
    mine, theirs = rebuild_tree(got["returned"]), rebuild_tree(expected["returned"])
    problem = _structure_problem(mine, theirs, "the restored tree")
    if problem is not None:
        return Mistake(
            problem,
            "The restored tree takes its structure from `like`, not from the file: a file holds "
            "names only, and the same names can belong to a list or to a tuple.",
            "Rebuild with `jax.tree.unflatten(treedef, leaves)`, the treedef of "
            "`jax.tree_util.tree_flatten_with_path(like)`.",
        )
    problem = _leaf_problem(mine, theirs, "the restored tree")
    if problem is None:
        return None
    mine_leaves = sorted(
        describe(leaf) + str(np.asarray(leaf).tolist()) for leaf in jax.tree.leaves(mine)
    )
    their_leaves = sorted(
        describe(leaf) + str(np.asarray(leaf).tolist()) for leaf in jax.tree.leaves(theirs)
    )
    if mine_leaves == their_leaves:
        return Mistake(
            problem + " The arrays are all there, in the wrong places.",
            "The file's entries come in an order of their own, and `like`'s leaves in flatten "
            "order, where a namedtuple keeps the order of its fields: arrays and leaves are "
            "matched by key path, never by position.",
            "Take the arrays in the order of `like`'s leaves, each by the `keystr` of its key "
            "path.",
        )
    return problem


def _entries(tree: Any) -> dict[str, np.ndarray]:
    return {keystr(p): np.asarray(leaf) for p, leaf in jax.tree_util.tree_leaves_with_path(tree)}


def _restore_case(
    saved: Any, like: Any, label: str, kind: str = "fits", offending: tuple[str, ...] = ()
) -> Case:
    entries = _entries(saved)
    shown = f"a file with the entries {', '.join(entries)}; like={describe(like, 140)}"
    info = {"entries": entries, "kind": kind, "offending": offending}
    return Case(("checkpoint.npz", like), label=label, info=info, shown=shown)


def _zeros(tree: Any) -> Any:
    return jax.tree.map(np.zeros_like, tree)


def _restore_cases(rng: np.random.Generator) -> list[Case]:
    m, n = (int(k) for k in rng.integers(2, 5, size=2))
    leaf = lambda: _array_leaf(rng)
    layer = {"w": random_f32(rng, m, n), "b": random_f32(rng, n)}
    state = _training_state(rng)
    state["opt"] = state["opt"]._replace(nu=None)
    named = [
        Layer(w=random_f32(rng, m, m), b=random_f32(rng, m)),
        Layer(w=random_f32(rng, m, 1), b=random_f32(rng, 1)),
    ]
    listed = [leaf(), [leaf(), leaf()], None]
    wider_bias = random_f32(rng, n + 1)
    opt_paths = tuple(
        keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path({"opt": state["opt"]})
    )
    cases = [
        _restore_case(layer, _zeros(layer), "a layer, into a template of zeros"),
        _restore_case(state, _zeros(state), "a training state with a `None` subtree"),
        _restore_case(
            named, _zeros(named), "namedtuples, whose fields `w, b` are not in sorted order"
        ),
        _restore_case(
            listed,
            tuple(_zeros(listed)),
            "a tuple as the template of a file written from a list (same key paths)",
        ),
        _restore_case(
            layer,
            {**_zeros(layer), "scale": np.ones(1, np.float32)},
            "a template with a leaf the file lacks",
            "missing",
            ("['scale']",),
        ),
        _restore_case(
            state,
            {"params": _zeros(state["params"])},
            "a file with entries the template lacks",
            "extra",
            opt_paths,
        ),
        _restore_case(
            {"params": layer, "step": np.int32(3)},
            {"params": {"w": _zeros(layer["w"]), "b": _zeros(wider_bias)}, "step": np.int32(0)},
            "a template whose bias has another shape",
            "shape",
            ("['params']['b']",),
        ),
        _restore_case(
            {"x": layer["b"], "y": layer["w"]},
            Point(x=_zeros(layer["b"]), y=_zeros(layer["w"])),
            "a namedtuple template for a file written from a dict: `.x` is not `['x']`",
            "renamed",
            (".x", ".y", "['x']", "['y']"),
        ),
    ]
    for i in range(2):
        tree = {
            "params": random_tree(rng, depth=3, none_rate=0.3, leaf=_array_leaf),
            "step": np.int32(i),
        }
        cases.append(
            _restore_case(tree, _zeros(tree), f"random tree {i + 1}, {describe(tree, 100)}")
        )
    # Each part pairs files that must be restored with files that must be refused, so an answer that
    # always returns the template, or always raises, earns nothing.
    layer_part, state_part, named_part, renamed_part = (
        "a layer, and a leaf the file lacks",
        "a training state, and entries the template lacks",
        "namedtuples, tuples, and a wrong shape",
        "a renamed container, and random trees",
    )
    return in_parts(
        cases,
        [
            layer_part,
            state_part,
            named_part,
            named_part,
            layer_part,
            state_part,
            named_part,
            renamed_part,
            renamed_part,
            renamed_part,
        ],
    )


RESTORE_CHECKPOINT = Exercise(
    id="06.restore_checkpoint",
    name="restore_checkpoint",
    title="Restore a tree, checking its structure",
    points=3,
    cases=_restore_cases,
    reference=_restore_checkpoint,
    probe=_restore_probe,
    judge=_judge_restore,
    hints=(
        (
            "Restoring reads by name into the structure of `like`, and checks before it builds "
            "anything: a missing, extra or misshapen entry is an error that names its key path."
        ),
        (
            "Compare `np.load(path).files` and each shape with the `keystr` names of "
            "`jax.tree_util.tree_flatten_with_path(like)` (`ValueError` naming the path), then "
            "`jax.tree.unflatten(treedef, arrays in leaf order)`."
        ),
    ),
    reread=CHECKPOINTS,
    forbidden=("save_tree", "load_tree"),
    mistakes=(
        "does not check the structure, and fails with `KeyError`",
        "checks the names but not the shapes",
        "raises an error that does not say where the trees differ",
        "fills the leaves in the sorted order of the names",
    ),
)


# --- 06.train_loop ---------------------------------------------------------------------------


def _train_loss(params: Any, batch: dict[str, jax.Array]) -> jax.Array:
    """Each leaf pulled towards the batch's target, with the batch's weight: a float32 scalar."""
    total = jnp.zeros((), jnp.float32)
    for leaf in jax.tree.leaves(params):
        x = jnp.asarray(leaf).astype(jnp.float32)
        total = total + batch["weight"] * jnp.mean(jnp.square(x - batch["target"]))
    return total


def _train_loop(
    loss_fn: Callable[..., Any], params: Any, batches: Any, lr: Any, beta: float
) -> tuple[Any, Any, jax.Array]:
    def body(carry: tuple[Any, Any], batch: Any) -> tuple[tuple[Any, Any], jax.Array]:
        params, velocity = carry
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        velocity = jax.tree.map(lambda v, g: beta * v + g, velocity, grads)
        params = jax.tree.map(lambda p, v: (p - lr * v).astype(p.dtype), params, velocity)
        return (params, velocity), loss

    velocity = jax.tree.map(jnp.zeros_like, params)
    (params, velocity), losses = jax.lax.scan(body, (params, velocity), batches)
    return params, velocity, losses


def _has_loop(jaxpr: Any) -> bool:
    """Whether a (closed) jaxpr holds a ``scan`` or ``while`` anywhere, nested programs included."""
    seen = [jaxpr]
    while seen:
        current = seen.pop()
        inner = getattr(current, "jaxpr", current)
        for eqn in getattr(inner, "eqns", ()):
            if eqn.primitive.name in ("scan", "while"):
                return True
            for value in eqn.params.values():
                for item in value if isinstance(value, (tuple, list)) else (value,):
                    if hasattr(item, "eqns") or hasattr(getattr(item, "jaxpr", None), "eqns"):
                        seen.append(item)
    return False


def _carry_change(body: Callable[..., Any], init: Any, xs: Any = None, *_: Any, **__: Any) -> Any:
    """For a ``lax.scan`` call that failed: what one step of its body does to the carry, measured
    by calling the body on the first slice of ``xs`` (weak types aside: scan reconciles those)."""
    x = None if xs is None else jax.tree.map(lambda leaf: leaf[0], xs)
    carry, _ = body(init, x)
    changes = input_changes(carry, init, ("the carry out", "the carry in"))
    leaves = [leaf for leaf in changes["leaves"] if leaf["change"] != "weak_type"]
    return {"structure": changes["structure"], "leaves": leaves}


def _train_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any]:
    """Trace ``fn`` under ``jax.jit`` (is there a loop in it?), then compile and run it once.

    When that raises, the probe measures why instead of reading JAX's message: what the body of a
    failed ``lax.scan`` did to the carry (``carry``), and whether ``fn`` runs without jit
    (``eager``), where no value is traced.
    """
    loss_fn, params, batches, lr, beta = case.args
    try:
        with measured_calls(jax.lax, "scan", _carry_change) as carries:
            traced = jax.jit(lambda p, b: fn(loss_fn, p, b, lr, beta)).trace(params, batches)
            out = traced.lower().compile()(params, batches)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 (a broken carry raises inside JAX: that is the lesson)
        try:
            fn(*case.args)
            eager = True
        except Exception:  # noqa: BLE001 (failing without jit too is what the record says)
            eager = False
        return {
            "raised": type(error).__name__,
            "message": error_text(error, 300),
            "carry": carries[-1] if carries else None,
            "eager": eager,
        }
    loop = _has_loop(traced.jaxpr)
    if not (type(out) is tuple and len(out) == 3):
        return {"loop": loop, "shape": describe(out, 120)}
    return {
        "loop": loop,
        "params": dtyped_plain(out[0]),
        "velocity": dtyped_plain(out[1]),
        "losses": dtyped_plain(out[2]),
    }


def _carry_mistake(carry: dict[str, Any] | None) -> Mistake | None:
    """The mistake :func:`_carry_change` measured, or ``None`` when it measured nothing."""
    if not carry:
        return None
    if carry["structure"]:
        lines = "".join(
            f"\n  {line.replace('at [', 'at carry[', 1) if line.startswith('at [') else line}"
            for line in carry["structure"]
        )
        return Mistake(
            "the carry of `lax.scan` came out with another structure than it went in with:" + lines,
            "Pitfall 15: a compiled loop has one fixed type for its carry, so the body must "
            "return exactly the structure it received. Python code that creates the state on "
            "the first step (an `if ... is None` in the body) runs once, at trace time, and "
            "cannot change the carry's type.",
            "Build the whole carry before the loop: the velocity is `jax.tree.map(jnp.zeros_like, "
            "params)`, with the structure of `params`, never `None` or a list of leaves.",
            reread=PITFALL_15,
        )
    changed = {leaf["change"]: leaf for leaf in reversed(carry["leaves"])}
    where = "at carry{path}, {before} went in and {now} came out"
    if "dtype" in changed:
        return Mistake(
            "a leaf of the carry changed dtype inside the loop: "
            + where.format(**changed["dtype"])
            + ".",
            "Pitfall 15: every leaf of a `scan` carry keeps its dtype. With `lr` a `float32` "
            "array, `lr * v` is `float32` even when `v` is `bfloat16`, and so is `p - lr * v`.",
            "Cast each new parameter back, `(p - lr * v).astype(p.dtype)`, and build the "
            "velocity with `jnp.zeros_like(p)`, so that it has the dtype of `p`.",
            reread=PITFALL_15,
        )
    if "shape" in changed:
        return Mistake(
            "a leaf of the carry changed shape inside the loop: "
            + where.format(**changed["shape"])
            + ".",
            "Pitfall 15: every leaf of a `scan` carry keeps its shape. A velocity leaf that "
            "starts as a scalar comes out of the first step with the shape of its parameter.",
            "Start each velocity leaf with the shape of its parameter: `jnp.zeros_like(p)`, not "
            "`0.0`.",
            reread=PITFALL_15,
        )
    if "kind" in changed:
        return Mistake(
            "a leaf of the carry changed kind inside the loop: "
            + where.format(**changed["kind"])
            + ".",
            "Pitfall 15: every leaf of the carry must come out of the body as it went in, an "
            "array of the same shape and dtype.",
            "Start the carry with arrays like those the body returns: the params as they are, "
            "and the velocity `jax.tree.map(jnp.zeros_like, params)`.",
            reread=PITFALL_15,
        )
    return None


_JIT_ONLY = (
    "The check runs `train_loop` under `jax.jit`, and `scan` traces its body the same way: there, "
    "values computed from `params` or `batches` are tracers, with no number inside for `float()`, "
    "`.item()` or NumPy to read."
)


def _train_tolerance(steps: int, beta: float, *dtypes: str) -> tuple[float, float]:
    """The tolerance rule (:func:`float_tolerance`) for a training loop's outputs, set by the least
    precise dtype among those that produced them: each of the ``steps`` steps rounds, and the
    velocity carries each step's error into the later ones with a weight of up to
    ``1 / (1 - beta)``. Params and losses are of size about 1."""
    return float_tolerance(*dtypes, amplification=steps / (1 - beta), scale=1.0)


def _compare_record(
    mine: dict[str, Any],
    theirs: dict[str, Any],
    what: str,
    loop: tuple[int, float],
    computed_from: tuple[str, ...] = (),
) -> tuple[str, str | Mistake] | None:
    """Compare one output with the reference's: ``None``, or what kind of difference it is
    (``"structure"``, ``"dtype"``, ``"shape"``, ``"values"``) with what to say. ``loop`` is the
    training loop's steps and beta (:func:`_train_tolerance`); ``computed_from``
    names the dtypes the output was computed from (the losses come from the params: bfloat16
    params give float32 losses with bfloat16 rounding)."""
    a, e = rebuild_tree(mine["tree"]), rebuild_tree(theirs["tree"])
    problem = _structure_problem(a, e, what)
    if problem is not None:
        return "structure", problem
    for (path, dtype), (_, want) in zip(mine["dtypes"], theirs["dtypes"], strict=True):
        if dtype != want:
            said = f"{what}: the leaf {path} is `{dtype}`, expected `{want}`."
            if what == "the velocity":
                return "dtype", Mistake(
                    said,
                    "The velocity has the dtype of its parameter, as `optax`'s does. A `scan` "
                    "carry keeps the dtype it starts with (Pitfall 15), so that dtype is decided "
                    "where the velocity is created.",
                    "Build it with `jnp.zeros_like(p)`, which keeps the dtype of `p`, where "
                    "`jnp.zeros(p.shape)` makes `float32`.",
                    reread=PITFALL_15,
                )
            return "dtype", Mistake(
                said,
                "Every leaf of a `scan` carry keeps its dtype (Pitfall 15), and each parameter "
                "keeps its own through training, as `optax`'s do.",
                "Cast each new leaf back with `.astype(p.dtype)`.",
                reread=PITFALL_15,
            )
    for (path, dtype), x, y in zip(
        theirs["dtypes"], jax.tree.leaves(a), jax.tree.leaves(e), strict=True
    ):
        where = f"{what}: the leaf {path}" if path else what
        rtol, atol = _train_tolerance(*loop, dtype, *computed_from)
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if x.shape != y.shape:
            return "shape", f"{where} has shape `{x.shape}`, expected `{y.shape}`."
        if not close_elements(x, y, rtol=rtol, atol=atol, equal_nan=True).all():
            worst = float(np.nanmax(np.abs(x - y))) if x.size else 0.0
            verb = "differ" if where == "losses" else "differs"
            return (
                "values",
                f"{where} {verb} from the expected values (largest difference {worst:.3g}).",
            )
    return None


def _judge_train(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if "raised" in got:
        found = _carry_mistake(got.get("carry"))
        if not got.get("eager"):
            return found or f"`train_loop` raised {got['message']}"
        jit_only = "\n  `train_loop` runs without `jit` and fails under it."
        if found:
            return lead("", found, jit_only)
        return Mistake(
            f"`train_loop` raised {got['message']}" + jit_only,
            _JIT_ONLY,
            "Keep every value a JAX array: return the losses as `scan` stacks them, with no "
            "`float()`, `.item()` or NumPy call on anything computed from `params` or `batches`.",
            reread=WHAT_JIT_SEES,
        )
    if "shape" in got:
        return Mistake(
            f"returned {got['shape']}, not a tuple of three.",
            "`train_loop` hands back the trained params, the final velocity (to resume from) and "
            "the losses, one per step.",
            "Return `(params, velocity, losses)`: the first two from `scan`'s final carry, the "
            "losses from its stacked outputs.",
        )
    steps = int(np.shape(case.args[2]["target"])[0])
    losses, want = rebuild_tree(got["losses"]["tree"]), rebuild_tree(expected["losses"]["tree"])
    if not isinstance(losses, np.ndarray) or losses.shape != want.shape:
        return Mistake(
            f"`losses` is {describe(losses, 60)}, not an array of shape `({steps},)`, one loss per "
            "step.",
            "`scan` stacks the second output of the body along a new leading axis: a body that "
            "returns its step's loss there gives one loss per batch.",
            "Return `(new_carry, loss)` from the body, and the stacked losses `scan` gives back as "
            "they are.",
            reread=PITFALL_15,
        )
    param_dtypes = tuple(dtype for _, dtype in expected["params"]["dtypes"])
    for what, key in (("params", "params"), ("the velocity", "velocity"), ("losses", "losses")):
        compared = _compare_record(
            got[key],
            expected[key],
            what,
            (steps, float(case.args[4])),
            param_dtypes if key == "losses" else (),
        )
        if compared is None:
            continue
        kind, problem = compared
        if key == "losses" and kind == "values" and isinstance(problem, str):
            return Mistake(
                problem.removesuffix(".") + ", though the params and the velocity are right.",
                "`losses` holds the loss before each step: at the params the step starts from, "
                "the same evaluation that gives the gradients.",
                "Take `loss, grads = jax.value_and_grad(loss_fn)(params, batch)` at the start of "
                "the body, and return that loss as the body's second output.",
                reread=TRAINING,
            )
        return problem
    if not got["loop"]:
        return Mistake(
            "the results are right, but the traced program holds no loop: Python unrolled "
            f"{steps} copies of the step.",
            "Under `jit` a Python `for` loop runs at trace time, and the program holds one copy of "
            "the step per batch, which takes longer to compile the more batches there are. "
            "`lax.scan` compiles the step once, as a loop.",
            "Write the step as `body(carry, batch) -> (new_carry, loss)` and run it with "
            "`jax.lax.scan(body, carry, batches)`.",
            reread=PITFALL_15,
        )
    return None


def _train_case(
    rng: np.random.Generator, params: Any, label: str, lr: Any, steps: int, beta: float = 0.9
) -> Case:
    batches = {
        "target": jax.device_put(random_f32(rng, steps)),
        "weight": jax.device_put(rng.uniform(0.5, 1.5, size=steps).astype(np.float32)),
    }
    lr_text = f"jnp.float32({float(lr):g})" if isinstance(lr, jax.Array) else repr(lr)
    shown = (
        f"loss_fn, params={describe(params, 120)}, batches={describe(batches)}, lr={lr_text}, "
        f"beta={beta}"
    )
    return Case((_train_loss, params, batches, lr, beta), label=label, shown=shown)


def _bf16(rng: np.random.Generator, *shape: int) -> jax.Array:
    return jax.device_put(random_f32(rng, *shape).astype(jnp.bfloat16))


def _train_cases(rng: np.random.Generator) -> list[Case]:
    # Three cases only: each one compiles a whole training loop, twice (the reference and yours).
    m, n = _LAYER
    tree = jax.device_put(float_tree(rng, none_rate=0.3))
    tree["skip"] = None
    layer = jax.device_put({"w": random_f32(rng, m, n), "b": random_f32(rng, n)})
    return [
        _train_case(rng, layer, "a layer, `lr` a Python float", 0.1, 4),
        _train_case(
            rng,
            tree,
            f"a random tree with `None` subtrees, `lr` a `float32` array, {describe(tree, 100)}",
            jax.device_put(np.float32(0.05)),
            5,
        ),
        _train_case(
            rng,
            [
                Layer(w=_bf16(rng, m, n), b=None),
                Point(x=jax.device_put(random_f32(rng, n)), y=_bf16(rng, n)),
            ],
            "`bfloat16` leaves next to `float32` ones, `lr` a `float32` array",
            jax.device_put(np.float32(0.1)),
            4,
        ),
    ]


TRAIN_LOOP = Exercise(
    id="06.train_loop",
    name="train_loop",
    title="A training loop in one lax.scan: the carry keeps its structure",
    points=3,
    cases=_train_cases,
    reference=_train_loop,
    probe=_train_probe,
    judge=_judge_train,
    hints=(
        (
            "`lax.scan` runs a body over the batches, one slice of the leading axis at a time, and "
            "the carry must come out with exactly the structure, shapes and dtypes it went in with "
            "(Pitfall 15)."
        ),
        (
            "`body(carry, batch)` with `carry = (params, velocity)` returns `(new_carry, loss)`; "
            "create the velocity before the loop with `jax.tree.map(jnp.zeros_like, params)`, "
            "cast each new leaf with `.astype(p.dtype)`, and call `jax.lax.scan(body, carry, "
            "batches)`."
        ),
    ),
    reread=PITFALL_15,
    forbidden=(
        "momentum",
        "tree_zeros_like",
        "tree_full_like",
        "tree_add",
        "tree_add_scale",
        "tree_scale",
        "tree_sub",
    ),
    mistakes=(
        "creates the optimizer state inside the loop, so the carry changes structure (Pitfall 15)",
        "lets a leaf of the carry change dtype",
        "lets a leaf of the carry change shape",
        "starts a `float32` velocity for `bfloat16` parameters",
        "loops in Python instead of with `lax.scan`",
        "records the loss after each step instead of before it",
        "turns the losses into Python floats, which fails under `jit`",
    ),
)


EXERCISES = (MOMENTUM_STEP, ADAM_INIT, ADAM_STEP, SAVE_CHECKPOINT, RESTORE_CHECKPOINT, TRAIN_LOOP)
