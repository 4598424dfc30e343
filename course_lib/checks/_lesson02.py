"""Exercises of lesson 02, mapping over trees: SGD, several trees at once, norms, stacking."""

import collections
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._kit import (
    JUDGE_ATOL,
    JUDGE_RTOL,
    Layer,
    Point,
    as_numpy,
    attempt,
    call_tree,
    call_value,
    compile_report,
    first_leaf_path,
    float_tolerance,
    float_tree,
    judge_compiles,
    judge_number,
    missing_return,
    random_array,
    random_like,
    recompile_cause,
    repeat_compiles,
    scaled,
    small_float_leaf,
    structure_found,
    to_python,
    tree_judge,
)
from ._mistakes import Steps, Variant, first_mistake, lead
from ._plain import describe, rebuild_tree, tree_plain
from ._sections import ONE_TREE, SGD_UPDATE, TRAINING, WHOLE_TREE_OPERATIONS
from ._spec import Case, Exercise, Judge, Mistake

# --- shared helpers ----------------------------------------------------------------------------


# 0-d leaves are 0-d arrays here (``f32[]`` in the inputs a check shows), never NumPy scalars.
_like = functools.partial(random_like, array=True)

# A random tree of float32 leaves, one of them at "head" and at least one in "params". The explicit
# cases hold JAX arrays; random trees hold NumPy arrays (of few shapes, see ``SMALL_SHAPES``), where
# ``p - lr * g`` compiles nothing.
_float_tree = functools.partial(
    float_tree,
    layout=(("params", "tree"), ("head", "leaf")),
    leaf=small_float_leaf,
    none_rate=0.3,
    min_leaves=2,
)


def _copies_of_random_trees(rng: np.random.Generator, part: str) -> list[Case]:
    """Two cases of 2-3 trees each: a random float tree and copies of it with other values."""
    cases: list[Case] = []
    for i in range(2):
        tree = _float_tree(rng)
        k = int(rng.integers(2, 4))
        trees = [tree] + [_like(rng, tree) for _ in range(k - 1)]
        label = f"{k} copies of random tree {i + 1}, {describe(tree, 90)}"
        cases.append(Case((trees,), label=label, part=part))
    return cases


def _flat_leaves_hint(mine: Any, reference_tree: Any, name: str) -> Mistake | None:
    """The mistake when ``mine`` is a flat list of leaves, not a tree shaped like
    ``reference_tree``."""
    n = len(jax.tree.leaves(reference_tree))
    if (
        isinstance(mine, (list, tuple))
        and len(mine) == n
        and not isinstance(reference_tree, type(mine))
    ):
        return Mistake(
            f"returned a flat {type(mine).__name__} of {n} leaves, where a tree shaped like "
            f"`{name}` was expected.",
            "`jax.tree.map` rebuilds the containers of its first tree around the results, so what "
            "it returns keeps the structure; a loop over `jax.tree.leaves` keeps only the leaves.",
            f"Map over the trees with `jax.tree.map` instead of looping over their leaves: "
            f"`{name}` goes first, and the result comes back shaped like it.",
            reread=ONE_TREE,
        )
    return None


def _one_per_input(mine: Any, theirs: Any, trees: list[Any]) -> bool:
    """Whether ``mine`` is a list of one result per input tree, where one tree was due."""
    return isinstance(mine, list) and len(mine) == len(trees) and not isinstance(theirs, list)


def _one_tree_per_input(k: int) -> Mistake:
    """The mistake of returning one tree per input tree, where one tree was due."""
    return Mistake(
        f"returned a list of {k} trees, one per input, where one tree shaped like `trees[0]` was "
        "expected.",
        "Given several trees, `jax.tree.map` calls its function once per leaf position, with one "
        "leaf from each tree, and returns a single tree: the trees must be separate arguments, "
        "not one list.",
        "Unpack the list into `jax.tree.map`'s arguments, `jax.tree.map(f, *trees)`, and write `f` "
        "to take any number of leaves, `*leaves`.",
        reread=SGD_UPDATE,
    )


_judge_tree = tree_judge()


def _tree_answer(name: str, explain: Callable[[str, Any, Any, Case], str | Mistake]) -> Judge:
    """A judge for an answer that is a tree (a :func:`call_tree` record).

    A bare ``None`` is a missing ``return``; otherwise the tree judge decides, and
    ``explain(problem, mine, theirs, case)`` turns what it found into the hint (the containers of
    ``mine`` and ``theirs`` rebuilt).
    """

    def judge(got: Any, expected: Any, case: Case) -> str | Mistake | None:
        missing = missing_return(got, expected, name)
        if missing:
            return missing
        problem = _judge_tree(got, expected, case)
        if problem is None:
            return None
        return explain(problem, rebuild_tree(got), rebuild_tree(expected), case)

    return judge


# --- 02.sgd_step -------------------------------------------------------------------------------


def _sgd_step(params: Any, grads: Any, lr: Any) -> Any:
    rate = as_numpy(lr)
    return jax.tree.map(lambda p, g: as_numpy(p) - rate * as_numpy(g), params, grads)


