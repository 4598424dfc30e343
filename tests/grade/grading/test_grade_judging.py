"""Fair judging through the grader: real kernels, notebooks built from solutions/ as students change
them.

One class of lesson 02 and 06 notebooks is graded twice, as it is and with ``--forbid optax``.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import nbformat
import pytest
from test_grade import grade as grade_class
from test_judging import CARRY_NAMED_MOMENTUM

ROOT = Path(__file__).resolve().parents[3]
L02 = ROOT / "solutions" / "02_mapping_and_sgd.ipynb"
L06 = ROOT / "solutions" / "06_optimizer_state.ipynb"


def load(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def index_of(nb: nbformat.NotebookNode, exercise_id: str) -> int:
    return next(
        i
        for i, c in enumerate(nb.cells)
        if c.metadata.get("course", {}).get("exercise") == exercise_id
    )


def replace_body(nb: nbformat.NotebookNode, exercise_id: str, body: str) -> nbformat.NotebookNode:
    cell = nb.cells[index_of(nb, exercise_id)]
    head, _, _ = cell.source.partition("### BEGIN SOLUTION")
    cell.source = head + "### BEGIN SOLUTION\n" + body.rstrip("\n") + "\n    ### END SOLUTION\n"
    return nb


def add_before(nb: nbformat.NotebookNode, exercise_id: str, code: str) -> nbformat.NotebookNode:
    nb.cells.insert(index_of(nb, exercise_id), nbformat.v4.new_code_cell(code))
    return nb


def code_cell_number(nb: nbformat.NotebookNode, index: int) -> int:
    """The number a student counts for the cell at ``index``: code cells only, from 1."""
    return sum(c.cell_type == "code" for c in nb.cells[: index + 1])


OPTAX_STEP = """    @jax.jit
    def step(params, batch, lr):
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        opt = optax.sgd(lr)
        updates, _ = opt.update(grads, opt.init(params), params)
        return optax.apply_updates(params, updates), loss

    return step"""
OPTAX_AVERAGE = """    total = functools.reduce(optax.tree_utils.tree_add, trees)
    return optax.tree_utils.tree_scale(1 / len(trees), total)"""


def optax_inline() -> nbformat.NotebookNode:
    nb = add_before(load(L02), "02.sgd_step", "import functools\nimport optax")
    replace_body(nb, "02.make_sgd_step", OPTAX_STEP)
    return replace_body(nb, "02.average_trees", OPTAX_AVERAGE)


def optax_bound() -> nbformat.NotebookNode:
    nb = add_before(load(L02), "02.make_sgd_step", "import optax\n_sgd = optax.sgd")
    return replace_body(nb, "02.make_sgd_step", OPTAX_STEP.replace("optax.sgd(lr)", "_sgd(lr)"))


def cascade() -> nbformat.NotebookNode:
    nb = replace_body(
        load(L02), "02.sgd_step", "    return jax.tree.map(lambda p, g: p + lr * g, params, grads)"
    )
    return replace_body(
        nb,
        "02.global_norm",
        "    return float(jnp.sqrt(sum(jnp.sum(jnp.square(leaf)) for leaf in "
        "jax.tree.leaves(tree))))",
    )


def course_alias() -> nbformat.NotebookNode:
    nb = add_before(load(L02), "02.sgd_step", "import functools\ncourse_sgd = cl.sgd")
    course_step = OPTAX_STEP.replace("optax.sgd(lr)", "course_sgd(lr, donate=False)")
    # The course's update returns the new params themselves, not updates to apply.
    replace_body(
        nb,
        "02.make_sgd_step",
        course_step.replace(
            "return optax.apply_updates(params, updates), loss", "return updates, loss"
        ),
    )
    replace_body(
        nb,
        "02.average_trees",
        "    add = getattr(cl, 'tree_' + 'add')\n    return jax.tree.map(lambda x: x / "
        "len(trees), functools.reduce(add, trees))",
    )
    cell = nb.cells[index_of(nb, "02.global_norm")]
    cell.source = (
        "from course_lib.checks import _lesson02\n"
        "global_norm = getattr(_lesson02, '_global' + '_norm')"
    )
    return nb


HALF_RIGHT_SGD = """    if params is None:
        return None
    if isinstance(params, dict):
        return {key: sgd_step(params[key], grads[key], lr) for key in params}
    if isinstance(params, (list, tuple)):
        return [sgd_step(p, g, lr) for p, g in zip(params, grads)]
    return params - lr * grads"""


def half_right() -> nbformat.NotebookNode:
    nb = replace_body(load(L02), "02.sgd_step", HALF_RIGHT_SGD)
    return add_before(nb, "02.average_trees", "x = 1 / 0  # a typo")


def optax06() -> nbformat.NotebookNode:
    nb = add_before(load(L06), "06.adam_init", "import optax")
    zeros = "optax.tree_utils.tree_zeros_like(params)"
    replace_body(
        nb,
        "06.adam_init",
        f"    return AdamState(count=jnp.zeros((), jnp.int32), mu={zeros}, nu={zeros})",
    )
    nb.cells[index_of(nb, "06.train_loop")].source = CARRY_NAMED_MOMENTUM
    return nb


STUDENTS = {
    "optax_inline": optax_inline,
    "optax_bound": optax_bound,
    "cascade": cascade,
    "course_alias": course_alias,
    "half_right": half_right,
    "optax06": optax06,
}


def grade(folder: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Without the canary, which judges nothing here (test_canary.py tests it)."""
    return grade_class([folder], out, "--jobs", "2", "--quiet", "--no-canary", *extra, timeout=900)


