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

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from .._jaxpr import inner_jaxprs
from ._kit import (
    Layer,
    Point,
    dtyped_plain,
    error_text,
    in_parts,
    input_changes,
    matching_variant,
    measured_calls,
    random_array,
    structure_difference,
    tree_judge,
)
from ._plain import describe, rebuild_tree
from ._spec import Case, Exercise

_close = tree_judge(rtol=1e-4, atol=1e-5, dtypes=False)
_close_bf16 = tree_judge(rtol=2e-2, atol=2e-2, dtypes=False)


def _fails(result: Any) -> bool:
    """Whether a :func:`_raised` result is a refusal."""
    return isinstance(result, dict) and "raised" in result


def _raised(run: Callable[[], Any]) -> Any:
    """``run()``, or ``{"raised": text}`` when JAX refuses the trees it was given.

    Rank promotion is allowed whatever the process set (the tests set it to raise): ``h @ w + b``
    with a bias vector is how learners, and the lesson, write a layer.
    """
    try:
        with jax.numpy_rank_promotion("allow"):
            return run()
    except (TypeError, ValueError) as error:  # ConcretizationTypeError is a TypeError
        return {"raised": error_text(error, 400)}


def _judge_trees(got: Any, expected: Any, case: Case, bf16: bool = False) -> str | None:
    """Structure, then values, then dtypes of two :func:`dtyped_plain` records."""
    problem = (_close_bf16 if bf16 else _close)(got["tree"], expected["tree"], case)
    if problem:
        return problem
    for (path, mine), (_, theirs) in zip(got["dtypes"], expected["dtypes"], strict=False):
        if mine != theirs:
            return f"the leaf at {path or '<root>'} has dtype {mine}, expected {theirs}."
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
            "a NaN or inf in one gradient leaf",
            "bfloat16 parameters, lr a float32 array",
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


def _branches_hint(branches: dict[str, Any] | None, text: str) -> str | None:
    """The hint for what :func:`_branch_outputs` measured, or ``None`` when it measured nothing."""
    if not branches:
        return None
    if branches["structure"]:
        lines = "".join(f"\n  {line}" for line in branches["structure"])
        return (
            "the two branches of the cond return trees of different structures; both must "
            f"return params' structure:{lines}\n  ({text[:240]})"
        )
    if not branches["leaves"]:
        return None
    leaf = branches["leaves"][0]
    where = (
        f"at {leaf['path'] or 'the root'} the first branch returns {leaf['now']}, the second "
        f"{leaf['before']}"
    )
    if leaf["change"] == "dtype":
        return (
            "the two branches of the cond return different dtypes: with lr a float32 array, p "
            "- lr * g of a "
            "bfloat16 p is float32 (Pitfall 21). Cast each new leaf back: (p - lr * "
            f"g).astype(p.dtype).\n  ({where}.)"
        )
    return f"the two branches of the cond must return the same types, but {where}."


