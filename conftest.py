"""Strict JAX for every test and doctest (rank promotion raises), and `jax`/`jnp` in every
doctest's namespace, as in the library's docstring examples."""

import jax
import jax.numpy as jnp
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    doctest_namespace["jax"] = jax
    doctest_namespace["jnp"] = jnp
