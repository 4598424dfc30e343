"""Strict JAX for every test and doctest (rank promotion raises), and `jax`/`jnp` in every
doctest's namespace, as in the library's docstring examples; 8 CPU devices, as lesson 07 has."""

import jax
import jax.numpy as jnp
import pytest

jax.config.update("jax_numpy_rank_promotion", "raise")
# The same 8 simulated CPU devices as lesson 07 (set before anything starts a backend).
jax.config.update("jax_num_cpu_devices", 8)


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict) -> None:
    doctest_namespace["jax"] = jax
    doctest_namespace["jnp"] = jnp
