"""Lesson 06 self-checks: not attempted, incorrect with the targeted hint, correct; references
against optax.

The references and the wrong-answer variants are the lesson module's own (``_lesson06``), and the
judges' view of a result comes from ``_kit`` and ``_plain``: these tests check them directly.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from exercise_support import (
    LessonChecks,
    answer_id,
    check_output,
    has_none,
    nodes,
    repeated_check_output,
    successive_reports,
)
from jax_wording import WORDINGS, raising_withheld, withhold_jax_wording

import course_lib as cl
from course_lib.checks import _lesson06 as lesson
from course_lib.checks import evaluate, get_exercise
from course_lib.checks._kit import (
    APPROXIMATE_ULPS,
    JUDGE_ATOL,
    JUDGE_RTOL,
    as_judged,
    dtyped_plain,
    trees_close,
)
from course_lib.checks._plain import rebuild_tree

pytestmark = pytest.mark.usefixtures("fresh_checks")

LESSON_06 = (
    "06.momentum_step",
    "06.adam_init",
    "06.adam_step",
    "06.save_checkpoint",
    "06.restore_checkpoint",
    "06.train_loop",
)


class AdamState(NamedTuple):
    """The class the notebook defines for exercises 2 and 3."""

    count: Any
    mu: Any
    nu: Any


def keystr(path: Any) -> str:
    return jax.tree_util.keystr(path)


# --- answers, right and wrong --------------------------------------------------------------------


def momentum_step(params, grads, velocity, lr, beta):
    velocity = jax.tree.map(lambda v, g: beta * v + g, velocity, grads)
    return jax.tree.map(lambda p, v: p - lr * v, params, velocity), velocity


def momentum_old_velocity(params, grads, velocity, lr, beta):
    new_params = jax.tree.map(lambda p, v: p - lr * v, params, velocity)
    return new_params, jax.tree.map(lambda v, g: beta * v + g, velocity, grads)


def momentum_dampened(params, grads, velocity, lr, beta):
    velocity = jax.tree.map(lambda v, g: beta * v + (1 - beta) * g, velocity, grads)
    return jax.tree.map(lambda p, v: p - lr * v, params, velocity), velocity


def momentum_lr_inside(params, grads, velocity, lr, beta):
    velocity = jax.tree.map(lambda v, g: beta * v - lr * g, velocity, grads)
    return jax.tree.map(lambda p, v: p + v, params, velocity), velocity


def momentum_velocity_as_leaves(params, grads, velocity, lr, beta):
    leaves = [
        beta * v + g for v, g in zip(jax.tree.leaves(velocity), jax.tree.leaves(grads), strict=True)
    ]
    moved = [p - lr * v for p, v in zip(jax.tree.leaves(params), leaves, strict=True)]
    return jax.tree.unflatten(jax.tree.structure(params), moved), leaves


def momentum_swapped(params, grads, velocity, lr, beta):
    new_params, velocity = momentum_step(params, grads, velocity, lr, beta)
    return velocity, new_params


def momentum_stale_velocity(params, grads, velocity, lr, beta):
    return momentum_step(params, grads, velocity, lr, beta)[0], velocity


def momentum_as_list(params, grads, velocity, lr, beta):
    return list(momentum_step(params, grads, velocity, lr, beta))


def momentum_pairs(params, grads, velocity, lr, beta):
    def one(p, g, v):
        v = beta * v + g
        return p - lr * v, v

    return jax.tree.map(one, params, grads, velocity)


def momentum_pairs_transposed(params, grads, velocity, lr, beta):
    def one(p, g, v):
        v = beta * v + g
        return p - lr * v, v

    pairs = jax.tree.map(one, params, grads, velocity)
    return jax.tree.transpose(jax.tree.structure(params), jax.tree.structure((0, 0)), pairs)


def momentum_with_course_version(params, grads, velocity, lr, beta):
    velocity = cl.tree_add_scale(grads, beta, velocity)
    return jax.tree.map(lambda p, v: p - lr * v, params, velocity), velocity


def adam_init(params):
    return AdamState(
        jnp.zeros((), jnp.int32),
        jax.tree.map(jnp.zeros_like, params),
        jax.tree.map(jnp.zeros_like, params),
    )


def adam_init_plain_tuple(params):
    return tuple(adam_init(params))


def adam_init_python_count(params):
    return adam_init(params)._replace(count=0)


def adam_init_float32(params):
    zeros = lambda p: jnp.zeros(jnp.shape(p))
    return AdamState(
        jnp.zeros((), jnp.int32), jax.tree.map(zeros, params), jax.tree.map(zeros, params)
    )


def adam_init_leaf_lists(params):
    zeros = [jnp.zeros_like(p) for p in jax.tree.leaves(params)]
    return AdamState(jnp.zeros((), jnp.int32), zeros, list(zeros))


def adam_init_course_state(params):
    return cl.AdamState(jnp.float32(0.1), jnp.zeros((), jnp.int32), *adam_init(params)[1:])


def adam_init_with_course_version(params):
    return AdamState(
        jnp.zeros((), jnp.int32), cl.tree_zeros_like(params), cl.tree_zeros_like(params)
    )


def make_adam_step(bias=True, shift=0, eps_inside=False, keep_count=False, plain_tuple=False):
    def adam_step(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
        count = state.count + 1
        mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
        nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * g**2, state.nu, grads)
        t = count + shift
        c1, c2 = (1 - b1**t, 1 - b2**t) if bias else (1.0, 1.0)

        def move(p, m, v):
            scale = jnp.sqrt(v / c2 + eps) if eps_inside else jnp.sqrt(v / c2) + eps
            return p - lr * (m / c1) / scale

        fields = (state.count if keep_count else count, mu, nu)
        return jax.tree.map(move, params, mu, nu), (fields if plain_tuple else AdamState(*fields))

    return adam_step


adam_step = make_adam_step()
adam_without_bias_correction = make_adam_step(bias=False)
adam_count_before_the_step = make_adam_step(shift=-1)
adam_count_increased_twice = make_adam_step(shift=1)
adam_eps_inside_the_root = make_adam_step(eps_inside=True)
adam_keeping_the_count = make_adam_step(keep_count=True)
adam_plain_tuple_state = make_adam_step(plain_tuple=True)


def adam_step_with_course_version(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    opt = cl.adam(lr, b1, b2, eps, donate=False)
    new, inner = opt.apply_gradients(
        grads, opt.init(params)._replace(count=state.count, mu=state.mu, nu=state.nu), params
    )
    return new, AdamState(inner.count, inner.mu, inner.nu)


def save_checkpoint(path, tree):
    np.savez(
        path,
        **{keystr(p): np.asarray(leaf) for p, leaf in jax.tree_util.tree_leaves_with_path(tree)},  # type: ignore[arg-type]  # numpy's stubs let **kwargs fill allow_pickle
    )


def save_positional(path, tree):
    np.savez(path, *[np.asarray(leaf) for leaf in jax.tree.leaves(tree)])


def save_slash_names(path, tree):
    def name(path):
        return "/".join(
            str(getattr(k, "key", getattr(k, "idx", getattr(k, "name", k)))) for k in path
        )

    np.savez(
        path,
        **{name(p): np.asarray(leaf) for p, leaf in jax.tree_util.tree_leaves_with_path(tree)},  # type: ignore[arg-type]  # numpy's stubs let **kwargs fill allow_pickle
    )


def save_adding_suffix(path, tree):
    save_checkpoint(str(path) + ".npz", tree)


def save_none_too(path, tree):
    pairs = jax.tree_util.tree_leaves_with_path(tree, is_leaf=lambda x: x is None)
    arrays = {keystr(p): leaf if leaf is None else np.asarray(leaf) for p, leaf in pairs}
    np.savez(path, **arrays)  # type: ignore[arg-type]  # a None leaf on purpose (numpy refuses it)


def save_with_course_version(path, tree):
    cl.save_tree(path, tree)


def restore_checkpoint(path, like):
    with np.load(path) as data:
        stored = {name: data[name] for name in data.files}
    pairs, treedef = jax.tree_util.tree_flatten_with_path(like)
    wanted = {keystr(p): leaf for p, leaf in pairs}
    bad = [n for n in wanted if n not in stored] + [n for n in stored if n not in wanted]
    bad += [n for n, leaf in wanted.items() if n in stored and stored[n].shape != np.shape(leaf)]
    if bad:
        raise ValueError(f"does not fit: {', '.join(bad)}")
    return jax.tree.unflatten(treedef, [jnp.asarray(stored[n]) for n in wanted])


def restore_unchecked(path, like):
    data = np.load(path)
    pairs, treedef = jax.tree_util.tree_flatten_with_path(like)
    return jax.tree.unflatten(treedef, [jnp.asarray(data[keystr(p)]) for p, _ in pairs])


def restore_names_only(path, like):
    data = np.load(path)
    pairs, treedef = jax.tree_util.tree_flatten_with_path(like)
    names = [keystr(p) for p, _ in pairs]
    if set(names) != set(data.files):
        raise ValueError(f"mismatch: {sorted(set(names) ^ set(data.files))}")
    return jax.tree.unflatten(treedef, [jnp.asarray(data[n]) for n in names])


def restore_vague_error(path, like):
    try:
        return restore_checkpoint(path, like)
    except ValueError:
        raise ValueError("the checkpoint does not fit") from None


def restore_sorted_names(path, like):
    data = np.load(path)
    return jax.tree.unflatten(
        jax.tree.structure(like), [jnp.asarray(data[n]) for n in sorted(data.files)]
    )


def restore_naming_its_file(path, like):
    raise ValueError(f"cannot read {path}")


def restore_with_course_version(path, like):
    return cl.load_tree(path, like)


def make_train_loop(
    cast=True, init="zeros_like", python_loop=False, loss_after=False, lazy=False, lr_cast=False
):
    def train_loop(loss_fn, params, batches, lr, beta):
        def body(carry, batch):
            params, velocity = carry
            if velocity is None:
                velocity = jax.tree.map(jnp.zeros_like, params)
            loss, grads = jax.value_and_grad(loss_fn)(params, batch)
            velocity = jax.tree.map(lambda v, g: beta * v + g, velocity, grads)
            # With lr_cast the learning rate is cast to each leaf's dtype, as optax writes it:
            # bfloat16 arithmetic.
            if lr_cast:
                params = jax.tree.map(
                    lambda p, v: p - jnp.asarray(lr, p.dtype) * v, params, velocity
                )
            else:
                params = jax.tree.map(
                    lambda p, v: (p - lr * v).astype(p.dtype) if cast else p - lr * v,
                    params,
                    velocity,
                )
            return (params, velocity), (loss_fn(params, batch) if loss_after else loss)

        velocity = {
            "zeros_like": lambda: jax.tree.map(jnp.zeros_like, params),
            "scalar": lambda: jax.tree.map(lambda p: 0.0, params),
            "float32": lambda: jax.tree.map(lambda p: jnp.zeros(p.shape), params),
        }[init]()
        carry = (params, None if lazy else velocity)
        if python_loop:
            losses = []
            for i in range(batches["target"].shape[0]):
                carry, loss = body(carry, jax.tree.map(lambda b, i=i: b[i], batches))
                losses.append(loss)
            return carry[0], carry[1], jnp.stack(losses)
        (params, velocity), losses = jax.lax.scan(body, carry, batches)
        return params, velocity, losses

    return train_loop


train_loop = make_train_loop()
train_loop_lazy_velocity = make_train_loop(lazy=True)
train_loop_without_cast = make_train_loop(cast=False)
train_loop_scalar_velocity = make_train_loop(init="scalar")
train_loop_float32_velocity = make_train_loop(init="float32")
train_loop_unrolled = make_train_loop(python_loop=True)
train_loop_loss_after_the_step = make_train_loop(loss_after=True)


def train_loop_float_losses(loss_fn, params, batches, lr, beta):
    params, velocity, losses = make_train_loop()(loss_fn, params, batches, lr, beta)
    return params, velocity, float(losses[-1])


def train_loop_with_course_version(loss_fn, params, batches, lr, beta):
    velocity = cl.tree_zeros_like(params)
    return make_train_loop()(loss_fn, params, batches, lr, beta)[0], velocity, jnp.zeros(3)


# Right answers written differently from the references.


def momentum_by_flatten(params, grads, velocity, lr, beta):
    leaves, treedef = jax.tree_util.tree_flatten(params)
    new_velocity = [
        beta * v + g
        for v, g in zip(treedef.flatten_up_to(velocity), treedef.flatten_up_to(grads), strict=True)  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
    ]
    moved = [p - lr * v for p, v in zip(leaves, new_velocity, strict=True)]
    return treedef.unflatten(moved), treedef.unflatten(new_velocity)  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped


def adam_init_by_tree_util(params):
    zeros = jax.tree_util.tree_map(lambda p: jnp.zeros(jnp.shape(p), jnp.result_type(p)), params)
    return AdamState(
        jnp.asarray(0, dtype=jnp.int32), zeros, jax.tree_util.tree_map(jnp.copy, zeros)
    )


def adam_step_optax_style(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    # optax's order: update the moments, correct their bias, compute updates, then apply them
    count = state.count + 1
    mu = jax.tree.map(lambda g, m: (1 - b1) * g + b1 * m, grads, state.mu)
    nu = jax.tree.map(lambda g, v: (1 - b2) * jnp.square(g) + b2 * v, grads, state.nu)
    mu_hat = jax.tree.map(lambda m: m / (1 - b1 ** count.astype(m.dtype)), mu)
    nu_hat = jax.tree.map(lambda v: v / (1 - b2 ** count.astype(v.dtype)), nu)
    updates = jax.tree.map(lambda m, v: -lr * m / (jnp.sqrt(v) + eps), mu_hat, nu_hat)
    new_params = jax.tree.map(
        lambda p, u: jnp.asarray(p + u).astype(jnp.asarray(p).dtype), params, updates
    )
    return new_params, AdamState(count, mu, nu)


def save_by_flatten_with_path(path, tree):
    pairs, _ = jax.tree_util.tree_flatten_with_path(tree)
    arrays: dict[str, Any] = {}
    for key_path, leaf in pairs:
        arrays[jax.tree_util.keystr(key_path)] = np.asarray(leaf)
    with open(path, "wb") as file:
        np.savez(file, **arrays)


def restore_by_loop(path, like):
    data = np.load(path)
    try:
        pairs, treedef = jax.tree_util.tree_flatten_with_path(like)
        names = [keystr(p) for p, _ in pairs]
        extra = sorted(set(data.files) - set(names))
        if extra:
            raise ValueError(f"the file holds entries that `like` lacks: {extra}")
        leaves = []
        for name, leaf in zip(names, (leaf for _, leaf in pairs), strict=True):
            if name not in data.files:
                raise ValueError(f"the file lacks {name}")
            if data[name].shape != np.shape(leaf):
                raise ValueError(
                    f"{name} has shape {data[name].shape} in the file, {np.shape(leaf)} in `like`"
                )
            leaves.append(jnp.asarray(data[name]))
        return treedef.unflatten(leaves)  # type: ignore[attr-defined]  # jaxlib leaves PyTreeDef untyped
    finally:
        data.close()


ALSO_RIGHT: list[tuple[str, Callable[..., Any]]] = [
    ("06.momentum_step", momentum_by_flatten),
    ("06.adam_init", adam_init_by_tree_util),
    ("06.adam_step", adam_step_optax_style),
    ("06.save_checkpoint", save_by_flatten_with_path),
    ("06.restore_checkpoint", restore_by_loop),
    ("06.train_loop", make_train_loop(lr_cast=True)),
]


RIGHT: dict[str, Callable[..., Any]] = {
    "06.momentum_step": momentum_step,
    "06.adam_init": adam_init,
    "06.adam_step": adam_step,
    "06.save_checkpoint": save_checkpoint,
    "06.restore_checkpoint": restore_checkpoint,
    "06.train_loop": train_loop,
}

WRONG: list[tuple[str, Callable[..., Any], str]] = [
    ("06.momentum_step", momentum_old_velocity, "moved with the old velocity"),
    ("06.momentum_step", momentum_dampened, "averages the gradients, `beta * v + (1 - beta) * g`"),
    ("06.momentum_step", momentum_lr_inside, "has the learning rate inside"),
    ("06.momentum_step", momentum_velocity_as_leaves, "the new velocity has another structure"),
    ("06.momentum_step", momentum_swapped, "the two results are swapped"),
    ("06.momentum_step", momentum_stale_velocity, "the velocity returned is the one that came in"),
    ("06.momentum_step", momentum_as_list, "returned a list, not a tuple"),
    (
        "06.momentum_step",
        momentum_pairs,
        "returned one tree shaped like the params with a pair at each leaf (at ['b'], and",
    ),
    ("06.adam_init", adam_init_plain_tuple, "the state is a plain tuple"),
    ("06.adam_init", adam_init_python_count, "the count in the state is 0, a Python int"),
    ("06.adam_init", adam_init_float32, "leaf .mu['w'] has dtype `float32`, expected `float16`"),
    ("06.adam_init", adam_init_leaf_lists, "the state's mu has another structure"),
    ("06.adam_init", adam_init_course_state, "with the fields learning_rate, count, mu, nu"),
    ("06.adam_step", adam_without_bias_correction, "Adam without bias correction"),
    ("06.adam_step", adam_count_before_the_step, "the count from before this step (off by one)"),
    (
        "06.adam_step",
        adam_count_increased_twice,
        "`count + 1` after the count was already increased (off by one)",
    ),
    ("06.adam_step", adam_eps_inside_the_root, "`eps` went inside the square root"),
    ("06.adam_step", adam_keeping_the_count, "the new state's count is 0, expected 1"),
    ("06.adam_step", adam_plain_tuple_state, "the new state is a plain tuple"),
    ("06.save_checkpoint", save_positional, "named arr_0, arr_1"),
    ("06.save_checkpoint", save_slash_names, "which is not the key path of a leaf"),
    ("06.save_checkpoint", save_adding_suffix, "the folder holds ['layer.npz.npz']"),
    (
        "06.save_checkpoint",
        save_none_too,
        "the file holds pickled Python objects, not plain arrays (in the entries [1], [2]['a'])",
    ),
    ("06.restore_checkpoint", restore_unchecked, "raised KeyError"),
    (
        "06.restore_checkpoint",
        restore_names_only,
        "returned a tree, but the entry ['params']['b'] has another shape",
    ),
    ("06.restore_checkpoint", restore_vague_error, "but not where"),
    ("06.restore_checkpoint", restore_sorted_names, "in the wrong places"),
    (
        "06.train_loop",
        train_loop_lazy_velocity,
        "the carry of `lax.scan` came out with another structure",
    ),
    (
        "06.train_loop",
        train_loop_without_cast,
        "a leaf of the carry changed dtype inside the loop: at carry[0][0].w",
    ),
    (
        "06.train_loop",
        train_loop_scalar_velocity,
        "a leaf of the carry changed shape inside the loop: at carry[1]['b']",
    ),
    (
        "06.train_loop",
        train_loop_float32_velocity,
        "the velocity: the leaf [0].w is `float32`, expected `bfloat16`",
    ),
    ("06.train_loop", train_loop_unrolled, "the traced program holds no loop"),
    (
        "06.train_loop",
        train_loop_loss_after_the_step,
        "losses differ from the expected values (largest difference 1.06), though the params",
    ),
    (
        "06.train_loop",
        train_loop_float_losses,
        "`train_loop` runs without `jit` and fails under it",
    ),
]

# Each wrong answer with the fix its last hint gives, applied as written: each leads to the
# lesson's right answer. restore_sorted_names holds two mistakes (SEVERAL_MISTAKES).
FIXED: list[tuple[str, Callable[..., Any], Callable[..., Any]]] = [
    ("06.momentum_step", momentum_old_velocity, momentum_step),
    ("06.momentum_step", momentum_dampened, momentum_step),
    ("06.momentum_step", momentum_lr_inside, momentum_step),
    ("06.momentum_step", momentum_velocity_as_leaves, momentum_step),
    ("06.momentum_step", momentum_swapped, momentum_step),
    ("06.momentum_step", momentum_stale_velocity, momentum_step),
    ("06.momentum_step", momentum_as_list, momentum_step),
    ("06.momentum_step", momentum_pairs, momentum_pairs_transposed),
    ("06.adam_init", adam_init_plain_tuple, adam_init),
    ("06.adam_init", adam_init_python_count, adam_init),
    ("06.adam_init", adam_init_float32, adam_init),
    ("06.adam_init", adam_init_leaf_lists, adam_init),
    ("06.adam_init", adam_init_course_state, adam_init),
    ("06.adam_step", adam_without_bias_correction, adam_step),
    ("06.adam_step", adam_count_before_the_step, adam_step),
    ("06.adam_step", adam_count_increased_twice, adam_step),
    ("06.adam_step", adam_eps_inside_the_root, adam_step),
    ("06.adam_step", adam_keeping_the_count, adam_step),
    ("06.adam_step", adam_plain_tuple_state, adam_step),
    ("06.save_checkpoint", save_positional, save_checkpoint),
    ("06.save_checkpoint", save_slash_names, save_checkpoint),
    ("06.save_checkpoint", save_adding_suffix, save_checkpoint),
    ("06.save_checkpoint", save_none_too, save_checkpoint),
    ("06.restore_checkpoint", restore_unchecked, restore_checkpoint),
    ("06.restore_checkpoint", restore_names_only, restore_checkpoint),
    ("06.restore_checkpoint", restore_vague_error, restore_checkpoint),
    ("06.train_loop", train_loop_lazy_velocity, train_loop),
    ("06.train_loop", train_loop_without_cast, train_loop),
    ("06.train_loop", train_loop_scalar_velocity, train_loop),
    ("06.train_loop", train_loop_float32_velocity, train_loop),
    ("06.train_loop", train_loop_unrolled, train_loop),
    ("06.train_loop", train_loop_loss_after_the_step, train_loop),
    ("06.train_loop", train_loop_float_losses, train_loop),
]

COURSE_VERSIONS = [
    ("06.momentum_step", momentum_with_course_version, "cl.tree_add_scale"),
    ("06.adam_init", adam_init_with_course_version, "cl.tree_zeros_like"),
    ("06.adam_step", adam_step_with_course_version, "cl.adam"),
    ("06.save_checkpoint", save_with_course_version, "cl.save_tree"),
    ("06.restore_checkpoint", restore_with_course_version, "cl.load_tree"),
    ("06.train_loop", train_loop_with_course_version, "cl.tree_zeros_like"),
]


# --- the checks -----------------------------------------------------------------------------------


NAMED: dict[str, dict[str, str]] = {
    "06.momentum_step": {
        "moves the parameters with the old velocity": "moved with the old velocity",
        "averages the gradients into the velocity (dampened momentum)": (
            "averages the gradients, `beta * v + (1 - beta) * g`"
        ),
        "puts the learning rate inside the velocity": "has the learning rate inside",
        "returns the velocity as a list of leaves": "the new velocity has another structure",
        "swaps the two results": "the two results are swapped",
        "returns the velocity that came in": "the velocity returned is the one that came in",
        "returns a list instead of a tuple": "returned a list, not a tuple",
        "returns one tree of `(p, v)` pairs from a single map": (
            "returned one tree shaped like the params with a pair at each leaf (at ['b'], and"
        ),
    },
    "06.adam_init": {
        "returns a plain tuple instead of the state class": "the state is a plain tuple",
        "keeps the count as a Python int": "the count in the state is 0, a Python int",
        "makes `float32` moments for `float16` parameters": (
            "leaf .mu['w'] has dtype `float32`, expected `float16`"
        ),
        "builds the moments as lists of leaves": "the state's mu has another structure",
        "returns the course's own `AdamState`, whose fields differ": (
            "with the fields learning_rate, count, mu, nu"
        ),
    },
    "06.adam_step": {
        "leaves out the bias correction": "Adam without bias correction",
        "corrects with the count from before the step": (
            "the count from before this step (off by one)"
        ),
        "adds one to a count already increased": (
            "`count + 1` after the count was already increased (off by one)"
        ),
        "puts `eps` inside the square root": "`eps` went inside the square root",
        "does not increase the count": "the new state's count is 0, expected 1",
        "returns a plain tuple as the new state": "the new state is a plain tuple",
    },
    "06.save_checkpoint": {
        "names the entries `arr_0`, `arr_1`, ... by position": "named arr_0, arr_1",
        "names the entries by something other than the leaves' key paths": (
            "which is not the key path of a leaf"
        ),
        "adds `.npz` to a path that already ends in it": "the folder holds ['layer.npz.npz']",
        "writes entries for `None` subtrees": (
            "the file holds pickled Python objects, not plain arrays (in the entries [1], [2]['a'])"
        ),
    },
    "06.restore_checkpoint": {
        "does not check the structure, and fails with `KeyError`": "raised KeyError",
        "checks the names but not the shapes": (
            "returned a tree, but the entry ['params']['b'] has another shape"
        ),
        "raises an error that does not say where the trees differ": "but not where",
        "fills the leaves in the sorted order of the names": "in the wrong places",
    },
    "06.train_loop": {
        (
            "creates the optimizer state inside the loop, so the carry changes structure "
            "(Pitfall 15)"
        ): "the carry of `lax.scan` came out with another structure",
        "lets a leaf of the carry change dtype": (
            "a leaf of the carry changed dtype inside the loop: at carry[0][0].w"
        ),
        "lets a leaf of the carry change shape": (
            "a leaf of the carry changed shape inside the loop: at carry[1]['b']"
        ),
        "starts a `float32` velocity for `bfloat16` parameters": (
            "the velocity: the leaf [0].w is `float32`, expected `bfloat16`"
        ),
        "loops in Python instead of with `lax.scan`": "the traced program holds no loop",
        "records the loss after each step instead of before it": (
            "losses differ from the expected values (largest difference 1.06), though the params"
        ),
        "turns the losses into Python floats, which fails under `jit`": (
            "`train_loop` runs without `jit` and fails under it"
        ),
    },
}
"""Each mistake an exercise names (``Exercise.mistakes``), with the text that the hint of its wrong
answer in ``WRONG`` pins."""


class TestLesson06(LessonChecks):
    ids = LESSON_06
    points = 14
    right = RIGHT
    wrong = WRONG
    named = NAMED
    also_right = ALSO_RIGHT
    fixed = FIXED


@pytest.mark.parametrize(("exercise_id", "answer", "name"), COURSE_VERSIONS, ids=answer_id)
def test_course_versions_do_not_count(
    exercise_id: str, answer: Callable[..., Any], name: str
) -> None:
    verdict = evaluate(get_exercise(exercise_id), answer)
    assert verdict.status == "flagged" and verdict.points == 0
    assert f"calls `{name}` (line " in verdict.message, verdict.message


def test_hidden_course_version_is_flagged_while_it_runs() -> None:
    def momentum_step(params, grads, velocity, lr, beta):
        course = getattr(cl, "mo" + "mentum")(lr, beta, donate=False)
        new, state = course.apply_gradients(
            grads, course.init(params)._replace(velocity=velocity), params
        )
        return new, state.velocity

    verdict = evaluate(get_exercise("06.momentum_step"), momentum_step)
    assert (
        verdict.status == "flagged"
        and "`momentum_step` calls `cl.momentum` (line " in verdict.message
    )


def test_check_output_is_deterministic(capsys: pytest.CaptureFixture[str]) -> None:
    answers = [
        ("06.adam_step", make_adam_step(shift=-1)),
        ("06.train_loop", make_train_loop(cast=False)),
        ("06.restore_checkpoint", restore_naming_its_file),
    ]
    text = repeated_check_output(capsys, answers)
    assert "0x" not in text and tempfile.gettempdir() not in text


# --- the references against optax and against each other ---------------------------------------


def _leaves_close(a: Any, b: Any, rtol: float = JUDGE_RTOL, atol: float = JUDGE_ATOL) -> None:
    assert jax.tree.structure(a) == jax.tree.structure(b)  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=atol)


def test_momentum_reference_is_optax_sgd_with_momentum() -> None:
    for case in get_exercise("06.momentum_step").make_cases("grade"):
        params, grads, velocity, lr, beta = case.args
        opt = optax.sgd(lr, momentum=beta)
        state = opt.init(params)
        state = (optax.TraceState(trace=velocity), *state[1:])
        updates, state = opt.update(grads, state, params)
        new_params, new_velocity = lesson._momentum_step(params, grads, velocity, lr, beta)
        _leaves_close(new_params, optax.apply_updates(params, updates))
        _leaves_close(new_velocity, state[0].trace)


def test_adam_reference_is_optax_adam_over_several_steps() -> None:
    exercise = get_exercise("06.adam_step")
    for case in exercise.make_cases("grade"):
        params, grads_seq, state, lr = case.args
        b1, b2 = case.kwargs.get("b1", 0.9), case.kwargs.get("b2", 0.999)
        opt = optax.adam(lr, b1=b1, b2=b2, eps=1e-8)
        theirs = (
            optax.ScaleByAdamState(count=state.count, mu=state.mu, nu=state.nu),
            optax.EmptyState(),
        )
        ours, ours_params, their_params = state, params, params
        for grads in grads_seq:
            updates, theirs = opt.update(grads, theirs, their_params)
            their_params = optax.apply_updates(their_params, updates)
            ours_params, ours = lesson._adam_step(ours_params, grads, ours, lr, **case.kwargs)
            _leaves_close(ours_params, their_params, *lesson.adam_tolerance(lr, b1, b2))
            _leaves_close((ours.mu, ours.nu), (theirs[0].mu, theirs[0].nu), atol=1e-9)
            assert int(ours.count) == int(theirs[0].count)


def adam_step_with_a_tpus_power(params, grads, state, lr, b1=0.9, b2=0.999, eps=1e-8):
    """optax's order, with each power b**count a few ulps off, as a TPU computes it."""
    count = state.count + 1
    off = 1 + APPROXIMATE_ULPS * float(jnp.finfo(jnp.float32).eps)
    c1, c2 = (1 - off * b ** count.astype(jnp.float32) for b in (b1, b2))
    mu = jax.tree.map(lambda g, m: (1 - b1) * g + b1 * m, grads, state.mu)
    nu = jax.tree.map(lambda g, v: (1 - b2) * jnp.square(g) + b2 * v, grads, state.nu)
    new = jax.tree.map(lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, mu, nu)
    return new, AdamState(count, mu, nu)


