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

from .._leaves import same_structure
from ._kit import (
    Layer,
    Point,
    attempt,
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
    structure_found,
    tree_judge,
    trees_close,
)
from ._mistakes import Variant, first_mistake, lead
from ._plain import describe, rebuild_tree, tree_plain
from ._sections import (
    CACHE_KEY,
    NEW_STATIC_VALUE,
    PITFALL_1,
    PITFALL_5,
    PITFALL_11,
    PITFALL_12,
    SGD_UPDATE,
    SHAPE_CHANGES,
)
from ._spec import Case, Exercise, Mistake


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


Advice = tuple[str | Mistake | None, int | None]
"""What a cache miss means for the exercise, and which explanation to quote. The advice comes from
the probes' measurements (counts of repeated calls, what changed in the inputs of the call that
compiled again), never from the wording of JAX's explanation, which is only quoted. A
:class:`Mistake`'s ``what`` says what was measured; a plain string says what was measured when the
probes found no cause they can name."""


def _same_inputs(call: str) -> str:
    """The measured advice when a call compiled again and the probes found no cause."""
    return (
        f"{call} compiled again although its arguments had the same structure, shapes, dtypes "
        "and weak types as an earlier call's."
    )


def _no_miss_advice(got: dict[str, Any], expected: dict[str, Any], fix: str) -> Advice:
    if got["compiles"] or not expected["compiles"]:
        return None, None
    return Mistake(
        "Nothing you jitted was compiled: the computation ran operation by operation outside `jit` "
        "(each operation compiled on its own).",
        "`jax.jit` traces a function into one program and runs that program on every later call; "
        "code outside any jitted function runs one operation at a time, and the whole "
        "computation is never one program.",
        fix,
    ), None


def _compiles_problem(
    got: dict[str, Any], expected: dict[str, Any], case: Case, advice: Advice
) -> str | Mistake | None:
    """:func:`judge_compiles_with_advice` with ``advice``: for a :class:`Mistake`, its ``what``
    goes between the compile count and JAX's explanation, and the idea and the fix follow."""
    found, about = advice
    if not isinstance(found, Mistake):
        return judge_compiles_with_advice(got, expected, case, found, about)
    problem = judge_compiles_with_advice(got, expected, case, None, about)
    if problem is None:
        return None
    first, newline, rest = problem.partition("\n")
    return lead(f"{first}\n", found, f"\n{rest}" if newline else "")


_tree = tree_judge()


def _calls_problem(
    got: dict[str, Any],
    expected: dict[str, Any],
    case: Case,
    explain: Callable[[int, Any, Any, str], str | Mistake],
    advice: Callable[[dict[str, Any], dict[str, Any]], Advice],
) -> str | Mistake | None:
    """The first call whose result differs from the reference's, as ``explain(i, mine, theirs,
    problem)`` says; when all are right, the compile count, with what ``advice`` says a miss
    means."""
    for i, (mine, theirs) in enumerate(zip(got["results"], expected["results"], strict=True)):
        problem = _tree(mine, theirs, case)
        if isinstance(problem, str):
            return explain(i, mine, theirs, problem)
    return _compiles_problem(got, expected, case, advice(got, expected))


def _not_a_function(call: str, got: str, builds: str) -> Mistake:
    """An answer whose factory returned something else than a function."""
    return Mistake(
        f"`{call}` {got}.",
        f"`{call.split('(')[0]}` is a factory: it builds {builds} once and hands back that "
        "function, which the check then calls again and again.",
        "Define the function inside, then end with `return` followed by its name, without "
        "calling it.",
    )


# --- 05.make_step ----------------------------------------------------------------------------


def _make_step() -> Callable[[Any, Any, Any], Any]:
    @jax.jit
    def sgd(params: Any, grads: Any, lr: jax.Array) -> Any:
        return jax.tree.map(lambda p, g: p - lr * g, params, grads)

    def step(params: Any, grads: Any, lr: Any) -> Any:
        return sgd(params, grads, jnp.asarray(lr, dtype=jnp.float32))

    return step


