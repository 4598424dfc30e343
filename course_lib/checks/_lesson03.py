"""Exercises of lesson 03, registering classes: three ways to make a node, and key paths at work.

The first three answers are classes, written inside a function that returns the class
(``define_dense()`` returns ``Dense``), as in lesson 04: the exercise notebook then has a cell that
runs before the learner writes anything (a class whose whole body is the answer cannot be stubbed
otherwise: a ``raise`` in a class body runs when the class is defined), and every check gets a fresh
class. The probe calls the function, builds instances with ``cls(*case.args, **case.kwargs)``, and
reduces what JAX does with them (flatten, compare treedefs, unflatten placeholders, jit and
differentiate) to a record of plain facts, which the judge compares with the reference classes'.
"""

import collections
import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.tree_util import keystr

from ._kit import (
    ACTIVATIONS,
    Layer,
    call_tree,
    error_text,
    in_parts,
    leaf_text,
    missing_return,
    plain_difference,
    random_array,
    random_tree,
    scaled,
    small_float_leaf,
    tree_judge,
)
from ._plain import describe, rebuild_tree
from ._spec import Case, Exercise

# --- the reference classes ---------------------------------------------------------------------


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Dense:
    """The reference ``define_dense``'s class: a registered dataclass, ``activation`` static."""

    w: Any
    b: Any
    activation: str = dataclasses.field(default="relu", metadata=dict(static=True))


class Conv1D:
    """The class of the reference ``define_conv1d``: registered below with flatten and unflatten."""

    def __init__(self, kernel: Any, bias: Any, stride: int = 1, padding: str = "SAME"):
        self.kernel, self.bias, self.stride, self.padding = kernel, bias, stride, padding


def _conv1d_flatten(layer: Conv1D) -> tuple[tuple[Any, Any], tuple[int, str]]:
    return (layer.kernel, layer.bias), (layer.stride, layer.padding)


def _conv1d_unflatten(aux: tuple[int, str], children: Any) -> Conv1D:
    kernel, bias = children
    stride, padding = aux
    return Conv1D(kernel, bias, stride, padding)


jax.tree_util.register_pytree_node(Conv1D, _conv1d_flatten, _conv1d_unflatten)


@jax.tree_util.register_pytree_node_class
class LayerNorm:
    """The reference ``define_layer_norm``'s class: its unflatten bypasses its constructor."""

    def __init__(self, scale: Any, offset: Any, eps: float = 1e-5):
        self.scale = jnp.asarray(scale, dtype=jnp.float32)
        self.offset = jnp.asarray(offset, dtype=jnp.float32)
        self.eps = float(eps)

    def tree_flatten(self) -> tuple[tuple[Any, Any], float]:
        return (self.scale, self.offset), self.eps

    @classmethod
    def tree_unflatten(cls, eps: float, children: Any) -> "LayerNorm":
        layer = object.__new__(cls)
        layer.scale, layer.offset = children
        layer.eps = eps
        return layer


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Block:
    """A registered dataclass in 03.decay_weights cases: its children are .w, .b and .gain."""

    w: Any
    b: Any
    gain: Any
    name: str = dataclasses.field(default="block", metadata=dict(static=True))


def _define_dense() -> type:
    return Dense


def _define_conv1d() -> type:
    return Conv1D


def _define_layer_norm() -> type:
    return LayerNorm


_REFERENCE_CLASSES = (Dense, Conv1D, LayerNorm)
_REFERENCE_DEFINES = (_define_dense, _define_conv1d, _define_layer_norm)


# --- how a layer is used: its output under jit, its gradient -------------------------------------


def _dense_out(layer: Any, x: jax.Array) -> jax.Array:
    y = x @ layer.w
    if layer.b is not None:
        y = y + layer.b[None, :]
    return ACTIVATIONS[layer.activation](y)


def _conv_out(layer: Any, x: jax.Array) -> jax.Array:
    y = jnp.convolve(x, layer.kernel, mode=layer.padding.lower())[:: layer.stride]
    return y if layer.bias is None else y + layer.bias


def _norm_out(layer: Any, x: jax.Array) -> jax.Array:
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + layer.eps) * layer.scale[None, :] + layer.offset[None, :]


