"""The room's web application (tornado): learners add events with the join code; the instructor's
token opens the dashboard, its live stream, the settings and the export.

Routes, under an optional path prefix (``base_path``, for a reverse proxy):

* ``POST api/events``: one event as JSON, with the join code. 201 when stored, with the name the
  dashboard shows for the learner (``Sam (2)`` when another learner holds ``Sam``); 4xx with
  ``{"error": "..."}`` and nothing stored otherwise.
* ``GET dashboard?token=…``: the dashboard page. ``GET api/stream?token=…``: its server-sent
  events, a snapshot first and then updates. ``POST api/actions`` (header ``X-Room-Token``):
  claim a learner ("On my way") or mark them helped. These take the instructor's token or the
  helpers'.
* With the instructor's token only: the other actions (rename, merge or remove a learner, undo
  the latest of those, start a block of exercises); ``POST api/settings``, the minutes without a
  check after which the room counts as paused; ``GET export.csv?token=…``, every event.
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
import logging
import math
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tornado.httpserver
import tornado.web
from tornado.iostream import IOStream, StreamClosedError

from course_lib.checks import valid_name

from ._events import (
    Block,
    Claim,
    Event,
    Helped,
    Merge,
    Refused,
    Remove,
    Rename,
    Undo,
    from_wire,
)
from ._state import RoomState, helper_name
from ._store import EXPORT_COLUMNS, RoomStore

STATIC = Path(__file__).parent / "static"
ACTIONS = ("claim", "helped", "rename", "remove", "undo", "block")
"""What the dashboard does: to a learner (a rename into a name in the room merges, and is stored
as ``merge``), undo the latest rename, merge or remove, start a block of exercises. ``claim``
("On my way") and ``helped`` alone are open to the helpers' link, each with the helper's name
(``by``). Each is stored with who took it (``actor``: ``instructor`` or ``helper:NAME``)."""
HELPER_ACTIONS = ("claim", "helped")
MAX_BODY_BYTES = 1024 * 1024
"""The most of a request's body the server reads (it answers 413 as soon as the headers show
more than an event's size, and drops what follows)."""
HEARTBEAT_S = 5.0
PUSH_EVERY_MS = 100
log = logging.getLogger("course_tools.room")
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


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


def validate(data: Any, code: str, known: Mapping[str, Any]) -> Event:
    """The learner's event, not yet stored, when ``data`` holds the room's join ``code`` and
    passes its kind's schema (see :func:`~._events.from_wire`); else :class:`Refused` saying
    what is wrong with it. ``data`` is left as it was.

    >>> validate({"code": "AB", "name": "Ada", "kind": "join"}, "AB", {})
    Join(id=0, received=0.0, sent=None, learner='Ada', learner_key=None, actor=None, beats=False)
    >>> validate({"code": "AB", "name": "Ada", "kind": "join"}, "CD", {})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    course_tools.room._events.Refused: wrong join code: copy the join line your instructor's ...
    """
    sent_code = data.get("code") if isinstance(data, dict) else None
    if not isinstance(sent_code, str) or not hmac.compare_digest(
        plain_code(sent_code).encode(errors="surrogatepass"), plain_code(code).encode()
    ):
        if not isinstance(data, dict):
            raise Refused(400, "an event is a JSON object")
        raise Refused(403, "wrong join code: copy the join line your instructor's room printed")
    return from_wire(data, known)


