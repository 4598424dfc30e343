"""Exercises of lesson 05, recompilation: every probe counts compilations.

Counts do not depend on what the process compiled before: each probe clears JAX's caches
(``jax.clear_caches()``) first. They count the programs of jitted functions only: JAX's own eager
operations (``jnp.asarray(lr, jnp.float32)`` outside ``jit``, say) compile too, once per process
and shape, but never log a cache-miss explanation, so a compilation counts when JAX explained a
miss since the compilation before it, whatever the explanation says (``_kit.jit_compile_calls``).

What a recompilation means is measured, never read from JAX's explanation, whose wording changes
between releases (JAX 0.11 says "cache miss explanation unavailable" for a static argument): the
probes repeat a call to see whether the same call compiles again (a new function every time) or
only a new value does (a static argument), and compare the inputs of the call that compiled with
the closest earlier call's (structure, dtypes, shapes, weak types). JAX's explanation is quoted
below the hint as supporting detail.
"""

import collections
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._kit import (
    Layer,
    Point,
    count_none,
    error_text,
    jit_compile_calls,
    jit_compile_report,
    judge_compiles_with_advice,
    miss_of,
    random_f32,
    random_float_leaf,
    random_shape,
    random_tree,
    recompile_cause,
    recompiled_calls,
    repeat_compiles,
    returned_instead,
    tree_judge,
)
from ._plain import describe, rebuild_tree, tree_plain
from ._spec import Case, Exercise


def _float_leaf(rng: np.random.Generator) -> Any:
    """A float32 array (NumPy or JAX) with 1 or 2 dimensions of 2 to 4."""
    return random_float_leaf(rng, functools.partial(random_shape, sizes=(2, 4), dims=(1, 2)))


def _like(rng: np.random.Generator, tree: Any) -> Any:
    """A tree of the structure and shapes of ``tree`` with new float32 values, NumPy arrays all."""
    return jax.tree.map(lambda leaf: random_f32(rng, *np.shape(leaf)), tree)


def _param_tree(rng: np.random.Generator, kind: int) -> Any:
    """Parameters with ``None`` subtrees, in one of several container layouts."""
    leaf = lambda: _float_leaf(rng)
    if kind == 0:
        return {"dense": {"w": leaf(), "b": leaf()}, "norm": None, "head": [leaf(), None]}
    if kind == 1:
        return [Layer(w=leaf(), b=None), Layer(w=leaf(), b=leaf()), (leaf(),)]
    if kind == 2:
        return collections.OrderedDict(emb=leaf(), out=Point(x=leaf(), y=None), extra=())
    extra = random_tree(rng, depth=2, none_rate=0.3, leaf=_float_leaf)
    return {"layer": Layer(w=leaf(), b=leaf()), "extra": extra}


Advice = tuple[str | None, int | None]
"""What a cache miss means for the exercise, and which explanation to quote (the arguments
``advice`` and ``about`` of ``judge_compiles_with_advice``). The advice comes from the probes'
measurements (counts of repeated calls, what changed in the inputs of the call that compiled
again), never from the wording of JAX's explanation, which is only quoted."""


def _same_inputs(call: str) -> str:
    """The measured advice when a call compiled again and the probes found no cause."""
    return (
        f"{call} compiled again although its arguments had the same structure, shapes, dtypes "
        "and weak types as an earlier call's."
    )


def _no_miss_advice(got: dict[str, Any], expected: dict[str, Any]) -> Advice:
    if got["compiles"] or not expected["compiles"]:
        return None, None
    return (
        "Nothing you jitted was compiled: the computation ran operation by operation outside jit "
        "(each operation compiled on its own). Put the whole computation inside one "
        "jitted function."
    ), None


_tree = tree_judge()


def _calls_problem(
    got: dict[str, Any],
    expected: dict[str, Any],
    case: Case,
    explain: Callable[[int, Any, Any, str], str],
    advice: Callable[[dict[str, Any], dict[str, Any]], Advice],
) -> str | None:
    """The first call whose result differs from the reference's, as ``explain(i, mine, theirs,
    problem)`` says; when all are right, the compile count, with what ``advice`` says a miss
    means."""
    for i, (mine, theirs) in enumerate(zip(got["results"], expected["results"], strict=True)):
        problem = _tree(mine, theirs, case)
        if problem:
            return explain(i, mine, theirs, problem)
    return judge_compiles_with_advice(got, expected, case, *advice(got, expected))


