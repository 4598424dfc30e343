"""`.ci/stage`, which times each stage of `make test`: what it counts and what it hands back."""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STAGE = ROOT / ".ci" / "stage"
BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass"


def stage(tmp_path: Path, name: str, script: str, **env: str) -> tuple[int, str]:
    """Run ``.ci/stage NAME sh -c SCRIPT`` in ``tmp_path``; its status and the line it added."""
    result = subprocess.run(
        [str(STAGE), name, "sh", "-c", script],
        cwd=tmp_path,
        env={**os.environ, "MAKEFLAGS": "", **env},
        timeout=120,
    )
    return result.returncode, (tmp_path / "build" / "stage-times.txt").read_text().splitlines()[-1]


def test_a_process_its_parent_leaves_behind_is_waited_for_and_counted(tmp_path: Path) -> None:
    # The shell starts a process that spends 1.5 s of processor time and ends without waiting
    # for it, as Chromium leaves its renderers: the stage waits for the orphan and counts it.
    orphan = f"{sys.executable} -c '{BURN.format(1.5)}'"
    status, line = stage(tmp_path, "orphan", f"({orphan} &); true")
    assert status == 0
    found = re.fullmatch(r" *(\d+) s +(\d+) CPU-s  orphan", line)
    assert found and int(found[1]) >= 1 and int(found[2]) >= 1, line


def test_a_failing_command_fails_the_stage_and_says_so(tmp_path: Path) -> None:
    status, line = stage(tmp_path, "failing", "exit 3")
    assert status == 3 and line.endswith("CPU-s  failing (failed)"), line
    status, _ = stage(tmp_path, "killed", "kill -TERM $$")
    assert status == 128 + 15


def test_a_process_still_running_is_stopped_after_the_grace_and_named(tmp_path: Path) -> None:
    # A daemon whose own child keeps running: stopping the daemon hands its child to the stage,
    # which stops it too rather than waiting for it.
    daemon = "(sh -c 'sleep 600 & sleep 600; true' &); true"
    status, line = stage(tmp_path, "daemon", daemon, STAGE_LEFT_RUNNING_S="1")
    assert status == 0
    assert line.endswith("daemon (left running, stopped after 1 s: sh, sleep)"), line