USING_OPTAX = ("optax_inline", "optax_bound", "optax06")


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, dict]]:
    """The class graded as it is, and its students who use optax graded with ``--forbid optax``."""
    base = tmp_path_factory.mktemp("judging")
    for student, build in STUDENTS.items():
        name = L06.name if student == "optax06" else L02.name
        for folder in ("allowed", "forbidden") if student in USING_OPTAX else ("allowed",):
            (base / folder / student).mkdir(parents=True)
            nbformat.write(build(), base / folder / student / name)
    books = {}
    for run, extra in (("allowed", ()), ("forbidden", ("--forbid", "optax"))):
        result = grade(base / run, base / f"{run}-out", *extra)
        assert result.returncode == 0, result.stderr[-3000:]
        book = json.loads((base / f"{run}-out" / "gradebook.json").read_text())
        books[run] = {s["student"]: s for s in book["submissions"]}
        books[run]["_csv"] = list(
            csv.DictReader((base / f"{run}-out" / "gradebook.csv").read_text().splitlines())
        )
        books[run]["_grader"] = book["grader"]
    return books


def exercise(entry: dict, exercise_id: str) -> dict:
    return next(e for e in entry["exercises"] if e["id"] == exercise_id)


def test_optax_answers_pass_inline_or_bound_outside(graded: dict[str, dict[str, dict]]) -> None:
    for student in ("optax_inline", "optax_bound"):
        entry = graded["allowed"][student]
        assert {e["status"] for e in entry["exercises"]} == {"passed"}, json.dumps(entry, indent=1)
        assert entry["points"] == 12
    optax = graded["allowed"]["optax06"]
    assert exercise(optax, "06.adam_init")["status"] == "passed"
    assert (
        exercise(optax, "06.train_loop")["status"] == "passed"
    )  # a carry field named momentum costs nothing
    assert optax["points"] == 14