# --- 05.make_step ----------------------------------------------------------------------------


def _make_step() -> Callable[[Any, Any, Any], Any]:
    @jax.jit
    def sgd(params: Any, grads: Any, lr: jax.Array) -> Any:
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    def step(params: Any, grads: Any, lr: Any) -> Any:
        return sgd(params, grads, jnp.asarray(lr, dtype=jnp.float32))

    return step


_RATE_KINDS = {
    "python": ("a Python float", lambda v: float(v)),
    "numpy": ("a NumPy float32", lambda v: np.float32(v)),
    "jax": ("a JAX float32", lambda v: jax.device_put(np.float32(v))),
    "weak_jax": ("a weakly typed JAX scalar", lambda v: jax.device_put(float(v))),
    "int": ("the Python int 1", lambda v: 1),
}

_RATE_PLANS = (
    ("python", "numpy", "jax", "int", "python"),
    ("jax", "weak_jax", "python", "numpy"),
)


def _rate_text(rate: Any) -> str:
    if isinstance(rate, jax.Array):  # jnp.asarray of a Python float is weakly typed
        return f"jnp.{'asarray' if rate.weak_type else 'float32'}({float(rate):.4g})"
    if isinstance(rate, np.generic):
        return f"np.float32({float(rate):.4g})"
    return repr(rate)


def _step_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, plan in zip(rng.permutation(4), _RATE_PLANS, strict=False):
        params = _param_tree(rng, int(kind))
        grads = _like(rng, params)
        rates = [_RATE_KINDS[k][1](round(float(rng.uniform(0.01, 0.5)), 3)) for k in plan]
        label = "learning rates given as " + ", ".join(_RATE_KINDS[k][0] for k in plan)
        shown = (
            f"params {describe(params, 110)}; lr in turn {', '.join(_rate_text(r) for r in rates)}"
        )
        cases.append(
            Case((params, grads, rates), label=label, info={"plan": list(plan)}, shown=shown)
        )
    return cases


def _step_inputs(params: Any, grads: Any, rate: Any) -> dict[str, Any]:
    return {"params": params, "grads": grads, "lr": rate}


def _step_repeats(step: Callable[..., Any], params: Any, grads: Any, one: Any, other: Any) -> Any:
    """:func:`repeat_compiles` of ``step`` with lr ``one``, ``one`` again, then ``other`` (``[]``
    when a call raises)."""
    try:
        return repeat_compiles(lambda rate: step(params, grads, rate), one, other)
    except NotImplementedError:
        raise
    except Exception:  # noqa: BLE001 (an answer that fails here has its error judged already)
        return []


