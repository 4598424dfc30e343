"""What the dashboard shows, worked out from the events: the grid, the room's common mistakes, who
needs help (ranked by what an instructor acts on) and who is ready.

Pure computation: events go in through :meth:`RoomState.apply`, views come out as plain data. The
server keeps one, fed from the store at start and then by each event as it is stored. The
instructor's actions (helped, rename, merge, remove) are events too: nothing is ever deleted, and
a room rebuilt from its file shows what the live one showed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._store import Event

STREAK_FOR_HELP = 3
"""Failed tries in a row on one exercise (any lesson) that put a learner on the "needs help"
list."""
TOP_MISTAKES = 3
"""How many of an exercise's recognised mistakes the dashboard lists."""
SHARED_BY = 2
"""How many learners must share a mistake before the projector view shows it and its idea: the
idea is the course's text, but it arrives from a learner's kernel, so one sender alone never
puts words on the room's screen."""
HELP_ORDER = {"hand": 0, "streak": 1, "over_time": 2}
"""The order of the needs-help list: raised hands, then failing streaks, then silence."""


@dataclass(frozen=True)
class ExerciseInfo:
    """What the dashboard needs of an exercise."""

    id: str
    title: str
    points: int
    minutes: float
    optional: bool = False  # left to fast finishers: nobody is behind for skipping it

    @property
    def lesson(self) -> str:
        return self.id.split(".", 1)[0]


@dataclass
class Cell:
    """One learner on one exercise: the latest outcome, the hint it showed, the mistake it
    recognised, how many checks, and how many failed ones in a row."""

    outcome: str = "not_attempted"
    hint: int = 0
    tries: int = 0
    streak: int = 0
    errors: int = 0  # how many of the streak were errors rather than incorrect answers
    since: float = 0.0  # when the streak started (or the latest outcome, without one)
    at: float = 0.0  # the latest check
    mistake: str | None = None  # the latest failed check's recognised mistake
    idea: str | None = None

    def failing(self) -> str:
        """The streak in words: ``3 incorrect tries in a row``."""
        kind = (
            "incorrect tries"
            if not self.errors
            else "errors"
            if self.errors == self.streak
            else "failed tries (incorrect or error)"
        )
        return f"{self.streak} {kind} in a row"

    def view(self) -> list[Any]:
        """The dashboard's cell: outcome, tries, the hint shown and the mistake recognised."""
        return [self.outcome, self.tries, self.hint, self.mistake]

    def merge(self, other: Cell) -> Cell:
        """The cell of one learner known under two names: the later one, with both's tries."""
        later = other if other.at > self.at else self
        return Cell(**{**later.__dict__, "tries": self.tries + other.tries})


@dataclass
class Learner:
    name: str
    last_exercise: str | None = None
    ready: dict[str, Any] | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    first_in: dict[str, float] = field(default_factory=dict)  # lesson: their first check in it
    passed_in: dict[str, float] = field(default_factory=dict)  # lesson: their latest pass in it
    hand: dict[str, Any] | None = None  # since, text, exercise
    helped_at: float = 0.0

    def view(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "hand": self.hand,
            "cells": {exercise: cell.view() for exercise, cell in self.cells.items()},
        }

    def merge(self, other: Learner) -> None:
        """Take in what ``other`` (the same learner under another name) did."""
        for exercise, cell in other.cells.items():
            mine = self.cells.get(exercise)
            self.cells[exercise] = cell if mine is None else mine.merge(cell)
        for lesson, at in other.first_in.items():
            self.first_in[lesson] = min(self.first_in.get(lesson, at), at)
        for lesson, at in other.passed_in.items():
            self.passed_in[lesson] = max(self.passed_in.get(lesson, at), at)
        latest = max(self.cells.values(), key=lambda cell: cell.at, default=None)
        if latest is not None:
            self.last_exercise = next(e for e, c in self.cells.items() if c is latest)
        self.ready = self.ready or other.ready
        self.hand = self.hand or other.hand
        self.helped_at = max(self.helped_at, other.helped_at)


