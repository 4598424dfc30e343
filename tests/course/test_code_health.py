"""`make test` starts with ruff (lint and format) and mypy, and each of them fails on a planted
violation under the project's own configuration (pyproject.toml).

The planted files live in a temporary folder, never in the checkout: the tools are pointed at the
repository's pyproject.toml explicitly, which is what `make lint` reads from the repository root.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
CONFIG = ROOT / "pyproject.toml"


def run(*command: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a command and keep what it printed, whatever its exit status."""
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=300
    )


def make_dry_run(target: str) -> list[str]:
    """The commands `make -n TARGET` would run, one per line, without the echo lines."""
    result = run("make", "-n", "--no-print-directory", target)
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if line and not line.startswith("echo")]


def test_make_test_lints_formats_and_type_checks_before_any_test_runs() -> None:
    commands = make_dry_run("test")
    first_pytest = next(i for i, line in enumerate(commands) if "-m pytest" in line)
    lint = [line for line in commands[:first_pytest] if "ruff check ." in line]
    assert len(lint) == 1, commands[:first_pytest]
    assert "ruff format --check ." in lint[0] and "/mypy" in lint[0], lint


def test_ruff_check_fails_on_an_unused_import(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('import os\n\nprint("hello")\n')
    result = run(BIN / "ruff", "check", "--config", CONFIG, "--no-cache", planted)
    assert result.returncode == 1
    assert "F401" in result.stdout and "`os` imported but unused" in result.stdout


def test_ruff_check_reads_notebook_cells(tmp_path: Path) -> None:
    planted = tmp_path / "planted.ipynb"
    cell: dict[str, object] = {
        "cell_type": "code",
        "metadata": {},
        "outputs": [],
        "execution_count": None,
    }
    notebook = {
        "cells": [{**cell, "source": "total = 1 + undefined_name\n"}],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    planted.write_text(json.dumps(notebook))
    result = run(BIN / "ruff", "check", "--config", CONFIG, "--no-cache", planted)
    assert result.returncode == 1
    assert "F821" in result.stdout and "undefined_name" in result.stdout


def test_ruff_format_check_fails_on_a_misformatted_line(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("values = [1,2 ,3]\n")
    result = run(BIN / "ruff", "format", "--check", "--config", CONFIG, "--no-cache", planted)
    assert result.returncode == 1
    assert "1 file would be reformatted" in result.stdout


def test_ruff_format_leaves_a_formatted_file_alone(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("values = [1, 2, 3]\n")
    result = run(BIN / "ruff", "format", "--check", "--config", CONFIG, "--no-cache", planted)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ('count: int = "three"\n', "[assignment]"),
        # check_untyped_defs: the body of a function without annotations is checked too.
        ("def untyped():\n    return 1 + 'one'\n", "[operator]"),
    ],
    ids=["annotated assignment", "inside an unannotated function"],
)
def test_mypy_fails_on_a_type_error(tmp_path: Path, source: str, code: str) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(source)
    result = run(
        BIN / "mypy",
        "--config-file",
        CONFIG,
        "--cache-dir",
        tmp_path / "mypy-cache",
        planted,
    )
    assert result.returncode == 1, result.stdout
    assert code in result.stdout
