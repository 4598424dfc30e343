"""Optimizers whose state is a pytree: SGD, momentum (optionally Nesterov) and Adam.

Each optimizer is an :class:`Optimizer`: ``init(params)`` builds the state, a NamedTuple of trees
shaped like ``params`` plus the learning rate as an array leaf; ``apply_gradients(grads, state,
params)`` returns ``(new_params, new_state)`` from one jitted step that donates ``params`` and
``state``. It is not optax's ``update``, which returns *updates* to add with ``apply_updates``:
``apply_gradients`` does both and returns the new parameters themselves.

Because the learning rate is an array inside the state, changing it is new data, not a new
program: ``apply_gradients(..., learning_rate=0.05)`` never recompiles. Pass a
:class:`~course_lib.FlatTree` for ``params`` and ``grads`` and the whole step is one fused kernel,
however many leaves there are.
"""

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._errors import check_array_leaves, check_same_structure
from ._leaves import leaf_dtype
from ._paths import combine, labels_as_masks, partition
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
    count: jax.Array  # type: ignore[assignment]  # optax's name for the field; it hides tuple.count
    mu: PyTree
    nu: PyTree


class FrozenState(NamedTuple):
    """State of :func:`frozen`: nothing (a frozen leaf has no learning rate and no moments)."""


class MultiTransformState(NamedTuple):
    """State of :func:`multi_transform` and :func:`masked`: each group's optimizer state, by label.

    Each inner state is that optimizer's state for its own leaves only (``None`` elsewhere).
    """

    inner: dict[str, Any]


def _as_rate(learning_rate: Scalar) -> jax.Array:
    # Always a strongly typed float32 array: a Python float and a jnp.float32 would otherwise be
    # two different inputs to jit (weak types) and compile twice.
    # The rate is never donated (see Optimizer), so it may be the caller's own array.
    return jnp.asarray(learning_rate, dtype=jnp.float32)


def _swap_rate(state: Any, rate: Any) -> tuple[Any, Any]:
    """``state`` with ``rate`` as its learning rate, and the rate it had (a state of one rate)."""
    return state._replace(learning_rate=rate), state.learning_rate


def _is_weak(leaf: object) -> bool:
    if isinstance(leaf, (bool, np.generic)):  # np.float64 is a float, but not a weak one
        return False
    return isinstance(leaf, (int, float, complex)) or bool(getattr(leaf, "weak_type", False))


def _without_weak_types(tree: PyTree) -> tuple[PyTree, bool]:
    """``tree`` with weakly typed leaves made plain arrays of their dtype, and if it had any."""
    leaves, treedef = jax.tree.flatten(tree)
    weak = [_is_weak(leaf) for leaf in leaves]
    if not any(weak):
        return tree, False
    plain = [
        jnp.asarray(leaf, dtype=leaf_dtype(leaf)) if w else leaf
        for leaf, w in zip(leaves, weak, strict=True)
    ]
    return jax.tree.unflatten(treedef, plain), True