def _loss(out: Callable[[Any, jax.Array], jax.Array]) -> Callable[[Any, jax.Array], jax.Array]:
    def loss(layer: Any, x: jax.Array) -> jax.Array:
        return jnp.sum(out(layer, x) ** 2)

    return loss


def _double(layer: Any) -> Any:
    return jax.tree.map(lambda leaf: 2.0 * leaf, layer)


# Module-level jitted functions: a learner's class is compiled once per structure and shape, and a
# second run of the same check (progress() at the end of a notebook) compiles nothing.
_LOSSES = {"dense": _loss(_dense_out), "conv1d": _loss(_conv_out), "layer_norm": _loss(_norm_out)}


# Each probe jits afresh: every learner's class is a new structure and compiles anyway, and a jitted
# function shared across classes has returned a grad of an earlier class of the same name.
def _train(kind: str, layer: Any, x: Any) -> Any:
    return jax.jit(jax.value_and_grad(_LOSSES[kind]))(layer, x)


def _jacobian(layer: Any) -> Any:
    return jax.jit(jax.jacobian(_double))(layer)


# --- plain records of what a class did -----------------------------------------------------------


class Placeholder:
    """A placeholder leaf, as transformations pass through unflatten (Pitfall 3)."""

    def __init__(self, index: int):
        self.index = index


def _kind(x: Any) -> str:
    if x is None:
        return "None"
    if isinstance(x, Placeholder):
        return f"placeholder {x.index}"
    if isinstance(x, (jax.Array, np.ndarray, np.generic)):
        return "array"
    return type(x).__name__  # "str", "int", "float", or the class of something else


def _value(x: Any) -> Any:
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    if isinstance(x, (jax.Array, np.ndarray, np.generic)):
        array = np.asarray(x)
        if array.dtype.kind in "biufc":
            return array
    return _kind(x)


_MISSING = object()


def _record(obj: Any, fields: tuple[str, ...], cls: type) -> dict[str, Any]:
    """The type of ``obj`` ("same" if it is ``cls``) and each field's kind and value."""
    values = {f: getattr(obj, f, _MISSING) for f in fields}
    return {
        "type": "same" if type(obj) is cls else type(obj).__name__,
        "kinds": {f: "missing" if v is _MISSING else _kind(v) for f, v in values.items()},
        "values": {f: None if v is _MISSING else _value(v) for f, v in values.items()},
    }


def _attempt(action: Callable[[], Any]) -> Any:
    """``action()``, or ``{"error": ...}`` when it raises (the hint's raw material)."""
    try:
        return action()
    except Exception as error:  # noqa: BLE001 (NotImplementedError too: a half-written class is incorrect, not unattempted)
        return {"error": error_text(error, limit=160)}


@dataclasses.dataclass(frozen=True)
class _Spec:
    """What a class exercise checks: the attributes to record, the children, the static ones."""

    kind: str
    fields: tuple[str, ...]
    children: tuple[str, ...]
    static: tuple[str, ...]
    paths: bool = False
    jacobian: bool = False


def _unhashable_aux(treedef: Any) -> str | None:
    """The type name of the root node's auxiliary data when it cannot be hashed, else None."""
    aux = treedef.node_data()[1]
    try:
        hash(aux)
    except TypeError:
        return type(aux).__name__
    return None