_RATE_KINDS = {
    "python": lambda v: float(v),
    "numpy": lambda v: np.float32(v),
    "jax": lambda v: jax.device_put(np.float32(v)),
    "weak_jax": lambda v: jax.device_put(float(v)),
    "int": lambda v: 1,
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
        rates = [_RATE_KINDS[k](round(float(rng.uniform(0.01, 0.5)), 3)) for k in plan]
        label = "`lr` of several kinds"
        shown = (
            f"lr in turn {', '.join(_rate_text(r) for r in rates)}; params {describe(params, 110)}"
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
    repeats, error = attempt(
        lambda: repeat_compiles(lambda rate: step(params, grads, rate), one, other)
    )
    return [] if error is not None else repeats


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
    counted, error = attempt(lambda: jit_compile_calls(calls))
    if error is not None:
        text = error_text(error, 300)
        return {"error": text, "repeats": _step_repeats(step, params, grads, 0.125, 0.25)}
    results, report = counted
    inputs = [_step_inputs(params, grads, rate) for rate in rates]
    again = recompiled_calls(inputs, report["per_call"])
    record = {"results": [tree_plain(result) for result in results], **report, "again": again}
    if again:
        plan = case.info["plan"]
        before, now = (_RATE_KINDS[plan[again[0][key]]] for key in ("before", "call"))
        record["repeats"] = _step_repeats(step, params, grads, 0.125, 0.25)
        record["kinds"] = _step_repeats(step, params, grads, before(0.125), now(0.125))
    return record


def _static_lr(what: str) -> Mistake:
    return Mistake(
        what + "Called with Python floats, the same lr twice compiled once and a new lr "
        "compiled again: `lr` is a static argument.",
        "A static argument's value is part of the cache key, so every new learning rate "
        "compiles a new program, and a JAX array cannot be static at all (it is not hashable). "
        "A learning rate is data: it changes while the program stays the same.",
        "Leave `lr` out of `static_argnums` and `static_argnames`: pass it to the jitted "
        "function as an ordinary argument, an array with an explicit dtype.",
        reread=NEW_STATIC_VALUE,
    )


_NEW_STEP_FUNCTION = Mistake(
    "The same call, repeated, compiled again: what `step` jits is a function JAX has not seen "
    "before, every time.",
    "The function object is part of the cache key: a lambda or a `jax.jit` made inside `step` is a "
    "new function on each call, and a new function is a new cache key (Pitfall 12).",
    "Jit once, in `make_step`, and let `step` call that one jitted function.",
    reread=PITFALL_12,
)


def _step_advice(got: dict[str, Any], expected: dict[str, Any], rates: Sequence[Any]) -> Advice:
    again = got.get("again", [])
    if not again:
        return _no_miss_advice(
            got,
            expected,
            "Jit the update once, in `make_step`, and have `step` call that function.",
        )
    row = again[0]
    quote = miss_of(got, row["call"])
    cause = recompile_cause(got.get("repeats", []))
    if cause == "value":
        return _static_lr(""), quote
    if cause == "function":
        return _NEW_STEP_FUNCTION, quote
    call = f"`step(params, grads, {_rate_text(rates[row['call']])})`"
    changed = [leaf for leaf in row["changes"]["leaves"] if leaf["path"] == "['lr']"]
    if not changed and not row["changes"]["structure"]:
        return _same_inputs(call), quote
    if not changed:
        return f"{call} compiled again.", quote
    leaf = changed[0]
    if recompile_cause(got.get("kinds", [])) != "value":
        return (
            f"{call} compiled again. Its `lr` was {leaf['now']}, the `lr` of an earlier call "
            f"{leaf['before']}, but that change alone, tried on its own, compiled nothing new."
        ), quote
    what = (
        f"`lr = {_rate_text(rates[row['call']])}` arrived as {leaf['now']}, where an earlier `lr` "
        f"was {leaf['before']}, and that change alone compiles a new program."
    )
    if leaf["change"] == "weak_type":
        return Mistake(
            what,
            "A Python float is weakly typed, a NumPy or JAX `float32` is not: two kinds of input, "
            "two programs (Pitfall 11). Converting `lr` inside the jitted function comes too late, "
            "because the cache key is made from the arguments as they arrive.",
            "Wrap the jitted function, `step` here, in a plain one that converts `lr` first, and "
            "return that: `return lambda params, grads, lr: step(params, grads, "
            "jnp.asarray(lr, jnp.float32))`.",
            reread=PITFALL_11,
        ), quote
    return Mistake(
        what,
        "The cache key holds the dtype, shape and weak type of each argument as it arrives. "
        "However the caller writes `lr` (an int, a Python float, a NumPy or JAX `float32`), it "
        "must reach the jitted function as one kind of input, and a conversion that names no "
        "dtype keeps the kinds apart.",
        "Convert `lr` with an explicit dtype before the jitted function sees it: "
        "`jnp.asarray(lr, jnp.float32)`.",
        reread=PITFALL_11,
    ), quote


def _judge_step(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    params, grads, rates = case.args
    if isinstance(got, str):
        return _not_a_function("make_step()", got, "the training step")
    if isinstance(got, dict) and "error" in got:
        if recompile_cause(got.get("repeats", [])) == "value":
            return _static_lr(f"`step` raised {got['error']}\n")
        return f"`step` raised {got['error']}"
    results = got.get("results") if isinstance(got, dict) else None
    if not isinstance(results, list) or len(results) != len(expected["results"]):
        return (
            "`make_step()` should return a function `step(params, grads, lr)` that returns the "
            "new params."
        )

    def explain(i: int, mine: Any, theirs: Any, problem: str) -> str | Mistake:
        rate, answer = rates[i], rebuild_tree(mine)
        if answer is None and rebuild_tree(theirs) is not None:
            return Mistake(
                f"with `lr = {_rate_text(rate)}`, `step` returned `None`.",
                "A Python function that ends without a `return` statement returns `None`: `step` "
                "must hand back the new params, which the next step takes in.",
                "End `step` with `return`, followed by the result of the jitted function.",
            )
        if structure_found(problem):
            return f"with `lr = {_rate_text(rate)}`, {problem}"
        variants = [
            Variant(
                mistake=Mistake(
                    f"with `lr = {_rate_text(rate)}`, `step` added `lr * grads` to the params.",
                    "The gradient points where the loss grows fastest: SGD moves each parameter "
                    "against it, downhill.",
                    "Subtract: each new leaf is `p - lr * g`.",
                    reread=SGD_UPDATE,
                ),
                build=lambda: jax.tree.map(
                    lambda p, g: np.asarray(p) + float(rate) * np.asarray(g), params, grads
                ),
            ),
            Variant(
                mistake=Mistake(
                    f"with `lr = {_rate_text(rate)}`, `step` returned `params - grads`: the "
                    "result does not change with `lr`.",
                    "The learning rate scales every step. Passed in as an argument, a new value "
                    "is new data for the same program, and it must change the result.",
                    "Multiply each gradient leaf by the `lr` the jitted function receives: "
                    "`p - lr * g`.",
                    reread=SGD_UPDATE,
                ),
                build=lambda: jax.tree.map(
                    lambda p, g: np.asarray(p) - np.asarray(g), params, grads
                ),
            ),
        ]
        mistake = first_mistake(answer, variants, rebuilt=True)
        return mistake or f"with `lr = {_rate_text(rate)}`, {problem}"

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
        (
            "The cache key holds each argument's shape, dtype and weak type, taken as the "
            "argument arrives: a Python float, a NumPy `float32` and a JAX `float32` are "
            "different inputs, and so is a static value that changes."
        ),
        (
            "Keep the update in one jitted function of `(params, grads, lr)` and have `make_step` "
            "return a small function that calls it with `jnp.asarray(lr, jnp.float32)`."
        ),
    ),
    reread=CACHE_KEY,
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

# Ten batch sizes from 3 to 18 rows: the smallest, the buckets of _BUCKET_PLANS below 19 (6, 8,
# 12, 16, 18), and one row more than each of the first four. An answer that pads with jnp compiles
# a program for each size, tenths of a second apiece on an accelerator, so no more sizes.
_SIZES = (3, 6, 7, 8, 9, 12, 13, 16, 17, 18)


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
        shown = f"batches {describe(_rows(batch, 3), 90)} with 3 to 18 rows, buckets {buckets!r}"
        label = "batches of 3 to 18 rows"
        cases.append(
            Case(
                (batch, buckets),
                label=label,
                info={"nones": count_none(batch)},
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
    _, refusal = attempt(lambda: fn(_rows(batch, max(buckets) + 1), buckets))
    too_big = "returned" if refusal is None else type(refusal).__name__
    if isinstance(refusal, ValueError):
        too_big = "ValueError"  # a subclass of ValueError is the refusal asked for too
    return {"results": plain, "too_big": too_big, **report}


def _dtype_change(padded: Any, want: Any) -> tuple[str, Any, Any] | None:
    """The first leaf of ``padded`` whose dtype differs from the same leaf of ``want`` (the two of
    one structure), as ``(key path, dtype, expected dtype)``."""
    pairs = zip(jax.tree_util.tree_leaves_with_path(padded), jax.tree.leaves(want), strict=True)
    for (path, leaf), other in pairs:
        if np.asarray(leaf).dtype != np.asarray(other).dtype:
            return jax.tree_util.keystr(path), np.asarray(leaf).dtype, np.asarray(other).dtype
    return None


def _judge_padded(
    n: int, buckets: Sequence[int], mine: Any, theirs: Any, case: Case
) -> str | Mistake | None:
    got, want = rebuild_tree(mine), rebuild_tree(theirs)
    at = f"for a batch of {n} rows"
    if not (isinstance(got, tuple) and len(got) == 2):
        return Mistake(
            f"{at}, `pad_to_bucket` returned {describe(got, 80)}, not a pair.",
            "A padded batch alone cannot tell its real rows from the padding: the function "
            "hands back both, the padded batch and the mask that marks the real rows.",
            "Return a tuple of two, the padded batch first and the mask second.",
        )
    (padded, mask), (want_padded, want_mask) = got, want
    size = len(want_mask)
    rows = {np.shape(leaf)[0] if np.ndim(leaf) else None for leaf in jax.tree.leaves(padded)}
    if len(rows) == 1 and (got_rows := rows.pop()) != size:
        return _rows_problem(at, n, buckets, got_rows, size)
    if (
        isinstance(mask, np.ndarray)
        and mask.shape == want_mask.shape
        and np.array_equal(mask, want_mask[::-1])
        and n < size
    ):
        return Mistake(
            f"{at}, the padding comes first: the {n} real rows sit at the end.",
            "The real rows keep their places, 0 to n - 1, and the padding follows them, so that "
            "row i of the padded batch is row i of the batch.",
            "Pad the first axis with `(0, size - n)`, nothing before, and make the mask `True` for "
            "the first n rows.",
        )
    return _padded_problem(at, padded, want_padded, case) or _mask_problem(at, n, mask, want_mask)


def _rows_problem(
    at: str, n: int, buckets: Sequence[int], got_rows: int | None, size: int
) -> str | Mistake:
    """What went wrong when the padded leaves have ``got_rows`` rows, not the bucket's ``size``."""
    if got_rows == n:
        return Mistake(
            f"{at}, the padded batch still has {n} rows, none of the buckets {list(buckets)}.",
            "Padding is what turns many batch shapes into a few: every batch must come out "
            "with a bucket's number of rows, whatever it came in with.",
            "Add `size - n` zero rows at the end of each leaf's first axis, with one "
            "`jax.tree.map` over the batch (`np.pad` takes one `(before, after)` pair per axis).",
        )
    if got_rows is not None and got_rows in buckets and got_rows > size and n == size:
        return Mistake(
            f"{at}, you padded to {got_rows}, but a smaller bucket of {list(buckets)} also "
            f"holds {n} rows.",
            "A batch fits a bucket when it has at most that many rows, so the bucket of its "
            "own size holds it with no padding at all.",
            "Choose among the buckets `b` with `b >= n` (not `b > n`), and take the smallest.",
        )
    if got_rows is not None and got_rows in buckets and got_rows > size:
        if list(buckets) == sorted(buckets):
            return Mistake(
                f"{at}, you padded to {got_rows}, but a smaller bucket of {list(buckets)} "
                f"also holds {n} rows.",
                "Each padded row is work spent on nothing, so a batch goes to the smallest "
                "bucket that holds it; the number of programs stays the number of buckets "
                "either way.",
                "Take the minimum over the buckets that are at least n: `min(b for b in "
                "buckets if b >= n)`.",
            )
        return Mistake(
            f"{at}, you padded to {got_rows}, but a smaller bucket of {list(buckets)} also "
            f"holds {n} rows (the buckets are not sorted).",
            "The buckets may come in any order, so the first bucket that fits is not always "
            "the smallest one.",
            "Take the minimum over all the buckets that are at least n, not the first one "
            "found: `min(b for b in buckets if b >= n)`.",
        )
    return f"{at}, the padded leaves have {got_rows} rows, expected {size}."


def _padded_problem(at: str, padded: Any, want_padded: Any, case: Case) -> str | Mistake | None:
    """How the padded batch differs from the expected one (structure, values, dtypes), or
    ``None``."""
    problem = _tree(tree_plain(padded), tree_plain(want_padded), case)
    if problem is None:
        return None
    if not same_structure(padded, want_padded):
        if case.info["nones"]:
            return Mistake(
                f"{at}, the padded batch: {problem}",
                "`None` subtrees are empty: they hold no rows to pad, and stay `None`.",
                "Pad with one `jax.tree.map` over the batch: it passes the leaves to your "
                "function and keeps every `None` subtree as it is.",
                reread=PITFALL_1,
            )
    elif trees_close(padded, want_padded) and (change := _dtype_change(padded, want_padded)):
        path, dtype, wanted = change
        return Mistake(
            f"{at}, the padded batch holds the right values, but its leaf {path} has dtype "
            f"`{dtype}`, expected `{wanted}`.",
            "Padding adds rows and changes nothing else: each leaf keeps its dtype. Zeros "
            "made without a dtype are `float64`, and joined to a leaf they make the whole "
            "leaf `float64`.",
            "Pad with `np.pad` or `jnp.pad`, which keep the leaf's dtype, or make the zero rows "
            "with the leaf's own dtype (`np.zeros(shape, leaf.dtype)`).",
        )
    return f"{at}, the padded batch: {problem}"


def _mask_problem(at: str, n: int, mask: Any, want_mask: np.ndarray) -> str | Mistake | None:
    """How the mask differs from the expected one, True for the first ``n`` rows, or ``None``."""
    if not isinstance(mask, np.ndarray) or mask.shape != want_mask.shape:
        return (
            f"{at}, the mask is {describe(mask, 60)}; expected a boolean array of shape "
            f"`{want_mask.shape}`."
        )
    if mask.dtype != np.bool_:
        return Mistake(
            f"{at}, the mask has dtype `{mask.dtype}`.",
            "The mask answers a yes-or-no question per row, is it real?, so it is a boolean "
            "array: a condition that `jnp.where` and indexing take as it is.",
            "Compare instead of converting: `np.arange(size) < n` is a boolean array, `True` for "
            "the real rows.",
        )
    if np.array_equal(mask, ~want_mask):
        return Mistake(
            f"{at}, the mask is inverted: it is `True` on the padding and `False` on the {n} real "
            "rows.",
            "`True` marks the rows that hold data, so that a masked sum keeps them and drops the "
            "padding.",
            "Make it `True` for the first n rows: `np.arange(size) < n`.",
        )
    if not np.array_equal(mask, want_mask):
        return (
            f"{at}, the mask should be `True` for the first {n} rows and `False` for the padding "
            "after them."
        )
    return None


def _judge_pad(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    batch, buckets = case.args
    if got["compiles"] > expected["compiles"]:
        measured = (
            f"A function jitted over your {len(_SIZES)} results compiled {got['compiles']} "
            "times; padded to the smallest bucket that fits, they would need "
            f"{expected['compiles']}."
        )
        return _compiles_problem(
            got,
            expected,
            case,
            (
                Mistake(
                    measured,
                    "Each new batch shape is a new program. Padding every batch up to the "
                    "smallest bucket that holds it leaves as many shapes as buckets used, and a "
                    "mask tells the real rows from the padding.",
                    "Pad each leaf's first axis with zero rows up to that bucket's size, and "
                    "return the mask with the padded batch.",
                ),
                None,
            ),
        )
    for n, mine, theirs in zip(_SIZES, got["results"], expected["results"], strict=True):
        problem = _judge_padded(n, buckets, mine, theirs, case)
        if problem:
            return problem
    if got.get("error"):
        return f"a jitted function of (padded batch, mask) raised {got['error']} on your results."
    if got["too_big"] != "ValueError":
        what = "returned" if got["too_big"] == "returned" else f"raised {got['too_big']}"
        return Mistake(
            f"a batch of {max(buckets) + 1} rows fits no bucket: `pad_to_bucket` {what}, "
            "expected it to raise `ValueError`.",
            "A batch larger than every bucket cannot be padded to any of them. Handing it on "
            "would compile a new program for its shape, silently, so the function refuses it.",
            "When no bucket is at least n, raise `ValueError` (`min()` of an empty sequence raises "
            "one as well).",
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
        (
            "Every new batch shape is a new program; padding each batch up to the smallest bucket "
            "that holds it leaves only as many shapes as buckets, and a mask tells the real rows "
            "from the padding."
        ),
        (
            "`size = min(b for b in buckets if b >= n)` (`ValueError` when none); pad each "
            "leaf's first axis with zero rows via `jax.tree.map` and `np.pad`/`jnp.pad`, keeping "
            "the dtype; the mask is `np.arange(size) < n`."
        ),
    ),
    reread=SHAPE_CHANGES,
    mistakes=(
        "does not pad, so every batch size compiles",
        "pads to the largest bucket instead of the smallest that fits",
        "takes the first bucket that fits, though the buckets are not sorted",
        "pads a batch that already fills a bucket to the next one",
        "makes a float mask instead of a boolean one",
        "pads with `float64` zeros, which changes the dtype",
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
                label="the params shown below",
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
        return _no_miss_advice(got, expected, "Jit the step once and reuse it for every state.")
    row = again[0]
    changes, quote = row["changes"], miss_of(got, row["call"])
    after = "after the first step" if row["call"] == 1 else f"after step {row['call']}"
    if changes["keys"]:
        return Mistake(
            f"The state gained or lost the keys {_keys_text(changes['keys'])} {after}.",
            "The set of dict keys is part of the tree structure, and the structure is part of "
            "the cache key: a new dict key is a new structure, and a new structure a new "
            "program (Pitfall 5).",
            "Start with every key `train_step` returns: `params`, `velocity`, `loss_avg` and "
            "`step`.",
            reread=PITFALL_5,
        ), quote
    if changes["structure"]:
        lines = "\n".join(f"  {line}" for line in changes["structure"])
        return Mistake(
            f"The state's structure changed {after}:\n" + lines,
            "The structure of the state (its containers, `None` subtrees and node types) is part "
            "of the cache key: the first state must have the structure `train_step` gives back.",
            "Compare `jax.tree.structure` of your state with that of the state `train_step` "
            "returns, and build each part as `train_step` does (the velocity with `jax.tree.map` "
            "over the params).",
            reread=PITFALL_5,
        ), quote
    weak = [leaf for leaf in changes["leaves"] if leaf["change"] == "weak_type"]
    if weak:
        paths = ", ".join(f"`state{leaf['path']}`" for leaf in weak)
        numbers = all(leaf["was"] in ("float", "int", "bool", "complex") for leaf in weak)
        held = "a Python number" if numbers else "a weakly typed value"
        return Mistake(
            f"At {paths} the first state held {held}, and `train_step` gave back "
            f"{weak[0]['now']} there.",
            "A Python number is weakly typed, an array of the same dtype is not: two kinds of "
            "input, two programs (Pitfall 11).",
            "Start with arrays of the dtypes `train_step` returns, each with an explicit dtype: "
            "`jnp.zeros((), jnp.float32)` for a float, `jnp.zeros((), jnp.int32)` for a count.",
            reread=PITFALL_11,
        ), quote
    if changes["leaves"]:
        leaf = changes["leaves"][0]
        return Mistake(
            f"At `state{leaf['path']}` the leaf was {leaf['before']} and `train_step` gave back "
            f"{leaf['now']} {after}.",
            "Each leaf's dtype and shape are part of the cache key: a step that hands back "
            "another dtype or shape than it got makes the next step compile again.",
            "Start that leaf as `train_step` returns it: an array of the same shape and dtype "
            "(`jnp.zeros(shape, dtype)`).",
        ), quote
    call = f"Step {row['call'] + 1}, with the state step {row['call']} returned,"
    return _same_inputs(call), quote


def _judge_state(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    problem = _compiles_problem(got, expected, case, _state_advice(got, expected))
    if problem:
        return problem
    problem = _tree(got["final"], expected["final"], case)
    if problem is None:
        return None
    what = f"after {_STEPS} steps of `train_step` from your state, {problem}"
    mine, theirs = rebuild_tree(got["final"]), rebuild_tree(expected["final"])
    same = same_structure(mine, theirs)
    if same and trees_close(mine, theirs):
        if _dtype_change(mine, theirs):
            return Mistake(
                what,
                "`train_step` keeps the dtype of what it is given (a count of 0.0 plus 1 is 1.0), "
                "so the dtypes of your first state last all along, and they must be those of "
                "the state `train_step` itself builds.",
                "Give each starting array the dtype `train_step` returns there, explicitly: "
                "`jnp.zeros((), jnp.int32)` for the step count, `jnp.zeros((), jnp.float32)` for "
                "`loss_avg`.",
            )
    return what


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
        (
            "The state you build must be the tree `train_step` returns: the same keys, structure, "
            "dtypes and weak types (arrays, where a Python number would be weakly typed), or the "
            "second step compiles again."
        ),
        (
            "Return all four keys: the params, a velocity of zeros shaped like them "
            "(`jax.tree.map` with `jnp.zeros_like`), and `loss_avg` and `step` as scalar arrays of "
            "the dtypes `train_step` returns, `float32` and `int32` (`jnp.zeros((), dtype)`)."
        ),
    ),
    reread=CACHE_KEY,
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
        label = f"{len(plan)} calls of `make_scaled`"
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
    name, factor = plan[0]
    if cause == "value":
        return Mistake(
            f"Repeated, the call `make_scaled({name})(x, {factor})` compiled nothing new, and a "
            "new factor compiled again: `factor` is a static argument.",
            "A static argument's value is part of the cache key, so every new factor compiles "
            "anew; `factor` is data that changes on every call.",
            "Pass `factor` to the jitted function as an ordinary argument, left out of "
            "`static_argnums` and `static_argnames`.",
            reread=NEW_STATIC_VALUE,
        ), quote
    if cause == "function":
        return Mistake(
            f"The same call, `make_scaled({name})(x, {factor})`, repeated, compiled again: each "
            "time, what it jits is a function JAX has not seen before.",
            "The function object is part of the cache key: a new lambda, partial or def is a "
            "new cache key (Pitfall 12), even with the same code, and so is every `jax.jit` "
            "wrapped around one.",
            "Build the jitted function once per `f`, keep it (a dict keyed by `f`), and return the "
            "same one whenever `make_scaled` gets that `f` again; nothing in it jits anew.",
            reread=PITFALL_12,
        ), quote
    if again:
        name, factor = plan[again[0]["call"]]
        return _same_inputs(f"`make_scaled({name})(x, {factor})`"), quote
    return _no_miss_advice(
        got, expected, "Jit one function of `(x, factor)` per `f`, keep it, and return it."
    )


def _judge_scaled(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    x, plan = case.args
    if isinstance(got, str):
        return _not_a_function("make_scaled(f)", got, "a function that scales `f`'s result")

    def explain(i: int, mine: Any, theirs: Any, problem: str) -> str | Mistake:
        (name, factor), first = plan[i], plan[0][0]
        if (
            name != first
            and _tree(mine, tree_plain(_make_scaled(_FUNCTIONS[first])(x, factor)), case) is None
        ):
            return Mistake(
                f"`make_scaled({name})` gave the results of `make_scaled({first})`.",
                "Each `f` has a program of its own: a single jitted function, kept for every `f`, "
                "computes the first `f`'s results for all of them.",
                "Keep one jitted function per `f`, in a dict keyed by `f`, and look it up by `f`.",
            )
        return f"`make_scaled({name})(x, {factor})`: {problem}"

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
        (
            "The function object is part of the cache key, so a function built anew at every call "
            "compiles anew; a value that changes on every call must be a traced argument, not "
            "static and not captured."
        ),
        (
            "Once per `f`, jit a function of `(x, factor)` that multiplies every leaf of `f(x)` "
            "by `factor` (`jax.tree.map`), keep it in a dict under `f`, and return the stored one "
            "whenever `make_scaled` gets `f` again."
        ),
    ),
    reread=CACHE_KEY,
    forbidden=("tree_scale",),
    mistakes=(
        "jits a fresh function every time `make_scaled` is called",
        "jits a new lambda on every call (Pitfall 12)",
        "makes `factor` a static argument",
        "keeps one jitted function for every `f`",
    ),
)


EXERCISES = (MAKE_STEP, PAD_TO_BUCKET, INIT_STATE, MAKE_SCALED)
