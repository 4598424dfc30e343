"""Lesson 03 self-checks: classes registered three ways, and weight decay by key path.

The cases' ``Block`` class and the reference ``Dense`` live in the lesson's module, which these
tests import for them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from exercise_support import (
    ROOT,
    STUB_MESSAGE,
    LessonChecks,
    has_none,
    repeated_check_output,
)
from jax.tree_util import DictKey, GetAttrKey, keystr

from course_lib import checks
from course_lib.checks import check, evaluate, get_exercise
from course_lib.checks._lesson03 import Block
from course_tools._notebook_files import read_notebook

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_03 = ("03.dense", "03.conv1d", "03.layer_norm", "03.decay_weights")


# --- the exercise notebook's starting points ------------------------------------------------------


def stub_define_dense():
    raise NotImplementedError(STUB_MESSAGE)


def stub_define_conv1d():
    class Conv1D:
        def __init__(self, kernel, bias, stride=1, padding="SAME"):
            self.kernel, self.bias, self.stride, self.padding = kernel, bias, stride, padding

    def conv1d_flatten(layer):
        raise NotImplementedError(STUB_MESSAGE)

    def conv1d_unflatten(aux_data, children):
        raise NotImplementedError(STUB_MESSAGE)

    jax.tree_util.register_pytree_node(Conv1D, conv1d_flatten, conv1d_unflatten)
    return Conv1D


def stub_define_layer_norm():
    @jax.tree_util.register_pytree_node_class
    class LayerNorm(NormBase):
        def tree_flatten(self):
            raise NotImplementedError(STUB_MESSAGE)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            raise NotImplementedError(STUB_MESSAGE)

    return LayerNorm


def stub_decay(params, rate):
    raise NotImplementedError(STUB_MESSAGE)


class ConvBase:
    """What the exercise gives: a constructor that stores what it gets."""

    def __init__(self, kernel, bias, stride=1, padding="SAME"):
        self.kernel, self.bias, self.stride, self.padding = kernel, bias, stride, padding


class NormBase:
    """What the exercise gives: a constructor that converts its arguments."""

    def __init__(self, scale, offset, eps=1e-5):
        self.scale = jnp.asarray(scale, dtype=jnp.float32)
        self.offset = jnp.asarray(offset, dtype=jnp.float32)
        self.eps = float(eps)


STUBS: dict[str, Callable[..., Any]] = {
    "03.dense": stub_define_dense,
    "03.conv1d": stub_define_conv1d,
    "03.layer_norm": stub_define_layer_norm,
    "03.decay_weights": stub_decay,
}


# --- right answers --------------------------------------------------------------------------------


def define_dense():
    @jax.tree_util.register_dataclass
    @dataclass
    class Dense:
        w: jax.Array
        b: jax.Array
        activation: str = field(default="relu", metadata=dict(static=True))

    return Dense


def define_frozen_dense():
    return _dense(frozen=True)


def define_conv1d():
    class Conv1D(ConvBase):
        pass

    def conv1d_flatten(layer):
        return (layer.kernel, layer.bias), (layer.stride, layer.padding)

    def conv1d_unflatten(aux_data, children):
        return Conv1D(*children, *aux_data)

    jax.tree_util.register_pytree_node(Conv1D, conv1d_flatten, conv1d_unflatten)
    return Conv1D


def define_layer_norm():
    @jax.tree_util.register_pytree_node_class
    class LayerNorm(NormBase):
        def tree_flatten(self):
            return (self.scale, self.offset), self.eps

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            layer = object.__new__(cls)
            layer.scale, layer.offset = children
            layer.eps = aux_data
            return layer

    return LayerNorm


def decay_weights(params, rate):
    def decay(path, leaf):
        name = getattr(path[-1], "key", getattr(path[-1], "name", None)) if path else None
        return leaf * (1 - rate) if name == "w" else leaf

    return jax.tree.map_with_path(decay, params)


# Right answers written differently from the references.


def define_dense_by_meta_fields():
    @dataclass
    class Dense:
        w: jax.Array
        b: jax.Array
        activation: str = "relu"

    jax.tree_util.register_dataclass(Dense, data_fields=["w", "b"], meta_fields=["activation"])
    return Dense


def define_dense_with_keys():
    class Dense:
        def __init__(self, w, b, activation="relu"):
            self.w, self.b, self.activation = w, b, activation

    def flatten(d):
        return [
            (jax.tree_util.GetAttrKey("w"), d.w),
            (jax.tree_util.GetAttrKey("b"), d.b),
        ], d.activation

    jax.tree_util.register_pytree_with_keys(
        Dense,
        flatten,
        lambda a, c: Dense(*c, a),  # type: ignore[call-arg]  # c holds w and b: mypy cannot count it
    )
    return Dense


def define_conv1d_with_keys_and_new():
    class Conv1D(ConvBase):
        pass

    def flatten(layer):
        return [
            (jax.tree_util.GetAttrKey("kernel"), layer.kernel),
            (jax.tree_util.GetAttrKey("bias"), layer.bias),
        ], (
            layer.stride,
            layer.padding,
        )

    def unflatten(aux, children):
        layer = object.__new__(Conv1D)
        layer.kernel, layer.bias = children
        layer.stride, layer.padding = aux
        return layer

    jax.tree_util.register_pytree_with_keys(Conv1D, flatten, unflatten)
    return Conv1D


def define_layer_norm_frozen_aux():
    @jax.tree_util.register_pytree_node_class
    class LayerNorm(NormBase):
        def tree_flatten(self):
            return [self.scale, self.offset], (("eps", self.eps),)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            layer = cls.__new__(cls)
            layer.scale, layer.offset = children
            layer.eps = dict(aux_data)["eps"]
            return layer

    return LayerNorm


def decay_by_flatten_with_path(params, rate):
    pairs, treedef = jax.tree_util.tree_flatten_with_path(params)

    def is_w(path):
        last = path[-1] if path else None
        return (
            isinstance(last, jax.tree_util.DictKey)
            and last.key == "w"
            or (isinstance(last, jax.tree_util.GetAttrKey) and last.name == "w")
        )

    return treedef.unflatten([leaf * (1 - rate) if is_w(path) else leaf for path, leaf in pairs])  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped


ALSO_RIGHT: list[tuple[str, Callable[..., Any]]] = [
    ("03.dense", define_dense_by_meta_fields),
    ("03.dense", define_frozen_dense),
    ("03.dense", define_dense_with_keys),
    ("03.conv1d", define_conv1d_with_keys_and_new),
    ("03.layer_norm", define_layer_norm_frozen_aux),
    ("03.decay_weights", decay_by_flatten_with_path),
]


RIGHT: dict[str, Callable[..., Any]] = {
    "03.dense": define_dense,
    "03.conv1d": define_conv1d,
    "03.layer_norm": define_layer_norm,
    "03.decay_weights": decay_weights,
}


# --- typical wrong answers ------------------------------------------------------------------------


def _dense(register: bool = True, static: bool = True, frozen: bool = False) -> type:
    """define_dense's class, registered or not, with activation static or a child, frozen or not."""

    @dataclass(frozen=frozen)  # type: ignore[literal-required]  # both variants are wanted
    class Dense:
        w: jax.Array
        b: jax.Array
        activation: str = field(default="relu", metadata=dict(static=static))

    return jax.tree_util.register_dataclass(Dense) if register else Dense


