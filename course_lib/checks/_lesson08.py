"""Exercises of lesson 08, trees through transformations.

Every probe runs the learner's function under the transformation the exercise is about (``jit``
around a ``cond``, ``make_jaxpr`` to see the ``scan``, ``grad`` through a ``custom_vjp``). When JAX
refuses the trees it was given, the probe measures why instead of reading JAX's message, whose
wording changes between releases: what the branches of the failed ``cond`` return, the leading
axes of the failed ``scan``'s ``xs``, what the backward rule returns when called directly, and
controlled calls (the same function without ``jit``, on inputs where the mistake does not raise).
JAX's message is shown as supporting detail only. Inputs are NumPy arrays (bfloat16 through
``jax.device_put``), so that making a case compiles nothing.
"""

import traceback
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._jaxpr import inner_jaxprs
from .._leaves import shorten
from ._guard import is_learner_file
from ._kit import (
    Layer,
    Point,
    dtyped_plain,
    error_text,
    float_tolerance,
    in_parts,
    input_changes,
    measured_calls,
    random_array,
    structure_difference,
    tree_judge,
    trees_close,
)
from ._mistakes import Variant, first_match, first_mistake
from ._plain import describe, rebuild_tree
from ._sections import (
    COND_AND_SWITCH,
    CUSTOM_VJP,
    PITFALL_21,
    PITFALL_22,
    SCAN,
    SGD_UPDATE,
    TREE_TOOLS,
    VMAP_ENSEMBLE,
)
from ._spec import Case, Exercise, Mistake

_FLOAT32 = float_tolerance()
_BFLOAT16 = float_tolerance("bfloat16", scale=1.0)
"""The tolerance rule for this lesson's bfloat16 results, computed from values of size about 1."""
_close = tree_judge(*_FLOAT32, dtypes=False)
_close_bf16 = tree_judge(*_BFLOAT16, dtypes=False)


def _fails(result: Any) -> bool:
    """Whether a :func:`_raised` result is a refusal."""
    return isinstance(result, dict) and "raised" in result


def _raised(run: Callable[[], Any], lines: int = 1) -> Any:
    """``run()``, or ``{"raised": text}`` when JAX refuses the trees it was given (the first
    ``lines`` of its message), with where in the learner's code (:func:`_learner_line`).

    Rank promotion is allowed whatever the process set (the tests set it to raise): ``h @ w + b``
    with a bias vector is how learners, and the lesson, write a layer.
    """
    try:
        with jax.numpy_rank_promotion("allow"):
            return run()
    except (TypeError, ValueError) as error:  # ConcretizationTypeError is a TypeError
        return {"raised": error_text(error, 400, lines), **_learner_line(error)}