class RoomState:
    """The room as the dashboard sees it.

    >>> info = {"01.count": ExerciseInfo("01.count", "Count", 2, minutes=8)}
    >>> state = RoomState(info)
    >>> for i, outcome in enumerate(["incorrect", "incorrect", "incorrect"]):
    ...     state.apply(Event(i, 60.0 * i, None, "Ada", "check", "01.count", outcome, 1))
    >>> [(row["name"], row["exercise"], row["kind"]) for row in state.needs_help(now=200.0)]
    [('Ada', '01.count', 'streak')]
    """

    def __init__(self, exercises: Mapping[str, ExerciseInfo], idle_minutes: float = 5.0) -> None:
        self.exercises = dict(exercises)
        self.idle_minutes = idle_minutes
        self.learners: dict[str, Learner] = {}
        self.aliases: dict[str, str] = {}  # a name the instructor renamed: the name it became
        self.last_event = 0
        self.last_check_at = 0.0
        self.block_since = 0.0  # when the room started checking again after a pause
        self._changed: set[str] = set()
        self._removed: set[str] = set()

    def resolve(self, name: str) -> str:
        """The name a learner's events go to, after the instructor's renames and merges."""
        seen = {name}
        while name in self.aliases and self.aliases[name] not in seen:
            name = self.aliases[name]
            seen.add(name)
        return name

    def apply(self, event: Event) -> None:
        """Take one stored event into account."""
        self.last_event = max(self.last_event, event.id)
        if event.kind in ("rename", "merge") and event.detail:
            return self._rename(self.resolve(event.learner), event.detail)
        name = self.resolve(event.learner)
        if event.kind == "remove":
            if self.learners.pop(name, None) is not None:
                self._removed.add(name)
            return
        learner = self.learners.get(name)
        if learner is None:
            learner = self.learners[name] = Learner(name)
        self._changed.add(name)
        if event.kind == "ready":
            learner.ready = {
                "ok": event.outcome == "passed",
                "jax": event.jax or "",
                "backend": event.backend or "",
                "reason": event.detail or "",
            }
        elif event.kind == "check" and event.exercise in self.exercises:
            self._check(learner, event)
        elif event.kind == "hand":
            learner.hand = {
                "since": event.received,
                "text": event.detail or "",
                "exercise": learner.last_exercise,
            }
        elif event.kind == "done":
            learner.hand = None
        elif event.kind == "helped":
            learner.hand = None
            learner.helped_at = event.received

    def _rename(self, old: str, new: str) -> None:
        if old == new or old not in self.learners:
            return
        self.aliases.pop(new, None)
        self.aliases[old] = new
        moved = self.learners.pop(old)
        if new in self.learners:
            self.learners[new].merge(moved)
        else:
            moved.name = new
            self.learners[new] = moved
        self._removed.add(old)
        self._changed.add(new)

    def _check(self, learner: Learner, event: Event) -> None:
        assert event.exercise is not None
        cell = learner.cells.setdefault(event.exercise, Cell())
        cell.tries += 1
        cell.at = event.received
        if event.outcome in ("incorrect", "error"):
            if cell.streak == 0:
                cell.since = event.received
                cell.errors = 0
            cell.streak += 1
            cell.errors += event.outcome == "error"
            cell.mistake, cell.idea = event.mistake, event.detail
        elif event.outcome == "passed":
            cell.streak = cell.errors = 0
            cell.since = event.received
            cell.mistake = cell.idea = None
        cell.outcome = event.outcome or "error"
        cell.hint = event.hint or 0
        learner.last_exercise = event.exercise
        lesson = self.exercises[event.exercise].lesson
        learner.first_in.setdefault(lesson, event.received)
        if event.outcome == "passed":
            learner.passed_in[lesson] = event.received
            if learner.hand and learner.hand["exercise"] in (None, event.exercise):
                learner.hand = None
        if event.received - self.last_check_at > self.idle_minutes * 60:
            self.block_since = event.received
        self.last_check_at = max(self.last_check_at, event.received)

    @property
    def lesson(self) -> str | None:
        """The room's lesson: the one most learners' latest check was in (the later lesson
        between equals), so that one learner running ahead does not move it."""
        counts = Counter(
            self.exercises[learner.last_exercise].lesson
            for learner in self.learners.values()
            if learner.last_exercise is not None
        )
        return max(counts, key=lambda lesson: (counts[lesson], lesson)) if counts else None

    def take_changed(self) -> dict[str, dict[str, Any] | None]:
        """The learners changed since the last call, as the dashboard shows them (``None`` for a
        name that is gone: renamed, merged or removed)."""
        changed, self._changed = self._changed, set()
        removed, self._removed = self._removed, set()
        views: dict[str, dict[str, Any] | None] = {name: None for name in sorted(removed)}
        for name in sorted(changed):
            if name in self.learners:
                views[name] = self.learners[name].view()
        return views

    def exercise_summary(self) -> dict[str, dict[str, Any]]:
        """Per exercise: how many passed and tried; of those failing, how many were told an
        answer was wrong and how many had it raise, the hints they saw, and the recognised
        mistakes most of them share, with the idea the course gives for each."""
        summary: dict[str, dict[str, Any]] = {
            exercise: {"passed": 0, "tried": 0, "incorrect": 0, "error": 0}
            for exercise in self.exercises
        }
        hints: dict[str, Counter[int]] = {}
        mistakes: dict[str, Counter[str]] = {}
        ideas: dict[tuple[str, str], Counter[str]] = {}
        for learner in self.learners.values():
            for exercise, cell in learner.cells.items():
                row = summary[exercise]
                row["tried"] += 1
                if cell.outcome == "passed":
                    row["passed"] += 1
                elif cell.outcome in ("incorrect", "error"):
                    row[cell.outcome] += 1
                    hints.setdefault(exercise, Counter())[cell.hint] += 1
                    if cell.mistake:
                        mistakes.setdefault(exercise, Counter())[cell.mistake] += 1
                        if cell.idea:
                            ideas.setdefault((exercise, cell.mistake), Counter())[cell.idea] += 1
        for exercise, row in summary.items():
            row["hints"] = sorted(hints.get(exercise, Counter()).items())
            row["mistakes"] = [
                {
                    "id": mistake,
                    "count": count,
                    # the words most of its senders sent: one learner cannot change them
                    "idea": ideas[exercise, mistake].most_common(1)[0][0]
                    if (exercise, mistake) in ideas
                    else "",
                }
                for mistake, count in sorted(
                    mistakes.get(exercise, Counter()).items(), key=lambda item: (-item[1], item[0])
                )[:TOP_MISTAKES]
            ]
        return summary

    def needs_help(self, now: float) -> list[dict[str, Any]]:
        """Who needs help, ranked by what an instructor acts on: raised hands, then
        :data:`STREAK_FOR_HELP` failed tries in a row on one exercise (in any lesson), then
        learners past the minutes the guide gives the exercise they are on, counted from their
        own first check in its lesson (or their latest pass in it, or their latest help, or the
        room's return to work after a pause, whichever came last), while the room is at work
        (someone checked in the last ``idle_minutes``). "Helped" takes a learner off until their
        next failure or hand. Longest waiting first within each kind."""
        found = []
        room_at_work = self.at_work(now)
        for learner in self.learners.values():
            if learner.hand is not None:
                hand = learner.hand
                row = _row(learner, "hand", hand["exercise"], hand["since"], "raised a hand")
                found.append({**row, "text": hand["text"]})
                continue
            streaks = [
                (-cell.streak, cell.since, exercise)
                for exercise, cell in learner.cells.items()
                if cell.streak >= STREAK_FOR_HELP and cell.at > learner.helped_at
            ]
            if streaks:
                _, since, exercise = min(streaks)
                why = learner.cells[exercise].failing()
                found.append(_row(learner, "streak", exercise, since, why))
                continue
            if room_at_work:
                found.extend(self._over_time(learner, now))
        return sorted(found, key=lambda row: (HELP_ORDER[row["kind"]], row["since"], row["name"]))

    def at_work(self, now: float) -> bool:
        """Whether the room is doing exercises: someone checked in the last ``idle_minutes``."""
        return self.last_check_at >= now - self.idle_minutes * 60

    def _over_time(self, learner: Learner, now: float) -> list[dict[str, Any]]:
        if learner.last_exercise is None:
            return []
        lesson = self.exercises[learner.last_exercise].lesson
        todo = [
            e.id
            for e in self.exercises.values()
            if e.lesson == lesson
            and not e.optional
            and learner.cells.get(e.id, Cell()).outcome != "passed"
        ]
        if not todo:
            return []
        exercise = self.exercises[todo[0]]
        start = max(
            learner.first_in[lesson],
            learner.passed_in.get(lesson, 0.0),
            learner.helped_at,
            self.block_since,
        )
        if now - start <= exercise.minutes * 60:
            return []
        why = f"past the guide's {exercise.minutes:g} minutes for it"
        return [_row(learner, "over_time", exercise.id, start, why)]

    def summary(self, now: float) -> dict[str, Any]:
        """Everything but the learners' own rows: the room's lesson, the exercises' summary, the
        needs-help list and when the current block of exercises began (0 while the room is
        paused)."""
        return {
            "now": now,
            "last_event": self.last_event,
            "lesson": self.lesson,
            "idle_minutes": self.idle_minutes,
            "block_since": self.block_since if self.at_work(now) else 0.0,
            "shared_by": SHARED_BY,
            "exercises": self.exercise_summary(),
            "needs_help": self.needs_help(now),
        }

    def snapshot(self, now: float) -> dict[str, Any]:
        """The whole room, for a dashboard that just connected."""
        return {
            **self.summary(now),
            "catalogue": [
                {
                    "id": e.id,
                    "lesson": e.lesson,
                    "title": e.title,
                    "points": e.points,
                    "minutes": e.minutes,
                }
                for e in self.exercises.values()
            ],
            "learners": {name: learner.view() for name, learner in self.learners.items()},
        }


def _row(
    learner: Learner, kind: str, exercise: str | None, since: float, why: str
) -> dict[str, Any]:
    """One entry of the needs-help list; the dashboard shows how long from ``since``."""
    return {"name": learner.name, "kind": kind, "exercise": exercise, "why": why, "since": since}


def exercise_infos(exercises: Iterable[Any]) -> dict[str, ExerciseInfo]:
    """The dashboard's view of the course's exercises (``course_lib.checks.all_exercises()``),
    each with the minutes the facilitator's guide gives it (``Exercise.minutes``): a learner
    still on it past them, with the room at work, needs help."""
    return {e.id: ExerciseInfo(e.id, e.title, e.points, e.minutes, e.optional) for e in exercises}
