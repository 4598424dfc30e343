"""The lesson modules' shelf of helpers (``course_lib.checks._kit``): random trees, compile counts.

These tests are about that module, so they import it.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course_lib.checks import Case, Exercise, evaluate
from course_lib.checks._kit import attempt, compile_report, judge_compiles, random_tree

pytestmark = pytest.mark.usefixtures("fresh_checks")


class _Held:
    """Something a learner's function holds while it fails, as an open file."""


def test_attempt_lets_the_failed_calls_frames_go() -> None:
    held: list[weakref.ref[_Held]] = []

    def learner() -> None:
        resource, entries = _Held(), {"present": 1}
        held.append(weakref.ref(resource))
        try:
            entries["missing"]
        except KeyError:
            raise ValueError("no entry") from None

    result, error = attempt(learner)
    assert result is None and isinstance(error, ValueError) and str(error) == "no entry"
    assert held[0]() is None  # gone while the exception is still at hand


def test_attempt_lets_a_stub_through() -> None:
    def stub() -> None:
        raise NotImplementedError

    with pytest.raises(NotImplementedError):
        attempt(stub)


def test_random_tree_is_deterministic() -> None:
    one = random_tree(np.random.default_rng(3), depth=4)
    two = random_tree(np.random.default_rng(3), depth=4)
    assert repr(one) == repr(two)
    assert repr(one) != repr(random_tree(np.random.default_rng(4), depth=4))


# --- compile counts -------------------------------------------------------------------------------


def _compile_probe(
    fn: Callable[[], Callable[[jax.Array], jax.Array]], case: Case
) -> dict[str, Any]:
    step = fn()
    inputs = [jnp.ones(n) for n in case.args[0]]
    return compile_report(lambda: [step(x) for x in inputs])


def _jit_once() -> Callable[[jax.Array], jax.Array]:
    return jax.jit(lambda x: 2 * x)


COMPILES = Exercise(
    id="05.toy_compiles",
    name="make_step",
    title="a toy compile-count exercise",
    points=1,
    cases=lambda rng: [
        Case(((4, 4, 4),), label="three calls with the same shape"),
        Case(((2, 3, 5),), label="three shapes"),
    ],
    reference=_jit_once,
    probe=_compile_probe,
    judge=judge_compiles,
    hints=("One program serves every call.", "Compile once."),
    reread="05 The cache key",
)


def test_compile_count_hint_quotes_the_cache_miss_explanation() -> None:
    def make_step() -> Callable[[jax.Array], jax.Array]:
        return jax.jit(lambda x, pad=(): 2 * x)

    assert evaluate(COMPILES, make_step).status == "passed"

    def recompiles_every_call() -> Callable[[jax.Array], jax.Array]:
        return lambda x: jax.jit(lambda y: 2 * y)(x)

    verdict = evaluate(COMPILES, recompiles_every_call)
    assert verdict.status == "failed"
    assert "compiled 3 times, expected 1: see the cache-miss explanation below." in verdict.message
    assert "CACHE MISS" in verdict.message or "cache miss" in verdict.message.lower()
