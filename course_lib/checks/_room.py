"""A workshop's room: each self-check tells the instructor's dashboard how it went.

The instructor runs ``course-room serve`` (``course_tools.room``), which prints a join line::

    from course_lib.checks import join_room
    join_room("http://192.168.1.20:8765", code="K7PX-3MQD", name="Ada")

or, before starting Jupyter, one environment variable::

    COURSE_ROOM="http://192.168.1.20:8765?code=K7PX-3MQD&name=Ada" jupyter lab

A join made in one notebook holds for every kernel of the learner's, those already running
included, for 12 hours (it is kept in the learner's configuration folder, which each check looks
at with one ``stat``), so every lesson and exercise notebook is in the room; ``leave_room()``
ends it for all of them the same way. From then on every ``check`` sends one small event: the
room's code, the learner's name and key, the exercise, its outcome, the hint number shown, the
typical mistake the check recognised (its id, the course's idea and fix for it) and the time.
Never code, outputs or values. The key, made at random once and kept with the join (alone, for
a join from ``COURSE_ROOM``, which keeps no join), tells two learners of one name apart: the
second is shown as ``Sam (2)`` and told so; every kernel of one learner on one machine sends the
same key. The join is kept per machine (its name is in the
file's), so lab machines sharing one home folder keep one join each. ``help_me()`` and
``done()`` raise and lower the learner's hand; ``leave_room()`` tells the room, which lowers it
too.

A check never waits on the room (but a kernel's first, joining from ``COURSE_ROOM``, waits up to
3 s for the join's answer, to say what happened): events go to a queue that one background thread
empties, with a short timeout, retrying while the room does not answer. Nothing here raises into
a check; when the room cannot be reached, the next check prints one notice, once per session.
Standard library only (:func:`setup_failure` asks the JAX that the checks imported whether it
starts, once a check has failed).
"""

from __future__ import annotations

import collections
import http.client
import json
import math
import os
import secrets
import socket
import sys
import threading
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOM_ENV = "COURSE_ROOM"
"""The environment variable that joins a room when the first check runs: ``URL?code=…&name=…``;
``off`` joins none, not even one joined earlier."""

NAME_LIMIT = 64
BEAT_S = 45.0
"""Seconds between a joined kernel's heartbeats, which tell the room it is alive when no check
runs: the room asks "kernel gone?" after two are missed."""
START_AFTER_S = 5.0
"""Seconds a check runs before the room is told it began: one still running a minute later shows
as running on the dashboard. Quicker checks, nearly all, send their end alone."""
HAND_WAIT = 2.0
"""Seconds ``help_me``, ``done`` and ``leave_room`` wait for the room to take their event, so that
what they print is true."""
JOIN_WAIT = 3.0
"""Seconds a join waits for the room's answer, in all (``join_room``'s default, and the first check
of a kernel joining from ``COURSE_ROOM``), so that it says only what happened."""
_PLACEHOLDERS = {
    "yourname",
    "yournamehere",
    "yourfullname",
    "name",
    "fullname",
    "firstname",
    "lastname",
    "firstlast",
    "firstnamelastname",
}
"""Names that are the join line's placeholder, or a form's, compared by their letters and digits
alone in lower case: ``<your name>``, ``YOUR_NAME`` and ``Firstname Lastname`` are all refused."""
OUTCOMES = {
    "passed": "passed",
    "failed": "incorrect",
    "flagged": "incorrect",
    "error": "error",
    "not_attempted": "not_attempted",
}
"""A check's verdict status, as the room names the outcome."""
ROOM_OUTCOMES = tuple(dict.fromkeys(OUTCOMES.values()))
"""The outcomes an event may carry, as the room names them (the room's server checks them)."""
ROOM_TEXT_LIMITS = {"idea": 300, "fix": 300, "reason": 300, "text": 100}
"""The most characters of each text an event may carry: a check's idea and fix for the mistake it
recognised, a failed setup's reason, a raised hand's words (the room's server checks them)."""