def _class_probe(spec: _Spec) -> Callable[[Callable[..., Any], Case], Any]:
    def probe(define: Callable[[], Any], case: Case) -> Any:
        make = define()  # the stub of a whole class raises NotImplementedError here: not attempted
        if not isinstance(make, type):
            return {"defined": "None" if make is None else _article(type(make).__name__)}
        if make in _REFERENCE_CLASSES and define not in _REFERENCE_DEFINES:
            return {"defined": "reference"}
        layer = make(*case.args, **case.kwargs)
        treedef = jax.tree.structure(
            layer
        )  # a stub's flatten raises NotImplementedError here: not attempted
        cls = type(layer)
        builtin = cls.__module__ == "builtins" or isinstance(layer, tuple)
        report: dict[str, Any] = {
            "defined": "class",
            "type": cls.__name__ if builtin else "class",
            "node": not jax.tree_util.treedef_is_leaf(treedef),
        }
        if not report["node"]:
            return report
        with_paths = jax.tree_util.tree_leaves_with_path(layer)
        leaves = [leaf for _, leaf in with_paths]
        report["leaf_kinds"] = [_kind(leaf) for leaf in leaves]
        report["leaves"] = [_value(leaf) for leaf in leaves]
        if spec.paths:
            report["paths"] = [keystr(path) for path, _ in with_paths]

        def differs(name: str, value: Any) -> bool:
            return jax.tree.structure(make(*case.args, **{**case.kwargs, name: value})) != treedef  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped

        report["static"] = {
            name: _attempt(functools.partial(differs, name, value))
            for name, value in case.info["variants"].items()
        }
        report["data"] = _attempt(
            lambda: jax.tree.structure(make(*case.info["other_arrays"], **case.kwargs)) == treedef  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped
        )
        report["aux"] = _attempt(lambda: _unhashable_aux(treedef))
        report["rebuilt"] = _attempt(
            lambda: _record(jax.tree.unflatten(treedef, leaves), spec.fields, cls)
        )
        report["mapped"] = _attempt(
            lambda: _record(jax.tree.map(lambda leaf: leaf * 2, layer), spec.fields, cls)
        )
        marks = [Placeholder(i) for i in range(len(leaves))]
        report["placeholders"] = _attempt(
            lambda: _record(jax.tree.unflatten(treedef, marks), spec.children, cls)["kinds"]
        )

        def train() -> dict[str, Any]:
            value, grads = _train(spec.kind, layer, case.info["x"])
            return {"value": np.asarray(value), "grads": _record(grads, spec.fields, cls)}

        # One case of each exercise goes through jit and grad: each new structure is a new
        # compilation.
        if not case.info.get("train"):
            return report
        report["trained"] = _attempt(train)
        if spec.jacobian:

            def jacobian() -> dict[str, Any]:
                jac = _jacobian(layer)
                same = lambda x: "same" if type(x) is cls else type(x).__name__
                return {
                    "type": same(jac),
                    "inner": [same(getattr(jac, f, None)) for f in spec.children],
                    "shapes": [list(np.shape(leaf)) for leaf in jax.tree.leaves(jac)],
                }

            report["jacobian"] = _attempt(jacobian)
        return report

    return probe


