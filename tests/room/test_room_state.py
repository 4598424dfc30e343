"""What the dashboard shows, worked out from events: the grid's cells, where the room is stuck, who
needs help and who is ready. Pure computation, in process."""

from __future__ import annotations

import csv
import io
import itertools
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_tools.room import Room, RoomState, RoomStore
from course_tools.room import main as room_main
from course_tools.room._app import Limits, Refused, validate
from course_tools.room._events import KINDS, CheckRun, Event, Join, Ready
from course_tools.room._state import ExerciseInfo
from course_tools.room._store import PrivateFileError, write_private

EXERCISES = {
    e.id: e
    for e in (
        ExerciseInfo("01.a", "A", 2, minutes=10),
        ExerciseInfo("01.b", "B", 1, minutes=15),
        ExerciseInfo("02.c", "C", 3, minutes=10),
    )
}
_ids = itertools.count(1)
MINUTE = 60.0


def check(
    name: str, exercise: str, outcome: str, at: float, hint: int = 0, mistake: str | None = None
) -> Event:
    idea = f"the idea behind {mistake}" if mistake else None
    fix = f"the fix for {mistake}" if mistake else None
    return CheckRun(
        id=next(_ids),
        received=at,
        learner=name,
        exercise=exercise,
        outcome=outcome,
        hint=hint,
        mistake=mistake,
        idea=idea,
        fix=fix,
    )


def event(name: str, kind: str, at: float, **fields: Any) -> Event:
    """An event of ``kind`` with its own ``fields``, numbered in order."""
    return KINDS[kind](id=next(_ids), received=at, learner=name, **fields)


def state_of(*events: Event, idle_minutes: float = 5) -> RoomState:
    state = RoomState(EXERCISES, idle_minutes)
    for one in events:
        state.apply(one)
    return state


def listed(state: RoomState, now: float) -> list[tuple[str, str]]:
    return [(row["name"], row["kind"]) for row in state.needs_help(now)]


def test_a_cell_holds_the_latest_outcome_its_tries_the_hint_seen_and_the_mistake() -> None:
    state = state_of(
        check("Ada", "01.a", "incorrect", 10, hint=1, mistake="adds_step"),
        check("Ada", "01.a", "incorrect", 20, hint=2, mistake="adds_step"),
        check("Ada", "01.b", "not_attempted", 25),
        check("Ada", "01.b", "error", 26, hint=0),
    )
    cells = state.learners["Ada"].view()["cells"]
    named = ("outcome", "tries", "hint", "mistake", "fix")
    assert cells == {
        "01.a": dict(
            zip(named, ["incorrect", 2, 2, "adds_step", "the fix for adds_step"], strict=True)
        ),
        "01.b": dict(zip(named, ["error", 2, 0, None, None], strict=True)),
    }
    state.apply(check("Ada", "01.a", "passed", 30))
    passed = state.learners["Ada"].view()["cells"]["01.a"]
    assert passed == dict(zip(named, ["passed", 3, 0, None, None], strict=True))
    assert state.lesson == "01"


def test_three_failed_in_a_row_needs_help_and_a_pass_ends_it() -> None:
    two = [check("Ada", "01.a", "incorrect", t, hint=1) for t in (10, 20)]
    assert state_of(*two).needs_help(now=30) == []
    three = [*two, check("Ada", "01.a", "error", 30, hint=2)]
    assert state_of(*three).needs_help(now=40) == [
        {
            "name": "Ada",
            "kind": "streak",
            "exercise": "01.a",
            "why": "3 failed tries (incorrect or error) in a row",
            "since": 10,
            "helped": 0.0,
            "idea": "",
            "fix": "",
            "last": 30,
            "claim": None,
        }
    ]
    four = [*two, check("Ada", "01.a", "incorrect", 30, hint=2)]
    assert state_of(*four).needs_help(now=40)[0]["why"] == "3 incorrect tries in a row"
    # Not attempted (the stub run again) neither breaks nor extends the streak.
    broken = [*two, check("Ada", "01.a", "not_attempted", 25), check("Ada", "01.a", "passed", 30)]
    assert state_of(*broken).needs_help(now=40) == []


def test_a_learner_ahead_of_the_room_and_failing_is_listed() -> None:
    state = state_of(
        *[check(name, "01.a", "incorrect", 1) for name in ("Bob", "Cy", "Dee")],
        *[check("Ada", "02.c", "incorrect", t) for t in range(2, 9)],
    )
    assert state.lesson == "01"
    assert listed(state, now=10) == [("Ada", "streak")]
    assert state.needs_help(now=10)[0]["why"] == "7 incorrect tries in a row"


def test_working_is_not_silence_and_over_time_counts_from_the_learners_own_start() -> None:
    state = state_of(
        check("Ada", "01.a", "passed", 0),  # the room's first check
        check("Cy", "01.a", "passed", 1 * MINUTE),
        check("Cy", "01.b", "passed", 2 * MINUTE),  # Cy has done lesson 01
        check("Bob", "01.a", "incorrect", 8 * MINUTE),  # Bob began 01 later, on his own time
        check("Dee", "01.a", "passed", 14 * MINUTE),
        idle_minutes=10,  # with a check at least every 10 minutes the room is at work
    )
    # At 15 minutes: Ada has been on 01.b for 15 (the guide gives it 15): not yet. Bob has been
    # on 01.a for 7 of its 10. Nobody merely working is listed.
    assert listed(state, now=15 * MINUTE) == []
    # At 18.5 minutes: Bob is past 10 minutes from his first check on 01.a; Ada past 15 on 01.b.
    rows = state.needs_help(now=18.5 * MINUTE)
    assert [(r["name"], r["exercise"], r["why"]) for r in rows] == [
        ("Ada", "01.b", "past the guide's 15 minutes for it"),
        ("Bob", "01.a", "past the guide's 10 minutes for it"),
    ]
    # Nobody checked in the last 10 minutes: a lesson being taught, not stuck learners.
    assert state.needs_help(now=30 * MINUTE) == []


