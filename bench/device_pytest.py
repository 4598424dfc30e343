"""A pytest plugin for the device check's test step (``-p device_pytest``, with bench/ on the path).

1. A plugin's report hook that raises no longer ends the run. On a machine with packages of its
   own, reporting a failure can import one whose import warns (hypothesis imports ``libcst`` to
   write a failing example as a patch), and the tests' ``filterwarnings = error`` makes that an
   INTERNALERROR: every test after it went unrun. Here that report is made again without the
   plugin's extras, says what was raised, and the run goes on.
2. It writes a record, one line each, of the tests collected and of every test that finished with
   its outcome, to the file named by ``DEVICE_CHECK_TESTS_RECORD``, flushed as it goes: what the
   device check counts to tell a whole run from one cut short (by a crash or its time limit).

    $ DEVICE_CHECK_TESTS_RECORD=build/tests.record PYTHONPATH=bench \\
          python -m pytest -p device_pytest tests/core/test_flat.py
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest

RECORD = "DEVICE_CHECK_TESTS_RECORD"


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    try:
        return (yield)
    # Any error: it is a plugin's hook that raised, not the test, whose own result stands.
    except Exception as error:  # noqa: BLE001
        report = pytest.TestReport.from_item_and_call(item, call)
        said = " ".join(str(error).split())
        report.sections.append(
            ("device check", f"a plugin's report hook raised {type(error).__name__}: {said}")
        )
        return report


def _record(line: str) -> None:
    path = os.environ.get(RECORD)
    if path:
        with open(path, "a", encoding="utf-8") as record:
            record.write(line + "\n")


def pytest_collection_finish(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # pytest-xdist's workers: their controller
        _record(f"collected {len(session.items)}")


_WORKERS_COLLECTED: list[int] = []


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """With pytest-xdist the controller collects nothing: each worker tells it the same tests."""
    if not _WORKERS_COLLECTED:
        _record(f"collected {len(ids)}")
    _WORKERS_COLLECTED.append(len(ids))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test has finished once its call is reported, or its setup when that failed or skipped."""
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _record(f"ran {report.outcome} {report.nodeid}")