def _step_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any] | str | None:
    """The plan's calls, counted; when one compiled again, controlled calls find out why.

    ``repeats``: Python floats, the same one twice and then another, tell a new function on every
    call from a static lr (:func:`recompile_cause`). ``kinds``: the two kinds of lr of the call that
    compiled again and of the closest earlier call (:func:`recompiled_calls`), with one value: a
    new program for the second kind alone confirms that the kind of lr is the cause.
    """
    params, grads, rates = case.args
    step = fn()
    if not callable(step):
        return returned_instead(step, "a function")
    calls = [functools.partial(step, params, grads, rate) for rate in rates]
    try:
        results, report = jit_compile_calls(calls)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 (the judge turns a static lr's error into a hint)
        text = " ".join(error_text(error, 300, lines=2).splitlines())
        return {"error": text, "repeats": _step_repeats(step, params, grads, 0.125, 0.25)}
    inputs = [_step_inputs(params, grads, rate) for rate in rates]
    again = recompiled_calls(inputs, report["per_call"])
    record = {"results": [tree_plain(result) for result in results], **report, "again": again}
    if again:
        plan = case.info["plan"]
        before, now = (_RATE_KINDS[plan[again[0][key]]][1] for key in ("before", "call"))
        record["repeats"] = _step_repeats(step, params, grads, 0.125, 0.25)
        record["kinds"] = _step_repeats(step, params, grads, before(0.125), now(0.125))
    return record


_STATIC_LR = (
    "lr is a static argument, so every new learning rate compiles a new program, and a JAX array "
    "cannot be static at all (it is not hashable). A learning rate is data: pass it as an array."
)
_NEW_STEP_FUNCTION = (
    "The same call, repeated, compiled again: step jits a function that is new on every call (a "
    "lambda or jax.jit made inside step), and a new function is a new cache key (Pitfall 12). "
    "Jit once, in make_step, and let step call that one jitted function."
)


def _step_advice(got: dict[str, Any], expected: dict[str, Any], rates: Sequence[Any]) -> Advice:
    again = got.get("again", [])
    if not again:
        return _no_miss_advice(got, expected)
    row = again[0]
    quote = miss_of(got, row["call"])
    cause = recompile_cause(got.get("repeats", []))
    if cause == "value":
        return _STATIC_LR, quote
    if cause == "function":
        return _NEW_STEP_FUNCTION, quote
    call = f"step(params, grads, {_rate_text(rates[row['call']])})"
    changed = [leaf for leaf in row["changes"]["leaves"] if leaf["path"] == "['lr']"]
    if not changed and not row["changes"]["structure"]:
        return _same_inputs(call), quote
    if not changed:
        return f"{call} compiled again.", quote
    leaf = changed[0]
    if recompile_cause(got.get("kinds", [])) != "value":
        return (
            f"{call} compiled again. Its lr was {leaf['now']}, the lr of an earlier call "
            f"{leaf['before']}, but that change alone, tried on its own, compiled nothing new."
        ), quote
    if leaf["change"] == "weak_type":
        return (
            "A Python float is weakly typed, a NumPy or JAX float32 is not: two kinds of "
            "input, two "
            "programs (Pitfall 11). Converting lr inside the jitted function comes too "
            "late, because the cache key is made from the arguments as they arrive: turn "
            "lr into a float32 array before it reaches the jitted function."
        ), quote
    return (
        f"lr = {_rate_text(rates[row['call']])} arrived as {leaf['now']}, where an earlier lr "
        f"was {leaf['before']}, and that change alone compiles a new program. Convert lr with "
        "an explicit dtype, float32, before it reaches the jitted function."
    ), quote


def _judge_step(got: Any, expected: Any, case: Case) -> str | None:
    params, grads, rates = case.args
    if isinstance(got, str):
        return f"make_step() {got}: return the function step."
    if isinstance(got, dict) and "error" in got:
        if recompile_cause(got.get("repeats", [])) == "value":
            return f"step raised {got['error']}\n{_STATIC_LR}"
        return f"step raised {got['error']}"
    results = got.get("results") if isinstance(got, dict) else None
    if not isinstance(results, list) or len(results) != len(expected["results"]):
        return (
            "make_step() should return a function step(params, grads, lr) that returns the "
            "new params."
        )

    def explain(i: int, mine: Any, theirs: Any, problem: str) -> str:
        rate = rates[i]
        if rebuild_tree(mine) is None and rebuild_tree(theirs) is not None:
            return f"with lr = {_rate_text(rate)}, step returned None: missing `return`?"
        if not problem.startswith("the structure"):
            uphill = jax.tree.map(
                lambda p, g: np.asarray(p) + float(rate) * np.asarray(g), params, grads
            )
            no_rate = jax.tree.map(lambda p, g: np.asarray(p) - np.asarray(g), params, grads)
            if _tree(mine, tree_plain(uphill), case) is None:
                return (
                    f"with lr = {_rate_text(rate)}, step added lr * grads: SGD goes downhill, "
                    "params - lr * grads."
                )
            if _tree(mine, tree_plain(no_rate), case) is None:
                return f"with lr = {_rate_text(rate)}, step returned params - grads: it ignores lr."
        return f"with lr = {_rate_text(rate)}, {problem}"

    return _calls_problem(
        got, expected, case, explain, lambda got, expected: _step_advice(got, expected, rates)
    )


MAKE_STEP = Exercise(
    id="05.make_step",
    name="make_step",
    title="A training step that compiles once across learning rates",
    points=3,
    cases=_step_cases,
    reference=_make_step,
    probe=_step_probe,
    judge=_judge_step,
    hints=(
        "The cache key holds each argument's shape, dtype and weak type: 0.1, np.float32(0.1) and "
        "jnp.float32(0.1) are not all the same kind of input.",
        "Inside a jitted function it is too late to change what the cache key saw; "
        "convert lr where it enters, before calling the jitted part (jnp.asarray with a dtype).",
        "Write the update as one jax.tree.map over params and grads (p - lr * g) inside jax.jit; "
        "make_step returns a small function that converts lr and calls it.",
    ),
    forbidden=("sgd", "momentum", "adam", "tree_add_scale", "tree_scale", "tree_sub", "tree_add"),
    mistakes=(
        "a plain `jax.jit`: Python and JAX learning rates compile separately (Pitfall 11)",
        "converts `lr` inside the jitted function, too late",
        "makes `lr` a static argument",
        "does not jit at all",
        "adds `lr * grads` instead of subtracting it",
    ),
)


# --- 05.pad_to_bucket ------------------------------------------------------------------------

_SIZES = tuple(range(3, 18))


def _rows(batch: Any, n: int) -> Any:
    return jax.tree.map(lambda leaf: leaf[:n], batch)


def _pad_to_bucket(batch: Any, buckets: Sequence[int]) -> tuple[Any, np.ndarray]:
    n = len(jax.tree.leaves(batch)[0])
    fits = [size for size in buckets if size >= n]
    if not fits:
        raise ValueError(f"a batch of {n} rows fits no bucket of {list(buckets)}")
    size = min(fits)

    def pad(leaf: Any) -> np.ndarray:
        return np.pad(np.asarray(leaf), [(0, size - n)] + [(0, 0)] * (np.ndim(leaf) - 1))

    return jax.tree.map(pad, batch), np.arange(size) < n


def _batch(rng: np.random.Generator, kind: int, rows: int) -> Any:
    d = int(rng.integers(2, 5))
    features = random_f32(rng, rows, d)
    labels = rng.integers(0, 10, size=rows).astype(np.int32)
    if kind == 0:
        return {"x": features, "y": labels}
    if kind == 1:
        return (random_f32(rng, rows, 2, d), None, labels)
    if kind == 2:
        return Point(x=labels, y={"weights": random_f32(rng, rows, 1), "extra": None})
    return collections.OrderedDict(
        tokens=rng.integers(0, 50, size=(rows, d)).astype(np.int32), x=features
    )


_BUCKET_PLANS = ((8, 16, 32), [20, 6, 12], (18,))


def _pad_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, buckets in zip(
        rng.permutation(4), _BUCKET_PLANS, strict=False
    ):  # three of four layouts
        batch = _batch(rng, int(kind), max(buckets) + 1)
        used = len({min(b for b in buckets if b >= n) for n in _SIZES})
        shown = f"batches {describe(_rows(batch, 3), 90)} with 3 to 17 rows, buckets {buckets!r}"
        label = f"batches of 3 to 17 rows and buckets {buckets!r}"
        cases.append(
            Case(
                (batch, buckets),
                label=label,
                info={"nones": count_none(batch), "buckets_used": used},
                shown=shown,
            )
        )
    return cases


def _masked_total() -> Callable[[Any, Any], Any]:
    """A fresh jitted function of a padded batch and its mask (a new one for every probe)."""

    def total(batch: Any, mask: Any) -> Any:
        def masked(leaf: jax.Array) -> jax.Array:
            keep = jnp.reshape(mask, (-1,) + (1,) * (leaf.ndim - 1))
            return jnp.sum(jnp.where(keep, leaf, 0))

        return jax.tree.map(masked, batch)

    return jax.jit(total)


def _pad_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any]:
    batch, buckets = case.args
    results = [fn(_rows(batch, n), buckets) for n in _SIZES]
    plain = [tree_plain(result) for result in results]
    total = _masked_total()
    report: dict[str, Any] = {"compiles": 0, "misses": []}
    if all(isinstance(r, tuple) and len(r) == 2 for r in results):
        try:
            _, report = jit_compile_report(lambda: [total(*r) for r in results])
        except Exception as error:  # noqa: BLE001 (a malformed result is judged from its values)
            report = {"compiles": 0, "misses": [], "error": type(error).__name__}
    try:
        fn(_rows(batch, max(buckets) + 1), buckets)
        too_big = "returned"
    except ValueError:
        too_big = "ValueError"
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 (any other exception is reported by name)
        too_big = type(error).__name__
    return {"results": plain, "too_big": too_big, **report}