def test_an_optional_exercise_left_undone_is_not_time_over() -> None:
    """The guide leaves an optional exercise to fast finishers: skipping it, or having done every
    core one, is not being behind."""
    exercises = {
        "01.a": ExerciseInfo("01.a", "A", 2, minutes=10),
        "01.extra": ExerciseInfo("01.extra", "Extra", 1, minutes=4, optional=True),
        "01.b": ExerciseInfo("01.b", "B", 1, minutes=15),
    }
    state = RoomState(exercises, idle_minutes=10)
    for one in [
        check("Ada", "01.a", "passed", 0),  # then on 01.b, skipping the optional exercise
        check("Cy", "01.a", "passed", 0),
        check("Cy", "01.b", "passed", 2 * MINUTE),  # every core exercise done
        check("Dee", "01.a", "passed", 9 * MINUTE),  # the room still at work
    ]:
        state.apply(one)
    assert listed(state, now=10 * MINUTE) == []
    rows = state.needs_help(now=15.5 * MINUTE)
    assert [(r["name"], r["exercise"]) for r in rows] == [("Ada", "01.b")]


def test_after_a_pause_over_time_counts_from_the_rooms_return_to_work() -> None:
    state = state_of(
        check("Ada", "01.a", "passed", 0),
        check("Bob", "01.a", "passed", 0),
        check("Bob", "01.b", "passed", 45 * MINUTE),  # 45 minutes of teaching, then exercises
    )
    assert listed(state, now=46 * MINUTE) == []
    assert listed(state, now=(45 + 16) * MINUTE) == []  # nobody checked for 5 minutes
    for minute in range(60, 76, 3):  # the room at work again from minute 60
        state.apply(check("Bob", "02.c", "passed", minute * MINUTE))
    assert listed(state, now=74 * MINUTE) == []  # Ada: 14 of 01.b's 15 since the room came back
    assert listed(state, now=75.5 * MINUTE) == [("Ada", "over_time")]


def test_a_raised_hand_leads_and_stays_until_lowered_passed_or_helped() -> None:
    state = state_of(
        *[check("Bob", "01.a", "incorrect", t) for t in (1, 2, 3)],
        check("Ada", "01.b", "incorrect", 4),
        event("Ada", "hand", 5, text="lost in tree.map"),
    )
    rows = state.needs_help(now=6)
    assert [(r["name"], r["kind"], r["exercise"]) for r in rows] == [
        ("Ada", "hand", "01.b"),
        ("Bob", "streak", "01.a"),
    ]
    assert rows[0]["text"] == "lost in tree.map" and rows[0]["why"] == "raised a hand"
    state.apply(event("Ada", "done", 7))
    assert listed(state, now=8) == [("Bob", "streak")]
    state.apply(event("Ada", "hand", 9))
    state.apply(check("Ada", "01.a", "passed", 10))  # another exercise: the hand stays
    assert listed(state, now=11)[0] == ("Ada", "hand")
    state.apply(check("Ada", "01.b", "passed", 12))
    assert listed(state, now=13) == [("Bob", "streak")]


def test_helped_clears_an_entry_until_the_next_hand_or_a_new_streak_counted_from_the_help() -> None:
    state = state_of(
        *[check("Bob", "01.a", "incorrect", t * MINUTE) for t in range(6)],
        event("Ada", "hand", 4),
    )
    assert state.needs_help(now=6 * MINUTE)[1]["why"] == "6 incorrect tries in a row"
    state.apply(event("Bob", "helped", 7 * MINUTE))
    state.apply(event("Ada", "helped", 7 * MINUTE))
    assert listed(state, now=8 * MINUTE) == []
    state.apply(event("Ada", "hand", 8 * MINUTE))
    # On another exercise than the one he was helped with, Bob's streak counts from the help.
    for t in (9, 10):
        state.apply(check("Bob", "01.b", "incorrect", t * MINUTE))
    assert listed(state, now=11 * MINUTE) == [("Ada", "hand")]
    state.apply(check("Bob", "01.b", "incorrect", 12 * MINUTE))
    bob = state.needs_help(now=13 * MINUTE)[1]
    assert (bob["name"], bob["why"]) == ("Bob", "3 incorrect tries in a row")
    assert (bob["since"], bob["last"], bob["helped"]) == (9 * MINUTE, 12 * MINUTE, 7 * MINUTE)
    assert state.learners["Bob"].cells["01.a"].tries == 6  # the grid still counts every try


def test_a_learner_helped_who_fails_that_exercise_again_returns_at_once() -> None:
    state = state_of(
        *[check("Bo", "01.a", "incorrect", t * MINUTE) for t in range(3)],
        event("Bo", "helped", 4 * MINUTE),
        check("Bo", "01.a", "incorrect", 8 * MINUTE, mistake="adds_step"),
    )
    (row,) = state.needs_help(now=9 * MINUTE)
    assert (row["name"], row["kind"], row["why"]) == ("Bo", "again", "failing again")
    assert (row["helped"], row["since"], row["fix"]) == (
        4 * MINUTE,
        8 * MINUTE,
        "the fix for adds_step",
    )
    state.apply(check("Bo", "01.a", "passed", 10 * MINUTE))
    assert listed(state, now=11 * MINUTE) == []
    # Ranked right after the hands: a learner helped once already waits least.
    state.apply(check("Bo", "01.a", "error", 12 * MINUTE))
    for t in (1, 2, 3):
        state.apply(check("Cy", "01.a", "incorrect", t * MINUTE))
    state.apply(event("Dee", "hand", 13 * MINUTE))
    assert listed(state, now=14 * MINUTE) == [("Dee", "hand"), ("Bo", "again"), ("Cy", "streak")]


def test_a_claim_shows_who_is_on_the_way_until_helped_or_its_minutes_pass() -> None:
    state = state_of(
        *[check(name, "01.a", "incorrect", t) for name in ("Ada", "Bob") for t in (1, 2, 3)],
        event("Ada", "claim", 60.0, actor="helper:Alex"),
        event("Bob", "claim", 70.0, actor="instructor"),
    )
    claims = {row["name"]: row["claim"] for row in state.needs_help(now=100.0)}
    assert claims == {
        "Ada": {"by": "Alex", "since": 60.0},
        "Bob": {"by": "the instructor", "since": 70.0},
    }
    assert state.summary(now=100.0)["claims"] == claims
    state.apply(event("Ada", "helped", 120.0, actor="helper:Alex"))
    assert state.claims(now=130.0) == {"Bob": {"by": "the instructor", "since": 70.0}}
    assert state.claims(now=70.0 + state.claim_minutes * 60 + 1) == {}