def dense_unregistered():
    return _dense(register=False)


def dense_activation_as_leaf():
    return _dense(static=False)


def dense_fields_reordered():
    @jax.tree_util.register_dataclass
    @dataclass
    class Dense:
        b: jax.Array
        w: jax.Array
        activation: str = field(default="relu", metadata=dict(static=True))

        def __init__(self, w, b, activation="relu"):
            self.w, self.b, self.activation = w, b, activation

    return Dense


def dense_by_hand():
    class Dense:
        def __init__(self, w, b, activation="relu"):
            self.w, self.b, self.activation = w, b, activation

    jax.tree_util.register_pytree_node(
        Dense, lambda d: ((d.w, d.b), d.activation), lambda a, c: Dense(*c, a)
    )
    return Dense


def dense_without_return():
    _dense()


def dense_returning_an_instance():
    return _dense()(jnp.ones((3, 2)), None)


def _conv(flatten, unflatten):
    class Conv1D(ConvBase):
        pass

    jax.tree_util.register_pytree_node(
        Conv1D, flatten, lambda aux, children: unflatten(Conv1D, aux, children)
    )
    return Conv1D


def conv_everything_a_child():
    return _conv(
        lambda c: ((c.kernel, c.bias, c.stride, c.padding), None), lambda cls, aux, ch: cls(*ch)
    )


def conv_forgetting_aux():
    return _conv(
        lambda c: ((c.kernel, c.bias), (c.stride, c.padding)), lambda cls, aux, ch: cls(*ch)
    )


def conv_returning_tuple():
    return _conv(
        lambda c: ((c.kernel, c.bias), (c.stride, c.padding)), lambda cls, aux, ch: tuple(ch)
    )