def _judge_class(
    spec: _Spec, name: str, register_hint: str, static_hint: str
) -> Callable[[Any, Any, Case], str | None]:
    """A judge for a class exercise: the first fact of the record that differs decides the hint."""
    define = f"define_{spec.kind}"

    def error_of(x: Any) -> str | None:
        return x.get("error") if isinstance(x, dict) else None

    def judge(got: Any, expected: Any, case: Case) -> str | None:
        if got["defined"] != "class":
            if got["defined"] == "reference":
                return (
                    f"{define} returns the course's own {name} from course_lib.checks: "
                    "that is the course's answer to this exercise, so it does not count. "
                    "Write the class yourself."
                )
            if got["defined"] == "None":
                return f"{define} returned None: missing `return {name}` at its end?"
            return f"{define} returned {got['defined']}, not a class: end it with `return {name}`."
        if got["type"] != expected["type"]:
            return (
                f"calling {name}(...) made {_article(got['type'])}: {name} must be a "
                "class, and calling it makes an instance."
            )
        if not got["node"]:
            return (
                f"JAX sees a {name} as a single leaf: the class is not registered. {register_hint}"
            )
        # 1. The leaves: the arrays, in order, and nothing else.
        configuration = [
            v
            for v, k in zip(got["leaves"], got["leaf_kinds"], strict=True)
            if k in ("str", "int", "float", "bool")
        ]
        if configuration:
            value = configuration[0]
            field = next((f for f in spec.static if case.kwargs.get(f) == value), "configuration")
            return (
                f"the leaves include {value!r}: {field} is configuration, and a leaf is "
                f"something JAX traces and differentiates. {static_hint}"
            )
        if len(got["leaves"]) < len(expected["leaves"]):
            return (
                f"{name} has {len(got['leaves'])} leaves, expected {len(expected['leaves'])}: "
                f"the arrays ({', '.join(spec.children)}) must all be children."
            )
        problem = plain_difference(got["leaves"], expected["leaves"])
        if problem:
            if len(got["leaves"]) == len(expected["leaves"]) and sorted(
                map(leaf_text, got["leaves"])
            ) == sorted(map(leaf_text, expected["leaves"])):
                if spec.paths:
                    return (
                        "the leaves come in another order: declare the fields in the order "
                        f"{', '.join(spec.fields)}."
                    )
                return (
                    "the leaves come in another order: the children are "
                    f"{', '.join(spec.children)}, in that order."
                )
            return f"the leaves differ from the expected ones ({problem})"
        if spec.paths and got["paths"] != expected["paths"]:
            if sorted(got["paths"]) == sorted(expected["paths"]):
                return (
                    f"the key paths are {got['paths']}, expected {expected['paths']}: "
                    f"declare the fields in the order {', '.join(spec.fields)}."
                )
            return (
                f"the key paths of the leaves are {got['paths']}, expected "
                f"{expected['paths']}: register_dataclass names each child by its field. "
                "Was the class registered another way?"
            )
        # 2. The treedef: static values are in it, arrays are not.
        for field, want in expected["static"].items():
            mine = got["static"][field]
            if error_of(mine):
                return (
                    f"comparing the structures of two {name}s with different {field} raised "
                    f"{error_of(mine)}."
                )
            if mine != want:
                return (
                    f"two {name}s that differ only in {field} have the same structure: "
                    f"{field} must be part of the treedef's metadata. {static_hint}"
                )
        if got["data"] is not True:
            why = (
                f" (comparing them raised {error_of(got['data'])})" if error_of(got["data"]) else ""
            )
            return (
                f"two {name}s that differ only in their arrays have different "
                f"structures{why}: an array ended up in the metadata. Only configuration "
                "belongs there; arrays are children."
            )
        if isinstance(got.get("aux"), str):
            fields = ", ".join(f"layer.{field}" for field in spec.static)
            return (
                f"the auxiliary data of a {name} is a {got['aux']}, which cannot be "
                "hashed. JAX's documentation requires auxiliary data to be hashable and to "
                "compare by value (lesson 03); JAX accepts this one only because a treedef's "
                "hash leaves the metadata out, which it does not promise. Return a tuple "
                f"instead, ({fields})."
            )
        # 3. Rebuilding: from its own leaves, through jax.tree.map, from placeholders.
        rebuilds = (
            ("rebuilt", "jax.tree.unflatten(treedef, leaves)"),
            ("mapped", "jax.tree.map(lambda x: x * 2, layer)"),
        )
        for key, what in rebuilds:
            mine = got[key]
            error = error_of(mine)
            if error:
                stub = (
                    " Is part of a stub still there?"
                    if error.startswith("NotImplementedError")
                    else ""
                )
                return f"{what} raised {error.rstrip('.')}.{stub}"
            problem = _record_difference(mine, expected[key], name, spec.static)
            if problem:
                return f"{what} gave {problem}"
        if error_of(got["placeholders"]):
            return (
                f"rebuilding a {name} from placeholder leaves raised "
                f"{error_of(got['placeholders'])}. Transformations "
                "pass placeholders, None and tracers through unflatten (Pitfall 3): "
                "unflatten must store whatever children it receives, without converting "
                "or checking them."
            )
        if got["placeholders"] != expected["placeholders"]:
            return (
                f"rebuilding a {name} from placeholder leaves gave {got['placeholders']}, expected "
                f"{expected['placeholders']}: unflatten must put each child back where it "
                "came from, unchanged."
            )
        # 4. Transformations over an instance.
        if "trained" not in expected:
            return None
        if error_of(got["trained"]):
            return (
                f"jax.jit(jax.value_and_grad(loss)) over a {name} raised "
                f"{error_of(got['trained'])}. Under jit, "
                "children become tracers and the metadata stays Python: is everything in "
                f"{', '.join(spec.static)} static, and is the metadata hashable?"
            )
        problem = plain_difference(got["trained"]["value"], expected["trained"]["value"])
        if problem:
            return (
                f"the loss computed with your {name} under jit differs from the expected one: "
                f"{problem}"
            )
        problem = _record_difference(
            got["trained"]["grads"], expected["trained"]["grads"], name, spec.static
        )
        if problem:
            return f"jax.grad returned {problem}"
        if spec.jacobian:
            if error_of(got["jacobian"]):
                return (
                    f"jax.jacobian over a {name} raised {error_of(got['jacobian'])}. "
                    "jacobian passes None and "
                    "whole trees through unflatten (Pitfall 3): build the object without "
                    "calling a constructor that converts its arguments, for example with "
                    "object.__new__(cls)."
                )
            if got["jacobian"] != expected["jacobian"]:
                return (
                    f"jax.jacobian over a {name} gave {got['jacobian']}, expected "
                    f"{expected['jacobian']}."
                )
        return None

    return judge