def _learner_line(error: BaseException) -> dict[str, Any]:
    """Where in the learner's own code ``error`` was raised: ``{"line": 3, "function":
    "guarded_step", "source": "if finite:"}`` (the function a generator or lambda on that line
    belongs to), or ``{}`` when none of its frames is theirs."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if frame.filename != "<string>" and is_learner_file(frame.filename)
    ]
    if not frames:
        return {}
    named = [frame.name for frame in frames if not frame.name.startswith("<")]
    return {
        "line": frames[-1].lineno,
        "function": named[-1] if named else frames[-1].name,
        "source": shorten((frames[-1].line or "").strip(), 80),
    }


def _dtype_difference(got: Any, expected: Any) -> tuple[str, str, str] | None:
    """The first leaf whose dtype differs in two :func:`dtyped_plain` records: its key path, its
    dtype and the expected one."""
    for (path, mine), (_, theirs) in zip(got["dtypes"], expected["dtypes"], strict=False):
        if mine != theirs:
            return path or "<root>", mine, theirs
    return None


def _judge_trees(got: Any, expected: Any, case: Case, bf16: bool = False) -> str | None:
    """Structure, then values, then dtypes of two :func:`dtyped_plain` records."""
    problem = (_close_bf16 if bf16 else _close)(got["tree"], expected["tree"], case)
    if problem:
        return problem
    difference = _dtype_difference(got, expected)
    if difference:
        path, mine, theirs = difference
        return f"the leaf at {path} has dtype `{mine}`, expected `{theirs}`."
    return None


# --- 08.guarded_step -------------------------------------------------------------------------


def _guarded_step(params: Any, grads: Any, lr: Any) -> Any:
    finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(g)) for g in jax.tree.leaves(grads)]))

    def step(params: Any) -> Any:
        return jax.tree.map(lambda p, g: (p - lr * g).astype(p.dtype), params, grads)

    return lax.cond(finite, step, lambda params: params, params), jnp.logical_not(finite)


def _step_tree(rng: np.random.Generator, kind: int) -> Any:
    if kind == 0:
        return {"w": random_array(rng, 2, 3), "b": random_array(rng, 3), "frozen": None}
    if kind == 1:
        return [Layer(w=random_array(rng, 3, 2), b=None), {"scale": random_array(rng, 2)}]
    return {
        "encoder": Point(x=random_array(rng, 2, 2), y=random_array(rng, 2)),
        "head": (random_array(rng, 3),),
    }


def _guarded_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, label in enumerate(
        (
            "finite gradients",
            "a `NaN` or inf in one gradient leaf",
            "`bfloat16` parameters, `lr` a `float32` array",
        )
    ):
        params = _step_tree(rng, kind)
        grads = jax.tree.map(lambda p: random_array(rng, *p.shape), params)
        lr: Any = round(float(rng.uniform(0.05, 0.5)), 3)
        if kind == 1:
            leaves, treedef = jax.tree.flatten(grads)
            leaves[int(rng.integers(0, len(leaves)))].flat[0] = (np.nan, np.inf)[
                int(rng.integers(0, 2))
            ]
            grads = jax.tree.unflatten(treedef, leaves)
        if kind == 2:
            params = jax.tree.map(lambda p: jax.device_put(p.astype(jnp.bfloat16)), params)
            grads = jax.tree.map(lambda g: jax.device_put(g.astype(jnp.bfloat16)), grads)
            lr = jax.device_put(np.float32(lr))
        shown = f"params {describe(params, 90)}; grads {describe(grads, 90)}; lr {describe(lr, 30)}"
        cases.append(Case((params, grads, lr), label=label, info={"bf16": kind == 2}, shown=shown))
    return in_parts(cases, ["step", "skip", "dtypes"])


def _branch_outputs(
    pred: Any, true_fun: Any, false_fun: Any, *operands: Any, **kwargs: Any
) -> dict[str, Any]:
    """For a ``lax.cond`` call that failed: how what its two branches return differs, measured by
    calling each branch on the operands (weak types aside: cond reconciles those)."""
    if "operand" in kwargs:
        operands = (kwargs["operand"],)
    changes = input_changes(
        true_fun(*operands), false_fun(*operands), ("the first branch", "the second branch")
    )
    leaves = [leaf for leaf in changes["leaves"] if leaf["change"] != "weak_type"]
    return {"structure": changes["structure"], "leaves": leaves}


def _guarded_probe(fn: Callable[..., Any], case: Case) -> Any:
    with measured_calls(lax, "cond", _branch_outputs) as branches:
        result = _raised(lambda: jax.jit(fn)(*case.args))
    if _fails(result):
        eager = _raised(lambda: fn(*case.args))
        return {
            **result,
            "branches": branches[-1] if branches else None,
            "eager": not _fails(eager),
        }
    if result is None:
        return result
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        return {"returned": describe(result, 80)}
    new, skipped = result
    try:
        flag = bool(np.asarray(skipped).item())
    except (TypeError, ValueError):
        return {"returned": f"a pair whose second item is {describe(skipped, 60)}"}
    return {**dtyped_plain(new), "skipped": flag}


def _branches_hint(branches: dict[str, Any] | None, text: str) -> str | Mistake | None:
    """The hint for what :func:`_branch_outputs` measured, or ``None`` when it measured nothing."""
    if not branches:
        return None
    if branches["structure"]:
        lines = "".join(f"\n  {line}" for line in branches["structure"])
        return Mistake(
            f"the two branches of the `cond` return trees of different structures:{lines}\n  "
            f"({text[:240]})",
            "`lax.cond` compiles both branches into one program that returns one tree, so both "
            "must return the same structure: the same containers, keys and `None` subtrees, with "
            "the same shapes and dtypes at the leaves.",
            "Let each branch return a tree built from `params`: the skipping branch `params` "
            "itself, the stepping branch a `jax.tree.map` over `params` and `grads`.",
            reread=PITFALL_21,
        )
    if not branches["leaves"]:
        return None
    leaf = branches["leaves"][0]
    where = (
        f"at {leaf['path'] or 'the root'} the first branch returns {leaf['now']}, the second "
        f"{leaf['before']}"
    )
    if leaf["change"] == "dtype":
        return Mistake(
            f"the two branches of the `cond` return different dtypes: {where}.\n  ({text[:200]})",
            "With `lr` a `float32` array, `p - lr * g` of a `bfloat16` `p` is promoted to "
            "`float32`, while the branch that skips returns the `bfloat16` `p`; `cond` needs one "
            "dtype per leaf from both branches (Pitfall 21).",
            "Cast each stepped leaf back to its parameter's dtype: `(p - lr * g).astype(p.dtype)`.",
            reread=PITFALL_21,
        )
    return f"the two branches of the `cond` return different types: {where}."


def _non_finite_path(grads: Any) -> str:
    """The key path of the first gradient leaf that holds a NaN or an inf."""
    for path, leaf in jax.tree_util.tree_leaves_with_path(grads):
        if not np.all(np.isfinite(np.asarray(leaf, np.float64))):
            return jax.tree_util.keystr(path)
    return "<none>"


def _judge_guarded(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if "raised" in got:
        text = got["raised"]
        hint = _branches_hint(got.get("branches"), text)
        if hint:
            return hint
        if got.get("eager"):
            where = (
                f"line {got['line']} of {got['function']}, `{got['source']}`,"
                if "line" in got
                else "one of its lines"
            )
            return Mistake(
                f"`guarded_step` runs without `jit` and fails under it: {where} asks for the value "
                f"of a traced array.\n  ({text[:200]})",
                "Under `jit` the gradients are tracers, with shapes and dtypes but no values "
                "yet: a decision on their values has to be part of the compiled program, where "
                "`lax.cond` picks a branch at run time.",
                "Compute one boolean array for `'every leaf is finite'` with `jnp` "
                "(`jnp.isfinite`, `jnp.all`), and let `lax.cond(finite, step_branch, "
                "skip_branch, params)` choose.",
            )
        return f"raised {text}"
    if "returned" in got:
        return f"returned {got['returned']}, where a pair `(new_params, skipped)` was expected."
    if got["skipped"] != expected["skipped"]:
        if expected["skipped"]:
            (_, grads, _) = case.args
            return Mistake(
                "`skipped` is `False`, but a gradient leaf holds a `NaN` or an inf (at "
                f"{_non_finite_path(grads)}).",
                "The step is safe only when every entry of every gradient leaf is finite: one "
                "`NaN` or inf anywhere, in any leaf, means skip.",
                "Reduce `jnp.all(jnp.isfinite(g))` over every leaf `g` of "
                "`jax.tree.leaves(grads)` to one boolean, `finite`; let `lax.cond(finite, "
                "step_branch, skip_branch, params)` give the new params, and return `~finite` as "
                "`skipped`.",
            )
        return "`skipped` is `True`, but every gradient is finite."
    if expected["skipped"]:
        (params, grads, lr) = case.args
        stepped = jax.tree.map(
            lambda p, g: np.asarray(p, np.float64) - float(lr) * np.asarray(g, np.float64),
            params,
            grads,
        )
        with np.errstate(all="ignore"):  # the step holds the gradient's NaN or inf
            moved = trees_close(rebuild_tree(got["tree"]), stepped)
        if moved:
            return Mistake(
                "`skipped` is `True`, but the parameters moved: the step was taken although the "
                f"gradient at {_non_finite_path(grads)} is not finite.",
                "Skipping means the parameters come back exactly as they were; a step with a `NaN` "
                "gradient would turn them into `NaN`.",
                "Let the same condition choose the new parameters: the branch taken for "
                "non-finite gradients returns `params` unchanged.",
            )
    return _judge_trees(got, expected, case, bf16=case.info["bf16"])


GUARDED_STEP = Exercise(
    id="08.guarded_step",
    name="guarded_step",
    title="A step that skips non-finite gradients, with lax.cond",
    points=3,
    cases=_guarded_cases,
    reference=_guarded_step,
    probe=_guarded_probe,
    judge=_judge_guarded,
    hints=(
        (
            "Under `jit` no Python `if` can read the gradients; `lax.cond` compiles both branches "
            "and picks one at run time, and both must return the same tree with the same dtypes."
        ),
        (
            "`finite` = one boolean, `jnp.all(jnp.isfinite(g))` combined over "
            "`jax.tree.leaves(grads)`; `jax.lax.cond(finite, step, keep, params)`, where `step` "
            "maps `(p - lr * g).astype(p.dtype)` over `params` and `grads` and `keep` returns "
            "`params`; `skipped = jnp.logical_not(finite)`."
        ),
    ),
    reread=COND_AND_SWITCH,
    mistakes=(
        "uses a Python `if` on a traced value",
        "has `lax.cond` branches whose dtypes differ (Pitfall 21)",
        "steps even when a gradient holds a `NaN` or an inf",
    ),
)


# --- 08.scan_layers --------------------------------------------------------------------------


def _scan_layers(layers: list[Any], h: Any) -> Any:
    stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers)

    def body(h: Any, p: Any) -> tuple[Any, None]:
        return jnp.tanh(h @ p["w"] + p["b"]), None

    return lax.scan(body, h, stacked)[0]


def _scan_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for depth, width, batch in ((1, 4, 2), (3, 3, 1), (5, 4, 3)):
        depth = depth + int(rng.integers(0, 2))
        layers = [
            {
                "w": random_array(rng, width, width) * np.float32(0.5),
                "b": random_array(rng, width) * np.float32(0.1),
            }
            for _ in range(depth)
        ]
        h = random_array(rng, batch, width)
        label = f"{depth} layer" + ("" if depth == 1 else "s")
        shown = f"{label}, each {describe(layers[0], 60)}; h {describe(h, 60)}"
        cases.append(Case((layers, h), label=label, info={"depth": depth}, shown=shown))
    return cases


def _scan_eqns(jaxpr: Any) -> tuple[list[int], int]:
    """The lengths of the scans of a jaxpr, and the ``tanh`` equations outside every scan.

    >>> body = lambda h, _: (jnp.tanh(h), None)
    >>> _scan_eqns(jax.make_jaxpr(lambda h: jnp.tanh(lax.scan(body, h, length=3)[0]))(1.0).jaxpr)
    ([3], 1)
    """
    lengths, outside = [], 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "scan":
            lengths.append(int(eqn.params["length"]))
            continue
        outside += eqn.primitive.name == "tanh"
        for sub in inner_jaxprs(eqn):
            inner, more = _scan_eqns(sub)
            lengths += inner
            outside += more
    return lengths, outside


def _xs_lengths(body: Any, init: Any, xs: Any = None, *_: Any, **__: Any) -> list[list[Any]]:
    """For a ``lax.scan`` call that failed: ``[key path, leading size]`` of each leaf of ``xs``
    (``None`` for a leaf without an axis)."""
    return [
        [jax.tree_util.keystr(path), int(np.shape(leaf)[0]) if np.ndim(leaf) else None]
        for path, leaf in jax.tree_util.tree_leaves_with_path(xs)
    ]


def _scan_probe(fn: Callable[..., Any], case: Case) -> Any:
    layers, h = case.args
    with measured_calls(lax, "scan", _xs_lengths) as lengths:
        traced = _raised(lambda: jax.make_jaxpr(fn)(layers, h))
    if isinstance(traced, dict):
        return {**traced, "xs": lengths[-1] if lengths else None}
    lengths, outside = _scan_eqns(traced.jaxpr)
    value = _raised(lambda: jax.jit(fn)(layers, h))
    if value is None or isinstance(value, dict):
        return value
    return {**dtyped_plain(value), "scans": lengths, "outside": outside}


def _judge_scan(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if "raised" in got:
        text = got["raised"]
        sizes = got.get("xs") or []
        if len({size for _, size in sizes}) > 1:
            shown = ", ".join(f"{path or 'xs'} {size}" for path, size in sizes[:4])
            return Mistake(
                "`lax.scan` was handed `xs` whose leaves differ in their leading axis. The "
                f"leading sizes of `xs` are: {shown}.\n  ({text[:200]})",
                "`scan` slices every leaf of `xs` along its leading axis, one slice per step, so "
                "every leaf needs that axis, with one entry per layer: the weights and the "
                "biases alike.",
                "Stack each leaf over the layers, the biases too: `jax.tree.map` with `jnp.stack` "
                "over the list of layers gives one tree whose every leaf starts with the layer "
                "axis.",
                reread=SCAN,
            )
        return f"raised {text}"
    layers, h = case.args
    depth = case.info["depth"]
    problem = _close(got["tree"], expected["tree"], case)
    if problem:
        shape = np.shape(rebuild_tree(got["tree"]))
        if shape == (depth, *np.shape(h)):
            return Mistake(
                f"returned an array of shape `{shape}`: the output of every layer, stacked "
                "(`scan`'s `ys`), where the output of the last layer was expected.",
                "`lax.scan` returns a pair, the final carry and the stacked per-step outputs "
                "`ys`; the carry after the last step is the last layer's output.",
                "Return the first item of what `lax.scan` returns; the body may return `None` as "
                "its per-step output.",
                reread=SCAN,
            )
        return problem
    if depth not in got["scans"] or got["outside"]:
        scans = got["scans"]
        found = f"scans of lengths {scans}" if scans else "no `scan`"
        return Mistake(
            f"the layers do not run as one loop of {depth} step{'s' if depth != 1 else ''} in the "
            "program: it holds "
            f"{found}, and {got['outside']} tanh outside any `scan`.",
            "A Python loop unrolls every layer: it runs while `jit` traces, so each layer becomes "
            "its own copy in the program, which grows with the depth, and so does the compile "
            "time. A `scan` traces its body once, whatever the number of layers.",
            "Stack the layers into one tree with a leading layer axis, and run the layer "
            "computation as the body of `lax.scan` over it, the activations as the carry.",
            reread=SCAN,
        )
    return None


SCAN_LAYERS = Exercise(
    id="08.scan_layers",
    name="scan_layers",
    title="Stack the layers and run them with one lax.scan",
    points=3,
    cases=_scan_cases,
    reference=_scan_layers,
    probe=_scan_probe,
    judge=_judge_scan,
    hints=(
        (
            "`scan` walks a leading axis: stack the layers into one tree whose leaves have a layer "
            "axis, and the body sees one layer's slice at a time, carrying the activations."
        ),
        (
            "`stacked = jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers)`; a body `(h, "
            "p)` that returns (the layer's output, `None`); `final_h, _ = jax.lax.scan(body, h, "
            "stacked)`."
        ),
    ),
    reread=SCAN,
    mistakes=(
        "loops over the layers in Python, unrolling every one",
        "returns the stacked outputs instead of the final carry",
    ),
)


# --- 08.clip_per_leaf ------------------------------------------------------------------------


def _clip_params(rng: np.random.Generator, kind: int) -> Any:
    if kind == 0:
        return {"w": random_array(rng, 2, 3), "b": random_array(rng, 3)}
    if kind == 1:
        return {
            "layers": [Layer(w=random_array(rng, 3, 3), b=None)],
            "head": {"w": random_array(rng, 3)},
        }
    return {
        "emb": jax.device_put(random_array(rng, 4).astype(jnp.bfloat16)),
        "scale": jax.device_put(random_array(rng, 2)),
    }


def _clip_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for kind, label in enumerate(
        ("a dict of parameters", "nested, with a `None` subtree", "a `bfloat16` leaf")
    ):
        params = _clip_params(rng, kind)
        weights = jax.tree.map(
            lambda p: (3.0 * rng.normal(size=np.shape(p))).round(2).astype(np.float32), params
        )
        limit = round(float(rng.uniform(0.5, 2.0)), 2)
        shown = (
            f"params {describe(params, 100)}; limit {limit}; the loss sum(weights * leaf**2) with "
            f"weights {describe(weights, 80)}"
        )
        cases.append(
            Case(
                (params, limit),
                label=label,
                info={"weights": weights, "bf16": kind == 2},
                shown=shown,
            )
        )
    return in_parts(cases, ["dict", "nested", "dtypes"])


def _clip_loss(weights: Any) -> Callable[[Any], Any]:
    def loss(tree: Any) -> Any:
        terms = jax.tree.map(lambda w, p: jnp.sum(w * p.astype(jnp.float32) ** 2), weights, tree)
        return sum(jax.tree.leaves(terms))

    return loss


def _backward_output(rule: Any, params: Any, limit: Any) -> dict[str, Any] | None:
    """What the backward rule of the ``custom_vjp`` ``rule`` returns, called directly on the
    forward rule's residuals with the output as cotangent: a tuple with one cotangent per
    differentiable argument (``wanted``), or what instead (``None`` if it cannot be called)."""
    try:
        args = (params, limit)
        nondiff = tuple(rule.nondiff_argnums)
        out, residuals = rule.fwd(*args)
        returned = rule.bwd(*(args[i] for i in nondiff), residuals, out)
    except Exception:  # noqa: BLE001 (a rule that cannot be called directly is not measured)
        return None
    wanted = len(args) - len(nondiff)
    record: dict[str, Any] = {"kind": type(returned).__name__, "wanted": wanted, "length": None}
    if isinstance(returned, tuple):
        record["length"] = len(returned)
        if len(returned) == wanted and 0 not in nondiff:
            record["params"] = structure_difference(
                returned[0], params, ("the cotangent", "params")
            )
    return record


def _clip_probe(fn: Callable[..., Any], case: Case) -> Any:
    params, limit = case.args
    with measured_calls(jax.custom_vjp, "__call__", lambda rule, *_: rule, every=True) as rules:
        forward = _raised(lambda: fn(params, limit))
    if forward is None or _fails(forward):
        return forward
    loss = _clip_loss(case.info["weights"])
    grads = _raised(lambda: jax.grad(lambda p: loss(fn(p, limit)))(params))
    if _fails(grads):
        backward = _backward_output(rules[-1], params, limit) if rules else None
        return {**grads, "backward": backward}
    return {"forward": dtyped_plain(forward), "grads": dtyped_plain(grads)}


def _clip_reference(params: Any, limit: float) -> Any:
    return _clip_per_leaf(params, limit)


@jax.custom_vjp
def _clip_per_leaf(params: Any, limit: float) -> Any:
    return params


def _clip_fwd(params: Any, limit: float) -> tuple[Any, float]:
    return params, limit


def _clip_bwd(limit: float, g: Any) -> tuple[Any, None]:
    clipped = jax.tree.map(lambda leaf: jnp.minimum(jnp.maximum(leaf, -limit), limit), g)
    return (clipped, None)


_clip_per_leaf.defvjp(_clip_fwd, _clip_bwd)


def _clip_variants(raw: Any, limit: float) -> list[Variant]:
    """Typical wrong gradients, from the unclipped ones ``raw`` (float64)."""
    norm = float(np.sqrt(sum(np.sum(g**2) for g in jax.tree.leaves(raw))))
    unclipped = Mistake(
        "the gradients are not clipped: they are the plain gradients of the loss.",
        "What the backward rule returns is the gradient that flows back to `params`: it receives "
        "the cotangent `g` of the output and may change it.",
        "In the backward rule, clip each leaf of `g` with `jnp.clip(leaf, -limit, limit)`, "
        "mapped over the tree.",
        reread=CUSTOM_VJP,
    )
    by_norm = Mistake(
        "the gradients were scaled by one factor, computed from the norm of the whole tree, "
        f"where each entry was to be clipped to `[-{limit}, {limit}]` on its own.",
        "Clipping per leaf, elementwise, bounds every entry independently; clipping by the "
        "global norm rescales every entry by one common factor, and is another operation "
        "(lesson 02).",
        "In the backward rule, map `jnp.clip(leaf, -limit, limit)` over the leaves of `g`, and "
        "compute no norm.",
        reread=CUSTOM_VJP,
    )
    return [
        Variant(mistake=unclipped, build=lambda: raw),
        Variant(
            mistake=by_norm, build=lambda: jax.tree.map(lambda g: g * min(1.0, limit / norm), raw)
        ),
    ]


def _judge_clip(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if "raised" in got:
        text = got["raised"]
        backward = got.get("backward")
        if backward and backward["length"] != backward["wanted"]:
            length = backward["length"]
            what = (
                f"a tuple of {length} item{'' if length == 1 else 's'}"
                if length is not None
                else f"a {backward['kind']}"
            )
            return Mistake(
                f"`jax.grad` raised {text.split(':', 1)[0]} on what your backward rule returned: "
                f"called on its own with the residuals and a cotangent, the rule returns {what}.",
                "A backward rule returns a tuple with one cotangent per argument of the primal "
                "function, in order, even for an argument that gets no gradient (Pitfall 22).",
                "Return a pair from the backward rule: the clipped tree for `params`, and `None` "
                "for `limit`.",
                reread=PITFALL_22,
            )
        if backward and backward.get("params"):
            lines = "".join(f"\n  {line}" for line in backward["params"])
            return Mistake(
                "the backward rule's cotangent for params does not have the structure of "
                f"`params`:{lines}\n  ({text[:200]})",
                "The cotangent for an argument is a tree with that argument's structure: one "
                "leaf of gradient per leaf of `params`, `None` subtrees included.",
                "Build the cotangent with `jax.tree.map` over `g`, which keeps its structure, "
                "rather than assembling a new container.",
                reread=CUSTOM_VJP,
            )
        return f"raised {text}"
    if "forward" not in got:
        return f"returned {describe(got, 80)}"
    bf16 = case.info["bf16"]
    problem = _judge_trees(got["forward"], expected["forward"], case, bf16=bf16)
    if problem:
        return Mistake(
            "the forward value is not `params` unchanged: " + problem,
            "A `custom_vjp` changes the derivative only: callers compute with the primal "
            "function's output, which here is `params` as given; the clipping belongs to the "
            "backward pass.",
            "Return `params` from the primal function, and `params` as the output of the forward "
            "rule; clip only the cotangent `g`, in the backward rule.",
            reread=CUSTOM_VJP,
        )
    params, limit = case.args
    raw = jax.grad(_clip_loss(case.info["weights"]))(params)
    raw64 = jax.tree.map(lambda g: np.asarray(g, np.float64), raw)
    mine = rebuild_tree(got["grads"]["tree"])
    rtol, atol = _BFLOAT16 if bf16 else _FLOAT32
    found = first_mistake(mine, _clip_variants(raw64, limit), rtol=rtol, atol=atol)
    if found and _close(got["grads"]["tree"], expected["grads"]["tree"], case) is not None:
        return found
    return _judge_trees(got["grads"], expected["grads"], case, bf16=bf16)


CLIP_PER_LEAF = Exercise(
    id="08.clip_per_leaf",
    name="clip_per_leaf",
    title="A custom_vjp that clips the gradient of every leaf",
    points=3,
    cases=_clip_cases,
    reference=_clip_reference,
    probe=_clip_probe,
    judge=_judge_clip,
    hints=(
        (
            "A `custom_vjp` function gets a forward rule that saves residuals and a backward rule "
            "that returns one cotangent per primal argument, as a tuple (Pitfall 22)."
        ),
        (
            "`clip_per_leaf` returns `params`; `fwd(params, limit)` returns `(params, limit)`, "
            "the output and `limit` as residual; `bwd(limit, g)` returns a pair, the tree of "
            "`jnp.clip(leaf, -limit, limit)` over `g` and `None` for `limit`; connect them with "
            "`clip_per_leaf.defvjp(fwd, bwd)`."
        ),
    ),
    reread=CUSTOM_VJP,
    mistakes=(
        "returns a bare tree from the backward rule (Pitfall 22)",
        "changes the forward value instead of passing `params` through",
        "clips by the global norm instead of each leaf on its own",
    ),
)


# --- 08.ensemble_predict ---------------------------------------------------------------------


def _ensemble_predict(params: Any, x: Any) -> Any:
    def predict(p: Any, x: Any) -> Any:
        return p["shared"]["scale"] * (x @ p["member"]["w"] + p["member"]["b"])

    return jax.vmap(predict, in_axes=({"member": 0, "shared": None}, None))(params, x)


def _ensemble_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for members, d, k, n in ((3, 2, 4, 5), (4, 3, 2, 1), (2, 5, 5, 2)):
        params = {
            "member": {"w": random_array(rng, members, d, k), "b": random_array(rng, members, k)},
            "shared": {"scale": random_array(rng, k)},
        }
        x = random_array(rng, n, d)
        shown = f"params {describe(params, 110)}; x {describe(x, 40)}"
        cases.append(Case((params, x), label=f"{members} members, output width {k}", shown=shown))
    return cases


_SQUARE = 3
"""Members, output width and rows of x in the controlled call of ``ensemble_predict``."""


def _square_inputs(d: int) -> tuple[Any, Any]:
    """Ensemble inputs with as many members as output columns and rows of x: a mapping of the
    shared scale, or of x, over the members runs on them where the case's shapes refuse it."""
    rng = np.random.default_rng(8)
    n = _SQUARE
    params = {
        "member": {"w": random_array(rng, n, d, n), "b": random_array(rng, n, n)},
        "shared": {"scale": random_array(rng, n)},
    }
    return params, random_array(rng, n, d)


