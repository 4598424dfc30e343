"""The autograder: full marks for the solution, zero for the exercise version, and every hostile
submission graded with a clear status while the batch completes."""

from __future__ import annotations

import copy
import csv
import difflib
import hashlib
import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from course_lib.checks import all_exercises
from course_tools._notebook_files import NotebookError, read_notebook
from course_tools.authoring.exercises import make_exercise
from course_tools.grade.intake import detect_lesson, plan_cells, without_checks

ROOT = Path(__file__).resolve().parents[2]
COURSE_GRADE = [sys.executable, "-m", "course_tools.grade"]  # the command, run from the checkout
SOLUTION = ROOT / "solutions" / "01_what_is_a_pytree.ipynb"
NAME = SOLUTION.name
IDS = ["01.count_params", "01.leaf_paths", "01.is_node", "01.replace_leaves", "01.same_structure"]
# A wrong body for 01.leaf_paths: the paths as keystr strings instead of key-path tuples.
WRONG_LEAF_PATHS = (
    "    return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(tree)]"
)
# Short limits keep the hostile batch quick; the solution needs well under a second per cell.
FAST = ["--timeout", "4", "--notebook-timeout", "90", "--memory-mb", "700"]
# The tests whose subject is not the canary grade without it: it grades each lesson's solution
# first, one more notebook per lesson and run. test_canary.py tests it; the Canvas class run
# (test_grade_class.py) and the cluster tests run it as an instructor does.
NO_CANARY = "--no-canary"


def solution() -> nbformat.NotebookNode:
    return nbformat.read(SOLUTION, as_version=4)


def exercise_version() -> nbformat.NotebookNode:
    return make_exercise(solution(), f"solutions/{NAME}")


def cell_of(nb: nbformat.NotebookNode, exercise_id: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.metadata.get("course", {}).get("exercise") == exercise_id)


def prepend(nb: nbformat.NotebookNode, exercise_id: str, code: str) -> nbformat.NotebookNode:
    cell = cell_of(nb, exercise_id)
    cell.source = code + "\n" + cell.source
    return nb


def add_cell(nb: nbformat.NotebookNode, index: int, code: str) -> nbformat.NotebookNode:
    nb.cells.insert(index, nbformat.v4.new_code_cell(code))
    return nb


def replace_body(nb: nbformat.NotebookNode, exercise_id: str, body: str) -> nbformat.NotebookNode:
    cell = cell_of(nb, exercise_id)
    head, _, rest = cell.source.partition("### BEGIN SOLUTION")
    cell.source = head + "### BEGIN SOLUTION\n" + body + "\n    ### END SOLUTION\n"
    return nb


def write(
    folder: Path, student: str, content: nbformat.NotebookNode | bytes, name: str = NAME
) -> None:
    (folder / student).mkdir(parents=True)
    data = content if isinstance(content, bytes) else nbformat.writes(content).encode()
    (folder / student / name).write_bytes(data)


def grade(
    paths: list[Path],
    out: Path,
    *extra: str,
    env: dict[str, str] | None = None,
    timeout: float = 600,
) -> subprocess.CompletedProcess[str]:
    """``course-grade PATHS --out OUT EXTRA...`` from the checkout, as an instructor runs it."""
    command = [*COURSE_GRADE, *map(str, paths), "--out", str(out), *extra]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env
    )