@given(st.lists(st.tuples(st.sampled_from(["Sam", "Sam (2)", "Ana"]), st.sampled_from("xyz"))))
def test_learners_who_give_one_name_from_two_keys_stay_two(sent: list[tuple[str, str]]) -> None:
    state = RoomState(EXERCISES)
    for name, key in sent:
        state.apply(event(name, "join", 1.0, learner_key=key * 8))
    shown = {
        (name, key): state.shown_name(event(name, "join", 1.0, learner_key=key * 8))
        for name, key in sent
    }
    for one, other in itertools.combinations(set(sent), 2):
        if one[1] != other[1]:  # two keys: two learners, whatever names they gave
            assert shown[one] != shown[other]
    assert set(shown.values()) == set(state.learners)
    again = RoomState(EXERCISES)
    again.replay(event(name, "join", 1.0, learner_key=key * 8) for name, key in sent)
    assert sorted(again.learners) == sorted(state.learners)


def test_the_second_sam_is_sam_2_and_each_keeps_their_own_progress() -> None:
    sam, other = {"learner_key": "a" * 16}, {"learner_key": "b" * 16}
    state = state_of(
        event("Sam", "check", 1, exercise="01.a", outcome="passed", hint=0, **sam),
        event("Sam", "check", 2, exercise="01.a", outcome="incorrect", hint=0, **other),
        event("Sam", "check", 3, exercise="01.a", outcome="incorrect", hint=0, **other),
        event("Sam", "join", 4, **sam),  # Sam's second kernel: the same saved join
    )
    assert sorted(state.learners) == ["Sam", "Sam (2)"]
    assert state.learners["Sam"].cells["01.a"].outcome == "passed"
    assert state.learners["Sam (2)"].cells["01.a"].tries == 2
    # A kernel that sends no key (an older course_lib) goes by its name.
    state.apply(event("Sam", "check", 5, exercise="01.b", outcome="passed", hint=0))
    assert sorted(state.learners) == ["Sam", "Sam (2)"] and "01.b" in state.learners["Sam"].cells


def test_helpers_claim_with_their_name_and_a_claim_is_taken_over_only_when_confirmed(
    tmp_path: Path,
) -> None:
    clock = iter(range(100, 10_000, 10)).__next__
    live = Room(RoomStore(tmp_path / "claims.sqlite"), RoomState(EXERCISES), clock=clock)
    live.add({"code": live.store.code, "name": "Sam", "kind": "join"}, "h")
    with pytest.raises(Refused, match="type your name at the top of the helpers' page"):
        live.act({"kind": "claim", "name": "Sam"}, instructor=False)
    live.act({"kind": "claim", "name": "Sam", "by": "Alex"}, instructor=False)
    with pytest.raises(Refused, match=re.escape("Alex is on the way to Sam (0 min): confirm")):
        live.act({"kind": "claim", "name": "Sam", "by": "Bea"}, instructor=False)
    live.act({"kind": "claim", "name": "Sam", "by": "Bea", "take_over": True}, instructor=False)
    assert live.state.claims(live.clock())["Sam"]["by"] == "Bea"
    live.act({"kind": "helped", "name": "Sam", "by": "Bea"}, instructor=False)
    with pytest.raises(Refused, match="can claim learners and mark them helped"):
        live.act({"kind": "remove", "name": "Sam", "by": "Bea"}, instructor=False)
    rows = list(csv.DictReader(io.StringIO(live.export_csv())))
    assert [(row["kind"], row["actor"]) for row in rows[1:]] == [
        ("claim", "helper:Alex"),
        ("claim", "helper:Bea"),
        ("helped", "helper:Bea"),
    ]
    live.store.close()


def test_a_streak_says_its_latest_try_and_is_dropped_once_the_learner_moved_on() -> None:
    tries = [check("Ada", "01.a", "incorrect", t * MINUTE) for t in (0, 2, 7)]
    state = state_of(*tries)
    row = state.needs_help(now=20 * MINUTE)[0]
    assert (row["since"], row["last"]) == (0, 7 * MINUTE)  # 3 tries in 7 min, the last at 7
    # Passing a later exercise of the lesson leaves the old streak behind; an earlier one does not.
    later = state_of(*tries, check("Ada", "01.b", "passed", 9 * MINUTE))
    assert listed(later, now=10 * MINUTE) == []
    earlier = state_of(
        *[check("Ada", "01.b", "incorrect", t) for t in (1, 2, 3)],
        check("Ada", "01.a", "passed", 4),
    )
    assert listed(earlier, now=5) == [("Ada", "streak")]
    # A check in another lesson leaves it behind too, even one that did not pass.
    moved = state_of(*tries, check("Ada", "02.c", "not_attempted", 9 * MINUTE))
    assert listed(moved, now=10 * MINUTE) == []
    # Back in the lesson, the streak they never fixed is listed again.
    moved.apply(check("Ada", "01.a", "incorrect", 11 * MINUTE))
    assert moved.needs_help(now=12 * MINUTE)[0]["why"] == "4 incorrect tries in a row"


def test_a_learner_who_left_counts_nowhere_until_their_next_event() -> None:
    state = state_of(
        *[check("Ada", "01.a", "incorrect", t, mistake="adds_step") for t in (1, 2, 3)],
        *[check("Bob", "01.a", "incorrect", t, mistake="adds_step") for t in (1, 2, 3)],
        event("Ada", "ready", 4, outcome="passed", jax="0.10.2", backend="cpu"),
        event("Ada", "leave", 5),
    )
    assert state.learners["Ada"].view()["left"] is True
    assert state.learners["Bob"].view()["left"] is False
    summary = state.exercise_summary()["01.a"]
    assert (summary["tried"], summary["incorrect"]) == (1, 1)
    assert summary["mistakes"][0]["count"] == 1
    assert listed(state, now=6) == [("Bob", "streak")]
    state.apply(check("Ada", "01.a", "incorrect", 7, mistake="adds_step"))
    assert not state.learners["Ada"].left
    assert state.exercise_summary()["01.a"]["mistakes"][0]["count"] == 2
    assert listed(state, now=8) == [("Ada", "streak"), ("Bob", "streak")]
    # Merged into a name that left, a learner's later event says whether they are in the room.
    merged = state_of(
        event("Bo", "leave", 1), event("Bo (2)", "join", 2), event("Bo (2)", "merge", 3, to="Bo")
    )
    assert merged.learners["Bo"].left is False


