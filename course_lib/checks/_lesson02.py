"""Exercises of lesson 02, mapping over trees: SGD, several trees at once, norms, stacking."""

import collections
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ._kit import (
    Layer,
    Point,
    as_numpy,
    call_tree,
    call_value,
    compile_report,
    float_tree,
    judge_compiles,
    judge_number,
    matching_variant,
    missing_return,
    random_array,
    random_like,
    scaled,
    small_float_leaf,
    to_python,
    tree_judge,
)
from ._plain import describe, rebuild_tree, tree_plain
from ._spec import Case, Exercise, Judge

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


def _first_mistake(mine: Any, variants: list[tuple[str, Callable[[], Any]]]) -> str | None:
    """The message of the first typical wrong answer (built lazily) that ``mine`` matches."""
    return matching_variant(mine, variants, rtol=1e-4, atol=1e-5)


def _flat_leaves_hint(mine: Any, reference_tree: Any, name: str) -> str | None:
    """A hint when ``mine`` is a flat list of leaves, not a tree shaped like ``reference_tree``."""
    n = len(jax.tree.leaves(reference_tree))
    if (
        isinstance(mine, (list, tuple))
        and len(mine) == n
        and not isinstance(reference_tree, type(mine))
    ):
        return (
            f"returned a flat {type(mine).__name__} of {n} leaves; return a tree shaped "
            f"like {name}. jax.tree.map builds the containers for you."
        )
    return None


def _one_per_input(mine: Any, theirs: Any, trees: list[Any]) -> bool:
    """Whether ``mine`` is a list of one result per input tree, where one tree was due."""
    return isinstance(mine, list) and len(mine) == len(trees) and not isinstance(theirs, list)


_tree_judge = tree_judge(rtol=1e-5, atol=1e-6)


