"""Lesson 07 self-checks: sharding trees, bytes per device, abstract trees, sharded init, resharded
restore.

The tests run with 8 CPU devices (the root conftest asks for them), as a learner's kernel has. The
grader's own process may have one: the last tests check that the stand-in meshes the probes use
there give the reference results that the real meshes give. Those tests patch the lesson module's
``enough_devices`` and call its mesh helpers, so they import ``_lesson07``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest
from exercise_support import LessonChecks, check_output, has_none
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from course_lib.checks import _lesson07, get_exercise, judge_outcomes, reference_results
from course_lib.checks._evaluate import probe_all  # the kernel side of grading: no public name

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_07 = (
    "07.shardings_from_rules",
    "07.bytes_per_device",
    "07.abstract_size",
    "07.sharded_init",
    "07.restore_resharded",
)


def test_the_tests_have_the_lessons_devices() -> None:
    assert len(jax.devices("cpu")) == 8


# --- 07.shardings_from_rules ----------------------------------------------------------------------


def _name(path: Any) -> str:
    return "/".join(
        str(getattr(key, "key", getattr(key, "idx", getattr(key, "name", key)))) for key in path
    )


def shardings_by_flatten(params, rules, mesh):
    with_paths, treedef = jax.tree_util.tree_flatten_with_path(params)
    shardings = []
    for path, leaf in with_paths:
        fitting = [
            spec
            for pattern, spec in rules
            if re.search(pattern, _name(path)) and len(spec) <= np.ndim(leaf)
        ]
        shardings.append(NamedSharding(mesh, fitting[0] if fitting else P()))
    return jax.tree.unflatten(treedef, shardings)


def _rules_with(pick):
    def answer(params, rules, mesh):
        def sharding(path, leaf):
            return NamedSharding(
                mesh, pick(jax.tree_util.keystr(path, simple=True, separator="/"), leaf, rules)
            )

        return jax.tree.map_with_path(sharding, params)

    return answer


def _first(name, leaf, rules):
    return next(
        (
            spec
            for pattern, spec in rules
            if re.search(pattern, name) and len(spec) <= np.ndim(leaf)
        ),
        P(),
    )


shardings_last_rule = _rules_with(
    lambda name, leaf, rules: (
        [spec for pattern, spec in rules if re.search(pattern, name) and len(spec) <= np.ndim(leaf)]
        or [P()]
    )[-1]
)
shardings_ignoring_rank = _rules_with(
    lambda name, leaf, rules: next((s for p, s in rules if re.search(p, name)), P())
)
shardings_with_match = _rules_with(
    lambda name, leaf, rules: next(
        (s for p, s in rules if re.match(p, name) and len(s) <= np.ndim(leaf)), P()
    )
)


def shardings_default_keystr(params, rules, mesh):
    return jax.tree.map_with_path(
        lambda path, leaf: NamedSharding(mesh, _first(jax.tree_util.keystr(path), leaf, rules)),
        params,
    )


def shardings_as_specs(params, rules, mesh):
    return jax.tree.map_with_path(
        lambda path, leaf: _first(
            jax.tree_util.keystr(path, simple=True, separator="/"), leaf, rules
        ),
        params,
    )


def shardings_on_own_mesh(params, rules, mesh):
    own = jax.make_mesh((2, 4), ("data", "model"), devices=jax.devices("cpu"))
    return _rules_with(_first)(params, rules, own)


def shardings_dropping_none(params, rules, mesh):
    leaves = jax.tree_util.tree_leaves_with_path(params)
    return {jax.tree_util.keystr(path): NamedSharding(mesh, P()) for path, _ in leaves}


shardings_by_first_fitting_rule = _rules_with(_first)


# --- 07.bytes_per_device --------------------------------------------------------------------------


def bytes_from_devices_map(tree):
    total = 0
    for leaf in jax.tree.leaves(tree):
        index = leaf.sharding.devices_indices_map(leaf.shape)[next(iter(leaf.sharding.device_set))]
        block = [len(range(*part.indices(n))) for part, n in zip(index, leaf.shape, strict=True)]
        total += int(np.prod(block, dtype=np.int64)) * jnp.dtype(leaf.dtype).itemsize
    return total


def bytes_of_whole_tree(tree):
    return sum(
        math.prod(leaf.shape) * jnp.dtype(leaf.dtype).itemsize for leaf in jax.tree.leaves(tree)
    )


def bytes_divided_by_devices(tree):
    return bytes_of_whole_tree(tree) // 8


def bytes_at_four_per_element(tree):
    return sum(
        4 * math.prod(leaf.sharding.shard_shape(leaf.shape)) for leaf in jax.tree.leaves(tree)
    )


def bytes_of_arrays_only(tree):
    return sum(
        math.prod(leaf.sharding.shard_shape(leaf.shape)) * jnp.dtype(leaf.dtype).itemsize
        for leaf in jax.tree.leaves(tree)
        if isinstance(leaf, jax.Array)
    )


def bytes_as_text(tree):
    return f"{bytes_from_devices_map(tree)} bytes"


def bytes_of_blocks(tree):
    return sum(
        math.prod(leaf.sharding.shard_shape(leaf.shape)) * np.dtype(leaf.dtype).itemsize
        for leaf in jax.tree.leaves(tree)
    )


# --- 07.abstract_size -----------------------------------------------------------------------------


def abstract_size_by_trace(init, key):
    out = jax.jit(init).eval_shape(key)
    sizes = [
        (int(np.prod(s.shape, dtype=np.int64)), s.dtype.itemsize) for s in jax.tree.leaves(out)
    ]
    return sum(n for n, _ in sizes), sum(n * b for n, b in sizes)


def abstract_size_by_running(init, key):
    leaves = jax.tree.leaves(init(key))
    return sum(x.size for x in leaves), sum(x.nbytes for x in leaves)


def abstract_size_by_jit(init, key):
    leaves = jax.tree.leaves(jax.jit(init)(key))
    return sum(x.size for x in leaves), sum(x.nbytes for x in leaves)


def abstract_size_four_bytes(init, key):
    n = sum(s.size for s in jax.tree.leaves(jax.eval_shape(init, key)))
    return n, 4 * n


def abstract_size_leaves(init, key):
    leaves = jax.tree.leaves(jax.eval_shape(init, key))
    return len(leaves), sum(s.size * s.dtype.itemsize for s in leaves)


def abstract_size_swapped(init, key):
    return abstract_size_by_trace(init, key)[::-1]


def abstract_size_by_eval_shape(init, key):
    leaves = jax.tree.leaves(jax.eval_shape(init, key))
    return (
        sum(math.prod(s.shape) for s in leaves),
        sum(math.prod(s.shape) * np.dtype(s.dtype).itemsize for s in leaves),
    )


# --- 07.sharded_init ------------------------------------------------------------------------------


def sharded_init_with_out_shardings(init, key, shardings):
    return jax.jit(init, out_shardings=shardings)(key)


def sharded_init_wrapped(init, key, shardings):
    @jax.jit
    def make(k):
        return jax.lax.with_sharding_constraint(init(k), shardings)

    return make(key)


def sharded_init_after_eval_shape(init, key, shardings):
    shapes = jax.eval_shape(
        init, key
    )  # traced for the shapes first: nothing runs, nothing is laid out
    full = jax.tree.broadcast(shardings, shapes, is_leaf=lambda x: isinstance(x, NamedSharding))
    return jax.jit(init, out_shardings=full)(key)


def sharded_init_eager_then_put(init, key, shardings):
    return jax.device_put(init(key), shardings)


def sharded_init_jit_then_put(init, key, shardings):
    return jax.device_put(jax.jit(init)(key), shardings)


def sharded_init_unsharded(init, key, shardings):
    return jax.jit(init)(key)


def sharded_init_other_key(init, key, shardings):
    return jax.jit(init, out_shardings=shardings)(jax.random.key(12345))


# --- 07.restore_resharded -------------------------------------------------------------------------


def restore_by_flatten(path, abstract, shardings):
    shapes, treedef = jax.tree.flatten(abstract)
    full = jax.tree.leaves(
        jax.tree.broadcast(shardings, abstract, is_leaf=lambda x: isinstance(x, NamedSharding))
    )
    target = jax.tree.unflatten(
        treedef,
        [
            jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh)
            for s, sh in zip(shapes, full, strict=True)
        ],
    )
    return ocp.StandardCheckpointer().restore(path, target)


def restore_saved_layout(path, abstract, shardings):
    return ocp.StandardCheckpointer().restore(path)


def restore_then_put(path, abstract, shardings):
    return jax.device_put(ocp.StandardCheckpointer().restore(path), shardings)


def restore_as_numpy(path, abstract, shardings):
    return jax.tree.map(np.asarray, restore_by_flatten(path, abstract, shardings))


def restore_into_a_target(path, abstract, shardings):
    full = jax.tree.broadcast(shardings, abstract, is_leaf=lambda x: isinstance(x, NamedSharding))
    target = jax.tree.map(
        lambda s, sharding: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding),
        abstract,
        full,
    )
    return ocp.StandardCheckpointer().restore(path, target)


RIGHT: dict[str, Callable[..., Any]] = {
    "07.shardings_from_rules": shardings_by_flatten,
    "07.bytes_per_device": bytes_from_devices_map,
    "07.abstract_size": abstract_size_by_trace,
    "07.sharded_init": sharded_init_with_out_shardings,
    "07.restore_resharded": restore_by_flatten,
}

WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("07.shardings_from_rules", shardings_last_rule, "the last matching rule decided"),
    (
        "07.shardings_from_rules",
        shardings_ignoring_rank,
        "more entries than the leaf has dimensions",
    ),
    (
        "07.shardings_from_rules",
        shardings_with_match,
        "occurs inside the name but not at its start",
    ),
    (
        "07.shardings_from_rules",
        shardings_default_keystr,
        "written for its name, did not match it",
    ),
    ("07.shardings_from_rules", shardings_as_specs, "is the `PartitionSpec` P('model')"),
    ("07.shardings_from_rules", shardings_on_own_mesh, "than the one passed in"),
    (
        "07.shardings_from_rules",
        shardings_dropping_none,
        "does not have the structure of the input tree",
    ),
    ("07.bytes_per_device", bytes_of_whole_tree, "the bytes of the whole tree, where"),
    ("07.bytes_per_device", bytes_divided_by_devices, "divided by the 8 devices"),
    ("07.bytes_per_device", bytes_at_four_per_element, "counts 4 bytes per element"),
    (
        "07.bytes_per_device",
        bytes_of_arrays_only,
        "`ShapeDtypeStruct` leaves were not counted",
    ),
    ("07.bytes_per_device", bytes_as_text, "the number of bytes, an int"),
    ("07.abstract_size", abstract_size_by_running, "`init` ran for real"),
    ("07.abstract_size", abstract_size_four_bytes, "the bytes assume 4 per element"),
    ("07.abstract_size", abstract_size_leaves, "is the number of leaves"),
    ("07.abstract_size", abstract_size_swapped, "the two numbers are swapped"),
    ("07.abstract_size", abstract_size_by_jit, "`init` ran for real"),
    ("07.sharded_init", sharded_init_eager_then_put, "`init` created the whole tree first"),
    (
        "07.sharded_init",
        sharded_init_unsharded,
        "where the tree given says P('model')",
    ),
    (
        "07.sharded_init",
        sharded_init_other_key,
        "not those `init(key)` gives for the key passed in",
    ),
    ("07.sharded_init", sharded_init_jit_then_put, "`init` created the whole tree first"),
    ("07.restore_resharded", restore_saved_layout, "the layout it was saved with"),
    ("07.restore_resharded", restore_as_numpy, "not a `jax.Array`"),
]


# Each wrong answer with the fix its last hint gives, applied as written. shardings_dropping_none
# holds two mistakes (SEVERAL_MISTAKES).
FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("07.shardings_from_rules", shardings_last_rule, shardings_by_first_fitting_rule),
    ("07.shardings_from_rules", shardings_ignoring_rank, shardings_by_first_fitting_rule),
    ("07.shardings_from_rules", shardings_with_match, shardings_by_first_fitting_rule),
    ("07.shardings_from_rules", shardings_default_keystr, shardings_by_first_fitting_rule),
    ("07.shardings_from_rules", shardings_as_specs, shardings_by_first_fitting_rule),
    ("07.shardings_from_rules", shardings_on_own_mesh, shardings_by_first_fitting_rule),
    ("07.bytes_per_device", bytes_of_whole_tree, bytes_of_blocks),
    ("07.bytes_per_device", bytes_divided_by_devices, bytes_of_blocks),
    ("07.bytes_per_device", bytes_at_four_per_element, bytes_of_blocks),
    ("07.bytes_per_device", bytes_of_arrays_only, bytes_of_blocks),
    ("07.bytes_per_device", bytes_as_text, bytes_from_devices_map),
    ("07.abstract_size", abstract_size_by_running, abstract_size_by_eval_shape),
    ("07.abstract_size", abstract_size_by_jit, abstract_size_by_eval_shape),
    ("07.abstract_size", abstract_size_four_bytes, abstract_size_by_eval_shape),
    ("07.abstract_size", abstract_size_leaves, abstract_size_by_eval_shape),
    ("07.abstract_size", abstract_size_swapped, abstract_size_by_trace),
    ("07.sharded_init", sharded_init_eager_then_put, sharded_init_with_out_shardings),
    ("07.sharded_init", sharded_init_jit_then_put, sharded_init_with_out_shardings),
    ("07.sharded_init", sharded_init_unsharded, sharded_init_with_out_shardings),
    ("07.sharded_init", sharded_init_other_key, sharded_init_with_out_shardings),
    ("07.restore_resharded", restore_saved_layout, restore_into_a_target),
    ("07.restore_resharded", restore_as_numpy, restore_by_flatten),
]


NAMED: dict[str, dict[str, str]] = {
    "07.shardings_from_rules": {
        "lets the last matching rule decide instead of the first": "the last matching rule decided",
        "gives a leaf a spec with more entries than it has dimensions": (
            "more entries than the leaf has dimensions"
        ),
        "matches with `re.match` instead of `re.search`": (
            "occurs inside the name but not at its start"
        ),
        "matches the rules against `keystr`'s default format": (
            "written for its name, did not match it"
        ),
        "returns bare `PartitionSpec`s instead of `NamedSharding`s": (
            "is the `PartitionSpec` P('model')"
        ),
        "builds its own mesh instead of using the one passed in": "than the one passed in",
        "drops the `None` subtrees": "does not have the structure of the input tree",
    },
    "07.bytes_per_device": {
        "counts the bytes of the whole tree": "the bytes of the whole tree, where",
        "divides every leaf by the number of devices, replicated ones included": (
            "divided by the 8 devices"
        ),
        "assumes 4 bytes per element": "counts 4 bytes per element",
        "skips `ShapeDtypeStruct` leaves that have a sharding": (
            "`ShapeDtypeStruct` leaves were not counted"
        ),
        "returns text instead of an int": "the number of bytes, an int",
    },
    "07.abstract_size": {
        "runs `init` for real instead of with `jax.eval_shape`": "`init` ran for real",
        "assumes 4 bytes per element": "the bytes assume 4 per element",
        "counts leaves instead of parameters": "is the number of leaves",
        "swaps the two numbers": "the two numbers are swapped",
    },
    "07.sharded_init": {
        "creates the whole tree first, then moves it into shards": (
            "`init` created the whole tree first"
        ),
        "leaves the parameters unsharded": "where the tree given says P('model')",
        "calls `init` with another key": "not those `init(key)` gives for the key passed in",
    },
    "07.restore_resharded": {
        "restores into the layout the checkpoint was saved with": "the layout it was saved with",
        "returns NumPy arrays instead of `jax.Array`s": "not a `jax.Array`",
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson07(LessonChecks):
    ids = LESSON_07
    points = 13
    right = RIGHT
    wrong = WRONG
    named = NAMED
    fixed = FIXED
    # Roundabout answers that still give the right tree in the right shardings: fair grading accepts
    # them.
    also_right = [
        ("07.sharded_init", sharded_init_wrapped),
        ("07.sharded_init", sharded_init_after_eval_shape),
        ("07.restore_resharded", restore_then_put),
    ]
    grading_seeds = (1,)


def test_the_big_model_is_never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """An answer that runs init is stopped on the tiny copy of the big model, before it allocates
    billions."""
    exercise = get_exercise("07.abstract_size")
    big = next(case for case in exercise.make_cases("check") if case.info["big"])
    sizes = []
    original = _lesson07.make_init

    def recording(model, on_run=None):
        sizes.append(model.vocab)
        return original(model, on_run)

    monkeypatch.setattr(_lesson07, "make_init", recording)
    assert exercise.probe(abstract_size_by_running, big) == {"ran": True, "size": None}
    assert sizes == [8]
    _, nbytes = abstract_size_by_trace(original(big.args[0]), jax.random.key(0))
    assert nbytes > 2**31


@pytest.mark.parametrize(
    "exercise_id", ["07.shardings_from_rules", "07.bytes_per_device", "07.sharded_init"]
)
def test_cases_hold_none_subtrees(exercise_id: str) -> None:
    exercise = get_exercise(exercise_id)
    for purpose in ("check", "grade"):
        cases = exercise.make_cases(purpose)
        if exercise_id == "07.sharded_init":
            trees = [
                jax.eval_shape(_lesson07.make_init(case.args[0]), jax.random.key(0))
                for case in cases
            ]
        else:
            trees = [case.args[0] for case in cases]
        assert has_none(trees)


@pytest.mark.parametrize("exercise_id", LESSON_07)
@pytest.mark.parametrize("seed", [0, 3])
def test_stand_in_meshes_give_the_references_of_real_ones(
    exercise_id: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The grader's process may have one device: the references computed there are those of 8
    devices."""
    exercise = get_exercise(exercise_id)
    cases = exercise.make_cases("grade", seed)
    real = reference_results(exercise, cases)
    monkeypatch.setattr(_lesson07, "enough_devices", lambda count: count <= 1)
    stand_in = reference_results(exercise, cases)
    for case, mine, theirs in zip(cases, stand_in, real, strict=True):
        assert exercise.judge(mine, theirs, case) is None, case.label
    monkeypatch.undo()  # the learner's side, as in the grader: a kernel with 8 devices
    verdict = judge_outcomes(
        exercise, probe_all(exercise, RIGHT[exercise_id], cases), stand_in, cases
    )
    assert verdict.status == "passed", verdict.message