def _judge_padded(n: int, buckets: Sequence[int], mine: Any, theirs: Any, case: Case) -> str | None:
    got, want = rebuild_tree(mine), rebuild_tree(theirs)
    if not (isinstance(got, tuple) and len(got) == 2):
        return (
            f"for a batch of {n} rows, pad_to_bucket returned {describe(got, 80)}; return a "
            "pair (padded batch, mask)."
        )
    (padded, mask), (want_padded, want_mask) = got, want
    size = len(want_mask)
    rows = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in jax.tree.leaves(padded)}
    if len(rows) == 1 and (got_rows := rows.pop()) != size:
        at = f"for a batch of {n} rows"
        if got_rows == n:
            return (
                f"{at}, the padded batch still has {n} rows: pad it to the smallest bucket "
                f"that holds it, {size}."
            )
        if got_rows is not None and got_rows in buckets and got_rows > size and n == size:
            return (
                f"{at}, you padded to {got_rows}: a batch of exactly {n} rows already fits the "
                f"bucket of {n}."
            )
        if got_rows is not None and got_rows in buckets and got_rows > size:
            order = (
                ""
                if list(buckets) == sorted(buckets)
                else f" (the buckets {list(buckets)} are not sorted)"
            )
            return (
                f"{at}, you padded to {got_rows}, but {size} is the smallest bucket that holds "
                f"{n} rows{order}."
            )
        return f"{at}, the padded leaves have {got_rows} rows, expected {size}."
    if (
        isinstance(mask, np.ndarray)
        and mask.shape == want_mask.shape
        and np.array_equal(mask, want_mask[::-1])
        and n < size
    ):
        return (
            f"for a batch of {n} rows, the padding comes first: keep the {n} real rows first "
            "and add the zero rows after them."
        )
    problem = _tree(tree_plain(padded), tree_plain(want_padded), case)
    if problem is not None:
        if problem.startswith("the structure") and case.info["nones"]:
            problem += "\n(None subtrees stay None: jax.tree.map keeps them.)"
        return f"for a batch of {n} rows, the padded batch: {problem}"
    if not isinstance(mask, np.ndarray) or mask.shape != want_mask.shape:
        return (
            f"for a batch of {n} rows, the mask is {describe(mask, 60)}; expected a boolean "
            f"array of shape {want_mask.shape}."
        )
    if mask.dtype != np.bool_:
        return (
            f"for a batch of {n} rows, the mask has dtype {mask.dtype}: make it a boolean "
            "array (True for real rows)."
        )
    if np.array_equal(mask, ~want_mask):
        return (
            f"for a batch of {n} rows, the mask is inverted: True marks the {n} real rows, "
            "False the padding."
        )
    if not np.array_equal(mask, want_mask):
        return (
            f"for a batch of {n} rows, the mask should be True for the first {n} rows and "
            "False for the padding after them."
        )
    return None


