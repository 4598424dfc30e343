"""Exercises of lesson 04, static fields: what is traced, what is configuration, what each costs.

Three exercises ask for a class. A class registers with JAX once, and a fresh class starts with an
empty compilation cache, so the learner writes a function that defines the class and returns it;
each case calls it for a class of its own. Probes clear JAX's caches before they count
compilations, so a count does not depend on what the process compiled before.
"""

import collections
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._leaves import children
from ._kit import (
    ACTIVATIONS,
    attempt,
    error_text,
    float_tolerance,
    jit_compile_report,
    judge_compiles_with_advice,
    leaf_text,
    random_f32,
    trees_close,
)
from ._plain import describe
from ._sections import (
    DATA_OR_CONFIGURATION,
    KEY_PATHS,
    MARKING_STATIC,
    NEW_STATIC_VALUE,
    PITFALL_1,
    PITFALL_6,
    PITFALL_7,
    PITFALL_8,
    PITFALL_24,
    PITFALL_25,
    STATIC_IS_A_CACHE_KEY,
    UNKNOWN_CLASS_IS_A_LEAF,
)
from ._spec import Case, Exercise, Mistake


def _forward_report(report: dict[str, Any], run: Callable[[], list[Any]]) -> dict[str, Any]:
    """``report`` with ``run()``'s outputs (a jitted call per layer or config) and compile count.

    When a call raises, the report holds the error instead.
    """
    counted, error = attempt(lambda: jit_compile_report(run))
    if error is not None:
        return {**report, "error": error_text(error, limit=300)}
    outputs, counts = counted
    return {**report, "outputs": [np.asarray(out) for out in outputs], **counts}


def _forward_problem(
    got: dict[str, Any], expected: dict[str, Any], case: Case, calling: str, advice: str
) -> str | None:
    """For a :func:`_forward_report`: ``calling``'s error, the first wrong output, or the compiles.

    ``advice`` says what compiling too often means here.
    """
    if got.get("error"):
        return f"{calling} raised {got['error']}"
    problem = _outputs_problem(got["outputs"], expected["outputs"], case.info["what"])
    if problem:
        return problem
    return judge_compiles_with_advice(
        got, expected, case, advice if got["compiles"] > expected["compiles"] else None
    )


def _same_output(mine: Any, theirs: Any) -> bool:
    """Whether two outputs of a layer's forward agree by the course's rule: float32 values of size
    1, computed with JAX's product on both sides."""
    return trees_close(mine, theirs, *float_tolerance(scale=1.0))


def _outputs_problem(got: list[Any], expected: list[Any], what: list[str]) -> str | None:
    for i, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
        if not isinstance(mine, np.ndarray) or mine.shape != theirs.shape:
            return (
                f"{what[i]} gave {describe(mine, 60)}, expected an array of shape {theirs.shape}."
            )
        if not _same_output(mine, theirs):
            return f"{what[i]} gave other values than expected."
    return None


# --- 04.dense --------------------------------------------------------------------------------


def _define_dense() -> type:
    @jax.tree_util.register_dataclass
    @dataclass
    class Dense:
        w: jax.Array
        b: jax.Array
        activation: str = field(default="tanh", metadata={"static": True})
        use_bias: bool = field(default=True, metadata={"static": True})

        def __call__(self, x: jax.Array) -> jax.Array:
            y = x @ self.w
            if self.use_bias:
                y = y + self.b
            return ACTIVATIONS[self.activation](y)

    return Dense


def _dense_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(2):
        d_in, d_out = (int(k) for k in rng.integers(2, 6, size=2))
        first, second = (str(a) for a in rng.choice(["relu", "identity"], size=2, replace=False))
        info = {
            "x": random_f32(rng, d_in),
            "weights": [(random_f32(rng, d_in, d_out), random_f32(rng, d_out)) for _ in range(2)],
            # (weights, activation, use_bias), None meaning "use the defaults"
            "layers": [
                (0, None, None),
                (1, None, None),
                (0, first, True),
                (0, first, False),
                (1, second, True),
                (1, "tanh", True),
            ],
        }
        what = [
            "Dense(w, b)",
            "Dense(w2, b2), new weights",
            f"Dense(w, b, activation={first!r})",
            f"Dense(w, b, activation={first!r}, use_bias=False)",
            f"Dense(w2, b2, activation={second!r})",
            "Dense(w2, b2, activation='tanh', use_bias=True)",
        ]
        info["what"] = what
        shown = f"x f32[{d_in}], w f32[{d_in},{d_out}], b f32[{d_out}]; in turn " + ", ".join(what)
        cases.append(
            Case((), label=f"six Dense layers of shape ({d_in}, {d_out})", info=info, shown=shown)
        )
    return cases