def _sgd_cases(rng: np.random.Generator) -> list[Case]:
    m, n = 2, 3
    trees = [
        (
            {"w": random_array(rng, m, n), "b": random_array(rng, n)},
            0.1,
            "the brief's layer, a dict with `w` and `b`",
        ),
        (
            [
                {"w": jax.device_put(random_array(rng, m, n)), "b": None},
                {"w": random_array(rng, m, n), "b": jax.device_put(random_array(rng, n))},
            ],
            0.01,
            "a list of layers, the first without a bias (`None`)",
        ),
        (
            (
                Layer(w=random_array(rng, m, n), b=None),
                collections.OrderedDict(scale=random_array(rng), shift=random_array(rng, n)),
            ),
            0.5,
            "a namedtuple with a `None` field and an `OrderedDict`",
        ),
        (
            {
                "alpha": round(float(rng.normal()), 3),
                "emb": Point(x=random_array(rng, m, n), y=None),
            },
            0.25,
            "a Python float leaf",
        ),
    ]
    parts = [
        "dicts and lists with None",
        "dicts and lists with None",
        "namedtuples, OrderedDicts and floats",
        "namedtuples, OrderedDicts and floats",
    ]
    cases = [
        Case((params, _like(rng, params), lr), label=label, part=part)
        for (params, lr, label), part in zip(trees, parts, strict=True)
    ]
    for i in range(2):
        params = _float_tree(rng)
        lr = float(rng.choice([0.1, 0.03, 0.2]))
        cases.append(
            Case(
                (params, _like(rng, params), lr),
                label=f"random tree {i + 1}, {describe(params, 100)}",
                part="random trees",
            )
        )
    return cases


_STEP_FORBIDDEN = (  # the course's optimizers and the tree arithmetic an SGD step is made of
    "sgd",
    "momentum",
    "adam",
    "tree_add_scale",
    "tree_sub",
    "tree_scale",
    "tree_add",
)


def _sgd_stand_in(params: Any, grads: Any, lr: Any) -> Any:
    """What an answer calling ``sgd_step`` gets (JAX, so that it works under jit)."""
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


_NEW_PARAMS = (
    "`sgd_step` returns the parameters after the step, each leaf `p` moved by `-lr * g`, not the "
    "step itself."
)


def _explain_sgd(problem: str, mine: Any, theirs: Any, case: Case) -> str | Mistake:
    params, grads, lr = case.args
    if structure_found(problem):
        return _flat_leaves_hint(mine, params, "params") or problem
    mistake = first_mistake(
        mine,
        [
            Variant(
                mistake=Mistake(
                    "It looks like you added the step: your leaves are `p + lr * g`.",
                    "The gradient points the way the loss grows fastest, so gradient descent "
                    "moves each parameter against it; adding it climbs the loss.",
                    "Subtract the step instead of adding it: each new leaf is `p - lr * g`.",
                ),
                build=lambda: jax.tree.map(lambda p, g: p + lr * g, params, grads),
            ),
            Variant(
                mistake=Mistake(
                    "It looks like the learning rate is missing: each leaf moved by the whole "
                    "gradient, `p - g`.",
                    "The gradient gives the direction and the steepness; the learning rate sets "
                    "how far one step goes along it.",
                    "Scale each gradient leaf by `lr` before subtracting it from its parameter "
                    "leaf.",
                ),
                build=lambda: jax.tree.map(lambda p, g: p - g, params, grads),
            ),
            Variant(
                mistake=Mistake(
                    "It looks like you returned `params` unchanged: no leaf moved.",
                    "An SGD step moves every parameter leaf against the gradient leaf at the same "
                    "place.",
                    "Map over `params` and `grads` together, `jax.tree.map(f, params, grads)`, so "
                    "that `f` receives each parameter leaf with its gradient leaf.",
                ),
                build=lambda: params,
            ),
            Variant(
                mistake=Mistake(
                    "It looks like you returned the step `-lr * g`, not the new parameters.",
                    _NEW_PARAMS,
                    "Add the step to the parameter leaf it belongs to: `f` receives `p` and `g`, "
                    "and returns `p - lr * g`.",
                ),
                build=lambda: jax.tree.map(lambda g: -lr * g, grads),
            ),
            Variant(
                mistake=Mistake(
                    "It looks like you returned `lr * g`, the size of the step, not the new "
                    "parameters.",
                    _NEW_PARAMS,
                    "Subtract `lr * g` from the parameter leaf it belongs to: `f` receives `p` "
                    "and `g`, and returns `p - lr * g`.",
                ),
                build=lambda: jax.tree.map(lambda g: lr * g, grads),
            ),
            Variant(
                mistake=Mistake(
                    "It looks like the function's arguments are swapped: your leaves are "
                    "`g - lr * p`, the gradient moved by the parameters.",
                    "`jax.tree.map` hands its function one leaf of each tree in the order the "
                    "trees come after it: with `params` first, the first argument is the parameter "
                    "leaf.",
                    "Name the function's arguments in the order of the trees: "
                    "`lambda p, g: p - lr * g`, with `params, grads`.",
                ),
                build=lambda: jax.tree.map(lambda p, g: g - lr * p, params, grads),
            ),
        ],
    )
    return lead(f"{problem} ", mistake) or problem


SGD_STEP = Exercise(
    id="02.sgd_step",
    name="sgd_step",
    title="One SGD step over a whole tree",
    points=2,
    cases=_sgd_cases,
    reference=_sgd_step,
    probe=call_tree,
    judge=_tree_answer("sgd_step", _explain_sgd),
    hints=(
        (
            "The update happens leaf by leaf: each parameter leaf moves against the gradient leaf "
            "at the same place, and the result has the structure of `params`."
        ),
        (
            "Give `jax.tree.map` a function of two leaves, `p` and `g`, that returns the moved "
            "parameter, then `params` and `grads` as the trees to walk together; `None` subtrees "
            "stay `None` by themselves."
        ),
    ),
    reread=SGD_UPDATE,
    forbidden=_STEP_FORBIDDEN,
    stand_in=_sgd_stand_in,
    mistakes=(
        "adds the step instead of subtracting it",
        "returns a flat list of leaves",
        "leaves out the learning rate",
        "returns the step `-lr * g` instead of the new parameters",
        "forgets `return`",
        "swaps the function's arguments, moving the gradient by the parameters",
    ),
)


# --- 02.average_trees --------------------------------------------------------------------------


def _average_trees(trees: list[Any]) -> Any:
    return jax.tree.map(lambda *leaves: sum(map(as_numpy, leaves)) / len(leaves), *trees)


