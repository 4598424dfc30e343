"""bench/device_check.sh ends every call inside its time, here on the CPU backend with the course's
own environment (the way the script reviews itself without a device)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "device_check.sh"


def _device_check(tmp_path: Path, **settings: str) -> tuple[int, str]:
    """The script's exit status and what it printed, run with these DEVICE_CHECK_ settings. A
    session of its own, so that a run that hangs is killed whole, its Python and tee included."""
    env = {
        **os.environ,
        "OUT": str(tmp_path / "out"),
        "PYTHON": sys.executable,
        "DEVICE_CHECK_WHEELS": "none",
        "DEVICE_CHECK_IN_PROCESS": "1",
        **{f"DEVICE_CHECK_{name}": value for name, value in settings.items()},
    }
    argv = ["bash", str(SCRIPT)]
    with subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    ) as run:
        try:
            printed, _ = run.communicate(timeout=400)  # a loaded CI takes a minute to start
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            raise
    return run.returncode, printed


def _slow_test(tmp_path: Path) -> str:
    slow = tmp_path / "test_slow.py"
    slow.write_text("import time\n\n\ndef test_slow():\n    time.sleep(120)\n", encoding="utf-8")
    return str(slow)


def test_a_step_past_its_time_is_stopped_and_says_so(tmp_path: Path) -> None:
    # Without the stop the slow test runs its two minutes and passes: the asserts fail.
    status, printed = _device_check(
        tmp_path, STEPS="tests", TESTS=_slow_test(tmp_path), TESTS_S="1"
    )
    assert status == 1
    assert "device_check: stopped after 1 s, all the time this step had" in printed
    assert "tests: CUT: 0 of " in printed  # of 1, or of an unknown number if collecting was cut
    assert "done: FAILURES above" in printed


def test_a_failing_report_hook_does_not_end_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a machine whose hypothesis imports a package that warns on import, to report a
    failure, under the tests' ``filterwarnings = error``: pytest's INTERNALERROR ended the run."""
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n", encoding="utf-8")
    (tmp_path / "warns_on_import.py").write_text(
        "import warnings\n\n"
        "warnings.warn('an old API of ours is deprecated', DeprecationWarning)\n",
        encoding="utf-8",
    )
    (tmp_path / "imports_to_report.py").write_text(
        "import pytest\n\n\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    report = (yield).get_result()\n"
        "    if report.failed:\n"
        "        import warns_on_import\n",
        encoding="utf-8",
    )
    tests = tmp_path / "test_three.py"
    tests.write_text(
        "def test_fails():\n    assert 1 == 2\n\n\ndef test_passes():\n    pass\n\n\n"
        "def test_fails_too():\n    assert 'a' == 'b'\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTEST_PLUGINS", "imports_to_report")
    status, printed = _device_check(tmp_path, STEPS="tests", TESTS=str(tests))
    assert status == 1
    failed = re.findall(r"^FAILED \S*test_three\.py::(\w+)", printed, re.MULTILINE)
    assert failed == ["test_fails", "test_fails_too"]
    assert "tests: all 3 collected ran: 1 passed, 2 failed, 0 skipped" in printed
    log = (tmp_path / "out" / "tests.log").read_text(encoding="utf-8")
    assert "a plugin's report hook raised" in log and "an old API of ours" in log


def test_steps_after_the_calls_time_do_not_start(tmp_path: Path) -> None:
    status, printed = _device_check(
        tmp_path, STEPS="compile,tests", TESTS=_slow_test(tmp_path), CALL_S="1"
    )
    assert status == 1
    assert printed.count("device_check: no time left for this step") == 2
    assert "| first compile |" not in printed  # the compile bench never ran
    assert "done: FAILURES above" in printed


@pytest.mark.parametrize(
    ("settings", "said"),
    [
        ({"STEPS": "bench"}, "DEVICE_CHECK_STEPS has 'bench'; the steps are lessons, compile,"),
        ({"STEPS": "lessons, tests"}, "DEVICE_CHECK_STEPS has ' tests'"),
        ({"TESTS_S": "5m"}, "DEVICE_CHECK_TESTS_S=5m: give a whole number of seconds, 1 or more"),
        ({"CALL_S": "0"}, "DEVICE_CHECK_CALL_S=0: give a whole number of seconds"),
    ],
)
def test_what_it_cannot_read_is_refused_before_anything_runs(
    tmp_path: Path, settings: dict[str, str], said: str
) -> None:
    status, printed = _device_check(tmp_path, **settings)
    assert status == 2
    assert said in printed
    assert "== the machine" not in printed
