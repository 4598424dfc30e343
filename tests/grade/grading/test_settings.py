"""The run's settings: frozen values, probed once, that a Dask worker receives whole."""

import dataclasses
import pickle
import subprocess
from pathlib import Path

import pytest

from course_tools.grade.grading import Context, RunOptions, Settings
from course_tools.grade.sandbox import SandboxLevel

LANDLOCK = SandboxLevel(
    (("sandbox", "landlock"), ("abi", 6), ("processes", "subreaper"), ("process_limit", "watchdog"))
)


def test_settings_cannot_change_once_made() -> None:
    settings = Settings(sandbox=LANDLOCK, seed=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.seed = 2  # type: ignore[misc]  # the point: frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunOptions().jobs = 4  # type: ignore[misc]  # the point: frozen


def test_reading_settings_starts_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a subprocess was started")

    monkeypatch.setattr(subprocess, "run", refuse)
    monkeypatch.setattr(subprocess, "Popen", refuse)
    settings = Settings(sandbox=LANDLOCK, seed=3, forbid=("optax",))
    context = Context(settings, RunOptions(warm_kernels=False), tmp_path)
    assert settings.recorded()["sandbox"] == dict(LANDLOCK.items)
    assert settings.recorded()["forbidden_packages"] == ["optax"]
    assert context.confinement is not None and context.confinement.landlock
    assert context.compilation_cache.enabled


def test_settings_travel_to_a_worker_unchanged() -> None:
    settings = Settings(sandbox=LANDLOCK, seed=7, memory_mb=1024)
    assert pickle.loads(pickle.dumps(settings)) == settings


def test_a_level_without_the_launcher_confines_nothing() -> None:
    level = SandboxLevel((("sandbox", "none"), ("reason", "not sandboxed: Linux only")))
    assert level.confinement() is None and level.enabled and level.reason.startswith("not")
