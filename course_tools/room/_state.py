"""What the dashboard shows, worked out from the events: the grid, the room's common mistakes, who
needs help (ranked by what an instructor acts on) and who is ready.

Pure computation: events go in through :meth:`RoomState.apply`, views come out as plain data. The
server keeps one, fed from the store at start (:meth:`RoomState.replay`) and then by each event as
it is stored. The dashboard's actions (helped, rename, merge, remove, undo, the start of a block)
are events too: nothing is ever deleted, and a room rebuilt from its file shows what the live one
showed. A removed learner is kept aside, progress and all, and comes back as they were when they
send again or when the remove is undone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._events import (
    Beat,
    Block,
    CheckRun,
    Claim,
    Done,
    Event,
    Hand,
    Helped,
    Join,
    Leave,
    Merge,
    Ready,
    Remove,
    Rename,
    Start,
    Undo,
)

STREAK_FOR_HELP = 3
"""Failed tries in a row on one exercise (any lesson) that put a learner on the "needs help"
list."""
TOP_MISTAKES = 3
"""How many of an exercise's recognised mistakes the dashboard lists."""
SHARED_BY = 2
"""How many learners must share a mistake before the projector view shows it and its idea: the
idea is the course's text, but it arrives from a learner's kernel, so one sender alone never
puts words on the room's screen."""
HELP_ORDER = {
    **{"setup": 0, "hand": 1, "again": 2, "streak": 3},
    **{"running": 4, "gone": 5, "over_time": 6},
}
"""The order of the needs-help list: a broken setup, raised hands, then learners failing again
where they were helped, then failing streaks, then a check that never ended, a kernel no longer
heard, and silence."""
RUNNING_AFTER_S = 60.0
"""Seconds a check may run before the needs-help list shows it ("check running 2 min")."""
GONE_AFTER_S = 100.0
"""Seconds without a word from a kernel that sends heartbeats (every 45 s, see
``course_lib.checks._room.BEAT_S``) before the needs-help list asks "kernel gone?": two
heartbeats missed, and a little slack for a slow network."""
CLAIM_MINUTES = 5.0
"""How long "On my way" holds a learner for one helper without "Helped" (another may take it over
sooner, once they confirm)."""
UNDOABLE = (Rename, Merge, Remove)
"""The dashboard's actions that "Undo" takes back, the latest first."""


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
    fix: str | None = None
    again: bool = False  # failed since the learner was helped on it, not passed since

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

    def view(self) -> dict[str, Any]:
        """The dashboard's cell: outcome, tries, the hint shown, the mistake recognised and its
        fix (the cell's tooltip: the id is a stable name, the fix says what it is)."""
        return {
            "outcome": self.outcome,
            "tries": self.tries,
            "hint": self.hint,
            "mistake": self.mistake,
            "fix": self.fix,
        }

    def merge(self, other: Cell) -> Cell:
        """The cell of one learner known under two names: the later one, with both's tries."""
        later = other if other.at > self.at else self
        return Cell(**{**later.__dict__, "tries": self.tries + other.tries})


