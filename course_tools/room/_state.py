"""What the dashboard shows, worked out from the events: the grid, where the room is stuck, who
needs help and who is ready.

Pure computation: events go in through :meth:`RoomState.apply`, views come out as plain data. The
server keeps one, fed from the store at start and then by each event as it is stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._store import Event

STREAK_FOR_HELP = 3
"""Incorrect tries in a row on one exercise that put a learner on the "needs help" list."""
_HINT_TEXT_LIMIT = 140


@dataclass(frozen=True)
class ExerciseInfo:
    """What the dashboard needs of an exercise."""

    id: str
    title: str
    points: int
    hints: tuple[str, ...] = ()

    @property
    def lesson(self) -> str:
        return self.id.split(".", 1)[0]


@dataclass
class Cell:
    """One learner on one exercise: the latest outcome, the hint then shown, how many checks, and
    how many incorrect ones in a row."""

    outcome: str = "not_attempted"
    hint: int = 0
    tries: int = 0
    streak: int = 0
    errors: int = 0  # how many of the streak were errors rather than incorrect answers
    since: float = 0.0  # when the streak started (or the latest outcome, without one)

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
        """The dashboard's cell: outcome, tries and hint."""
        return [self.outcome, self.tries, self.hint]


@dataclass
class Learner:
    name: str
    last_exercise: str | None = None
    ready: dict[str, Any] | None = None
    cells: dict[str, Cell] = field(default_factory=dict)
    checked: dict[str, float] = field(default_factory=dict)  # lesson: its latest check's time

    def view(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "cells": {exercise: cell.view() for exercise, cell in self.cells.items()},
        }


