"""The workshop room's dashboard in Chromium, as an instructor and a helper use it with a class of
14 learners, 3 of them real learner processes (Python importing ``course_lib``, running
``join_room``, ``ready``, the real ``check`` and ``help_me``; far cheaper than kernels), two stuck
on one exercise with the same recognised mistake, one with a broken setup, one silent since they
joined 20 minutes ago, one ahead of the room and failing, one hand raised, one learner twice under
two names. The stuck and the hand lead the needs-help list, the silent learner comes last and
nobody merely working is on it; "Helped" clears an entry; a rename merges the duplicate once
confirmed in the page, a remove too, and Undo brings the removed back; nobody merged or removed
counts in the totals; the stuck exercise's top mistake shows with its count, its fix and its idea
(the projector view: count and idea, never the fix, and no name); a new hand is announced.
Screenshots at 1280x720 (projector view) and 1600 wide, light and dark. A hostile name is shown as
text and never run."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lab_browser import ACTION_TIMEOUT_MS
from room_support import ROOT, ServedRoom, served_room

from course_tools.room import RoomStore
from course_tools.room._events import CheckRun, Join

pytestmark = pytest.mark.browser

HOSTILE = "<img src=x onerror=alert(2)>"
LEARNER = """
import sys, time
from course_lib.checks import check, help_me, join_room, ready
join_room(sys.argv[1], code=sys.argv[2], name=sys.argv[3])
{body}
time.sleep(1.5)  # the room's thread sends the last event
"""
PROCESSES = {
    # name: (what the learner does, the environment's additions)
    "Pat Passes": (
        "import jax, numpy as np\nready()\n"
        "check('01.count_params', lambda t: sum(np.size(x) for x in jax.tree.leaves(t)))",
        {},
    ),
    "Sam Stuck": (
        "import jax\nready()\n"
        "for _ in range(4):\n    check('01.count_params', lambda t: len(jax.tree.leaves(t)))",
        {},
    ),
    "Bo Broken": ("ready()", {"JAX_PLATFORMS": "cuda"}),  # a backend this machine lacks
}
WORKING = ["Lee", "Max", "Noa", "Ola", HOSTILE]


@pytest.fixture(scope="module")
def room(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedRoom]:
    """A room whose file already holds the first 20 minutes of lesson 01: Sid joined, Lee ran
    the stub, and the room (a 30-minute pause, for these minutes) is still at work."""
    path = tmp_path_factory.mktemp("room") / "workshop.sqlite"
    store = RoomStore(path)
    earlier = time.time() - 20 * 60
    store.add(earlier, Join(learner="Sid"))
    store.add(
        earlier,
        CheckRun(learner="Lee", exercise="01.count_params", outcome="not_attempted", hint=0),
    )
    store.close()
    with served_room(path, "--rate", "100", "--idle-minutes", "30", "--gone-after", "600") as r:
        yield r


def run_learners(room: ServedRoom, config: Path) -> dict[str, str]:
    """The real learners, side by side, each in its own process and configuration folder; what
    each printed."""
    started = {}
    for name, (body, extra) in PROCESSES.items():
        env = {k: v for k, v in os.environ.items() if k not in ("CI", "COURSE_STRICT_CHECKS")}
        env.update(extra, XDG_CONFIG_HOME=str(config / name.split()[0]))
        script = LEARNER.format(body=body)
        started[name] = subprocess.Popen(
            [sys.executable, "-c", script, room.url, room.code, name],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    return {name: process.communicate(timeout=120)[0] for name, process in started.items()}


def simulate(room: ServedRoom, mistake: dict[str, str]) -> None:
    """The other 11, as the learner's side sends: Sue stuck like Sam, Ana ahead and failing, Hal
    with a hand up, Kim also joined as "Kim L", and five merely working (Sid, silent, sends
    nothing)."""
    check = "01.count_params"
    events = [
        room.event("Sue", exercise=check, outcome="incorrect", hint=h, **mistake) for h in (0, 1, 2)
    ]
    events += [
        room.event("Ana", exercise="03.conv1d", outcome="incorrect", hint=h % 3) for h in range(7)
    ]
    events += [
        room.event("Hal", exercise=check, outcome="incorrect", hint=0),
        room.event("Hal", "hand", text="lost in tree.map"),
    ]
    events += [
        room.event("Kim", "join"),
        room.event("Kim L", exercise=check, outcome="passed", hint=0),
    ]
    for i, name in enumerate(WORKING):
        if i % 2:
            events.append(room.event(name, exercise=check, outcome="incorrect", hint=0))
        events.append(room.event(name, exercise=check, outcome="passed", hint=0))
    for name in ("Sue", "Hal", "Kim", "Kim L", *WORKING[:-1]):
        events.append(room.event(name, "ready", outcome="passed", jax="0.10.2", backend="cpu"))
    for event in events:
        assert room.post(event)[0] == 201, event


def help_names(page: Any) -> list[str]:
    return [str(name) for name in page.locator("#needs-help li strong").all_inner_texts()]


def test_the_class_of_fourteen_on_the_dashboard(
    room: ServedRoom, browser: Any, screenshots: Path, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    printed = run_learners(room, tmp_path / "config")
    for name, text in printed.items():
        assert f"Joined the room at {room.url} as '{name}'" in text, text
        assert "Traceback" not in text, text
    # Sam's checks, without the heartbeats and check starts his kernel also sends (a busy machine
    # may send one after his last check).
    sam = [
        row
        for row in csv.DictReader(room.export_csv_lines())
        if row["learner"] == "Sam Stuck" and row["kind"] == "check"
    ]
    assert [row["outcome"] for row in sam] == ["incorrect"] * 4
    assert sam[-1]["mistake"] and sam[-1]["idea"], "the check names the mistake it recognised"
    fix, idea = sam[-1]["fix"], sam[-1]["idea"]
    assert fix, "the check sends the mistake's fix"
    simulate(room, {"mistake": sam[-1]["mistake"], "idea": idea, "fix": fix})

    context = browser.new_context(viewport={"width": 1280, "height": 720})
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
    expect(page.locator("#grid tbody tr")).to_have_count(14)

    # Bo's broken setup, named as one, then the hand, then the stuck (Sam, Sue, and Ana ahead of
    # the room), longest first, then Sid, silent since he joined; nobody merely working, nobody
    # silent for less than the guide's minutes.
    expect(page.locator("#needs-help li")).to_have_count(6)
    assert help_names(page) == ["Bo Broken", "Hal", "Sam Stuck", "Sue", "Ana", "Sid"]
    expect(page.locator("#needs-help li").first).to_contain_text("Bo Broken · setup failed: ")
    expect(page.locator("#needs-help li").nth(1)).to_contain_text(
        "raised a hand “lost in tree.map”"
    )
    expect(page.locator("#needs-help li").nth(2)).to_contain_text(
        f"01.count_params: 4 incorrect tries in a row, misses: {idea} — fix: {fix}"
    )
    expect(page.locator("#needs-help li").nth(4)).to_contain_text(
        "03.conv1d: 7 incorrect tries in a row"
    )
    expect(page.locator("#needs-help li").nth(5)).to_contain_text(
        "01.count_params: no check in lesson 01 yet, past the guide's 8 minutes · 20 min"
    )
    # The stuck exercise's common mistake, named by its fix, with its count and the idea.
    row = page.locator("#exercises tbody tr").filter(has_text="01.count_params")
    expect(row).to_contain_text(f"2 learners: {fix} — idea: {idea[:40]}")
    # A broken setup is not an absent learner.
    expect(page.locator("#ready-count")).to_have_text("(10 of 14 ready, 1 setup failed)")
    expect(page.locator("#not-ready li").first).to_contain_text("Bo Broken · ✗ setup failed: ")
    # Needs help and ready are above the fold of a 1280x720 projector.
    for selector in ("#needs-help", "#not-ready"):
        box = page.locator(selector).bounding_box()
        assert box["y"] + box["height"] <= 720, (selector, box)
    # A hostile name is text: no dialog, no element made from it.
    expect(page.get_by_role("rowheader", name=HOSTILE, exact=True).first).to_be_visible()
    assert page.locator("main img, main script").count() == 0

    # "Helped" takes Sue off the list; a rename into a name in the room merges the two, once
    # confirmed in the page; the merged name counts in no total.
    page.get_by_role("button", name="Mark Sue helped").click()
    expect(page.locator("#needs-help li")).to_have_count(5)
    page.select_option("#learner", "Kim")
    page.fill("#new-name", "Kim L")
    page.get_by_role("button", name="Rename or merge").click()
    expect(page.locator("#confirm-said")).to_have_text(
        "Merge Kim into Kim L? One learner then, under Kim L."
    )
    expect(page.get_by_role("button", name="Rename or merge")).to_be_hidden()
    page.get_by_role("button", name="Confirm merge into Kim L").click()
    expect(page.locator("#grid tbody tr")).to_have_count(13)
    expect(page.locator("#ready-count")).to_have_text("(9 of 13 ready, 1 setup failed)")
    # Remove asks too; Cancel does nothing; a removed learner counts nowhere; Undo brings them
    # back as they were.
    page.select_option("#learner", "Ola")
    page.get_by_role("button", name="Remove", exact=True).click()
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Remove", exact=True).click()
    page.get_by_role("button", name="Confirm remove Ola").click()
    expect(page.locator("#grid tbody tr")).to_have_count(12)
    expect(page.locator("#ready-count")).to_have_text("(8 of 12 ready, 1 setup failed)")
    expect(page.locator("#exercises tbody tr").first).to_contain_text("6 of 12")
    page.get_by_role("button", name="Undo: remove Ola").click()
    expect(page.locator("#ready-count")).to_have_text("(9 of 13 ready, 1 setup failed)")
    expect(page.get_by_role("button", name="Undo: merge Kim into Kim L")).to_be_visible()
    # A new hand is said where a screen reader hears it, in the title and by a marked entry.
    assert room.post(room.event("Lee", "hand", text="how do I"))[0] == 201
    expect(page.locator("#hand-alert")).to_have_text("Hand up: Lee (01.count_params).")
    expect(page).to_have_title("(2 hands up) Workshop room · pytree-course")
    expect(page.locator("#needs-help li.fresh")).to_contain_text("new Lee")
    # The block's clock says what it counts from; the instructor can start it now.
    expect(page.locator("#block")).to_contain_text("since the first check after a pause (")
    page.get_by_role("button", name="Start a block").click()
    expect(page.locator("#block")).to_contain_text(
        "Exercise block: under a minute, since you started it ("
    )

    page.evaluate("window.scrollTo(0, 0)")
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.set_viewport_size({"width": 1600, "height": 900})
        page.screenshot(path=str(screenshots / f"room-dashboard-1600-{scheme}.png"), full_page=True)
        page.set_viewport_size({"width": 1280, "height": 720})
        page.screenshot(path=str(screenshots / f"room-dashboard-1280x720-{scheme}.png"))

    # The projector view: per exercise, passed and the room's mistake; the ready count; the
    # block's clock; no name and no learner's words anywhere on it.
    page.get_by_role("button", name="Projector view (no names)").click()
    shown = page.locator("body").inner_text()
    for name in ["Hal", "Sam Stuck", "Ana", "Bo Broken", "Kim L", *WORKING]:
        assert name not in shown, name
    assert "lost in tree.map" not in shown and fix not in shown
    assert f"2 learners — idea: {idea[:40]}" in shown and "Exercise block:" in shown
    expect(page.locator("#ready-count")).to_be_visible()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.screenshot(path=str(screenshots / f"room-projector-1280x720-{scheme}.png"))
    # A reload (or a browser restoring its tabs) keeps the projector view: no names come back.
    page.reload()
    expect(page.get_by_text("2 learners — idea:").first).to_be_visible()
    expect(page.locator("#projector")).to_have_attribute("aria-pressed", "true")
    shown = page.locator("body").inner_text()
    assert not [name for name in ["Hal", "Sam Stuck", "Ana", *WORKING] if name in shown]
    assert dialogs == [] and errors == []

    # Every action is an event in the export, with whose dashboard took it; nothing was deleted.
    rows = list(csv.DictReader(room.export_csv_lines()))
    actions = [
        (row["learner"], row["kind"], row["actor"])
        for row in rows
        if row["kind"] in ("helped", "merge", "remove", "undo", "block")
    ]
    assert actions == [
        ("Sue", "helped", "instructor"),
        ("Kim", "merge", "instructor"),
        ("Ola", "remove", "instructor"),
        ("Ola", "undo", "instructor"),
        ("", "block", "instructor"),
    ]
    assert any(row["learner"] == "Kim" and row["kind"] == "join" for row in rows)
    context.close()


def test_the_helpers_link_marks_helped_and_nothing_more(room: ServedRoom, browser: Any) -> None:
    from playwright.sync_api import expect

    room.post(room.event("Hugo", "hand"))
    page = browser.new_page()
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    page.goto(room.dashboard.replace(room.token, room.helper_token))
    expect(page.locator("#role")).to_have_text("(helpers' view)")
    expect(page.get_by_role("link", name="Export every event (CSV)")).to_be_hidden()
    expect(page.get_by_role("button", name="Rename or merge")).to_be_hidden()
    # A helper's actions carry their name, asked once and kept in the browser.
    page.get_by_role("button", name="Mark Hugo helped").click()
    expect(page.locator("#action-said")).to_have_text(
        "Not done: type your name at the top of the page first."
    )
    page.get_by_label("Your name (on your claims and in the export)").fill("Alex")
    page.get_by_label("Your name (on your claims and in the export)").press("Enter")
    page.get_by_label("Your name (on your claims and in the export)").blur()
    page.get_by_role("button", name="Mark Hugo helped").click()
    expect(page.get_by_role("button", name="Mark Hugo helped")).to_have_count(0)
    page.reload()
    expect(page.get_by_label("Your name (on your claims and in the export)")).to_have_value("Alex")
    helped = [row for row in room.exported() if row["kind"] == "helped"]
    assert helped[-1]["actor"] == "helper:Alex"
    # A helper picks the lesson their own screen shows.
    page.select_option("#lesson", "03")
    expect(page.locator("#lesson-name")).to_have_text("lesson 03")
    # On a phone, one column: who is ready comes under who needs help.
    page.set_viewport_size({"width": 390, "height": 844})
    help_box = page.locator("#help-heading").bounding_box()
    ready_box = page.locator("#ready-heading").bounding_box()
    assert ready_box["y"] > help_box["y"] + help_box["height"], (help_box, ready_box)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    page.close()


def test_the_dashboard_works_from_the_keyboard(room: ServedRoom, browser: Any) -> None:
    from playwright.sync_api import expect

    room.post(room.event("Keys", exercise="02.sgd_step", outcome="passed", hint=0))
    # A hand of its own, whichever tests ran before in this room; lowered at the end.
    room.post(room.event("Keys", "hand", text="which key"))
    page = browser.new_page()
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    page.goto(room.dashboard)
    expect(page.locator("#grid tbody tr").first).to_be_visible()
    stops = []
    for _ in range(4):
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
    # The count of hands up, when there are, comes right after the skip link.
    assert [stop[0] for stop in stops] == ["skip", "hands-up", "start-block", "projector"]
    for name, outline, width in stops:
        assert outline == "solid" and width == "3px", (name, outline, width)
    # Back to the skip link; Enter on it lands on the needs-help heading.
    for _ in range(3):
        page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "help-heading"
    # Choosing a lesson by keyboard shows its exercises.
    page.focus("#lesson")
    page.select_option("#lesson", "02")
    expect(page.locator("#lesson-name")).to_have_text("lesson 02")
    expect(page.locator("#grid thead th").nth(1)).to_have_text("sgd_step")
    # Lesson 02's six exercises: each row's Names… button still shows at 1280 px, unscrolled.
    assert page.viewport_size["width"] == 1280
    box = page.get_by_role("button", name="Names… (rename, merge or remove Keys)").bounding_box()
    shown = page.locator("#grid").locator("xpath=..").bounding_box()
    assert box["x"] + box["width"] <= min(1280, shown["x"] + shown["width"]), (box, shown)
    # The projector view's button says whether it is on.
    page.focus("#projector")
    page.keyboard.press("Enter")
    expect(page.locator("#projector")).to_have_attribute("aria-pressed", "true")
    page.close()
    room.post(room.event("Keys", "done"))


def test_the_dashboard_and_join_page_pass_axe_in_both_schemes(
    room: ServedRoom, browser: Any
) -> None:
    from axe import axe_problems
    from playwright.sync_api import expect

    room.post(room.event("Axel", exercise="01.count_params", outcome="incorrect", hint=1))
    room.post(room.event("Axel", "hand", text="help"))
    room.post(room.event("Rea", "ready", outcome="error", jax="", backend="", reason="E: x"))
    context = browser.new_context(bypass_csp=True)  # axe is injected as a script of the page's
    page = context.new_page()
    page.set_default_timeout(ACTION_TIMEOUT_MS)
    found = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.goto(room.dashboard)
        expect(page.locator("#needs-help li strong").first).to_be_visible()
        found[f"dashboard, {scheme}"] = axe_problems(page)
        page.get_by_role("button", name="Projector view (no names)").click()
        found[f"projector view, {scheme}"] = axe_problems(page)
        page.goto(room.url + "/")
        found[f"join page, {scheme}"] = axe_problems(page)
    assert {view: problems for view, problems in found.items() if problems} == {}
    context.close()


LONG_FIX = (
    "Add up leaf.size over jax.tree.leaves(tree), which skips the None subtrees and counts every "
    "entry of every array, and give a Python number a size of one: np.size(leaf) does both."
)


def test_needs_help_fits_one_line_entries_above_the_fold_and_who_left_counts_nowhere(
    browser: Any, tmp_path: Path, screenshots: Path
) -> None:
    """Seven stuck learners, each entry one line at 1280x720 (the long fix cut on screen, whole in
    the page and its tooltip), Ready beside them; a learner helped who fails again is back with
    "helped ... ago"; one who left is marked and counts in no total."""
    from playwright.sync_api import expect

    check = "01.count_params"
    stuck = [f"Stuck {i}" for i in range(7)]
    told: dict[str, Any] = {
        "hint": 1,
        "mistake": f"{check}/0badf00d",
        "idea": "A parameter is one entry.",
        "fix": LONG_FIX,
    }
    with served_room(tmp_path / "room.sqlite", "--rate", "100") as room:
        events = [
            room.event(name, "ready", outcome="passed", jax="0.10.2", backend="cpu")
            for name in stuck
        ]
        events += [
            room.event("Unready", "join"),
            room.event("Lou", "ready", outcome="passed", jax="0.10.2", backend=""),
        ]
        for name in stuck:
            events += [room.event(name, exercise=check, outcome="incorrect", **told)] * 3
        events += [
            room.event("Lou", exercise=check, outcome="passed", hint=0),
            room.event("Lou", "leave"),
        ]
        for event in events:
            assert room.post(event)[0] == 201, event
        request = urllib.request.Request(
            f"{room.url}/api/actions",
            data=json.dumps({"kind": "helped", "name": "Stuck 0"}).encode(),
            headers={"X-Room-Token": room.token},
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert reply.status == 201
        for _ in range(3):
            assert (
                room.post(room.event("Stuck 0", exercise=check, outcome="error", **told))[0] == 201
            )

        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.set_default_timeout(ACTION_TIMEOUT_MS)
        page.goto(room.dashboard)
        entries = page.locator("#needs-help li")
        expect(entries).to_have_count(7)
        # Helped, then failing the same exercise again: back at once, first, saying so.
        expect(entries.first).to_contain_text(
            "Stuck 0 · 01.count_params: helped just now, failing again"
        )
        expect(entries.first.locator(".since")).to_have_text("\u00a0· last just now")
        # One line each, every one of them and its Helped button in view above the fold.
        line = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight)")
        listed = page.locator("#needs-help").bounding_box()
        for i in range(7):
            box = entries.nth(i).bounding_box()
            assert box["height"] < 1.5 * line, (i, box)
            assert box["y"] + box["height"] <= min(720, listed["y"] + listed["height"]), (i, box)
            button = entries.nth(i).get_by_role("button", name=re.compile("helped")).bounding_box()
            assert button["x"] + button["width"] <= box["x"] + box["width"] + 1, (i, button)
        page.screenshot(path=str(screenshots / "room-needs-help-1280x720.png"))
        ready = page.locator("#not-ready").bounding_box()
        assert ready["y"] + ready["height"] <= 720, ready
        # The fix is cut on screen only: whole in the page (a screen reader reads it once: no
        # tooltip repeats it), and on screen while the entry's button has the focus.
        what = entries.nth(1).locator(".what")
        expect(what).to_have_text(
            "Stuck 1\u00a0· 01.count_params: 3 incorrect tries in a row, misses: "
            f"{told['idea']} — fix: {LONG_FIX}"
        )
        expect(entries.nth(1)).not_to_have_attribute("title", re.compile("."))
        # Cut where the fix is: the name and why show whole.
        cut = "e => e.getBoundingClientRect().right - e.parentElement.getBoundingClientRect().right"
        assert page.evaluate(cut, what.locator(".fix").element_handle()) > 0
        ends = what.evaluate(
            "e => { const r = document.createRange(); r.setStart(e, 0); r.setEnd(e, 2);"
            " return r.getBoundingClientRect().right - e.getBoundingClientRect().right; }"
        )
        assert ends < 0, ends
        whole = "e => e.scrollWidth <= e.clientWidth"
        assert not what.evaluate(whole)
        entries.nth(1).get_by_role("button", name=re.compile("helped")).focus()
        assert what.evaluate(whole)
        entries.nth(1).get_by_role("button", name=re.compile("helped")).blur()
        # A grid cell's tooltip is the mistake's fix, not its id.
        row = page.get_by_role("row").filter(has=page.get_by_role("rowheader", name="Stuck 1"))
        expect(row.locator("td").first).to_have_attribute("title", LONG_FIX)
        # Lou left: marked so, and in no total until their next event.
        expect(page.get_by_role("rowheader", name="Lou · left")).to_be_visible()
        expect(page.locator("#not-ready li").last).to_have_text("Lou · left the room")
        expect(page.locator("#ready-count")).to_have_text("(7 of 8 ready, 1 left)")
        expect(page.locator("#exercises tbody tr").first).to_contain_text("0 of 8")
        assert (
            room.post(room.event("Lou", exercise="01.leaf_paths", outcome="incorrect", hint=0))[0]
            == 201
        )
        expect(page.locator("#ready-count")).to_have_text("(8 of 9 ready)")
        expect(page.locator("#exercises tbody tr").first).to_contain_text("1 of 9")
        page.close()


ALIVE = """
import sys, time
from course_lib.checks import _room, check, join_room
_room.BEAT_S = _room.START_AFTER_S = 0.5  # a kernel's 45 s and 5 s, scaled for the test
join_room(sys.argv[1], code=sys.argv[2], name=sys.argv[3])
def right(tree):
    import jax, numpy as np
    return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))