def _record_difference(
    mine: dict[str, Any], want: dict[str, Any], name: str, static: tuple[str, ...]
) -> str | None:
    if mine["type"] != want["type"]:
        return f"{_article(mine['type'])}, not a {name}: unflatten must return a {name}."
    for field, kind in want["kinds"].items():
        got_kind = mine["kinds"][field]
        if got_kind == "missing":
            return f"a {name} without the attribute {field}."
        if got_kind != kind:
            if kind in ("str", "int", "float") and got_kind == "array":
                return (
                    f"a {name} whose {field} is an array, not a Python {kind}: {field} went "
                    "through the leaves."
                )
            return f"a {name} whose {field} is {_article(got_kind)}, expected {_article(kind)}."
        problem = plain_difference(mine["values"][field], want["values"][field])
        if problem:
            if field in static:
                problem += (
                    f" The auxiliary data carries {field} from flatten to unflatten: use it there."
                )
            return f"a {name} whose {field} is wrong: {problem}"
    return None


def _class_exercise(
    spec: _Spec,
    name: str,
    title: str,
    cases: Callable[[np.random.Generator], list[Case]],
    reference: Callable[[], type],
    register_hint: str,
    static_hint: str,
    hints: tuple[str, ...],
    mistakes: tuple[str, ...],
) -> Exercise:
    """A class exercise of this lesson: ``define_<kind>()`` returns the class ``name``, probed and
    judged as ``spec`` says.

    ``register_hint`` says how to register the class, ``static_hint`` how to keep its configuration
    static."""
    return Exercise(
        id=f"03.{spec.kind}",
        name=f"define_{spec.kind}",
        title=title,
        points=2,
        cases=cases,
        reference=reference,
        probe=_class_probe(spec),
        judge=_judge_class(spec, name, register_hint, static_hint),
        hints=hints,
        mistakes=mistakes,
    )


def _article(kind: str) -> str:
    if kind in ("None", "missing") or kind.startswith("placeholder"):
        return kind
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


# --- 03.dense ----------------------------------------------------------------------------------

_DENSE = _Spec(
    "dense",
    fields=("w", "b", "activation"),
    children=("w", "b"),
    static=("activation",),
    paths=True,
)


def _dense_cases(rng: np.random.Generator) -> list[Case]:
    names = ("relu", "tanh", "identity")
    cases = []
    for i, k in enumerate(rng.permutation(3)):
        activation, other = names[k], names[(k + 1) % 3]
        with_bias = i != 1
        w, b = random_array(rng, 3, 2), random_array(rng, 2) if with_bias else None
        info = {
            "variants": {"activation": other},
            "other_arrays": (random_array(rng, 3, 2), random_array(rng, 2) if with_bias else None),
            "x": random_array(rng, 4, 3),
            "train": i == 0,
        }
        label = f"a Dense layer with activation {activation!r}" + (
            "" if with_bias else " and no bias (b=None)"
        )
        shown = f"Dense({describe(w)}, {describe(b)}, activation={activation!r})"
        cases.append(
            Case((w, b), kwargs={"activation": activation}, label=label, info=info, shown=shown)
        )
    return cases


