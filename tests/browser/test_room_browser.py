"""The workshop room's dashboard in Chromium, as an instructor uses it: 30 learners join (27 posting
events as the learner's side does, 3 in real kernels through ``join_room``, ``ready`` and the real
``check``); the grid, the needs-help list and the ready list follow live; the CSV export downloads
every event; the page works from the keyboard; a hostile name is shown as text and never run."""

from __future__ import annotations

import csv
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kernel_support import UnixSocketKernelManager
from lab_browser import ACTION_TIMEOUT_MS
from room_support import ServedRoom, served_room

pytestmark = pytest.mark.browser

HOSTILE = "<script>alert(1)</script>"
HOSTILE_IMAGE = '<img src=x onerror="alert(2)">'
SIMULATED = [f"Learner {i:02d}" for i in range(25)] + [HOSTILE, HOSTILE_IMAGE]
KERNELS = {
    # name: the answer its kernel defines, checked three times
    "Kernel Passes": "def count_params(t):\n    return sum(np.size(x) for x in jax.tree.leaves(t))",
    "Kernel Stuck": "def count_params(tree):\n    return len(jax.tree.leaves(tree))",
    "Kernel Starts": "def count_params(tree):\n    raise NotImplementedError",
}


@pytest.fixture(scope="module")
def room(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedRoom]:
    with served_room(tmp_path_factory.mktemp("room") / "workshop.sqlite", "--rate", "100") as r:
        yield r


