"""Lesson 04 self-checks: not attempted, the hint each typical mistake gets, and right answers
passing."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from exercise_support import LessonChecks, answer_id, check_output
from jax_wording import WORDINGS, withhold_jax_wording

from course_lib import jax_at_least
from course_lib.checks import _lesson04, check, evaluate, get_exercise

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_04 = ("04.dense", "04.fixed_mlp", "04.frozen_config", "04.static_and_traced")

ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu, "identity": lambda x: x}


# --- 04.dense ------------------------------------------------------------------------------------


def dense_class(
    static: tuple[str, ...] = ("activation", "use_bias"),
    register: bool = True,
    bias_always: bool = False,
):
    """A Dense class with the given fields static (a right answer with the defaults)."""

    @dataclass
    class Dense:
        w: jax.Array = field(metadata={"static": "w" in static})
        b: jax.Array = field(metadata={"static": "b" in static})
        activation: str = field(default="tanh", metadata={"static": "activation" in static})
        use_bias: bool = field(default=True, metadata={"static": "use_bias" in static})

        def __call__(self, x):
            y = x @ self.w
            if self.use_bias or bias_always:
                y = y + self.b
            return ACTIVATIONS[self.activation](y)

    return jax.tree_util.register_dataclass(Dense) if register else Dense


def define_dense():
    return dense_class()


def dense_activation_leaf():
    return dense_class(static=("use_bias",))


def dense_use_bias_leaf():
    return dense_class(static=("activation",))


def dense_unregistered():
    return dense_class(register=False)


def dense_weights_static():
    return dense_class(static=("w", "b", "activation", "use_bias"))


def dense_bias_always():
    return dense_class(bias_always=True)


def dense_returning_an_instance():
    return dense_class()(w=jnp.ones((2, 2)), b=jnp.ones(2))


# --- 04.fixed_mlp --------------------------------------------------------------------------------


def mlp_class(static: tuple[str, ...]):
    @jax.tree_util.register_dataclass
    @dataclass
    class MLP:
        layers: list = field(metadata={"static": "layers" in static})
        depth: int = field(metadata={"static": "depth" in static})
        act: str = field(metadata={"static": "act" in static})
        scale: float = field(default=1.0, metadata={"static": "scale" in static})

        def __call__(self, x):
            for layer in self.layers[: self.depth]:
                x = x @ layer["w"]
                if layer["b"] is not None:
                    x = x + layer["b"]
                x = ACTIVATIONS[self.act](x)
            return self.scale * x

    return MLP


def define_mlp():
    return mlp_class(("depth", "act"))


def mlp_scale_static():
    return mlp_class(("depth", "act", "scale"))


def mlp_depth_leaf():
    return mlp_class(("act",))


def mlp_unchanged():
    return mlp_class(())


# --- 04.frozen_config ----------------------------------------------------------------------------


def config_class(to_tuple: bool = True, **options: bool):
    @dataclass(**options)
    class TrainConfig:
        hidden: tuple
        activation: str = "relu"

        def __post_init__(self):
            if to_tuple:
                object.__setattr__(self, "hidden", tuple(self.hidden))

    return TrainConfig


def define_config():
    return config_class(frozen=True)


def config_plain():
    return config_class()


def config_keeps_list():
    return config_class(to_tuple=False, frozen=True)


def config_unsafe_hash():
    return config_class(unsafe_hash=True)


def config_by_identity():
    return config_class(frozen=True, eq=False)


def config_plain_assigning():
    """A plain dataclass whose __post_init__ assigns, as a learner writes it first."""

    @dataclass
    class TrainConfig:
        hidden: tuple
        activation: str = "relu"

        def __post_init__(self):
            self.hidden = tuple(self.hidden)

    return TrainConfig


def config_frozen_still_assigning():
    """config_plain_assigning made frozen, the rest of the fix left out."""

    @dataclass(frozen=True)
    class TrainConfig:
        hidden: tuple
        activation: str = "relu"

        def __post_init__(self):
            self.hidden = tuple(self.hidden)  # type: ignore[misc]  # the mistake under test

    return TrainConfig


def config_frozen_fixed():
    """config_plain_assigning with its fix applied as written: frozen, object.__setattr__."""

    @dataclass(frozen=True)
    class TrainConfig:
        hidden: tuple
        activation: str = "relu"

        def __post_init__(self):
            object.__setattr__(self, "hidden", tuple(self.hidden))

    return TrainConfig


# --- 04.static_and_traced ------------------------------------------------------------------------


def static_and_traced(obj):
    # the trick: every node below the object counts as a leaf, so only one level is flattened
    children, _ = jax.tree_util.tree_flatten_with_path(obj, is_leaf=lambda node: node is not obj)
    traced = {path[0].name for path, _ in children}
    names = [f.name for f in dataclasses.fields(obj)]
    return [n for n in names if n in traced], [n for n in names if n not in traced]


def static_and_traced_one_level(obj):
    children, _ = jax.tree_util.flatten_one_level_with_keys(obj)
    traced = {key.name for key, _ in children}
    names = [f.name for f in dataclasses.fields(obj)]
    return [n for n in names if n in traced], [n for n in names if n not in traced]


def static_and_traced_by_registry(obj):
    # the registry's own one-level flatten, in jaxlib on every JAX the course supports
    children, _ = jax.tree_util.default_registry.flatten_one_level_with_keys(obj)
    traced = [key.name for key, _ in children]
    return (
        [f.name for f in dataclasses.fields(obj) if f.name in traced],
        [f.name for f in dataclasses.fields(obj) if f.name not in traced],
    )


def split_by_metadata(obj):
    fields = dataclasses.fields(obj)
    return [f.name for f in fields if not f.metadata.get("static")], [
        f.name for f in fields if f.metadata.get("static")
    ]


def split_by_leaves(obj):
    traced = []
    for path, _ in jax.tree_util.tree_leaves_with_path(obj):
        if path[0].name not in traced:
            traced.append(path[0].name)
    return traced, [f.name for f in dataclasses.fields(obj) if f.name not in traced]


def split_by_key_paths(obj):
    return [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_leaves_with_path(obj)], []


def split_sorted(obj):
    traced, static = static_and_traced(obj)
    return sorted(traced), sorted(static)


def split_in_flatten_order(obj):
    """The fix the metadata and leaves mistakes once gave, as written: the traced fields in the
    order JAX flattens them, which data_fields= may set apart from the declaration order."""
    children, _ = jax.tree_util.tree_flatten_with_path(obj, is_leaf=lambda n: n is not obj)
    traced = [path[0].name for path, _ in children]
    return traced, [f.name for f in dataclasses.fields(obj) if f.name not in traced]


def split_one_level_by_declaration(obj):
    """The fix of the metadata, leaves and flatten-order mistakes, applied as written."""
    children, _ = jax.tree_util.tree_flatten_with_path(obj, is_leaf=lambda n: n is not obj)
    traced = [path[0].name for path, _ in children]
    names = [f.name for f in dataclasses.fields(obj)]
    return [n for n in names if n in traced], [n for n in names if n not in traced]


def split_sorted_fixed(obj):
    """split_sorted with its fix applied: the fields gone through in declaration order."""
    traced = set(split_in_flatten_order(obj)[0])
    traced_names: list[str] = []
    static_names: list[str] = []
    for f in dataclasses.fields(obj):
        (traced_names if f.name in traced else static_names).append(f.name)
    return traced_names, static_names


# Right answers written differently from the references.


def define_dense_by_meta_fields():
    @dataclass
    class Dense:
        w: jax.Array
        b: jax.Array
        activation: str = "tanh"
        use_bias: bool = True

        def __call__(self, x):
            y = x @ self.w + self.b if self.use_bias else x @ self.w
            return ACTIVATIONS[self.activation](y)

    return jax.tree_util.register_dataclass(
        Dense, data_fields=["w", "b"], meta_fields=["activation", "use_bias"]
    )


def define_mlp_with_tree_static():
    @jax.tree_util.register_dataclass
    @dataclass
    class MLP:
        layers: list
        depth: int = jax.tree.static()
        act: str = jax.tree.static()
        scale: float = 1.0

        def __call__(self, x):
            for layer in self.layers[: self.depth]:
                x = ACTIVATIONS[self.act](
                    x @ layer["w"] + (0.0 if layer["b"] is None else layer["b"])
                )
            return self.scale * x

    return MLP


def define_config_with_replace():
    @dataclass(frozen=True, eq=True)
    class TrainConfig:
        hidden: tuple
        activation: str = "relu"

        def __post_init__(self):
            object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))

    return TrainConfig


ALSO_RIGHT: list[tuple[str, Callable[..., Any]]] = [
    ("04.dense", define_dense_by_meta_fields),
    ("04.frozen_config", define_config_with_replace),
    ("04.static_and_traced", static_and_traced_by_registry),
]
# Spellings from JAX releases newer than the course's floor: right answers wherever they exist.
if jax_at_least("0.9.1"):
    ALSO_RIGHT.append(("04.fixed_mlp", define_mlp_with_tree_static))
if jax_at_least("0.10.2"):
    ALSO_RIGHT.append(("04.static_and_traced", static_and_traced_one_level))


RIGHT: dict[str, Callable[..., Any]] = {
    "04.dense": define_dense,
    "04.fixed_mlp": define_mlp,
    "04.frozen_config": define_config,
    "04.static_and_traced": static_and_traced,
}

WRONG: list[tuple[str, Callable[..., Any], str]] = [
    (
        "04.dense",
        dense_activation_leaf,
        "'tanh' is a leaf, so the field `activation` is traced, and `jit` cannot trace a string",
    ),
    ("04.dense", dense_use_bias_leaf, "True is a leaf, so the field `use_bias` is traced"),
    ("04.dense", dense_unregistered, "JAX sees a Dense as one opaque leaf"),
    ("04.dense", dense_weights_static, "an array field is static"),
    ("04.dense", dense_bias_always, "gave the same result as with the bias"),
    (
        "04.dense",
        dense_returning_an_instance,
        "`define_dense()` returned an instance of Dense, not a class",
    ),
    (
        "04.fixed_mlp",
        mlp_scale_static,
        "`scale` is not a leaf: it is static, so every new scale compiles a new program",
    ),
    ("04.fixed_mlp", mlp_depth_leaf, "2 is a leaf, so the field `depth` is traced"),
    (
        "04.fixed_mlp",
        mlp_unchanged,
        "so the field `act` is traced, and `jit` cannot trace a string",
    ),
    ("04.frozen_config", config_plain, "the class's `__hash__ is None`"),
    ("04.frozen_config", config_keeps_list, "`hidden` was given as a list and kept as one"),
    (
        "04.frozen_config",
        config_unsafe_hash,
        "the config can change after `jit` has used it as a cache key",
    ),
    ("04.frozen_config", config_by_identity, "built separately, are not equal (`==`)"),
    ("04.frozen_config", config_plain_assigning, "the class's `__hash__ is None`"),
    ("04.static_and_traced", split_by_metadata, "its fields carry no metadata"),
    ("04.static_and_traced", split_by_leaves, "holds `None` and is missing from the traced fields"),
    (
        "04.static_and_traced",
        split_by_key_paths,
        "'.scale', a key path written out as text, where the field's name",
    ),
    ("04.static_and_traced", split_sorted, "the right names, in another order"),
    ("04.static_and_traced", split_in_flatten_order, "JAX may flatten in another"),
]

FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("04.dense", dense_activation_leaf, define_dense),
    ("04.dense", dense_use_bias_leaf, define_dense),
    ("04.dense", dense_unregistered, define_dense),
    ("04.dense", dense_weights_static, define_dense),
    ("04.dense", dense_bias_always, define_dense),
    ("04.dense", dense_returning_an_instance, define_dense),
    ("04.fixed_mlp", mlp_scale_static, define_mlp),
    ("04.fixed_mlp", mlp_depth_leaf, define_mlp),
    ("04.fixed_mlp", mlp_unchanged, define_mlp),
    ("04.frozen_config", config_keeps_list, define_config),
    ("04.frozen_config", config_by_identity, define_config),
    ("04.frozen_config", config_plain, define_config),
    ("04.frozen_config", config_plain_assigning, config_frozen_fixed),
    ("04.frozen_config", config_unsafe_hash, config_frozen_fixed),
    ("04.static_and_traced", split_by_metadata, split_one_level_by_declaration),
    ("04.static_and_traced", split_by_leaves, split_one_level_by_declaration),
    ("04.static_and_traced", split_in_flatten_order, split_one_level_by_declaration),
    ("04.static_and_traced", split_sorted, split_sorted_fixed),
]


NAMED: dict[str, dict[str, str]] = {
    "04.dense": {
        "stores `activation` as a leaf, and `jit` cannot trace a string": (
            "'tanh' is a leaf, so the field `activation` is traced, and `jit` cannot trace a string"
        ),
        "stores `use_bias` as a leaf, so it is traced": (
            "True is a leaf, so the field `use_bias` is traced"
        ),
        "leaves the class unregistered": "JAX sees a Dense as one opaque leaf",
        "marks the weights static: arrays are never static (Pitfall 8)": "an array field is static",
        "keeps a bias when `use_bias=False`": "gave the same result as with the bias",
    },
    "04.fixed_mlp": {
        "makes `scale` static, so every new scale compiles again": (
            "`scale` is not a leaf: it is static, so every new scale compiles a new program"
        ),
        "leaves `depth` a leaf, so it is traced": "2 is a leaf, so the field `depth` is traced",
        "leaves the bug in place: `act` is still a leaf": (
            "so the field `act` is traced, and `jit` cannot trace a string"
        ),
    },
    "04.frozen_config": {
        "uses a plain `@dataclass`, which cannot be hashed (Pitfall 7)": (
            "the class's `__hash__ is None`"
        ),
        "keeps `hidden` as the list it was given": "`hidden` was given as a list and kept as one",
        "uses `unsafe_hash` on a class that can still change": (
            "the config can change after `jit` has used it as a cache key"
        ),
        "compares by identity, so equal configs are not equal": (
            "built separately, are not equal (`==`)"
        ),
    },
    "04.static_and_traced": {
        "reads field metadata that some registered classes do not carry": (
            "its fields carry no metadata"
        ),
        "decides by the leaves, missing a traced field that holds `None`": (
            "holds `None` and is missing from the traced fields"
        ),
        "returns key paths instead of field names": (
            "'.scale', a key path written out as text, where the field's name"
        ),
        "sorts the names instead of keeping their declaration order": (
            "the right names, in another order"
        ),
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson04(LessonChecks):
    ids = LESSON_04
    points = 9
    right = RIGHT
    wrong = WRONG
    named = NAMED
    also_right = ALSO_RIGHT
    fixed = FIXED


def test_dense_counts_a_compilation_per_configuration() -> None:
    exercise = get_exercise("04.dense")
    case = exercise.make_cases("check")[0]
    report = exercise.probe(define_dense, case)
    assert (
        report["compiles"] == 4
    )  # tanh, then the first and second activations, and use_bias=False
    assert report["leaves"] == [
        f"f32[{case.info['x'].size},{case.info['weights'][0][1].size}]",
        f"f32[{case.info['weights'][0][1].size}]",
    ]


def test_counts_do_not_depend_on_earlier_compilations(capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(2):
        check("04.fixed_mlp", define_mlp)
        check("04.frozen_config", define_config)
    assert capsys.readouterr().out.count("passed") == 4


def test_static_and_traced_cases_cover_every_way_to_be_static() -> None:
    kinds = {case.info["kind"] for case in get_exercise("04.static_and_traced").make_cases("grade")}
    assert {"metadata", "tree_static", "named", "register_static", "nested", "none"} <= kinds


def dense_branching_on_a_leaf():
    @jax.tree_util.register_dataclass
    @dataclass
    class Dense:
        w: jax.Array
        b: jax.Array
        activation: str = field(default="tanh", metadata={"static": True})
        use_bias: bool = field(default=True, metadata={"static": True})

        def __call__(self, x):
            if self.b.sum() > 0:  # a traced value in an `if`
                return x @ self.w
            return x @ self.w + self.b

    return Dense


def test_jit_errors_are_reported_without_addresses_or_locations() -> None:
    verdict = evaluate(get_exercise("04.dense"), dense_branching_on_a_leaf)
    assert verdict.status == "failed"
    assert "calling the jitted forward raised TracerBoolConversionError" in verdict.message
    assert "0x" not in verdict.message and ".py:" not in verdict.message


def test_a_frozen_config_that_still_assigns_is_told_where(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Half the fix (frozen, the assignment left in __post_init__) is told at the learner's own
    line, never at the line of the __setattr__ that dataclasses generates."""
    out = check_output("04.frozen_config", config_frozen_still_assigning, capsys)
    assert "raised `FrozenInstanceError`: cannot assign to field 'hidden'" in out, out
    assert "of __post_init__)" in out and "__setattr__" not in out, out


