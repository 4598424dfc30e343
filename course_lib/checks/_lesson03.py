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
    structure_found,
    tree_judge,
    trees_close,
)
from ._mistakes import Steps, lead
from ._plain import describe, rebuild_tree
from ._sections import (
    KEY_PATHS,
    PITFALL_3,
    PITFALL_9,
    REGISTER_DATACLASS,
    REGISTER_PYTREE_NODE,
    REGISTER_PYTREE_NODE_CLASS,
    UNKNOWN_CLASS_IS_A_LEAF,
    WEIGHT_DECAY,
)
from ._spec import Case, Exercise, Mistake

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
    children = (layer.kernel, layer.bias)
    aux = (layer.stride, layer.padding)
    return children, aux


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
        children = (self.scale, self.offset)
        return children, self.eps

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


def _as_a_leaf(value: Any) -> str:
    """What JAX does with a Python value that a class hands it as a leaf.

    >>> _as_a_leaf(2)
    '`jit` would trace it, and `grad` refuses an integer leaf with a `TypeError`.'
    """
    if isinstance(value, str):
        return "`jit` refuses a string leaf with a `TypeError`."
    if isinstance(value, (bool, int)):
        return "`jit` would trace it, and `grad` refuses an integer leaf with a `TypeError`."
    return "JAX would trace it under `jit` and differentiate it under `grad`."