def _judge_pad(got: Any, expected: Any, case: Case) -> str | None:
    batch, buckets = case.args
    if got["compiles"] > expected["compiles"]:
        advice = (
            f"Each new batch shape is a new program. Padded to {case.info['buckets_used']} "
            f"bucket sizes, 3 to 17 rows need only {expected['compiles']} compilations of "
            "a jitted step."
        )
        return judge_compiles_with_advice(got, expected, case, advice)
    for n, mine, theirs in zip(_SIZES, got["results"], expected["results"], strict=True):
        problem = _judge_padded(n, buckets, mine, theirs, case)
        if problem:
            return problem
    if got.get("error"):
        return f"a jitted function of (padded batch, mask) raised {got['error']} on your results."
    if got["too_big"] != "ValueError":
        what = "returned" if got["too_big"] == "returned" else f"raised {got['too_big']}"
        return (
            f"a batch of {max(buckets) + 1} rows fits no bucket: pad_to_bucket {what}, "
            "expected it to raise ValueError."
        )
    return judge_compiles_with_advice(got, expected, case)


PAD_TO_BUCKET = Exercise(
    id="05.pad_to_bucket",
    name="pad_to_bucket",
    title="Pad a batch to a bucket size, with a mask",
    points=3,
    cases=_pad_cases,
    reference=_pad_to_bucket,
    probe=_pad_probe,
    judge=_judge_pad,
    hints=(
        "The batch size n is the first dimension of any leaf; the target size is the "
        "smallest bucket that is at least n (the buckets may come in any order).",
        "Pad every leaf with the same jax.tree.map: zero rows at the end of the first axis only "
        "(np.pad or jnp.pad with one (before, after) pair per axis); the dtype stays.",
        "The mask is np.arange(size) < n; raise ValueError when no bucket is large enough.",
    ),
    mistakes=(
        "does not pad, so every batch size compiles",
        "pads to the largest bucket instead of the smallest that fits",
        "takes the first bucket that fits, though the buckets are not sorted",
        "pads a batch that already fills a bucket to the next one",
        "makes a float mask instead of a boolean one",
        "pads with float64 zeros, which changes the dtype",
        "puts the padding in front",
        "returns instead of raising `ValueError` when no bucket fits",
    ),
)


