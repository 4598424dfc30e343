"""Optimizers (course_lib/_optim.py): trajectories against optax, state as a pytree, learning rates
that never recompile, donation, and clear errors."""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import course_lib as cl
from course_lib._leaves import is_namedtuple, same_structure


def make_params() -> dict:
    return {
        "w": jnp.array([[0.5, -1.0, 2.0], [1.5, 0.0, -0.25]]),
        "b": [jnp.array([0.1, 0.2, -0.3]), None],
        "s": jnp.array(3.0, jnp.float32),  # an explicit dtype: not weakly typed
    }


def loss(params: dict) -> jax.Array:
    w, b, s = params["w"], params["b"][0], params["s"]
    return jnp.sum(jnp.sin(w) * w) + jnp.sum((b - 1.0) ** 2) + 0.5 * s**2 + jnp.sum(w[0] * b)


grad = jax.jit(jax.grad(loss))


def assert_close(actual: object, expected: object, atol: float = 1e-6) -> None:
    assert same_structure(actual, expected)
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        assert np.shape(a) == np.shape(e)
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-6, atol=atol)


def run_ours(opt: cl.Optimizer, steps: int) -> dict:
    params = make_params()
    state = opt.init(params)
    for _ in range(steps):
        params, state = opt.apply_gradients(grad(params), state, params)
    return params


def run_optax(tx: optax.GradientTransformation, steps: int) -> dict:
    params = make_params()
    state = tx.init(params)
    for _ in range(steps):
        updates, state = tx.update(grad(params), state, params)
        params = optax.apply_updates(params, updates)
    return params


# name: (our optimizer given `donate`, the optax one)
CASES: dict[
    str, tuple[Callable[[bool], cl.Optimizer], Callable[[], optax.GradientTransformation]]
] = {
    "sgd": (lambda d: cl.sgd(0.1, donate=d), lambda: optax.sgd(0.1)),
    "momentum": (
        lambda d: cl.momentum(0.05, beta=0.9, donate=d),
        lambda: optax.sgd(0.05, momentum=0.9),
    ),
    "nesterov": (
        lambda d: cl.momentum(0.05, beta=0.8, nesterov=True, donate=d),
        lambda: optax.sgd(0.05, momentum=0.8, nesterov=True),
    ),
    "adam": (lambda d: cl.adam(0.03, donate=d), lambda: optax.adam(0.03)),
    "adam_options": (
        lambda d: cl.adam(0.01, b1=0.5, b2=0.9, eps=1e-3, donate=d),
        lambda: optax.adam(0.01, b1=0.5, b2=0.9, eps=1e-3),
    ),
}


@pytest.mark.parametrize(
    ("case", "donate"), [(case, True) for case in CASES] + [("adam", False), ("nesterov", False)]
)
def test_optimizer_steps_match_optax(case: Any, donate: Any) -> None:
    ours, theirs = CASES[case]
    assert_close(run_ours(ours(donate), 6), run_optax(theirs(), 6))


def test_sgd_one_step_by_hand() -> None:
    opt = cl.sgd(0.5, donate=False)
    params = {"a": jnp.array([1.0, -2.0]), "b": (jnp.array(4.0), None)}
    grads = {"a": jnp.array([0.5, 1.0]), "b": (jnp.array(-2.0), None)}
    new, state = opt.apply_gradients(grads, opt.init(params), params)
    assert_close(new, {"a": np.array([0.75, -2.5]), "b": (np.float32(5.0), None)})
    assert float(state.learning_rate) == 0.5


def test_momentum_two_steps_by_hand() -> None:
    # v1 = g1 = 1, p1 = 0 - 0.1 * 1 = -0.1; v2 = 0.5 * 1 + 3 = 3.5, p2 = -0.1 - 0.35 = -0.45
    opt = cl.momentum(0.1, beta=0.5, donate=False)
    params = [jnp.array(0.0)]
    state = opt.init(params)
    params, state = opt.apply_gradients([jnp.array(1.0)], state, params)
    params, state = opt.apply_gradients([jnp.array(3.0)], state, params)
    np.testing.assert_allclose(
        [float(params[0]), float(state.velocity[0])], [-0.45, 3.5], rtol=1e-6
    )
    # Nesterov steps along g + beta * v: first step -0.1 * (1 + 0.5) = -0.15
    nesterov = cl.momentum(0.1, beta=0.5, nesterov=True, donate=False)
    params, _ = nesterov.apply_gradients(
        [jnp.array(1.0)], nesterov.init([jnp.array(0.0)]), [jnp.array(0.0)]
    )
    np.testing.assert_allclose(float(params[0]), -0.15, rtol=1e-6)


