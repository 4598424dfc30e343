"""bench/bench_lessons.py's in-process timing: a notebook in a process of its own, timed as a fresh
kernel runs it, with JAX imported by the notebook and each compile counted in its cell."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from course_tools._notebook_files import notebook_text

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_lessons.py"


def _notebook(path: Path) -> Path:
    cells = [
        new_code_cell(
            'import sys\nprint("jax" in sys.modules)',
            outputs=[new_output("stream", name="stdout", text="False\n")],
        ),
        new_code_cell("import jax\nimport jax.numpy as jnp"),
        new_code_cell(
            "jax.jit(lambda x: x + 1)(jnp.float32(1.0)).item()",
            outputs=[new_output("execute_result", data={"text/plain": "2.0"}, execution_count=3)],
        ),
    ]
    path.write_text(notebook_text(new_notebook(cells=cells)), encoding="utf-8")
    return path


def test_the_child_times_the_notebook_as_a_fresh_kernel_runs_it(tmp_path: Path) -> None:
    notebook = _notebook(tmp_path / "probe.ipynb")
    argv = [sys.executable, str(BENCH), "--child", str(notebook), "--compiles", "1"]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120)
    said = json.loads(done.stdout.splitlines()[-1])
    assert "error" not in said, said
    # The first cell saw no JAX, as its committed output says: nothing differs from it.
    assert said["differing"] == []
    assert [index for index, _ in said["per_cell"]] == [0, 1, 2]
    # The jitted lambda's compile is counted in the cell that called it.
    assert any(cell == 2 and "<lambda>" in name for cell, name, _ in said["compiles"]), said


def test_a_process_that_has_jax_already_is_refused(tmp_path: Path) -> None:
    import jax  # noqa: F401 (this process has JAX, as a kernel that imported it would)

    spec = importlib.util.spec_from_file_location("bench_lessons", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    with pytest.raises(RuntimeError, match="JAX was imported before the notebook"):
        bench.run_here(_notebook(tmp_path / "probe.ipynb"), compiles=False)