def start_grader(*args: str, ctrl_c: bool) -> subprocess.Popen[str]:
    """Start ``course-grade ARGS...`` from the checkout, as :func:`grade` runs it, as a terminal's
    foreground job (``ctrl_c``: SIGINT at its default action) or as a script's background job
    (SIGINT ignored), whatever the tests inherited.

    A child takes SIGINT's disposition from its parent, so it is set here while the child starts
    (a ``preexec_fn`` would make subprocess fork, which JAX warns about in a multithreaded process).
    """
    handler = signal.default_int_handler if ctrl_c else signal.SIG_IGN
    previous = signal.signal(signal.SIGINT, handler)
    try:
        return subprocess.Popen(
            [*COURSE_GRADE, *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, previous)


def by_student(out: Path) -> dict[str, dict]:
    book = json.loads((out / "gradebook.json").read_text())
    return {s["student"]: s for s in book["submissions"]}


def statuses(entry: dict) -> dict[str, str]:
    return {e["id"]: e["status"] for e in entry["exercises"]}


def message(entry: dict, exercise_id: str) -> str:
    return next(e["message"] for e in entry["exercises"] if e["id"] == exercise_id)


def tree_hashes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


# --- the hostile class -------------------------------------------------------------------------


def _hostile_class(folder: Path) -> None:
    write(folder, "solution", solution())
    write(folder, "blank", exercise_version())
    write(
        folder,
        "loop_in_function",
        replace_body(solution(), "01.count_params", "    while True:\n        pass"),
    )
    write(folder, "loop_at_top", add_cell(solution(), 2, "while True:\n    pass"))
    write(
        folder,
        "deaf_loop",
        add_cell(
            solution(),
            2,
            "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
        ),
    )
    write(folder, "exit", prepend(solution(), "01.leaf_paths", "import os\nos._exit(3)"))
    write(
        folder, "segfault", prepend(solution(), "01.is_node", "import ctypes\nctypes.string_at(0)")
    )
    bomb = prepend(solution(), "01.replace_leaves", "hog = np.ones(2**30)")  # 8 GiB at once
    write(folder, "memory_bomb", prepend(bomb, "01.same_structure", "huge = [0] * 10**10"))
    write(
        folder,
        "output_flood",
        # 4 MB, four times what the grader keeps: enough to be refused, small enough to print
        # well within the 4 s limit on a loaded machine (60 MB did not always).
        add_cell(solution(), 2, "for _ in range(40):\n    print('x' * 100_000)"),
    )
    text = SOLUTION.read_bytes()
    write(folder, "malformed_json", text[: len(text) // 2])
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {"name": ""},
        "worksheets": [{"cells": []}],
    }
    write(folder, "nbformat_v3", json.dumps(v3).encode())
    write(folder, "empty_file", b"")
    write(folder, "json_list", b"[1, 2, 3]")
    fake = exercise_version()
    for exercise_id in IDS:
        add_cell(fake, len(fake.cells), f"print('{exercise_id}: passed (2/2 points, 10 cases)')")
    fake.cells.append(
        nbformat.v4.new_markdown_cell("Lesson 01: 5 of 5 exercises passed, 8/8 points")
    )
    write(folder, "prints_passed", fake)
    write(
        folder,
        "redefines_check",
        add_cell(
            exercise_version(),
            2,
            "def check(*args, **kwargs):\n    print('passed')\n\ndef progress(*args, **kwargs):\n "
            "   print('5 of 5 exercises passed')",
        ),
    )
    patch = """
import course_lib.checks as C
from course_lib.checks import _evaluate, _runner, _wire
from course_lib.checks._spec import Outcome

def fake_run(exercise_id, seed, namespace, out_path, nonce):
    ex = C.get_exercise(exercise_id)
    outcomes = [
        Outcome("returned", _evaluate.ensure_plain(ex.probe(ex.reference, c))).to_plain()
        for c in ex.make_cases("grade", seed)
    ]
    report = {
        "nonce": nonce, "exercise": exercise_id, "found": "yes", "type": "", "outcomes": outcomes
    }
    with open(out_path, "w") as f:
        f.write(_wire.dumps(report))

_runner.run = fake_run
_evaluate.judge_outcomes = lambda *args, **kwargs: None
C.check = lambda *args, **kwargs: print("passed")
for ex in C.exercises("01"):
    object.__setattr__(ex, "judge", lambda *args: None)
"""
    write(folder, "monkeypatch", add_cell(exercise_version(), len(exercise_version().cells), patch))
    deleted = solution()
    deleted.cells = [
        c
        for c in deleted.cells
        if c.metadata.get("course", {}).get("exercise") != "01.count_params"
        and c.metadata.get("course", {}).get("check") != "01.count_params"
    ]
    write(folder, "deleted_cells", deleted)
    reordered = solution()
    reordered.cells = list(reversed(reordered.cells))
    write(folder, "reordered", reordered)
    lost = solution()
    lost.metadata = {}
    for cell in lost.cells:
        cell.metadata = {}
    lost.cells.append(nbformat.v4.new_code_cell("check('01.is_node', is_node)\nprogress('01')"))
    write(folder, "lost_metadata", lost, name="homework.ipynb")
    forbidden = replace_body(solution(), "01.count_params", "    return cl.tree_size(tree)")
    write(
        folder,
        "forbidden",
        replace_body(
            forbidden, "01.same_structure", "    return not getattr(cl, 'tree_' + 'diff')(a, b)"
        ),
    )
    write(folder, "wrong_answer", replace_body(solution(), "01.leaf_paths", WRONG_LEAF_PATHS))
    renamed = solution()
    cell_of(renamed, "01.is_node").source = cell_of(renamed, "01.is_node").source.replace(
        "def is_node", "def is_a_node"
    )
    write(folder, "renamed_function", renamed)
    write(folder, "syntax_error", prepend(solution(), "01.replace_leaves", "def broken(:"))
    reference = exercise_version()
    cell_of(
        reference, "01.count_params"
    ).source = "from course_lib.checks._lesson01 import _count_params as count_params"
    cell_of(
        reference, "01.is_node"
    ).source = "import course_lib.checks._lesson01 as L\nis_node = getattr(L, '_is_' + 'node')"
    write(folder, "uses_reference", reference)


# The hostile batch: its class folder, its output folder, the grader's run, the files' hashes.
Hostile = tuple[Path, Path, subprocess.CompletedProcess[str], dict[str, str]]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Hostile:
    base = tmp_path_factory.mktemp("hostile")
    folder, out = base / "class", base / "out"
    _hostile_class(folder)
    before = tree_hashes(folder)
    result = grade([folder], out, *FAST, "--jobs", "2", NO_CANARY)
    return folder, out, result, before


ALL_PASSED = dict.fromkeys(IDS, "passed")
EXPECTED = {
    "solution": ALL_PASSED,
    "blank": dict.fromkeys(IDS, "not_attempted"),
    "loop_in_function": {**ALL_PASSED, "01.count_params": "timeout"},
    "loop_at_top": ALL_PASSED,
    "deaf_loop": ALL_PASSED,
    "exit": {**ALL_PASSED, "01.leaf_paths": "error"},
    "segfault": {**ALL_PASSED, "01.is_node": "error"},
    "memory_bomb": {**ALL_PASSED, "01.replace_leaves": "error", "01.same_structure": "error"},
    "output_flood": ALL_PASSED,
    "malformed_json": dict.fromkeys(IDS, "error"),
    "nbformat_v3": dict.fromkeys(IDS, "error"),
    "empty_file": dict.fromkeys(IDS, "error"),
    "json_list": dict.fromkeys(IDS, "error"),
    "prints_passed": dict.fromkeys(IDS, "not_attempted"),
    "redefines_check": dict.fromkeys(IDS, "not_attempted"),
    "monkeypatch": dict.fromkeys(IDS, "not_attempted"),
    "deleted_cells": {**ALL_PASSED, "01.count_params": "missing"},
    "reordered": ALL_PASSED,
    "lost_metadata": ALL_PASSED,
    "forbidden": {**ALL_PASSED, "01.count_params": "flagged", "01.same_structure": "flagged"},
    "wrong_answer": {**ALL_PASSED, "01.leaf_paths": "failed"},
    "renamed_function": {**ALL_PASSED, "01.is_node": "missing"},
    "syntax_error": {**ALL_PASSED, "01.replace_leaves": "error"},
    "uses_reference": {
        **dict.fromkeys(IDS, "not_attempted"),
        "01.count_params": "flagged",
        "01.is_node": "flagged",
    },
}


def test_hostile_batch_completes(hostile: Hostile) -> None:
    folder, out, result, _ = hostile
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(by_student(out)) == set(EXPECTED)
    rows = list(csv.DictReader((out / "gradebook.csv").read_text().splitlines()))
    assert len(rows) == len(EXPECTED)
    assert all(
        row[i] != "" for row in rows for i in IDS
    )  # every exercise has points, even for broken files
    for student in EXPECTED:
        notebook = "homework.ipynb" if student == "lost_metadata" else NAME
        assert (out / "feedback" / student / notebook.replace(".ipynb", ".txt")).is_file()
    assert f"{len(EXPECTED)}/{len(EXPECTED)}" in result.stderr  # the progress lines reached the end
    assert "exercise passed by" in result.stdout  # the summary table


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_hostile_statuses(hostile: Hostile, student: str) -> None:
    entry = by_student(hostile[1])[student]
    assert statuses(entry) == EXPECTED[student], json.dumps(entry, indent=1)
    points = {
        "01.count_params": 2,
        "01.leaf_paths": 2,
        "01.is_node": 1,
        "01.replace_leaves": 2,
        "01.same_structure": 1,
    }
    assert entry["points"] == sum(points[i] for i, s in EXPECTED[student].items() if s == "passed")
    assert entry["max_points"] == 8


def test_hostile_messages_say_what_happened(hostile: Hostile) -> None:
    books = by_student(hostile[1])
    assert books["solution"]["status"] == "graded" and books["solution"]["points"] == 8
    assert "did not finish within 4 s" in message(books["loop_in_function"], "01.count_params")
    assert any("ran past the 4 s limit" in n for n in books["loop_at_top"]["notes"])
    assert any("did not stop when interrupted" in n for n in books["deaf_loop"]["notes"])
    assert "exited with status 3" in message(books["exit"], "01.leaf_paths")
    assert "SIGSEGV" in message(books["segfault"], "01.is_node")
    assert "MemoryError" in message(books["memory_bomb"], "01.replace_leaves")
    assert "MemoryError" in message(books["memory_bomb"], "01.same_structure")
    assert any("MiB of output (not kept)" in n for n in books["output_flood"]["notes"])
    assert (
        "not valid JSON" in books["malformed_json"]["message"]
        and books["malformed_json"]["status"] == "error"
    )
    assert "format 3.0" in books["nbformat_v3"]["message"]
    assert "empty" in books["empty_file"]["message"]
    assert "not a notebook" in books["json_list"]["message"]
    assert "not attempted" in message(books["blank"], "01.count_params")
    assert "no cell defines count_params" in message(books["deleted_cells"], "01.count_params")
    code_cells = [c for c in solution().cells if c.cell_type == "code"]
    count_cell = next(
        i
        for i, c in enumerate(code_cells, 1)
        if c.metadata.get("course", {}).get("exercise") == "01.count_params"
    )
    assert (
        f"`count_params` calls `cl.tree_size` (code cell {count_cell} (`def count_params(tree):`), "
        "line " in message(books["forbidden"], "01.count_params")
    )
    assert "`return cl.tree_size(tree)`" in message(books["forbidden"], "01.count_params")
    assert "`same_structure` calls `cl.tree_diff` (code cell " in message(
        books["forbidden"], "01.same_structure"
    )
    assert "`return not getattr(cl, 'tree_' + 'diff')(a, b)`" in message(
        books["forbidden"], "01.same_structure"
    )
    flagged = next(e for e in books["forbidden"]["exercises"] if e["id"] == "01.count_params")
    assert flagged["points"] == 0 and flagged["points_if_allowed"] == 2  # what an override needs
    assert flagged["flags"][0]["reached"] == "cl.tree_size" and flagged["flags"][0][
        "cell"
    ].startswith(f"code cell {count_cell} ")
    assert "`None` entries" in message(books["wrong_answer"], "01.leaf_paths")
    assert "defines no is_node" in message(books["renamed_function"], "01.is_node")
    assert "SyntaxError" in message(books["syntax_error"], "01.replace_leaves")
    replace_cell = next(
        i
        for i, c in enumerate(code_cells, 1)
        if c.metadata.get("course", {}).get("exercise") == "01.replace_leaves"
    )
    assert f"That is code cell {replace_cell} (`def broken(:`)." in message(
        books["syntax_error"], "01.replace_leaves"
    )
    assert books["lost_metadata"]["lesson"] == "01"
    # Bound in its cell by an import, or by getattr with a computed name: caught when it runs.
    assert (
        "`count_params` is the course's reference answer, "
        "`course_lib.checks._lesson01._count_params` itself"
        in message(books["uses_reference"], "01.count_params")
    )
    assert (
        "`is_node` is the course's reference answer, `course_lib.checks._lesson01._is_node` itself"
        in message(books["uses_reference"], "01.is_node")
    )


def test_submissions_are_never_modified(hostile: Hostile) -> None:
    folder, _, _, before = hostile
    assert tree_hashes(folder) == before


def test_feedback_file_reads_well(hostile: Hostile) -> None:
    text = (hostile[1] / "feedback" / "wrong_answer" / "01_what_is_a_pytree.txt").read_text()
    assert text.startswith("01_what_is_a_pytree.ipynb by wrong_answer\nScore: 6 / 8\n")
    assert "01.leaf_paths (leaf_paths): not yet right, 0/2" in text


def test_no_stray_files_in_the_output_folder(hostile: Hostile) -> None:
    out = hostile[1]
    names = {p.name for p in out.iterdir()}
    assert names == {
        "gradebook.csv",
        "gradebook.json",
        "feedback",
        "report.html",
    }  # the journal is gone once the gradebook is written


# --- determinism and the exercise version --------------------------------------------------------


def test_same_folder_twice_gives_the_same_gradebook(tmp_path: Path) -> None:
    folder = tmp_path / "class"
    write(folder, "ada", solution())
    write(
        folder,
        "cy",
        replace_body(solution(), "01.is_node", "    return len(jax.tree.leaves(x)) != 1"),
    )
    first = grade([folder], tmp_path / "one", "--jobs", "2", NO_CANARY)
    # The second time the notebooks are named one by one: same students, same grades.
    files = sorted(folder.glob("*/*.ipynb"))
    second = grade(files, tmp_path / "two", "--jobs", "2", "--quiet", NO_CANARY)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    one, two = (
        (tmp_path / "one" / "gradebook.csv").read_text(),
        (tmp_path / "two" / "gradebook.csv").read_text(),
    )
    assert one == two, "\n".join(
        difflib.unified_diff(one.splitlines(), two.splitlines(), lineterm="")
    )
    books = [json.loads((tmp_path / d / "gradebook.json").read_text()) for d in ("one", "two")]
    for book in books:
        for entry in book["submissions"]:
            del entry["path"]
    assert books[0] == books[1]
    assert second.stdout == "" and second.stderr == ""
    by_name = by_student(tmp_path / "one")
    assert by_name["ada"]["points"] == 8
    assert statuses(by_name["cy"])["01.is_node"] == "failed"
    assert (tmp_path / "one" / "feedback" / "cy" / "01_what_is_a_pytree.txt").read_bytes() == (
        tmp_path / "two" / "feedback" / "cy" / "01_what_is_a_pytree.txt"
    ).read_bytes()


@pytest.mark.slow
def test_every_solution_gets_full_marks_and_every_exercise_notebook_zero(tmp_path: Path) -> None:
    """One grader run over the whole course: every solution notebook and every exercise notebook.

    Without the canary, which would grade each solution notebook a second time: the "solution"
    student is that check, lesson by lesson (test_canary.py tests the canary itself)."""
    folder = tmp_path / "class"
    for student, source in (("solution", "solutions"), ("blank", "exercises")):
        (folder / student).mkdir(parents=True)
        for path in sorted((ROOT / source).glob("[0-9][0-9]_*.ipynb")):
            shutil.copy(path, folder / student / path.name)
    result = grade([folder], tmp_path / "out", "--jobs", "2", "--quiet", NO_CANARY)
    assert result.returncode == 0, result.stderr[-3000:]
    submissions = json.loads((tmp_path / "out" / "gradebook.json").read_text())["submissions"]
    everything = [(e.id, e.points) for e in all_exercises()]
    for student, status in (("solution", "passed"), ("blank", "not_attempted")):
        books = sorted(
            (s for s in submissions if s["student"] == student), key=lambda s: s["lesson"]
        )
        assert [b["status"] for b in books] == ["graded"] * len(books), [
            b["message"] for b in books
        ]
        graded = [e for book in books for e in book["exercises"]]
        assert [(e["id"], e["max_points"]) for e in graded] == everything
        assert all(
            e["id"].startswith(book["lesson"] + ".") for book in books for e in book["exercises"]
        )
        assert {e["id"]: e["status"] for e in graded} == dict.fromkeys(
            (i for i, _ in everything), status
        )
        earned = [(e["id"], e["points"]) for e in graded]
        assert earned == (everything if status == "passed" else [(i, 0) for i, _ in everything])
    assert len(submissions) == 2 * len(list((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))) == 18


# --- bad arguments: non-zero exit and a message, no kernels started -------------------------------


def run_main(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str]:
    from course_tools.grade import main

    status = main([str(a) for a in argv])
    return status, capsys.readouterr().err


def test_missing_path_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = run_main(capsys, tmp_path / "nope", "--out", tmp_path / "out")
    assert status == 2 and "no such file or folder" in err
    assert not (tmp_path / "out").exists()


def test_folder_without_notebooks_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    status, err = run_main(capsys, tmp_path / "empty", "--out", tmp_path / "out")
    assert status == 2 and "no notebooks" in err


@pytest.mark.parametrize(
    "option",
    [
        ["--timeout", "0"],
        ["--jobs", "-1"],
        ["--jobs", "two"],
        ["--memory-mb", "10"],
        ["--bogus"],
        ["--forbid", "optax.tree_utils"],
        [],
    ],
)
def test_bad_options_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    write(tmp_path, "eve", solution())
    argv = [tmp_path, "--out", tmp_path / "out", *option] if option else []  # [] : no PATH at all
    status, err = run_main(capsys, *argv)
    assert status == 2 and "error" in err
    assert not (tmp_path / "out").exists()


def test_unwritable_output_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "fay", solution())
    (tmp_path / "blocker").write_text("a file where the output folder should be")
    status, err = run_main(capsys, tmp_path / "fay", "--out", tmp_path / "blocker" / "out")
    assert status == 3 and "cannot write to the output folder" in err


def test_help_exits_zero() -> None:
    result = subprocess.run(
        [*COURSE_GRADE, "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0 and "--timeout" in result.stdout and "--jobs" in result.stdout


def test_console_script_has_the_same_options() -> None:
    script = Path(sys.executable).with_name("course-grade")
    if not script.exists():
        pytest.skip("the console script is installed with the package (pip install -e .)")
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "--notebook-timeout" in result.stdout


# --- reading and planning, without kernels --------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b'{"cells": [', "not valid JSON (line 1"),
        (b'"text"', "not a notebook"),
        (b'{"cells": []}', "no nbformat version"),
        (b'{"nbformat": 3, "nbformat_minor": 0}', "format 3.0"),
        (b'{"nbformat": 5, "nbformat_minor": 0, "cells": []}', "newer than format 4"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "cells": {}}', "no list of cells"),
        (b'{"nbformat": 4, "nbformat_minor": 5, "cells": [1]}', "cell 0 is not a notebook cell"),
        (
            b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 1}]}',
            "cell 0 has no readable",
        ),
    ],
)
def test_read_notebook_problems(data: bytes, words: str) -> None:
    with pytest.raises(NotebookError, match=words.replace("(", r"\(")):
        read_notebook(data, schema=False)