def _dense_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any] | str | None:
    cls = fn()
    if not isinstance(cls, type):
        return _not_a_class(cls)
    info = case.info
    layers = []
    for index, activation, use_bias in info["layers"]:
        w, b = info["weights"][index]
        if activation is None:
            layers.append(cls(w=w, b=b))
        else:
            layers.append(cls(w=w, b=b, activation=activation, use_bias=use_bias))
    report: dict[str, Any] = {"leaves": [leaf_text(leaf) for leaf in jax.tree.leaves(layers[0])]}
    forward = jax.jit(lambda layer, x: layer(x))
    x = info["x"]
    return _forward_report(report, lambda: [forward(layer, x) for layer in layers])


def _not_a_class(value: Any) -> str | None:
    """What a probe records when ``define_...()`` returned ``value``, not a class: its type, as
    ``"returned an instance of Dense, not a class"`` (``None`` stays ``None``: the framework then
    asks about a missing ``return``).

    >>> _not_a_class(3), _not_a_class(None)
    ('returned an int, not a class', None)
    """
    if value is None:
        return None
    kind = type(value).__name__
    if type(value).__module__ != "builtins":
        return f"returned an instance of {kind}, not a class"
    return f"returned {'an' if kind[0] in 'aeiou' else 'a'} {kind}, not a class"


def _returned_instead(define: str, got: str, name: str) -> Mistake:
    """The mistake of a ``define_...()`` that returned something else than a class (``got``, from
    :func:`_not_a_class`)."""
    return Mistake(
        f"`{define}()` {got}.",
        f"`{define}` is a factory: it defines the class and hands the class itself back. The check "
        "calls it for a fresh class, with an empty compilation cache, then makes its own "
        "instances with it.",
        f"End `{define}` with `return {name}`, the class object, not an instance `{name}(...)`.",
    )


def _leaves_problem(
    got: list[str], expected: list[str], names: dict[str, str], default: bool
) -> str | Mistake | None:
    """What is wrong when the leaves are not the expected ones (``names``: a leaf's text to its
    field; ``default``: whether the fields that hold configuration have a default value)."""
    if got == expected:
        return None
    if len(got) == 1 and got[0].startswith("<"):
        return Mistake(
            f"`jax.tree.leaves(layer)` is `[layer]`: JAX sees a {got[0][1:-1]} as one opaque leaf.",
            "JAX looks inside only the classes in its registry; an object of any other class is "
            "a single leaf, so none of its fields can be traced or static on its own.",
            "Register the class: put `@jax.tree_util.register_dataclass` above `@dataclass`, so "
            "that its fields become children unless marked static.",
            UNKNOWN_CLASS_IS_A_LEAF,
        )
    declare = (
        "`field(default=..., metadata={'static': True})`"
        if default
        else "`field(metadata={'static': True})`"
    )
    leaking = [name for text, name in names.items() if text in got]
    them = "them" if len(leaking) > 1 else "it"
    fix = (
        f"Declare {' and '.join(f'`{name}`' for name in leaking)} with {declare}; "
        f"`register_dataclass` then keeps {them} out of the leaves."
    )
    for text, name in names.items():
        if text in got and text.startswith("'"):
            return Mistake(
                f"{text} is a leaf, so the field `{name}` is traced, and `jit` cannot trace a "
                "string: it fails with a `TypeError` before tracing starts.",
                f"`{name}` is configuration: Python looks a function up by its value while "
                "tracing. Configuration must be static: kept in the treedef, out of the leaves, "
                "and part of the key of the compiled program.",
                fix,
                PITFALL_24,
            )
        if text in got:
            return Mistake(
                f"{text} is a leaf, so the field `{name}` is traced: under `jit` it becomes a "
                "tracer, and Python's `if` or a slice cannot use a tracer.",
                f"`{name}` is configuration: Python needs its value while tracing, to choose a "
                "branch or to slice, and a tracer has no value yet, only a shape and a dtype. "
                "Configuration must be static.",
                fix,
                PITFALL_25,
            )
    arrays = [t for t in expected if t not in got]
    if arrays and len(got) < len(expected):
        return Mistake(
            f"the leaves are {got}, expected {expected}: an array field is static.",
            "Arrays are data, never static metadata (Pitfall 8): JAX compares metadata with `==`, "
            "which fails on an array of several elements, and a static array would make every "
            "new array a new compilation.",
            "Leave the array fields ordinary fields, without static metadata: they become traced "
            "leaves.",
            PITFALL_8,
        )
    return f"the leaves are {got}, expected {expected} (in the order the fields are declared)."


