"""The room's web application (tornado): learners add events with the join code; the instructor's
token opens the dashboard, its live stream, the settings and the export.

Routes, under an optional path prefix (``base_path``, for a reverse proxy):

* ``POST api/events``: one event as JSON, with the join code. 201 when stored; 4xx with
  ``{"error": "..."}`` and nothing stored otherwise.
* ``GET dashboard?token=…``: the dashboard page. ``GET api/stream?token=…``: its server-sent
  events, a snapshot first and then updates. ``POST api/settings`` (header ``X-Room-Token``):
  the minutes of silence that count as stuck. ``GET export.csv?token=…``: every event.
* ``GET /`` (the prefix itself): the page to project, with the join line and no secret of the
  instructor's.
* ``GET static/…``: the page's script and style; nothing is loaded from elsewhere.
"""

from __future__ import annotations

import asyncio
import csv
import hmac
import html
import io
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tornado.web
from tornado.iostream import StreamClosedError

from course_lib.checks import ROOM_OUTCOMES, valid_name

from ._state import RoomState
from ._store import EVENT_COLUMNS, Event, RoomStore

STATIC = Path(__file__).parent / "static"
KINDS = ("join", "check", "ready")
_FIELDS = {
    "join": {"code", "name", "kind", "sent_at"},
    "check": {"code", "name", "kind", "sent_at", "exercise", "outcome", "hint"},
    "ready": {"code", "name", "kind", "sent_at", "outcome", "jax", "backend"},
}
_VERSION = re.compile(r"[0-9A-Za-z.+\-]{1,40}")
_BACKEND = re.compile(r"[A-Za-z0-9_\-]{1,20}")
_YEARS = (946_684_800, 4_102_444_800)  # 2000-01-01 and 2100-01-01, in seconds since 1970
HEARTBEAT_S = 5.0
PUSH_EVERY_MS = 100
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Refused(Exception):
    """An event the room does not store: the HTTP status and what to tell the sender."""

    def __init__(self, status: int, message: str, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Limits:
    """What one request and one sender may do. Rates are events per second, with a burst; new
    names are counted per address too, so that one machine cannot fill the room with made-up
    learners (a whole class behind one address still joins in a minute or two)."""

    event_bytes: int = 2048
    learner_rate: float = 5.0
    learner_burst: float = 30.0
    host_rate: float = 200.0
    host_burst: float = 400.0
    new_names_rate: float = 1.0
    new_names_burst: float = 60.0
    max_learners: int = 500


class TokenBuckets:
    """One token bucket per key: ``take(key)`` is 0 when allowed, else the seconds to wait.

    >>> clock = iter([0.0, 0.0, 0.0, 1.0]).__next__
    >>> buckets = TokenBuckets(rate=1.0, burst=2.0, clock=clock)
    >>> [buckets.take("ada") for _ in range(4)]
    [0.0, 0.0, 1.0, 0.0]
    """

    def __init__(
        self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._buckets: dict[Any, tuple[float, float]] = {}

    def take(self, key: Any) -> float:
        now = self.clock()
        tokens, then = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - then) * self.rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / self.rate
        self._buckets[key] = (tokens - 1.0, now)
        if len(self._buckets) > 20_000:  # forget the full buckets: they behave as new ones
            self._buckets = {
                k: v
                for k, v in self._buckets.items()
                if v[0] + (now - v[1]) * self.rate < self.burst
            }
        return 0.0


def validate(data: Any, code: str, known: Mapping[str, Any]) -> dict[str, Any]:
    """The event as stored, or :class:`Refused` saying what is wrong with it.

    >>> validate({"code": "AB", "name": "Ada", "kind": "join"}, "AB", {})
    {'code': 'AB', 'name': 'Ada', 'kind': 'join'}
    >>> validate({"code": "AB", "name": "Ada", "kind": "check", "exercise": "99.nope",
    ...           "outcome": "passed", "hint": 0}, "AB", {})
    Traceback (most recent call last):
    ...
    course_tools.room._app.Refused: unknown exercise '99.nope': ids look like '02.sgd_step'
    """
    if not isinstance(data, dict):
        raise Refused(400, "an event is a JSON object")
    sent_code = data.get("code")
    if not isinstance(sent_code, str) or not hmac.compare_digest(
        plain_code(sent_code).encode(), plain_code(code).encode()
    ):
        raise Refused(403, "wrong join code: copy the join line your instructor's room printed")
    kind = data.get("kind")
    if kind not in KINDS:
        raise Refused(400, f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    unknown = sorted(set(data) - _FIELDS[kind])
    if unknown:
        raise Refused(400, f"unknown field(s) for a {kind} event: {', '.join(unknown)}")
    try:
        data["name"] = valid_name(data.get("name"))
    except ValueError as error:
        raise Refused(400, str(error)) from None
    sent = data.get("sent_at")
    number = isinstance(sent, int | float) and not isinstance(sent, bool)
    if sent is not None and not (number and _YEARS[0] < sent < _YEARS[1]):
        raise Refused(400, "sent_at must be a time: seconds since 1970, between 2000 and 2100")
    if kind == "check":
        exercise = data.get("exercise")
        if not isinstance(exercise, str) or exercise not in known:
            raise Refused(400, f"unknown exercise {exercise!r}: ids look like '02.sgd_step'")
        if data.get("outcome") not in ROOM_OUTCOMES:
            raise Refused(400, f"outcome must be one of {', '.join(ROOM_OUTCOMES)}")
        hint = data.get("hint")
        if not isinstance(hint, int) or isinstance(hint, bool) or not 0 <= hint <= 9:
            raise Refused(400, "hint must be a whole number from 0 to 9")
    if kind == "ready":
        if data.get("outcome") not in ("passed", "error"):
            raise Refused(400, "a ready event's outcome is passed or error")
        if not (isinstance(data.get("jax"), str) and _VERSION.fullmatch(data["jax"])):
            raise Refused(400, "jax must be a version like 0.10.2")
        if not (isinstance(data.get("backend"), str) and _BACKEND.fullmatch(data["backend"])):
            raise Refused(400, "backend must be a name like cpu, gpu or tpu")
        data["backend"] = data["backend"].lower()
    return data


def plain_code(code: str) -> str:
    """A join code as compared: upper case, without dashes or spaces (``k7px 3mqd`` is
    ``K7PX3MQD``).

    >>> plain_code(" k7px-3mqd ")
    'K7PX3MQD'
    """
    return "".join(code.split()).replace("-", "").upper()


def sse(kind: str, data: Any, event_id: int) -> bytes:
    """One server-sent event."""
    return f"id: {event_id}\nevent: {kind}\ndata: {json.dumps(data)}\n\n".encode()


class Room:
    """The room being served: its store, its state, its limits and the dashboards listening."""

    def __init__(
        self,
        store: RoomStore,
        state: RoomState,
        limits: Limits = Limits(),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.state, self.limits, self.clock = store, state, limits, clock
        self.learner_buckets = TokenBuckets(limits.learner_rate, limits.learner_burst)
        self.host_buckets = TokenBuckets(limits.host_rate, limits.host_burst)
        self.name_buckets = TokenBuckets(limits.new_names_rate, limits.new_names_burst)
        self.listeners: set[asyncio.Queue[bytes | None]] = set()
        self.public_url = ""  # the address learners use, when the command line gave one
        self.base = ""
        self._last_push = 0.0
        for event in store.events():
            state.apply(event)
        state.take_changed()

    def add(self, data: Any, host: str) -> Event:
        """Validate, rate-limit and store one event; :class:`Refused` when it is not stored."""
        fields = validate(data, self.store.code, self.state.exercises)
        name = fields["name"]
        wait = max(self.host_buckets.take(host), self.learner_buckets.take((host, name)))
        if wait:
            raise Refused(429, f"too many events: wait {wait:.1f} s", retry_after=wait)
        if name not in self.state.learners:
            if len(self.state.learners) >= self.limits.max_learners:
                raise Refused(
                    403,
                    f"the room is full ({self.limits.max_learners} learners): tell your "
                    "instructor, who can start it with a higher --max-learners",
                )
            wait = self.name_buckets.take(host)
            if wait:
                raise Refused(429, f"too many new names from one address: wait {wait:.1f} s", wait)
        event = self.store.add(self.clock(), fields)
        self.state.apply(event)
        return event

    def set_idle_minutes(self, minutes: float) -> None:
        self.state.idle_minutes = minutes
        self.store.set("idle_minutes", str(minutes))
        self._last_push = 0.0  # the needs-help list changes now

    def snapshot(self) -> bytes:
        return sse("snapshot", self.state.snapshot(self.clock()), self.state.last_event)

    def push(self) -> None:
        """Send the changes since the last push to every dashboard (a heartbeat when idle)."""
        now = self.clock()
        changed = self.state.take_changed()
        if not changed and now - self._last_push < HEARTBEAT_S:
            return
        self._last_push = now
        if not self.listeners:
            return
        message = sse(
            "update", {**self.state.summary(now), "learners": changed}, self.state.last_event
        )
        for queue in list(self.listeners):
            try:
                queue.put_nowait(message)
            except asyncio.QueueFull:  # a dashboard that stopped reading: it reconnects afresh
                self.listeners.discard(queue)
                queue.get_nowait()
                queue.put_nowait(None)

    def export_csv(self) -> str:
        """Every event as CSV, times in UTC; a text cell that a spreadsheet would run as a formula
        starts with an apostrophe."""
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(EVENT_COLUMNS)
        for event in self.store.events():
            writer.writerow([_csv_cell(getattr(event, column)) for column in EVENT_COLUMNS])
        return out.getvalue()


def _csv_cell(value: Any) -> Any:
    if isinstance(value, float):
        try:
            return datetime.fromtimestamp(value, UTC).isoformat(timespec="milliseconds")
        except (OverflowError, OSError, ValueError):
            return value
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


class _Handler(tornado.web.RequestHandler):
    room: Room

    def initialize(self, room: Room) -> None:
        self.room = room

    def set_default_headers(self) -> None:
        for header, value in SECURITY_HEADERS.items():
            self.set_header(header, value)

    def refuse(self, status: int, message: str) -> None:
        self.set_status(status)
        self.finish({"error": message})

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.finish({"error": self._reason})

    def instructor(self) -> bool:
        """Whether the request holds the instructor's token (else it is answered 401 here)."""
        token = self.request.headers.get("X-Room-Token") or self.get_query_argument("token", "")
        if token and hmac.compare_digest(token.encode(), self.room.store.token.encode()):
            return True
        self.refuse(
            401,
            "this page needs the instructor's token: open the dashboard address "
            "that course-room serve printed",
        )
        return False


class EventsHandler(_Handler):
    def post(self) -> None:
        body = self.request.body
        if len(body) > self.room.limits.event_bytes:
            return self.refuse(413, f"an event is at most {self.room.limits.event_bytes} bytes")
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            return self.refuse(400, "the body must be one JSON object")
        try:
            event = self.room.add(data, self.request.remote_ip or "")
        except Refused as refused:
            if refused.retry_after:
                self.set_header("Retry-After", str(math.ceil(refused.retry_after)))
            return self.refuse(refused.status, refused.message)
        self.set_status(201)
        self.finish({"id": event.id})


class JoinPageHandler(_Handler):
    """The page to project: the join line and nothing else (no token, no learner's data)."""

    def get(self) -> None:
        url = (
            self.room.public_url or f"{self.request.protocol}://{self.request.host}{self.room.base}"
        )
        code = self.room.store.code
        line = f'join_room("{url}", code="{code}", name="YOUR NAME")'
        page = (STATIC / "join.html").read_text(encoding="utf-8")
        for key, value in (("CODE", code), ("LINE", line), ("URL", url)):
            page = page.replace("{{" + key + "}}", html.escape(value))
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(page)


class DashboardHandler(_Handler):
    def get(self) -> None:
        if self.instructor():
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish((STATIC / "dashboard.html").read_bytes())


class StreamHandler(_Handler):
    def initialize(self, room: Room) -> None:
        super().initialize(room)
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=256)

    async def get(self) -> None:
        if not self.instructor():
            return
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("X-Accel-Buffering", "no")  # a proxy must pass each event on at once
        self.room.listeners.add(self.queue)
        try:
            self.write(b"retry: 2000\n\n" + self.room.snapshot())
            await self.flush()
            while (message := await self.queue.get()) is not None:
                self.write(message)
                await self.flush()
        except StreamClosedError:
            pass
        finally:
            self.room.listeners.discard(self.queue)

    def on_connection_close(self) -> None:
        self.room.listeners.discard(self.queue)
        if self.queue.full():
            self.queue.get_nowait()
        self.queue.put_nowait(None)


class SettingsHandler(_Handler):
    def post(self) -> None:
        if not self.instructor():
            return
        try:
            minutes = float(json.loads(self.request.body)["idle_minutes"])
        except (ValueError, KeyError, TypeError):
            return self.refuse(400, 'send {"idle_minutes": N}')
        if not 1 <= minutes <= 120:
            return self.refuse(400, "idle_minutes must be between 1 and 120")
        self.room.set_idle_minutes(minutes)
        self.finish({"idle_minutes": minutes})


class ExportHandler(_Handler):
    def get(self) -> None:
        if self.instructor():
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.room.store.path.stem)
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", f'attachment; filename="{name}-events.csv"')
            self.finish(self.room.export_csv())


class StaticHandler(tornado.web.StaticFileHandler):
    def set_default_headers(self) -> None:
        for header, value in SECURITY_HEADERS.items():
            self.set_header(header, value)


def make_app(room: Room, base_path: str = "") -> tornado.web.Application:
    """The application, every route under ``base_path`` (``""`` or like ``"/room"``)."""
    base = "/" + base_path.strip("/") if base_path.strip("/") else ""
    room.base = base
    args = {"room": room}
    return tornado.web.Application(
        [
            (f"{base}/", JoinPageHandler, args),
            (f"{base}/api/events", EventsHandler, args),
            (f"{base}/dashboard", DashboardHandler, args),
            (f"{base}/api/stream", StreamHandler, args),
            (f"{base}/api/settings", SettingsHandler, args),
            (f"{base}/export.csv", ExportHandler, args),
            (f"{base}/static/(.*)", StaticHandler, {"path": str(STATIC)}),
        ],
    )
