"""Strict JAX for every test and doctest (rank promotion raises), and `jax`/`jnp` in every
doctest's namespace, as in the library's docstring examples; 8 CPU devices, as lesson 07 has."""

from collections.abc import Iterator

import jax
import jax.numpy as jnp
import pytest

from course_lib import checks

jax.config.update("jax_numpy_rank_promotion", "raise")
# The same 8 simulated CPU devices as lesson 07 (set before anything starts a backend).
jax.config.update("jax_num_cpu_devices", 8)


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    doctest_namespace["jax"] = jax
    doctest_namespace["jnp"] = jnp


@pytest.fixture
def fresh_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Checks print rather than raise (``CI`` and ``COURSE_STRICT_CHECKS`` unset), and no hint
    was shown yet. A module of self-check tests asks for it in every test with
    ``pytestmark = pytest.mark.usefixtures("fresh_checks")``."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("COURSE_STRICT_CHECKS", raising=False)
    checks.set_strict(None)
    checks.reset_hints()
    yield
    checks.set_strict(None)
    checks.reset_hints()