def test_adam_passes_with_a_power_as_approximate_as_a_tpus(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """1 - b2**count magnifies the power's few ulps a thousandfold (3e-5 at lr=0.1 on a TPU): the
    tolerance rule allows for it, and still tells the wrong bias corrections (the table)."""
    out = check_output("06.adam_step", adam_step_with_a_tpus_power, capsys)
    assert "06.adam_step: passed" in out, out


def test_adam_hints_name_wrong_algorithms_that_really_differ() -> None:
    # The judge's Adam without flags is Adam; each wrong variant differs from it on some self-check
    # case.
    cases = get_exercise("06.adam_step").make_cases("check")
    differs = {i: False for i in range(len(lesson._ADAM_VARIANTS))}
    for case in cases:
        params, grads_seq, state, lr = case.args
        right = as_judged(lesson._adam_step(params, grads_seq[0], state, lr, **case.kwargs))
        assert trees_close(
            as_judged(lesson._adam_variant(params, grads_seq[0], state, lr, **case.kwargs)), right
        )
        for i, (flags, _) in enumerate(lesson._ADAM_VARIANTS):
            with np.errstate(all="ignore"):
                wrong = as_judged(
                    lesson._adam_variant(params, grads_seq[0], state, lr, **case.kwargs, **flags)
                )
            differs[i] |= not trees_close(wrong, right)
    assert all(differs.values()), differs


def test_train_loop_reference_is_momentum_steps_in_a_python_loop() -> None:
    case = get_exercise("06.train_loop").make_cases("grade")[1]
    loss_fn, params, batches, lr, beta = case.args

    @jax.jit
    def step(params, velocity, batch):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        return *lesson._momentum_step(params, grads, velocity, lr, beta), loss

    velocity, losses = jax.tree.map(jnp.zeros_like, params), []
    for i in range(batches["target"].shape[0]):
        params, velocity, loss = step(params, velocity, jax.tree.map(lambda b, i=i: b[i], batches))
        losses.append(loss)
    got = lesson._train_loop(*case.args)
    _leaves_close(got, (params, velocity, jnp.stack(losses)), rtol=1e-4, atol=1e-5)


def test_train_loop_reference_keeps_bfloat16() -> None:
    case = next(
        c for c in get_exercise("06.train_loop").make_cases("check") if "bfloat16" in c.label
    )
    params, velocity, _ = lesson._train_loop(*case.args)
    assert [leaf.dtype for leaf in jax.tree.leaves(params)] == [
        leaf.dtype for leaf in jax.tree.leaves(case.args[1])
    ]
    assert np.dtype(jnp.bfloat16) in {leaf.dtype for leaf in jax.tree.leaves(velocity)}


def test_checkpoint_round_trip_and_misfits(tmp_path: Path) -> None:
    state = {
        "params": {"w": jnp.ones((2, 3)), "b": None},
        "opt": AdamState(jnp.int32(4), [jnp.zeros(3)], None),
    }
    lesson._save_checkpoint(tmp_path / "state.npz", state)
    with np.load(tmp_path / "state.npz") as data:
        assert sorted(data.files) == ["['opt'].count", "['opt'].mu[0]", "['params']['w']"]
    back = lesson._restore_checkpoint(tmp_path / "state.npz", state)
    assert jax.tree.structure(back) == jax.tree.structure(state) and cl.tree_allclose(back, state)  # type: ignore[operator]  # jaxlib leaves PyTreeDef untyped
    with pytest.raises(
        ValueError, match=r"\['params'\]\['w'\] has shape \(2, 3\) in the file, \(3, 2\)"
    ):
        lesson._restore_checkpoint(
            tmp_path / "state.npz", {**state, "params": {"w": jnp.ones((3, 2)), "b": None}}
        )
    with pytest.raises(ValueError, match=r"\['opt'\]\.count is in the file but not in `like`"):
        lesson._restore_checkpoint(
            tmp_path / "state.npz", {**state, "opt": AdamState(None, [jnp.zeros(3)], None)}
        )


# --- cases and probes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exercise_id",
    [
        "06.momentum_step",
        "06.adam_step",
        "06.save_checkpoint",
        "06.restore_checkpoint",
        "06.train_loop",
    ],
)
def test_cases_have_none_subtrees_and_several_containers(exercise_id: str) -> None:
    for purpose in ("check", "grade"):
        cases = get_exercise(exercise_id).make_cases(purpose)
        trees = [
            case.args[1]
            if exercise_id in ("06.save_checkpoint", "06.restore_checkpoint", "06.train_loop")
            else case.args[0]
            for case in cases
        ]
        if exercise_id == "06.restore_checkpoint":
            trees += [case.info["entries"] for case in cases]
        kinds = {type(node).__name__ for tree in trees for node in nodes(tree)}
        assert {"dict", "list"} <= kinds and any(
            hasattr(node, "_fields") for tree in trees for node in nodes(tree)
        ), (purpose, kinds)
        assert has_none(trees), purpose