def _judge_dense(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if isinstance(got, str):
        return _returned_instead("define_dense", got, "Dense")
    names = {
        "'tanh'": "activation",
        "'relu'": "activation",
        "'identity'": "activation",
        "True": "use_bias",
        "False": "use_bias",
    }
    problem = _leaves_problem(got["leaves"], expected["leaves"], names, default=True)
    if problem:
        return problem
    if not got.get("error"):
        problem = _bias_problem(got["outputs"], expected["outputs"], case)
        if problem:
            return problem
    advice = (
        "Only a new activation or a new `use_bias` should compile again; new weights, and a "
        "configuration seen before, reuse a compiled program."
    )
    return _forward_problem(got, expected, case, "calling the jitted forward", advice)


def _bias_problem(outputs: list[Any], want: list[Any], case: Case) -> Mistake | None:
    """The mistake when use_bias=False kept the bias, or when the default use_bias left it out."""
    what = case.info["what"]
    if (
        len(outputs) > 3
        and _same_output(outputs[3], want[2])
        and not _same_output(want[3], want[2])
    ):
        return Mistake(
            f"{what[3]} gave the same result as with the bias: `b` was added all the same.",
            "`use_bias` is a switch Python reads while tracing: with `use_bias=False` the forward "
            "leaves `b` out altogether, whatever `b` holds. Being static, it may decide an `if`.",
            "In `__call__`, add `self.b` only inside `if self.use_bias:`.",
        )
    # Computed as the learner's layer computes it, with JAX's product, so that the two round alike
    # on every backend; and only a mistake where the bias changes the reference's output.
    without_bias = np.asarray(jnp.tanh(jnp.asarray(case.info["x"]) @ case.info["weights"][1][0]))
    if (
        np.shape(outputs[1]) == without_bias.shape
        and _same_output(outputs[1], without_bias)
        and not _same_output(want[1], without_bias)
    ):
        return Mistake(
            f"{what[1]}, built without options, left the bias out.",
            "A field's default is what a layer gets when the caller leaves the field out; the "
            "exercise asks for a layer that adds its bias and applies tanh unless told otherwise.",
            "Give `use_bias` the default `True` and `activation` the default `'tanh'` in their "
            "`field(...)` declarations.",
        )
    return None


DENSE = Exercise(
    id="04.dense",
    name="define_dense",
    title="A Dense layer: traced weights, static configuration",
    points=3,
    cases=_dense_cases,
    reference=_define_dense,
    probe=_dense_probe,
    judge=_judge_dense,
    hints=(
        (
            "Ask of each field whether the forward only computes with it (data, a leaf) or whether "
            "Python needs its value while tracing, for an `if` or a dictionary lookup "
            "(configuration, static)."
        ),
        (
            "A registered dataclass with fields `w`, `b`, `activation='tanh'`, `use_bias=True`, "
            "the last two static: `field(default=..., metadata={'static': True})`. `__call__` "
            "computes `x @ w`, adds `b` only when `use_bias`, then applies "
            "`ACTIVATIONS[activation]`."
        ),
    ),
    reread=DATA_OR_CONFIGURATION,
    mistakes=(
        "stores `activation` as a leaf, and `jit` cannot trace a string",
        "stores `use_bias` as a leaf, so it is traced",
        "leaves the class unregistered",
        "marks the weights static: arrays are never static (Pitfall 8)",
        "keeps a bias when `use_bias=False`",
    ),
)


# --- 04.fixed_mlp ----------------------------------------------------------------------------


def _define_mlp() -> type:
    @jax.tree_util.register_dataclass
    @dataclass
    class MLP:
        layers: list[dict[str, Any]]
        depth: int = field(metadata={"static": True})
        act: str = field(metadata={"static": True})
        scale: float = 1.0

        def __call__(self, x: jax.Array) -> jax.Array:
            for layer in self.layers[: self.depth]:
                x = x @ layer["w"]
                if layer["b"] is not None:
                    x = x + layer["b"]
                x = ACTIVATIONS[self.act](x)
            return self.scale * x

    return MLP


def _mlp_layers(rng: np.random.Generator, d: int, container: str) -> Any:
    def layer(i: int) -> dict[str, Any]:
        b = None if i == 1 else random_f32(rng, d)
        if container == "OrderedDict":
            return collections.OrderedDict(w=random_f32(rng, d, d), b=b)
        return {"w": random_f32(rng, d, d), "b": b}

    layers = [layer(i) for i in range(3)]
    return tuple(layers) if container == "OrderedDict" else layers


def _mlp_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for container in ("dict", "OrderedDict"):
        d = int(rng.integers(2, 5))
        first, second = (str(a) for a in rng.choice(list(ACTIVATIONS), size=2, replace=False))
        scale = round(float(rng.uniform(0.2, 0.9)), 2)
        plans = [
            (0, 2, first, 1.0),
            (1, 2, first, 1.0),
            (0, 2, first, scale),
            (0, 3, first, scale),
            (0, 3, second, scale),
        ]
        what = [
            f"MLP(layers, depth=2, act={first!r}, scale=1.0)",
            "the same with new weights",
            f"the same with scale={scale}",
            "then depth=3",
            f"then act={second!r}",
        ]
        info = {
            "x": random_f32(rng, d),
            "layers": [_mlp_layers(rng, d, container) for _ in range(2)],
            "plans": plans,
            "what": what,
        }
        kind = "a tuple of OrderedDicts" if container == "OrderedDict" else "a list of dicts"
        shown = (
            f"x f32[{d}], layers {kind} (w f32[{d},{d}], the second layer's b None); in turn "
            + ", ".join(what)
        )
        cases.append(Case((), label=f"an MLP whose layers are {kind}", info=info, shown=shown))
    return cases


def _mlp_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any] | str | None:
    cls = fn()
    if not isinstance(cls, type):
        return _not_a_class(cls)
    info = case.info
    models = [
        cls(layers=info["layers"][i], depth=depth, act=act, scale=scale)
        for i, depth, act, scale in info["plans"]
    ]
    report: dict[str, Any] = {"leaves": [leaf_text(leaf) for leaf in jax.tree.leaves(models[2])]}
    forward = jax.jit(lambda model, x: model(x))
    x = info["x"]
    return _forward_report(report, lambda: [forward(model, x) for model in models])