@pytest.mark.parametrize("colab_first", [False, True])
def test_a_merge_keeps_the_later_ready_result(colab_first: bool) -> None:
    def ready(name: str, at: float, reason: str = "") -> Event:
        outcome = "error" if reason else "passed"
        return event(name, "ready", at, outcome=outcome, jax="0.10.2", backend="cpu", reason=reason)

    failed, passed = ready("Bruno", 100.0, "AssertionError"), ready("Bruno (colab)", 200.0)
    if colab_first:  # the same two results, the other way round: the laptop's is the later one
        failed, passed = ready("Bruno", 200.0, "E"), ready("Bruno (colab)", 100.0)
    state = state_of(failed, passed, event("Bruno (colab)", "merge", 300.0, to="Bruno"))
    shown = state.learners["Bruno"].ready
    assert shown is not None and shown["ok"] is (not colab_first)


def test_a_rename_into_a_name_in_the_room_merges_and_later_events_follow_it() -> None:
    state = state_of(
        check("YourName", "01.a", "incorrect", 1),
        check("Ada L", "01.b", "passed", 2),
        check("Ada L", "01.a", "incorrect", 3),
        event("YourName", "merge", 4, to="Ada L"),
    )
    assert sorted(state.learners) == ["Ada L"]
    assert state.learners["Ada L"].view()["cells"]["01.a"] == {
        "outcome": "incorrect",
        "tries": 2,
        "hint": 0,
        "mistake": None,
        "fix": None,
    }
    assert state.take_changed() == {"Ada L": state.learners["Ada L"].view(), "YourName": None}
    state.apply(check("YourName", "01.a", "passed", 5))  # her open kernel still says YourName
    assert state.learners["Ada L"].cells["01.a"].outcome == "passed"
    state.apply(event("Ada L", "rename", 6, to="Ada Lovelace"))
    state.apply(event("Ghost", "join", 7))
    state.apply(event("Ghost", "remove", 8))
    assert sorted(state.learners) == ["Ada Lovelace"]


def test_the_rooms_common_mistakes_are_counted_with_their_idea_and_errors_apart() -> None:
    state = state_of(
        check("Ada", "01.a", "incorrect", 1, hint=2, mistake="adds_step"),
        check("Bob", "01.a", "incorrect", 2, hint=1, mistake="adds_step"),
        check("Cy", "01.a", "incorrect", 3, hint=1, mistake="drops_none"),
        check("Dee", "01.a", "error", 4, hint=0),
        check("Eve", "01.a", "incorrect", 5, hint=3, mistake="adds_step"),
        check("Eve", "01.a", "passed", 6),
    )
    summary = state.exercise_summary()
    assert summary["01.a"] == {
        "passed": 1,
        "tried": 5,
        "incorrect": 3,
        "error": 1,
        "setup": 0,
        "hints": [(0, 1), (1, 2), (2, 1)],
        "mistakes": [
            {
                "id": "adds_step",
                "count": 2,
                "idea": "the idea behind adds_step",
                "fix": "the fix for adds_step",
            },
            {
                "id": "drops_none",
                "count": 1,
                "idea": "the idea behind drops_none",
                "fix": "the fix for drops_none",
            },
        ],
    }
    assert summary["01.b"]["mistakes"] == [] and summary["01.b"]["tried"] == 0


def test_ready_keeps_the_version_and_backend_or_why_the_setup_failed() -> None:
    state = state_of(
        Ready(id=1, received=1.0, learner="Ada", outcome="passed", jax="0.10.2", backend="gpu"),
        Ready(
            id=2,
            received=2.0,
            learner="Bob",
            outcome="error",
            jax="",
            backend="",
            reason="RuntimeError: no",
        ),
        event("Cy", "join", 3.0),
    )
    ready = {name: learner.ready for name, learner in state.learners.items()}
    assert ready == {
        "Ada": {"jax": "0.10.2", "backend": "gpu", "ok": True, "reason": ""},
        "Bob": {"jax": "", "backend": "", "ok": False, "reason": "RuntimeError: no"},
        "Cy": None,
    }


def test_changed_learners_are_handed_out_once_and_a_snapshot_takes_none_of_them() -> None:
    state = state_of(check("Ada", "01.a", "passed", 1))
    state.snapshot(now=2)
    assert list(state.take_changed()) == ["Ada"]
    assert state.take_changed() == {}


outcomes = st.sampled_from(["passed", "incorrect", "error", "not_attempted"])
streams = st.lists(
    st.tuples(st.sampled_from(["Ada", "Bob"]), st.sampled_from(sorted(EXERCISES)), outcomes),
    max_size=30,
)


@settings(deadline=None)  # each example writes and reads a file: its time is the disk's
@given(streams)
def test_a_room_rebuilt_from_its_file_shows_what_the_live_room_showed(
    tmp_path_factory: pytest.TempPathFactory, stream: list[tuple[str, str, str]]
) -> None:
    path: Path = tmp_path_factory.mktemp("rebuilt") / "room.sqlite"
    live = Room(RoomStore(path), RoomState(EXERCISES), Limits(learner_burst=100))
    for name, exercise, outcome in stream:
        live.add(
            {
                "code": live.store.code,
                "name": name,
                "kind": "check",
                "exercise": exercise,
                "outcome": outcome,
                "hint": 1 if outcome == "incorrect" else 0,
            },
            host="127.0.0.1",
        )
    rebuilt = Room(RoomStore(path), RoomState(EXERCISES))
    now = 10**10
    assert rebuilt.state.snapshot(now) == live.state.snapshot(now)
    live.store.close()
    rebuilt.store.close()


def test_a_full_room_refuses_a_new_name_but_not_those_already_in(tmp_path: Path) -> None:
    room = Room(RoomStore(tmp_path / "small.sqlite"), RoomState(EXERCISES), Limits(max_learners=2))
    join = {"code": room.store.code, "kind": "join"}
    room.add({**join, "name": "Ada"}, "h")
    room.add({**join, "name": "Bob"}, "h")
    with pytest.raises(Refused, match=r"the room is full \(2 learners\)"):
        room.add({**join, "name": "Cy"}, "h")
    room.add({**join, "name": "Ada"}, "h")
    assert [e.learner for e in room.store.events()] == ["Ada", "Bob", "Ada"]


def test_the_export_defuses_spreadsheet_formulas(tmp_path: Path) -> None:
    room = Room(RoomStore(tmp_path / "csv.sqlite"), RoomState(EXERCISES))
    room.add({"code": room.store.code, "kind": "join", "name": "=HYPERLINK(1)"}, "h")
    assert "'=HYPERLINK(1)" in room.export_csv()