DENSE = _class_exercise(
    _DENSE,
    "Dense",
    "A dense layer as a registered dataclass",
    _dense_cases,
    _define_dense,
    "Decorate it with @jax.tree_util.register_dataclass, above @dataclass.",
    'Declare it with dataclasses.field(default="relu", metadata=dict(static=True)).',
    hints=(
        "Inside define_dense, write the class with two decorators, "
        "@jax.tree_util.register_dataclass above @dataclass, and end with `return Dense`.",
        "Fields are children unless their metadata says static=True: activation: str = "
        "field(default=..., metadata=dict(static=True)).",
        (
            "Declare the fields in the order w, b, activation; b may be None, and None is an "
            "empty subtree."
        ),
    ),
    mistakes=(
        "leaves the class unregistered, so JAX sees one leaf",
        "makes `activation` a child instead of static configuration",
        "declares the fields in another order than `w, b, activation`",
        "registers it by hand, so its key paths lose the field names",
        "forgets `return Dense`",
        "returns an instance instead of the class",
    ),
)


# --- 03.conv1d ---------------------------------------------------------------------------------

_CONV = _Spec(
    "conv1d",
    fields=("kernel", "bias", "stride", "padding"),
    children=("kernel", "bias"),
    static=("stride", "padding"),
)


def _conv_cases(rng: np.random.Generator) -> list[Case]:
    settings = [(1, "SAME", True), (2, "VALID", True), (2, "SAME", False)]
    cases = []
    for i in rng.permutation(len(settings)):
        stride, padding, with_bias = settings[i]
        kernel, bias = random_array(rng, 3), random_array(rng) if with_bias else None
        info = {
            "variants": {"stride": 3 - stride, "padding": "VALID" if padding == "SAME" else "SAME"},
            "other_arrays": (random_array(rng, 3), random_array(rng) if with_bias else None),
            "x": random_array(rng, 8),
            "train": not with_bias,
        }
        label = f"a Conv1D with stride {stride} and padding {padding!r}" + (
            "" if with_bias else ", without a bias (None)"
        )
        shown = (
            f"Conv1D({describe(kernel)}, {describe(bias)}, stride={stride}, padding={padding!r})"
        )
        kwargs = {"stride": stride, "padding": padding}
        cases.append(Case((kernel, bias), kwargs=kwargs, label=label, info=info, shown=shown))
    return cases


CONV1D = _class_exercise(
    _CONV,
    "Conv1D",
    "A class registered with flatten and unflatten functions",
    _conv_cases,
    _define_conv1d,
    "Register it with jax.tree_util.register_pytree_node(Conv1D, conv1d_flatten, "
    "conv1d_unflatten) before `return Conv1D`.",
    "conv1d_flatten returns it in the auxiliary data, the second item of its pair: "
    "((kernel, bias), (stride, padding)).",
    hints=(
        (
            "conv1d_flatten(layer) returns a pair: the children JAX should look inside, then "
            "the auxiliary data."
        ),
        "The children are the arrays, (layer.kernel, layer.bias); the auxiliary data is "
        "the configuration, (layer.stride, layer.padding), hashable.",
        "conv1d_unflatten(aux_data, children) receives both back: return Conv1D(kernel, "
        "bias, stride, padding). "
        "Then register: jax.tree_util.register_pytree_node(Conv1D, conv1d_flatten, "
        "conv1d_unflatten).",
    ),
    mistakes=(
        "makes `stride` and `padding` children instead of auxiliary data",
        "drops the auxiliary data, and `stride` with it",
        "unflattens into a tuple instead of a `Conv1D`",
        "leaves part of the stub in place",
        "keeps the configuration in a dict, which cannot be hashed",
    ),
)


# --- 03.layer_norm -----------------------------------------------------------------------------

_NORM = _Spec(
    "layer_norm",
    fields=("scale", "offset", "eps"),
    children=("scale", "offset"),
    static=("eps",),
    jacobian=True,
)