def _leftovers() -> set[str]:
    return {name for name in os.listdir(tempfile.gettempdir()) if name.startswith("course-06-")}


def test_checkpoint_probes_clean_up_after_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder of this test's own: the other test process judges lesson 06 too, at the same time.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = _leftovers()
    for exercise_id, answer in (
        ("06.save_checkpoint", save_checkpoint),
        ("06.save_checkpoint", save_adding_suffix),
        ("06.restore_checkpoint", restore_checkpoint),
        ("06.restore_checkpoint", restore_naming_its_file),
    ):
        evaluate(get_exercise(exercise_id), answer)
    assert _leftovers() <= before


def test_restore_messages_never_show_the_temporary_folder() -> None:
    verdict = evaluate(get_exercise("06.restore_checkpoint"), restore_naming_its_file)
    assert verdict.status == "failed"
    assert (
        "cannot read <folder>/checkpoint.npz" in verdict.message
        and tempfile.gettempdir() not in verdict.message
    )


def test_bfloat16_results_travel_as_float32_with_their_dtype() -> None:
    record = dtyped_plain(
        {"w": jnp.ones(2, jnp.bfloat16), "b": None, "n": np.arange(2, dtype=np.int32)}
    )
    assert record["dtypes"] == [["['n']", "int32"], ["['w']", "bfloat16"]]
    rebuilt = rebuild_tree(record["tree"])
    assert rebuilt["w"].dtype == np.float32 and rebuilt["b"] is None


