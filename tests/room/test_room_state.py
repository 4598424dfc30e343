"""What the dashboard shows, worked out from events: the grid's cells, where the room is stuck, who
needs help and who is ready. Pure computation, in process."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from course_tools.room import Room, RoomState, RoomStore
from course_tools.room._app import Limits, Refused
from course_tools.room._state import ExerciseInfo
from course_tools.room._store import Event

EXERCISES = {
    e.id: e
    for e in (
        ExerciseInfo("01.a", "A", 2, ("where", "the idea", "near the fix")),
        ExerciseInfo("01.b", "B", 1, ("b1", "b2", "b3")),
        ExerciseInfo("02.c", "C", 3, ("c1", "c2", "c3")),
    )
}
_ids = itertools.count(1)


def check(name: str, exercise: str, outcome: str, at: float, hint: int = 0) -> Event:
    return Event(next(_ids), at, None, name, "check", exercise, outcome, hint)


def state_of(*events: Event, idle_minutes: float = 5) -> RoomState:
    state = RoomState(EXERCISES, idle_minutes)
    for event in events:
        state.apply(event)
    return state


def test_a_cell_holds_the_latest_outcome_its_tries_and_the_hint_shown() -> None:
    state = state_of(
        check("Ada", "01.a", "incorrect", 10, hint=1),
        check("Ada", "01.a", "incorrect", 20, hint=2),
        check("Ada", "01.b", "not_attempted", 25),
        check("Ada", "01.a", "passed", 30),
    )
    cells = state.learners["Ada"].view()["cells"]
    assert cells == {"01.a": ["passed", 3, 0], "01.b": ["not_attempted", 1, 0]}
    assert state.lesson == "01"


def test_three_incorrect_in_a_row_needs_help_and_a_pass_ends_it() -> None:
    two = [check("Ada", "01.a", "incorrect", t, hint=1) for t in (10, 20)]
    assert state_of(*two).needs_help(now=30) == []
    three = [*two, check("Ada", "01.a", "error", 30, hint=2)]
    assert state_of(*three).needs_help(now=40) == [
        {
            "name": "Ada",
            "exercise": "01.a",
            "why": "3 failed tries (incorrect or error) in a row",
            "since": 10,
        }
    ]
    four = [*two, check("Ada", "01.a", "incorrect", 30, hint=2)]
    assert state_of(*four).needs_help(now=40)[0]["why"] == "3 incorrect tries in a row"
    # Not attempted (the stub run again) neither breaks nor extends the streak.
    broken = [*two, check("Ada", "01.a", "not_attempted", 25), check("Ada", "01.a", "passed", 30)]
    assert state_of(*broken).needs_help(now=40) == []


def test_silence_needs_help_only_while_others_go_on_and_until_the_lesson_is_done() -> None:
    minute = 60.0
    events = [
        check("Ada", "01.a", "incorrect", 0, hint=1),
        check("Bob", "01.a", "passed", 0),
        check("Bob", "01.b", "passed", 1 * minute),
        check("Cy", "01.a", "passed", 0),
        check("Cy", "01.b", "passed", 0),
        check("Dee", "01.a", "passed", 7 * minute),
    ]
    state = state_of(*events, idle_minutes=5)
    # At 8 minutes, Dee checked a minute ago: Ada and Bob have been silent for over 5 minutes, but
    # Bob has passed all of lesson 01, as has Cy.
    rows = state.needs_help(now=8 * minute)
    assert [(r["name"], r["why"]) for r in rows] == [
        ("Ada", "no check for 8 minutes while others went on")
    ]
    # Nobody checked in the last 5 minutes: a break, not a stuck learner.
    assert state.needs_help(now=20 * minute) == []
    state.idle_minutes = 10
    assert state.needs_help(now=8 * minute) == []


def test_teaching_time_is_not_silence_and_a_lesson_left_behind_is_not_help() -> None:
    minute = 60.0
    joined = [Event(next(_ids), 0.0, None, name, "join") for name in ("Ada", "Bob", "Cy")]
    # Lesson 01 taught for 45 minutes, then its exercises: silence counts from the first check.
    state = state_of(
        *joined,
        check("Ada", "01.a", "incorrect", 0, hint=1),
        check("Ada", "01.a", "incorrect", 1, hint=2),
        check("Ada", "01.a", "incorrect", 2, hint=3),
        check("Bob", "01.a", "passed", 45 * minute),
        check("Cy", "01.a", "incorrect", 46 * minute, hint=1),
    )
    # Ada's streak was in lesson 01 too; no one is silent yet 2 minutes into the exercises.
    assert [r["name"] for r in state.needs_help(now=47 * minute)] == ["Ada"]
    # Then the room moves to lesson 02 (two learners there): Ada's old streak no longer counts,
    # and Cy, who last checked in lesson 01, has not checked in lesson 02 since it began.
    state.apply(check("Ada", "02.c", "passed", 50 * minute))
    state.apply(check("Bob", "02.c", "incorrect", 51 * minute, hint=1))
    assert state.lesson == "02"
    assert state.needs_help(now=52 * minute) == []
    rows = state.needs_help(now=55 * minute + 1)
    assert [(r["name"], r["exercise"], r["why"]) for r in rows] == [
        ("Cy", None, "no check for 5 minutes while others went on"),
    ]


def test_one_learner_running_ahead_does_not_move_the_room() -> None:
    state = state_of(
        check("Ada", "01.a", "passed", 1),
        check("Bob", "01.b", "incorrect", 2, hint=1),
        check("Cy", "02.c", "not_attempted", 3),
    )
    assert state.lesson == "01"
    state.apply(check("Ada", "02.c", "passed", 4))
    assert state.lesson == "02"  # two and one: the room follows the two


def test_where_the_room_is_stuck_is_the_most_common_hint_among_those_failing() -> None:
    state = state_of(
        check("Ada", "01.a", "incorrect", 1, hint=2),
        check("Bob", "01.a", "incorrect", 2, hint=2),
        check("Cy", "01.a", "incorrect", 3, hint=1),
        check("Dee", "01.a", "passed", 4),
        check("Eve", "01.a", "incorrect", 5, hint=3),
        check("Eve", "01.a", "passed", 6),
    )
    summary = state.exercise_summary()
    assert summary["01.a"] == {
        "passed": 2,
        "tried": 5,
        "stuck": {"hint": 2, "count": 2, "text": "the idea"},
    }
    assert summary["01.b"] == {"passed": 0, "tried": 0, "stuck": None}


def test_ready_keeps_the_version_and_backend_and_whether_it_worked() -> None:
    state = state_of(
        Event(1, 1.0, None, "Ada", "ready", None, "passed", None, "0.10.2", "gpu"),
        Event(2, 2.0, None, "Bob", "ready", None, "error", None, "0.7.1", "cpu"),
        Event(3, 3.0, None, "Cy", "join"),
    )
    ready = {name: learner.ready for name, learner in state.learners.items()}
    assert ready == {
        "Ada": {"jax": "0.10.2", "backend": "gpu", "ok": True},
        "Bob": {"jax": "0.7.1", "backend": "cpu", "ok": False},
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