def hangs(tree):
    time.sleep(3600)
check("01.count_params", hangs if sys.argv[4] == "hangs" else right)
time.sleep(3600)  # a kernel left open
"""
KERNELS = {"Finn": "killed", "Hana": "hangs", "Sam": "laptop 1", "Sam ": "laptop 2", "Pat": ""}


def test_fourteen_with_two_helpers_a_killed_kernel_a_hung_check_and_two_sams(
    browser: Any, tmp_path: Path
) -> None:
    """Five real learner processes (heartbeats and a check's start scaled to half a second, the
    room's thresholds to seconds): Finn's kernel killed with SIGKILL, Hana's check hanging, two
    learners named Sam on two laptops (two configuration folders), Pat working; nine more
    posted, Ivy with a hand up. Two helpers, each named once in their page, claim learners: a
    claim on another's asks before it takes over, and every screen shows it. The hand count
    stays in view wherever the page is scrolled; a learner's row leads to rename, merge and
    remove; the join page fits the projector's 1280x720."""
    from playwright.sync_api import expect

    with served_room(
        tmp_path / "room.sqlite", "--host", "0.0.0.0", "--rate", "100",
        "--running-after", "3", "--gone-after", "4",
    ) as room:  # fmt: skip
        kernels = {}
        for folder, (name, what) in enumerate(KERNELS.items()):
            env = {k: v for k, v in os.environ.items() if k not in ("CI", "COURSE_STRICT_CHECKS")}
            env["XDG_CONFIG_HOME"] = str(tmp_path / f"laptop-{folder}")
            kernels[name] = subprocess.Popen(
                [sys.executable, "-c", ALIVE, room.url, room.code, name.strip(), what],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        try:
            others = ["Ada", "Bob", "Cy", "Dee", "Eli", "Fay", "Gus", "Ivy", "Jo"]
            for i, name in enumerate(others):
                outcome = "incorrect" if i % 3 == 0 else "passed"
                event = room.event(name, exercise="01.count_params", outcome=outcome, hint=0)
                assert room.post(event)[0] == 201
            assert room.post(room.event("Ivy", "hand", text="what is a leaf"))[0] == 201

            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.set_default_timeout(ACTION_TIMEOUT_MS)
            page.goto(room.dashboard)
            expect(page.locator("#grid tbody tr")).to_have_count(14, timeout=60_000)
            grid = page.locator("#grid")
            expect(grid.get_by_role("rowheader", name="Sam (2)", exact=True)).to_be_visible()
            kernels["Finn"].send_signal(signal.SIGKILL)
            killed = time.monotonic()
            entries = page.locator("#needs-help li")
            expect(entries.filter(has_text="Finn")).to_contain_text(
                "kernel gone? last seen just now", timeout=30_000
            )
            assert time.monotonic() - killed < 20
            expect(entries.filter(has_text="Hana")).to_contain_text(
                "Hana · 01.count_params: check running under a minute"
            )
            assert help_names(page)[:3] == ["Ivy", "Hana", "Finn"]

            helpers = {}
            for helper in ("Alex", "Bea"):
                helpers[helper] = browser.new_page(viewport={"width": 1280, "height": 720})
                helpers[helper].set_default_timeout(ACTION_TIMEOUT_MS)
                helpers[helper].goto(room.dashboard.replace(room.token, room.helper_token))
                name_field = helpers[helper].get_by_label(
                    "Your name (on your claims and in the export)"
                )
                name_field.fill(helper)
                name_field.press("Tab")
            helpers["Alex"].get_by_role("button", name="On my way: Hana").click()
            page.bring_to_front()
            expect(entries.filter(has_text="Hana")).to_contain_text(
                "Alex is on the way (under a minute)"
            )
            bea = helpers["Bea"]
            bea.bring_to_front()
            bea.get_by_role("button", name="Take over from Alex: Hana").click()
            expect(entries.filter(has_text="Hana")).to_contain_text("Alex is on the way")
            bea.get_by_role("button", name="Confirm: take over from Alex: Hana").click()
            bea.get_by_role("button", name="On my way: Finn").click()
            page.bring_to_front()  # a page in the background draws nothing until it is seen
            expect(page.locator("#claims")).to_have_text(
                "On the way: Bea to Finn (under a minute), Bea to Hana (under a minute)"
            )
            # A claim has a line of its own under the entry: why the learner is listed shows
            # whole beside it.
            hana = entries.filter(has_text="Hana")
            assert hana.locator(".what").evaluate("e => e.scrollWidth <= e.clientWidth")
            what, claim = (hana.locator(part).bounding_box() for part in (".what", ".claim"))
            assert claim["y"] >= what["y"] + what["height"] - 1, (what, claim)
            helpers["Alex"].bring_to_front()
            alex_sees = helpers["Alex"].locator("#needs-help li").filter(has_text="Hana")
            expect(alex_sees).to_contain_text("Bea is on the way")
            helpers["Alex"].get_by_role("button", name="Mark Ivy helped").click()
            page.bring_to_front()
            expect(page.locator("#hands-up")).to_be_hidden()

            # A new hand stays in view wherever the page is scrolled.
            assert room.post(room.event("Jo", "hand"))[0] == 201
            page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
            expect(page.locator("#hands-up")).to_have_text("1 hand up: go to Needs help")
            box = page.locator("#hands-up").bounding_box()
            assert 0 <= box["y"] and box["y"] + box["height"] <= 720, box
            # Rename, merge and remove are reached from the learner's row.
            page.get_by_role("button", name="Names… (rename, merge or remove Gus)").click()
            assert page.evaluate("document.activeElement.id") == "new-name"
            expect(page.locator("#learner")).to_have_value("Gus")
            # The join page, projected from this machine, fits 1280x720 and says nothing of
            # localhost.
            port = room.url.rsplit(":", 1)[1]
            page.goto(f"http://localhost:{port}/")
            assert page.evaluate("document.documentElement.scrollHeight") <= 720
            expect(page.get_by_text("help_me(")).to_be_in_viewport()
            expect(page.locator(".warning")).to_have_count(0)

            rows = room.exported()
            claims = [(row["learner"], row["actor"]) for row in rows if row["kind"] == "claim"]
            assert claims == [
                ("Hana", "helper:Alex"),
                ("Hana", "helper:Bea"),
                ("Finn", "helper:Bea"),
            ]
            assert len({row["learner_key"] for row in rows if row["learner"] == "Sam"}) == 2
        finally:
            for process in kernels.values():
                process.kill()
        said = {name: process.communicate(timeout=30)[0] for name, process in kernels.items()}
    # Whichever Sam joined second (the two start together) is told, and only they are.
    taken = "Sam is taken in this room: you are Sam (2); join_room(..., name=...) to choose"
    assert sorted(taken in said[name] for name in ("Sam", "Sam ")) == [False, True], said