def test_adam_first_step_is_the_learning_rate_times_the_sign() -> None:
    # After one step the bias-corrected m / sqrt(v) is g / |g| (up to eps).
    opt = cl.adam(0.1, donate=False)
    params = {"w": jnp.array([1.0, 1.0, 1.0])}
    new, state = opt.apply_gradients({"w": jnp.array([3.0, -0.02, 0.0])}, opt.init(params), params)
    np.testing.assert_allclose(np.asarray(new["w"]), [0.9, 1.1, 1.0], rtol=1e-5)
    assert int(state.count) == 1


@pytest.mark.parametrize(
    ("make", "state_type", "tree_fields"),
    [
        (lambda: cl.sgd(0.1), cl.SGDState, ()),
        (lambda: cl.momentum(0.1), cl.MomentumState, ("velocity",)),
        (lambda: cl.adam(0.1), cl.AdamState, ("mu", "nu")),
    ],
)
def test_state_is_a_namedtuple_of_trees_shaped_like_params(
    make: Any, state_type: Any, tree_fields: Any
) -> None:
    params = make_params()
    state = make().init(params)
    assert type(state) is state_type and is_namedtuple(state)
    assert state.learning_rate.shape == () and state.learning_rate.dtype == jnp.float32
    for name in tree_fields:
        tree = getattr(state, name)
        assert same_structure(tree, params)
        for leaf, param in zip(jax.tree.leaves(tree), jax.tree.leaves(params), strict=True):
            assert leaf.shape == param.shape and leaf.dtype == param.dtype
            assert not np.any(np.asarray(leaf))
    if state_type is cl.AdamState:
        assert state.count.shape == () and state.count.dtype == jnp.int32
    # The state is itself a pytree: its leaves are the rate (and count) plus one array per param per
    # tree.
    n_params = len(jax.tree.leaves(params))
    assert len(jax.tree.leaves(state)) == 1 + (state_type is cl.AdamState) + n_params * len(
        tree_fields
    )


@pytest.mark.parametrize("make", [cl.sgd, cl.momentum, cl.adam])
def test_changing_learning_rate_never_recompiles(make: Any) -> None:
    opt = make(0.1)
    params = make_params()
    state = opt.init(params)
    grads = grad(params)
    params, state = opt.apply_gradients(grads, state, params)  # the one compilation
    rates = [0.05, np.float32(0.02), jnp.float32(0.01), 0.3]
    with cl.count_compiles() as counter:
        for rate in rates:
            params, state = opt.apply_gradients(grads, state, params, learning_rate=rate)
    assert (counter.traces, counter.compiles) == (0, 0)
    assert float(state.learning_rate) == pytest.approx(0.3)


@pytest.mark.parametrize("make", [cl.sgd, cl.momentum, cl.adam])
def test_weakly_typed_params_compile_the_step_once(make: Any) -> None:
    # jnp.array(3.0) and 3.0 are weakly typed; the step returns plain float32 arrays, and without
    # care the second call would compile the step again for them.
    def weak_params() -> dict:
        return {"w": jnp.array([1.0, -1.0]), "s": jnp.array(3.0), "t": 0.5}

    def loss_fn(p: dict) -> jax.Array:
        return jnp.sum(p["w"] ** 2) + p["s"] * p["t"]

    params = weak_params()
    assert params["w"].weak_type is False and params["s"].weak_type is True
    opt, reference = make(0.1), make(0.1, donate=False)
    state = opt.init(params)
    with cl.count_compiles() as counter:
        for _ in range(4):
            params, state = opt.apply_gradients(jax.grad(loss_fn)(params), state, params)
    assert counter.compiled.count("jit(checked_step)") == 1
    assert not any(leaf.weak_type for leaf in jax.tree.leaves((params, state)))
    # Same numbers as the same optimizer given plain float32 leaves from the start.
    expected = jax.tree.map(lambda leaf: jnp.asarray(leaf, jnp.float32), weak_params())
    expected_state = reference.init(expected)
    for _ in range(4):
        expected, expected_state = reference.apply_gradients(
            jax.grad(loss_fn)(expected), expected_state, expected
        )
    assert_close(params, expected)