_SENT = (
    "each check now sends the room your name (with a random key kept on this machine, which "
    "tells two learners of one name apart), the exercise, its outcome (passed, incorrect, "
    "not attempted or error), the hint number shown, the typical mistake it recognised (in the "
    "course's words) and the time; never your code or its values"
)
_CLOUD_ADVICE = (
    "If this notebook runs on Colab or Binder, it runs on a server in the cloud that cannot see "
    "your room's local network: ask your instructor for the room's public address. Your checks "
    "work as usual either way; the instructor just does not see them."
)


class RoomClient:
    """Sends one learner's events to a room from a background thread, never raising.

    ``send`` only appends to a bounded queue (the oldest event is dropped when it is full) and
    returns at once; from the first, a second thread adds a heartbeat every :data:`BEAT_S`
    seconds. The thread posts each event with ``timeout`` seconds to answer; a room that
    does not answer, answers 5xx or asks to slow down (429) gets the same event again after a
    pause that doubles up to ``max_pause``. An event the room refuses (another 4xx) is dropped.
    Either way :meth:`take_notice` hands out one line saying so, once. Whoever must know how an
    event went (a join, a raised hand) waits for its first answer with :meth:`wait_answer`.

    >>> client = RoomClient("http://127.0.0.1:9", code="K7PX-3MQD", name="Ada")
    >>> client.events_url
    'http://127.0.0.1:9/api/events'
    """

    def __init__(
        self,
        url: str,
        *,
        code: str,
        name: str,
        key: str | None = None,
        timeout: float = 2.0,
        queue_size: int = 500,
        max_pause: float = 30.0,
    ) -> None:
        self.url = url.rstrip("/")
        self.code = code
        self.name = name
        self.key = key
        self.shown_as = name  # the name the room shows: "Sam (2)" when another learner is Sam
        self.timeout = timeout
        self.max_pause = max_pause
        self.events_url = f"{self.url}/api/events"
        self._queue: collections.deque[dict[str, Any]] = collections.deque(maxlen=queue_size)
        self._wake = threading.Condition()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._beating: threading.Thread | None = None
        self._started: tuple[str, float] | None = None  # a check begun here: exercise, when
        self._notice: str | None = None
        self._noticed = False
        # (event, status, message) of the latest posts, for wait_answer
        self._answers: collections.deque[tuple[dict[str, Any], int | None, str]] = (
            collections.deque(maxlen=16)
        )
        self.sent = 0

    def post(self, event: dict[str, Any]) -> tuple[int | None, str]:
        """POST one event now: the HTTP status (``None`` when the room did not answer) and the
        room's message or the network's reason. A room that takes it says the name it shows for
        this learner (kept in :attr:`shown_as`)."""
        mine = {"code": self.code, "name": self.name}
        if self.key:
            mine["learner_key"] = self.key
        body = json.dumps({**mine, **event}).encode()
        request = urllib.request.Request(
            self.events_url,
            data=body,
            headers={"Content-Type": "application/json", "User-Agent": "pytree-course-room"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                self._take_shown_name(response)
                return response.status, ""
        except urllib.error.HTTPError as error:
            return error.code, _error_message(error)
        except (OSError, ValueError, http.client.HTTPException) as error:  # URLError and timeouts
            # are OSErrors; a reply that is not HTTP raises HTTPException
            reason = getattr(error, "reason", None) or error
            return None, str(reason) or type(error).__name__

    def _take_shown_name(self, response: Any) -> None:
        """Keep the name the room shows for this learner, when its answer says one."""
        try:
            shown = json.loads(response.read(4096) or b"{}").get("name")
        except (OSError, ValueError, AttributeError):
            return
        if isinstance(shown, str) and shown:
            self.shown_as = shown

    def send(self, event: dict[str, Any]) -> dict[str, Any]:
        """Queue one event (the time is added here, its texts fitted to the room's limits) and
        return at once, with the event as queued (for :meth:`wait_answer`)."""
        queued = {**fit_texts(event), "sent_at": round(time.time(), 3)}
        if self._closed.is_set():
            return queued
        with self._wake:
            self._queue.append(queued)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="course-room", daemon=True)
                self._thread.start()
                self._beating = threading.Thread(
                    target=self._beat, name="course-room-beat", daemon=True
                )
                self._beating.start()
            self._wake.notify_all()
        return queued

    def wait_answer(self, queued: dict[str, Any], seconds: float) -> tuple[int | None, str]:
        """The room's first answer to ``queued`` (as :meth:`send` returned it), waiting at most
        ``seconds`` in all, however slowly the room answers (a socket's timeout starts again
        with each byte): ``(status, message)`` as :meth:`post` gives them, the status ``None``
        when no answer came in time. An event not taken stays queued and is sent again."""
        deadline = time.monotonic() + seconds
        answer = None
        with self._wake:
            while not self._closed.is_set():
                answer = next((a[1:] for a in reversed(self._answers) if a[0] is queued), None)
                left = deadline - time.monotonic()
                if answer is not None or left <= 0:
                    break
                self._wake.wait(left)
        return answer or (None, f"no whole answer within {seconds:g} s")

    def take_notice(self) -> str | None:
        """The line about a room that did not answer or refused an event, the first time only."""
        if self._notice is None or self._noticed:
            return None
        self._noticed = True
        return self._notice

    def close(self) -> None:
        """Stop sending; what is still queued is dropped."""
        self._closed.set()
        with self._wake:
            self._queue.clear()
            self._wake.notify()

    def _run(self) -> None:
        pause = 0.5
        while not self._closed.is_set():
            with self._wake:
                while not self._queue and not self._closed.is_set():
                    self._wake.wait()
                if self._closed.is_set():
                    return
                event = self._queue[0]
            status, message = self.post(event)
            with self._wake:
                self._answers.append((event, status, message))
                self._wake.notify_all()
            if status is not None and status < 300:
                self._done(event)
                self.sent += 1
                pause = 0.5
            elif status is None or status >= 500 or status == 429:
                why = f"answered {status}" if status else f"did not answer ({message})"
                self._note(
                    f"(the workshop room at {self.url} {why}; your checks work as usual, and "
                    "the room gets them when it answers again)"
                )
                self._closed.wait(pause)
                pause = min(pause * 2, self.max_pause)
            else:
                self._done(event)
                self._note(f"(the workshop room refused a check: {message or status})")

    def started(self, exercise: str) -> None:
        """A check of ``exercise`` begins: the room hears of it if it runs
        :data:`START_AFTER_S` seconds (see :meth:`_beat`), so that a check that never ends
        shows."""
        self._started = (exercise, time.monotonic())

    def ended(self) -> None:
        """The check begun has ended (its outcome is being sent)."""
        self._started = None

    def _beat(self) -> None:
        """Every :data:`BEAT_S` seconds, a heartbeat, unless events still wait to go (they say
        the kernel is alive when they arrive, and a beat must never push one out of the queue);
        and the start of a check still running after :data:`START_AFTER_S` seconds."""
        told = None
        last = -math.inf  # the first beat soon after the join: the room then knows it beats
        while not self._closed.wait(min(BEAT_S, START_AFTER_S)):
            now, started = time.monotonic(), self._started
            if started is not None and started is not told and now - started[1] >= START_AFTER_S:
                told = started
                self.send({"kind": "start", "exercise": started[0]})
            elif now - last >= BEAT_S and not self._queue:
                self.send({"kind": "beat"})
            else:
                continue
            last = now

    def _done(self, event: dict[str, Any]) -> None:
        with self._wake:
            if self._queue and self._queue[0] is event:
                self._queue.popleft()
            self._wake.notify_all()

    def _note(self, text: str) -> None:
        if self._notice is None:
            self._notice = text


def fit_texts(event: dict[str, Any]) -> dict[str, Any]:
    """The event with each of its texts on one line and within :data:`ROOM_TEXT_LIMITS`, so that
    the room takes it (a longer idea is cut, not the check lost).

    >>> fit_texts({"kind": "ready", "reason": "KeyError: 'a'\\n  more"})
    {'kind': 'ready', 'reason': "KeyError: 'a' more"}
    """
    fitted = dict(event)
    for key, limit in ROOM_TEXT_LIMITS.items():
        if isinstance(fitted.get(key), str):
            text = " ".join(fitted[key].split())
            text = "".join(c for c in text if not unicodedata.category(c).startswith("C"))
            fitted[key] = text if len(text) <= limit else text[: limit - 1] + "…"
    return fitted


def _error_message(error: urllib.error.HTTPError) -> str:
    try:
        data = json.loads(error.read() or b"{}")
    except (OSError, ValueError):
        return error.reason or str(error.code)
    return str(data.get("error") or error.reason or error.code)


def valid_name(name: Any) -> str:
    """A learner's name as the room takes it: 1 to 64 printable characters, spaces trimmed.

    >>> valid_name("  Ada Lovelace ")
    'Ada Lovelace'
    >>> valid_name("a\\nb")
    Traceback (most recent call last):
    ...
    ValueError: a name must be 1 to 64 printable characters, got 'a\\nb'
    >>> valid_name("<your name>")
    Traceback (most recent call last):
    ...
    ValueError: '<your name>' is the join line's placeholder: put your own name in its place
    """
    text = name.strip() if isinstance(name, str) else ""
    if not 1 <= len(text) <= NAME_LIMIT or any(
        unicodedata.category(c).startswith("C") for c in text
    ):
        raise ValueError(f"a name must be 1 to {NAME_LIMIT} printable characters, got {name!r}")
    if "".join(c for c in text.lower() if c.isalnum()) in _PLACEHOLDERS:
        raise ValueError(f"{text!r} is the join line's placeholder: put your own name in its place")
    return text


def parse_room(value: str) -> tuple[str, str, str]:
    """``(url, code, name)`` from ``COURSE_ROOM``'s form ``URL?code=…&name=…``.

    >>> parse_room("http://10.0.0.5:8765?code=K7PX-3MQD&name=Ada Lovelace")
    ('http://10.0.0.5:8765', 'K7PX-3MQD', 'Ada Lovelace')
    """
    parts = urllib.parse.urlsplit(value.strip())
    query = urllib.parse.parse_qs(parts.query)
    code, name = query.get("code", [""])[0], query.get("name", [""])[0]
    if parts.scheme not in ("http", "https") or not parts.netloc or not code or not name:
        raise ValueError(
            f"{ROOM_ENV} must look like 'http://HOST:PORT?code=CODE&name=YOUR NAME' (the line "
            f"your instructor's room printed), got {value!r}"
        )
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    return url.rstrip("/"), code, valid_name(name)


SAVED_HOURS = 12
"""How long a join (or a leave) lasts for the learner's kernels (a workshop's day)."""

_room: RoomClient | None = None
_said_stamp: tuple[int, int] | None | bool = False  # the kept file as last read; False: never
_joined_here = False  # whether join_room ran in this kernel (it holds even under COURSE_ROOM=off)
_lock = threading.Lock()
_key: str | None = None  # this learner's key, once read or made (see learner_key)
_key_lock = threading.Lock()


def saved_join_path() -> Path:
    """Where a join (or a leave) is kept for all of the learner's kernels on this machine:
    ``pytree-course/room-HOST.json`` under ``XDG_CONFIG_HOME`` (``~/.config`` by default). The
    machine's name is in the file's, so that lab machines sharing one home folder over the
    network keep one join each, as each one's learner made it."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    host = "".join(c if c.isalnum() or c in "-_" else "_" for c in socket.gethostname())
    return Path(base) / "pytree-course" / f"room-{host or 'here'}.json"


def learner_key() -> str:
    """This learner's key: what tells them apart in a room from another learner of the same name.
    Made once, at random, and kept with the join or by :func:`_keep_key`, so that every kernel of
    theirs on this machine (a restarted one too) sends the same key, and another machine or
    account another.

    >>> len(learner_key()) >= 16
    True
    """
    global _key
    with _key_lock:
        if _key is None:
            try:
                kept = json.loads(saved_join_path().read_text()).get("learner_key")
            except (OSError, ValueError, AttributeError):
                kept = None
            valid = isinstance(kept, str) and 16 <= len(kept) <= 64 and kept.isascii()
            _key = kept if valid else secrets.token_urlsafe(12)
        return _key


def _keep_key() -> None:
    """Keep this learner's key on this machine for a join from ``COURSE_ROOM``, where
    :func:`join_room` keeps it with the join: where the saved join's file is missing, a file
    holding the key alone (no room, so no kernel joins by it). It is made only where none is, in
    one step, so that of two kernels starting at once, the second takes the first one's key."""
    global _key
    path = saved_join_path()
    if path.exists():
        return  # learner_key read the key kept in it, if any
    fresh = path.with_name(f".room-{os.getpid()}-{threading.get_ident()}.json")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(json.dumps({"learner_key": learner_key()}))
        os.link(fresh, path)  # fails where another kernel kept one since
    except FileExistsError:
        with _key_lock:
            _key = None  # take the key of the kernel that kept one first
    except OSError:
        pass  # this kernel still sends its key; a restarted one sends another
    finally:
        fresh.unlink(missing_ok=True)


def _keep(record: dict[str, Any]) -> None:
    """Keep a join or a leave for every kernel of this learner (a new file, replacing the old in
    one step, so that a kernel reading it never sees half of it)."""
    global _said_stamp
    path = saved_join_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh = path.with_name(f".room-{os.getpid()}-{threading.get_ident()}.json")
        descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as file:
            file.write(json.dumps({**record, "learner_key": learner_key(), "at": time.time()}))
        os.replace(fresh, path)
    except OSError:
        return  # it still holds in this kernel; the others just do not hear of it
    _said_stamp = _stamp()


def _stamp() -> tuple[int, int] | None:
    """Which version of the kept file there is (``None``: none); a stat, cheap for each check."""
    try:
        status = os.stat(saved_join_path())
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns


def _kept() -> dict[str, Any] | None:
    """The join or leave kept by any kernel, if less than :data:`SAVED_HOURS` old: a join has
    ``url``, ``code`` and ``name``; a leave has ``left``."""
    try:
        data = json.loads(saved_join_path().read_text())
        at = float(data["at"])
        if not data.get("left"):
            data.update(url=str(data["url"]), code=str(data["code"]), name=valid_name(data["name"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return data if 0 <= time.time() - at < SAVED_HOURS * 3600 else None


def join_room(url: str, *, code: str, name: str, timeout: float = JOIN_WAIT) -> None:
    """Join a workshop's room: from now on each self-check tells the instructor how it went.

    Asks the room once, waiting at most ``timeout`` seconds in all, and says in one sentence what
    will be sent, or why the room could not be reached (checks then still work, and events are
    sent if the room answers later). A code the room refuses joins nothing. The join holds for
    every kernel of this learner on this machine from its next check, those already running
    included, for 12 hours or until :func:`leave_room`.
    """
    global _room, _joined_here
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"the room's address must start with http:// or https://, got {url!r}: copy it from "
            "the join line your instructor gave"
        )
    client = RoomClient(
        url.strip(), code=str(code).strip(), name=valid_name(name), key=learner_key()
    )
    status, message = client.wait_answer(client.send({"kind": "join", "beats": True}), timeout)
    if refused(status):
        client.close()
        print(
            f"Not joined: the room at {client.url} refused you ({message}). Check the code and "
            "name against your instructor's join line, then run this cell again."
        )
        return
    with _lock:
        old, _room, _joined_here = _room, client, True
        _keep({"url": client.url, "code": client.code, "name": client.name, "as": client.shown_as})
    if old is not None:
        old.close()
    if status is not None and status < 300:
        print(
            f"Joined the room at {client.url} as {client.shown_as!r}: {_taken(client)}. "
            f"Your other notebooks join too, open ones included, for {SAVED_HOURS} hours "
            "(leave_room() stops it)."
        )
        return
    client._noticed = True  # said here, once
    print(
        f"Could not reach the room at {client.url}: {_unanswered(status, message)}. Check the "
        f"address against your instructor's join line. {_CLOUD_ADVICE} Until it answers, checks "
        "are kept and sent once it does."
    )


def _taken(client: RoomClient) -> str:
    """What a join says it sends, led by what to tell a learner whose name another learner in
    the room holds.

    >>> client = RoomClient("http://127.0.0.1:9", code="C", name="Sam")
    >>> client.shown_as = "Sam (2)"
    >>> _taken(client)[:88]
    'Sam is taken in this room: you are Sam (2); join_room(..., name=...) to choose another. '
    """
    if client.shown_as == client.name:
        return _SENT
    return (
        f"{client.name} is taken in this room: you are {client.shown_as}; "
        f"join_room(..., name=...) to choose another. {_SENT[0].upper()}{_SENT[1:]}"
    )


def refused(status: int | None) -> bool:
    """Whether the room refused an event for good (a 4xx but 429, which asks to slow down): sent
    again, it would be refused again.

    >>> [refused(s) for s in (201, 403, 429, 503, None)]
    [False, True, False, False, False]
    """
    return status is not None and 400 <= status < 500 and status != 429


def _unanswered(status: int | None, message: str) -> str:
    """Why the room did not take an event, in a few words.

    >>> _unanswered(None, "Connection refused"), _unanswered(503, "")
    ('it did not answer (Connection refused)', 'it answered 503')
    """
    return f"it answered {status}" if status else f"it did not answer ({message})"


def leave_room() -> None:
    """Leave the workshop's room: no kernel of this learner sends to it from its next check, those
    already open and one started with ``COURSE_ROOM`` included, for 12 hours or until
    :func:`join_room`. The room hears of it (waiting up to :data:`HAND_WAIT` seconds), so a hand
    still up goes down on the dashboard."""
    global _room
    with _lock:
        room, _room = _room, None
        kept = _kept() or {}
        if room is None and not kept.get("left"):
            room = _client_of(kept)
        _keep({"left": True, "url": room.url if room else None})
    if room is None:
        print("You were not in a workshop room: nothing was being sent.")
        return
    status, message = room.wait_answer(room.send({"kind": "leave"}), HAND_WAIT)
    room.close()
    told = (
        "a hand you raised is down"
        if status is not None and status < 300
        else f"the room did not hear it ({_unanswered(status, message)}), so a hand you raised "
        "may still show: tell a helper"
    )
    print(
        f"Left the room at {room.url}: none of your notebooks sends checks to it now, open ones "
        f"and {ROOM_ENV} included, for {SAVED_HOURS} hours; {told}. join_room(...) joins again."
    )


def _client_of(kept: dict[str, Any]) -> RoomClient | None:
    """A client for the room this learner's kernels are in, by the join kept in another kernel,
    else by ``COURSE_ROOM`` (``None`` when neither names one)."""
    if kept.get("url"):
        return RoomClient(kept["url"], code=kept["code"], name=kept["name"], key=learner_key())
    value = os.environ.get(ROOM_ENV, "").strip()
    try:
        url, code, name = parse_room(value)
    except ValueError:
        return None
    return RoomClient(url, code=code, name=name, key=learner_key())


def current_room() -> RoomClient | None:
    """The room this kernel sends to, worked out again whenever another kernel joined or left:
    ``None`` under ``COURSE_ROOM=off`` (the course's own runs of its notebooks set it); else the
    room of the latest join or leave of this learner's, in any kernel in the last 12 hours; else
    the one ``COURSE_ROOM`` names. Under ``off``, only a join made in this kernel holds. One
    ``stat`` when nothing changed; waits only for a join from ``COURSE_ROOM``, at a kernel's first
    check, up to :data:`JOIN_WAIT` seconds for the room's answer, so as to say what happened."""
    global _room, _said_stamp
    value = os.environ.get(ROOM_ENV, "").strip()
    if value.lower() == "off":
        return _room if _joined_here else None
    stamp = _stamp()
    with _lock:
        if stamp == _said_stamp:
            return _room
        first, _said_stamp = _said_stamp is False, stamp
        kept = _kept()
        said = None
        from_env = False
        if kept is not None and kept.get("left"):
            url, code, name = None, "", ""
            since = time.strftime("%H:%M", time.localtime(kept["at"]))
            if _room is not None or (first and value):
                said = f"(not in the workshop room: you left it at {since}; join_room joins again)"
        elif kept is not None:
            url, code, name = kept["url"], kept["code"], kept["name"]
            since = time.strftime("%H:%M", time.localtime(kept["at"]))
            shown = str(kept.get("as") or name)
            said = f"(in the workshop room at {url} as {shown!r}, joined at {since}: {_SENT}; "
            said += "leave_room() stops it)"
        elif first and value:
            try:
                url, code, name = parse_room(value)
            except ValueError as error:
                print(f"(not joining a workshop room: {error})")
                return None
            from_env = True  # said once the room answers the join
            _keep_key()
        else:
            return _room
        old = _room
        if old is not None and (old.url, old.code, old.name) == (url, code, name):
            return old
        _room = None if url is None else RoomClient(url, code=code, name=name, key=learner_key())
    if old is not None:
        old.close()
    room = _room
    if room is not None:
        queued = room.send({"kind": "join", "beats": True})
        if from_env:  # nobody saw this join answered yet: say only what happened
            said = _said_of_env_join(room, *room.wait_answer(queued, JOIN_WAIT))
    if said:
        print(said)
    return _room


def _said_of_env_join(room: RoomClient, status: int | None, message: str) -> str:
    """What a kernel joining from ``COURSE_ROOM`` says, once the room answered its join or did
    not in time; a room that refused it is left."""
    global _room
    if status is not None and status < 300:
        return (
            f"(joined the workshop room at {room.url} as {room.shown_as!r} from {ROOM_ENV}: "
            f"{_taken(room)})"
        )
    if refused(status):
        room.close()
        with _lock:
            _room = None if _room is room else _room
        return (
            f"(not in the workshop room: the room at {room.url} refused {ROOM_ENV}'s join "
            f"({message}). Copy the code and your name from your instructor's join line into "
            f"{ROOM_ENV} and restart Jupyter, or run the join_room line in a cell)"
        )
    room._noticed = True  # said here, once
    return (
        f"(could not reach the workshop room at {room.url} from {ROOM_ENV}: "
        f"{_unanswered(status, message)}; your checks work as usual, and the room gets them "
        "once it answers)"
    )


def send_event(event: dict[str, Any]) -> None:
    """Hand one event to the room, if this session is in one, and print the room's one notice
    when it has one. Never raises and never waits."""
    try:
        room = current_room()
        if room is None:
            return
        if event.get("kind") == "check":
            room.ended()
        room.send(event)
        notice = room.take_notice()
        if notice:
            print(notice)
    except Exception:  # noqa: BLE001 (the room must never break a check)
        return


def setup_failure() -> str | None:
    """For a check that raised before it could judge: when JAX cannot start a backend in this
    kernel, what failed and what to do, in one short message, and the room told of a failed
    setup (so that the dashboard names it so, not as the exercise's error); else ``None``. It
    asks the JAX the checks imported (this module imports nothing beyond the standard library).
    """
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    try:
        jax.devices()
    except Exception as error:  # noqa: BLE001 (the diagnosis: whatever JAX raised)
        platforms = os.environ.get("JAX_PLATFORMS", "")
        told = str(error).strip().splitlines()[0] if str(error).strip() else ""
        why = type(error).__name__ + (f": {told}" if told else "")
        on = f" for JAX_PLATFORMS={platforms!r}" if platforms else ""
        reason = f"JAX could not start a backend{on} ({why})"
        version = str(getattr(jax, "__version__", ""))
        send_event(
            {"kind": "ready", "outcome": "error", "jax": version, "backend": "", "reason": reason}
        )
        todo = (
            "set JAX_PLATFORMS=cpu (or unset it), restart the kernel"
            if platforms
            else "restart the kernel; if it fails again, ask a helper"
        )
        return (
            f"Not checked: {reason}. This is your setup, not your answer: {todo}, and run the "
            "cell again."
        )
    return None


def mark_start(exercise_id: str) -> None:
    """Note, if this session is in a room, that a check of ``exercise_id`` begins: one still
    running after :data:`START_AFTER_S` seconds is told to the room, and one that never ends (a
    loop, a kernel stuck) shows on the dashboard as running. Never raises and never waits."""
    try:
        room = current_room()
        if room is not None:
            room.started(str(exercise_id))
    except Exception:  # noqa: BLE001 (the room must never break a check)
        return


def help_me(text: str = "") -> None:
    """Raise your hand in the workshop room, the red sticky note: the instructor and helpers see
    it first on their dashboard, with ``text`` (a few words: what you are stuck on; nobody else
    sees it). It stays up until you pass the exercise you were on, a helper marks you helped, or
    you run :func:`done`."""
    limit = ROOM_TEXT_LIMITS["text"]
    if (
        not isinstance(text, str)
        or len(text.strip()) > limit
        or any(unicodedata.category(c).startswith("C") for c in text.strip())
    ):
        raise ValueError(
            f"help_me takes a few words on one line, at most {limit} characters, got {text!r}"
        )
    room = current_room()
    if room is None:
        print(
            "You are not in a workshop room, so nobody sees a hand raised here: put up your "
            "sticky note, or join with the line your instructor gave and run help_me() again."
        )
        return
    queued = room.send({"kind": "hand", **({"text": text.strip()} if text.strip() else {})})
    status, message = room.wait_answer(queued, HAND_WAIT)
    if status is not None and status < 300:
        print(
            "Your hand is up on the instructor's dashboard: a helper will come to you. It stays "
            "up until you pass the exercise, a helper marks you helped, or you run done()."
        )
    elif refused(status):
        print(
            f"The room at {room.url} refused your hand ({message or status}), so the dashboard "
            "does not show it and never will: put up your sticky note. Then run the join_room "
            "line your instructor gave (the right code, your name) and help_me() again."
        )
    else:
        print(
            f"The room at {room.url} has not taken your hand yet, so the dashboard does not show "
            "it: put up your sticky note. It goes up there as soon as the room answers."
        )


def done() -> None:
    """Lower your hand in the workshop room (the green sticky note): you are fine again."""
    room = current_room()
    if room is None:
        print("You are not in a workshop room: there is no hand to lower.")
        return
    status, message = room.wait_answer(room.send({"kind": "done"}), HAND_WAIT)
    if status is not None and status < 300:
        print("Your hand is down. help_me() raises it again.")
    elif refused(status):
        print(
            f"The room at {room.url} refused it ({message or status}): tell a helper you are fine "
            "again, and run the join_room line your instructor gave to be in the room again."
        )
    else:
        print(
            f"The room at {room.url} has not answered yet: your hand goes down on the dashboard "
            "as soon as it does. help_me() raises it again."
        )