def test_a_room_file_and_its_log_become_private_whatever_they_were(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    RoomStore(path).close()
    for leftover in (path, path.with_name("shared.sqlite-wal")):
        leftover.touch()
        leftover.chmod(0o644)
    store = RoomStore(path)
    store.add(1.0, event("Ada", "join", 1.0))
    for private in (path, path.with_name("shared.sqlite-wal"), path.with_name("shared.sqlite-shm")):
        assert private.stat().st_mode & 0o077 == 0, private
    store.close()


def test_the_info_file_is_private_and_a_planted_link_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    link = tmp_path / "info.json"
    link.symlink_to(target)
    assert room_main(["serve", str(tmp_path / "r.sqlite"), "--info", str(link)]) == 2
    assert "info.json is a symbolic link" in capsys.readouterr().err
    assert target.read_text() == "keep me"

    shared = tmp_path / "shared.json"
    shared.write_text("old")
    shared.chmod(0o644)
    write_private(shared, "{}")
    assert (shared.read_text(), shared.stat().st_mode & 0o777) == ("{}", 0o600)


def test_a_room_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.sqlite").touch()
    (tmp_path / "room.sqlite").symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(PrivateFileError, match="room.sqlite is a symbolic link"):
        RoomStore(tmp_path / "room.sqlite")


def test_actions_are_events_and_a_rebuilt_room_shows_them_as_the_live_one_did(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tidy.sqlite"
    live = Room(RoomStore(path), RoomState(EXERCISES), Limits(learner_burst=100))
    code = live.store.code
    events: list[tuple[str, str, dict[str, Any]]] = [
        ("Ada", "check", {"exercise": "01.a", "outcome": "incorrect", "hint": 0}),
        ("Ada L", "check", {"exercise": "01.b", "outcome": "passed", "hint": 0}),
        ("Bob", "hand", {"text": "lost"}),
        ("Ghost", "join", {}),
    ]
    for name, kind, extra in events:
        live.add({"code": code, "name": name, "kind": kind, **extra}, "h")
    live.act({"kind": "helped", "name": "Bob", "by": "Alex"}, instructor=False)
    live.act({"kind": "rename", "name": "Ada", "to": "Ada L"}, instructor=True)
    live.act({"kind": "remove", "name": "Ghost"}, instructor=True)
    with pytest.raises(Refused, match="helpers' link can claim learners and mark them helped"):
        live.act({"kind": "remove", "name": "Bob"}, instructor=False)
    assert sorted(live.state.learners) == ["Ada L", "Bob"]
    kinds = [(e.learner, e.kind, e.own_values()) for e in live.store.events()][4:]
    assert kinds == [
        ("Bob", "helped", {}),
        ("Ada", "merge", {"to": "Ada L"}),
        ("Ghost", "remove", {}),
    ]
    rebuilt = Room(RoomStore(path), RoomState(EXERCISES))
    assert rebuilt.state.snapshot(10**10) == live.state.snapshot(10**10)
    live.store.close()
    rebuilt.store.close()


def test_a_room_file_from_before_mistakes_gets_their_columns(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    old = sqlite3.connect(path)
    old.executescript(
        "CREATE TABLE events (id INTEGER PRIMARY KEY, received REAL NOT NULL, sent REAL, "
        "learner TEXT NOT NULL, kind TEXT NOT NULL, exercise TEXT, outcome TEXT, hint INTEGER, "
        "jax TEXT, backend TEXT);"
        "INSERT INTO events (received, learner, kind) VALUES (1.0, 'Ada', 'join');"
    )
    old.commit()
    old.close()
    store = RoomStore(path)
    store.add(
        2.0, CheckRun(learner="Bob", exercise="01.a", outcome="incorrect", hint=0, mistake="m")
    )
    read = [(e.learner, getattr(e, "mistake", None)) for e in store.events()]
    assert read == [("Ada", None), ("Bob", "m")]
    store.close()


def test_a_stored_row_without_a_field_its_kind_requires_is_left_out_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A row that lost a field its kind cannot do without (a rename with no new name, an old
    undo with no id) is skipped as a kind this room does not know is, so the room still starts."""
    import sqlite3

    path = tmp_path / "room.sqlite"
    store = RoomStore(path)
    store.add(1.0, Join(learner="Ada"))
    store.close()
    raw = sqlite3.connect(path)
    raw.executescript(
        "INSERT INTO events (received, learner, kind, fields) VALUES (2.0, 'Ada', 'rename', '{}');"
        "INSERT INTO events (received, learner, kind) VALUES (3.0, 'Ada', 'undo');"
        "INSERT INTO events (received, learner, kind, fields) VALUES (4.0, 'Bob', 'join', '{}');"
    )
    raw.commit()
    raw.close()
    with caplog.at_level("WARNING", logger="course_tools.room"):
        room = Room(RoomStore(path), RoomState(EXERCISES))
    assert [r.getMessage() for r in caplog.records] == [
        "event 2 (rename) lacks to: left out of the room",
        "event 3 (undo) lacks undoes: left out of the room",
    ]
    assert sorted(room.state.learners) == ["Ada", "Bob"]
    assert [(e.id, e.kind) for e in room.store.events()] == [(1, "join"), (4, "join")]
    room.store.close()


def test_a_learner_merged_renamed_or_removed_counts_in_no_total() -> None:
    state = state_of(
        check("Kim", "01.a", "passed", 1),
        check("Kim L", "01.a", "incorrect", 2),
        check("Ghost", "01.a", "passed", 3),
        check("Old", "01.a", "passed", 4),
        event("Kim", "merge", 5, to="Kim L"),
        event("Ghost", "remove", 6),
        event("Old", "rename", 7, to="New"),
    )
    assert sorted(state.snapshot(now=8)["learners"]) == ["Kim L", "New"]
    summary = state.exercise_summary()["01.a"]
    assert (summary["tried"], summary["passed"]) == (2, 1)  # Kim L failed after Kim passed
    assert state.take_changed()["Ghost"] is None


def test_a_removed_learner_who_checks_again_comes_back_with_their_progress() -> None:
    state = state_of(
        check("Ada", "01.a", "passed", 1),
        check("Ada", "01.b", "incorrect", 2),
        event("Ada", "remove", 3),
    )
    assert "Ada" not in state.learners
    state.apply(check("Ada", "01.b", "incorrect", 4))
    assert state.learners["Ada"].view()["cells"] == {
        "01.a": {"outcome": "passed", "tries": 1, "hint": 0, "mistake": None, "fix": None},
        "01.b": {"outcome": "incorrect", "tries": 2, "hint": 0, "mistake": None, "fix": None},
    }


def test_a_streak_names_its_mistake_by_the_idea_it_misses_and_its_fix_apart() -> None:
    state = state_of(
        *[check("Ada", "01.a", "incorrect", t, mistake="adds_step") for t in (1, 2, 3)]
    )
    (row,) = state.needs_help(now=4)
    assert (row["idea"], row["fix"]) == ("the idea behind adds_step", "the fix for adds_step")
    assert "mistake" not in row  # a mistake's id names nothing a helper can read


def test_two_mistakes_sharing_an_idea_are_counted_apart_each_named_by_its_fix() -> None:
    def told(name: str, mistake: str, fix: str) -> Event:
        return event(
            name,
            "check",
            1,
            exercise="01.a",
            outcome="incorrect",
            hint=1,
            mistake=mistake,
            idea="the same idea",
            fix=fix,
        )

    state = state_of(
        told("Ada", "01.a/1111", "subtract the step"),
        told("Bob", "01.a/1111", "subtract the step"),
        told("Cy", "01.a/2222", "scale the step by lr"),
    )
    mistakes = state.exercise_summary()["01.a"]["mistakes"]
    assert [(m["count"], m["fix"], m["idea"]) for m in mistakes] == [
        (2, "subtract the step", "the same idea"),
        (1, "scale the step by lr", "the same idea"),
    ]


def test_silence_counts_for_a_learner_who_never_checked_from_their_join_or_the_lessons_start() -> (
    None
):
    state = state_of(
        event("Sid", "join", 0),  # joined before the room began lesson 01
        event("Tia", "join", 0),
        check("Ada", "01.a", "incorrect", 5 * MINUTE),  # the room's first check in lesson 01
        *[check("Ada", "01.a", "not_attempted", m * MINUTE) for m in range(6, 30, 3)],
        event("Tia", "leave", 6 * MINUTE),  # leave_room(): gone, not silent
        event("Uma", "join", 9 * MINUTE),
        idle_minutes=10,
    )
    # 01.a has 10 minutes: Sid is past them 10 minutes after the lesson's first check, Uma 10
    # minutes after her join. Ada checks, so counts from her own first check.
    assert listed(state, now=14.5 * MINUTE) == []
    assert listed(state, now=15.5 * MINUTE) == [("Ada", "over_time"), ("Sid", "over_time")]
    rows = state.needs_help(now=19.5 * MINUTE)
    assert [(r["name"], r["exercise"], r["since"]) for r in rows] == [
        ("Ada", "01.a", 5 * MINUTE),
        ("Sid", "01.a", 5 * MINUTE),
        ("Uma", "01.a", 9 * MINUTE),
    ]
    assert rows[1]["why"] == "no check in lesson 01 yet, past the guide's 10 minutes"


def test_silence_counts_for_a_learner_done_with_their_lesson_once_the_room_is_in_the_next() -> None:
    state = state_of(
        check("Cy", "01.a", "passed", 0),
        check("Cy", "01.b", "passed", 1 * MINUTE),  # Cy has done lesson 01, then sends nothing
        *[check(n, "01.a", "passed", 2 * MINUTE) for n in ("Ada", "Bob")],
        *[check(n, "02.c", "incorrect", 20 * MINUTE) for n in ("Ada", "Bob")],  # the room: 02
        *[check(n, "02.c", "not_attempted", m * MINUTE) for n in ("Ada", "Bob") for m in (24, 28)],
        idle_minutes=10,
    )
    assert state.lesson == "02"
    assert listed(state, now=29.5 * MINUTE) == []  # 02.c has 10 minutes from 20
    rows = state.needs_help(now=30.5 * MINUTE)
    assert [(r["name"], r["exercise"]) for r in rows] == [
        ("Ada", "02.c"),
        ("Bob", "02.c"),
        ("Cy", "02.c"),
    ]


def test_leaving_lowers_a_raised_hand() -> None:
    state = state_of(event("Ada", "hand", 1, text="stuck"), event("Ada", "leave", 2))
    assert state.needs_help(now=3) == []


def test_the_block_counts_from_the_instructors_start_else_from_the_first_check_after_a_pause() -> (
    None
):
    state = state_of(check("Ada", "01.a", "passed", 0), check("Ada", "01.b", "passed", MINUTE))
    assert state.summary(now=2 * MINUTE)["block_since"] == 0
    assert (state.summary(now=2 * MINUTE)["block_by"]) == "checks"
    state.apply(event("", "block", 30 * MINUTE))  # the instructor: "exercises, now"
    summary = state.summary(now=31 * MINUTE)
    assert (summary["block_since"], summary["block_by"]) == (30 * MINUTE, "instructor")
    state.apply(check("Bob", "02.c", "incorrect", 38 * MINUTE))  # the first check comes later
    assert state.summary(now=39 * MINUTE)["block_since"] == 30 * MINUTE
    # Nobody checks for an hour, then the room checks again: a new block, by the checks.
    state.apply(check("Bob", "02.c", "incorrect", 100 * MINUTE))
    summary = state.summary(now=101 * MINUTE)
    assert (summary["block_since"], summary["block_by"]) == (100 * MINUTE, "checks")


def test_undo_takes_back_the_latest_remove_or_merge_and_a_rebuilt_room_agrees(
    tmp_path: Path,
) -> None:
    path = tmp_path / "undo.sqlite"
    live = Room(RoomStore(path), RoomState(EXERCISES), Limits(learner_burst=100))
    for name, outcome in (("Kim", "passed"), ("Kim L", "incorrect"), ("Ghost", "passed")):
        live.add(
            {"code": live.store.code, "name": name, "kind": "check", "exercise": "01.a",
             "outcome": outcome, "hint": 0},
            "h",
        )  # fmt: skip
    merged = live.act({"kind": "rename", "name": "Kim", "to": "Kim L"}, instructor=True)
    removed = live.act({"kind": "remove", "name": "Ghost"}, instructor=True)
    assert live.state.undoable() == {
        "id": removed.id,
        "kind": "remove",
        "name": "Ghost",
        "to": None,
    }
    with pytest.raises(Refused, match="no longer the latest"):
        live.act({"kind": "undo", "id": merged.id}, instructor=True)
    with pytest.raises(Refused, match="helpers' link can claim learners and mark them helped"):
        live.act({"kind": "undo", "id": removed.id}, instructor=False)
    live.state.take_changed()
    live.act({"kind": "undo", "id": removed.id}, instructor=True)
    assert sorted(live.state.learners) == ["Ghost", "Kim L"]
    assert live.state.learners["Ghost"].cells["01.a"].outcome == "passed"
    live.act({"kind": "undo", "id": merged.id}, instructor=True)
    assert sorted(live.state.learners) == ["Ghost", "Kim", "Kim L"]
    assert live.state.undoable() is None
    assert set(live.state.take_changed()) == {"Ghost", "Kim", "Kim L"}
    with pytest.raises(Refused, match="nothing to undo"):
        live.act({"kind": "undo", "id": merged.id}, instructor=True)
    kinds = [(e.kind, e.own_values(), e.actor) for e in live.store.events()][3:]
    assert kinds == [
        ("merge", {"to": "Kim L"}, "instructor"),
        ("remove", {}, "instructor"),
        ("undo", {"undoes": removed.id}, "instructor"),
        ("undo", {"undoes": merged.id}, "instructor"),
    ]
    rebuilt = Room(RoomStore(path), RoomState(EXERCISES))
    assert rebuilt.state.snapshot(10**10) == live.state.snapshot(10**10)
    live.store.close()
    rebuilt.store.close()


def test_a_room_file_written_before_events_were_typed_loads_as_it_showed(tmp_path: Path) -> None:
    """``rooms/before-typed-events.sqlite`` was written by the room as it stored events until
    each kind had fields of its own: one check's idea, a failed setup's reason, a hand's words, a
    rename's new name and an undone action's id all sat in one column."""
    path = tmp_path / "old.sqlite"
    path.write_bytes((Path(__file__).parent / "rooms" / "before-typed-events.sqlite").read_bytes())
    room = Room(RoomStore(path), RoomState(EXERCISES))
    state = room.state
    assert sorted(state.learners) == ["Ada L", "Bob", "Cyrus", "Eve", "Ghost"]  # Ghost: undone
    merged = state.learners["Ada L"].cells
    assert (merged["01.a"].outcome, merged["01.a"].tries) == ("passed", 2)
    assert (merged["01.b"].outcome, merged["01.b"].hint) == ("error", 2)
    assert state.learners["Ada L"].ready == {
        "ok": True,
        "jax": "0.10.2",
        "backend": "cpu",
        "reason": "",
    }
    assert state.learners["Eve"].ready == {
        "ok": False,
        "jax": "",
        "backend": "",
        "reason": "RuntimeError: Unknown backend cuda",
    }
    assert state.learners["Bob"].hand is None and state.learners["Bob"].helped_at > 0
    assert state.learners["Cyrus"].left
    assert state.block_start() == (1_780_000_170.0, "instructor")
    undo = state.undoable()
    assert undo is not None and undo["to"] == "Cyrus"
    rows = list(csv.DictReader(io.StringIO(room.export_csv())))
    assert len(rows) == 18
    assert (rows[3]["idea"], rows[3]["fix"]) == ("the step is subtracted", "use params - lr * grad")
    assert (rows[6]["text"], rows[12]["actor"], rows[16]["undoes"]) == (
        "lost on 01.b",
        "helper",
        "16",
    )
    room.store.close()


def test_checking_an_event_leaves_what_was_sent_as_it_was() -> None:
    sent = {
        "code": "AB",
        "name": " Ada ",
        "kind": "ready",
        "outcome": "error",
        "jax": "0.10.2",
        "backend": "CPU",
        "reason": " RuntimeError: no backend ",
    }
    kept = dict(sent)
    stored = validate(sent, "AB", EXERCISES)
    assert sent == kept
    assert isinstance(stored, Ready)
    assert (stored.learner, stored.backend, stored.reason) == (
        "Ada",
        "cpu",
        "RuntimeError: no backend",
    )


@pytest.mark.parametrize(
    ("kind", "fields", "said"),
    [
        ("hand", {"idea": "x"}, "unknown field(s) for a hand event: idea"),
        ("check", {"text": "x"}, "unknown field(s) for a check event: text"),
        ("ready", {"to": "Bob"}, "unknown field(s) for a ready event: to"),
        ("join", {"exercise": "01.a"}, "unknown field(s) for a join event: exercise"),
        ("helped", {}, "kind must be one of join, start, check, beat"),
        ("check", {"exercise": "01.a", "outcome": "passed"}, "hint must be a whole number"),
    ],
)
def test_each_kind_takes_its_own_fields_only(kind: str, fields: dict[str, Any], said: str) -> None:
    with pytest.raises(Refused, match=re.escape(said)):
        validate({"code": "AB", "name": "Ada", "kind": kind, **fields}, "AB", EXERCISES)


EVERY_KIND = [
    event("Ada", "join", 1.0),
    event("Ada", "start", 1.5, exercise="01.a"),
    check("Ada", "01.a", "incorrect", 2.0, hint=1, mistake="adds_step"),
    event("Ada", "beat", 2.5, learner_key="k" * 16),
    event("Ada", "ready", 3.0, outcome="error", jax="", backend="", reason="no backend"),
    event("Ada", "hand", 4.0, text="stuck"),
    event("Ada", "done", 5.0),
    event("Ada", "leave", 6.0),
    event("Ada", "helped", 7.0, actor="helper"),
    event("Ada", "claim", 7.5, actor="helper:Alex"),
    event("Ada", "rename", 8.0, to="Ada L", actor="instructor"),
    event("Bob", "merge", 9.0, to="Ada L", actor="instructor"),
    event("Ada L", "remove", 10.0, actor="instructor"),
    event("Ada L", "undo", 11.0, undoes=10, actor="instructor"),
    event("", "block", 12.0, actor="instructor"),
]


def test_every_kind_is_read_back_from_the_file_as_it_was_stored(tmp_path: Path) -> None:
    assert {one.kind for one in EVERY_KIND} == set(KINDS)
    store = RoomStore(tmp_path / "kinds.sqlite")
    stored = [store.add(one.received, replace(one, id=0)) for one in EVERY_KIND]
    assert [one.id for one in stored] == list(range(1, len(EVERY_KIND) + 1))
    assert list(store.events()) == stored
    assert [replace(one, id=0) for one in stored] == [replace(one, id=0) for one in EVERY_KIND]
    store.close()


def test_a_check_that_never_ends_shows_as_running_and_its_end_clears_it() -> None:
    state = state_of(event("Finn", "start", 100.0, exercise="01.a"))
    assert listed(state, now=100.0 + state.running_after) == []
    (row,) = state.needs_help(now=101.0 + state.running_after)
    assert (row["kind"], row["exercise"], row["why"], row["since"]) == (
        "running",
        "01.a",
        "check running",
        100.0,
    )
    state.apply(check("Finn", "01.a", "passed", 200.0))
    assert listed(state, now=300.0) == []


def test_a_kernel_silent_for_two_heartbeats_is_asked_after_and_a_rejoin_clears_it() -> None:
    state = state_of(
        check("Finn", "01.a", "passed", 0.0),  # the room is at work: silence would count too
        event("Finn", "beat", 45.0),
        check("Old", "01.a", "passed", 45.0),  # a course_lib without heartbeats: never "gone"
    )
    assert listed(state, now=45.0 + state.gone_after) == []
    (row,) = state.needs_help(now=46.0 + state.gone_after)
    assert (row["name"], row["kind"], row["why"], row["since"]) == (
        "Finn",
        "gone",
        "kernel gone?",
        45.0,
    )
    # A kernel that said at its join that it beats, killed before its first beat, is seen too.
    state.apply(event("Kai", "join", 50.0, beats=True))
    assert ("Kai", "gone") in listed(state, now=51.0 + state.gone_after)
    state.apply(event("Finn", "join", 400.0))  # the kernel restarted: the saved join rejoins
    assert [name for name, kind in listed(state, now=401.0) if name == "Finn"] == []
    state.apply(event("Finn", "start", 402.0, exercise="01.b"))
    state.apply(event("Finn", "join", 403.0))  # restarted in the middle of a check: it ended
    assert state.learners["Finn"].running is None


def test_a_kernel_gone_is_never_worded_as_a_learner_past_the_guides_minutes() -> None:
    state = state_of(
        check("Finn", "01.a", "passed", 0.0),
        event("Finn", "beat", 30.0),
        *[check("Ada", "01.a", "passed", t * MINUTE) for t in range(1, 40)],
        idle_minutes=60,
    )
    rows = state.needs_help(now=40 * MINUTE)
    assert [(row["name"], row["kind"]) for row in rows] == [("Finn", "gone")]


def test_a_broken_setup_is_named_first_as_one_and_counted_apart_from_the_exercises() -> None:
    broken = {"outcome": "error", "jax": "0.10.2", "backend": "", "reason": "no cuda"}
    state = state_of(
        check("Ada", "01.a", "passed", 0.0),
        event("Eve", "ready", 1.0, **broken),
        check("Eve", "01.a", "error", 2.0),  # a course_lib that sent it as the exercise's
        *[check("Bob", "01.a", "incorrect", t) for t in (3.0, 4.0, 5.0)],
        event("Cy", "hand", 6.0),
        idle_minutes=60,
    )
    rows = state.needs_help(now=40 * MINUTE)[:3]  # Ada, silent past 01.b's minutes, is last
    assert [(row["name"], row["kind"]) for row in rows] == [
        ("Eve", "setup"),
        ("Cy", "hand"),
        ("Bob", "streak"),
    ]
    assert rows[0]["why"] == "setup failed: no cuda"
    counts = state.exercise_summary()["01.a"]
    assert (counts["error"], counts["setup"], counts["incorrect"]) == (0, 1, 1)
    # Fixed: her next pass ends it, though ready() was not run again.
    state.apply(check("Eve", "01.a", "passed", 41 * MINUTE))
    assert ("Eve", "setup") not in listed(state, now=42 * MINUTE)


def test_helped_clears_a_running_check_a_gone_kernel_and_a_broken_setup_until_something_new() -> (
    None
):
    broken = {"outcome": "error", "jax": "0.10.2", "backend": "", "reason": "no cuda"}
    state = state_of(
        event("Finn", "start", 0.0, exercise="01.a"),
        event("Kai", "join", 0.0, beats=True),
        event("Eve", "ready", 0.0, **broken),
    )
    now = 1.0 + max(state.running_after, state.gone_after)
    assert sorted(listed(state, now)) == [("Eve", "setup"), ("Finn", "running"), ("Kai", "gone")]
    for name in ("Finn", "Kai", "Eve"):
        state.apply(event(name, "helped", now))
    assert listed(state, now + 1.0) == []
    assert listed(state, now + 10 * MINUTE) == []  # nothing new: they stay off
    # Something new: another check begins, the kernel comes back and goes again, ready() fails.
    later = now + 20 * MINUTE
    state.apply(event("Finn", "start", later, exercise="01.b"))
    state.apply(event("Kai", "join", later, beats=True))
    state.apply(event("Eve", "ready", later, **broken))
    assert listed(state, later + 1.0) == [("Eve", "setup")]
    after = later + 1.0 + max(state.running_after, state.gone_after)
    assert sorted(listed(state, after)) == [("Eve", "setup"), ("Finn", "running"), ("Kai", "gone")]


def test_the_export_gives_a_helpers_actions_the_learners_own_name_and_key(tmp_path: Path) -> None:
    path = tmp_path / "sams.sqlite"
    live = Room(RoomStore(path), RoomState(EXERCISES))
    for key in ("a" * 16, "b" * 16):
        live.add({"code": live.store.code, "name": "Sam", "kind": "join", "learner_key": key}, "h")
    live.act({"kind": "claim", "name": "Sam (2)", "by": "Alex"}, instructor=False)
    live.act({"kind": "helped", "name": "Sam (2)", "by": "Alex"}, instructor=False)
    assert live.state.learners["Sam (2)"].helped_at and not live.state.learners["Sam"].helped_at
    rows = list(csv.DictReader(io.StringIO(live.export_csv())))
    assert [(row["kind"], row["learner"], row["learner_key"]) for row in rows] == [
        ("join", "Sam", "a" * 16),
        ("join", "Sam", "b" * 16),
        ("claim", "Sam", "b" * 16),
        ("helped", "Sam", "b" * 16),
    ]
    rebuilt = Room(RoomStore(path), RoomState(EXERCISES))
    assert rebuilt.state.snapshot(10**10) == live.state.snapshot(10**10)
    live.store.close()
    rebuilt.store.close()