def _tree_answer(name: str, explain: Callable[[str, Any, Any, Case], str]) -> Judge:
    """A judge for an answer that is a tree (a :func:`call_tree` record).

    A bare ``None`` is a missing ``return``; otherwise the tree judge decides, and
    ``explain(problem, mine, theirs, case)`` turns what it found into the hint (the containers of
    ``mine`` and ``theirs`` rebuilt).
    """

    def judge(got: Any, expected: Any, case: Case) -> str | None:
        missing = missing_return(got, expected, name)
        if missing:
            return missing
        problem = _tree_judge(got, expected, case)
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
            "the brief's layer, a dict with w and b",
        ),
        (
            [
                {"w": jax.device_put(random_array(rng, m, n)), "b": None},
                {"w": random_array(rng, m, n), "b": jax.device_put(random_array(rng, n))},
            ],
            0.01,
            "a list of layers, the first without a bias (None)",
        ),
        (
            (
                Layer(w=random_array(rng, m, n), b=None),
                collections.OrderedDict(scale=random_array(rng), shift=random_array(rng, n)),
            ),
            0.5,
            "a namedtuple with a None field and an OrderedDict",
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


def _sgd_stand_in(params: Any, grads: Any, lr: Any) -> Any:
    """What an answer calling ``sgd_step`` gets (JAX, so that it works under jit)."""
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def _explain_sgd(problem: str, mine: Any, theirs: Any, case: Case) -> str:
    params, grads, lr = case.args
    if problem.startswith("the structure"):
        return _flat_leaves_hint(mine, params, "params") or problem
    mistake = _first_mistake(
        mine,
        [
            (
                (
                    "you added the step: p + lr * g climbs the loss; gradient descent "
                    "subtracts, p - lr * g."
                ),
                lambda: jax.tree.map(lambda p, g: p + lr * g, params, grads),
            ),
            (
                "the learning rate is missing: each leaf moved by the whole gradient, p - g.",
                lambda: jax.tree.map(lambda p, g: p - g, params, grads),
            ),
            ("you returned params unchanged: the update must move every leaf.", lambda: params),
            (
                "you returned the step -lr * g, not the new parameters p - lr * g.",
                lambda: jax.tree.map(lambda g: -lr * g, grads),
            ),
            (
                "you returned lr * g: the new parameters are p - lr * g.",
                lambda: jax.tree.map(lambda g: lr * g, grads),
            ),
        ],
    )
    return f"{problem} It looks like {mistake}" if mistake else problem


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
        "Each parameter leaf moves against its own gradient leaf: p - lr * g.",
        (
            "jax.tree.map(f, params, grads) calls f with one leaf of params and the matching "
            "leaf of grads."
        ),
        "None subtrees need nothing from you: jax.tree.map keeps them as None in its result.",
    ),
    forbidden=("sgd", "momentum", "adam", "tree_add_scale", "tree_sub", "tree_scale", "tree_add"),
    stand_in=_sgd_stand_in,
    mistakes=(
        "adds the step instead of subtracting it",
        "returns a flat list of leaves",
        "leaves out the learning rate",
        "forgets `return`",
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
            label="three dicts with a None entry",
            part=dicts,
        ),
        Case(
            ([ordered, _like(rng, ordered)],),
            label="two OrderedDicts holding a namedtuple",
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


def _explain_average(problem: str, mine: Any, theirs: Any, case: Case) -> str:
    (trees,) = case.args
    k = len(trees)
    if problem.startswith("the structure"):
        if _one_per_input(mine, theirs, trees):
            return (
                f"returned a list of {k} trees, one per input: the answer is one tree "
                "shaped like trees[0]. "
                "Pass the trees to jax.tree.map as separate arguments, jax.tree.map(f, "
                "*trees), so that f receives one leaf from each tree."
            )
        return problem
    if _shape_collapsed(mine, theirs):
        return (
            f"{problem} Each leaf of the result keeps its shape: average the matching "
            "leaves across the trees, not the entries inside one leaf."
        )
    mistake = _first_mistake(
        mine,
        [
            (
                f"you returned the sum of the {k} trees: divide by len(trees).",
                lambda: jax.tree.map(lambda *xs: sum(xs), *trees),
            ),
            ("you returned the first tree: every tree of the list must count.", lambda: trees[0]),
            ("you returned the last tree: every tree of the list must count.", lambda: trees[-1]),
        ],
    )
    return f"{problem} It looks like {mistake}" if mistake else problem


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
        "jax.tree.map accepts any number of trees after the function: jax.tree.map(f, t1, t2, t3).",
        "With a list, unpack it: jax.tree.map(f, *trees); f then receives one leaf from each tree.",
        (
            "Write f to take any number of leaves, lambda *leaves: ..., and divide their sum "
            "by how many there are."
        ),
    ),
    forbidden=("tree_add", "tree_scale", "tree_add_scale", "tree_sum"),
    mistakes=(
        "sums the trees instead of averaging them",
        "returns a list of scaled trees instead of one tree",
        "averages the entries inside each leaf",
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
        "loss_fn = mean squared error of a two-layer tanh network, params "
        f"{describe(params, 120)}, 3 steps on batches of {batch_size} examples with lr = "
        f"{', '.join(map(str, lrs))}"
    )
    label = "a model whose layers are a dict with a None bias and a namedtuple"
    return [Case((params, batches, lrs), label=label, shown=shown)]


_STEP_FORBIDDEN = (
    "sgd",
    "momentum",
    "adam",
    "tree_add_scale",
    "tree_sub",
    "tree_scale",
    "tree_add",
)
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
        return {**report, "output": f"make_sgd_step returned {describe(step, 60)}, not a function"}
    state: dict[str, Any] = {"params": params}

    def run() -> Any:
        for batch, lr in zip(batches, lrs, strict=True):
            out = step(state["params"], batch, lr)
            if not (isinstance(out, tuple) and len(out) == 2):
                report["output"] = (
                    f"step returned {describe(out, 80)}; it must return a pair (new_params, loss)"
                )
                return None
            state["params"], loss = out
            report["losses"].append(np.asarray(loss, dtype=np.float32))
        return state["params"]

    report.update(compile_report(run))
    report["params"] = tree_plain(state["params"]) if not report["output"] else None
    return report