def test_has_loop_finds_scan_and_while_anywhere() -> None:
    def traced(fn: Any) -> Any:
        return jax.jit(fn).trace(jnp.ones(3)).jaxpr

    assert lesson._has_loop(
        traced(lambda x: jax.lax.scan(lambda c, _: (c * 2, None), x, length=3)[0])
    )
    assert lesson._has_loop(traced(lambda x: jax.lax.fori_loop(0, 3, lambda i, c: c * 2, x)))
    assert lesson._has_loop(
        traced(
            lambda x: jax.jit(lambda y: jax.lax.while_loop(lambda c: c[0] < 9, lambda c: c * 2, y))(
                x
            )
        )
    )
    assert not lesson._has_loop(traced(lambda x: x * 2 * 2 * 2))


# --- hints that do not depend on the wording of an error ------------------------------------------

# The train_loop answers raise inside JAX (a scan whose carry changes, float() on a tracer): what
# went wrong, and the idea after it, come from what the body of the failed scan did to the carry
# and from a run without jit.
TRAIN_LOOP_RAISING: list[tuple[Callable[..., Any], str, str]] = [
    (
        make_train_loop(lazy=True),
        "the carry of `lax.scan` came out with another structure",
        "a compiled loop has one fixed type for its carry",
    ),
    (
        make_train_loop(cast=False),
        "a leaf of the carry changed dtype inside the loop: at carry[0]",
        "every leaf of a `scan` carry keeps its dtype",
    ),
    (
        make_train_loop(init="scalar"),
        "a leaf of the carry changed shape inside the loop: at carry",
        "every leaf of a `scan` carry keeps its shape",
    ),
    (
        train_loop_float_losses,
        "`train_loop` runs without `jit` and fails under it",
        "The check runs `train_loop` under `jax.jit`",
    ),
]