@dataclasses.dataclass(frozen=True, kw_only=True)
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
        # The layer is a leaf when it is its own only leaf (treedef_is_leaf would call a node
        # without children a leaf too).
        alone = jax.tree.leaves(layer)
        report: dict[str, Any] = {
            "defined": "class",
            "type": cls.__name__ if builtin else "class",
            "node": not (len(alone) == 1 and alone[0] is layer),
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


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Advice:
    """A class exercise's own steps, one for each kind of mistake whose remedy depends on how the
    class is registered: ``register`` (JAX sees the class as one leaf), ``static`` (configuration
    among the leaves, or missing from the treedef), ``children`` (an array out of the leaves),
    ``order`` (the children in another order) and ``rebuild`` (unflatten makes something else than
    the object, or drops part of it)."""

    register: Steps
    static: Steps
    children: Steps
    order: Steps
    rebuild: Steps


def _error_of(x: Any) -> str | None:
    """The error a probe recorded instead of a fact (``_attempt``), or ``None``."""
    return x.get("error") if isinstance(x, dict) else None


@dataclasses.dataclass(frozen=True, kw_only=True)
class _ClassJudge:
    """A judge for a class exercise: the first fact of the record that differs decides what went
    wrong, and ``advice`` (or, for what every registration shares, the judge itself) the idea and
    the fix. The facts are checked in the order JAX meets them: the class, the leaves, the
    treedef, rebuilding, then transformations over an instance."""

    spec: _Spec
    name: str
    advice: _Advice

    def __call__(self, got: Any, expected: Any, case: Case) -> str | Mistake | None:
        return (
            self.defined(got, expected)
            or self.leaves(got, expected, case)
            or self.treedef(got, expected)
            or self.rebuilding(got, expected)
            or self.transformed(got, expected)
        )

    def defined(self, got: Any, expected: Any) -> str | Mistake | None:
        """Whether ``define_<kind>`` returned a class of the learner's own that JAX sees as a
        node."""
        define, name, advice = f"define_{self.spec.kind}", self.name, self.advice
        if got["defined"] != "class":
            if got["defined"] == "reference":
                return (
                    f"`{define}` returns the course's own `{name}` from `course_lib.checks`: "
                    "that is the course's answer to this exercise, so it does not count. "
                    "Write the class yourself."
                )
            returning = Steps(
                idea=f"`{define}` is a factory: it defines the class and hands the class itself "
                "back. The check calls it for a fresh class, then calls that class with each "
                "input's arrays to make its own layers.",
                fix=f"End `{define}` with `return {name}`, at the indentation of the function's "
                f"body, below the class: the class object, not an instance `{name}(...)`.",
            )
            return returning.mistake(f"`{define}` returned {got['defined']}, not a class.")
        if got["type"] != expected["type"]:
            return (
                f"calling `{name}(...)` made {_article(got['type'])}, a built-in type, where an "
                "instance of a class of your own was expected."
            )
        if not got["node"]:
            return advice.register.mistake(
                f"JAX sees a `{name}` as a single leaf: `jax.tree.leaves(layer)` is `[layer]`, the "
                "whole layer, so the class is not registered."
            )
        return None

    def leaves(self, got: Any, expected: Any, case: Case) -> str | Mistake | None:
        """The leaves: the arrays, in order, and nothing else; and their key paths."""
        spec, name, advice = self.spec, self.name, self.advice
        configuration = [
            v
            for v, k in zip(got["leaves"], got["leaf_kinds"], strict=True)
            if k in ("str", "int", "float", "bool")
        ]
        if configuration:
            value = configuration[0]
            field = next((f for f in spec.static if case.kwargs.get(f) == value), "")
            whose = f"the value of its `{field}`" if field else "a Python value"
            return advice.static.mistake(
                f"the leaves of a `{name}` include {value!r}, {whose}, next to its arrays: "
                + _as_a_leaf(value),
                field or spec.static[0],
            )
        if len(got["leaves"]) < len(expected["leaves"]):
            count = len(got["leaves"])
            return advice.children.mistake(
                f"a `{name}` has {count} lea{'f' if count == 1 else 'ves'}, expected "
                f"{len(expected['leaves'])}: one for each of {' and '.join(spec.children)} that "
                "is not `None`."
            )
        problem = plain_difference(got["leaves"], expected["leaves"])
        if problem:
            if len(got["leaves"]) == len(expected["leaves"]) and sorted(
                map(leaf_text, got["leaves"])
            ) == sorted(map(leaf_text, expected["leaves"])):
                mine = [leaf_text(leaf) for leaf in got["leaves"]]
                want = [leaf_text(leaf) for leaf in expected["leaves"]]
                return advice.order.mistake(
                    f"the leaves come in another order: {mine}, expected {want}."
                )
            return f"the leaves differ from the expected ones ({problem})"
        if spec.paths and got["paths"] != expected["paths"]:
            if sorted(got["paths"]) == sorted(expected["paths"]):
                return advice.order.mistake(
                    f"the key paths are {got['paths']}, expected {expected['paths']}: the "
                    "children come in another order."
                )
            return Mistake(
                f"the key paths of the leaves are {got['paths']}, expected {expected['paths']}.",
                "A key path names each child by the key its registration gives it. "
                "`register_dataclass` names each child by its field, so paths read `.w` and "
                "`.b`; a registration by hand with `register_pytree_node` gives no names, and "
                "JAX only numbers the children.",
                "Register the dataclass with `@jax.tree_util.register_dataclass` rather than with "
                "your own flatten and unflatten (or give each child a `GetAttrKey` with "
                "`register_pytree_with_keys`).",
                KEY_PATHS,
            )
        return None

    def treedef(self, got: Any, expected: Any) -> str | Mistake | None:
        """The treedef: static values are in it, arrays are not, and its metadata hashes."""
        spec, name, advice = self.spec, self.name, self.advice
        for field, want in expected["static"].items():
            mine = got["static"][field]
            if _error_of(mine):
                return (
                    f"comparing the structures of two `{name}`s with different `{field}` raised "
                    f"{_error_of(mine)}."
                )
            if mine != want:
                return Mistake(
                    f"two `{name}`s that differ only in `{field}` have the same structure, and "
                    f"`{field}` is not among the leaves either: flattening loses it.",
                    "The treedef and the leaves together must hold everything needed to build "
                    "the object again. Configuration belongs in the treedef, as node metadata, "
                    "where it is part of the structure (Pitfall 9): two layers with another "
                    f"`{field}` are two structures.",
                    advice.static.fix.format(field=field),
                    PITFALL_9,
                )
        if got["data"] is not True:
            why = (
                f" (comparing them raised {_error_of(got['data'])})"
                if _error_of(got["data"])
                else ""
            )
            return advice.children.mistake(
                f"two `{name}`s that differ only in their arrays have different "
                f"structures{why}: an array ended up in the treedef's metadata."
            )
        if isinstance(got.get("aux"), str):
            fields = ", ".join(f"layer.{field}" for field in spec.static)
            return Mistake(
                f"the auxiliary data of a `{name}` is a {got['aux']}, which cannot be hashed.",
                "JAX's documentation requires auxiliary data to be hashable and to compare by "
                "value. JAX accepts this one only because a treedef's hash leaves the metadata "
                "out today, which it does not promise.",
                f"Return the configuration as a tuple, `({fields})`, and unpack it in unflatten.",
                REGISTER_PYTREE_NODE,
            )
        return None

    def rebuilding(self, got: Any, expected: Any) -> str | Mistake | None:
        """Rebuilding: from its own leaves, through jax.tree.map, from placeholders."""
        spec, name, advice = self.spec, self.name, self.advice
        rebuilds = (
            ("rebuilt", "`jax.tree.unflatten(treedef, leaves)`"),
            ("mapped", "`jax.tree.map(lambda x: x * 2, layer)`"),
        )
        for key, what in rebuilds:
            mine = got[key]
            error = _error_of(mine)
            if error:
                if error.startswith("NotImplementedError"):
                    return Mistake(
                        f"{what} raised {error.rstrip('.')}. That is the stub's error: "
                        "unflatten still holds the stub.",
                        "JAX calls unflatten whenever it builds the object back from a treedef "
                        "and leaves: `jax.tree.map`, `jit` and `grad` all do. Flatten and "
                        "unflatten must both work before the class is a usable node.",
                        advice.rebuild.fix,
                        advice.rebuild.reread,
                    )
                return f"{what} raised {error.rstrip('.')}."
            rebuilt = _record_difference(mine, expected[key], name, spec.static, advice)
            if rebuilt:
                return lead(f"{what} gave ", rebuilt)
        placeholder_error = _error_of(got["placeholders"])
        if placeholder_error:
            # The placeholders are the check's own objects: the learner reads "a placeholder".
            error = placeholder_error.replace(f"'{Placeholder.__name__}'", "a placeholder")
            return self.placeholders(
                f"rebuilding a `{name}` from placeholder leaves raised {error}."
            )
        if got["placeholders"] != expected["placeholders"]:
            return Mistake(
                f"rebuilding a `{name}` from placeholder leaves gave {got['placeholders']}, "
                f"expected {expected['placeholders']}.",
                "Unflatten receives the children in the order flatten gave them, and must put "
                "each one back where it came from, unchanged: transformations hand it "
                "placeholders, tracers and `None` as well as arrays.",
                "Assign the children to the attributes in flatten's order, as they are, without "
                "converting or replacing them.",
                PITFALL_3,
            )
        return None

    def transformed(self, got: Any, expected: Any) -> str | Mistake | None:
        """Transformations over an instance: jit and grad, and jax.jacobian where asked."""
        spec, name, advice = self.spec, self.name, self.advice
        if "trained" not in expected:
            return None
        if _error_of(got["trained"]):
            return Mistake(
                f"`jax.jit(jax.value_and_grad(loss))` over a `{name}` raised "
                f"{_error_of(got['trained'])}.",
                "Under `jit` the children become tracers and the metadata stays Python: whatever "
                f"Python must read while tracing ({', '.join(spec.static)}) has to be static, "
                "and the metadata must be hashable.",
                advice.static.fix.format(field=spec.static[0]),
                advice.static.reread,
            )
        problem = plain_difference(got["trained"]["value"], expected["trained"]["value"])
        if problem:
            return (
                f"the loss computed with your `{name}` under `jit` differs from the expected one: "
                f"{problem}"
            )
        grads = _record_difference(
            got["trained"]["grads"], expected["trained"]["grads"], name, spec.static, advice
        )
        if grads:
            return lead("`jax.grad` returned ", grads)
        if spec.jacobian:
            if _error_of(got["jacobian"]):
                return self.placeholders(
                    f"`jax.jacobian` over a `{name}` raised {_error_of(got['jacobian'])}."
                )
            if got["jacobian"] != expected["jacobian"]:
                return (
                    f"`jax.jacobian` over a `{name}` gave {got['jacobian']}, expected "
                    f"{expected['jacobian']}."
                )
        return None

    def placeholders(self, what: str) -> Mistake:
        """The mistake of an unflatten that cannot store what transformations hand it."""
        return Steps(
            idea="Transformations rebuild your object from whatever they carry at its leaves: "
            "placeholders, `None`, tracers, whole trees (Pitfall 3). Unflatten must store the "
            "children it receives as they are, without converting or checking them, so it cannot "
            "go through a constructor that does.",
            fix=f"Build the `{self.name}` in unflatten without a converting constructor: "
            "`object.__new__(cls)` makes an empty instance, then set each attribute from the "
            "children and the auxiliary data.",
            reread=PITFALL_3,
        ).mistake(what)


def _record_difference(
    mine: dict[str, Any],
    want: dict[str, Any],
    name: str,
    static: tuple[str, ...],
    advice: _Advice,
) -> str | Mistake | None:
    """How the object that was rebuilt (``mine``, a :func:`_record`) differs from ``want``."""
    if mine["type"] != want["type"]:
        return Mistake(
            f"{_article(mine['type'])}, not a `{name}`.",
            "Unflatten is how JAX builds your object back from a treedef and new leaves: every "
            "result of `jax.tree.map`, `jit` or `grad` comes out of it. It must return an "
            "instance of the class, not the parts it received.",
            advice.rebuild.fix,
            advice.rebuild.reread,
        )
    for field, kind in want["kinds"].items():
        got_kind = mine["kinds"][field]
        if got_kind == "missing":
            return advice.rebuild.mistake(f"a `{name}` without the attribute `{field}`.", field)
        if got_kind != kind:
            if kind in ("str", "int", "float") and got_kind == "array":
                return advice.static.mistake(
                    f"a `{name}` whose `{field}` is an array, not a Python {kind}: `{field}` went "
                    "through the leaves.",
                    field,
                )
            return f"a `{name}` whose `{field}` is {_article(got_kind)}, expected {_article(kind)}."
        problem = plain_difference(mine["values"][field], want["values"][field])
        if problem:
            if field in static:
                return Mistake(
                    f"a `{name}` whose `{field}` is wrong: {problem}",
                    f"The auxiliary data carries `{field}` from flatten to unflatten, which "
                    "receives it as its first argument: the children alone cannot rebuild the "
                    "layer, and a default in the constructor hides the loss.",
                    advice.rebuild.fix,
                    advice.rebuild.reread,
                )
            return f"a `{name}` whose `{field}` is wrong: {problem}"
    return None


def _class_exercise(
    spec: _Spec,
    name: str,
    title: str,
    cases: Callable[[np.random.Generator], list[Case]],
    reference: Callable[[], type],
    advice: _Advice,
    hints: tuple[str, str],
    reread: str,
    mistakes: tuple[str, ...],
) -> Exercise:
    """A class exercise of this lesson: ``define_<kind>()`` returns the class ``name``, probed and
    judged as ``spec`` says, with ``advice`` for the mistakes that depend on the registration."""
    return Exercise(
        id=f"03.{spec.kind}",
        name=f"define_{spec.kind}",
        title=title,
        points=2,
        cases=cases,
        reference=reference,
        probe=_class_probe(spec),
        judge=_ClassJudge(spec=spec, name=name, advice=advice),
        hints=hints,
        reread=reread,
        mistakes=mistakes,
    )


def _article(kind: str) -> str:
    if kind in ("None", "missing") or kind.startswith("placeholder"):
        return kind
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


# --- 03.dense ----------------------------------------------------------------------------------

_DENSE = _Spec(
    kind="dense",
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
        label = f"a `Dense` layer with activation `{activation!r}`" + (
            "" if with_bias else " and no bias (`b=None`)"
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
    _Advice(
        register=Steps(
            idea="JAX looks inside only the classes in its registry; an object of any other class "
            "is one leaf, arrays and all. `register_dataclass` adds a dataclass to the registry, "
            "with its fields as children.",
            fix=(
                "Put `@jax.tree_util.register_dataclass` on the class, above `@dataclass`: "
                "decorators apply from the bottom up, so the dataclass exists by the time "
                "JAX registers it."
            ),
            reread=UNKNOWN_CLASS_IS_A_LEAF,
        ),
        static=Steps(
            idea=(
                "`{field}` is configuration: Python reads it while tracing to pick the "
                "nonlinearity, and nothing should trace or differentiate it. "
                "`register_dataclass` makes every field a child unless the field's metadata "
                "marks it static; a static field is kept in the treedef instead."
            ),
            fix=(
                'Declare `{field}` with `field(default="relu", metadata=dict(static=True))`, '
                "the `field` that the notebook imports from `dataclasses`."
            ),
            reread=REGISTER_DATACLASS,
        ),
        children=Steps(
            idea="Arrays are data: JAX traces, maps and differentiates only the children, so every "
            "array must be one. Static metadata is for configuration, and an array there makes "
            "every new array a new structure.",
            fix=(
                "Declare `w` and `b` as ordinary fields, without static metadata: "
                "`register_dataclass` then makes them children."
            ),
            reread=REGISTER_DATACLASS,
        ),
        order=Steps(
            idea=(
                "`register_dataclass` takes the children in the order the fields are "
                "declared, and everything that pairs leaves by position (unflatten, a map "
                "over two trees, an optimizer's state) relies on that order."
            ),
            fix="Declare the fields in the order `w, b, activation`.",
            reread=REGISTER_DATACLASS,
        ),
        rebuild=Steps(
            idea=(
                "`register_dataclass` builds a `Dense` back by calling the class with one "
                "argument per field: the children from the leaves, the static fields from "
                "the treedef."
            ),
            fix="Let `@dataclass` write `__init__`, one parameter per field, so that JAX can call "
            "`Dense(w=..., b=..., activation=...)` to rebuild a layer.",
            reread=REGISTER_DATACLASS,
        ),
    ),
    hints=(
        (
            "`register_dataclass` makes each field a child, in the order the fields are declared, "
            "unless its metadata marks it static; configuration such as an activation name is "
            "static."
        ),
        (
            "Inside `define_dense`, decorate a dataclass with `@jax.tree_util.register_dataclass` "
            "above `@dataclass`; declare `w` and `b` as plain fields, then `activation` with "
            "`field(default=..., metadata=dict(static=True))`, and end with `return Dense`."
        ),
    ),
    reread=REGISTER_DATACLASS,
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
    kind="conv1d",
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
        label = f"a `Conv1D` with stride {stride} and padding `{padding!r}`" + (
            "" if with_bias else ", without a bias (`None`)"
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
    _Advice(
        register=Steps(
            idea="JAX looks inside only the classes in its registry. Writing `conv1d_flatten` and "
            "`conv1d_unflatten` does not register them: until they are, a `Conv1D` is one leaf.",
            fix="Call `jax.tree_util.register_pytree_node` with the class and the two functions "
            "inside `define_conv1d`, before `return Conv1D`.",
            reread=UNKNOWN_CLASS_IS_A_LEAF,
        ),
        static=Steps(
            idea="`{field}` is configuration: Python needs its value while tracing (a stride to "
            "slice with, a padding to name a mode), so it must not be traced. Flatten returns a "
            "pair, and only its first item holds children; the second, the auxiliary data, is kept "
            "in the treedef and handed back to unflatten.",
            fix="Return the arrays as the first item of `conv1d_flatten`'s pair and a tuple of "
            "`stride` and `padding` as the second; `conv1d_unflatten` receives that tuple back as "
            "`aux_data`.",
            reread=REGISTER_PYTREE_NODE,
        ),
        children=Steps(
            idea="Arrays are data: JAX traces, maps and differentiates only the children, the "
            "first item of flatten's pair. The auxiliary data is for configuration, and an array "
            "there makes every new array a new structure.",
            fix=(
                "Put `kernel` and `bias`, in that order, in the first item of "
                "`conv1d_flatten`'s pair, `bias` too when it is `None` (`None` is an empty "
                "subtree)."
            ),
            reread=REGISTER_PYTREE_NODE,
        ),
        order=Steps(
            idea="Unflatten receives the children in the order flatten gives them, and JAX pairs "
            "leaves by that order everywhere (a map over two trees, an optimizer's state).",
            fix=(
                "Return the children as `kernel`, then `bias`, and unpack them in the same "
                "order in `conv1d_unflatten`."
            ),
            reread=REGISTER_PYTREE_NODE,
        ),
        rebuild=Steps(
            idea="Unflatten receives what flatten returned, the auxiliary data first and the "
            "children second, and must return a whole `Conv1D` built from both: its arrays and its "
            "configuration.",
            fix=(
                "In `conv1d_unflatten`, unpack the children into `kernel` and `bias` and "
                "`aux_data` into `stride` and `padding`, then return a `Conv1D` made with all "
                "four."
            ),
            reread=REGISTER_PYTREE_NODE,
        ),
    ),
    hints=(
        (
            "A flatten function splits an object into its children (the arrays JAX traces) and "
            "its auxiliary data (the configuration, kept in the treedef, hashable and compared by "
            "value); unflatten receives both back and builds the object again."
        ),
        (
            "`conv1d_flatten` returns a pair: a tuple of the two arrays, then a tuple of stride "
            "and padding. `conv1d_unflatten` unpacks both and makes a `Conv1D` from the four "
            "values. Register the two functions with `jax.tree_util.register_pytree_node` before "
            "`return Conv1D`."
        ),
    ),
    reread=REGISTER_PYTREE_NODE,
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
    kind="layer_norm",
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
                label=f"a `LayerNorm` with `eps={eps}`",
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
    _Advice(
        register=Steps(
            idea="JAX looks inside only the classes in its registry. The decorator "
            "`register_pytree_node_class` registers a class through its `tree_flatten` and "
            "`tree_unflatten` methods; without it a `LayerNorm` is one leaf.",
            fix="Keep `@jax.tree_util.register_pytree_node_class` on the class, directly above "
            "`class LayerNorm`.",
            reread=UNKNOWN_CLASS_IS_A_LEAF,
        ),
        static=Steps(
            idea=(
                "`{field}` is configuration: a constant the formula reads, not a parameter "
                "to train or differentiate. The second item of `tree_flatten`'s pair, the "
                "auxiliary data, is where such values go: it is kept in the treedef and "
                "handed back to `tree_unflatten`."
            ),
            fix="Return the two arrays as the children and `self.eps` as the auxiliary data, then "
            "set `eps` from `aux_data` in `tree_unflatten`.",
            reread=REGISTER_PYTREE_NODE_CLASS,
        ),
        children=Steps(
            idea="Arrays are data: JAX traces, maps and differentiates only the children, the "
            "first item of `tree_flatten`'s pair. The auxiliary data is for configuration, and an "
            "array there makes every new array a new structure.",
            fix=(
                "Return `scale` and `offset`, in that order, as the first item of "
                "`tree_flatten`'s pair."
            ),
            reread=REGISTER_PYTREE_NODE_CLASS,
        ),
        order=Steps(
            idea=(
                "`tree_unflatten` receives the children in the order `tree_flatten` gives "
                "them, and JAX pairs leaves by that order everywhere (a map over two trees, "
                "an optimizer's state)."
            ),
            fix=(
                "Return the children as `scale`, then `offset`, and unpack them in the same "
                "order in `tree_unflatten`."
            ),
            reread=REGISTER_PYTREE_NODE_CLASS,
        ),
        rebuild=Steps(
            idea="`tree_unflatten` receives the auxiliary data and the children, and must return a "
            "whole `LayerNorm`: `scale`, `offset` and `eps`, each stored as it arrives.",
            fix="In `tree_unflatten`, make the instance with `object.__new__(cls)`, set scale and "
            "`offset` from the children and `eps` from `aux_data`, and return it.",
            reread=REGISTER_PYTREE_NODE_CLASS,
        ),
    ),
    hints=(
        (
            "`tree_flatten` gives the arrays as children and `eps` as auxiliary data; "
            "`tree_unflatten` receives whatever children a transformation passes (placeholders, "
            "`None`, tracers) and must store them unchanged (Pitfall 3)."
        ),
        (
            "`tree_flatten` returns the two arrays as the children and `eps` as the auxiliary "
            "data; `tree_unflatten` makes the instance with `object.__new__(cls)` and sets "
            "scale, offset and eps on it, so that `__init__` and its conversions never run."
        ),
    ),
    reread=REGISTER_PYTREE_NODE_CLASS,
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
            "nested dicts, one bias `None`",
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
                "registered dataclass blocks, and the keys `'bw'` and `'raw'`, which end in w but "
                "are not w"
            ),
        ),
        _decay_case(
            {"w": round(float(rng.normal()), 3), "alpha": {"w_scale": leaf()}},
            rates[3],
            "a Python float weight and a key `'w_scale'`",
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


_tree_judge = tree_judge()


_BY_LAST_KEY = Steps(
    idea="A weight is a leaf whose last key is named `w`, a dict key or an attribute. A key path "
    "is a tuple of key objects, and its text depends on the nodes: a dict key prints as "
    "`['w']`, an attribute as `.w`. Decide by the last key itself, not by the text of the whole "
    "path.",
    fix=(
        "Look at `path[-1]`: its `.key` (a `DictKey`) or its `.name` (a `GetAttrKey`) is "
        "`'w'` for a weight; a `SequenceKey` has `.idx` instead, and an empty path has no "
        "last key."
    ),
    reread=KEY_PATHS,
)
"""The steps of a weight told by the text of its path rather than by its last key."""


def _judge_decay(got: Any, expected: Any, case: Case) -> str | Mistake | None:
    if missing_return(got, expected, "decay_weights"):
        return Mistake(
            "`decay_weights` returned `None`, where a tree like `params` was expected.",
            "A Python function without a `return` statement returns `None`: the tree that "
            "`jax.tree.map_with_path` builds is lost unless the function hands it back.",
            "Return the result of `jax.tree.map_with_path`: `return jax.tree.map_with_path(...)`.",
            WEIGHT_DECAY,
        )
    problem = _tree_judge(got, expected, case)
    if not isinstance(problem, str) or structure_found(problem):
        return problem
    params, rate = case.args
    mine = jax.tree_util.tree_leaves_with_path(rebuild_tree(got))
    want = jax.tree.leaves(rebuild_tree(expected))
    given = jax.tree.leaves(params)
    decayed = set(case.info["decayed"])
    # trees_close compares in float64; the given leaves are scaled in float64 before it.
    given = [np.asarray(x, np.float64) for x in given]
    shrunk = [trees_close(a, x * (1 - rate)) for (_, a), x in zip(mine, given, strict=True)]
    for (path, a), e, x in zip(mine, want, given, strict=True):
        if trees_close(a, e):
            continue
        where = keystr(path) or "<root>"
        if where in decayed:
            if trees_close(a, x):
                return _BY_LAST_KEY.mistake(
                    f"leaf `{where}` is a weight (its last key is `w`) but was not decayed."
                )
            if trees_close(a, x * rate):
                return Mistake(
                    f"leaf `{where}` was multiplied by `rate`: it is {rate:g} times its value, "
                    f"where {1 - rate:g} times was expected.",
                    "Weight decay shrinks each weight by a small fraction of itself: the rate is "
                    "the part taken away, not the part kept.",
                    "Multiply each weight by `(1 - rate)`.",
                    WEIGHT_DECAY,
                )
            return f"leaf `{where}` should be {1 - rate:g} times its value; {problem}"
        if trees_close(a, x * (1 - rate)):
            if where == "<root>":
                return Mistake(
                    "the input is a single array, and it was decayed.",
                    "A tree that is one leaf has the empty key path `()`: there is no last key, so "
                    "the leaf is no weight.",
                    "Check that `path` is not empty before reading `path[-1]`, and leave the leaf "
                    "unchanged when it is.",
                    KEY_PATHS,
                )
            if all(shrunk):
                return Mistake(
                    f"every leaf was decayed, `{where}` too, although its last key is not `w`.",
                    "Weight decay is for the weights only, and what makes a leaf a weight is its "
                    "key path: `jax.tree.map` hands your function the leaves alone.",
                    "Use `jax.tree.map_with_path(f, params)`: `f` receives `(path, leaf)` and "
                    "decays the leaf only when the last key of `path` is `w`.",
                    WEIGHT_DECAY,
                )
            return _BY_LAST_KEY.mistake(f"leaf `{where}` was decayed, but its last key is not `w`.")
        return f"leaf `{where}` is no weight and must stay unchanged; {problem}"
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
            "A weight is a leaf whose last key is named `w`, whether that key is a dict key or an "
            "attribute. A key path is a tuple of key objects, and the text of a whole path differs "
            "between the two; a tree that is a single leaf has the empty path, with no last key."
        ),
        (
            "Use `jax.tree.map_with_path(f, params)`. In `f(path, leaf)`, leave the leaf "
            "unchanged when `path` is empty; otherwise read the last key's name, `path[-1].key` "
            "for a `DictKey` or `path[-1].name` for a `GetAttrKey`, and multiply the leaf by "
            "`(1 - rate)` when it is `'w'`."
        ),
    ),
    reread=KEY_PATHS,
    mistakes=(
        "looks for the text `.w`, which a dict key prints as `['w']`",
        "decays leaves whose last key is not `w`",
        "multiplies by `rate` instead of `1 - rate`",
        "fails on a leaf with an empty key path",
        "forgets `return`",
    ),
)


EXERCISES = (DENSE, CONV1D, LAYER_NORM, DECAY_WEIGHTS)
