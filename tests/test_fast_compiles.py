"""The test processes' fast XLA compiles (tests/fast_compiles.py, started by conftest.py): for
themselves alone, and only where JAX has no backend but the CPU."""

import os
from pathlib import Path

import pytest
from fast_compiles import FAST_COMPILE_FLAGS, only_the_cpu_backend


def test_what_the_tests_start_gets_xla_defaults() -> None:
    """The flags went to this process's backend, not into the environment that kernels, graders
    and notebook runs inherit."""
    assert FAST_COMPILE_FLAGS not in os.environ.get("XLA_FLAGS", "")


@pytest.mark.parametrize(
    ("platforms", "only_cpu"), [("cpu", True), ("tpu", False), ("cuda,cpu", False)]
)
def test_fast_compiles_only_where_jax_platforms_names_the_cpu_alone(
    monkeypatch: pytest.MonkeyPatch, platforms: str, only_cpu: bool
) -> None:
    monkeypatch.setenv("JAX_PLATFORMS", platforms)
    assert only_the_cpu_backend() is only_cpu


def test_an_installed_accelerator_plugin_keeps_xla_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    plugin = tmp_path / "jax_plugins" / "xla_made_up"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert not only_the_cpu_backend()
