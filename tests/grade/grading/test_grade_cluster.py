"""course-grade --scheduler: a real Dask scheduler and workers on loopback, faults, bad addresses.

What a fault test waits for is an event (a kernel under a worker, a journalled result), not a time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import psutil
import pytest
from test_grade import COURSE_GRADE, ROOT, by_student, run_main, start_grader

from course_tools.grade.sandbox._launcher import KERNEL_NAME

FAST = ["--timeout", "20", "--notebook-timeout", "120", "--quiet"]
SOLVED = next((ROOT / "solutions").glob("01_*.ipynb"))
BLANK = ROOT / "exercises" / SOLVED.name
DASK = Path(sys.executable).with_name("dask")


def course_grade(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COURSE_GRADE, *args], capture_output=True, text=True, cwd=ROOT, timeout=timeout
    )


def small_class(tmp_path: Path, students: int = 3) -> Path:
    folder = tmp_path / "class"
    for i in range(students):
        (folder / f"student{i}").mkdir(parents=True)
        shutil.copy(SOLVED if i % 2 else BLANK, folder / f"student{i}" / SOLVED.name)
    return folder


def tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def start(command: list[str], tmp_path: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with open(
        tmp_path / f"{command[0]}-{time.monotonic_ns()}.log", "wb"
    ) as log:  # the child keeps its copy
        return subprocess.Popen(
            [str(DASK), *command], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path
        )


@contextmanager
def cluster(
    tmp_path: Path, workers: int, nanny: bool
) -> Iterator[tuple[str, list[psutil.Process]]]:
    """A ``dask scheduler`` and ``workers`` single-threaded ``dask worker`` processes on loopback.

    Yields the scheduler's address and the workers' processes (with a nanny: the nannies, whose one
    child is the worker). A worker runs one task at a time and is sent no other ahead of it, so a
    worker that dies takes down no notebook but the one it grades. Everything is stopped by pid.
    """
    env = {
        **os.environ,
        "DASK_TEMPORARY_DIRECTORY": str(tmp_path / "dask"),
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
        "DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION": "1.0",
    }
    file = tmp_path / "scheduler.json"
    scheduler = ["scheduler", "--host", "127.0.0.1", "--port", "0"]
    scheduler += ["--dashboard-address", "127.0.0.1:0", "--scheduler-file", str(file)]
    processes = [start(scheduler, tmp_path, env)]
    try:
        address = scheduler_address(file, deadline=time.monotonic() + 120)
        worker = ["worker", address, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"]
        for _ in range(workers):
            processes.append(start(worker + ([] if nanny else ["--no-nanny"]), tmp_path, env))
        yield address, [psutil.Process(p.pid) for p in processes[1:]]
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=60)


def scheduler_address(file: Path, deadline: float) -> str:
    """The address in the scheduler's file, once the scheduler has written all of it: the file
    appears before its JSON is complete."""
    while True:
        try:
            return str(json.loads(file.read_text())["address"])
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def kernels_under(process: psutil.Process) -> list[psutil.Process]:
    """The graded kernels running under ``process``: ``ipykernel_launcher`` processes, or kernels
    forked warm (named ``course-kernel``)."""
    found = []
    try:
        for child in process.children(recursive=True):
            try:
                if "ipykernel_launcher" in child.cmdline() or child.name() == KERNEL_NAME:
                    found.append(child)
            except psutil.Error:
                pass
    except psutil.Error:
        pass
    return found


def wait_for(condition: Callable[[], object], seconds: float, what: str) -> object:
    """Poll ``condition`` every 0.1 s until it is true; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"waited {seconds:g} s for {what}")


def journalled(journal: Path) -> int:
    """How many finished notebooks ``journal`` holds (after its line of settings)."""
    if not journal.exists():
        return 0
    lines = journal.read_text().splitlines()[1:]
    return sum(line.endswith("}") and '"student"' in line for line in lines)