def test_forbid_optax_flags_the_line_and_the_function_reached(
    graded: dict[str, dict[str, dict]],
) -> None:
    assert graded["forbidden"]["_grader"]["forbidden_packages"] == ["optax"]
    inline = graded["forbidden"]["optax_inline"]
    step = exercise(inline, "02.make_sgd_step")
    notebook = optax_inline()
    index = index_of(notebook, "02.make_sgd_step")
    number = code_cell_number(notebook, index)
    # the line a student's editor shows, counted in the submitted cell, not copied from the message
    line = notebook.cells[index].source.splitlines().index("        opt = optax.sgd(lr)") + 1
    assert step["status"] == "flagged" and step["points"] == 0 and step["points_if_allowed"] == 3
    assert step["message"].startswith("`make_sgd_step` calls `optax._src.alias.sgd` (")
    # counted from 1 over code cells, its first line cut
    label = f"code cell {number} (`def make_sgd_step(loss_f…`)"
    assert (
        f"({label}, line {line}: `opt = optax.sgd(lr)`): `optax` may not be used" in step["message"]
    )
    assert (
        step["flags"][0]["cell"] == label and step["flags"][0]["reached"] == "optax._src.alias.sgd"
    )
    average = exercise(inline, "02.average_trees")
    assert (
        average["status"] == "flagged"
        and "`total = functools.reduce(optax.tree_utils.tree_add, trees)`" in average["message"]
    )
    assert exercise(inline, "02.sgd_step")["status"] == "passed"  # only what calls optax is flagged
    bound = exercise(graded["forbidden"]["optax_bound"], "02.make_sgd_step")
    assert bound["status"] == "flagged" and "`opt = _sgd(lr)`" in bound["message"]
    optax = graded["forbidden"]["optax06"]
    assert exercise(optax, "06.adam_init")["status"] == "flagged"
    assert exercise(optax, "06.train_loop")["status"] == "passed"


def test_the_course_functions_and_the_reference_are_flagged_however_reached(
    graded: dict[str, dict[str, dict]],
) -> None:
    entry = graded["allowed"]["course_alias"]
    step = exercise(entry, "02.make_sgd_step")
    assert (
        step["status"] == "flagged"
        and "`make_sgd_step` calls `cl.sgd` (code cell " in step["message"]
    )
    assert "`opt = course_sgd(lr, donate=False)`" in step["message"]
    average = exercise(entry, "02.average_trees")
    assert (
        average["status"] == "flagged"
        and "`average_trees` calls `cl.tree_add` (code cell " in average["message"]
    )
    norm = exercise(entry, "02.global_norm")
    assert (
        norm["status"] == "flagged"
        and "is the course's reference answer, `course_lib.checks._lesson02._global_norm` itself"
        in norm["message"]
    )
    assert exercise(entry, "02.sgd_step")["status"] == "passed"


def test_a_wrong_helper_does_not_zero_the_exercise_that_calls_it(
    graded: dict[str, dict[str, dict]],
) -> None:
    entry = graded["allowed"]["cascade"]
    sgd = exercise(entry, "02.sgd_step")
    assert (
        sgd["status"] == "failed" and sgd["points"] == 0 and "you added the step" in sgd["message"]
    )
    assert exercise(entry, "02.make_sgd_step")["status"] == "passed"
    norm = exercise(entry, "02.global_norm")
    assert (
        norm["status"] == "failed"
        and norm["points"] == 0.75
        and "under `jax.jit` it raised" in norm["message"]
    )
    assert [p["passed"] for p in norm["parts"]] == [True, True, True, False]
    assert exercise(entry, "02.clip_by_global_norm")["status"] == "passed"
    assert entry["points"] == 12 - 2 - 1 + 0.75


def test_partial_credit_and_cell_numbers_in_the_gradebook(
    graded: dict[str, dict[str, dict]],
) -> None:
    entry = graded["allowed"]["half_right"]
    sgd = exercise(entry, "02.sgd_step")
    assert (sgd["status"], sgd["points"], sgd["max_points"]) == ("failed", 0.67, 2)
    assert [p["passed"] for p in sgd["parts"]] == [True, False, False] and sgd["cases"][:2] == [
        True,
        True,
    ]
    assert "Right: dicts and lists with None (0.67/2 points)" in sgd["message"]
    assert entry["points"] == 10.67
    row = next(r for r in graded["allowed"]["_csv"] if r["student"] == "half_right")
    assert (
        row["02.sgd_step"] == "0.67" and row["points"] == "10.67" and row["02.stack_trees"] == "2"
    )
    typo = half_right()
    number = code_cell_number(typo, index_of(typo, "02.average_trees") - 1)
    assert (
        f"code cell {number} (`x = 1 / 0  # a typo`) raised ZeroDivisionError: division by zero"
        in entry["notes"]
    )