def _square_variants(params: Any, x: Any) -> list[tuple[str, Callable[[], Any]]]:
    """What a vmap that maps more than the member weights gives on :func:`_square_inputs`."""
    p = jax.tree.map(lambda a: np.asarray(a, np.float64), params)
    w, b, scale = p["member"]["w"], p["member"]["b"], p["shared"]["scale"]
    x64 = np.asarray(x, np.float64)
    members = range(len(w))
    return [
        ("the shared scale", lambda: np.stack([scale[i] * (x64 @ w[i] + b[i]) for i in members])),
        ("x", lambda: np.stack([scale * (x64[i] @ w[i] + b[i]) for i in members])),
        (
            "the shared scale and x",
            lambda: np.stack([scale[i] * (x64[i] @ w[i] + b[i]) for i in members]),
        ),
    ]


def _ensemble_probe(fn: Callable[..., Any], case: Case) -> Any:
    result = _raised(lambda: fn(*case.args), lines=4)
    if _fails(result):
        params, x = case.args
        square = _square_inputs(int(np.shape(x)[-1]))
        mine = _raised(lambda: fn(*square))
        mapped = None
        if not _fails(mine):
            # NumPy's products against the learner's, at JAX's default precision (a TPU's is
            # bfloat16's): the tolerance rule for a matrix product.
            labels, builds = zip(*_square_variants(*square), strict=True)
            rtol, atol = float_tolerance(matmul=True, scale=1.0)
            index = first_match(np.asarray(mine, np.float64), builds, rtol=rtol, atol=atol)
            mapped = None if index is None else labels[index]
        return {**result, "mapped": mapped}
    if result is None:
        return result
    return dtyped_plain(result)


