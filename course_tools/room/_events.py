"""The room's events: one class per kind, each with the fields of its own, and the schema that a
learner's event is checked against before it is stored.

A learner's kernel sends :data:`LEARNER_KINDS`; the dashboards' actions are :data:`ACTION_KINDS`.
A kind's schema is its class: each of its own fields says how a value sent for it is checked
(``check`` in the field's metadata), and a field without a default must be sent.
:func:`from_wire` builds the event from what was sent, or raises :class:`Refused` saying what is
wrong; it never changes what it was given.

>>> event = from_wire({"kind": "hand", "name": "Ada", "text": " stuck "}, known={})
>>> event.learner, event.text, event.kind
('Ada', 'stuck', 'hand')
"""

from __future__ import annotations

import dataclasses
import logging
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from course_lib.checks import ROOM_OUTCOMES, ROOM_TEXT_LIMITS, valid_name

_MISTAKE = re.compile(r"[A-Za-z0-9_.:/\-]{1,40}")
_VERSION = re.compile(r"[0-9A-Za-z.+\-]{0,40}")
_BACKEND = re.compile(r"[A-Za-z0-9_\-]{0,20}")
_YEARS = (946_684_800, 4_102_444_800)  # 2000-01-01 and 2100-01-01, in seconds since 1970
_COMMON = ("code", "name", "kind", "sent_at", "learner_key")  # every learner's event may send
_KEY = re.compile(r"[A-Za-z0-9_\-]{8,64}")
_log = logging.getLogger("course_tools.room")