def _shared_buffers_message(name: str, grads: PyTree, state: Any, params: PyTree) -> str:
    """Which leaves are one array: for the error XLA raises when a donated buffer comes twice."""
    where: dict[int, list[str]] = {}
    for label, tree in (("params", params), ("state", state), ("grads", grads)):
        for path, leaf in jax.tree_util.tree_leaves_with_path(tree):
            where.setdefault(id(leaf), []).append(label + jax.tree_util.keystr(path))
    shared = "; ".join(" and ".join(paths) for paths in where.values() if len(paths) > 1)
    return (
        f"{name}.apply_gradients: params and state are donated (their buffers are reused for the "
        "results), "
        "so no array may appear twice among the inputs, and here some do: "
        f"{shared or 'see the XLA error above'}. "
        "Pass a copy (jnp.copy) where one array is used twice, or build the optimizer with "
        "donate=False."
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
        init: Callable[[PyTree, Any], Any],
        step: Callable[[PyTree, Any, PyTree], tuple[PyTree, Any]],
        learning_rate: Any,
        donate: bool = True,
        set_rate: Callable[[Any, Any], Any] | None = None,
        swap_rate: Callable[[Any, Any], tuple[Any, Any]] = _swap_rate,
    ):
        self.name = name
        self.learning_rate = learning_rate
        self.donate = donate
        self._init = init
        self._raw_step = step
        self._set_rate = set_rate or (lambda state, rate: swap_rate(state, _as_rate(rate))[0])
        self._swap_rate = swap_rate

        def checked_step(
            grads: PyTree, state: Any, rate: Any, params: PyTree
        ) -> tuple[PyTree, Any]:
            # Runs at trace time only: a clear message instead of a deep tree.map error.
            check_same_structure((params, grads), ("params", "grads"), f"{name}.apply_gradients")
            new_params, new_state = step(grads, swap_rate(state, rate)[0], params)
            return new_params, swap_rate(new_state, None)[0]

        # The learning rate goes in beside the state and never comes out: the step leaves it as
        # it is, and an output costs a buffer per call (0.17 ms on a TPU v5e, a third of an SGD
        # update of 2M floats), so apply_gradients puts the same array back in the new state.
        self._step = jax.jit(checked_step, donate_argnums=(1, 3) if donate else ())
        self._types_settled = False

    def init(self, params: PyTree) -> Any:
        """The initial state for ``params`` (every leaf must be an array)."""
        check_array_leaves(params, f"{self.name}.init")
        scalar = self.learning_rate is not None and not isinstance(self.learning_rate, dict)
        return self._init(params, _as_rate(self.learning_rate) if scalar else None)

    def apply_gradients(
        self, grads: PyTree, state: Any, params: PyTree, learning_rate: Any = None
    ) -> tuple[PyTree, Any]:
        """One step: the new parameters and the new state, ``(new_params, new_state)``.

        Where optax takes two calls, ``updates, state = tx.update(grads, state, params)`` and then
        ``params = optax.apply_updates(params, updates)``, this is one call that returns the
        parameters themselves, never the updates.

        ``grads`` must have exactly the structure of ``params`` (as ``jax.grad`` returns it).
        ``params`` and ``state`` are donated when the optimizer was built with ``donate=True``:
        their buffers are reused for the results, so do not read the old ones afterwards (the
        learning rate alone is not donated: the new state holds the same array).
        ``learning_rate``, when given, replaces the one in the state without recompiling (for
        :func:`multi_transform`, a dict ``{label: rate}`` of the groups to change).

        Weakly typed leaves (``jnp.array(3.0)``, a Python float) are made plain first: the step
        returns plain arrays, and a weak input would make the next call compile a second program.
        Those leaves are copied, so their old buffers are not the ones donated.
        """
        if learning_rate is not None:
            state = self._set_rate(state, learning_rate)
        if not self._types_settled:
            # Checked until a call brings no weak leaf: from then on the inputs are the step's
            # own outputs and gradients of them, and each leaf costs nothing more per call.
            (grads, state, params), had_weak = _without_weak_types((grads, state, params))
            self._types_settled = not had_weak
        state, rate = self._swap_rate(state, None)
        try:
            new_params, new_state = self._step(grads, state, rate, params)
        except TypeError:
            check_array_leaves(grads, f"{self.name}.apply_gradients (grads)")
            check_array_leaves(params, f"{self.name}.apply_gradients (params)")
            raise
        except jax.errors.JaxRuntimeError as error:
            if self.donate and "donate" in str(error):
                raise ValueError(
                    _shared_buffers_message(self.name, grads, state, params)
                ) from error
            raise
        return new_params, self._swap_rate(new_state, rate)[0]

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


def momentum(
    learning_rate: Scalar, beta: float = 0.9, nesterov: bool = False, donate: bool = True
) -> Optimizer:
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
        direction = (
            jax.tree.map(lambda v, g: g + beta * v, velocity, grads) if nesterov else velocity
        )
        lr = state.learning_rate
        new = jax.tree.map(lambda p, d: p - (lr * d).astype(p.dtype), params, direction)
        return new, MomentumState(lr, velocity)

    return Optimizer("momentum", init, step, learning_rate, donate)


def adam(
    learning_rate: Scalar,
    b1: float = 0.9,
    b2: float = 0.999,
    eps: float = 1e-8,
    donate: bool = True,
) -> Optimizer:
    """Adam with bias correction, matching ``optax.adam``: a map over four trees at once.

    >>> opt = adam(0.1, donate=False)
    >>> params = {"w": jnp.array(1.0)}
    >>> params, state = opt.apply_gradients({"w": jnp.array(3.0)}, opt.init(params), params)
    >>> f"{float(params['w']):.4f}", int(state.count)
    ('0.9000', 1)
    """

    def init(params: PyTree, rate: jax.Array) -> AdamState:
        return AdamState(
            rate, jnp.zeros((), jnp.int32), tree_zeros_like(params), tree_zeros_like(params)
        )

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


def frozen() -> Optimizer:
    """Leaves that do not move: the parameters come back as they are, with no state.

    The meaning of ``optax.set_to_zero()`` for the parameters it is given.

    For a group of :func:`multi_transform`; :func:`masked` uses it for the leaves outside the mask.

    >>> opt = frozen()
    >>> opt.apply_gradients([jnp.ones(1)], opt.init([jnp.zeros(1)]), [jnp.zeros(1)])
    ([Array([0.], dtype=float32)], FrozenState())
    """

    def init(params: PyTree, rate: jax.Array | None) -> FrozenState:
        return FrozenState()

    def step(grads: PyTree, state: FrozenState, params: PyTree) -> tuple[PyTree, FrozenState]:
        return params, state

    def set_rate(state: FrozenState, rate: Any) -> FrozenState:
        raise ValueError("frozen: a frozen group has no learning rate to set.")

    def swap_rate(state: FrozenState, rate: Any) -> tuple[FrozenState, None]:
        return state, None

    return Optimizer("frozen", init, step, None, False, set_rate, swap_rate)