class RoomState:
    """The room as the dashboard sees it.

    >>> info = {"01.count": ExerciseInfo("01.count", "Count", 2, ("Look at the leaves.",))}
    >>> state = RoomState(info)
    >>> for i, outcome in enumerate(["incorrect", "incorrect", "incorrect"]):
    ...     state.apply(Event(i, 60.0 * i, None, "Ada", "check", "01.count", outcome, 1))
    >>> [(row["name"], row["exercise"]) for row in state.needs_help(now=200.0)]
    [('Ada', '01.count')]
    """

    def __init__(self, exercises: Mapping[str, ExerciseInfo], idle_minutes: float = 5.0) -> None:
        self.exercises = dict(exercises)
        self.idle_minutes = idle_minutes
        self.learners: dict[str, Learner] = {}
        self.last_event = 0
        self.last_check_at = 0.0
        self.lesson_started: dict[str, float] = {}  # lesson: the room's first check in it
        self._changed: set[str] = set()

    def apply(self, event: Event) -> None:
        """Take one stored event into account."""
        learner = self.learners.get(event.learner)
        if learner is None:
            learner = self.learners[event.learner] = Learner(event.learner)
        self.last_event = max(self.last_event, event.id)
        self._changed.add(learner.name)
        if event.kind == "ready":
            learner.ready = {
                "jax": event.jax,
                "backend": event.backend,
                "ok": event.outcome == "passed",
            }
        elif event.kind == "check" and event.exercise in self.exercises:
            self._check(learner, event)

    def _check(self, learner: Learner, event: Event) -> None:
        assert event.exercise is not None
        cell = learner.cells.setdefault(event.exercise, Cell())
        cell.tries += 1
        if event.outcome in ("incorrect", "error"):
            if cell.streak == 0:
                cell.since = event.received
                cell.errors = 0
            cell.streak += 1
            cell.errors += event.outcome == "error"
        elif event.outcome == "passed":
            cell.streak = cell.errors = 0
            cell.since = event.received
        cell.outcome = event.outcome or "error"
        cell.hint = event.hint or 0
        learner.last_exercise = event.exercise
        lesson = self.exercises[event.exercise].lesson
        learner.checked[lesson] = max(learner.checked.get(lesson, 0.0), event.received)
        self.lesson_started.setdefault(lesson, event.received)
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

    def take_changed(self) -> dict[str, dict[str, Any]]:
        """The learners changed since the last call, as the dashboard shows them."""
        changed, self._changed = self._changed, set()
        return {name: self.learners[name].view() for name in sorted(changed)}

    def exercise_summary(self) -> dict[str, dict[str, Any]]:
        """Per exercise: how many passed, how many tried, and the hint most of those still
        failing are on (with its text), or ``None`` when nobody is failing it."""
        passed: Counter[str] = Counter()
        tried: Counter[str] = Counter()
        hints: dict[str, Counter[int]] = {}
        for learner in self.learners.values():
            for exercise, cell in learner.cells.items():
                tried[exercise] += 1
                if cell.outcome == "passed":
                    passed[exercise] += 1
                elif cell.outcome in ("incorrect", "error"):
                    hints.setdefault(exercise, Counter())[cell.hint] += 1
        summary = {}
        for exercise, info in self.exercises.items():
            stuck = None
            if exercise in hints:
                # The most common hint; among equals, the later one (the further they got).
                hint, count = max(hints[exercise].items(), key=lambda item: (item[1], item[0]))
                text = info.hints[hint - 1] if 1 <= hint <= len(info.hints) else ""
                if len(text) > _HINT_TEXT_LIMIT:
                    text = text[: _HINT_TEXT_LIMIT - 1] + "…"
                stuck = {"hint": hint, "count": count, "text": text}
            summary[exercise] = {
                "passed": passed[exercise],
                "tried": tried[exercise],
                "stuck": stuck,
            }
        return summary

    def needs_help(self, now: float) -> list[dict[str, Any]]:
        """Who needs help in the room's lesson, longest waiting first.

        A learner needs help after :data:`STREAK_FOR_HELP` failed tries in a row on one of its
        exercises, or after ``idle_minutes`` without a check in it while the others went on
        checking (someone checked in the last ``idle_minutes``), unless they passed all of its
        exercises. The silence counts from the learner's latest check in the lesson, or from the
        room's first check in it: the time before, when the lesson was taught, does not count.
        """
        lesson = self.lesson
        if lesson is None:
            return []
        window = self.idle_minutes * 60
        room_active = self.last_check_at >= now - window
        current = [e.id for e in self.exercises.values() if e.lesson == lesson]
        found = []
        for learner in self.learners.values():
            streaks = [
                (cell.since, exercise, cell)
                for exercise, cell in learner.cells.items()
                if exercise in current and cell.streak >= STREAK_FOR_HELP
            ]
            if streaks:
                since, exercise, cell = min(streaks)
                found.append(self._row(learner, exercise, cell.failing(), since))
                continue
            done = all(learner.cells.get(e, Cell()).outcome == "passed" for e in current)
            last = max(learner.checked.get(lesson, 0.0), self.lesson_started[lesson])
            if room_active and not done and last <= now - window:
                minutes = int((now - last) // 60)
                why = f"no check for {minutes} minute{'s' * (minutes != 1)} while others went on"
                at = learner.last_exercise if lesson in learner.checked else None
                found.append(self._row(learner, at, why, last))
        return sorted(found, key=lambda row: (row["since"], row["name"]))

    def _row(
        self, learner: Learner, exercise: str | None, why: str, since: float
    ) -> dict[str, Any]:
        return {"name": learner.name, "exercise": exercise, "why": why, "since": since}

    def summary(self, now: float) -> dict[str, Any]:
        """Everything but the learners' own rows: the room's lesson, the exercises' summary and
        the needs-help list."""
        return {
            "now": now,
            "last_event": self.last_event,
            "lesson": self.lesson,
            "idle_minutes": self.idle_minutes,
            "exercises": self.exercise_summary(),
            "needs_help": self.needs_help(now),
        }

    def snapshot(self, now: float) -> dict[str, Any]:
        """The whole room, for a dashboard that just connected."""
        return {
            **self.summary(now),
            "catalogue": [
                {"id": e.id, "lesson": e.lesson, "title": e.title, "points": e.points}
                for e in self.exercises.values()
            ],
            "learners": {name: learner.view() for name, learner in self.learners.items()},
        }


def exercise_infos(exercises: Iterable[Any]) -> dict[str, ExerciseInfo]:
    """The dashboard's view of the course's exercises (``course_lib.checks.all_exercises()``)."""
    return {e.id: ExerciseInfo(e.id, e.title, e.points, tuple(e.hints)) for e in exercises}