def _judge_guarded(got: Any, expected: Any, case: Case) -> str | None:
    if "raised" in got:
        text = got["raised"]
        hint = _branches_hint(got.get("branches"), text)
        if hint:
            return hint
        if got.get("eager"):
            return (
                "guarded_step runs without jit and fails under it: a Python `if` (or `and`, "
                "`all`, float()) on a traced value. Under jit the gradients have no values yet. "
                f"Decide with jax.lax.cond(finite, step, keep, params).\n  ({text[:200]})"
            )
        return f"raised {text}"
    if "returned" in got:
        return f"returned {got['returned']}; return a pair (new_params, skipped)."
    if got["skipped"] != expected["skipped"]:
        if expected["skipped"]:
            return (
                "skipped is False, but a gradient leaf holds a NaN or an inf: check every leaf, "
                "with jnp.isfinite."
            )
        return "skipped is True, but every gradient is finite."
    if expected["skipped"]:
        (params, grads, lr) = case.args
        stepped = jax.tree.map(
            lambda p, g: np.asarray(p, np.float64) - float(lr) * np.asarray(g, np.float64),
            params,
            grads,
        )
        if matching_variant(rebuild_tree(got["tree"]), [("", lambda: stepped)]) is not None:
            return "the step was taken although a gradient is not finite: return params unchanged."
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
        "Under jit there is no Python `if` on the gradients: jax.lax.cond(pred, true_fun, "
        "false_fun, params) "
        "compiles both branches and picks one at run time.",
        "pred is one boolean: jnp.all(jnp.isfinite(g)) for each leaf g of jax.tree.leaves(grads), "
        "combined with "
        "jnp.all or &.",
        "Both branches must return params' structure and dtypes: the step branch maps "
        "(p - lr * g).astype(p.dtype) over params and grads, the other returns params. skipped is "
        "jnp.logical_not(pred).",
    ),
    mistakes=(
        "uses a Python `if` on a traced value",
        "has `lax.cond` branches whose dtypes differ (Pitfall 21)",
        "steps even when a gradient holds a NaN or an inf",
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
        shown = f"{depth} layers, each {describe(layers[0], 60)}; h {describe(h, 60)}"
        cases.append(Case((layers, h), label=f"{depth} layers", info={"depth": depth}, shown=shown))
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


def _judge_scan(got: Any, expected: Any, case: Case) -> str | None:
    if "raised" in got:
        text = got["raised"]
        sizes = got.get("xs") or []
        if len({size for _, size in sizes}) > 1:
            shown = ", ".join(f"{path or 'xs'} {size}" for path, size in sizes[:4])
            return (
                "the leaves of xs must all have the same leading axis, the layer axis: stack each "
                f"leaf over the layers. The leading sizes of xs are: {shown}.\n  ({text[:200]})"
            )
        return f"raised {text}"
    layers, h = case.args
    depth = case.info["depth"]
    problem = _close(got["tree"], expected["tree"], case)
    if problem:
        if np.shape(rebuild_tree(got["tree"])) == (depth, *np.shape(h)):
            return (
                "returned the stacked per-layer outputs (scan's ys); return the final carry, the "
                "output of the last layer."
            )
        return problem
    if depth not in got["scans"] or got["outside"]:
        return (
            f"the layers do not run in one lax.scan (scans of lengths {got['scans']}, "
            f"{got['outside']} tanh outside any scan): "
            "a Python loop unrolls every layer into the program. Stack the layers and scan over "
            "them."
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
        "jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers) turns the list of layer dicts "
        "into one dict "
        "whose leaves have a leading layer axis.",
        "lax.scan(body, h, stacked) calls body(h, p) with p the slice of every leaf for one "
        "layer, in order.",
        "body returns (new_h, None): the new carry and no per-layer output. scan returns "
        "(final_h, None); "
        "return final_h.",
    ),
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
        ("a dict of parameters", "nested, with a None subtree", "a bfloat16 leaf")
    ):
        params = _clip_params(rng, kind)
        weights = jax.tree.map(
            lambda p: (3.0 * rng.normal(size=np.shape(p))).round(2).astype(np.float32), params
        )
        limit = round(float(rng.uniform(0.5, 2.0)), 2)
        shown = (
            f"params {describe(params, 100)}; limit {limit}; the loss sum(weights * leaf**2) "
            f"with weights {describe(weights, 80)}"
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
    return jax.tree.map(lambda leaf: jnp.clip(leaf, -limit, limit), g), None


_clip_per_leaf.defvjp(_clip_fwd, _clip_bwd)


def _judge_clip(got: Any, expected: Any, case: Case) -> str | None:
    if "raised" in got:
        text = got["raised"]
        backward = got.get("backward")
        if backward and backward["length"] != backward["wanted"]:
            what = (
                f"a tuple of {backward['length']}"
                if backward["length"] is not None
                else f"a {backward['kind']}"
            )
            return (
                "the backward rule must return a tuple with one cotangent per argument of the "
                "primal function "
                f"(Pitfall 22): (clipped_tree, None), None for limit. Called on its own, yours "
                f"returns {what}.\n  ({text[:260]})"
            )
        if backward and backward.get("params"):
            lines = "".join(f"\n  {line}" for line in backward["params"])
            return (
                "the backward rule's cotangent for params must have the structure of params:"
                f"{lines}\n  ({text[:200]})"
            )
        return f"raised {text}"
    if "forward" not in got:
        return f"returned {describe(got, 80)}"
    bf16 = case.info["bf16"]
    problem = _judge_trees(got["forward"], expected["forward"], case, bf16=bf16)
    if problem:
        return (
            "the forward value must be params unchanged (only the gradient is clipped): " + problem
        )
    params, limit = case.args
    raw = jax.grad(_clip_loss(case.info["weights"]))(params)
    raw64 = jax.tree.map(lambda g: np.asarray(g, np.float64), raw)
    mine = rebuild_tree(got["grads"]["tree"])
    norm = float(np.sqrt(sum(np.sum(g**2) for g in jax.tree.leaves(raw64))))
    variant = matching_variant(
        mine,
        [
            (
                "the gradients are not clipped: the backward rule must clip each cotangent leaf "
                "with jnp.clip(g, -limit, limit).",
                lambda: raw64,
            ),
            (
                "the gradients were scaled by the norm of the whole tree; clip each leaf on its "
                "own, elementwise, to [-limit, limit].",
                lambda: jax.tree.map(lambda g: g * min(1.0, limit / norm), raw64),
            ),
        ],
        rtol=2e-2 if bf16 else 1e-4,
        atol=2e-2 if bf16 else 1e-5,
    )
    if variant and _close(got["grads"]["tree"], expected["grads"]["tree"], case) is not None:
        return variant
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
        "Decorate clip_per_leaf(params, limit) with @jax.custom_vjp; it returns params unchanged, "
        "and "
        "clip_per_leaf.defvjp(fwd, bwd) gives it its backward rule.",
        "fwd(params, limit) returns (output, residuals): (params, limit). bwd(limit, g) receives "
        "g with the "
        "structure of params.",
        "bwd returns a tuple, one entry per argument: (jax.tree.map(lambda x: jnp.clip(x, -limit, "
        "limit), g), None).",
    ),
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
    result = _raised(lambda: fn(*case.args))
    if _fails(result):
        params, x = case.args
        square = _square_inputs(int(np.shape(x)[-1]))
        mine = _raised(lambda: fn(*square))
        mapped = None
        if not _fails(mine):
            mapped = matching_variant(np.asarray(mine, np.float64), _square_variants(*square))
        return {**result, "mapped": mapped}
    if result is None:
        return result
    return dtyped_plain(result)