def test_stand_ins_are_used_only_without_the_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(_lesson07.plan_mesh((2, 4), ("data", "model")), jax.sharding.Mesh)
    monkeypatch.setattr(_lesson07, "enough_devices", lambda count: count <= 1)
    assert isinstance(_lesson07.plan_mesh((2, 4), ("data", "model")), jax.sharding.AbstractMesh)
    assert dict(_lesson07.run_mesh((2, 4), ("data", "model")).shape) == {"data": 1, "model": 1}


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (restore_then_put, "07.restore_resharded: passed"),
        (restore_saved_layout, "the layout it was saved with"),
    ],
)
def test_restore_is_judged_on_the_cpu_mesh_when_an_accelerator_is_the_default(
    answer: Callable[..., Any],
    said: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a TPU as JAX's default backend, jax.devices() names its one chip, and Orbax, which
    rebuilds a saved layout from jax.devices(), stopped with "Topology mismatch" on the lesson's 8
    CPU devices; the probe shows Orbax the CPU's devices, so restores answer as on a CPU."""
    devices = jax.devices
    monkeypatch.setattr(jax, "default_backend", lambda: "tpu")
    monkeypatch.setattr(
        jax, "devices", lambda backend=None: devices(backend)[: 1 if backend is None else None]
    )
    out = check_output("07.restore_resharded", answer, capsys)
    assert said in out, out
