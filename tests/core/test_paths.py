"""Masks, labels, partition/combine (course_lib/_paths.py) and the masked and labelled optimizers.

The laws hold for every tree (hypothesis); the optimizers are compared with optax.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import Layer, trees

import course_lib as cl
from course_lib._leaves import same_structure


def _mask_from_bits(tree: Any, bits: list[bool]) -> Any:
    leaves, treedef = jax.tree.flatten(tree)
    return jax.tree.unflatten(
        treedef, [bits[i % len(bits)] if bits else True for i in range(len(leaves))]
    )


def _same(a: Any, b: Any) -> bool:
    none = lambda x: x is None
    if not same_structure(a, b, is_leaf=none):
        return False
    return all(
        (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
        for x, y in zip(
            jax.tree.leaves(a, is_leaf=none), jax.tree.leaves(b, is_leaf=none), strict=True
        )
    )


# --- laws -------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(trees(), st.lists(st.booleans(), max_size=6))
def test_combine_undoes_partition(tree: Any, bits: list[bool]) -> None:
    mask = _mask_from_bits(tree, bits)
    selected, rest = cl.partition(tree, mask)
    assert _same(cl.combine(selected, rest), tree)
    assert _same(cl.combine(rest, selected), tree)


@settings(max_examples=60, deadline=None)
@given(trees(), st.lists(st.booleans(), max_size=6))
def test_partition_splits_the_leaves_between_the_halves(tree: Any, bits: list[bool]) -> None:
    mask = _mask_from_bits(tree, bits)
    selected, rest = cl.partition(tree, mask)
    keep = jax.tree.leaves(mask)
    leaves = jax.tree.leaves(tree)
    assert [id(x) for x in jax.tree.leaves(selected)] == [
        id(x) for x, k in zip(leaves, keep, strict=True) if k
    ]
    assert [id(x) for x in jax.tree.leaves(rest)] == [
        id(x) for x, k in zip(leaves, keep, strict=True) if not k
    ]
    # Both halves keep every container: with None as a leaf they have one structure.
    none = lambda x: x is None
    assert same_structure(selected, rest, is_leaf=none)


@settings(max_examples=60, deadline=None)
@given(trees())
def test_tree_mask_has_the_structure_of_the_tree(tree: Any) -> None:
    mask = cl.tree_mask(tree, lambda name: len(name) % 2 == 0)
    assert same_structure(mask, tree)
    names = [
        jax.tree_util.keystr(p, simple=True, separator="/")
        for p, _ in jax.tree_util.tree_leaves_with_path(tree)
    ]
    assert jax.tree.leaves(mask) == [len(n) % 2 == 0 for n in names]
    assert all(type(b) is bool for b in jax.tree.leaves(mask))


@settings(max_examples=40, deadline=None)
@given(trees())
def test_an_all_true_mask_selects_everything(tree: Any) -> None:
    selected, rest = cl.partition(tree, cl.tree_mask(tree, lambda name: True))
    assert _same(selected, tree)
    assert jax.tree.leaves(rest) == []


# --- tree_mask, tree_labels ---------------------------------------------------------------------


PARAMS: dict[str, Any] = {
    "layers": [
        {"w": jnp.ones((2, 3)), "b": jnp.zeros(3)},
        {"w": jnp.full((3, 1), 2.0), "b": jnp.zeros(1)},
    ],
    "norm": {"scale": jnp.ones(1)},
    "head": Layer(weight=jnp.ones((1, 1)), bias=None),
}


def test_rule_sees_slash_names() -> None:
    seen: list[str] = []

    def rule(name: str) -> bool:
        seen.append(name)
        return False

    cl.tree_mask(PARAMS, rule)
    assert seen == [
        "head/weight",
        "layers/0/b",
        "layers/0/w",
        "layers/1/b",
        "layers/1/w",
        "norm/scale",
    ]


def test_tree_mask_refuses_a_rule_that_returns_no_bool() -> None:
    import re

    with pytest.raises(TypeError, match=r"wrap it in bool\(\)"):
        cl.tree_mask(PARAMS, lambda name: re.search("w$", name))  # type: ignore[arg-type, return-value]  # the wrong type on purpose


def test_tree_labels_and_unknown_labels() -> None:
    labels = cl.tree_labels(PARAMS, lambda name: name.split("/")[0])
    assert labels["layers"][1]["w"] == "layers" and labels["head"].bias is None
    with pytest.raises(ValueError, match="names no optimizer"):
        cl.multi_transform({"layers": cl.sgd(0.1)}, labels)


def test_partition_takes_a_prefix_mask_and_names_a_wrong_one() -> None:
    trained, frozen = cl.partition(PARAMS, {"layers": True, "norm": False, "head": False})
    assert trained["layers"][0]["w"] is PARAMS["layers"][0]["w"] and trained["norm"] == {
        "scale": None
    }
    with pytest.raises(cl.TreeStructureError, match="structure of the tree"):
        cl.partition(PARAMS, {"layers": True})
    with pytest.raises(TypeError, match="cl.tree_mask"):
        cl.partition(PARAMS, lambda name: True)


def test_combine_refuses_trees_of_different_structures() -> None:
    with pytest.raises(cl.TreeStructureError, match="tree 1"):
        cl.combine({"a": None, "b": 1.0}, {"a": 2.0})


def test_partition_and_combine_under_jit_with_a_fixed_mask_compile_once() -> None:
    mask = cl.tree_mask(PARAMS, lambda name: name.endswith("w"))

    @jax.jit
    def loss(trained: Any, frozen: Any) -> jax.Array:
        params = cl.combine(trained, frozen)
        return jnp.sum(jnp.stack([jnp.sum(x**2) for x in jax.tree.leaves(params)]))

    trained, frozen = cl.partition(PARAMS, mask)
    grad = jax.jit(jax.grad(loss))
    grad(trained, frozen)
    with cl.count_compiles() as counter:
        for _ in range(2):
            grads = grad(trained, frozen)
    assert counter.compiles == 0
    assert grads["norm"]["scale"] is None and grads["layers"][1]["w"].shape == (3, 1)


def test_a_traced_mask_gets_advice_that_works() -> None:
    mask = {"w": True, "b": False}
    params = {"w": jnp.ones(2), "b": jnp.ones(2)}
    with pytest.raises(TypeError, match="traced array") as raised:
        jax.jit(lambda p, m: cl.partition(p, m)[0])(params, mask)
    assert "close over it" in str(raised.value)
    # the advice does not send the learner to a static argument, which a dict cannot be
    assert "cannot be a static argument" in str(raised.value)
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(lambda p, m: cl.partition(p, m)[0], static_argnums=1)(params, mask)
    # and closing over the mask, as the message says, works
    closed = jax.jit(lambda p: cl.partition(p, mask)[0])
    assert closed(params)["b"] is None


# --- optimizers against optax ---------------------------------------------------------------------


def _net(seed: int) -> Any:
    keys = jax.random.split(jax.random.key(seed), 5)
    return {
        "encoder": {"w": jax.random.normal(keys[0], (3, 4)), "b": jax.random.normal(keys[1], (4,))},
        "head": {"w": jax.random.normal(keys[2], (4, 2)), "b": jax.random.normal(keys[3], (2,))},
        "norm": None,
    }


def _grads(params: Any, seed: int) -> Any:
    return jax.tree.map(lambda p: jnp.sin(p * (seed + 1.0)), params)


def _optax_run(tx: optax.GradientTransformation, params: Any, steps: int) -> Any:
    state = tx.init(params)
    for t in range(steps):
        updates, state = tx.update(_grads(params, t), state, params)
        params = optax.apply_updates(params, updates)
    return params


def _course_run(opt: cl.Optimizer, params: Any, steps: int) -> Any:
    state = opt.init(params)
    for t in range(steps):
        params, state = opt.apply_gradients(_grads(params, t), state, params)
    return params


def test_multi_transform_matches_optax() -> None:
    params = _net(0)
    labels = cl.tree_labels(params, lambda name: name.split("/")[0])
    ours = cl.multi_transform(
        {"encoder": cl.adam(0.01), "head": cl.momentum(0.1, beta=0.9)}, labels
    )
    theirs = optax.partition(
        {"encoder": optax.adam(0.01), "head": optax.sgd(0.1, momentum=0.9)}, labels
    )
    cl.assert_trees_close(
        _course_run(ours, _net(0), 4), _optax_run(theirs, params, 4), rtol=1e-5, atol=1e-6
    )


def test_masked_freezes_as_multi_transform_with_set_to_zero() -> None:
    params = _net(1)
    mask = cl.tree_mask(params, lambda name: name.startswith("head"))
    labels = jax.tree.map(lambda keep: "train" if keep else "freeze", mask)
    theirs = optax.partition({"train": optax.adam(0.05), "freeze": optax.set_to_zero()}, labels)
    result = _course_run(cl.masked(cl.adam(0.05), mask), _net(1), 3)
    cl.assert_trees_close(result, _optax_run(theirs, params, 3), rtol=1e-5, atol=1e-6)
    assert np.array_equal(result["encoder"]["w"], params["encoder"]["w"])


def test_masked_moves_the_masked_leaves_as_optax_masked() -> None:
    """optax.masked passes masked-out updates through (the raw gradient); elsewhere it agrees."""
    params = _net(2)
    mask = cl.tree_mask(params, lambda name: name.endswith("w"))
    ours = _course_run(cl.masked(cl.sgd(0.1), mask), _net(2), 1)
    updates, _ = optax.masked(optax.sgd(0.1), mask).update(
        _grads(params, 0), optax.masked(optax.sgd(0.1), mask).init(params), params
    )
    for part in ("encoder", "head"):
        np.testing.assert_allclose(
            ours[part]["w"], params[part]["w"] + updates[part]["w"], rtol=1e-6
        )
        np.testing.assert_array_equal(
            updates[part]["b"], _grads(params, 0)[part]["b"]
        )  # optax: passed through
        np.testing.assert_array_equal(ours[part]["b"], params[part]["b"])  # ours: frozen


def test_weight_decay_on_weights_only_matches_optax_masked_in_a_chain() -> None:
    params = _net(3)
    decay = cl.tree_mask(params, lambda name: name.endswith("w"))
    theirs = optax.chain(optax.masked(optax.add_decayed_weights(0.1), decay), optax.sgd(0.05))
    expected = _optax_run(theirs, params, 2)
    opt = cl.sgd(0.05)
    state, ours = opt.init(_net(3)), _net(3)
    for t in range(2):
        grads = jax.tree.map(lambda g, p, d: g + 0.1 * p if d else g, _grads(ours, t), ours, decay)
        ours, state = opt.apply_gradients(grads, state, ours)
    cl.assert_trees_close(ours, expected, rtol=1e-5, atol=1e-6)


def test_group_rates_change_without_recompiling() -> None:
    params = _net(4)
    labels = cl.tree_labels(params, lambda name: name.split("/")[0])
    opt = cl.multi_transform({"encoder": cl.sgd(0.0), "head": cl.sgd(0.1)}, labels)
    state = opt.init(params)
    params, state = opt.apply_gradients(_grads(params, 0), state, params)
    with cl.count_compiles() as counter:
        for t in range(3):
            params, state = opt.apply_gradients(
                _grads(params, t), state, params, learning_rate={"encoder": 0.01 * t}
            )
    assert counter.compiles == 0
    assert float(state.inner["encoder"].learning_rate) == pytest.approx(0.02)
    with pytest.raises(ValueError, match="its own learning rate"):
        opt.apply_gradients(_grads(params, 0), state, params, learning_rate=0.1)


def test_masked_keeps_no_state_for_frozen_leaves() -> None:
    params = _net(5)
    opt = cl.masked(cl.adam(0.1), cl.tree_mask(params, lambda name: name.startswith("head")))
    state = opt.init(params)
    assert cl.tree_size(state.inner["trained"].mu) == cl.tree_size(params["head"])
    assert state.inner["frozen"] == cl.FrozenState()
