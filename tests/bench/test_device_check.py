"""bench/device_check.sh ends every call inside its time, here on the CPU backend with the course's
own environment (the way the script reviews itself without a device)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "device_check.sh"


def test_a_step_past_the_calls_time_is_stopped_and_says_so(tmp_path: Path) -> None:
    slow = tmp_path / "test_slow.py"
    slow.write_text("import time\n\n\ndef test_slow():\n    time.sleep(120)\n", encoding="utf-8")
    env = {
        **os.environ,
        "OUT": str(tmp_path / "out"),
        "PYTHON": sys.executable,
        "DEVICE_CHECK_WHEELS": "none",
        "DEVICE_CHECK_IN_PROCESS": "1",
        "DEVICE_CHECK_STEPS": "tests",
        "DEVICE_CHECK_TESTS": str(slow),
        "DEVICE_CHECK_CALL_S": "1",  # spent before the tests start: they get the last second
    }
    # Without the cap the slow test runs its two minutes and passes, and the asserts below fail.
    done = subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=400
    )
    assert done.returncode == 1
    assert "device_check: stopped after 1 s, all the time this step had" in done.stdout
    assert "tests logged: 0 passed, 0 failed" in done.stdout
    assert "done: FAILURES above" in done.stdout