# --- 05.init_state ---------------------------------------------------------------------------


def train_step(state: dict[str, Any], grads: Any, loss: Any) -> dict[str, Any]:
    """The step of the exercise: momentum SGD that also keeps a running loss and a step counter."""
    velocity = state.get("velocity", jax.tree.map(jnp.zeros_like, grads))
    velocity = jax.tree.map(lambda v, g: 0.9 * v + g, velocity, grads)
    params = jax.tree.map(lambda p, v: p - 0.1 * v, state["params"], velocity)
    loss_avg = 0.9 * state.get("loss_avg", loss) + 0.1 * loss
    return {
        "params": params,
        "velocity": velocity,
        "loss_avg": loss_avg,
        "step": state.get("step", 0) + 1,
    }


def _init_state(params: Any) -> dict[str, Any]:
    # NumPy zeros: the same input to jit as jnp.zeros_like, and nothing to compile.
    return {
        "params": params,
        "velocity": jax.tree.map(lambda p: np.zeros(p.shape, p.dtype), params),
        "loss_avg": np.zeros((), np.float32),
        "step": np.zeros((), np.int32),
    }


_STEPS = 4


def _state_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind in rng.permutation(4)[:2]:
        params = _param_tree(rng, int(kind))
        grads = [_like(rng, params) for _ in range(_STEPS)]
        losses = [np.float32(round(float(rng.uniform(0.5, 2.0)), 3)) for _ in range(_STEPS)]
        shown = f"params {describe(params, 140)}"
        cases.append(
            Case(
                (params,),
                label=f"params {describe(params, 60)}",
                info={"grads": grads, "losses": losses},
                shown=shown,
            )
        )
    return cases


def _state_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any]:
    state = fn(*case.args)
    step = jax.jit(train_step)
    states = [state]

    def call(grads: Any, loss: Any) -> Any:
        states.append(step(states[-1], grads, loss))
        return states[-1]

    calls = [
        functools.partial(call, grads, loss)
        for grads, loss in zip(case.info["grads"], case.info["losses"], strict=True)
    ]
    _, report = jit_compile_calls(calls)
    return {
        "final": tree_plain(states[-1]),
        **report,
        "again": recompiled_calls(states[:-1], report["per_call"]),
    }


def _keys_text(keys: Sequence[str]) -> str:
    return "{" + ", ".join(repr(key) for key in keys) + "}"