def test_without_checks_keeps_everything_else() -> None:
    source = "def f(x):\n    return check(x)\n\ncheck('01.a', f)\nprogress(\n    '01')\ny = 1"
    assert without_checks(source) == "def f(x):\n    return check(x)\n\ny = 1"
    assert without_checks("%time 1\ncheck('01.a', f)\n") == "%time 1\n"
    assert without_checks("check('01.a', f) +\n") == "\n"  # not Python: dropped line by line
    assert without_checks("x = 1") == "x = 1"


def test_plan_finds_exercises_by_metadata_and_by_name() -> None:
    nb = read_notebook(SOLUTION.read_bytes(), schema=False)
    plan = plan_cells(nb, "01")
    assert set(plan.exercise_cells) == set(IDS)
    assert plan.skipped_checks == 6  # five check cells and progress
    assert not any("check(" in c.source for c in plan.cells)
    stripped = copy.deepcopy(nb)
    for cell in stripped.cells:
        cell.metadata = {}
    stripped.metadata = {}
    assert detect_lesson(stripped, "homework.ipynb") == "01"
    assert set(plan_cells(stripped, "01").exercise_cells) == set(IDS)


def test_plan_names_cells_as_a_student_counts_them() -> None:
    nb = read_notebook(SOLUTION.read_bytes(), schema=False)
    plan = plan_cells(nb, "01")
    code = [index for index, c in enumerate(nb.cells) if c.cell_type == "code"]
    assert len(code) < len(nb.cells)  # markdown cells in between are not counted
    for cell in plan.cells:
        number = code.index(cell.index) + 1
        first = next(
            line.strip() for line in nb.cells[cell.index].source.splitlines() if line.strip()
        )
        assert cell.number == number and cell.label.startswith(f"code cell {number} (`{first[:10]}")
    count = plan.cell(plan.exercise_cells["01.count_params"])
    assert count is not None
    assert count.label == f"code cell {count.number} (`def count_params(tree):`)"


# --- the fenced kernel on its own -----------------------------------------------------------------


def test_memory_watchdog_kills_a_growing_kernel(tmp_path: Path) -> None:
    import asyncio

    import psutil

    from course_tools.grade.sandbox import kernel_env
    from course_tools.grade.sandbox._kernel import Limits, Sandbox

    async def scenario() -> tuple:
        sandbox = Sandbox(str(tmp_path), kernel_env(tmp_path), Limits(memory_bytes=300 * 2**20))
        await sandbox.start()
        try:
            ok = await sandbox.run("x = 1 + 1", 60)
            child = await sandbox.run(
                "import subprocess, sys\np = subprocess.Popen([sys.executable, '-c', 'import "
                "time; time.sleep(600)'])",
                60,
            )
            bomb = await sandbox.run(
                "import numpy as np\nhog = []\nwhile True:\n    hog.append(np.ones(10**7))", 120
            )
            return ok, child, bomb, sandbox.pid, sandbox.usable
        finally:
            await sandbox.stop()

    ok, child, bomb, pid, usable = asyncio.run(scenario())
    assert ok.status == "ok" and child.status == "ok"
    assert bomb.status == "died" and "memory limit" in bomb.reason
    assert not usable
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
