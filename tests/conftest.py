"""Strict JAX for every test, and `jnp`/`jax` in every doctest's namespace."""

import jax
import jax.numpy as jnp
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    doctest_namespace["jax"] = jax
    doctest_namespace["jnp"] = jnp