@pytest.mark.parametrize("wording", WORDINGS)
@pytest.mark.parametrize(("answer", "what", "idea"), TRAIN_LOOP_RAISING, ids=answer_id)
def test_train_loop_hints_come_from_the_carry_not_the_message(
    answer: Callable[..., Any],
    what: str,
    idea: str,
    wording: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JAX's message withheld or reworded where it is raised (inside the answer) and where the
    check reads it: the first check still names the change of the carry, or the jit-only failure,
    and the second adds the idea that goes with it."""
    withhold_jax_wording(monkeypatch, wording, lesson)
    quiet = raising_withheld(answer, wording)
    _, (out, again) = successive_reports("06.train_loop", quiet, 2)
    assert what in out and idea not in out, out
    assert "hint 1/2, the idea: " in again and idea in again, again


@pytest.mark.parametrize("wording", WORDINGS)
def test_pickled_checkpoint_is_found_from_the_file_not_the_message(
    wording: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NumPy's "Object arrays cannot be loaded when allow_pickle=False", withheld or reworded: the
    check reads the entries' headers and names the ones that hold Python objects."""
    monkeypatch.setattr(np, "load", raising_withheld(np.load, wording))
    withhold_jax_wording(monkeypatch, wording, lesson)
    _, (out, again) = successive_reports("06.save_checkpoint", save_none_too, 2)
    assert "the file holds pickled Python objects, not plain arrays (in the entries" in out, out
    assert "the idea: `None` subtrees hold no leaves, so they write nothing" in again, again


def test_a_train_loop_that_fails_everywhere_gets_the_error_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No scan failed and the loop fails without jit too: nothing measured, so no cause named."""

    def train_loop_missing_a_key(loss_fn, params, batches, lr, beta):
        return make_train_loop()(loss_fn, params, {"target": batches["weights"]}, lr, beta)

    out = check_output("06.train_loop", train_loop_missing_a_key, capsys)
    assert "`train_loop` raised KeyError: 'weights'" in out, out
    assert "Pitfall" not in out and "without `jit`" not in out
