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


def test_against_cpu_times_each_lesson_again_on_the_cpu_and_gives_the_ratio(
    tmp_path: Path,
) -> None:
    lessons = tmp_path / "notebooks"
    lessons.mkdir()
    lesson = _notebook(lessons / "01_probe.ipynb")
    solution = _notebook(tmp_path / "01_probe.ipynb")  # not a lesson: no CPU run, no ratio
    argv = [sys.executable, str(BENCH), "--in-process", "--against-cpu", str(lesson), str(solution)]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=240)
    rows = {line.split(" | ")[0]: line.split(" | ") for line in done.stdout.splitlines()}
    header = rows["| notebook"]
    assert header[3:5] == ["CPU cells (s)", "ratio"] and header[-1] == "<= 1.3x CPU |"
    cells, _, cpu_cells, ratio = rows[f"| {lesson}"][1:5]
    # The ratio of the unrounded seconds, within what rounding to 0.1 s leaves of them.
    low = (float(cells) - 0.05) / (float(cpu_cells) + 0.05)
    high = (float(cells) + 0.05) / max(float(cpu_cells) - 0.05, 1e-9)
    assert ratio.endswith("x") and low <= float(ratio[:-1]) <= high
    solution_row = rows[f"| {solution}"]
    assert solution_row[3:5] == ["-", "-"] and solution_row[-1] == "- |"
    assert "of 1 lessons against the CPU, over 1.3x" in done.stdout
