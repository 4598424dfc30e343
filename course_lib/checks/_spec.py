"""What an exercise is: its cases, its reference answer, how a result is probed and judged.

Everything a probe returns and everything an :class:`Outcome` carries is *plain data* (``None``,
booleans, numbers, strings, bytes, lists, tuples, dicts and NumPy arrays), so it can cross from the
learner's kernel to the grader's process as JSON (see ``_wire.py``) and be judged there.
"""

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

Purpose = Literal["check", "grade"]

# Two separate random streams: the cases a learner sees in a self-check never coincide with the
# cases the grader uses.
_STREAMS = {"check": 0x5E1F, "grade": 0x6AD3}


@dataclass(frozen=True)
class Case:
    """One input for the learner's function.

    ``label`` says in words what is special about the input ("a dict with a None subtree"); hints
    use it. ``info`` holds plain facts a judge may use to give a targeted hint (how many ``None``
    subtrees the input has, which kind of object it is, ...). ``shown`` is how a self-check prints
    the input; the default is a short description of ``args``.
    """

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)
    shown: str | None = None


Probe = Callable[[Callable[..., Any], Case], Any]
"""Runs in the learner's process: call the function on a case, reduce what it did to plain data."""

Judge = Callable[[Any, Any, Case], str | None]
"""Runs anywhere: ``judge(got, expected, case)`` is ``None`` when ``got`` is right, else a hint."""


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    ``id`` is ``"NN.short_name"`` (lesson number, dot, name) and is also the ``course.exercise``
    metadata of the exercise cell. ``name`` is what the learner defines (a function or a class).
    ``cases(rng)`` makes a deterministic list of :class:`Case` from a NumPy generator; the
    self-check and the grader draw from different seeds. ``reference`` is the course's own answer.
    ``probe(fn, case)`` calls ``fn`` (learner's or reference) and returns plain data; ``judge(got,
    expected, case)`` compares two probe results. ``hints`` are revealed one per failed self-check.
    ``forbidden`` names ``course_lib`` functions or classes that must not be used to answer (the
    very thing the exercise asks to write): using them is detected in the source and at run time.
    """

    id: str
    name: str
    title: str
    points: int
    cases: Callable[[np.random.Generator], Sequence[Case]]
    reference: Callable[..., Any]
    probe: Probe
    judge: Judge
    hints: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        lesson, dot, short = self.id.partition(".")
        if not (len(lesson) == 2 and lesson.isdigit() and dot and short.isidentifier()):
            raise ValueError(f"exercise id {self.id!r} must look like '01.count_params'")
        if not self.name.isidentifier():
            raise ValueError(f"exercise {self.id}: name {self.name!r} is not a Python identifier")
        if self.points <= 0:
            raise ValueError(f"exercise {self.id}: points must be positive")

    @property
    def lesson(self) -> str:
        """The two-digit lesson number, e.g. ``"01"``."""
        return self.id.split(".", 1)[0]

    def make_cases(self, purpose: Purpose, seed: int = 0) -> list[Case]:
        """The cases for a self-check (``"check"``) or for grading (``"grade"``, with the grader's seed)."""
        rng = np.random.default_rng([_STREAMS[purpose], zlib.crc32(self.id.encode()), seed])
        cases = list(self.cases(rng))
        if not cases:
            raise ValueError(f"exercise {self.id}: the case generator made no cases")
        return cases


@dataclass(frozen=True)
class Outcome:
    """What happened when the learner's function met one case, as plain data.

    ``status`` is ``"returned"`` (``value`` is the probe's plain result), ``"not_attempted"`` (the
    stub's ``NotImplementedError``), ``"raised"`` (``error`` is the exception type, ``message`` its
    text), ``"forbidden"`` (``message`` names the course functions it called) or ``"unreadable"``
    (the result could not be reduced to plain data; ``message`` says why).
    """

    status: Literal["returned", "not_attempted", "raised", "forbidden", "unreadable"]
    value: Any = None
    error: str = ""
    message: str = ""

    def to_plain(self) -> dict[str, Any]:
        return {"status": self.status, "value": self.value, "error": self.error, "message": self.message}

    @classmethod
    def from_plain(cls, data: Any) -> "Outcome":
        if not isinstance(data, dict) or set(data) != {"status", "value", "error", "message"}:
            raise ValueError("an outcome must be a dict with status, value, error and message")
        if data["status"] not in ("returned", "not_attempted", "raised", "forbidden", "unreadable"):
            raise ValueError(f"unknown outcome status {data['status']!r}")
        if not isinstance(data["error"], str) or not isinstance(data["message"], str):
            raise ValueError("an outcome's error and message must be strings")
        return cls(data["status"], data["value"], data["error"], data["message"])


Status = Literal["passed", "failed", "not_attempted", "error", "timeout", "missing"]


@dataclass(frozen=True)
class Verdict:
    """The judgement of one exercise: a status, the points earned and what the learner is told.

    ``case`` is the index of the case the message is about (``None`` when it is about no case).
    """

    status: Status
    points: int
    max_points: int
    message: str
    case: int | None = None
    cases: int = 0