def _judge_ensemble(got: Any, expected: Any, case: Case) -> str | None:
    if "raised" in got:
        text = got["raised"]
        if got.get("mapped"):
            return (
                "in_axes does not fit the arguments: the member weights have the member axis, the "
                "shared scale and "
                "x do not. in_axes=({'member': 0, 'shared': None}, None) is a prefix of (params, "
                f"x). With {_SQUARE} members, {_SQUARE} outputs and {_SQUARE} rows of x, where "
                f"that mapping runs, yours maps {got['mapped']} over the members too.\n  "
                f"({text[:200]})"
            )
        return f"raised {text}"
    mine, theirs = rebuild_tree(got["tree"]), rebuild_tree(expected["tree"])
    if np.shape(mine) != np.shape(theirs):
        if np.shape(mine) == np.shape(np.moveaxis(theirs, 0, -1)) or np.shape(mine) == np.shape(
            np.moveaxis(theirs, 0, 1)
        ):
            return (
                f"the result has shape {np.shape(mine)}, expected {np.shape(theirs)}: the member "
                "axis goes first (out_axes=0)."
            )
        wanted = np.shape(theirs)
        return f"the result has shape {np.shape(mine)}, expected (members, batch, width) {wanted}."
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
        "Write the prediction of one member first: scale * (x @ w + b), with w of shape (d, k).",
        "jax.vmap(predict, in_axes=...) maps the leaves whose in_axes entry is 0 and passes those "
        "with None whole.",
        "in_axes is a prefix of (params, x): ({'member': 0, 'shared': None}, None).",
    ),
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
        ("a bfloat16 leaf", lrs2, grads2),
    ):
        cases.append(
            Case(
                (lrs, grads),
                label=label,
                info={"bf16": label.startswith("a bf")},
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


def _judge_updates(got: Any, expected: Any, case: Case) -> str | None:
    if "raised" in got:
        text = got["raised"]
        if got.get("full_rates_run"):
            return (
                "lrs is a prefix of grads, so it must be the first tree of jax.tree.map: the "
                "first tree decides where f "
                "is called, and f then gets the whole subtree of grads under each learning "
                "rate. Given one learning rate per gradient leaf, your function runs; given the "
                f"prefix, it raised.\n  ({text[:200]})"
            )
        return f"raised {text}"
    lrs, grads = case.args
    mine = rebuild_tree(got["tree"])
    wrong_sign = jax.tree.map(
        lambda lr, sub: jax.tree.map(lambda g: lr * np.asarray(g, np.float64), sub), lrs, grads
    )
    tol = 2e-2 if case.info["bf16"] else 1e-5
    hint = matching_variant(
        mine,
        [("the updates point uphill: an update is -lr * g.", lambda: wrong_sign)],
        rtol=tol,
        atol=tol,
    )
    if hint and _close(got["tree"], expected["tree"], case) is not None:
        return hint
    return _judge_trees(got, expected, case, bf16=case.info["bf16"])


SCALED_UPDATES = Exercise(
    id="08.scaled_updates",
    name="scaled_updates",
    title="Updates from a prefix tree of learning rates",
    points=2,
    cases=_updates_cases,
    reference=_scaled_updates,
    probe=_updates_probe,
    judge=_judge_updates,
    hints=(
        "lrs is a prefix of grads: one learning rate stands for a whole subtree of gradients.",
        "jax.tree.broadcast(lrs, grads) repeats each learning rate over its subtree; or "
        "jax.tree.map(f, lrs, grads) "
        "calls f(lr, subtree) once per learning rate.",
        "Each update is (-lr * g).astype(g.dtype); None subtrees of grads stay None.",
    ),
    mistakes=(
        "maps over the gradients first, so the prefix tree of rates is not the first tree",
        "climbs: the update is `-lr * g`",
        "returns float32 updates for bfloat16 gradients",
    ),
)


EXERCISES = (GUARDED_STEP, SCAN_LAYERS, CLIP_PER_LEAF, ENSEMBLE_PREDICT, SCALED_UPDATES)