def grading_on(address: str, folder: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    return start_grader(
        str(folder), "--out", str(out), "--scheduler", address,
        "--timeout", "20", "--notebook-timeout", "120", *extra,
        ctrl_c=True,
    )  # fmt: skip


def test_real_workers_write_the_local_gradebook_even_when_one_is_killed(tmp_path: Path) -> None:
    folder = small_class(tmp_path)
    local = course_grade(str(folder), "--out", str(tmp_path / "local"), "--jobs", "2", *FAST)
    assert local.returncode == 0, local.stderr
    with cluster(tmp_path, workers=2, nanny=False) as (address, workers):
        grading = grading_on(address, folder, tmp_path / "cluster")
        # The first worker is killed while a notebook's kernel runs under it: mid-task.
        wait_for(lambda: kernels_under(workers[0]), 300, "the first worker to start a kernel")
        workers[0].kill()
        out, err = grading.communicate(timeout=600)
    assert grading.returncode == 0, err
    assert err.count(f"/{SOLVED.name}: ") == 3  # one progress line per notebook: none counted twice
    assert tree(tmp_path / "cluster") == tree(tmp_path / "local")


def test_a_notebook_that_kills_every_worker_it_touches_is_an_error(tmp_path: Path) -> None:
    folder = small_class(tmp_path)
    poison = f"kill-the-worker-{uuid.uuid4().hex}"  # the test kills a worker whose kernel has it
    notebook = nbformat.read(SOLVED, as_version=4)
    notebook.cells.append(nbformat.v4.new_markdown_cell(poison))
    (folder / "poisoner").mkdir()
    nbformat.write(notebook, folder / "poisoner" / SOLVED.name)
    kills: list[str] = []
    done = threading.Event()
    with cluster(tmp_path, workers=2, nanny=True) as (address, nannies):

        def killer() -> None:  # a worker grading the poisoner dies, as if its machine crashed
            while not done.is_set():
                for nanny in nannies:
                    for kernel in kernels_under(nanny):
                        try:
                            if poison in (Path(kernel.cwd()) / SOLVED.name).read_text():
                                worker = next(p for p in kernel.parents() if p.ppid() == nanny.pid)
                                worker.kill()
                                kills.append(f"{worker.pid}")
                        except (OSError, psutil.Error, StopIteration):
                            pass
                time.sleep(0.1)

        watcher = threading.Thread(target=killer, daemon=True)
        watcher.start()
        grading = grading_on(address, folder, tmp_path / "cluster")
        try:
            out, err = grading.communicate(timeout=900)
        finally:
            done.set()
            watcher.join(timeout=30)
    assert grading.returncode == 0, err
    assert len(set(kills)) == 2, kills  # tried twice (allowed-failures 1), on two workers
    book = by_student(tmp_path / "cluster")
    assert book["poisoner"]["status"] == "error", book["poisoner"]
    assert (
        "every Dask worker that graded this notebook died while grading it (2 tried)"
        in book["poisoner"]["message"]
    )
    assert [book[f"student{i}"]["status"] for i in range(3)] == ["graded"] * 3
    assert book["student1"]["points"] == book["student1"]["max_points"]  # the class completed
    assert err.count(f"/{SOLVED.name}: ") == 4


def test_ctrl_c_keeps_finished_results_and_resume_grades_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a local cluster (``local:2``): Ctrl-C keeps what finished, and ``--resume`` runs to the
    end, to the gradebook a local run writes. The three runs go without the canary, which the
    cluster tests above run."""
    folder = small_class(tmp_path, 4)
    # The last student's notebook waits at a gate, a file the test creates: shut while the
    # interrupted run goes, so that the interrupt always finds that notebook unfinished, however
    # the machine's load times the others. The gate's folder is on PYTHONPATH, which a confined
    # kernel may read.
    gate = tmp_path / "gate"
    gate.mkdir()
    opened = gate / "open"
    opened.touch()
    path = os.pathsep.join(filter(None, [str(gate), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    last = folder / "student3" / SOLVED.name
    notebook = nbformat.read(last, as_version=4)
    wait = f"""import os, time

deadline = time.monotonic() + 100
while not os.path.exists({str(opened)!r}) and time.monotonic() < deadline:
    time.sleep(0.05)"""
    notebook.cells.append(nbformat.v4.new_code_cell(wait))
    nbformat.write(notebook, last)
    local = course_grade(
        str(folder), "--out", str(tmp_path / "local"), "--jobs", "2", "--no-canary", *FAST
    )
    assert local.returncode == 0, local.stderr
    monkeypatch.setenv("DASK_TEMPORARY_DIRECTORY", str(tmp_path / "dask"))
    out = tmp_path / "cluster"
    opened.unlink()
    grading = grading_on("local:2", folder, out, "--no-canary")
    journal = out / "journal.jsonl"
    wait_for(lambda: journalled(journal) >= 1, 600, "the first journalled result")
    grading.send_signal(signal.SIGINT)
    _, err = grading.communicate(timeout=300)
    assert grading.returncode == 130, err
    finished = journalled(journal)
    assert 1 <= finished < 4, err
    assert f"{finished} finished notebook(s) are kept in {journal}" in err, err
    assert not (out / "gradebook.json").exists()
    opened.touch()
    again = course_grade(
        str(folder), "--out", str(out), "--scheduler", "local:2", "--resume", "--no-canary",
        "--timeout", "20", "--notebook-timeout", "120",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"grading {4 - finished} notebook(s)" in again.stderr
    assert f"{finished} from the journal of the interrupted run" in again.stderr
    # A local cluster (local:2) run to its end: the gradebook of the class, the journal gone.
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert len(rows) == 5 and not journal.exists()
    assert tree(out) == tree(tmp_path / "local")


@pytest.mark.parametrize("address", ["127.0.0.1:8786", "tcp://host", "local:0", "http://x:1"])
def test_a_bad_address_is_refused(
    tmp_path: Path, address: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In-process: the address is refused before anything starts (the console script is the same
    `main`, test_grade.py::test_console_script_has_the_same_options)."""
    out = tmp_path / "out"
    status, err = run_main(capsys, small_class(tmp_path, 1), "--out", out, "--scheduler", address)
    assert status == 2
    assert "is not a scheduler address: give tcp://HOST:PORT" in err
    assert not out.exists()


def test_an_unreachable_scheduler_exits_2_in_time(tmp_path: Path) -> None:
    started = time.monotonic()
    result = course_grade(
        str(small_class(tmp_path, 1)),
        "--out",
        str(tmp_path / "out"),
        "--scheduler",
        "tcp://127.0.0.1:9",
        "--scheduler-timeout",
        "3",
        timeout=300,
    )
    assert result.returncode == 2, result.stderr
    assert "no Dask scheduler answered at tcp://127.0.0.1:9 within 3 s" in result.stderr
    assert time.monotonic() - started < 120
    assert not (tmp_path / "out" / "gradebook.json").exists()