def _average_cases(rng: np.random.Generator) -> list[Case]:
    first = {
        "w": random_array(rng, 2, 3),
        "b": None,
        "layers": [random_array(rng), (jax.device_put(random_array(rng, 3)),)],
    }
    ordered = collections.OrderedDict(
        z=Layer(w=random_array(rng, 2, 3), b=None), a=[random_array(rng)]
    )
    # The single tree is its own mean: it shares a part with three dicts, which returning trees[0]
    # gets wrong.
    dicts, named = "dicts and lists with None", "namedtuples and OrderedDicts"
    cases = [
        Case(
            ([first, _like(rng, first), _like(rng, first)],),
            label="three dicts with a `None` entry",
            part=dicts,
        ),
        Case(
            ([ordered, _like(rng, ordered)],),
            label="two `OrderedDict`s holding a namedtuple",
            part=named,
        ),
        Case(
            ([(random_array(rng, 3), [None, random_array(rng, 2, 3)])],),
            label="a list holding a single tree",
            part=dicts,
        ),
        Case(
            ([Point(x=random_array(rng), y=random_array(rng, 3)) for _ in range(4)],),
            label="four namedtuples of 0-d and 1-d arrays",
            part=named,
        ),
    ]
    return cases + _copies_of_random_trees(rng, part="random trees")


_EVERY_TREE = Steps(
    idea="Every tree of the list counts, equally, in the mean: each leaf of the result depends "
    "on the matching leaf of every tree.",
    fix="Pass all the trees to `jax.tree.map`, unpacked with `*trees`, so that its function "
    "receives one leaf from each.",
    reread=SGD_UPDATE,
)
"""The steps of a mean that misses trees of the list."""


def _explain_average(problem: str, mine: Any, theirs: Any, case: Case) -> str | Mistake:
    (trees,) = case.args
    k = len(trees)
    if structure_found(problem):
        return _one_tree_per_input(k) if _one_per_input(mine, theirs, trees) else problem
    if _shape_collapsed(mine, theirs):
        return Mistake(
            f"{problem} The entries inside each leaf were averaged into one number.",
            "The mean runs across the trees, leaf position by leaf position: each leaf of the "
            "result keeps the shape of the leaves it averages.",
            "Add the matching leaves of all the trees and divide by their number, with no "
            "`jnp.mean` inside a leaf.",
            reread=SGD_UPDATE,
        )
    mistake = first_mistake(
        mine,
        [
            Variant(
                mistake=Mistake(
                    f"It looks like you returned the sum of the {k} trees.",
                    "A mean is a sum divided by the number of values added up, here the number "
                    "of trees.",
                    "Divide the sum of the matching leaves by `len(trees)`, or by the number of "
                    "leaves `f` receives.",
                ),
                build=lambda: jax.tree.map(lambda *xs: sum(xs), *trees),
            ),
            Variant(
                mistake=_EVERY_TREE.mistake("It looks like you returned the first tree unchanged."),
                build=lambda: trees[0],
            ),
            Variant(
                mistake=_EVERY_TREE.mistake("It looks like you returned the last tree unchanged."),
                build=lambda: trees[-1],
            ),
            Variant(
                mistake=Mistake(
                    "It looks like a running average of pairs: each tree was averaged with the "
                    "result so far, so the last tree weighs 1/2 and the first "
                    f"1/{2 ** (k - 1)}.",
                    f"The mean of {k} trees weighs each of them alike, 1/{k}; averaging two at "
                    "a time weighs the later trees more.",
                    "Add up the matching leaves of all the trees at once, `jax.tree.map` with "
                    "`*trees`, and divide that sum by `len(trees)`.",
                ),
                build=lambda: functools.reduce(
                    lambda mean, tree: jax.tree.map(lambda a, b: (a + b) / 2, mean, tree), trees
                ),
            ),
        ],
    )
    return lead(f"{problem} ", mistake) or problem


def _shape_collapsed(mine: Any, theirs: Any) -> bool:
    return any(
        np.shape(a) == () and np.shape(b) != ()
        for a, b in zip(jax.tree.leaves(mine), jax.tree.leaves(theirs), strict=True)
    )


AVERAGE_TREES = Exercise(
    id="02.average_trees",
    name="average_trees",
    title="The leaf-by-leaf mean of several trees",
    points=2,
    cases=_average_cases,
    reference=_average_trees,
    probe=call_tree,
    judge=_tree_answer("average_trees", _explain_average),
    hints=(
        (
            "`jax.tree.map` takes any number of trees and hands the function one leaf from each, "
            "at the same place."
        ),
        (
            "Unpack the list into `jax.tree.map`'s arguments, `*trees`, so that each tree is its "
            "own argument, and give it a function of any number of leaves, `*leaves`, that "
            "returns their sum over their count."
        ),
    ),
    reread=SGD_UPDATE,
    forbidden=("tree_add", "tree_scale", "tree_add_scale", "tree_sum"),
    mistakes=(
        "sums the trees instead of averaging them",
        "returns a list of scaled trees instead of one tree",
        "returns one of the trees instead of their mean",
        "averages the entries inside each leaf",
        "averages two trees at a time, a running average",
    ),
)


# --- 02.make_sgd_step --------------------------------------------------------------------------


def _model_loss(params: dict[str, Any], batch: tuple[Any, Any]) -> jax.Array:
    """Mean squared error of a two-layer tanh network times a learned scale.

    ``params`` mixes containers on purpose: ``{"layers": [{"w", "b": None}, Layer(w, b)], "scale":
    ...}``."""
    x, y = batch
    first, second = params["layers"]
    hidden = jnp.tanh(x @ first["w"])
    out = params["scale"] * (hidden @ second.w + second.b[None, :])
    return jnp.mean((out - y) ** 2)


def _make_sgd_step(loss_fn: Callable[[Any, Any], jax.Array]) -> Callable[..., Any]:
    @jax.jit
    def step(params: Any, batch: Any, lr: Any) -> tuple[Any, jax.Array]:
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss

    return step


