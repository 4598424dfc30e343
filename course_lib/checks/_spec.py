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
    the input; the default is a short description of ``args``. ``part`` names the part of the
    exercise the case belongs to ("flat dicts", "under jit"): a part earns its share of the points
    when every case of it is right (see :func:`part_names`); cases without one form a single part.
    """

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""
    info: Mapping[str, Any] = field(default_factory=dict)
    shown: str | None = None
    part: str = ""


Probe = Callable[[Callable[..., Any], Case], Any]
"""Runs in the learner's process: call the function on a case, reduce what it did to plain data."""


@dataclass(frozen=True)
class Mistake:
    """A typical wrong answer a judge recognised, told in three steps, one more per failed check.

    ``what`` says what went wrong and where (the value, the key path, the count) and never the
    fix; ``idea`` names the idea the answer misses; ``fix`` comes close to the answer. ``reread``
    is the lesson section behind the idea, as ``"NN Heading"`` (the exercise's own by default).

    >>> Mistake("returned 2, the number of leaves", "a parameter is an entry of a leaf",
    ...         "add up leaf.size").what
    'returned 2, the number of leaves'
    """

    what: str
    idea: str
    fix: str
    reread: str = ""


Judge = Callable[[Any, Any, Case], "str | Mistake | None"]
"""Runs anywhere: ``judge(got, expected, case)`` is ``None`` when ``got`` is right, else what is
wrong: a :class:`Mistake`, or a string that says only what went wrong (the exercise's own idea
and fix follow it)."""

RaiseJudge = Callable[[str, str, Case], "Mistake | None"]
"""Runs anywhere: ``judge_raise(error, message, case)`` names the mistake behind an exception an
answer raised (``error`` is its type's name, ``message`` its text), or is ``None`` when the
exception says nothing the exercise's own idea and fix do not cover. It reads Python's own
exceptions (a ``KeyError``'s key), never JAX's wording, which changes between releases."""


MINUTES_PER_POINT = 4
"""Minutes of an exercise per point it is worth: reading it, writing, checking, the hints."""