@dataclass
class Learner:
    name: str
    joined_at: float = 0.0  # their first event
    left: bool = False  # their latest event was leave_room()'s
    seen_at: float = 0.0  # their latest own event
    last_exercise: str | None = None
    ready: dict[str, Any] | None = None
    ready_at: float = 0.0  # when the latest ready() result came
    cells: dict[str, Cell] = field(default_factory=dict)
    first_in: dict[str, float] = field(default_factory=dict)  # lesson: their first check in it
    passed_in: dict[str, float] = field(default_factory=dict)  # lesson: their latest pass in it
    hand: dict[str, Any] | None = None  # since, text, exercise
    helped_at: float = 0.0
    helped_on: set[str] = field(default_factory=set)  # what was failing (or their hand's) then
    claim: dict[str, Any] | None = None  # by (a helper's name), since
    beats: bool = False  # their kernel sends heartbeats, so silence means it is gone
    running: dict[str, Any] | None = None  # a check begun and not ended: exercise, since

    @property
    def setup_broken(self) -> bool:
        """Whether their latest ``ready()`` failed, with no check passed since."""
        if self.ready is None or self.ready["ok"]:
            return False
        return not any(c.outcome == "passed" and c.at > self.ready_at for c in self.cells.values())

    def came_after_help(self, at: float) -> bool:
        """Whether something at ``at`` happened since the learner was last marked helped (or
        they never were), so that an entry it makes is new to the helpers.

        >>> Learner("Ada", helped_at=60.0).came_after_help(30.0)
        False
        """
        return not self.helped_at or at > self.helped_at

    def view(self) -> dict[str, Any]:
        return {
            "ready": self.ready,
            "left": self.left,
            "seen": self.seen_at,
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
        self.joined_at = min(self.joined_at, other.joined_at)
        latest = max(self.cells.values(), key=lambda cell: cell.at, default=None)
        if latest is not None:
            self.last_exercise = next(e for e, c in self.cells.items() if c is latest)
        if other.ready is not None and (self.ready is None or other.ready_at > self.ready_at):
            self.ready, self.ready_at = other.ready, other.ready_at  # the later result wins
        hands = [hand for hand in (self.hand, other.hand) if hand is not None]
        self.hand = max(hands, key=lambda hand: hand["since"], default=None)
        if other.seen_at > self.seen_at:  # in the room or not, as their latest own event says
            self.left, self.seen_at = other.left, other.seen_at
        if other.helped_at > self.helped_at:
            self.helped_at, self.helped_on = other.helped_at, other.helped_on
        self.beats = self.beats or other.beats
        runs = [run for run in (self.running, other.running) if run is not None]
        self.running = max(runs, key=lambda run: run["since"], default=None)
        claims = [claim for claim in (self.claim, other.claim) if claim is not None]
        self.claim = max(claims, key=lambda claim: claim["since"], default=None)


class RoomState:
    """The room as the dashboard sees it.

    >>> info = {"01.count": ExerciseInfo("01.count", "Count", 2, minutes=8)}
    >>> state = RoomState(info)
    >>> for i, outcome in enumerate(["incorrect", "incorrect", "incorrect"]):
    ...     run = CheckRun(id=i, received=60.0 * i, learner="Ada", exercise="01.count",
    ...                    outcome=outcome, hint=1)
    ...     state.apply(run)
    >>> [(row["name"], row["exercise"], row["kind"]) for row in state.needs_help(now=200.0)]
    [('Ada', '01.count', 'streak')]
    """

    def __init__(self, exercises: Mapping[str, ExerciseInfo], idle_minutes: float = 5.0) -> None:
        self.exercises = dict(exercises)
        self.idle_minutes = idle_minutes
        self.claim_minutes = CLAIM_MINUTES
        self.running_after = RUNNING_AFTER_S
        self.gone_after = GONE_AFTER_S
        self.learners: dict[str, Learner] = {}
        self.names: dict[tuple[str, str], str] = {}  # (name sent, learner_key): name in the room
        self.keys: dict[str, str] = {}  # a name in the room: the learner_key that holds it
        self.removed: dict[str, Learner] = {}  # removed learners, kept for their return or an undo
        self.aliases: dict[str, str] = {}  # a name the instructor renamed: the name it became
        self.actions: list[Rename | Merge | Remove] = []  # those in force, in order
        self.last_event = 0
        self.last_check_at = 0.0
        self.lesson_since: dict[str, float] = {}  # lesson: the room's first check in it
        self.block_since = 0.0  # when the room started checking again after a pause
        self.paused_at = 0.0  # the room's last check before that pause
        self.block_started = 0.0  # when the instructor last started a block of exercises
        self._changed: set[str] = set()
        self._removed: set[str] = set()

    def resolve(self, name: str) -> str:
        """The name a learner's events go to, after the instructor's renames and merges."""
        seen = {name}
        while name in self.aliases and self.aliases[name] not in seen:
            name = self.aliases[name]
            seen.add(name)
        return name

    def name_of(self, name: str, key: str | None) -> str:
        """The name in the room of a learner who sends ``name`` with ``key`` (before the
        instructor's renames, see :meth:`resolve`): their own, unless a learner with another key
        holds it, then the first of ``name (2)``, ``name (3)``… free. A kernel that sends no key
        goes by its name alone."""
        if key is None or self.keys.get(name, key) == key:
            return name
        if (name, key) in self.names:
            return self.names[name, key]
        taken = self.learners.keys() | self.removed.keys() | self.keys.keys() | self.aliases.keys()
        return next(f"{name} ({n})" for n in range(2, 10**6) if f"{name} ({n})" not in taken)

    def sent_as(self, name: str) -> tuple[str, str | None]:
        """The name and key the kernel of the learner known in the room as ``name`` sends (its
        first, for learners merged into one), so that an action on them is stored as their own
        events are: the inverse of :meth:`shown_name`.

        >>> state = RoomState({})
        >>> for key in ("a" * 16, "b" * 16):
        ...     state.apply(Join(id=1, received=1.0, learner="Sam", learner_key=key))
        >>> state.sent_as("Sam (2)")
        ('Sam', 'bbbbbbbbbbbbbbbb')
        """
        owned = [(sent, shown) for sent, shown in self.names.items() if self.resolve(shown) == name]
        own = min(owned, key=lambda pair: pair[1] != name, default=None)  # not merged in: first
        return (name, None) if own is None else own[0]

    def shown_name(self, event: Event) -> str:
        """The name the dashboard shows for a learner's event."""
        return self.resolve(self.name_of(event.learner, event.learner_key))

    def replay(self, events: Iterable[Event]) -> None:
        """Take stored events into account, in order, leaving out the actions undone since."""
        events = list(events)
        undone = {event.undoes for event in events if isinstance(event, Undo)}
        for event in events:
            if event.id not in undone:
                self.apply(event)

    def rebuilt(self, events: Iterable[Event]) -> RoomState:
        """The room worked out again from all of its ``events`` (after an undo), its changes
        since this one ready for :meth:`take_changed`."""
        state = RoomState(self.exercises, self.idle_minutes)
        state.claim_minutes, state.running_after = self.claim_minutes, self.running_after
        state.gone_after = self.gone_after
        state.replay(events)
        state._removed |= set(self.learners) - set(state.learners)
        return state

    def apply(self, event: Event) -> None:
        """Take one stored event into account (an undo is taken by :meth:`replay`)."""
        self.last_event = max(self.last_event, event.id)
        if isinstance(event, UNDOABLE):
            return self._act(event)
        if isinstance(event, Undo):
            return
        if isinstance(event, Block):
            self.block_started = event.received
            return
        sent = self.name_of(event.learner, event.learner_key)
        if event.learner_key is not None:
            self.names.setdefault((event.learner, event.learner_key), sent)
            self.keys.setdefault(sent, event.learner_key)
        name = self.resolve(sent)
        learner = self.learners.get(name) or self.removed.pop(name, None)
        if learner is None:
            learner = Learner(name, joined_at=event.received)
        self.learners[name] = learner
        self._changed.add(name)
        if not isinstance(event, Helped | Claim):  # from the learner's kernel
            learner.seen_at = event.received
        if not isinstance(event, Helped | Claim | Beat):  # their own: are they in the room
            learner.left = isinstance(event, Leave)
        match event:
            case Beat():
                learner.beats = True
            case Start():
                learner.running = {"exercise": event.exercise, "since": event.received}
            case Join():
                learner.running = None  # a new kernel: what ran in another has ended
                learner.beats = learner.beats or event.beats
            case Ready():
                learner.ready_at = event.received
                learner.ready = {
                    "ok": event.outcome == "passed",
                    "jax": event.jax,
                    "backend": event.backend,
                    "reason": event.reason,
                }
            case CheckRun() if event.exercise in self.exercises:
                self._check(learner, event)
            case Hand():
                learner.hand = {
                    "since": event.received,
                    "text": event.text,
                    "exercise": learner.last_exercise,
                }
            case Done() | Leave():
                learner.hand = None
            case Claim():
                learner.claim = {"by": helper_name(event.actor), "since": event.received}
            case Helped():
                failing = {e for e, cell in learner.cells.items() if cell.streak}
                hand = learner.hand["exercise"] if learner.hand else None
                learner.helped_on = failing | ({hand} if hand else set())
                learner.hand = learner.claim = None
                learner.helped_at = event.received
                for cell in learner.cells.values():  # a streak counts again from the help
                    cell.streak = cell.errors = 0
                    cell.again = False

    def _act(self, event: Rename | Merge | Remove) -> None:
        """A rename, merge or remove, kept in :attr:`actions` when it changed anything."""
        name = self.resolve(event.learner)
        if name not in self.learners:
            return
        if isinstance(event, Remove):
            self.removed[name] = self.learners.pop(name)
            self._removed.add(name)
        elif event.to != name:
            self._rename(name, event.to)
        else:
            return
        self.actions.append(event)

    def _rename(self, old: str, new: str) -> None:
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

    def _check(self, learner: Learner, event: CheckRun) -> None:
        learner.running = None
        cell = learner.cells.setdefault(event.exercise, Cell())
        cell.tries += 1
        cell.at = event.received
        if event.outcome in ("incorrect", "error"):
            if cell.streak == 0:
                cell.since = event.received
                cell.errors = 0
            cell.streak += 1
            cell.errors += event.outcome == "error"
            cell.again = event.exercise in learner.helped_on
            cell.mistake, cell.idea, cell.fix = event.mistake, event.idea, event.fix
        elif event.outcome == "passed":
            cell.streak = cell.errors = 0
            cell.again = False
            cell.since = event.received
            cell.mistake = cell.idea = cell.fix = None
        cell.outcome = event.outcome
        cell.hint = event.hint
        learner.last_exercise = event.exercise
        lesson = self.exercises[event.exercise].lesson
        learner.first_in.setdefault(lesson, event.received)
        self.lesson_since.setdefault(lesson, event.received)
        if event.outcome == "passed":
            learner.passed_in[lesson] = event.received
            if learner.hand and learner.hand["exercise"] in (None, event.exercise):
                learner.hand = None
        if event.received - self.last_check_at > self.idle_minutes * 60:
            self.block_since = event.received
            self.paused_at = self.last_check_at
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
        answer was wrong and how many had it raise (``setup``: raised where the learner's setup
        is broken, counted apart), the hints they saw, and the recognised
        mistakes most of them share, each with its fix and the idea the course gives for it."""
        summary: dict[str, dict[str, Any]] = {
            exercise: {"passed": 0, "tried": 0, "incorrect": 0, "error": 0, "setup": 0}
            for exercise in self.exercises
        }
        hints: dict[str, Counter[int]] = {}
        mistakes: dict[str, Counter[str]] = {}
        words: dict[tuple[str, str], tuple[Counter[str], Counter[str]]] = {}
        for learner in self.learners.values():
            if learner.left:  # away: counted again from their next event
                continue
            for exercise, cell in learner.cells.items():
                row = summary[exercise]
                row["tried"] += 1
                if cell.outcome == "passed":
                    row["passed"] += 1
                elif cell.outcome == "error" and learner.setup_broken:
                    row["setup"] += 1  # their JAX does not start: not the exercise's error
                elif cell.outcome in ("incorrect", "error"):
                    row[cell.outcome] += 1
                    hints.setdefault(exercise, Counter())[cell.hint] += 1
                    if cell.mistake:
                        mistakes.setdefault(exercise, Counter())[cell.mistake] += 1
                        ideas, fixes = words.setdefault(
                            (exercise, cell.mistake), (Counter(), Counter())
                        )
                        ideas[cell.idea or ""] += 1
                        fixes[cell.fix or ""] += 1
        for exercise, row in summary.items():
            row["hints"] = sorted(hints.get(exercise, Counter()).items())
            ranked = sorted(
                mistakes.get(exercise, Counter()).items(), key=lambda item: (-item[1], item[0])
            )
            # The words most of a mistake's senders sent: one learner cannot change them.
            row["mistakes"] = [
                {
                    "id": mistake,
                    "count": count,
                    "idea": words[exercise, mistake][0].most_common(1)[0][0],
                    "fix": words[exercise, mistake][1].most_common(1)[0][0],
                }
                for mistake, count in ranked[:TOP_MISTAKES]
            ]
        return summary

    def needs_help(self, now: float) -> list[dict[str, Any]]:
        """Who needs help, ranked by what an instructor acts on: a broken setup (their latest
        ``ready()`` failed and no check passed since), raised hands, then
        :data:`STREAK_FOR_HELP` failed tries in a row on one exercise (in any lesson), naming the
        mistake recognised (see :meth:`_streaks`); then, while the room is at work (see
        :meth:`at_work`), learners silent on an exercise past the minutes the guide gives it (see
        :meth:`_over_time`). "Helped" takes a learner off until their next hand, their next
        failure on what they were helped with (kind ``again``, right after the hands), or
        :data:`STREAK_FOR_HELP` failures in a row on another exercise: a streak counts from the
        help. Then a check begun over :attr:`running_after` seconds ago and not ended (kind
        ``running``, since its start), and a kernel that sends heartbeats silent for
        :attr:`gone_after` seconds (kind ``gone``, since it was last heard). "Helped" takes off
        these and a broken setup too, until something new: another check begins, the kernel is
        heard again and falls silent again, or ``ready()`` fails again. Nobody who left the
        room is listed. Longest waiting first within each kind; each
        entry has ``helped``, when the learner was last marked helped (0: never), and ``claim``,
        who is on the way to them (see :meth:`claims`)."""
        found = []
        room_at_work = self.at_work(now)
        for learner in self.learners.values():
            if learner.left:
                continue
            if learner.setup_broken and learner.came_after_help(learner.ready_at):
                assert learner.ready is not None
                why = f"setup failed: {learner.ready['reason'] or 'no reason sent'}"
                row = _row(learner, "setup", None, learner.ready_at, why)
                found.append({**row, "text": learner.hand["text"] if learner.hand else ""})
                continue
            if learner.hand is not None:
                hand = learner.hand
                row = _row(learner, "hand", hand["exercise"], hand["since"], "raised a hand")
                found.append({**row, "text": hand["text"]})
                continue
            streaks = self._streaks(learner)
            if streaks:
                exercise = min(streaks, key=lambda e: (not streaks[e].again, -streaks[e].streak, e))
                cell = streaks[exercise]
                if cell.again:
                    row = _row(learner, "again", exercise, cell.since, "failing again")
                else:
                    row = _row(learner, "streak", exercise, cell.since, cell.failing())
                found.append(
                    {**row, "idea": cell.idea or "", "fix": cell.fix or "", "last": cell.at}
                )
                continue
            running = learner.running
            if (
                running is not None
                and now - running["since"] > self.running_after
                and learner.came_after_help(running["since"])
            ):
                row = _row(
                    learner, "running", running["exercise"], running["since"], "check running"
                )
                found.append(row)
                continue
            if (
                learner.beats
                and now - learner.seen_at > self.gone_after
                and learner.came_after_help(learner.seen_at)
            ):
                row = _row(learner, "gone", learner.last_exercise, learner.seen_at, "kernel gone?")
                found.append(row)
                continue
            if room_at_work:
                found.extend(self._over_time(learner, now))
        claims = self.claims(now)
        found = [{**row, "claim": claims.get(row["name"])} for row in found]
        return sorted(found, key=lambda row: (HELP_ORDER[row["kind"]], row["since"], row["name"]))

    def claims(self, now: float) -> dict[str, dict[str, Any]]:
        """Who is on the way to whom: by learner, the helper's name (``by``) and since when,
        for the claims made in the last :attr:`claim_minutes` and not ended by "Helped"."""
        return {
            name: learner.claim
            for name, learner in sorted(self.learners.items())
            if learner.claim is not None and now - learner.claim["since"] <= self.claim_minutes * 60
        }

    def _streaks(self, learner: Learner) -> dict[str, Cell]:
        """The learner's cells failing :data:`STREAK_FOR_HELP` times or more in a row (since their
        latest help), those they moved on from left out: a streak in another lesson than the one
        of their latest check, or on an exercise before one they passed since."""
        if learner.last_exercise is None:
            return {}
        order = {exercise: i for i, exercise in enumerate(self.exercises)}
        lesson = self.exercises[learner.last_exercise].lesson
        passed = [
            (order[exercise], cell.at)
            for exercise, cell in learner.cells.items()
            if cell.outcome == "passed"
        ]
        return {
            exercise: cell
            for exercise, cell in learner.cells.items()
            if (cell.streak >= STREAK_FOR_HELP or (cell.again and cell.streak))
            and self.exercises[exercise].lesson == lesson
            and not any(i > order[exercise] and at > cell.at for i, at in passed)
        }

    def at_work(self, now: float) -> bool:
        """Whether the room is doing exercises: someone checked, or the instructor started a
        block, in the last ``idle_minutes``."""
        return max(self.last_check_at, self.block_started) >= now - self.idle_minutes * 60

    def block_start(self) -> tuple[float, str]:
        """When the current block of exercises began, and who began it: ``"instructor"`` (the
        dashboard's "Start a block", when pressed since the room last paused) or ``"checks"``
        (the room's first check after a pause)."""
        if self.block_started > self.paused_at:
            return self.block_started, "instructor"
        return self.block_since, "checks"

    def _over_time(self, learner: Learner, now: float) -> list[dict[str, Any]]:
        """The learner, when silent past the guide's minutes for the first core exercise they
        have not passed, in their own lesson or, once they have finished it, in the room's later
        one (or the room's, when they never checked). Silence counts from their own first check
        in that lesson or their latest pass in it; with none there, from their join or the
        room's first check in the lesson, whichever came later; and never from before their
        latest help or the current block's start. Nobody who left the room is listed."""
        own = self.exercises[learner.last_exercise].lesson if learner.last_exercise else None
        lesson = own if own and self._todo(learner, own) else self.lesson
        if learner.left or lesson is None or (own is not None and lesson < own):
            return []
        todo = self._todo(learner, lesson)
        if not todo:
            return []
        exercise = self.exercises[todo[0]]
        if lesson in learner.first_in:
            start = max(learner.first_in[lesson], learner.passed_in.get(lesson, 0.0))
            why = f"past the guide's {exercise.minutes:g} minutes for it"
        else:
            start = max(learner.joined_at, self.lesson_since.get(lesson, 0.0))
            why = f"no check in lesson {lesson} yet, past the guide's {exercise.minutes:g} minutes"
        start = max(start, learner.helped_at, self.block_start()[0])
        if now - start <= exercise.minutes * 60:
            return []
        return [_row(learner, "over_time", exercise.id, start, why)]

    def _todo(self, learner: Learner, lesson: str) -> list[str]:
        """The lesson's core exercises the learner has not passed, in order."""
        return [
            e.id
            for e in self.exercises.values()
            if e.lesson == lesson
            and not e.optional
            and learner.cells.get(e.id, Cell()).outcome != "passed"
        ]

    def undoable(self) -> dict[str, Any] | None:
        """The action "Undo" takes back, the latest rename, merge or remove in force, or
        ``None``."""
        if not self.actions:
            return None
        action = self.actions[-1]
        to = None if isinstance(action, Remove) else action.to
        return {"id": action.id, "kind": action.kind, "name": action.learner, "to": to}

    def summary(self, now: float) -> dict[str, Any]:
        """Everything but the learners' own rows: the room's lesson, the exercises' summary, the
        needs-help list, the action to undo, and when the current block of exercises began and
        who began it (0 while the room is paused)."""
        since, by = self.block_start()
        return {
            "now": now,
            "last_event": self.last_event,
            "lesson": self.lesson,
            "idle_minutes": self.idle_minutes,
            "block_since": since if self.at_work(now) else 0.0,
            "block_by": by,
            "shared_by": SHARED_BY,
            "exercises": self.exercise_summary(),
            "needs_help": self.needs_help(now),
            "claims": self.claims(now),
            "undo": self.undoable(),
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
    """One entry of the needs-help list; the dashboard shows how long from ``since`` (a streak's
    first try: with ``last``, its latest) and how long ago the learner was ``helped``."""
    return {
        "name": learner.name,
        "kind": kind,
        "exercise": exercise,
        "why": why,
        "since": since,
        "helped": learner.helped_at,
    }


def helper_name(actor: str | None) -> str:
    """Who took an action, as a claim names them: a helper's own name, else ``the instructor``.

    >>> helper_name("helper:Alex"), helper_name("instructor")
    ('Alex', 'the instructor')
    """
    if actor and actor.startswith("helper:"):
        return actor.removeprefix("helper:")
    return "a helper" if actor == "helper" else "the instructor"


def exercise_infos(exercises: Iterable[Any]) -> dict[str, ExerciseInfo]:
    """The dashboard's view of the course's exercises (``course_lib.checks.all_exercises()``),
    each with the minutes the facilitator's guide gives it (``Exercise.minutes``): a learner
    still on it past them, with the room at work, needs help."""
    return {e.id: ExerciseInfo(e.id, e.title, e.points, e.minutes, e.optional) for e in exercises}