def _state_advice(got: dict[str, Any], expected: dict[str, Any]) -> Advice:
    again = got.get("again", [])
    if not again:
        return _no_miss_advice(got, expected)
    row = again[0]
    changes, quote = row["changes"], miss_of(got, row["call"])
    after = "after the first step" if row["call"] == 1 else f"after step {row['call']}"
    if changes["keys"]:
        return (
            f"The state gained or lost the keys {_keys_text(changes['keys'])} {after}: a new "
            "dict key is a new "
            "structure, and a new structure a new program (Pitfall 5). Start with "
            "every key train_step returns."
        ), quote
    if changes["structure"]:
        lines = "\n".join(f"  {line}" for line in changes["structure"])
        return (
            f"The state's structure changed {after}: compare jax.tree.structure of your "
            "state with that of the state train_step returns.\n" + lines
        ), quote
    weak = [leaf for leaf in changes["leaves"] if leaf["change"] == "weak_type"]
    if weak:
        paths = ", ".join(f"state{leaf['path']}" for leaf in weak)
        numbers = all(leaf["was"] in ("float", "int", "bool", "complex") for leaf in weak)
        held = "a Python number" if numbers else "a weakly typed value"
        return (
            f"At {paths} the first state held {held}, which is weakly typed, and "
            f"train_step gave back {weak[0]['now']} there: two kinds of input, two programs "
            "(Pitfall 11). Start with arrays of the dtypes train_step returns."
        ), quote
    if changes["leaves"]:
        leaf = changes["leaves"][0]
        return (
            f"At state{leaf['path']} the leaf was {leaf['before']} and train_step gave back "
            f"{leaf['now']} {after}: start with what train_step returns there."
        ), quote
    call = f"Step {row['call'] + 1}, with the state step {row['call']} returned,"
    return _same_inputs(call), quote


def _judge_state(got: Any, expected: Any, case: Case) -> str | None:
    problem = judge_compiles_with_advice(got, expected, case, *_state_advice(got, expected))
    if problem:
        return problem
    problem = _tree(got["final"], expected["final"], case)
    if problem:
        return f"after {_STEPS} steps of train_step from your state, {problem}"
    return None


INIT_STATE = Exercise(
    id="05.init_state",
    name="init_state",
    title="A training state whose structure never changes",
    points=2,
    cases=_state_cases,
    reference=_init_state,
    probe=_state_probe,
    judge=_judge_state,
    hints=(
        "Look at what train_step returns: the state you build must be the same tree (the "
        "same keys, the same structure inside each key, the same dtypes), or the second "
        "step compiles again.",
        "The velocity has the structure of the params, None subtrees included: one "
        "jax.tree.map over the params with jnp.zeros_like.",
        "Python numbers are weakly typed; train_step returns float32 and int32 arrays: start "
        "loss_avg as jnp.zeros((), jnp.float32) and step as jnp.zeros((), jnp.int32).",
    ),
    forbidden=("tree_zeros_like", "tree_full_like", "momentum", "adam"),
    mistakes=(
        "starts with the parameters only, so later states gain keys (Pitfall 5)",
        "leaves out the velocity",
        "starts with Python numbers, which are weakly typed (Pitfall 11)",
        "counts steps in a float",
    ),
)


# --- 05.make_scaled --------------------------------------------------------------------------


def squash(tree: Any) -> Any:
    """``tanh`` of every leaf."""
    return jax.tree.map(jnp.tanh, tree)


def energy(tree: Any) -> jax.Array | float:
    """Half the sum of squares of all the leaves: one number."""
    return 0.5 * sum(jnp.sum(leaf**2) for leaf in jax.tree.leaves(tree))


def halve(tree: Any) -> Any:
    """Every leaf divided by 2."""
    return jax.tree.map(lambda leaf: leaf / 2, tree)


_FUNCTIONS = {"squash": squash, "energy": energy, "halve": halve}
_jitted_for: dict[Callable[..., Any], Callable[..., Any]] = {}