def _norm_cases(rng: np.random.Generator) -> list[Case]:
    epsilons = [1e-5, 1e-3, 0.1]
    cases = []
    for i in rng.permutation(len(epsilons)):
        eps = epsilons[i]
        scale, offset = 1.0 + random_array(rng, 3) / 4, random_array(rng, 3) / 4
        info = {
            "variants": {"eps": epsilons[(i + 1) % 3]},
            "other_arrays": (random_array(rng, 3), random_array(rng, 3)),
            "x": random_array(rng, 4, 3),
            "train": eps == 1e-3,
        }
        shown = f"LayerNorm({describe(scale)}, {describe(offset)}, eps={eps})"
        cases.append(
            Case(
                (scale, offset),
                kwargs={"eps": eps},
                label=f"a LayerNorm with eps={eps}",
                info=info,
                shown=shown,
            )
        )
    return cases


LAYER_NORM = _class_exercise(
    _NORM,
    "LayerNorm",
    "A class registered with its own methods, whatever its constructor does",
    _norm_cases,
    _define_layer_norm,
    "Keep the decorator @jax.tree_util.register_pytree_node_class on the class.",
    "tree_flatten returns it as the auxiliary data: ((self.scale, self.offset), self.eps).",
    hints=(
        "tree_flatten(self) returns ((self.scale, self.offset), self.eps): the arrays are "
        "children, eps is auxiliary data.",
        "tree_unflatten(cls, aux_data, children) must not call cls(...): __init__ "
        "converts its arguments, and transformations pass None and placeholders through unflatten.",
        (
            "Make the instance with object.__new__(cls), then set scale, offset and eps on it "
            "directly."
        ),
    ),
    mistakes=(
        "unflattens through `__init__`, which converts its children (Pitfall 3)",
        "makes `eps` a child instead of auxiliary data",
        "drops `eps` from the structure",
    ),
)


# --- 03.decay_weights --------------------------------------------------------------------------


def _last_key_name(path: tuple[Any, ...]) -> Any:
    if not path:
        return None
    key = path[-1]
    if isinstance(key, jax.tree_util.DictKey):
        return key.key
    if isinstance(key, jax.tree_util.GetAttrKey):
        return key.name
    return None


def _decay_weights(params: Any, rate: float) -> Any:
    def decay(path: tuple[Any, ...], leaf: Any) -> Any:
        if _last_key_name(path) != "w":
            return leaf
        return scaled(leaf, 1 - rate)

    return jax.tree.map_with_path(decay, params)


def _show(tree: Any) -> str:
    """A picture of a case: Block nodes as namedtuple-like text, so describe() can draw them."""
    view = jax.tree.map(
        lambda x: _BlockView(x.w, x.b, x.gain) if isinstance(x, Block) else x,
        tree,
        is_leaf=lambda x: isinstance(x, Block),
    )
    return describe(view, 200)


_BlockView = collections.namedtuple("Block", "w b gain")  # type: ignore[name-match]  # shown as Block


def _decay_case(tree: Any, rate: float, label: str) -> Case:
    paths = jax.tree_util.tree_leaves_with_path(tree)
    decayed = [keystr(path) for path, _ in paths if _last_key_name(path) == "w"]
    return Case(
        (tree, rate), label=label, info={"decayed": decayed}, shown=f"{_show(tree)}, rate={rate}"
    )


def _decay_cases(rng: np.random.Generator) -> list[Case]:
    leaf = lambda: small_float_leaf(rng)
    rates = [float(r) for r in rng.choice([0.1, 0.01, 0.5, 0.2], size=4, replace=False)]
    cases = [
        _decay_case(
            {
                "encoder": {"w": random_array(rng, 2, 3), "b": None},
                "decoder": {"w": random_array(rng, 3, 2), "b": random_array(rng, 2)},
            },
            rates[0],
            "nested dicts, one bias None",
        ),
        _decay_case(
            [Layer(w=leaf(), b=leaf()), Layer(w=leaf(), b=None)],
            rates[1],
            "a list of namedtuple layers",
        ),
        _decay_case(
            {
                "blocks": [
                    Block(leaf(), leaf(), leaf(), "attn"),
                    Block(leaf(), None, leaf(), "mlp"),
                ],
                "head": {"w": leaf(), "bw": leaf(), "raw": leaf()},
            },
            rates[2],
            (
                "registered dataclass blocks, and the keys 'bw' and 'raw', which end in w but "
                "are not w"
            ),
        ),
        _decay_case(
            {"w": round(float(rng.normal()), 3), "alpha": {"w_scale": leaf()}},
            rates[3],
            "a Python float weight and a key 'w_scale'",
        ),
        _decay_case(leaf(), rates[0], "a single array: its key path is empty, so it is no weight"),
    ]
    for i in range(2):
        tree = {
            "model": random_tree(rng, depth=3, none_rate=0.3, leaf=small_float_leaf),
            "w": leaf(),
        }
        cases.append(_decay_case(tree, rates[i + 1], f"random tree {i + 1}"))
    # The single array is not decayed: it shares a part with trees whose weights are, so returning
    # the tree earns nothing.
    layers, lookalike = (
        "dicts and namedtuple layers",
        "registered classes, look-alike keys and a single array",
    )
    return in_parts(
        cases, [layers, layers, lookalike, lookalike, lookalike, "random trees", "random trees"]
    )