def multi_transform(
    optimizers: dict[str, Optimizer], labels: PyTree, donate: bool = True
) -> Optimizer:
    """One optimizer per group of leaves: ``labels``, strings shaped like the params, say whose.

    The meaning of ``optax.partition(transforms, labels)`` (optax's ``multi_transform`` before
    0.2.5, whose name this keeps): each optimizer sees only its
    group's leaves and keeps state for those only; build ``labels`` with
    :func:`~course_lib.tree_labels`. The whole step is one compiled program, and ``labels`` is
    fixed when the optimizer is built, so it never recompiles. ``apply_gradients(...,
    learning_rate={"head": 0.1})`` changes one group's rate (as data, no recompilation).

    >>> params = {"body": jnp.ones(2), "head": jnp.ones(2)}
    >>> labels = {"body": "slow", "head": "fast"}
    >>> opt = multi_transform({"slow": sgd(0.01), "fast": sgd(1.0)}, labels, donate=False)
    >>> grads = {"body": jnp.ones(2), "head": jnp.ones(2)}
    >>> new, state = opt.apply_gradients(grads, opt.init(params), params)
    >>> new
    {'body': Array([0.99, 0.99], dtype=float32), 'head': Array([0., 0.], dtype=float32)}
    """
    if not optimizers or not all(isinstance(o, Optimizer) for o in optimizers.values()):
        raise TypeError(
            "multi_transform: optimizers must be a non-empty dict {label: course_lib Optimizer}."
        )
    masks = labels_as_masks(labels, optimizers, "multi_transform")

    def init(params: PyTree, rate: jax.Array | None) -> MultiTransformState:
        return MultiTransformState(
            {name: opt.init(partition(params, masks[name])[0]) for name, opt in optimizers.items()}
        )

    def step(
        grads: PyTree, state: MultiTransformState, params: PyTree
    ) -> tuple[PyTree, MultiTransformState]:
        moved, inner = [], {}
        for name, opt in optimizers.items():
            mine = partition(params, masks[name])[0]
            theirs = partition(grads, masks[name])[0]
            new, inner[name] = opt._raw_step(theirs, state.inner[name], mine)
            moved.append(new)
        return combine(*moved), MultiTransformState(inner)

    def set_rate(state: MultiTransformState, rates: Any) -> MultiTransformState:
        if not isinstance(rates, dict) or not set(rates) <= set(optimizers):
            raise ValueError(
                "multi_transform: each group has its own learning rate; pass "
                f"learning_rate={{label: rate}} with labels among {sorted(optimizers)}, "
                f"got {rates!r:.60}."
            )
        inner = dict(state.inner)
        for name, rate in rates.items():
            inner[name] = optimizers[name]._set_rate(inner[name], rate)
        return MultiTransformState(inner)

    def swap_rate(state: MultiTransformState, rates: Any) -> tuple[MultiTransformState, Any]:
        inner, old = {}, {}
        for name, opt in optimizers.items():
            rate = None if rates is None else rates[name]
            inner[name], old[name] = opt._swap_rate(state.inner[name], rate)
        return MultiTransformState(inner), old

    rates = {name: opt.learning_rate for name, opt in optimizers.items()}
    return Optimizer("multi_transform", init, step, rates, donate, set_rate, swap_rate)


def masked(optimizer: Optimizer, mask: PyTree, donate: bool = True) -> Optimizer:
    """``optimizer`` on the leaves where ``mask`` is True; the others do not move and have no state.

    ``mask`` is a tree of bools shaped like the params (:func:`~course_lib.tree_mask`). It is
    ``multi_transform({"trained": optimizer, "frozen": frozen()}, labels)``. Note the one
    difference from ``optax.masked(inner, mask)``: optax passes the masked-out *updates* through
    unchanged (``apply_updates`` then adds the raw gradient, which is right inside an
    ``optax.chain``, as for weight decay); an Optimizer returns parameters, and a masked-out
    parameter keeps its value.

    >>> opt = masked(sgd(0.5), {"w": True, "b": False}, donate=False)
    >>> params = {"w": jnp.ones(2), "b": jnp.ones(2)}
    >>> opt.apply_gradients({"w": jnp.ones(2), "b": jnp.ones(2)}, opt.init(params), params)[0]
    {'b': Array([1., 1.], dtype=float32), 'w': Array([0.5, 0.5], dtype=float32)}
    """
    if callable(mask) and not isinstance(mask, (bool, np.bool_)):
        raise TypeError(
            "masked: pass a mask, a tree of bools; build it from a rule with "
            "cl.tree_mask(params, rule)."
        )
    labels = jax.tree.map(lambda keep: "trained" if keep else "frozen", mask)
    multi = multi_transform({"trained": optimizer, "frozen": frozen()}, labels, donate)
    multi.name = f"masked({optimizer.name})"
    return multi