def _judge_mlp(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if isinstance(got, str):
        return _returned_instead("define_mlp", got, "MLP")
    mine, theirs = got["leaves"], expected["leaves"]
    scale = case.info["plans"][2][3]
    if mine != theirs:
        if (
            describe(scale) not in mine
            and all(t in mine for t in theirs if t != describe(scale))
            and len(mine) == len(theirs) - 1
        ):
            return Mistake(
                "`scale` is not a leaf: it is static, so every new scale compiles a new program.",
                "A value the forward only computes with is data: as a leaf it is traced, and one "
                "compiled program serves every scale. Static is for what Python must read while "
                "tracing, and each new static value costs a compilation.",
                "Leave `scale` an ordinary field with its default, `1.0`, without static metadata.",
                NEW_STATIC_VALUE,
            )
        names = {f"'{a}'": "act" for a in ACTIVATIONS}
        names.update({str(d): "depth" for d in (2, 3)})
        return _leaves_problem(mine, theirs, names, default=False)
    advice = (
        "New weights and a new scale reuse the program; only a new `depth` or a new `act` "
        "compiles again."
    )
    return _forward_problem(got, expected, case, "calling the jitted forward", advice)


FIXED_MLP = Exercise(
    id="04.fixed_mlp",
    name="define_mlp",
    title="Fix a config-as-leaf bug",
    points=2,
    cases=_mlp_cases,
    reference=_define_mlp,
    probe=_mlp_probe,
    judge=_judge_mlp,
    hints=(
        (
            "A field Python needs while tracing (the length of a slice, a key to look a function "
            "up) is configuration and must be static; a field the forward only multiplies by is "
            "data and stays a leaf, so a new value costs no compilation. Running the broken model "
            "under `jit` shows the first culprit."
        ),
        (
            "Mark `depth` and `act` static with `field(metadata={'static': True})` and leave "
            "`layers` and `scale` ordinary fields. A field without a default cannot follow one "
            "with a default, so keep the order `layers, depth, act, scale=1.0`."
        ),
    ),
    reread=DATA_OR_CONFIGURATION,
    mistakes=(
        "makes `scale` static, so every new scale compiles again",
        "leaves `depth` a leaf, so it is traced",
        "leaves the bug in place: `act` is still a leaf",
    ),
)


# --- 04.frozen_config ------------------------------------------------------------------------


def _define_config() -> type:
    @dataclass(frozen=True)
    class TrainConfig:
        hidden: tuple[int, ...]
        activation: str = "relu"

        def __post_init__(self) -> None:
            object.__setattr__(self, "hidden", tuple(self.hidden))

    return TrainConfig


def _config_cases(rng: np.random.Generator) -> list[Case]:
    cases = []
    for _ in range(2):
        hidden = [int(h) for h in rng.integers(2, 9, size=int(rng.integers(2, 4)))]
        other = hidden[:-1]
        act = str(rng.choice(["tanh", "identity"]))
        n = int(rng.integers(2, 5))
        calls = [
            ("list", hidden, act),
            ("tuple", hidden, act),
            ("list", hidden, act),
            ("tuple", other, act),
            ("tuple", hidden, "relu"),
        ]
        what = [
            f"TrainConfig(hidden={hidden}, activation={act!r})",
            f"TrainConfig(hidden={tuple(hidden)}, activation={act!r})",
            f"a new TrainConfig(hidden={hidden}, activation={act!r})",
            f"TrainConfig(hidden={tuple(other)}, activation={act!r})",
            f"TrainConfig(hidden={tuple(hidden)}) (activation left to its default)",
        ]
        info = {"x": random_f32(rng, n), "calls": calls, "what": what}
        shown = f"x f32[{n}]; in turn " + ", ".join(what)
        cases.append(Case((), label=f"configs with hidden sizes {hidden}", info=info, shown=shown))
    return cases


def _config_program(x: jax.Array, config: Any) -> jax.Array:
    """What the probe compiles: Python reads the configuration while tracing."""
    for size in config.hidden:
        x = ACTIVATIONS[config.activation](jnp.concatenate([x, x])[:size] + size)
    return x


def _unhashable_fields(config: Any) -> list[list[str]]:
    """``[name, type]`` of each field of ``config`` whose value cannot be hashed: why
    ``hash(config)`` fails, measured rather than read from Python's message."""
    if dataclasses.is_dataclass(config):
        values = {f.name: getattr(config, f.name, None) for f in dataclasses.fields(config)}
    else:
        values = dict(getattr(config, "__dict__", {}))
    found = []
    for name, value in values.items():
        try:
            hash(value)
        except TypeError:
            found.append([name, type(value).__name__])
    return found


def _config_probe(fn: Callable[..., Any], case: Case) -> dict[str, Any] | str | None:
    cls = fn()
    if not isinstance(cls, type):
        return _not_a_class(cls)
    configs = []
    for kind, hidden, act in case.info["calls"]:
        value = list(hidden) if kind == "list" else tuple(hidden)
        configs.append(cls(hidden=value) if act == "relu" else cls(hidden=value, activation=act))
    report: dict[str, Any] = {"hidden_type": type(configs[0].hidden).__name__}
    _, hash_error = attempt(lambda: hash(configs[0]))
    report["hash_error"] = None if hash_error is None else error_text(hash_error, limit=300)
    report["unhashable"] = _unhashable_fields(configs[0]) if report["hash_error"] else []
    report["hash_off"] = type(configs[0]).__hash__ is None
    report["equal"] = bool(configs[0] == configs[1] == configs[2])
    report["distinct"] = bool(configs[0] != configs[3])
    report["same_hash"] = report["hash_error"] is None and hash(configs[0]) == hash(
        configs[1]
    ) == hash(configs[2])
    spare = cls(hidden=tuple(case.info["calls"][0][1]))
    _, mutation_error = attempt(lambda: setattr(spare, "activation", "tanh"))
    report["frozen"] = mutation_error is not None
    program = jax.jit(_config_program, static_argnums=1)
    x = case.info["x"]
    return _forward_report(report, lambda: [program(x, config) for config in configs])


def _judge_config(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if isinstance(got, str):
        return _returned_instead("define_config", got, "TrainConfig")
    what = case.info["what"]
    error = got["hash_error"]
    if error and got["hash_off"]:
        return Mistake(
            f"`hash(config)` fails ({error}): the class's `__hash__ is None`, so `jit` refuses a "
            "config as a static argument.",
            "A plain `@dataclass` sets `__hash__` to `None` (Pitfall 7): it compares by field "
            "values, and fields that can change would change the hash. A static value must be "
            "hashable, compare by value, and never change.",
            "Make the dataclass frozen, `@dataclass(frozen=True)`: it writes `__eq__` and "
            "`__hash__` from the fields and refuses assignments, even in `__post_init__`, where "
            "a field is then set with `object.__setattr__(self, name, value)`.",
            PITFALL_7,
        )
    if error and got["unhashable"]:
        name, kind = got["unhashable"][0]
        idea = (
            "A dataclass hashes its fields, so a config is hashable only if every field is, "
            "frozen or not. A tuple holds the same items as a list, and hashes and compares by "
            "value."
        )
        if kind == "list":
            return Mistake(
                f"`hash(config)` fails: the field `{name}` holds a list, which cannot be hashed: "
                f"`{name}` was given as a list and kept as one.",
                idea,
                f"Turn `{name}` into a tuple when the config is made, in `__post_init__`. A frozen "
                f"dataclass refuses `self.{name} = ...`, even there: store the tuple with "
                f"`object.__setattr__(self, {name!r}, ...)`.",
                STATIC_IS_A_CACHE_KEY,
            )
        return Mistake(
            f"`hash(config)` fails: the field `{name}` holds a {kind}, which cannot be hashed.",
            idea,
            f"Keep `{name}` hashable: store a tuple, a frozenset, a string or a number in it, "
            "converted in `__post_init__` with `object.__setattr__` if callers give something "
            "else.",
            STATIC_IS_A_CACHE_KEY,
        )
    if error:
        return f"`hash(config)` fails ({error}): a static argument must be hashable."
    if not got["frozen"]:
        return Mistake(
            "`config.activation = 'tanh'` worked: the config can change after `jit` has used it as "
            "a cache key.",
            "`jit` keeps a static value as part of the key of the program it compiled. A config "
            "changed in place changes that key, and later calls get the program compiled for the "
            "old values, with no error (Pitfall 6): a static value must never change.",
            "Use `@dataclass(frozen=True)`: like `unsafe_hash=True` it writes `__hash__` from the "
            "fields, and it also refuses assignments, even in `__post_init__`, where a field is "
            "then set with `object.__setattr__(self, name, value)`.",
            PITFALL_6,
        )
    if not got["equal"]:
        return Mistake(
            f"{what[0]} and {what[1]}, built separately, are not equal (`==`).",
            "`jit` finds a compiled program by comparing static values with `==`. Configs that "
            "compare by identity never match a config built anew, so each new config compiles "
            "again.",
            "Let the dataclass write `__eq__` from the fields: keep `eq=True`, the default, "
            "together with `frozen=True`.",
            STATIC_IS_A_CACHE_KEY,
        )
    if not got["distinct"]:
        return Mistake(
            f"{what[0]} and {what[3]} are equal (`==`), although their hidden sizes differ.",
            "`jit` reuses a compiled program for a static value equal to one it has seen: configs "
            "with other fields must compare unequal, or they get a program compiled for another "
            "configuration.",
            "Let the dataclass write `__eq__` from all its fields (`eq=True`, the default) "
            "instead of writing your own.",
            STATIC_IS_A_CACHE_KEY,
        )
    if not got["same_hash"]:
        return Mistake(
            "configs that compare equal have different hashes.",
            "`jit`'s cache finds a key by its hash first, then compares with `==`: equal configs "
            "must hash alike, or an equal config misses the program compiled for it.",
            "Let the dataclass write `__hash__` from the fields (`frozen=True`) instead of writing "
            "your own.",
            STATIC_IS_A_CACHE_KEY,
        )
    if got["hidden_type"] != "tuple":
        return f"`config.hidden` is a {got['hidden_type']}, where a tuple was expected."
    advice = "Configs equal to one seen before must reuse its program: equal configs, equal hashes."
    return _forward_problem(
        got, expected, case, "a jitted function with the config as a static argument", advice
    )


FROZEN_CONFIG = Exercise(
    id="04.frozen_config",
    name="define_config",
    title="A hashable, frozen configuration",
    points=2,
    cases=_config_cases,
    reference=_define_config,
    probe=_config_probe,
    judge=_judge_config,
    hints=(
        (
            "A static value is a cache key: it must be hashable, compare by value, and never "
            "change. Every field counts, so a list field breaks the hash even in a frozen "
            "dataclass."
        ),
        (
            "Use `@dataclass(frozen=True)`, and turn `hidden` into a tuple in `__post_init__`. A "
            "frozen dataclass refuses `self.hidden = ...`, even there: store the tuple with "
            "`object.__setattr__(self, name, value)`."
        ),
    ),
    reread=STATIC_IS_A_CACHE_KEY,
    mistakes=(
        "uses a plain `@dataclass`, which cannot be hashed (Pitfall 7)",
        "keeps `hidden` as the list it was given",
        "uses `unsafe_hash` on a class that can still change",
        "compares by identity, so equal configs are not equal",
    ),
)


# --- 04.static_and_traced --------------------------------------------------------------------


@jax.tree_util.register_dataclass
@dataclass
class Linear:
    """Static field first, by field metadata."""

    name: str = field(metadata={"static": True})
    w: Any = None
    b: Any = None


def _tree_static(**kwargs: Any) -> Any:
    """``jax.tree.static(**kwargs)`` where JAX has it (0.9.1 and newer); before, the same field
    spelled out: ``jax.tree.static`` is ``dataclasses.field`` with the static flag set."""
    tree_static = getattr(jax.tree, "static", None)
    if tree_static is not None:
        return tree_static(**kwargs)
    return field(metadata={"static": True}, **kwargs)


@jax.tree_util.register_dataclass
@dataclass
class Conv:
    """``jax.tree.static()`` fields around a data field."""

    stride: int = _tree_static(default=1)
    kernel: Any = None
    padding: str = _tree_static(default="SAME")


@dataclass
class Norm:
    """Registered by naming the fields (no metadata at all)."""

    eps: float
    scale: Any
    axis: int
    bias: Any


jax.tree_util.register_dataclass(Norm, data_fields=["bias", "scale"], meta_fields=["eps", "axis"])


@jax.tree_util.register_static
@dataclass(frozen=True)
class Activation:
    """A whole class made static."""

    name: str
    slope: float = 0.0


@jax.tree_util.register_dataclass
@dataclass
class Block:
    """Data fields that hold trees, ``None`` and a Python number."""

    params: Any
    depth: int = field(metadata={"static": True})
    extra: Any = None
    temperature: float = 1.0
    sizes: tuple[int, ...] = field(default=(), metadata={"static": True})


def _static_and_traced(obj: Any) -> tuple[list[str], list[str]]:
    traced = {key.name for key, _ in children(obj) or []}
    names = [f.name for f in dataclasses.fields(obj)]
    return [n for n in names if n in traced], [n for n in names if n not in traced]


def _split_cases(rng: np.random.Generator) -> list[Case]:
    def arr(*shape: int) -> Any:
        return random_f32(rng, *shape)

    d = int(rng.integers(2, 5))
    objects = [
        (
            "a dataclass with a static field (metadata) declared first",
            Linear("head", arr(d, 2), arr(2)),
            "metadata",
        ),
        (
            "a dataclass whose static fields come from `jax.tree.static()`",
            Conv(2, arr(3, 3, d), "VALID"),
            "tree_static",
        ),
        (
            "a dataclass registered with `data_fields=` and `meta_fields=` (no field metadata)",
            Norm(1e-5, arr(d), -1, None),
            "named",
        ),
        (
            "an instance of a class made static with `register_static`",
            Activation("leaky_relu", 0.1),
            "register_static",
        ),
        (
            "a dataclass whose data fields hold a dict, `None` and a Python float",
            Block(
                {"w": arr(d, d), "b": [arr(d), None]},
                depth=2,
                extra=None,
                temperature=0.5,
                sizes=(d, d),
            ),
            "nested",
        ),
        (
            "a dataclass with a registered dataclass inside a data field",
            Block([Linear("inner", arr(d), None)], depth=1),
            "inner",
        ),
        ("a dataclass whose `w` and `b` are both `None`", Linear("empty"), "none"),
    ]
    order = rng.permutation(len(objects))
    return [
        Case((objects[i][1],), label=objects[i][0], info={"kind": objects[i][2]}) for i in order
    ]


_ONE_LEVEL = (
    "Flatten one level only: `jax.tree_util.tree_flatten_with_path(obj, is_leaf=lambda n: n is "
    "not obj)` gives one `(path, child)` pair per traced field, and `path[0].name` is its field's "
    "name. It lists them in the order JAX flattens them, so build both lists by going through "
    "`dataclasses.fields(obj)`, in declaration order, each name traced if it is among those."
)


def _judge_split(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if not (
        isinstance(got, tuple) and len(got) == 2 and all(isinstance(part, list) for part in got)
    ):
        return (
            f"returned {describe(got, 80)}, where a pair of lists of field names, "
            "`(traced, static)`, was expected."
        )
    if got == expected:
        return None
    (traced, static), (want_traced, want_static) = got, expected
    kind = case.info["kind"]
    paths = [name for name in traced + static if not name.isidentifier()]
    if paths and paths[0].startswith(".") and paths[0][1:].isidentifier():
        return Mistake(
            f"the result holds {paths[0]!r}, a key path written out as text, where the field's "
            f"name, {paths[0][1:]!r}, was expected.",
            "`keystr` writes a key path as text for people to read. The path itself is a tuple of "
            "key objects, and a dataclass field's key is a `GetAttrKey`, whose `.name` is the "
            "field's name.",
            "Take the name from the key object, `path[0].name`, instead of writing the path out "
            "with `keystr`.",
            KEY_PATHS,
        )
    if paths:
        return Mistake(
            f"the result holds {paths[0]!r}, which is not a field name: it names a leaf below a "
            "field.",
            "A field counts once, at the top level of the object, even when it holds a whole "
            "tree: look one level deep, not at every leaf.",
            _ONE_LEVEL,
            MARKING_STATIC,
        )
    if kind == "named" and set(traced) >= {"eps", "axis"}:
        return Mistake(
            f"returned ({traced}, {static}): `eps` and `axis`, static in this class, are listed as "
            "traced. This class was registered with `data_fields=[...]` and "
            "`meta_fields=[...]`, so its fields carry no metadata.",
            "Field metadata is only one way to make a field static: `meta_fields=` and "
            "`register_static` leave none. Only JAX's own flattening tells every case apart: its "
            "children are the traced fields.",
            _ONE_LEVEL,
            MARKING_STATIC,
        )
    if kind == "register_static" and traced:
        return Mistake(
            f"returned ({traced}, {static}) for an instance of a class made static with "
            "`register_static`: its fields are listed as traced.",
            "`register_static` makes the whole object static: JAX keeps the object itself in the "
            "treedef, and it has no children at all.",
            "Decide from JAX's one-level flatten: here its list of children is empty, so every "
            "field is static.",
            MARKING_STATIC,
        )
    obj = case.args[0]
    empty = [name for name in want_traced if name not in traced and getattr(obj, name) is None]
    if empty:
        return Mistake(
            f"{empty[0]!r} holds `None` and is missing from the traced fields.",
            "`None` is an empty subtree: a field that holds `None` has no leaves, yet JAX "
            "flattens it as a child of the object, so it is traced, not static. The leaves "
            "cannot show it.",
            _ONE_LEVEL + " A `None` child is among them.",
            PITFALL_1,
        )
    if sorted(traced) == sorted(want_traced) and sorted(static) == sorted(want_static):
        return Mistake(
            f"returned ({traced}, {static}): the right names, in another order.",
            "Both lists follow the order in which the dataclass declares its fields, the order "
            "`dataclasses.fields` lists them in. JAX may flatten in another (`data_fields=` sets "
            "its own), and sorting the names loses it too.",
            "Go through `dataclasses.fields(obj)`, which lists every field in declaration order, "
            "and put each name in `traced` or `static`.",
        )
    wrong = [name for name in traced if name in want_static] + [
        name for name in static if name in want_traced
    ]
    if wrong:
        where = "traced" if wrong[0] in traced else "static"
        return f"the field {wrong[0]!r} is not {where}."
    return f"returned ({traced}, {static}), expected other field names."


def _plain_pair(result: Any) -> Any:
    """The learner's pair of lists, tuples turned into lists so that both are judged alike."""
    if (
        isinstance(result, (tuple, list))
        and len(result) == 2
        and all(isinstance(p, (tuple, list)) for p in result)
    ):
        return tuple(
            [str(name) if not isinstance(name, str) else name for name in part] for part in result
        )
    if isinstance(result, (str, int, float, bool)) or result is None:
        return result
    return describe(result, 80)


STATIC_AND_TRACED = Exercise(
    id="04.static_and_traced",
    name="static_and_traced",
    title="Which fields are traced, which are static?",
    points=2,
    cases=_split_cases,
    reference=_static_and_traced,
    probe=lambda fn, case: _plain_pair(fn(*case.args)),
    judge=_judge_split,
    hints=(
        (
            "Field metadata is only one way to make a field static (`register_dataclass`'s "
            "`data_fields`/`meta_fields` leave none), so ask JAX how it flattens the object one "
            "level: its children are the traced fields, `None` included."
        ),
        (
            "`jax.tree_util.tree_flatten_with_path(obj, is_leaf=lambda n: n is not obj)` gives one "
            "`(path, child)` pair per traced field, `path[0].name` its name; then go through "
            "`dataclasses.fields(obj)`, in declaration order: each name is traced if it is among "
            "those, else static."
        ),
    ),
    reread=(MARKING_STATIC),
    mistakes=(
        "reads field metadata that some registered classes do not carry",
        "decides by the leaves, missing a traced field that holds `None`",
        "returns key paths instead of field names",
        "sorts the names instead of keeping their declaration order",
    ),
)


EXERCISES = (DENSE, FIXED_MLP, FROZEN_CONFIG, STATIC_AND_TRACED)