def test_weakly_typed_rate_arrays_share_the_compiled_step() -> None:
    # jnp.asarray(0.2) is weakly typed; making it a plain float32 is one small eager program,
    # compiled once per process (hence the warm-up), and the step itself is never traced again.
    opt = cl.sgd(0.1)
    params = make_params()
    grads = grad(params)
    params, state = opt.apply_gradients(
        grads, opt.init(params), params, learning_rate=jnp.asarray(0.5)
    )
    fresh = [jnp.asarray(0.2), jnp.asarray(0.25)]
    assert all(rate.weak_type for rate in fresh)
    with cl.count_compiles() as counter:
        for rate in fresh:
            params, state = opt.apply_gradients(grads, state, params, learning_rate=rate)
    assert (counter.traces, counter.compiles) == (0, 0)


def test_changed_learning_rate_is_used_and_kept() -> None:
    opt = cl.sgd(1.0, donate=False)
    params = {"w": jnp.array([1.0, 2.0])}
    grads = {"w": jnp.array([10.0, -10.0])}
    new, state = opt.apply_gradients(
        grads, opt.init(params), params, learning_rate=np.float32(0.01)
    )
    np.testing.assert_allclose(np.asarray(new["w"]), [0.9, 2.1], rtol=1e-6)
    again, _ = opt.apply_gradients(grads, state, new)  # the new rate stays in the state
    np.testing.assert_allclose(np.asarray(again["w"]), [0.8, 2.2], rtol=1e-6)


@pytest.mark.parametrize("make", [cl.sgd, cl.momentum, cl.adam])
def test_donation_deletes_old_params_and_state_but_the_rate(make: Any) -> None:
    opt = make(0.1)
    params = make_params()
    state = opt.init(params)
    grads = grad(params)
    rate = state.learning_rate
    new_params, new_state = opt.apply_gradients(grads, state, params)
    assert all(
        leaf.is_deleted() for leaf in jax.tree.leaves((params, state._replace(learning_rate=None)))
    )
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves((grads, new_params, new_state)))
    # The step never returns the rate (an output buffer per call): the new state holds the same
    # array, which was not donated.
    assert new_state.learning_rate is rate


def test_grouped_rates_are_carried_over_as_they_are() -> None:
    params = make_params()
    labels = jax.tree.map(lambda _: "fast", params) | {"b": ["slow", None]}
    opt = cl.multi_transform({"fast": cl.adam(0.1), "slow": cl.sgd(0.01)}, labels)
    state = opt.init(params)
    rates = {name: inner.learning_rate for name, inner in state.inner.items()}
    params, state = opt.apply_gradients(grad(params), state, params)
    params, state = opt.apply_gradients(grad(params), state, params, learning_rate={"slow": 0.5})
    assert state.inner["fast"].learning_rate is rates["fast"] and not rates["fast"].is_deleted()
    assert float(state.inner["slow"].learning_rate) == 0.5
    masked = cl.masked(cl.sgd(0.1), jax.tree.map(lambda _: True, params))
    masked_state = masked.init(params)
    _, after = masked.apply_gradients(grad(params), masked_state, params)
    assert after.inner["trained"].learning_rate is masked_state.inner["trained"].learning_rate


@pytest.mark.parametrize("make", [cl.sgd, cl.momentum, cl.adam])
def test_donate_false_keeps_old_params_and_state(make: Any) -> None:
    opt = make(0.1, donate=False)
    params = make_params()
    state = opt.init(params)
    opt.apply_gradients(grad(params), state, params)
    assert not any(leaf.is_deleted() for leaf in jax.tree.leaves((params, state)))
    np.testing.assert_array_equal(np.asarray(params["w"]), np.asarray(make_params()["w"]))


def test_donation_leaves_the_callers_learning_rate_alone() -> None:
    rate, new_rate = jnp.float32(0.1), jnp.float32(0.05)
    opt = cl.sgd(rate)
    params = make_params()
    params, state = opt.apply_gradients(grad(params), opt.init(params), params)
    params, state = opt.apply_gradients(grad(params), state, params, learning_rate=new_rate)
    assert not rate.is_deleted() and not new_rate.is_deleted()
    assert float(opt.init(params).learning_rate) == pytest.approx(0.1)  # the optimizer still works