def _make_scaled(f: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    if f not in _jitted_for:
        _jitted_for[f] = jax.jit(lambda x, factor: jax.tree.map(lambda y: factor * y, f(x)))
    return _jitted_for[f]


def _scaled_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    names = list(_FUNCTIONS)
    for kind in rng.permutation(4)[:2]:
        x = _param_tree(rng, int(kind))
        first, second = (names[int(i)] for i in rng.choice(3, size=2, replace=False))
        order = [first, first, second, first, second, first]
        plan = [(name, round(float(rng.uniform(-3, 3)), 2)) for name in order]
        calls = ", ".join(f"make_scaled({name})(x, {factor})" for name, factor in plan)
        shown = f"x = {describe(x, 100)}; in turn {calls}"
        label = f"make_scaled called {len(plan)} times with {first} and {second}"
        cases.append(Case((x, plan), label=label, info={"functions": 2}, shown=shown))
    return cases


def _scaled_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any] | str | None:
    x, plan = case.args
    first = fn(_FUNCTIONS[plan[0][0]])
    if not callable(first):
        return returned_instead(first, "a function")

    def call(name: str, factor: float) -> Any:
        return fn(_FUNCTIONS[name])(x, factor)

    calls = [functools.partial(call, name, factor) for name, factor in plan]
    results, report = jit_compile_calls(calls)
    inputs = [{"x": x, "factor": factor} for _, factor in plan]
    again = recompiled_calls(inputs, report["per_call"], lambda i, j: plan[i][0] == plan[j][0])
    repeats: list[int] = []
    if again:
        name, factor = plan[0]
        repeats = repeat_compiles(functools.partial(call, name), factor, round(factor + 0.5, 2))
    return {
        "results": [tree_plain(result) for result in results],
        **report,
        "again": again,
        "repeats": repeats,
    }


def _scaled_advice(
    got: dict[str, Any], expected: dict[str, Any], plan: Sequence[tuple[str, float]]
) -> Advice:
    again = got.get("again", [])
    quote = miss_of(got, again[0]["call"]) if again else None
    cause = recompile_cause(got.get("repeats", []))
    if cause == "value":
        return (
            "factor is a static argument, so every new factor compiles anew. It is data: "
            "pass it as an ordinary argument."
        ), quote
    if cause == "function":
        return (
            "The same call, repeated, compiled again: each call of make_scaled jits a function "
            "JAX has never seen: a new lambda, partial or "
            "def is a new cache key (Pitfall 12). Build the jitted function once per f, "
            "keep it, and return the same one whenever make_scaled gets that f again."
        ), quote
    if again:
        name, factor = plan[again[0]["call"]]
        return _same_inputs(f"make_scaled({name})(x, {factor})"), quote
    return _no_miss_advice(got, expected)


def _judge_scaled(got: Any, expected: Any, case: Case) -> str | None:
    x, plan = case.args
    if isinstance(got, str):
        return f"make_scaled(f) {got}: return the function scaled."

    def explain(i: int, mine: Any, theirs: Any, problem: str) -> str:
        (name, factor), first = plan[i], plan[0][0]
        if (
            name != first
            and _tree(mine, tree_plain(_make_scaled(_FUNCTIONS[first])(x, factor)), case) is None
        ):
            return (
                f"make_scaled({name}) gave the results of make_scaled({first}): keep one jitted "
                "function per f, and look it up by f."
            )
        return f"make_scaled({name})(x, {factor}): {problem}"

    return _calls_problem(
        got, expected, case, explain, lambda got, expected: _scaled_advice(got, expected, plan)
    )


MAKE_SCALED = Exercise(
    id="05.make_scaled",
    name="make_scaled",
    title="Jit once per function, not once per call",
    points=2,
    cases=_scaled_cases,
    reference=_make_scaled,
    probe=_scaled_probe,
    judge=_judge_scaled,
    hints=(
        "The function object is part of the cache key: a lambda or partial made inside make_scaled "
        "is new at every call.",
        "Keep what you jit: the first make_scaled(f) builds jax.jit(...) and stores it "
        "under f; later calls with the same f return the stored one.",
        "factor changes on every call: make it an argument of the jitted function, not a static "
        "argument and not a value captured when the function is built.",
    ),
    forbidden=("tree_scale",),
    mistakes=(
        "jits a fresh function every time `make_scaled` is called",
        "jits a new lambda on every call (Pitfall 12)",
        "makes `factor` a static argument",
        "keeps one jitted function for every `f`",
    ),
)


EXERCISES = (MAKE_STEP, PAD_TO_BUCKET, INIT_STATE, MAKE_SCALED)