def test_grading_cases_hold_other_inputs() -> None:
    dense = get_exercise("04.dense")
    shown = {str(np.asarray(c.info["x"]).tolist()) for c in dense.make_cases("check")}
    graded = {str(np.asarray(c.info["x"]).tolist()) for c in dense.make_cases("grade")}
    assert not shown & graded


# --- hints that do not depend on the wording of an error -----------------------------------------


@pytest.mark.parametrize("wording", WORDINGS)
@pytest.mark.parametrize(
    ("answer", "what", "idea"),
    [
        (
            config_keeps_list,
            "`hidden` was given as a list and kept as one",
            "a config is hashable only if every field is",
        ),
        (
            config_plain,
            "the class's `__hash__ is None`",
            "A plain `@dataclass` sets `__hash__` to `None` (Pitfall 7)",
        ),
    ],
    ids=answer_id,
)
def test_hash_hints_come_from_the_fields_not_the_message(
    answer: Callable[..., Any],
    what: str,
    idea: str,
    wording: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Which field cannot be hashed is measured (hash of each field's value, the class's
    __hash__), not read from "unhashable type: 'list'", here withheld or reworded, with JAX's
    explanations too (the compile counts of the forward): the first failure says what went
    wrong, the second adds the idea."""
    withhold_jax_wording(monkeypatch, wording, _lesson04)
    first = check_output("04.frozen_config", answer, capsys)
    second = check_output("04.frozen_config", answer, capsys)
    assert what in first and idea not in first, first
    assert idea in second, second


def test_a_config_with_another_unhashable_field_is_named(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def config_with_a_dict():
        @dataclass(frozen=True)
        class TrainConfig:
            hidden: tuple
            activation: str = "relu"
            extra: Any = dataclasses.field(default_factory=dict)

            def __post_init__(self):
                object.__setattr__(self, "hidden", tuple(self.hidden))

        return TrainConfig

    out = check_output("04.frozen_config", config_with_a_dict, capsys)
    assert "the field `extra` holds a dict, which cannot be hashed" in out, out