@dataclass(frozen=True)
class Exercise:
    """One graded exercise.

    ``id`` is ``"NN.short_name"`` (lesson number, dot, name) and is also the ``course.exercise``
    metadata of the exercise cell. ``name`` is what the learner defines (a function or a class).
    ``cases(rng)`` makes a deterministic list of :class:`Case` from a NumPy generator; the
    self-check and the grader draw from different seeds. ``reference`` is the course's own answer.
    ``probe(fn, case)`` calls ``fn`` (learner's or reference) and returns plain data; ``judge(got,
    expected, case)`` compares two probe results; ``judge_raise``, where given, reads an
    exception an answer raised for a typical mistake behind it. ``hints`` are the exercise's own
    idea and fix, which follow a judge's message that is not a :class:`Mistake` (the second and
    the third failed self-check reveal one each); ``reread`` names the lesson section behind
    them, as ``"NN Heading"``.
    ``forbidden`` names ``course_lib`` functions or classes that must not be used to answer (the
    very thing the exercise asks to write); ``forbidden_modules`` names whole packages (``"optax"``)
    this exercise may not call. Both are detected at run time, by what is called, never by name.
    ``uses`` lists the ids of earlier exercises whose functions an answer may call
    (``make_sgd_step`` calls ``sgd_step``): while this one is probed, each is replaced in the
    learner's namespace by that exercise's ``stand_in`` (a JAX version of its reference that works
    under ``jit``), so a wrong helper costs points once, in its own exercise. ``mistakes`` names
    in a few words each typical wrong answer that ``judge`` meets with a targeted hint ("counts
    the leaves, not the elements in them"); the facilitator's guide lists them, and each one is a
    wrong answer that the lesson's tests check the hint of. ``optional`` marks an exercise whose
    ``reread`` section is off the lesson's live path (going further): a workshop leaves it to fast
    finishers, and the room does not wait for it (the tests hold it to the notebook)."""

    id: str
    name: str
    title: str
    points: int
    cases: Callable[[np.random.Generator], Sequence[Case]]
    reference: Callable[..., Any]
    probe: Probe
    judge: Judge
    hints: tuple[str, str] = ("", "")
    reread: str = ""
    judge_raise: RaiseJudge | None = None
    forbidden: tuple[str, ...] = ()
    forbidden_modules: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    stand_in: Callable[..., Any] | None = None
    mistakes: tuple[str, ...] = ()
    optional: bool = False

    def __post_init__(self) -> None:
        lesson, dot, short = self.id.partition(".")
        if not (len(lesson) == 2 and lesson.isdigit() and dot and short.isidentifier()):
            raise ValueError(f"exercise id {self.id!r} must look like '01.count_params'")
        if not self.name.isidentifier():
            raise ValueError(f"exercise {self.id}: name {self.name!r} is not a Python identifier")
        if self.points <= 0:
            raise ValueError(f"exercise {self.id}: points must be positive")
        if len(self.hints) != 2 or not all(self.hints):
            raise ValueError(f"exercise {self.id}: hints must be two texts, the idea and the fix")
        if not _is_section(self.reread):
            raise ValueError(f"exercise {self.id}: reread must name a section as 'NN Heading'")
        for used in self.uses:
            if used.split(".", 1)[0] != self.lesson or used == self.id:
                raise ValueError(
                    f"exercise {self.id}: uses {used!r}, which is not another exercise of "
                    f"lesson {self.lesson}"
                )

    @property
    def minutes(self) -> int:
        """The minutes a learner is expected to spend on it: `MINUTES_PER_POINT` per point. The
        facilitator's guide plans sessions with them, and the workshop room counts a learner as
        silent only past them."""
        return MINUTES_PER_POINT * self.points

    @property
    def lesson(self) -> str:
        """The two-digit lesson number, e.g. ``"01"``."""
        return self.id.split(".", 1)[0]

    def make_cases(self, purpose: Purpose, seed: int = 0) -> list[Case]:
        """The cases of a self-check (``"check"``) or of grading (``"grade"``, with a seed)."""
        rng = np.random.default_rng([_STREAMS[purpose], zlib.crc32(self.id.encode()), seed])
        cases = list(self.cases(rng))
        if not cases:
            raise ValueError(f"exercise {self.id}: the case generator made no cases")
        if any(case.part for case in cases) and not all(case.part for case in cases):
            raise ValueError(f"exercise {self.id}: some cases name a part and some do not")
        return cases


def _is_section(text: str) -> bool:
    """Whether ``text`` names a lesson section as ``"NN Heading"``.

    >>> _is_section("03 Key paths: naming the children"), _is_section("Key paths")
    (True, False)
    """
    return len(text) > 3 and text[:2].isdigit() and text[2] == " " and not text[3].isspace()


def part_names(cases: Sequence[Case]) -> list[str]:
    """An exercise's parts, in the order its cases first name them (one unnamed part if none do).

    >>> part_names([Case((), part="flat"), Case((), part="nested"), Case((), part="flat")])
    ['flat', 'nested']
    >>> part_names([Case(()), Case(())])
    ['']
    """
    return list(dict.fromkeys(case.part for case in cases))


def round_points(points: float) -> int | float:
    """Points rounded to 2 decimals, an ``int`` when whole (``2``, ``1.33``), the same everywhere.

    >>> round_points(2 * 2 / 3), round_points(3.0), round_points(0.1 + 0.2)
    (1.33, 3, 0.3)
    """
    rounded = round(points + 0.0, 2)
    return int(rounded) if rounded == int(rounded) else rounded