def conv_dict_aux():
    return _conv(
        lambda c: ((c.kernel, c.bias), {"stride": c.stride, "padding": c.padding}),
        lambda cls, aux, ch: cls(*ch, aux["stride"], aux["padding"]),
    )


def conv_half_done():
    def unflatten(cls, aux, children):
        raise NotImplementedError(STUB_MESSAGE)

    return _conv(lambda c: ((c.kernel, c.bias), (c.stride, c.padding)), unflatten)


def _norm(flatten, unflatten):
    @jax.tree_util.register_pytree_node_class
    class LayerNorm(NormBase):
        def tree_flatten(self):
            return flatten(self)

        @classmethod
        def tree_unflatten(cls, aux_data, children):
            return unflatten(cls, aux_data, children)

    return LayerNorm


def _bypassing_init(cls, scale, offset, eps):
    layer = object.__new__(cls)
    layer.scale, layer.offset, layer.eps = scale, offset, eps
    return layer


def norm_calling_init():
    return _norm(lambda n: ((n.scale, n.offset), n.eps), lambda cls, aux, ch: cls(*ch, aux))


def norm_eps_as_child():
    return _norm(
        lambda n: ((n.scale, n.offset, n.eps), None), lambda cls, aux, ch: _bypassing_init(cls, *ch)
    )


def norm_losing_eps():
    return _norm(
        lambda n: ((n.scale, n.offset), None),
        lambda cls, aux, ch: _bypassing_init(cls, *ch, 1e-5),  # type: ignore[call-arg]  # ch: 2 children
    )


def decay_by_text_ending(params, rate):
    return jax.tree.map_with_path(
        lambda p, x: x * (1 - rate) if keystr(p).endswith(".w") else x, params
    )


def decay_by_text_containing(params, rate):
    return jax.tree.map_with_path(lambda p, x: x * (1 - rate) if "w" in keystr(p) else x, params)


def decay_by_rate(params, rate):
    def decay(path, leaf):
        name = getattr(path[-1], "key", getattr(path[-1], "name", None)) if path else None
        return leaf * rate if name == "w" else leaf

    return jax.tree.map_with_path(decay, params)


def decay_empty_path_crash(params, rate):
    def decay(path, leaf):
        name = getattr(path[-1], "key", getattr(path[-1], "name", None))
        return leaf * (1 - rate) if name == "w" else leaf

    return jax.tree.map_with_path(decay, params)


def decay_everything(params, rate):
    return jax.tree.map(lambda x: x * (1 - rate), params)


def decay_forgetting_return(params, rate):
    jax.tree.map(lambda x: x * (1 - rate), params)


WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("03.dense", dense_unregistered, "JAX sees a `Dense` as a single leaf"),
    (
        "03.dense",
        dense_activation_as_leaf,
        "include 'tanh', the value of its `activation`, next to its arrays: `jit` refuses a "
        "string leaf with a `TypeError`",
    ),
    ("03.dense", dense_fields_reordered, "the leaves come in another order"),
    (
        "03.dense",
        dense_by_hand,
        "the key paths of the leaves are ['[<flat index 0>]', '[<flat index 1>]'], expected",
    ),
    ("03.dense", dense_without_return, "`define_dense` returned None, not a class"),
    ("03.dense", dense_returning_an_instance, "`define_dense` returned a Dense, not a class"),
    (
        "03.conv1d",
        conv_everything_a_child,
        "include 2, the value of its `stride`, next to its arrays: `jit` would trace it, and "
        "`grad` refuses an integer leaf",
    ),
    ("03.conv1d", conv_forgetting_aux, "gave a `Conv1D` whose `stride` is wrong"),
    ("03.conv1d", conv_returning_tuple, "gave a tuple, not a `Conv1D`"),
    ("03.conv1d", conv_half_done, "That is the stub's error: unflatten still holds the stub"),
    (
        "03.conv1d",
        conv_dict_aux,
        "the auxiliary data of a `Conv1D` is a dict, which cannot be hashed",
    ),
    ("03.layer_norm", norm_calling_init, "a real number, not a placeholder"),
    ("03.layer_norm", norm_eps_as_child, "include 0.1, the value of its `eps`"),
    ("03.layer_norm", norm_losing_eps, "differ only in `eps` have the same structure"),
    (
        "03.decay_weights",
        decay_by_text_ending,
        "is a weight (its last key is `w`) but was not decayed",
    ),
    ("03.decay_weights", decay_by_text_containing, "was decayed, but its last key is not `w`"),
    ("03.decay_weights", decay_by_rate, "was multiplied by `rate`"),
    ("03.decay_weights", decay_empty_path_crash, "raised `IndexError`"),
    ("03.decay_weights", decay_forgetting_return, "`decay_weights` returned `None`"),
    ("03.decay_weights", decay_everything, "every leaf was decayed"),
]