class Kernels:
    """Fresh kernels, one per learner, started side by side; each runs one cell at a time."""

    def __init__(self, names: list[str], config: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "COURSE_STRICT_CHECKS")}
        env["XDG_CONFIG_HOME"] = str(config)  # where join_room keeps the join: not the user's
        self.managers = {name: UnixSocketKernelManager(kernel_name="python3") for name in names}
        for manager in self.managers.values():
            manager.start_kernel(env=env)
        self.clients = {name: manager.client() for name, manager in self.managers.items()}
        for client in self.clients.values():
            client.start_channels()
            client.wait_for_ready(timeout=120)

    def execute(self, cells: dict[str, str], timeout: float = 120) -> dict[str, str]:
        """Run each learner's cell in its kernel, all at once; what each printed."""
        sent = {name: self.clients[name].execute(code) for name, code in cells.items()}
        return {name: self._printed(name, msg_id, timeout) for name, msg_id in sent.items()}

    def _printed(self, name: str, msg_id: str, timeout: float) -> str:
        printed = []
        deadline = time.monotonic() + timeout
        while True:
            message = self.clients[name].get_iopub_msg(timeout=deadline - time.monotonic())
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                printed.append(content["text"])
            elif kind == "error":
                printed.append(f"ERROR {content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(printed)

    def shutdown(self) -> None:
        for name, client in self.clients.items():
            client.stop_channels()
            self.managers[name].shutdown_kernel(now=True)


def learner_cell(room: ServedRoom, name: str, answer: str) -> str:
    """What a learner runs: join the room, lesson 00's ready(), an answer and three checks."""
    return "\n".join(
        [
            "import jax, numpy as np",
            "from course_lib.checks import check, join_room, ready",
            f'join_room("{room.url}", code="{room.code}", name="{name}")',
            "ready()",
            answer,
            *['check("01.count_params", count_params)'] * 3,
            "import time; time.sleep(1)  # the room's thread sends the last event",
        ]
    )


def simulate(room: ServedRoom) -> int:
    """27 learners as the learner's side would send; returns the number of events."""
    sent = 0
    for i, name in enumerate(SIMULATED):
        events: list[dict[str, Any]] = [room.event(name, "join")]
        if i % 9 != 8:  # three learners have not run lesson 00's check
            events.append(room.event(name, "ready", outcome="passed", jax="0.10.2", backend="cpu"))
        for exercise in ("01.count_params", "01.leaf_paths")[: 1 + i % 2]:
            events.append(room.event(name, exercise=exercise, outcome="incorrect", hint=1))
            events.append(room.event(name, exercise=exercise, outcome="passed", hint=0))
        for event in events:
            assert room.post(event)[0] == 201
        sent += len(events)
    return sent


def cell_text(page: Any, learner: str, column: int) -> str:
    row = page.locator("#grid tbody tr").filter(
        has=page.get_by_role("rowheader", name=learner, exact=True)
    )
    return str(row.locator("td").nth(column).inner_text())


def test_the_dashboard_follows_a_room_of_thirty(
    room: ServedRoom, browser: Any, screenshots: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    kernels = Kernels(list(KERNELS), tmp_path / "config")
    if os.name == "posix":  # no TCP port for another process to take first (kernel_support.py)
        assert {m.transport for m in kernels.managers.values()} == {"ipc"}
    try:
        simulated_events = simulate(room)
        context = browser.new_context(
            accept_downloads=True, viewport={"width": 1200, "height": 900}
        )
        page = context.new_page()
        page.set_default_timeout(ACTION_TIMEOUT_MS)
        dialogs: list[str] = []

        def refuse(dialog: Any) -> None:
            dialogs.append(dialog.message)
            dialog.dismiss()

        page.on("dialog", refuse)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(room.dashboard)
        expect(page.locator("#connection")).to_have_text("Live: updates as learners check.")
        expect(page.locator("#grid tbody tr")).to_have_count(len(SIMULATED))

        cells = {name: learner_cell(room, name, answer) for name, answer in KERNELS.items()}
        printed = kernels.execute(cells)
    finally:
        kernels.shutdown()
    for name, text in printed.items():
        assert f"Joined the room at {room.url} as '{name}'" in text, text
        assert "ERROR" not in text, text

    # The kernels' checks arrive live, without a reload.
    expect(page.locator("#grid tbody tr")).to_have_count(30)
    assert "passed, 3 tries" in cell_text(page, "Kernel Passes", 0)
    expect(page.locator("#needs-help")).to_contain_text(
        "Kernel Stuck · 01.count_params: 3 incorrect tries in a row"
    )
    assert "incorrect, 3 tries, hint 2" in cell_text(page, "Kernel Stuck", 0)
    assert "not attempted, 3 tries" in cell_text(page, "Kernel Starts", 0)
    expect(page.locator("#ready-count")).to_have_text("(27 of 30)")
    ready_row = page.locator("#ready tbody tr").filter(has_text="Kernel Stuck")
    expect(ready_row).to_contain_text("✓ ready")
    import jax

    expect(ready_row).to_contain_text(jax.__version__)

    # An event shows within a second of being stored.
    start = time.monotonic()
    room.post(room.event("Learner 00", exercise="01.is_node", outcome="incorrect", hint=2))
    learner_00 = page.locator("#grid tbody tr").filter(
        has=page.get_by_role("rowheader", name="Learner 00", exact=True)
    )
    expect(learner_00.locator("td").nth(2)).to_contain_text("✗ 1 h2", timeout=2_000)
    assert time.monotonic() - start < 1.5

    # The hostile names are text: no dialog, no element made from them.
    for name in (HOSTILE, HOSTILE_IMAGE):
        expect(page.get_by_role("rowheader", name=name, exact=True).first).to_be_visible()
    assert page.locator("main script, main img").count() == 0
    assert dialogs == [] and errors == []
    page.screenshot(path=str(screenshots / "room-dashboard.png"), full_page=True)

    # The export holds every event: the 27 learners', the kernels' (join, ready, 3 checks each),
    # and the one above.
    with page.expect_download() as download:
        page.get_by_role("link", name="Export every event (CSV)").click()
    saved = tmp_path / "events.csv"
    download.value.save_as(saved)
    with saved.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == simulated_events + 3 * 5 + 1
    assert {row["learner"] for row in rows} == set(SIMULATED) | set(KERNELS) | {"Learner 00"}
    assert any(row["learner"] == HOSTILE for row in rows)
    context.close()


def test_the_dashboard_works_from_the_keyboard(room: ServedRoom, browser: Any) -> None:
    from playwright.sync_api import expect

    room.post(room.event("Keys", exercise="02.sgd_step", outcome="passed", hint=0))
    page = browser.new_page()
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    page.goto(room.dashboard)
    expect(page.locator("#grid tbody tr").first).to_be_visible()
    stops = []
    for _ in range(5):
        page.keyboard.press("Tab")
        stops.append(
            page.evaluate(
                """() => {
                  const e = document.activeElement;
                  const style = getComputedStyle(e);
                  return [e.id || e.className || e.tagName, style.outlineStyle, style.outlineWidth];
                }"""
            )
        )
    assert [stop[0] for stop in stops] == ["skip", "lesson", "idle", "export", "scroll"]
    for name, outline, width in stops:
        assert outline == "solid" and width == "3px", (name, outline, width)
    # Back to the skip link; Enter on it lands on the needs-help heading.
    for _ in range(4):
        page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "help-heading"
    # Choosing a lesson by keyboard shows its exercises.
    page.focus("#lesson")
    page.select_option("#lesson", "02")
    expect(page.locator("#lesson-name")).to_have_text("lesson 02")
    expect(page.locator("#grid thead th").nth(1)).to_have_text("sgd_step")
    page.close()