@dataclass(frozen=True)
class Outcome:
    """What happened when the learner's function met one case, as plain data.

    ``status`` is ``"returned"`` (``value`` is the probe's plain result), ``"not_attempted"`` (the
    stub's ``NotImplementedError``), ``"raised"`` (``error`` is the exception type, ``message`` its
    text) or ``"unreadable"`` (the result could not be reduced to plain data; ``message`` says
    why). ``flags`` lists the forbidden calls made on the way (:class:`Flag` records as plain
    dicts), whatever the status.
    """

    status: Literal["returned", "not_attempted", "raised", "unreadable"]
    value: Any = None
    error: str = ""
    message: str = ""
    flags: tuple[dict[str, Any], ...] = ()

    def to_plain(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "value": self.value,
            "error": self.error,
            "message": self.message,
            "flags": list(self.flags),
        }

    @classmethod
    def from_plain(cls, data: Any) -> "Outcome":
        if not isinstance(data, dict) or set(data) != {
            "status",
            "value",
            "error",
            "message",
            "flags",
        }:
            raise ValueError(
                "an outcome must be a dict with status, value, error, message and flags"
            )
        if data["status"] not in ("returned", "not_attempted", "raised", "unreadable"):
            raise ValueError(f"unknown outcome status {data['status']!r}")
        if not isinstance(data["error"], str) or not isinstance(data["message"], str):
            raise ValueError("an outcome's error and message must be strings")
        flags = data["flags"]
        if not (isinstance(flags, list) and all(_is_flag(f) for f in flags)):
            raise ValueError("an outcome's flags must be a list of call records")
        return cls(data["status"], data["value"], data["error"], data["message"], tuple(flags))


FLAG_FIELDS = {"reached": str, "kind": str, "file": str, "line": int, "text": str, "cell": str}
"""A forbidden call as plain data: the function ``reached`` (``"cl.tree_add"``, ``"optax.sgd"``),
its ``kind`` (``"course"``, ``"reference"``, ``"module"``, or ``"tamper"`` when the learner's code
switched the watch off), and where the learner's code made it: ``file`` and ``line`` (``""`` and 0
when the learner's function is that function itself), the text of the line, and ``cell``, an id of
the code that file holds (the grader turns it into a code cell number)."""


def _is_flag(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and set(data) == set(FLAG_FIELDS)
        and all(
            isinstance(data[k], t) and not isinstance(data[k], bool) for k, t in FLAG_FIELDS.items()
        )
    )


Status = Literal["passed", "failed", "flagged", "not_attempted", "error", "timeout", "missing"]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The judgement of one exercise: a status, the points earned and what the learner is told.

    ``case`` is the index of the case the message is about (``None`` when it is about no case).
    ``passed_cases`` says which cases were right, ``parts`` which named parts were (every case of
    the part right), in order. A ``flagged`` verdict (a forbidden call) scores 0; ``flags`` holds
    the calls and ``points_if_allowed`` what the answer would score without that rule. ``idea``,
    ``fix`` and ``reread`` are the next steps for the mistake the message is about (see
    :class:`Mistake`), empty when there is none to give; ``mistake`` says whether they are a
    :class:`Mistake`'s that the judge recognised rather than the exercise's own hints.
    """

    status: Status
    points: int | float
    max_points: int
    message: str
    case: int | None = None
    cases: int = 0
    passed_cases: tuple[bool, ...] = ()
    parts: tuple[tuple[str, bool], ...] = ()
    flags: tuple[dict[str, Any], ...] = ()
    points_if_allowed: int | float | None = None
    idea: str = ""
    fix: str = ""
    reread: str = ""
    mistake: bool = False

    def idea_text(self) -> str:
        """The idea, with the section to reread (``""`` when there is none).

        >>> Verdict(status="failed", points=0, max_points=1, message="returned 2",
        ...         idea="Count elements.", reread="01 Containers and leaves").idea_text()
        'Count elements. (reread lesson 01, "Containers and leaves")'
        """
        if not self.idea:
            return ""
        lesson, _, heading = self.reread.partition(" ")
        return f'{self.idea} (reread lesson {lesson}, "{heading}")'
