"""course-grade --scheduler: a real Dask scheduler and workers on loopback, faults, bad addresses."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_grade import ROOT

FAST = ["--timeout", "20", "--notebook-timeout", "120", "--quiet"]
SOLVED = next((ROOT / "solutions").glob("01_*.ipynb"))
BLANK = ROOT / "exercises" / SOLVED.name
DASK = Path(sys.executable).with_name("dask")


def course_grade(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "course_lib.grade", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=timeout)


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


def test_real_workers_write_the_local_gradebook_even_when_one_is_killed(tmp_path: Path) -> None:
    folder = small_class(tmp_path)
    local = course_grade(str(folder), "--out", str(tmp_path / "local"), "--jobs", "2", *FAST)
    assert local.returncode == 0, local.stderr
    env = {
        **os.environ,
        "DASK_TEMPORARY_DIRECTORY": str(tmp_path / "dask"),
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1",
    }
    file = tmp_path / "scheduler.json"
    processes = [
        start(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--dashboard-address",
                "127.0.0.1:0",
                "--scheduler-file",
                str(file),
            ],
            tmp_path,
            env,
        )
    ]
    try:
        deadline = time.monotonic() + 120
        while not file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(file.read_text())["address"]
        for _ in range(2):
            processes.append(
                start(
                    [
                        "worker",
                        address,
                        "--nworkers",
                        "1",
                        "--nthreads",
                        "1",
                        "--no-dashboard",
                        "--no-nanny",
                    ],
                    tmp_path,
                    env,
                )
            )
        grading = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "course_lib.grade",
                str(folder),
                "--out",
                str(tmp_path / "cluster"),
                "--scheduler",
                address,
                "--timeout",
                "20",
                "--notebook-timeout",
                "120",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(12)  # the workers have taken their first notebooks
        processes[1].send_signal(signal.SIGKILL)
        out, err = grading.communicate(timeout=600)
        assert grading.returncode == 0, err
        assert (
            err.count(f"/{SOLVED.name}: ") == 3
        )  # one progress line per notebook: none counted twice
        assert tree(tmp_path / "cluster") == tree(tmp_path / "local")
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)


def test_local_cluster_grades_a_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = small_class(tmp_path, 2)
    monkeypatch.setenv("DASK_TEMPORARY_DIRECTORY", str(tmp_path / "dask"))
    result = course_grade(
        str(folder), "--out", str(tmp_path / "out"), "--scheduler", "local:2", *FAST
    )
    assert result.returncode == 0, result.stderr
    rows = (tmp_path / "out" / "gradebook.csv").read_text().splitlines()
    assert len(rows) == 3 and not (tmp_path / "out" / "journal.jsonl").exists()


@pytest.mark.parametrize("address", ["127.0.0.1:8786", "tcp://host", "local:0", "http://x:1"])
def test_a_bad_address_is_refused(tmp_path: Path, address: str) -> None:
    result = course_grade(
        str(small_class(tmp_path, 1)),
        "--out",
        str(tmp_path / "out"),
        "--scheduler",
        address,
        timeout=120,
    )
    assert result.returncode == 2
    assert "is not a scheduler address: give tcp://HOST:PORT" in result.stderr


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