def read_json(body: bytes) -> Any:
    """A request's body as JSON; ``ValueError`` when it is not JSON or too deep to read.

    >>> read_json(b"[" * 5000 + b"]" * 5000)
    Traceback (most recent call last):
    ...
    ValueError: too deeply nested to read
    """
    try:
        return json.loads(body)
    except RecursionError:
        raise ValueError("too deeply nested to read") from None


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
        self.addresses: list[str] = []  # else the addresses it listens on that others can reach
        self.base = ""
        self._last_push = 0.0
        state.replay(store.events())
        state.take_changed()

    def add(self, data: Any, host: str) -> Event:
        """Validate, rate-limit and store one event; :class:`Refused` when it is not stored."""
        unstored = validate(data, self.store.code, self.state.exercises)
        name = unstored.learner
        wait = max(self.host_buckets.take(host), self.learner_buckets.take((host, name)))
        if wait:
            raise Refused(429, f"too many events: wait {wait:.1f} s", retry_after=wait)
        if self.state.shown_name(unstored) not in self.state.learners:
            if len(self.state.learners) >= self.limits.max_learners:
                raise Refused(
                    403,
                    f"the room is full ({self.limits.max_learners} learners): tell your "
                    "instructor, who can start it with a higher --max-learners",
                )
            wait = self.name_buckets.take(host)
            if wait:
                raise Refused(429, f"too many new names from one address: wait {wait:.1f} s", wait)
        event = self.store.add(self.clock(), unstored)
        self.state.apply(event)
        return event

    def act(self, data: Any, instructor: bool) -> Event:
        """Store one action of the dashboard's (see :data:`ACTIONS`); the helpers' link may only
        claim a learner or mark them helped. :class:`Refused` says what is wrong. An undo names
        the action it takes back (``id``), which must still be the latest: the room then is
        worked out again from its file, without it."""
        if not isinstance(data, dict) or data.get("kind") not in ACTIONS:
            raise Refused(
                400, f"an action is a JSON object whose kind is one of {', '.join(ACTIONS)}"
            )
        kind = data["kind"]
        if kind not in HELPER_ACTIONS and not instructor:
            raise Refused(
                403, "the helpers' link can claim learners and mark them helped; ask the instructor"
            )
        actor = "instructor" if instructor else self._helper(data)
        if kind == "undo":
            unstored: Event = self._undo(data, actor)
        elif kind == "block":
            unstored = Block(learner="", actor=actor)
        else:
            unstored = self._on_learner(data, actor)
        event = self.store.add(self.clock(), unstored)
        if kind == "undo":
            self.state = self.state.rebuilt(self.store.events())
        else:
            self.state.apply(event)
        self._last_push = 0.0  # the dashboards show it at the next push
        return event

    def _on_learner(self, data: dict[str, Any], actor: str) -> Event:
        """An action on a learner of the room: helped, rename (merge), remove."""
        name = data.get("name")
        if not isinstance(name, str) or name not in self.state.learners:
            raise Refused(404, f"no learner named {name!r} in the room")
        sent, key = self.state.sent_as(name)  # stored as the learner's own events are
        if data["kind"] == "helped":
            return Helped(learner=sent, learner_key=key, actor=actor)
        if data["kind"] == "claim":
            claim = self.state.claims(self.clock()).get(name)
            if claim and claim["by"] != helper_name(actor) and data.get("take_over") is not True:
                minutes = int((self.clock() - claim["since"]) // 60)
                raise Refused(
                    409,
                    f"{claim['by']} is on the way to {name} ({minutes} min): confirm to take it "
                    "over",
                )
            return Claim(learner=sent, learner_key=key, actor=actor)
        if data["kind"] == "remove":
            return Remove(learner=name, actor=actor)
        try:
            new = valid_name(data.get("to"))
        except ValueError as error:
            raise Refused(400, str(error)) from None
        if new == name:
            raise Refused(400, "the new name is the name it has")
        kind = Merge if new in self.state.learners else Rename
        return kind(learner=name, actor=actor, to=new)

    @staticmethod
    def _helper(data: dict[str, Any]) -> str:
        """``helper:NAME``, the helper who sent an action, by the name their page asked once."""
        try:
            return "helper:" + valid_name(data.get("by"))
        except ValueError:
            raise Refused(
                400,
                "a helper's action says who took it: type your name at the top of the helpers' "
                "page",
            ) from None

    def _undo(self, data: dict[str, Any], actor: str) -> Undo:
        """An undo of the action ``data["id"]`` names, the latest in force."""
        latest = self.state.undoable()
        if latest is None:
            raise Refused(409, "there is nothing to undo: no rename, merge or remove in force")
        if data.get("id") != latest["id"]:
            raise Refused(
                409,
                "that is no longer the latest rename, merge or remove: the dashboard now shows "
                "the one to undo",
            )
        return Undo(learner=latest["name"], actor=actor, undoes=latest["id"])

    def set_idle_minutes(self, minutes: float) -> None:
        self.state.idle_minutes = minutes
        self.store.set("idle_minutes", str(minutes))
        self._last_push = 0.0  # the needs-help list changes now

    def reach(self) -> str:
        """What the instructor must know about how learners reach the room, or ``""``."""
        if self.public_url or self.addresses:
            shown = self.public_url or " or ".join(self.addresses)
            return (
                f"Learners reach the room at {shown}: the join page shows that address even "
                "when opened on this machine (as localhost), which reaches nobody else."
            )
        return (
            "The room listens on this machine only: learners cannot reach it. Restart it with "
            "--host 0.0.0.0 (or --public-url)."
        )

    def snapshot(self, role: str) -> bytes:
        """The whole room for a dashboard that just connected, with the role its token gives
        (and, for the instructor, how learners reach the room)."""
        data = {**self.state.snapshot(self.clock()), "role": role}
        if role == "instructor":
            data["reach"] = self.reach()
        return sse("snapshot", data, self.state.last_event)

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
        writer.writerow(EXPORT_COLUMNS)
        for event in self.store.events():
            writer.writerow([_csv_cell(getattr(event, column, None)) for column in EXPORT_COLUMNS])
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

    def role(self) -> str:
        """``"instructor"`` or ``"helper"``, by the token the request holds, else ``""``."""
        token = self.request.headers.get("X-Room-Token") or self.get_query_argument("token", "")
        store = self.room.store
        for role, secret in (("instructor", store.token), ("helper", store.helper_token)):
            if token and hmac.compare_digest(token.encode(errors="surrogatepass"), secret.encode()):
                return role
        return ""

    def authorised(self, helpers_too: bool = False) -> bool:
        """Whether the request holds the instructor's token (or, with ``helpers_too``, the
        helpers'); else it is answered here, 401 or 403."""
        role = self.role()
        if role == "instructor" or (role == "helper" and helpers_too):
            return True
        if role == "helper":
            self.refuse(403, "the helpers' link cannot export or change settings")
        else:
            self.refuse(
                401,
                "this page needs the instructor's token: open the dashboard address "
                "that course-room serve printed",
            )
        return False


@tornado.web.stream_request_body
class _BodyHandler(_Handler):
    """A POST whose body is at most ``limits.event_bytes``: a longer one is answered 413 with a
    message as soon as its headers arrive, and what follows of it (up to the server's
    ``MAX_BODY_BYTES``) is read and dropped."""

    def prepare(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.refused = False
        length = self.request.headers.get("Content-Length", "0")
        if not length.isdigit() or int(length) > self.room.limits.event_bytes:
            self.too_long()

    def data_received(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size <= self.room.limits.event_bytes:
            self.chunks.append(chunk)
        elif not self.refused:
            self.too_long()

    def too_long(self) -> None:
        self.refused = True
        self.refuse(413, f"a request is at most {self.room.limits.event_bytes} bytes")

    def body_json(self) -> Any:
        """The body as JSON (``ValueError`` when it is not)."""
        return read_json(b"".join(self.chunks))


class EventsHandler(_BodyHandler):
    def post(self) -> None:
        try:
            data = self.body_json()
        except ValueError:
            return self.refuse(400, "the body must be one JSON object")
        try:
            event = self.room.add(data, self.request.remote_ip or "")
        except Refused as refused:
            if refused.retry_after:
                self.set_header("Retry-After", str(math.ceil(refused.retry_after)))
            return self.refuse(refused.status, refused.message)
        self.set_status(201)
        self.finish({"id": event.id, "name": self.room.state.shown_name(event)})


class ActionsHandler(_BodyHandler):
    """``POST api/actions``: helped, rename (merge) or remove a learner, from the dashboard."""

    def post(self) -> None:
        if not self.authorised(helpers_too=True):
            return
        try:
            event = self.room.act(self.body_json(), self.role() == "instructor")
        except ValueError:
            return self.refuse(400, "the body must be one JSON object")
        except Refused as refused:
            return self.refuse(refused.status, refused.message)
        self.set_status(201)
        self.finish({"id": event.id})


def is_loopback(host: str) -> bool:
    """Whether a host name or address is this machine's own (``localhost``, ``127.x``, ``::1``).

    >>> [is_loopback(h) for h in ("localhost", "127.0.0.1", "[::1]", "192.168.1.20")]
    [True, True, True, False]
    """
    host = host.strip("[]").lower()
    return host in ("localhost", "::1") or host.startswith("127.") or host.endswith(".localhost")


class JoinPageHandler(_Handler):
    """The page to project: the join line and nothing else (no token, no learner's data). Opened
    on the room's own machine (``localhost``), which is how it gets projected, it never shows a
    join line with that address, which reaches nobody else: it shows the addresses learners can
    use, without a word about it (the instructor's dashboard says it). Only a room that listens
    on this machine alone, with no line to show, says what to do on this page."""

    def get(self) -> None:
        urls = [self.room.public_url] if self.room.public_url else []
        warning = ""
        if not urls and is_loopback(self.request.host_name):
            urls = self.room.addresses
            if not urls:
                warning = (
                    "The room listens on this machine only: restart it with --host 0.0.0.0 "
                    "(or --public-url) so that learners can reach it."
                )
        elif not urls:
            urls = [f"{self.request.protocol}://{self.request.host}{self.room.base}"]
        code = self.room.store.code
        lines = "\n".join(f'join_room("{url}", code="{code}", name="YOUR NAME")' for url in urls)
        page = (STATIC / "join.html").read_text(encoding="utf-8")
        for key, value in (
            ("CODE", code),
            ("LINES", lines or "# no address learners can reach: see above"),
            ("URL", " or ".join(urls) or "none reachable yet"),
        ):
            page = page.replace("{{" + key + "}}", html.escape(value))
        shown = f'<p class="warning" role="alert">{html.escape(warning)}</p>' if warning else ""
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(page.replace("{{WARNING}}", shown))


class DashboardHandler(_Handler):
    def get(self) -> None:
        if self.authorised(helpers_too=True):
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish((STATIC / "dashboard.html").read_bytes())


class StreamHandler(_Handler):
    def initialize(self, room: Room) -> None:
        super().initialize(room)
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=256)

    async def get(self) -> None:
        if not self.authorised(helpers_too=True):
            return
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("X-Accel-Buffering", "no")  # a proxy must pass each event on at once
        self.room.listeners.add(self.queue)
        try:
            self.write(b"retry: 2000\n\n" + self.room.snapshot(self.role()))
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


class SettingsHandler(_BodyHandler):
    def post(self) -> None:
        if not self.authorised():
            return
        try:
            minutes = float(self.body_json()["idle_minutes"])
        except (ValueError, KeyError, TypeError):
            return self.refuse(400, 'send {"idle_minutes": N}')
        if not 1 <= minutes <= 120:
            return self.refuse(400, "idle_minutes must be between 1 and 120")
        self.room.set_idle_minutes(minutes)
        self.finish({"idle_minutes": minutes})


class ExportHandler(_Handler):
    def get(self) -> None:
        if self.authorised():
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.room.store.path.stem)
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", f'attachment; filename="{name}-events.csv"')
            self.finish(self.room.export_csv())


class StaticHandler(tornado.web.StaticFileHandler):
    def set_default_headers(self) -> None:
        for header, value in SECURITY_HEADERS.items():
            self.set_header(header, value)

    def parse_url_path(self, url_path: str) -> str:
        if "\x00" in url_path:  # no file has one; the operating system refuses to look
            raise tornado.web.HTTPError(404)
        return super().parse_url_path(url_path)


class BoundedServer(tornado.httpserver.HTTPServer):
    """An HTTP server that keeps at most ``per_address`` connections from one address and
    ``total`` in all, closing the others as they come, so that one machine holding connections
    open cannot use up the room's open files. (Behind ``--behind-proxy`` every learner comes
    through the proxy's address: the proxy bounds its clients.)"""

    per_address = 64
    total = 900
    _open: Counter[str]

    def handle_stream(self, stream: IOStream, address: Any) -> None:
        if not hasattr(self, "_open"):
            self._open = Counter()
        host = str(address[0]) if isinstance(address, tuple) else ""
        if self._open[host] >= self.per_address or self._open.total() >= self.total:
            log.warning("too many connections (from %s): closing the newest", host)
            stream.close()
            return
        self._open[host] += 1
        super().handle_stream(stream, address)

    def on_close(self, server_conn: object) -> None:
        address = server_conn.context.address  # type: ignore[attr-defined]  # HTTP1ServerConnection's
        host = str(address[0]) if isinstance(address, tuple) else ""
        self._open[host] -= 1
        super().on_close(server_conn)


class OnceEvery(logging.Filter):
    """Lets a log message through once per ``seconds``, so that an error repeated as fast as a
    loop can go (say, ``Too many open files``) is said once, not thousands of times.

    >>> once = OnceEvery(60.0, clock=iter([0.0, 1.0, 61.0]).__next__)
    >>> [once.filter(logging.makeLogRecord({"msg": f"fd {n} full"})) for n in range(3)]
    [True, False, True]
    """

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.seconds, self.clock = seconds, clock
        self._said: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        now = self.clock()
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += repr(record.exc_info[1])
        text = re.sub(r"\d+", "#", text)  # the same error, whatever its counts, times or ports
        if now - self._said.get(text, -math.inf) < self.seconds:
            return False
        if len(self._said) > 1000:
            self._said.clear()
        self._said[text] = now
        return True


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
            (f"{base}/api/actions", ActionsHandler, args),
            (f"{base}/export.csv", ExportHandler, args),
            (f"{base}/static/(.*)", StaticHandler, {"path": str(STATIC)}),
        ],
    )