_tree_judge = tree_judge(rtol=1e-5, atol=1e-6)


def _judge_decay(got: Any, expected: Any, case: Case) -> str | None:
    missing = missing_return(got, expected, "decay_weights")
    if missing:
        return missing
    problem = _tree_judge(got, expected, case)
    if problem is None or problem.startswith("the structure"):
        return problem
    params, rate = case.args
    mine = jax.tree_util.tree_leaves_with_path(rebuild_tree(got))
    want = jax.tree.leaves(rebuild_tree(expected))
    given = jax.tree.leaves(params)
    decayed = set(case.info["decayed"])
    for (path, a), e, x in zip(mine, want, given, strict=True):
        if np.allclose(np.asarray(a, np.float64), np.asarray(e, np.float64), rtol=1e-5, atol=1e-6):
            continue
        where = keystr(path) or "<root>"
        a64, x64 = np.asarray(a, np.float64), np.asarray(x, np.float64)
        if where in decayed:
            if np.allclose(a64, x64):
                text = f"leaf {where} is a weight (its last key is w) but was not decayed."
                if where.endswith("['w']"):
                    text += (
                        " In a dict the key prints as ['w'], not .w: instead of reading "
                        "the text of the path, "
                        "look at its last key, path[-1], whose .key (DictKey) or .name "
                        "(GetAttrKey) is 'w'."
                    )
                return text
            if np.allclose(a64, x64 * rate):
                return f"leaf {where} was multiplied by rate; decay multiplies by (1 - rate)."
            return f"leaf {where} should be {1 - rate:g} times its value; {problem}"
        if np.allclose(a64, x64 * (1 - rate)):
            if where == "<root>":
                return (
                    "a single array has an empty key path (no last key at all), so it is no "
                    "weight: leave it unchanged."
                )
            return (
                f"leaf {where} was decayed, but its last key is not w. Only a leaf whose "
                "last key is exactly 'w' is a weight (compare the key itself, not the "
                "text of the whole path)."
            )
        return f"leaf {where} is no weight and must stay unchanged; {problem}"
    return problem


DECAY_WEIGHTS = Exercise(
    id="03.decay_weights",
    name="decay_weights",
    title="Weight decay on the weights only, by key path",
    points=2,
    cases=_decay_cases,
    reference=_decay_weights,
    probe=call_tree,
    judge=_judge_decay,
    hints=(
        (
            "jax.tree.map_with_path(f, params) calls f(path, leaf) for every leaf and "
            "rebuilds the tree."
        ),
        "path is a tuple of keys; the last one, path[-1], is a DictKey (its .key), a "
        "GetAttrKey (its .name) or a SequenceKey (its .idx). A leaf on its own has the "
        "empty path ().",
        (
            "Return leaf * (1 - rate) when the last key is named 'w', and the leaf unchanged "
            "otherwise."
        ),
    ),
    mistakes=(
        "looks for the text `.w`, which a dict key prints as `['w']`",
        "decays leaves whose last key is not `w`",
        "multiplies by `rate` instead of `1 - rate`",
        "fails on a leaf with an empty key path",
        "forgets `return`",
    ),
)


EXERCISES = (DENSE, CONV1D, LAYER_NORM, DECAY_WEIGHTS)