# --- each wrong answer with the fix its last hint gives, applied as written -----------------------


def dense_registered():
    return _dense(register=True)


def dense_activation_declared_static():
    """dense_activation_as_leaf with its fix: the field that the exercise notebook imports."""
    return _dense(static=True)


def dense_fields_in_order():
    @jax.tree_util.register_dataclass
    @dataclass
    class Dense:
        w: jax.Array
        b: jax.Array
        activation: str = field(default="relu", metadata=dict(static=True))

        def __init__(self, w, b, activation="relu"):
            self.w, self.b, self.activation = w, b, activation

    return Dense


def conv_aux_as_tuple():
    return _conv(
        lambda c: ((c.kernel, c.bias), (c.stride, c.padding)),
        lambda cls, aux, ch: cls(*ch, *aux),
    )


def conv_unpacking_all_four():
    def unflatten(cls, aux_data, children):
        kernel, bias = children
        stride, padding = aux_data
        return cls(kernel, bias, stride, padding)

    return _conv(lambda c: ((c.kernel, c.bias), (c.stride, c.padding)), unflatten)


def norm_without_init():
    def unflatten(cls, aux, children):
        layer = object.__new__(cls)
        layer.scale, layer.offset = children
        layer.eps = aux
        return layer

    return _norm(lambda n: ((n.scale, n.offset), n.eps), unflatten)


def _last_key_name(path):
    return getattr(path[-1], "key", getattr(path[-1], "name", None)) if path else None


def decay_by_last_key(params, rate):
    return jax.tree.map_with_path(
        lambda path, leaf: leaf * (1 - rate) if _last_key_name(path) == "w" else leaf, params
    )


FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("03.dense", dense_unregistered, dense_registered),
    ("03.dense", dense_activation_as_leaf, dense_activation_declared_static),
    ("03.dense", dense_fields_reordered, dense_fields_in_order),
    ("03.dense", dense_by_hand, define_dense),
    ("03.dense", dense_without_return, define_dense),
    ("03.dense", dense_returning_an_instance, define_dense),
    ("03.conv1d", conv_everything_a_child, conv_aux_as_tuple),
    ("03.conv1d", conv_forgetting_aux, conv_unpacking_all_four),
    ("03.conv1d", conv_returning_tuple, conv_unpacking_all_four),
    ("03.conv1d", conv_half_done, conv_unpacking_all_four),
    ("03.conv1d", conv_dict_aux, conv_aux_as_tuple),
    ("03.layer_norm", norm_calling_init, norm_without_init),
    ("03.layer_norm", norm_eps_as_child, norm_without_init),
    ("03.layer_norm", norm_losing_eps, norm_without_init),
    ("03.decay_weights", decay_by_text_ending, decay_by_last_key),
    ("03.decay_weights", decay_by_text_containing, decay_by_last_key),
    ("03.decay_weights", decay_by_rate, decay_by_last_key),
    ("03.decay_weights", decay_empty_path_crash, decay_by_last_key),
    ("03.decay_weights", decay_everything, decay_by_last_key),
    ("03.decay_weights", decay_forgetting_return, decay_by_last_key),
]


# --- the tests ------------------------------------------------------------------------------------