def _train_cases(rng: np.random.Generator) -> list[Case]:
    # One case: each new jitted step costs a compilation of its own (a few tenths of a second).
    n_in, hidden, n_out, batch_size = 2, 3, 2, 8
    params = {
        "layers": [
            {"w": jax.device_put(random_array(rng, n_in, hidden, scale=0.5)), "b": None},
            Layer(
                w=jax.device_put(random_array(rng, hidden, n_out, scale=0.5)),
                b=jax.device_put(random_array(rng, n_out, scale=0.1)),
            ),
        ],
        "scale": jax.device_put(np.float32(1.0)),
    }
    batches = [
        (random_array(rng, batch_size, n_in), random_array(rng, batch_size, n_out))
        for _ in range(3)
    ]
    lrs = [float(lr) for lr in rng.choice([0.2, 0.1, 0.05, 0.02], size=3, replace=False)]
    shown = (
        f"3 steps with lr = {', '.join(map(str, lrs))} on batches of {batch_size} examples; "
        f"loss_fn = mean squared error of a two-layer tanh network, params {describe(params, 120)}"
    )
    label = "a model whose layers are a dict with a `None` bias and a namedtuple"
    return [Case((params, batches, lrs), label=label, shown=shown)]


# Calls made while the step runs are the learner's too: the whole probe is watched (see _guard).


def _probe_train(fn: Callable[..., Any], case: Case) -> Any:
    params, batches, lrs = case.args
    step = fn(_model_loss)
    report: dict[str, Any] = {
        "jitted": hasattr(step, "lower") and hasattr(step, "trace"),
        "losses": [],
        "output": "",
    }
    if not callable(step):
        return {
            **report,
            "output": (
                f"`make_sgd_step` returned {describe(step, 60)}, where a function was expected"
            ),
        }
    state: dict[str, Any] = {"params": params}

    def run() -> Any:
        for batch, lr in zip(batches, lrs, strict=True):
            out = step(state["params"], batch, lr)
            if not (isinstance(out, tuple) and len(out) == 2):
                report["output"] = (
                    f"`step` returned {describe(out, 80)}, where a pair `(new_params, loss)` was "
                    "expected"
                )
                return None
            state["params"], loss = out
            report["losses"].append(np.asarray(loss, dtype=np.float32))
        return state["params"]

    report.update(compile_report(run))
    report["params"] = tree_plain(state["params"]) if not report["output"] else None
    if not report["output"] and report["compiles"] > 1:
        # What makes a new cache key, measured: the first step's call, the same call again, then
        # with the second learning rate (never read from JAX's explanation of the misses).
        report["repeats"] = repeat_compiles(
            lambda rate: step(params, batches[0], rate), lrs[0], lrs[1]
        )
    return report


def _judge_output(output: str) -> str | Mistake:
    """What the probe found wrong with the step's output, before any value was compared."""
    if output.startswith("`make_sgd_step` returned"):
        return Mistake(
            output + ".",
            "`make_sgd_step` builds a function: it defines the training step around `loss_fn` and "
            "hands that step back, and the caller then calls it once per batch.",
            "Define `step(params, batch, lr)` inside `make_sgd_step`, jit it, and end "
            "`make_sgd_step` with `return step`.",
        )
    if output.startswith("`step` returned"):
        return Mistake(
            output + ".",
            "A training step reports how training goes: it returns the loss it measured "
            "alongside the parameters it produced.",
            "`jax.value_and_grad(loss_fn)(params, batch)` gives the loss and the gradients "
            "together: return the new parameters and that loss as a tuple.",
            reread=TRAINING,
        )
    return output + "."


