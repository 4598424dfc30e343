"""Optimizers whose state is a pytree: SGD, momentum (optionally Nesterov) and Adam.

Each optimizer is an :class:`Optimizer`: ``init(params)`` builds the state, a NamedTuple of trees
shaped like ``params`` plus the learning rate as an array leaf; ``apply_gradients(grads, state,
params)`` returns ``(new_params, new_state)`` from one jitted step that donates ``params`` and
``state``. It is not optax's ``update``, which returns *updates* to add with ``apply_updates``:
``apply_gradients`` does both and returns the new parameters themselves.

Because the learning rate is an array inside the state, changing it is new data, not a new
program: ``apply_gradients(..., learning_rate=0.05)`` never recompiles. Pass a :class:`~course_lib.FlatTree`
for ``params`` and ``grads`` and the whole step is one fused kernel, however many leaves there are.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._errors import check_array_leaves, check_same_structure, leaf_dtype
from ._tree_math import tree_zeros_like
from ._typing import PyTree, Scalar


class SGDState(NamedTuple):
    """State of :func:`sgd`: only the learning rate."""

    learning_rate: jax.Array


class MomentumState(NamedTuple):
    """State of :func:`momentum`: the learning rate and a velocity tree shaped like the params."""

    learning_rate: jax.Array
    velocity: PyTree


class AdamState(NamedTuple):
    """State of :func:`adam`: learning rate, step count, and the first and second moment trees."""

    learning_rate: jax.Array
    count: jax.Array
    mu: PyTree
    nu: PyTree


def _as_rate(learning_rate: Scalar) -> jax.Array:
    # Always a strongly typed float32 array: a Python float and a jnp.float32 would otherwise be
    # two different inputs to jit (weak types) and compile twice.
    rate = jnp.asarray(learning_rate, dtype=jnp.float32)
    if rate is learning_rate:
        # The state is donated: without a copy, the caller's own array would be deleted by the
        # first update. device_put copies without compiling anything.
        rate = jax.device_put(rate, may_alias=False)
    return rate


def _is_weak(leaf: object) -> bool:
    if isinstance(leaf, (bool, np.generic)):  # np.float64 is a float, but not a weak one
        return False
    return isinstance(leaf, (int, float, complex)) or bool(getattr(leaf, "weak_type", False))


def _without_weak_types(tree: PyTree) -> tuple[PyTree, bool]:
    """``tree`` with its weakly typed leaves made plain arrays of the same dtype, and whether it had any."""
    leaves, treedef = jax.tree.flatten(tree)
    weak = [_is_weak(leaf) for leaf in leaves]
    if not any(weak):
        return tree, False
    plain = [jnp.asarray(leaf, dtype=leaf_dtype(leaf)) if w else leaf for leaf, w in zip(leaves, weak)]
    return jax.tree.unflatten(treedef, plain), True


def _shared_buffers_message(name: str, grads: PyTree, state: Any, params: PyTree) -> str:
    """Which leaves are one array, for the error XLA raises when a donated buffer is passed twice."""
    where: dict[int, list[str]] = {}
    for label, tree in (("params", params), ("state", state), ("grads", grads)):
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
            where.setdefault(id(leaf), []).append(label + jax.tree_util.keystr(path))
    shared = "; ".join(" and ".join(paths) for paths in where.values() if len(paths) > 1)
    return (
        f"{name}.apply_gradients: params and state are donated (their buffers are reused for the results), "
        f"so no array may appear twice among the inputs, and here some do: {shared or 'see the XLA error above'}. "
        f"Pass a copy (jnp.copy) where one array is used twice, or build the optimizer with donate=False."
    )


class Optimizer:
    """An ``init`` / ``apply_gradients`` pair with one compiled step.

    >>> opt = sgd(0.1)
    >>> params = {"w": jnp.ones(2)}
    >>> state = opt.init(params)
    >>> params, state = opt.apply_gradients({"w": jnp.ones(2)}, state, params)
    >>> params
    {'w': Array([0.9, 0.9], dtype=float32)}
    """

    def __init__(
        self,
        name: str,
        init: Callable[[PyTree, jax.Array], Any],
        step: Callable[[PyTree, Any, PyTree], tuple[PyTree, Any]],
        learning_rate: Scalar,
        donate: bool = True,
    ):
        self.name = name
        self.learning_rate = learning_rate
        self.donate = donate
        self._init = init

        def checked_step(grads: PyTree, state: Any, params: PyTree) -> tuple[PyTree, Any]:
            # Runs at trace time only: a clear message instead of a deep tree.map error.
            check_same_structure((params, grads), ("params", "grads"), f"{name}.apply_gradients")
            return step(grads, state, params)

        self._step = jax.jit(checked_step, donate_argnums=(1, 2) if donate else ())
        self._types_settled = False

    def init(self, params: PyTree) -> Any:
        """The initial state for ``params`` (every leaf must be an array)."""
        check_array_leaves(params, f"{self.name}.init")
        return self._init(params, _as_rate(self.learning_rate))

    def apply_gradients(
        self, grads: PyTree, state: Any, params: PyTree, learning_rate: Scalar | None = None
    ) -> tuple[PyTree, Any]:
        """One step: the new parameters and the new state, ``(new_params, new_state)``.

        Where optax takes two calls, ``updates, state = tx.update(grads, state, params)`` and then
        ``params = optax.apply_updates(params, updates)``, this is one call that returns the
        parameters themselves, never the updates.

        ``grads`` must have exactly the structure of ``params`` (as ``jax.grad`` returns it).
        ``params`` and ``state`` are donated when the optimizer was built with ``donate=True``:
        their buffers are reused for the results, so do not read the old ones afterwards.
        ``learning_rate``, when given, replaces the one in the state without recompiling.

        Weakly typed leaves (``jnp.array(3.0)``, a Python float) are made plain first: the step
        returns plain arrays, and a weak input would make the next call compile a second program.
        Those leaves are copied, so their old buffers are not the ones donated.
        """
        if learning_rate is not None:
            state = state._replace(learning_rate=_as_rate(learning_rate))
        if not self._types_settled:
            # Checked until a call brings no weak leaf: from then on the inputs are the step's
            # own outputs and gradients of them, and each leaf costs nothing more per call.
            (grads, state, params), had_weak = _without_weak_types((grads, state, params))
            self._types_settled = not had_weak
        try:
            return self._step(grads, state, params)
        except TypeError:
            check_array_leaves(grads, f"{self.name}.apply_gradients (grads)")
            check_array_leaves(params, f"{self.name}.apply_gradients (params)")
            raise
        except jax.errors.JaxRuntimeError as error:
            if self.donate and "donate" in str(error):
                raise ValueError(_shared_buffers_message(self.name, grads, state, params)) from error
            raise

    def __repr__(self) -> str:
        return f"{self.name}(learning_rate={self.learning_rate}, donate={self.donate})"


def sgd(learning_rate: Scalar, donate: bool = True) -> Optimizer:
    """Plain gradient descent: ``p <- p - lr * g``, one ``jax.tree.map`` over matching trees.

    >>> opt = sgd(0.5, donate=False)
    >>> opt.apply_gradients([jnp.array(2.0)], opt.init([jnp.array(1.0)]), [jnp.array(1.0)])[0]
    [Array(0., dtype=float32)]
    """

    def init(params: PyTree, rate: jax.Array) -> SGDState:
        return SGDState(rate)

    def step(grads: PyTree, state: SGDState, params: PyTree) -> tuple[PyTree, SGDState]:
        lr = state.learning_rate
        new = jax.tree.map(lambda p, g: p - (lr * g).astype(p.dtype), params, grads)
        return new, state

    return Optimizer("sgd", init, step, learning_rate, donate)


def momentum(learning_rate: Scalar, beta: float = 0.9, nesterov: bool = False, donate: bool = True) -> Optimizer:
    """Heavy-ball momentum: ``v <- beta * v + g``; ``p <- p - lr * v`` (Nesterov: ``g + beta * v``).

    Matches ``optax.sgd(lr, momentum=beta, nesterov=...)``.

    >>> opt = momentum(1.0, beta=0.5, donate=False)
    >>> params, state = opt.apply_gradients([jnp.ones(1)], opt.init([jnp.zeros(1)]), [jnp.zeros(1)])
    >>> params, state.velocity
    ([Array([-1.], dtype=float32)], [Array([1.], dtype=float32)])
    """

    def init(params: PyTree, rate: jax.Array) -> MomentumState:
        return MomentumState(rate, tree_zeros_like(params))

    def step(grads: PyTree, state: MomentumState, params: PyTree) -> tuple[PyTree, MomentumState]:
        velocity = jax.tree.map(lambda v, g: beta * v + g, state.velocity, grads)
        direction = jax.tree.map(lambda v, g: g + beta * v, velocity, grads) if nesterov else velocity
        lr = state.learning_rate
        new = jax.tree.map(lambda p, d: p - (lr * d).astype(p.dtype), params, direction)
        return new, MomentumState(lr, velocity)

    return Optimizer("momentum", init, step, learning_rate, donate)


def adam(
    learning_rate: Scalar, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8, donate: bool = True
) -> Optimizer:
    """Adam with bias correction, matching ``optax.adam``: a map over four trees at once.

    >>> opt = adam(0.1, donate=False)
    >>> params, state = opt.apply_gradients({"w": jnp.array(3.0)}, opt.init({"w": jnp.array(1.0)}), {"w": jnp.array(1.0)})
    >>> f"{float(params['w']):.4f}", int(state.count)
    ('0.9000', 1)
    """

    def init(params: PyTree, rate: jax.Array) -> AdamState:
        return AdamState(rate, jnp.zeros((), jnp.int32), tree_zeros_like(params), tree_zeros_like(params))

    def step(grads: PyTree, state: AdamState, params: PyTree) -> tuple[PyTree, AdamState]:
        count = state.count + 1
        mu = jax.tree.map(lambda m, g: b1 * m + (1 - b1) * g, state.mu, grads)
        nu = jax.tree.map(lambda v, g: b2 * v + (1 - b2) * jnp.square(g), state.nu, grads)
        c1 = 1 - b1 ** count.astype(jnp.float32)
        c2 = 1 - b2 ** count.astype(jnp.float32)
        lr = state.learning_rate

        def move(p: jax.Array, m: jax.Array, v: jax.Array) -> jax.Array:
            return p - (lr * (m / c1) / (jnp.sqrt(v / c2) + eps)).astype(p.dtype)

        return jax.tree.map(move, params, mu, nu), AdamState(lr, count, mu, nu)

    return Optimizer("adam", init, step, learning_rate, donate)
