"""Fast XLA compiles for the test processes themselves (conftest.py starts their backend so).

The test processes' programs are compiled once and run on a few small arrays: on a machine whose
JAX has only its CPU backend, XLA compiles them without LLVM's optimisation and its costly passes
(about a fifth less processor time for tests/checks and tests/core). Values may differ in their
last bits from XLA's defaults, which the one float tolerance covers, as it covers a GPU's or a
TPU's. An accelerator's tests (bench/device_check.sh) keep XLA's defaults. XLA reads the flags when
the backend starts; they are then taken out of the environment again, so that the kernels, graders
and notebook runs the tests start compile with XLA's defaults, as a learner's do.
"""

import importlib.metadata
import importlib.util
import os

import jax

FAST_COMPILE_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def only_the_cpu_backend() -> bool:
    """Whether JAX can start no backend but the CPU's: ``JAX_PLATFORMS`` says ``cpu``, or, unset,
    no accelerator plugin is installed (JAX finds them as ``jax_plugins`` packages or entry points,
    and libtpu)."""
    platforms = os.environ.get("JAX_PLATFORMS", "")
    if platforms:
        return platforms == "cpu"
    plugins = importlib.metadata.entry_points(group="jax_plugins")
    return not plugins and not any(map(importlib.util.find_spec, ("jax_plugins", "libtpu")))


def start_the_backend_with_fast_compiles() -> None:
    """Start JAX's backend with :data:`FAST_COMPILE_FLAGS` added to ``XLA_FLAGS``, then put
    ``XLA_FLAGS`` back as it was."""
    before = os.environ.get("XLA_FLAGS")
    os.environ["XLA_FLAGS"] = f"{before or ''} {FAST_COMPILE_FLAGS}".strip()
    try:
        jax.devices()
    finally:
        if before is None:
            del os.environ["XLA_FLAGS"]
        else:
            os.environ["XLA_FLAGS"] = before