def _judge_train(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if got["output"]:
        return _judge_output(got["output"])
    for i, (mine, want) in enumerate(zip(got["losses"], expected["losses"], strict=True)):
        # The loss after i updates has gone through i + 1 passes of the network, each with its
        # approximate tanh and division on a TPU: their errors add up.
        if not np.isclose(mine, want, *float_tolerance(amplification=i + 1)):
            if i == 0:
                return Mistake(
                    f"the first step returned the loss {round(float(mine), 5)}, expected "
                    f"{round(float(want), 5)}, the loss at the params the step received, before "
                    "the update.",
                    "The loss a step reports belongs to the parameters it was given: it is the "
                    "value whose gradient the step follows, measured before the update.",
                    "Take the loss from `jax.value_and_grad(loss_fn)(params, batch)`, which gives "
                    "it with the gradients, rather than calling `loss_fn` on the new parameters.",
                    reread=TRAINING,
                )
            text = (
                f"after {i} step{'s' if i > 1 else ''} the loss is {round(float(mine), 5)}, "
                f"expected {round(float(want), 5)}, so the update is wrong"
            )
            if float(got["losses"][i]) > float(got["losses"][0]):
                return Mistake(
                    text + ": the loss went up.",
                    "The gradient points the way the loss grows fastest, so a descent step moves "
                    "the parameters the other way.",
                    "Subtract `lr` times each gradient leaf from its parameter leaf, as `sgd_step` "
                    "does.",
                    reread=SGD_UPDATE,
                )
            return text + "."
    problem = _judge_tree(got["params"], expected["params"], case)
    if problem is not None:
        return "after three steps, " + problem
    if not got["jitted"]:
        return Mistake(
            "the values are right, but the function `make_sgd_step` returns is not jitted.",
            "Jitting the whole step compiles the gradient and the update into one program; "
            "jitting only a part leaves the rest to run operation by operation, in Python, on "
            "every call.",
            "Put `@jax.jit` on `step` itself, or return `jax.jit(step)`, rather than jitting the "
            "gradient alone.",
            reread=TRAINING,
        )
    problem = judge_compiles(got, expected, case)
    _, _, lrs = case.args
    if problem is not None and recompile_cause(got.get("repeats", [])) == "value":
        each = (
            f", once for each of the {len(lrs)} learning rates"
            if got["compiles"] == len(lrs)
            else ""
        )
        return Mistake(
            problem.replace(
                ": see the cache-miss explanation below.",
                f"{each}: the same lr again compiled nothing, a new lr compiled anew, so lr's "
                "value is part of the cache key.",
                1,
            ),
            "A static argument is part of the key under which `jit` caches its compiled program, "
            "so each new value compiles again. A traced argument is data: one program serves "
            "every learning rate.",
            "Leave `lr` an ordinary, traced argument of the jitted step: drop it from "
            "`static_argnums` or `static_argnames`.",
            reread=TRAINING,
        )
    return problem


MAKE_SGD_STEP = Exercise(
    id="02.make_sgd_step",
    name="make_sgd_step",
    title="A jitted training step that compiles once",
    points=3,
    cases=_train_cases,
    reference=_make_sgd_step,
    probe=_probe_train,
    judge=_judge_train,
    hints=(
        (
            "One jitted function holds the gradient and the update together, and everything that "
            "changes from call to call (the params, the batch, the learning rate) is an ordinary "
            "argument of it, so one program serves every call."
        ),
        (
            "Inside `make_sgd_step` define `step(params, batch, lr)` with `@jax.jit` on it: "
            "`loss, grads = jax.value_and_grad(loss_fn)(params, batch)`, then the SGD map; "
            "`return (new_params, loss)`, and `return step`."
        ),
    ),
    reread=TRAINING,
    forbidden=_STEP_FORBIDDEN,
    uses=("02.sgd_step",),
    mistakes=(
        "does not jit the step",
        "makes the learning rate static, so each new rate compiles again",
        "climbs the loss instead of descending",
        "returns only the new parameters, not `(new_params, loss)`",
        "returns the loss after the update instead of before it",
    ),
)


# --- 02.global_norm ----------------------------------------------------------------------------


def _global_norm(tree: Any) -> float:
    return float(
        np.sqrt(
            sum(np.sum(np.square(np.asarray(leaf, np.float64))) for leaf in jax.tree.leaves(tree))
        )
    )


def _norm_cases(rng: np.random.Generator) -> list[Case]:
    m, n = 2, 3
    trees = [
        (
            {"w": random_array(rng, m, n, scale=2.0), "b": random_array(rng, n, scale=2.0)},
            "a layer with `w` and `b`",
        ),
        (
            [
                jax.device_put(random_array(rng, n, scale=3.0)),
                None,
                {"z": None, "a": random_array(rng, m, n, scale=3.0)},
            ],
            "a list with `None` subtrees",
        ),
        (
            (Layer(w=rng.integers(-4, 5, size=(n,)).astype(np.int32), b=None), 2.5),
            "`int32` entries and a Python float",
        ),
        (
            collections.OrderedDict(only=np.array(-round(2 + rng.random(), 3), np.float32)),
            "a single 0-d array holding a negative number",
        ),
        ({"a": None, "b": [(), {}]}, "a tree with no leaves at all"),
    ]
    # A tree without leaves (norm 0) shares a part with trees that have some, so 0 earns nothing.
    parts = [
        "dicts and lists with None",
        "dicts and lists with None",
        "int32 entries, floats and 0-d arrays",
        "int32 entries, floats and 0-d arrays",
        "dicts and lists with None",
    ]
    cases = [
        Case((tree,), label=label, part=part)
        for (tree, label), part in zip(trees, parts, strict=True)
    ]
    for i in range(2):
        tree = _float_tree(rng)
        cases.append(
            Case((tree,), label=f"random tree {i + 1}, {describe(tree, 100)}", part="random trees")
        )
    layer = {"w": random_array(rng, m, n, scale=2.0), "b": random_array(rng, n, scale=2.0)}
    cases.append(
        Case((layer,), label="a layer, under `jax.jit`", info={"jit": True}, part="under jit")
    )
    return cases


def _global_norm_stand_in(tree: Any) -> jax.Array:
    """What an answer calling ``global_norm`` gets (JAX, so that it works under jit)."""
    squares = [
        jnp.sum(jnp.square(jnp.asarray(leaf, jnp.float32))) for leaf in jax.tree.leaves(tree)
    ]
    return jnp.sqrt(sum(squares, jnp.float32(0)))


def _probe_norm(fn: Callable[..., Any], case: Case) -> Any:
    """The norm, and for a case under jit the jitted norm too (``{"eager": ..., "jit": ...}``)."""
    eager = call_value(fn, case)
    if not case.info.get("jit"):
        return eager
    return {"eager": eager, "jit": _under_jit(call_value, fn, case)}


def _under_jit(record: Callable[..., Any], fn: Callable[..., Any], case: Case) -> Any:
    """``record(jax.jit(fn), case)``, or ``{"error": type}`` when ``fn`` fails under jit (the
    hint)."""
    jitted, error = attempt(lambda: record(jax.jit(fn), case))
    return jitted if error is None else {"error": type(error).__name__}


def _judge_norm_probe(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if not case.info.get("jit"):
        return _judge_norm(got, expected, case)
    problem = _judge_norm(got["eager"], expected["eager"], case)
    if problem is not None or got["jit"] is None:
        return problem
    if isinstance(got["jit"], dict):
        return Mistake(
            f"right without `jit`, but under `jax.jit` it raised `{got['jit'].get('error')}`, the "
            "error that `float()`, `.item()` or a NumPy function gives on a traced leaf.",
            "Inside `jax.jit` the leaves are tracers: they stand for arrays whose shape and dtype "
            "are known but whose numbers are not, so nothing can turn them into Python numbers. "
            "`clip_by_global_norm` calls `global_norm` under `jit` too.",
            "Compute with `jnp` functions only and return the `jnp` value as it is, without "
            "`float()` or `.item()`.",
            reread=TRAINING,
        )
    # The reference computes in NumPy, which cannot run under jit: the jitted answer must match its
    # eager result.
    return lead("under `jax.jit`, ", _judge_norm(got["jit"], expected["eager"], case))


def _number(x: Any) -> float | None:
    value = to_python(x)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_ROOT_OF_ALL = (
    "Add up the squares of every entry of every leaf, then take one square root of that total."
)


def _judge_norm(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    want = float(to_python(expected))
    value = _number(got)
    if value is None:
        if isinstance(got, (list, tuple, dict)) or (
            isinstance(got, np.ndarray) and got.shape != ()
        ):
            return Mistake(
                f"returned {describe(got, 80)}, one value per leaf or entry, where a single "
                "number was expected.",
                "The global norm is one number for the whole tree: all the entries of all the "
                "leaves are taken as one long vector.",
                "Reduce each leaf to one number, the sum of its squared entries, add those "
                "numbers over `jax.tree.leaves(tree)`, and take the square root at the end.",
            )
        return judge_number(got, expected, case)

    if np.isclose(value, want, rtol=JUDGE_RTOL, atol=JUDGE_ATOL):
        return None
    text = f"returned {round(value, 5)}, expected {round(want, 5)}"
    (tree,) = case.args
    leaves = [np.asarray(leaf, dtype=np.float64) for leaf in jax.tree.leaves(tree)]
    per_leaf = [float(np.sqrt(np.sum(leaf**2))) for leaf in leaves]
    variants = [
        Variant(
            mistake=Mistake(
                f"{text}: that is the sum of squares, the square of the expected norm.",
                "A norm is the square root of a sum of squares, so it grows like the entries do: "
                "doubling every entry doubles the norm.",
                "Take `jnp.sqrt` of your sum of squares.",
            ),
            build=lambda: want**2,
        ),
        Variant(
            mistake=Mistake(
                f"{text}: that is the sum of the leaves' norms.",
                "Norms do not add up: two leaves with norms `a` and `b` have the global norm "
                "`sqrt(a ** 2 + b ** 2)`, not `a + b`.",
                _ROOT_OF_ALL,
            ),
            build=lambda: sum(per_leaf),
        ),
        Variant(
            mistake=Mistake(
                f"{text}: that is the largest norm of a single leaf.",
                "Every leaf counts in the global norm, not only the largest one.",
                _ROOT_OF_ALL,
            ),
            build=lambda: max(per_leaf),
        ),
        Variant(
            mistake=Mistake(
                f"{text}: that is what squaring the sum of each leaf gives.",
                "Each entry is squared on its own before anything is added: squaring a sum lets "
                "positive and negative entries cancel.",
                "Square the entries first, `jnp.square(leaf)`, then sum them.",
            ),
            build=lambda: np.sqrt(sum(float(np.sum(leaf)) ** 2 for leaf in leaves)),
        ),
    ]
    return first_mistake(value, variants) or text + "."


GLOBAL_NORM = Exercise(
    id="02.global_norm",
    optional=True,
    name="global_norm",
    title="The global norm of a tree",
    points=1,
    cases=_norm_cases,
    reference=_global_norm,
    probe=_probe_norm,
    judge=_judge_norm_probe,
    hints=(
        (
            "The global norm treats the whole tree as one long vector: every entry of every leaf "
            "counts once. It must work under `jax.jit` too, so stay with `jnp` functions."
        ),
        (
            "Sum `jnp.sum(jnp.square(leaf))` over `jax.tree.leaves(tree)` (start from 0.0, for a "
            "tree without leaves) and take `jnp.sqrt` of the total."
        ),
    ),
    reread=WHOLE_TREE_OPERATIONS,
    forbidden=("tree_norm", "tree_vdot", "tree_sum", "FlatTree"),
    stand_in=_global_norm_stand_in,
    mistakes=(
        "returns the sum of squares, without the square root",
        "returns one norm per leaf",
        "adds up the leaves' own norms",
        "turns the norm into a Python `float`, which fails under `jit`",
        "squares each leaf's sum instead of each entry",
    ),
)


# --- 02.clip_by_global_norm --------------------------------------------------------------------


def _clip_by_global_norm(grads: Any, max_norm: Any) -> Any:
    norm = _global_norm(grads)
    scale = max_norm / norm if norm > max_norm else 1.0
    return jax.tree.map(lambda g: scaled(g, scale), grads)


def _clip_cases(rng: np.random.Generator) -> list[Case]:
    # Trees left alone (below max_norm, or zeros) share a part with trees that must be clipped, so
    # returning grads unchanged earns nothing.
    def case(
        tree: Any, ratio: float, label: str, jit: bool = False, part: str = "without jit"
    ) -> Case:
        norm = _global_norm(tree)
        max_norm = round(norm * ratio, 3) if norm else 1.0
        return Case((tree, max_norm), label=label, info={"norm": norm, "jit": jit}, part=part)

    m, n = 2, 3
    cases = [
        case(
            {"w": random_array(rng, m, n, scale=2.0), "b": random_array(rng, n, scale=2.0)},
            0.5,
            "a layer whose norm is twice `max_norm`, under `jax.jit`",
            jit=True,
            part="under jit",
        ),
        case(
            {"w": random_array(rng, m, n), "b": None},
            2.0,
            "a layer within `max_norm` (nothing to clip)",
        ),
        case(
            [
                Layer(w=jax.device_put(random_array(rng, n, scale=3.0)), b=None),
                (random_array(rng, scale=0.1),),
            ],
            0.8,
            "a list with a namedtuple, one large leaf and one small leaf",
        ),
        case(
            collections.OrderedDict(a=np.zeros((m, n), np.float32), b=None),
            0.5,
            "a tree of zeros (norm 0)",
        ),
    ]
    for i in range(2):
        tree = _float_tree(rng)
        ratio = float(rng.choice([0.3, 0.7, 1.5]))
        cases.append(case(tree, ratio, f"random tree {i + 1}, {describe(tree, 90)}"))
    return cases


def _probe_clip(fn: Callable[..., Any], case: Case) -> Any:
    eager = call_tree(fn, case)
    return {"eager": eager, "jit": _under_jit(call_tree, fn, case) if case.info["jit"] else None}


_ONE_FACTOR = (
    "Clipping by the global norm scales the whole tree by one factor, `max_norm / norm` when norm "
    "is above `max_norm`: the gradient keeps its direction, and its global norm becomes `max_norm`."
)


def _explain_clip(problem: str, mine: Any, theirs: Any, case: Case) -> str | Mistake:
    grads, max_norm = case.args
    if structure_found(problem):
        return _flat_leaves_hint(mine, grads, "grads") or problem
    norm = case.info["norm"]
    holds_nan = any(
        np.isnan(np.asarray(leaf, dtype=np.float64)).any() for leaf in jax.tree.leaves(mine)
    )
    if norm > 0 and holds_nan:
        return f"{problem} Your result holds `nan`."
    if norm == 0 and holds_nan:
        return Mistake(
            f"{problem} The global norm is 0 here, and dividing by it gives `nan`.",
            "A tree whose norm is at most `max_norm` comes back as it is, and a tree of zeros is "
            "one: dividing its zeros by its zero norm gives `0 / 0`, `nan`.",
            "Keep the division away from a zero norm: divide by `jnp.maximum(norm, 1e-12)`, or "
            "choose the factor 1 with `jnp.where` when `norm <= max_norm`.",
        )

    def per_leaf() -> Any:
        def clip(g: Any) -> Any:
            n = float(np.sqrt(np.sum(np.asarray(g, np.float64) ** 2)))
            return g * (max_norm / n) if n > max_norm else g

        return jax.tree.map(clip, grads)

    def without_sqrt() -> Any:
        squares = norm**2  # the sum of squares taken for the norm
        if not squares > max_norm:
            raise ValueError(
                "no clipping either way: the mistake cannot be told from 'nothing was clipped'"
            )
        return jax.tree.map(lambda g: g * (max_norm / squares), grads)

    mistake = first_mistake(
        mine,
        [
            Variant(
                mistake=Mistake(
                    "It looks like you clipped each leaf by its own norm.",
                    "The norm compared with `max_norm` is the global norm of the whole tree, and "
                    "every leaf is scaled by the same factor, so the gradient keeps its "
                    "direction.",
                    "Compute the global norm once, with your `global_norm`, and multiply every "
                    "leaf by the one factor it gives.",
                ),
                build=per_leaf,
            ),
            Variant(
                mistake=Mistake(
                    "It looks like you scaled even though the global norm is below `max_norm`.",
                    "Clipping only ever shrinks: a tree whose global norm is at most `max_norm` "
                    "comes back unchanged, with the factor 1.",
                    "Use the factor `jnp.minimum(1.0, max_norm / norm)`: 1 for a small tree, "
                    "`max_norm / norm` for a large one.",
                ),
                build=lambda: jax.tree.map(lambda g: g * (max_norm / norm), grads),
            ),
            Variant(
                mistake=Mistake(
                    "It looks like you scaled by `norm / max_norm`.",
                    "Scaling every leaf by `c` multiplies the global norm by `c`; after "
                    "clipping, the norm must be `max_norm`.",
                    "Turn the factor upside down: `max_norm / norm`.",
                ),
                build=lambda: jax.tree.map(lambda g: g * (norm / max_norm), grads),
            ),
            Variant(
                mistake=Mistake(
                    "It looks like you used the sum of squares as the norm.",
                    "The global norm is the square root of the sum of squares of every entry; "
                    "the sum itself is its square, and it is the norm that is compared with "
                    "`max_norm` and divides it.",
                    "Take the square root before comparing and dividing: your `global_norm` from "
                    "exercise 4 does it.",
                ),
                build=without_sqrt,
            ),
            Variant(
                mistake=Mistake(
                    "It looks like nothing was clipped: your result is `grads`, though its global "
                    "norm is above `max_norm`.",
                    _ONE_FACTOR,
                    "Multiply every leaf by `max_norm / norm` when norm is above `max_norm`; "
                    "`jnp.minimum(1.0, max_norm / norm)` gives the factor in both cases.",
                ),
                build=lambda: grads,
            ),
        ],
    )
    return lead(f"{problem} ", mistake) or problem


_judge_clipped = _tree_answer("clip_by_global_norm", _explain_clip)


def _judge_clip(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    problem = _judge_clipped(got["eager"], expected["eager"], case)
    if problem is not None:
        return problem
    if got["jit"] is None:
        return None
    if "error" in got["jit"]:
        return Mistake(
            f"right without `jit`, but under `jax.jit` it raised `{got['jit']['error']}`, the "
            "error a Python `if`, `min()` or `float()` gives on the traced norm.",
            "Inside `jax.jit` the norm is a tracer, a value without a number yet: Python cannot "
            "decide an `if` or a `min()` on it while the function is traced, so the choice has to "
            "happen inside the compiled program.",
            "Compute the factor with `jnp.minimum` or `jnp.where`, which choose inside the "
            "program, and multiply every leaf by it.",
            reread=TRAINING,
        )
    # The reference computes in NumPy, which cannot run under jit: the jitted answer must match its
    # eager result.
    return lead("under `jax.jit`, ", _judge_tree(got["jit"], expected["eager"], case))


CLIP_BY_GLOBAL_NORM = Exercise(
    id="02.clip_by_global_norm",
    optional=True,
    name="clip_by_global_norm",
    title="Clip gradients by their global norm",
    points=2,
    cases=_clip_cases,
    reference=_clip_by_global_norm,
    probe=_probe_clip,
    judge=_judge_clip,
    hints=(
        (
            "Clipping scales every leaf by one factor, computed once from the global norm of the "
            "whole tree; under `jax.jit` that factor must be chosen without a Python `if`."
        ),
        (
            "Take `norm` from your `global_norm`, then one factor, `jnp.minimum(1.0, max_norm / "
            "norm)`, with the division kept away from a zero norm (`jnp.maximum` or "
            "`jnp.where`), and multiply every leaf by it with `jax.tree.map`."
        ),
    ),
    reread=WHOLE_TREE_OPERATIONS,
    forbidden=("tree_norm", "tree_vdot", "tree_sum", "tree_scale", "FlatTree"),
    uses=("02.global_norm",),
    mistakes=(
        "clips each leaf by its own norm",
        "scales even when the global norm is below `max_norm`",
        "uses a Python `if` on a traced value, which fails under `jit`",
        "divides by a zero norm and gets `nan`",
        "uses the sum of squares as the norm",
        "scales by `norm / max_norm`, upside down",
        "returns `grads` without clipping them",
    ),
)


# --- 02.stack_trees ----------------------------------------------------------------------------


def _stack_trees(trees: list[Any]) -> Any:
    return jax.tree.map(lambda *leaves: np.stack([np.asarray(leaf) for leaf in leaves]), *trees)


def _stack_cases(rng: np.random.Generator) -> list[Case]:
    def ints(*shape: int) -> np.ndarray:
        return rng.integers(-9, 10, size=shape).astype(np.int32)

    layer = {"w": random_array(rng, 2, 3), "b": None, "steps": ints()}
    cases = [
        Case(
            ([layer, _like_any(rng, layer), _like_any(rng, layer)],),
            label="three dicts with a `None` entry and a 0-d `int32`",
            part="dicts and namedtuples",
        ),
        Case(
            ([Layer(w=jax.device_put(random_array(rng, 3)), b=[ints(3)]) for _ in range(2)],),
            label="two namedtuples holding a list",
            part="dicts and namedtuples",
        ),
        Case(
            ([collections.OrderedDict(z=random_array(rng, 2, 3), a=(None, random_array(rng)))],),
            label="a single `OrderedDict`",
            part="one tree, and random trees",
        ),
    ]
    return cases + _copies_of_random_trees(rng, part="one tree, and random trees")


def _like_any(rng: np.random.Generator, tree: Any) -> Any:
    """Like :func:`_like`, keeping integer leaves integer."""

    def fresh(leaf: Any) -> Any:
        if np.asarray(leaf).dtype.kind == "i":
            return rng.integers(-9, 10, size=np.shape(leaf)).astype(np.int32)
        return random_array(rng, *np.shape(leaf))

    return jax.tree.map(fresh, tree)


_NEW_AXIS = (
    "Stacking k arrays of one shape makes one array with a new first axis of length k, the "
    "axis that counts the trees: `result[i]` is the leaf of `trees[i]`."
)


def _explain_stack(problem: str, mine: Any, theirs: Any, case: Case) -> str | Mistake:
    (trees,) = case.args
    k = len(trees)
    if structure_found(problem):
        if _one_per_input(mine, theirs, trees):
            return _one_tree_per_input(k)
        try:
            pieces = jax.tree.structure(theirs).flatten_up_to(mine)  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
        except (ValueError, TypeError):
            return problem
        if pieces and all(isinstance(p, (list, tuple)) and len(p) == k for p in pieces):
            first = first_leaf_path(theirs)
            return Mistake(
                f"the leaf at `{first}` of your result, and every other, is a "
                f"{type(pieces[0]).__name__} of {k} arrays where one array was expected: that is "
                "a transpose.",
                _NEW_AXIS + " A list of the arrays is no array, and to JAX it is a node.",
                "Turn the leaves the function receives into one array with `jnp.stack`.",
            )
        return problem
    paths = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(theirs)]
    pairs = zip(paths, jax.tree.leaves(mine), jax.tree.leaves(theirs), strict=True)
    for where, a, b in pairs:
        shape_a, shape_b = np.shape(a), np.shape(b)
        if shape_a == shape_b:
            continue
        if (
            len(shape_a) == len(shape_b) - 1
            and shape_a[:1] == (shape_b[0] * shape_b[1],)
            and shape_a[1:] == shape_b[2:]
        ):
            return Mistake(
                f"the leaf at `{where}` has shape `{shape_a}`, expected `{shape_b}`: the arrays "
                "were joined along their existing first axis.",
                _NEW_AXIS + " Concatenating joins along an axis the arrays already have.",
                "Use `jnp.stack`, which adds the new axis, instead of `jnp.concatenate`.",
            )
        if sorted(shape_a) == sorted(shape_b):
            return Mistake(
                f"the leaf at `{where}` has shape `{shape_a}`, expected `{shape_b}`: the right "
                "size, with the axes in another order.",
                _NEW_AXIS,
                "Stack along axis 0, `jnp.stack`'s default, so that the new axis comes first.",
            )
        return problem
    return problem


STACK_TREES = Exercise(
    id="02.stack_trees",
    name="stack_trees",
    title="Stack a list of trees into one tree of arrays",
    points=2,
    cases=_stack_cases,
    reference=_stack_trees,
    probe=call_tree,
    judge=_tree_answer("stack_trees", _explain_stack),
    hints=(
        (
            "The result has the structure of one tree; each of its leaves gathers the matching "
            "leaves of all the trees along a new first axis."
        ),
        (
            "Unpack the list into `jax.tree.map`, `*trees`, and turn the leaves its function "
            "receives into one array with `jnp.stack`, which adds the new first axis: k leaves "
            "of shape `(3,)` become one of shape `(k, 3)`."
        ),
    ),
    reread=SGD_UPDATE,
    forbidden=("FlatTree",),
    mistakes=(
        "transposes the list instead of stacking it",
        "concatenates along an existing axis",
        "returns a list of trees",
        "stacks along the last axis instead of a new first one",
    ),
)


EXERCISES = (SGD_STEP, AVERAGE_TREES, MAKE_SGD_STEP, GLOBAL_NORM, CLIP_BY_GLOBAL_NORM, STACK_TREES)