NAMED: dict[str, dict[str, str]] = {
    "03.dense": {
        "leaves the class unregistered, so JAX sees one leaf": (
            "JAX sees a `Dense` as a single leaf"
        ),
        "makes `activation` a child instead of static configuration": (
            "include 'tanh', the value of its `activation`, next to its arrays: `jit` refuses a "
            "string leaf with a `TypeError`"
        ),
        "declares the fields in another order than `w, b, activation`": (
            "the leaves come in another order"
        ),
        "registers it by hand, so its key paths lose the field names": (
            "the key paths of the leaves are ['[<flat index 0>]', '[<flat index 1>]'], expected"
        ),
        "forgets `return Dense`": "`define_dense` returned None, not a class",
        "returns an instance instead of the class": "`define_dense` returned a Dense, not a class",
    },
    "03.conv1d": {
        "makes `stride` and `padding` children instead of auxiliary data": (
            "include 2, the value of its `stride`, next to its arrays: `jit` would trace it, and "
            "`grad` refuses an integer leaf"
        ),
        "drops the auxiliary data, and `stride` with it": "gave a `Conv1D` whose `stride` is wrong",
        "unflattens into a tuple instead of a `Conv1D`": "gave a tuple, not a `Conv1D`",
        "leaves part of the stub in place": (
            "That is the stub's error: unflatten still holds the stub"
        ),
        "keeps the configuration in a dict, which cannot be hashed": (
            "the auxiliary data of a `Conv1D` is a dict, which cannot be hashed"
        ),
    },
    "03.layer_norm": {
        "unflattens through `__init__`, which converts its children (Pitfall 3)": (
            "a real number, not a placeholder"
        ),
        "makes `eps` a child instead of auxiliary data": "include 0.1, the value of its `eps`",
        "drops `eps` from the structure": "differ only in `eps` have the same structure",
    },
    "03.decay_weights": {
        "looks for the text `.w`, which a dict key prints as `['w']`": (
            "is a weight (its last key is `w`) but was not decayed"
        ),
        "decays leaves whose last key is not `w`": "was decayed, but its last key is not `w`",
        "multiplies by `rate` instead of `1 - rate`": "was multiplied by `rate`",
        "fails on a leaf with an empty key path": "raised `IndexError`",
        "forgets `return`": "`decay_weights` returned `None`",
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson03(LessonChecks):
    ids = LESSON_03
    points = 8
    right = RIGHT
    stubs = STUBS
    wrong = WRONG
    named = NAMED
    also_right = ALSO_RIGHT
    fixed = FIXED


def test_the_dense_fix_uses_the_name_the_exercise_imports() -> None:
    """The exercise notebook imports ``field`` from dataclasses, not ``dataclasses``."""
    verdict = evaluate(get_exercise("03.dense"), dense_activation_as_leaf)
    assert "field(default=" in verdict.fix and "dataclasses.field" not in verdict.fix
    notebook = read_notebook(ROOT / "solutions" / "03_registering_classes.ipynb")
    imports = "".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert "from dataclasses import dataclass, field" in imports
    assert "import dataclasses\n" not in imports


def test_the_exercises_define_classes_then_decay() -> None:
    assert [e.name for e in checks.exercises("03")] == [
        "define_dense",
        "define_conv1d",
        "define_layer_norm",
        "decay_weights",
    ]


def test_a_frozen_dataclass_is_right_too(capsys: pytest.CaptureFixture[str]) -> None:
    check("03.dense", define_frozen_dense)
    assert "passed" in capsys.readouterr().out


def test_every_check_gets_a_fresh_class() -> None:
    made = []

    def counting():
        made.append(define_conv1d())
        return made[-1]

    assert evaluate(get_exercise("03.conv1d"), counting).status == "passed"
    assert len(made) == len(get_exercise("03.conv1d").make_cases("check")) and len(
        set(made)
    ) == len(made)
    assert (
        evaluate(get_exercise("03.conv1d"), lambda: ConvBase).status == "failed"
    )  # not registered


def test_unflatten_is_probed_with_placeholders_and_jacobian(
    capsys: pytest.CaptureFixture[str],
) -> None:
    check("03.layer_norm", norm_calling_init)
    out = capsys.readouterr().out
    assert "placeholder leaves raised TypeError" in out


def test_decay_cases_cover_dicts_lists_none_dataclasses_and_traps() -> None:
    cases = get_exercise("03.decay_weights").make_cases("grade")
    trees = [case.args[0] for case in cases]
    keys = [
        path[-1] for tree in trees for path, _ in jax.tree_util.tree_leaves_with_path(tree) if path
    ]
    assert any(isinstance(k, DictKey) and k.key == "w" for k in keys)
    assert any(isinstance(k, GetAttrKey) and k.name == "w" for k in keys)
    assert any(isinstance(k, DictKey) and k.key in ("bw", "raw") for k in keys)
    assert any(
        isinstance(node, Block)
        for tree in trees
        for node in jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, Block))
    )
    assert has_none(trees)
    assert any(
        isinstance(tree, np.ndarray) for tree in trees
    )  # a tree that is one leaf: empty key path
    assert any(
        isinstance(node, list)
        for tree in trees
        for node in jax.tree.leaves(tree, is_leaf=lambda x: isinstance(x, list))
    )


def test_self_check_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    text = repeated_check_output(
        capsys, [("03.layer_norm", norm_calling_init), ("03.conv1d", conv_forgetting_aux)]
    )
    assert "0x" not in text and "/tmp" not in text and "/work" not in text


def test_the_reference_classes_are_refused() -> None:
    from course_lib.checks import _lesson03

    verdict = evaluate(get_exercise("03.dense"), lambda: _lesson03.Dense)
    assert verdict.status == "failed" and "the course's own `Dense`" in verdict.message