class Refused(Exception):
    """An event the room does not store: the HTTP status and what to tell the sender."""

    def __init__(self, status: int, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


FieldCheck = Callable[[Any, Mapping[str, Any]], Any]
"""How a value sent for a field is checked: ``(value, known exercises) -> value as stored``,
raising :class:`Refused`."""


def _sent(check: FieldCheck, default: Any = dataclasses.MISSING) -> Any:
    """A field a learner's kernel sends, checked by ``check``; required when it has no default."""
    return field(default=default, metadata={"check": check})


@dataclass(frozen=True, kw_only=True)
class Event:
    """What every event has: its ``id`` in the room's file (0 until stored), the server's time
    (``received``), the learner's clock (``sent``), the learner it is about, and whose dashboard
    took it (``actor``, for an action: ``instructor``, or ``helper:`` and the helper's name).
    ``learner_key`` is what the learner's kernels keep with their join (one per account on one
    machine): two learners who give one name are told apart by it. ``kind`` names the class; the
    fields of each kind are its own."""

    kind: ClassVar[str] = ""
    legacy_detail: ClassVar[str | None] = None
    """The field that room files written before kinds had fields of their own kept in their
    one ``detail`` column."""

    id: int = 0
    received: float = 0.0
    sent: float | None = None
    learner: str
    learner_key: str | None = None
    actor: str | None = None

    def __init_subclass__(cls, *, kind: str, legacy_detail: str | None = None) -> None:
        """A kind names itself, and its ``legacy_detail`` where it has one, in its class line:
        ``class Done(Event, kind="done")``. A kind without fields of its own needs no decorator
        (it is a dataclass through this one); one with fields takes the same decorator as this."""
        super().__init_subclass__()
        cls.kind = kind
        cls.legacy_detail = legacy_detail

    def refusal(self) -> str | None:
        """What is wrong between the fields (each one checked alone already), or ``None``."""
        return None

    def own_values(self) -> dict[str, Any]:
        """The values of the kind's own fields (:func:`own_fields`), by name, as stored."""
        return {f.name: getattr(self, f.name) for f in own_fields(type(self))}


def one_line(text: Any, name: str, empty: bool = False) -> str:
    """A short text a learner's kernel sent, checked: one line of printable characters, at most
    ``ROOM_TEXT_LIMITS[name]`` of them.

    >>> one_line("Type\\nError", "reason")
    Traceback (most recent call last):
    ...
    course_tools.room._events.Refused: reason must be one line of at most 300 printable characters
    """
    limit = ROOM_TEXT_LIMITS[name]
    if not (
        isinstance(text, str)
        and (empty or text.strip())
        and len(text) <= limit
        and not any(unicodedata.category(c).startswith("C") for c in text)
    ):
        raise Refused(400, f"{name} must be one line of at most {limit} printable characters")
    return text.strip()


def _text(name: str, empty: bool = False) -> FieldCheck:
    return lambda value, known: one_line(value, name, empty)


def _exercise(value: Any, known: Mapping[str, Any]) -> str:
    if not isinstance(value, str) or value not in known:
        raise Refused(400, f"unknown exercise {value!r}: ids look like '02.sgd_step'")
    return value


def _outcome(value: Any, known: Mapping[str, Any]) -> str:
    if value not in ROOM_OUTCOMES:
        raise Refused(400, f"outcome must be one of {', '.join(ROOM_OUTCOMES)}")
    return str(value)


def _hint(value: Any, known: Mapping[str, Any]) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 9:
        raise Refused(400, "hint must be a whole number from 0 to 9")
    return value


def _mistake(value: Any, known: Mapping[str, Any]) -> str:
    if not (isinstance(value, str) and _MISTAKE.fullmatch(value)):
        raise Refused(400, "mistake must be an id of 1 to 40 letters, digits or ._:/-")
    return value


def _setup_outcome(value: Any, known: Mapping[str, Any]) -> str:
    if value not in ("passed", "error"):
        raise Refused(400, "a ready event's outcome is passed or error")
    return str(value)


def _jax(value: Any, known: Mapping[str, Any]) -> str:
    if not (isinstance(value, str) and _VERSION.fullmatch(value)):
        raise Refused(400, "jax must be a version like 0.10.2, or empty")
    return value


def _backend(value: Any, known: Mapping[str, Any]) -> str:
    if not (isinstance(value, str) and _BACKEND.fullmatch(value)):
        raise Refused(400, "backend must be a name like cpu, gpu or tpu, or empty")
    return value.lower()


def _reason(value: Any, known: Mapping[str, Any]) -> str:
    return "" if value == "" else one_line(value, "reason")


def _flag(value: Any, known: Mapping[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise Refused(400, "beats must be true or false")
    return value


@dataclass(frozen=True, kw_only=True)
class Join(Event, kind="join"):
    """A kernel joined the room (``join_room`` or ``COURSE_ROOM``); ``beats`` when it sends
    heartbeats, so that its silence means it is gone."""

    beats: bool = _sent(_flag, False)


@dataclass(frozen=True, kw_only=True)
class CheckRun(Event, kind="check", legacy_detail="idea"):
    """A check's outcome on an exercise, the hint it showed, and the typical mistake it
    recognised with the course's idea and fix for it."""

    exercise: str = _sent(_exercise)
    outcome: str = _sent(_outcome)
    hint: int = _sent(_hint)
    mistake: str | None = _sent(_mistake, None)
    idea: str | None = _sent(_text("idea"), None)
    fix: str | None = _sent(_text("fix"), None)

    def refusal(self) -> str | None:
        if (self.idea is not None or self.fix is not None) and self.mistake is None:
            return "an idea or a fix comes with the mistake it is for"
        return None


@dataclass(frozen=True, kw_only=True)
class Start(Event, kind="start"):
    """A check began (its end is the :class:`CheckRun`): one that never ends is seen hung."""

    exercise: str = _sent(_exercise)


class Beat(Event, kind="beat"):
    """A joined kernel is alive: its room client sends one every ``BEAT_S`` seconds."""


@dataclass(frozen=True, kw_only=True)
class Ready(Event, kind="ready", legacy_detail="reason"):
    """``ready()``'s result: the JAX version and backend, or why the set-up failed."""

    outcome: str = _sent(_setup_outcome)
    jax: str = _sent(_jax)
    backend: str = _sent(_backend)
    reason: str = _sent(_reason, "")

    def refusal(self) -> str | None:
        if self.outcome == "error" and not self.reason:
            limit = ROOM_TEXT_LIMITS["reason"]
            return f"reason must be one line of at most {limit} printable characters"
        if self.outcome == "passed" and self.reason:
            return "only a failed setup has a reason"
        return None


@dataclass(frozen=True, kw_only=True)
class Hand(Event, kind="hand", legacy_detail="text"):
    """``help_me()``: a raised hand, with the learner's few words."""

    text: str = _sent(_text("text", empty=True), "")


class Done(Event, kind="done"):
    """``done()``: the hand lowered."""


class Leave(Event, kind="leave"):
    """``leave_room()``: the learner left; a hand still up goes down."""


class Helped(Event, kind="helped"):
    """A dashboard marked the learner helped."""


class Claim(Event, kind="claim"):
    """A helper (or the instructor) is on the way to the learner: every dashboard shows it until
    "Helped", another's claim, or a few minutes without either."""


@dataclass(frozen=True, kw_only=True)
class Rename(Event, kind="rename", legacy_detail="to"):
    """The instructor gave the learner another name, one not in the room."""

    to: str


@dataclass(frozen=True, kw_only=True)
class Merge(Event, kind="merge", legacy_detail="to"):
    """The instructor renamed the learner into a name in the room: one learner from then on."""

    to: str


class Remove(Event, kind="remove"):
    """The instructor took the learner off the dashboard (kept aside, back at their next
    event)."""


@dataclass(frozen=True, kw_only=True)
class Undo(Event, kind="undo", legacy_detail="undoes"):
    """The instructor took back the rename, merge or remove whose id is ``undoes``."""

    undoes: int = field(metadata={"stored": int})  # text in room files of the one detail column


class Block(Event, kind="block"):
    """The instructor started a block of exercises (``learner`` is empty)."""


LEARNER_KINDS: dict[str, type[Event]] = {
    cls.kind: cls for cls in (Join, Start, CheckRun, Beat, Ready, Hand, Done, Leave)
}
"""What a learner's kernel sends, by kind."""
ACTION_KINDS: dict[str, type[Event]] = {
    cls.kind: cls for cls in (Helped, Claim, Rename, Merge, Remove, Undo, Block)
}
"""What the dashboards do, by kind (a rename into a name in the room is stored as a merge)."""
KINDS: dict[str, type[Event]] = {**LEARNER_KINDS, **ACTION_KINDS}


def own_fields(cls: type[Event]) -> tuple[dataclasses.Field[Any], ...]:
    """The fields a kind has beyond those of every event."""
    common = {f.name for f in dataclasses.fields(Event)}
    return tuple(f for f in dataclasses.fields(cls) if f.name not in common)


def from_wire(data: Any, known: Mapping[str, Any]) -> Event:
    """The learner's event that ``data`` (parsed JSON; its join code already compared) describes,
    checked against its kind's schema, not yet stored (``id`` 0); :class:`Refused` otherwise.
    ``known`` holds the course's exercises by id.

    >>> from_wire({"name": "Ada", "kind": "check", "exercise": "99.nope", "outcome": "passed",
    ...            "hint": 0}, known={})
    Traceback (most recent call last):
    ...
    course_tools.room._events.Refused: unknown exercise '99.nope': ids look like '02.sgd_step'
    """
    if not isinstance(data, dict):
        raise Refused(400, "an event is a JSON object")
    cls = LEARNER_KINDS.get(data.get("kind"))  # type: ignore[arg-type]  # any JSON value
    if cls is None:
        kinds = ", ".join(LEARNER_KINDS)
        raise Refused(400, f"kind must be one of {kinds}, got {data.get('kind')!r}")
    schema = {f.name: f for f in own_fields(cls)}
    unknown = sorted(set(data) - set(_COMMON) - set(schema))
    if unknown:
        raise Refused(400, f"unknown field(s) for a {cls.kind} event: {', '.join(unknown)}")
    try:
        name = valid_name(data.get("name"))
    except ValueError as error:
        raise Refused(400, str(error)) from None
    sent = data.get("sent_at")
    number = isinstance(sent, int | float) and not isinstance(sent, bool)
    if sent is not None and not (number and _YEARS[0] < sent < _YEARS[1]):
        raise Refused(400, "sent_at must be a time: seconds since 1970, between 2000 and 2100")
    key = data.get("learner_key")
    if key is not None and not (isinstance(key, str) and _KEY.fullmatch(key)):
        raise Refused(400, "learner_key must be 8 to 64 letters, digits, _ or -")
    values = {
        key: one.metadata["check"](data.get(key), known)
        for key, one in schema.items()
        if key in data or one.default is dataclasses.MISSING
    }
    event = cls(learner=name, learner_key=key, sent=sent, **values)
    refusal = event.refusal()
    if refusal:
        raise Refused(400, refusal)
    return event


def from_stored(
    kind: str, common: Mapping[str, Any], fields: Mapping[str, Any] | None, detail: Any
) -> Event | None:
    """An event as read back from the room's file: ``fields`` its kind's own (``None`` for a row
    written before kinds had fields of their own: then they are in ``common`` under their own
    names, but for the one in ``detail``). ``None`` for a kind this room does not know, and for a
    row that lacks a field its kind requires, which the room's log names.

    >>> from_stored("rename", {"id": 7, "learner": "Ada"}, {}, None) is None
    True
    """
    cls = KINDS.get(kind)
    if cls is None:
        return None
    if fields is None:
        names = {f.name for f in own_fields(cls)}
        fields = {key: value for key, value in common.items() if key in names}
        if cls.legacy_detail is not None:
            fields = {**fields, cls.legacy_detail: detail}
    base: dict[str, Any] = {
        key: common.get(key) for key in ("id", "received", "sent", "learner", "actor")
    }
    base["learner_key"] = common.get("learner_key")
    lacking = [
        f.name
        for f in own_fields(cls)
        if f.default is dataclasses.MISSING and fields.get(f.name) is None
    ]
    if lacking:
        _log.warning(
            "event %s (%s) lacks %s: left out of the room",
            base["id"],
            kind,
            ", ".join(lacking),
        )
        return None
    typed = {f.name: _stored_value(f, fields[f.name]) for f in own_fields(cls) if f.name in fields}
    return cls(**base, **typed)


def _stored_value(one: dataclasses.Field[Any], value: Any) -> Any:
    """A stored value as the field holds it: converted by ``stored`` in the field's metadata
    where it has one; a missing value is the field's default."""
    if value is None and one.default is not dataclasses.MISSING:
        return one.default
    convert = one.metadata.get("stored")
    return value if convert is None else convert(value)