def _judge_ensemble(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if "raised" in got:
        text = got["raised"]
        if got.get("mapped"):
            lines = text.splitlines()
            odd = f" ({lines[-1].strip(' *;.')})" if len(lines) > 1 else ""
            return Mistake(
                f"`ensemble_predict` raised {lines[0].split(':', 1)[0]}: `vmap` was given mapped "
                f"axes of different sizes{odd}. Its `in_axes` maps {got['mapped']} over the "
                f"member axis too: with {_SQUARE} members, {_SQUARE} outputs and {_SQUARE} rows "
                "of `x`, where that mapping runs, yours returns exactly what it gives.",
                "`in_axes` is a prefix of the tuple of arguments `(params, x)`: a `0` maps every "
                "leaf below it over its leading axis, a `None` passes it whole. Only the member "
                "weights have a member axis; the shared scale and `x` do not (Pitfall 13).",
                "Give `in_axes` a tree that marks `params['member']` with `0`, and "
                "`params['shared']` and `x` with `None`: `({'member': 0, 'shared': None}, None)`.",
                reread=VMAP_ENSEMBLE,
            )
        return f"raised {text}"
    mine, theirs = rebuild_tree(got["tree"]), rebuild_tree(expected["tree"])
    if np.shape(mine) != np.shape(theirs):
        if np.shape(mine) == np.shape(np.moveaxis(theirs, 0, -1)) or np.shape(mine) == np.shape(
            np.moveaxis(theirs, 0, 1)
        ):
            return Mistake(
                f"the result has shape `{np.shape(mine)}`, expected `{np.shape(theirs)}` "
                "(members, batch, width): the member axis is not first.",
                "`vmap` puts the mapped axis of its result where `out_axes` says: `0`, the "
                "default, makes it the leading axis.",
                "Leave `out_axes` at `0` (and transpose nothing afterwards), so that the result "
                "is (members, batch, width).",
                reread=VMAP_ENSEMBLE,
            )
        wanted = np.shape(theirs)
        return (
            f"the result has shape `{np.shape(mine)}`, expected (members, batch, width) `{wanted}`."
        )
    return _judge_trees(got, expected, case)


ENSEMBLE_PREDICT = Exercise(
    id="08.ensemble_predict",
    name="ensemble_predict",
    title="An ensemble with vmap and an in_axes tree",
    points=2,
    cases=_ensemble_cases,
    reference=_ensemble_predict,
    probe=_ensemble_probe,
    judge=_judge_ensemble,
    hints=(
        (
            "`vmap` maps the leaves whose `in_axes` entry is `0` and passes those marked `None` "
            "whole; `in_axes` is a prefix of the tuple of arguments (Pitfall 13)."
        ),
        (
            "Write `predict(p, x)` for one member, `scale * (x @ w + b)` read from `p`, then "
            "`jax.vmap(predict, in_axes=...)` with `in_axes` a tree that gives "
            "`params['member']` `0`, and `params['shared']` and `x` `None`."
        ),
    ),
    reread=VMAP_ENSEMBLE,
    mistakes=(
        "maps over the shared parameters too",
        "puts the member axis last instead of first",
    ),
)


# --- 08.scaled_updates -----------------------------------------------------------------------


def _scaled_updates(lrs: Any, grads: Any) -> Any:
    return jax.tree.map(
        lambda lr, sub: jax.tree.map(lambda g: (-lr * g).astype(g.dtype), sub), lrs, grads
    )


def _updates_cases(rng: np.random.Generator) -> list[Case]:
    lr = lambda: round(float(rng.uniform(0.01, 0.5)), 3)
    grads0 = {
        "encoder": {"w": random_array(rng, 2, 2), "b": random_array(rng, 2)},
        "head": [random_array(rng, 3), None],
    }
    lrs0 = {"encoder": lr(), "head": lr()}
    grads1 = [
        Layer(w=random_array(rng, 2, 3), b=random_array(rng, 3)),
        {"scale": random_array(rng, 2), "bias": random_array(rng)},
    ]
    lrs1 = [Layer(w=lr(), b=lr()), lr()]
    grads2 = {
        "emb": jax.device_put(random_array(rng, 4).astype(jnp.bfloat16)),
        "blocks": (Point(x=random_array(rng, 2), y=None),),
    }
    lrs2 = {"emb": lr(), "blocks": lr()}
    cases = []
    for label, lrs, grads in (
        ("a learning rate per top-level group", lrs0, grads0),
        ("a prefix of mixed depth", lrs1, grads1),
        ("a `bfloat16` leaf", lrs2, grads2),
    ):
        cases.append(
            Case(
                (lrs, grads),
                label=label,
                info={"bf16": "bfloat16" in label},
                shown=f"lrs {describe(lrs, 80)}; grads {describe(grads, 100)}",
            )
        )
    return cases


def _full_rates(lrs: Any, grads: Any) -> Any:
    """``lrs``, a prefix of ``grads``, with each learning rate repeated over its subtree: a tree of
    the structure of ``grads``."""
    treedef = jax.tree.structure(lrs)
    subtrees = treedef.flatten_up_to(grads)  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
    rates = jax.tree.leaves(lrs)
    return jax.tree.unflatten(
        treedef,
        [jax.tree.map(lambda _, lr=lr: lr, sub) for lr, sub in zip(rates, subtrees, strict=True)],
    )


def _updates_probe(fn: Callable[..., Any], case: Case) -> Any:
    result = _raised(lambda: fn(*case.args))
    if _fails(result):
        lrs, grads = case.args
        full = _raised(lambda: fn(_full_rates(lrs, grads), grads))
        return {**result, "full_rates_run": not _fails(full)}
    if result is None:
        return result
    return dtyped_plain(result)


def _judge_updates(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if "raised" in got:
        text = got["raised"]
        if got.get("full_rates_run"):
            return Mistake(
                "your function raised given the prefix `lrs`, and runs given one learning rate "
                f"per gradient leaf.\n  ({text[:200]})",
                "`jax.tree.map` walks its first tree and expects each other tree to have that "
                "structure, or a subtree below each of its leaves. A prefix must come first: `f` "
                "then gets the whole subtree of `grads` under each learning rate.",
                "Map over `lrs` first, `jax.tree.map(f, lrs, grads)`, with `f(lr, subtree)` "
                "mapping the update over the subtree; or spread `lrs` with "
                "`jax.tree.broadcast(lrs, grads)` first.",
                reread=TREE_TOOLS,
            )
        return f"raised {text}"
    lrs, grads = case.args
    mine = rebuild_tree(got["tree"])
    wrong_sign = jax.tree.map(
        lambda lr, sub: jax.tree.map(lambda g: lr * np.asarray(g, np.float64), sub), lrs, grads
    )
    uphill = Mistake(
        "the updates point uphill: each is `lr * g`, the opposite of a step that lowers the loss.",
        "An update is what gets added to the parameters; to lower the loss it moves against the "
        "gradient.",
        "Negate it: each update is `-lr * g`.",
        reread=SGD_UPDATE,
    )
    rtol, atol = _BFLOAT16 if case.info["bf16"] else _FLOAT32
    found = first_mistake(
        mine,
        [Variant(mistake=uphill, build=lambda: wrong_sign)],
        rtol=rtol,
        atol=atol,
    )
    if found and _close(got["tree"], expected["tree"], case) is not None:
        return found
    problem = _judge_trees(got, expected, case, bf16=case.info["bf16"])
    difference = _dtype_difference(got, expected)
    if problem and difference and difference[1] == "float32" and difference[2] != "float32":
        path, mine_dtype, theirs_dtype = difference
        return Mistake(
            f"the leaf at {path} has dtype `{mine_dtype}`, expected `{theirs_dtype}`, its "
            "gradient's.",
            f"A `{theirs_dtype}` array times a Python float stays `{theirs_dtype}`, but times a "
            "`float32` scalar or array it is promoted to `float32`, as in Pitfall 21.",
            "Cast each update back to its gradient's dtype: `(-lr * g).astype(g.dtype)`.",
            reread=PITFALL_21,
        )
    return problem


SCALED_UPDATES = Exercise(
    id="08.scaled_updates",
    optional=True,
    name="scaled_updates",
    title="Updates from a prefix tree of learning rates",
    points=2,
    cases=_updates_cases,
    reference=_scaled_updates,
    probe=_updates_probe,
    judge=_judge_updates,
    hints=(
        (
            "`lrs` is a prefix of `grads`: one learning rate stands for a whole subtree of "
            "gradients, and the prefix must be spread over that subtree."
        ),
        (
            "`jax.tree.map(f, lrs, grads)`, `lrs` first, hands `f(lr, subtree)` each learning "
            "rate with the subtree of `grads` it covers; `f` maps `(-lr * g).astype(g.dtype)` "
            "over that subtree. Or `jax.tree.broadcast(lrs, grads)` first, then one map over "
            "both."
        ),
    ),
    reread=TREE_TOOLS,
    mistakes=(
        "maps over the gradients first, so the prefix tree of rates is not the first tree",
        "climbs: the update is `-lr * g`",
        "returns `float32` updates for `bfloat16` gradients",
    ),
)


EXERCISES = (GUARDED_STEP, SCAN_LAYERS, CLIP_PER_LEAF, ENSEMBLE_PREDICT, SCALED_UPDATES)