def test_one_array_donated_twice_names_both_places() -> None:
    tied = jnp.ones(3)
    params = {"embed": tied, "unembed": tied}  # tied weights: one array in two places
    opt = cl.sgd(0.1)
    grads = {"embed": jnp.ones(3), "unembed": jnp.ones(3)}
    with pytest.raises(
        ValueError, match=r"appear twice.*: params\['embed'\] and params\['unembed'\]\. Pass a copy"
    ):
        opt.apply_gradients(grads, opt.init(params), params)
    assert not tied.is_deleted()
    same = {"w": jnp.ones(2)}
    with pytest.raises(ValueError, match=r"params\['w'\] and grads\['w'\]"):
        opt.apply_gradients(same, opt.init(same), same)
    kept = cl.sgd(0.1, donate=False)
    new, _ = kept.apply_gradients(grads, kept.init(params), params)
    np.testing.assert_allclose(np.asarray(new["unembed"]), [0.9, 0.9, 0.9], rtol=1e-6)


def test_apply_gradients_inside_a_jitted_train_step_with_a_traced_rate() -> None:
    opt = cl.momentum(0.1, beta=0.5, donate=False)
    params = [jnp.array(0.0)]
    step = jax.jit(lambda g, s, p, lr: opt.apply_gradients(g, s, p, learning_rate=lr))
    new, state = step([jnp.array(2.0)], opt.init(params), params, jnp.float32(0.25))
    np.testing.assert_allclose([float(new[0]), float(state.learning_rate)], [-0.5, 0.25])


@pytest.mark.parametrize("make", [cl.sgd, cl.momentum, cl.adam])
def test_mismatched_grads_name_the_path(make: Any) -> None:
    opt = make(0.1, donate=False)
    params = make_params()
    state = opt.init(params)
    grads = grad(params)
    grads["b"] = tuple(grads["b"])
    with pytest.raises(cl.TreeStructureError) as info:
        opt.apply_gradients(grads, state, params)
    message = str(info.value)
    assert message.startswith(
        f"{opt.name}.apply_gradients: `grads` must have the same structure as `params`"
    )
    assert "at ['b']: list in params, tuple in grads" in message


def test_missing_grad_names_the_key() -> None:
    opt = cl.adam(0.1, donate=False)
    params = make_params()
    grads = grad(params)
    del grads["s"]
    with pytest.raises(
        cl.TreeStructureError, match=r"at <root>: dict keys differ: \['s'\] only in params"
    ):
        opt.apply_gradients(grads, opt.init(params), params)


def test_string_leaves_name_the_path() -> None:
    opt = cl.sgd(0.1, donate=False)
    with pytest.raises(cl.TreeLeafError, match=r"sgd.init: the leaf at \['act'\] is str"):
        opt.init({"w": jnp.ones(2), "act": "relu"})
    params = {"w": jnp.ones(2), "act": jnp.ones(1)}
    with pytest.raises(
        cl.TreeLeafError, match=r"sgd.apply_gradients \(grads\): the leaf at \['act'\] is str"
    ):
        opt.apply_gradients({"w": jnp.ones(2), "act": "relu"}, opt.init(params), params)


@pytest.mark.parametrize("make", [cl.sgd, cl.momentum, cl.adam])
def test_optimizer_over_a_flat_tree_equals_the_plain_tree(make: Any) -> None:
    plain_opt, flat_opt = make(0.05), make(0.05)
    params = make_params()
    flat = cl.FlatTree.from_tree(make_params())
    plain_state, flat_state = plain_opt.init(params), flat_opt.init(flat)
    flat_grad = jax.jit(jax.grad(lambda f: loss(f.to_tree())))
    for _ in range(4):
        grads = grad(params)
        flat_grads = flat_grad(flat)
        assert isinstance(flat_grads, cl.FlatTree)
        params, plain_state = plain_opt.apply_gradients(grads, plain_state, params)
        flat, flat_state = flat_opt.apply_gradients(flat_grads, flat_state, flat)
    assert isinstance(flat, cl.FlatTree)
    assert_close(flat.to_tree(), params)


def test_optimizer_repr() -> None:
    assert repr(cl.adam(0.001, donate=False)) == "adam(learning_rate=0.001, donate=False)"