def _judge_train(got: Any, expected: Any, case: Case) -> str | None:
    if got["output"]:
        return got["output"] + "."
    for i, (mine, want) in enumerate(zip(got["losses"], expected["losses"], strict=True)):
        if not np.isclose(mine, want, rtol=1e-4, atol=1e-6):
            if i == 0:
                return (
                    f"the first step returned the loss {round(float(mine), 5)}, expected "
                    f"{round(float(want), 5)}: "
                    "return loss_fn(params, batch) for the params the step received, "
                    "before the update (jax.value_and_grad gives the loss and the "
                    "gradient together)."
                )
            going_up = float(got["losses"][i]) > float(got["losses"][0])
            return (
                f"after {i} step{'s' if i > 1 else ''} the loss is "
                f"{round(float(mine), 5)}, expected {round(float(want), 5)}, so the update is wrong"
                + (
                    ": the loss went up, so the step climbs the gradient; subtract lr * g."
                    if going_up
                    else "."
                )
            )
    problem = _tree_judge(got["params"], expected["params"], case)
    if problem is not None:
        return "after three steps, " + problem
    if not got["jitted"]:
        return (
            "the values are right, but the function make_sgd_step returns is not jitted: "
            "put @jax.jit on the whole step (gradient and update together), not only on a "
            "part of it."
        )
    return judge_compiles(got, expected, case)


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
            "Inside make_sgd_step, define step(params, batch, lr) and return it; @jax.jit "
            "goes on step itself."
        ),
        (
            "jax.value_and_grad(loss_fn)(params, batch) returns (loss, grads), and grads is "
            "shaped like params."
        ),
        "The learning rate is an ordinary argument of step: a new value is new data for "
        "the same program, so do not make it static.",
    ),
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
            "a layer with w and b",
        ),
        (
            [
                jax.device_put(random_array(rng, n, scale=3.0)),
                None,
                {"z": None, "a": random_array(rng, m, n, scale=3.0)},
            ],
            "a list with None subtrees",
        ),
        (
            (Layer(w=rng.integers(-4, 5, size=(n,)).astype(np.int32), b=None), 2.5),
            "int32 entries and a Python float",
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
        Case((layer,), label="a layer, under jax.jit", info={"jit": True}, part="under jit")
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
    try:
        jitted: Any = call_value(jax.jit(fn), case)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 (what fails under jit is the hint)
        jitted = {"error": type(error).__name__}
    return {"eager": eager, "jit": jitted}


def _judge_norm_probe(got: Any, expected: Any, case: Case) -> str | None:
    if not case.info.get("jit"):
        return _judge_norm(got, expected, case)
    problem = _judge_norm(got["eager"], expected["eager"], case)
    if problem is not None or got["jit"] is None:
        return problem
    if isinstance(got["jit"], dict):
        return (
            f"right without jit, but under jax.jit it raised {got['jit'].get('error')}. "
            "Inside jit the leaves are "
            "tracers: float(), .item() or NumPy functions cannot turn them into Python "
            "numbers. Keep to jnp functions and return the jnp value (clip_by_global_norm "
            "calls global_norm under jit)."
        )
    # The reference computes in NumPy, which cannot run under jit: the jitted answer must match its
    # eager result.
    problem = _judge_norm(got["jit"], expected["eager"], case)
    return None if problem is None else "under jax.jit, " + problem


def _number(x: Any) -> float | None:
    value = to_python(x)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _judge_norm(got: Any, expected: Any, case: Case) -> str | None:
    want = float(to_python(expected))
    value = _number(got)
    if value is None:
        if isinstance(got, (list, tuple, dict)) or (
            isinstance(got, np.ndarray) and got.shape != ()
        ):
            return (
                f"returned {describe(got, 80)}, one value per leaf or entry: the global "
                "norm is a single number for the whole tree."
            )
        return judge_number(got, expected, case)
    if np.isclose(value, want, rtol=1e-5, atol=1e-6):
        return None
    text = f"returned {round(value, 5)}, expected {round(want, 5)}"
    (tree,) = case.args
    leaves = [np.asarray(leaf, dtype=np.float64) for leaf in jax.tree.leaves(tree)]
    per_leaf = [float(np.sqrt(np.sum(leaf**2))) for leaf in leaves]
    if np.isclose(value, want**2, rtol=1e-4):
        return f"{text}: that is the sum of squares; the norm is its square root."
    if per_leaf and np.isclose(value, sum(per_leaf), rtol=1e-4):
        return (
            f"{text}: that is the sum of the leaves' norms. The global norm is the square "
            "root of the sum of the squares of every entry of every leaf."
        )
    if per_leaf and np.isclose(value, max(per_leaf), rtol=1e-4):
        return f"{text}: that is the largest norm of a single leaf; every leaf counts."
    if leaves and np.isclose(
        value, np.sqrt(sum(float(np.sum(leaf)) ** 2 for leaf in leaves)), rtol=1e-4
    ):
        return f"{text}: square each entry before adding, not the sum of a leaf."
    return text + "."


GLOBAL_NORM = Exercise(
    id="02.global_norm",
    name="global_norm",
    title="The global norm of a tree",
    points=1,
    cases=_norm_cases,
    reference=_global_norm,
    probe=_probe_norm,
    judge=_judge_norm_probe,
    hints=(
        (
            "Treat the whole tree as one long vector: square every entry of every leaf and "
            "add them all up."
        ),
        (
            "jax.tree.leaves gives the leaves; jnp.sum(jnp.square(leaf)) is one leaf's part "
            "(jax.tree.reduce works too)."
        ),
        "Finish with jnp.sqrt; a tree without leaves has norm 0.",
    ),
    forbidden=("tree_norm", "tree_vdot", "tree_sum", "FlatTree"),
    stand_in=_global_norm_stand_in,
    mistakes=(
        "returns the sum of squares, without the square root",
        "returns one norm per leaf",
        "adds up the leaves' own norms",
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
            "a layer whose norm is twice max_norm, under jax.jit",
            jit=True,
            part="under jit",
        ),
        case(
            {"w": random_array(rng, m, n), "b": None},
            2.0,
            "a layer whose norm is already below max_norm (nothing to clip)",
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
    eager = tree_plain(fn(*case.args))
    if not case.info["jit"]:
        return {"eager": eager, "jit": None}
    try:
        jitted: Any = tree_plain(jax.jit(fn)(*case.args))
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001 (what fails under jit is the hint)
        jitted = {"error": type(error).__name__}
    return {"eager": eager, "jit": jitted}


def _explain_clip(problem: str, mine: Any, theirs: Any, case: Case) -> str:
    grads, max_norm = case.args
    if problem.startswith("the structure"):
        return _flat_leaves_hint(mine, grads, "grads") or problem
    norm = case.info["norm"]
    if norm > 0 and any(
        np.isnan(np.asarray(leaf, dtype=np.float64)).any() for leaf in jax.tree.leaves(mine)
    ):
        return f"{problem} Your result holds nan."
    if norm == 0 and any(
        np.isnan(np.asarray(leaf, dtype=np.float64)).any() for leaf in jax.tree.leaves(mine)
    ):
        return (
            f"{problem} The norm is 0 here, and dividing by it gives nan: only divide when "
            "clipping is needed."
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

    mistake = _first_mistake(
        mine,
        [
            (
                "you clipped each leaf by its own norm; the norm to compare with max_norm "
                "is the global norm of the whole tree, and every leaf is scaled by the "
                "same factor.",
                per_leaf,
            ),
            (
                "you scaled even though the global norm is below max_norm: gradients that "
                "are small enough must come back unchanged.",
                lambda: jax.tree.map(lambda g: g * (max_norm / norm), grads),
            ),
            (
                "you scaled by norm / max_norm; the factor is max_norm / norm.",
                lambda: jax.tree.map(lambda g: g * (norm / max_norm), grads),
            ),
            (
                "you used the sum of squares as the norm: the global norm is its square root, "
                "sqrt(sum of every leaf's g ** 2), in the comparison and in the factor.",
                without_sqrt,
            ),
            (
                (
                    "nothing was clipped: when the global norm is above max_norm, scale every "
                    "leaf by max_norm / norm."
                ),
                lambda: grads,
            ),
        ],
    )
    return f"{problem} It looks like {mistake}" if mistake else problem


_judge_clipped = _tree_answer("clip_by_global_norm", _explain_clip)


def _judge_clip(got: Any, expected: Any, case: Case) -> str | None:
    problem = _judge_clipped(got["eager"], expected["eager"], case)
    if problem is not None:
        return problem
    if got["jit"] is None:
        return None
    if "error" in got["jit"]:
        return (
            f"right without jit, but under jax.jit it raised {got['jit']['error']}. Inside "
            "jit the norm is a "
            "tracer: a Python `if` or min() on it cannot decide; compute the factor with "
            "jnp.minimum or jnp.where."
        )
    # The reference computes in NumPy, which cannot run under jit: the jitted answer must match its
    # eager result.
    problem = _tree_judge(got["jit"], expected["eager"], case)
    return None if problem is None else "under jax.jit, " + problem


CLIP_BY_GLOBAL_NORM = Exercise(
    id="02.clip_by_global_norm",
    name="clip_by_global_norm",
    title="Clip gradients by their global norm",
    points=2,
    cases=_clip_cases,
    reference=_clip_by_global_norm,
    probe=_probe_clip,
    judge=_judge_clip,
    hints=(
        "First the global norm of the whole tree (exercise 4), then one factor for every leaf.",
        "The factor is max_norm / norm when norm > max_norm, and 1 otherwise; "
        "jnp.minimum(1.0, max_norm / norm) says both, but mind a norm of 0.",
        (
            "Under jax.jit the norm is a tracer: no Python `if` on it. jnp.where(cond, a, b) "
            "chooses without Python."
        ),
    ),
    forbidden=("tree_norm", "tree_vdot", "tree_sum", "tree_scale", "FlatTree"),
    uses=("02.global_norm",),
    mistakes=(
        "clips each leaf by its own norm",
        "scales even when the global norm is below `max_norm`",
        "uses a Python `if` on a traced value, which fails under `jit`",
        "divides by a zero norm and gets `nan`",
        "uses the sum of squares as the norm",
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
            label="three dicts with a None entry and a 0-d int32",
            part="dicts and namedtuples",
        ),
        Case(
            ([Layer(w=jax.device_put(random_array(rng, 3)), b=[ints(3)]) for _ in range(2)],),
            label="two namedtuples holding a list",
            part="dicts and namedtuples",
        ),
        Case(
            ([collections.OrderedDict(z=random_array(rng, 2, 3), a=(None, random_array(rng)))],),
            label="a single OrderedDict",
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


def _explain_stack(problem: str, mine: Any, theirs: Any, case: Case) -> str:
    (trees,) = case.args
    k = len(trees)
    if problem.startswith("the structure"):
        if _one_per_input(mine, theirs, trees):
            return (
                f"returned a list of {k} trees: the answer is one tree shaped like "
                "trees[0]. Unpack the list, jax.tree.map(f, *trees), so that f receives "
                "the matching leaves of all the trees."
            )
        try:
            pieces = jax.tree.structure(theirs).flatten_up_to(mine)  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
        except (ValueError, TypeError):
            return problem
        if pieces and all(isinstance(p, (list, tuple)) and len(p) == k for p in pieces):
            return (
                f"each leaf of your result is a {type(pieces[0]).__name__} of {k} arrays: "
                "that is a transpose. Stack them into one array with a new first axis (jnp.stack)."
            )
        return problem
    for a, b in zip(jax.tree.leaves(mine), jax.tree.leaves(theirs), strict=True):
        shape_a, shape_b = np.shape(a), np.shape(b)
        if shape_a == shape_b:
            continue
        if (
            len(shape_a) == len(shape_b) - 1
            and shape_a[:1] == (shape_b[0] * shape_b[1],)
            and shape_a[1:] == shape_b[2:]
        ):
            return (
                f"a leaf has shape {shape_a}, expected {shape_b}: jnp.concatenate joins "
                "along an existing axis; jnp.stack adds a new first axis of length len(trees)."
            )
        if sorted(shape_a) == sorted(shape_b):
            return (
                f"a leaf has shape {shape_a}, expected {shape_b}: stack along a new first axis "
                "(axis 0)."
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
            "The result has the structure of trees[0]; each of its leaves gathers the "
            "matching leaves of all the trees."
        ),
        (
            "jax.tree.map(f, *trees) hands f the matching leaves; jnp.stack turns a sequence "
            "of arrays into one array."
        ),
        (
            "jnp.stack adds a new first axis, so k arrays of shape (3,) become one of shape "
            "(k, 3); 0-d leaves become (k,)."
        ),
    ),
    forbidden=("FlatTree",),
    mistakes=(
        "transposes the list instead of stacking it",
        "concatenates along an existing axis",
        "returns a list of trees",
        "stacks along the last axis instead of a new first one",
    ),
)


EXERCISES = (SGD_STEP, AVERAGE_TREES, MAKE_SGD_STEP, GLOBAL_NORM, CLIP_BY_GLOBAL_NORM, STACK_TREES)
