"""A room on disk: one SQLite file (WAL) holding the room's secrets, settings and every event.

An event is committed before the learner's request is answered, so a server that is stopped or
killed and started again on the same file keeps every event it acknowledged.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ._events import KINDS, Event, from_stored, own_fields

_SCHEMA = """
CREATE TABLE IF NOT EXISTS settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    received REAL NOT NULL,
    sent REAL,
    learner TEXT NOT NULL,
    kind TEXT NOT NULL,
    exercise TEXT,
    outcome TEXT,
    hint INTEGER,
    jax TEXT,
    backend TEXT,
    mistake TEXT,
    detail TEXT,
    fix TEXT,
    actor TEXT,
    fields TEXT,
    learner_key TEXT
);
"""
_ADDED_COLUMNS = ("mistake", "detail", "fix", "actor", "fields", "learner_key")  # added later
_LEGACY_COLUMNS = ("exercise", "outcome", "hint", "jax", "backend", "mistake", "fix")
"""Where a row written before each kind had fields of its own (``fields`` empty) kept them; the
one field of its kind that ``detail`` held is named by the kind's ``legacy_detail``."""
_READ = (
    *("id", "received", "sent", "learner", "learner_key", "kind", "actor", "fields", "detail"),
    *_LEGACY_COLUMNS,
)
EXPORT_COLUMNS = (
    *("id", "received", "sent", "learner", "learner_key", "kind", "actor"),
    *dict.fromkeys(f.name for cls in KINDS.values() for f in own_fields(cls)),
)
"""The export's columns: every event's, then each kind's own, each named once."""
# Letters and digits that cannot be misread for one another when read off a projector.
_CODE_ALPHABET = "ACDEFGHJKLMNPQRTUVWXY34679"


def new_join_code() -> str:
    """A join code like ``K7PX-3MQD``: 8 characters from 26 (about 37 bits), easy to read aloud.

    >>> code = new_join_code()
    >>> len(code), code[4]
    (9, '-')
    """
    chars = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(8))
    return f"{chars[:4]}-{chars[4:]}"


class PrivateFileError(Exception):
    """A file that holds the instructor's token is a link: it is not written through."""


def make_private(path: Path) -> None:
    """Make an existing file readable by its owner only; refuse a symbolic link (it could point
    anywhere). A missing file is left missing."""
    if path.is_symlink():
        raise PrivateFileError(
            f"{path} is a symbolic link: the room writes its token only to a plain file; "
            "remove the link or choose another path"
        )
    if path.exists():
        path.chmod(0o600)


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a file only its owner can read, whatever was at ``path`` before: a new
    file replaces the old one (a hard link's other names keep the old text), a link is refused.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     target = Path(folder) / "info.json"
    ...     write_private(target, "{}")
    ...     oct(target.stat().st_mode & 0o777)
    '0o600'
    """
    make_private(path)
    fresh = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    os.replace(fresh, path)


class RoomStore:
    """The room's SQLite file. Creates the secrets on first use and keeps them after.

    >>> import tempfile
    >>> from course_tools.room._events import Join
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     store = RoomStore(Path(folder) / "demo.sqlite")
    ...     first = store.add(1.0, Join(learner="Ada", sent=0.5))
    ...     again = RoomStore(Path(folder) / "demo.sqlite")
    ...     (again.code == store.code, [e.learner for e in again.events()])
    (True, ['Ada'])
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.new = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        # The instructor's token is in the file, and in its write-ahead log: only the owner
        # reads them, whatever their permissions were (SQLite gives new logs the file's own).
        for private in (
            path,
            path.with_name(path.name + "-wal"),
            path.with_name(path.name + "-shm"),
        ):
            make_private(private)
        if self.new:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(events)")}
        for column in _ADDED_COLUMNS:
            if column not in columns:
                self._db.execute(f"ALTER TABLE events ADD COLUMN {column} TEXT")
        self.code = self._setting("code", new_join_code)
        self.token = self._setting("token", lambda: secrets.token_urlsafe(24))
        self.helper_token = self._setting("helper_token", lambda: secrets.token_urlsafe(24))

    def _setting(self, key: str, make: Any) -> str:
        row = self._db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return str(row[0])
        value = str(make())
        self.set(key, value)
        return value

    def get(self, key: str, default: str) -> str:
        """A setting, or ``default`` when it was never set."""
        row = self._db.execute("SELECT value FROM settings WHERE key = ?", (key,)).fetchone()
        return default if row is None else str(row[0])

    def set(self, key: str, value: str) -> None:
        self._db.execute(
            "INSERT INTO settings (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    def add(self, received: float, event: Event) -> Event:
        """Store one checked event (committed when this returns) and give it back with its id and
        the time it was ``received``."""
        cursor = self._db.execute(
            "INSERT INTO events (received, sent, learner, learner_key, kind, actor, fields) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                received,
                event.sent,
                event.learner,
                event.learner_key,
                event.kind,
                event.actor,
                json.dumps(event.own_values()),
            ),
        )
        assert cursor.lastrowid is not None
        return replace(event, id=cursor.lastrowid, received=received)

    def events(self) -> Iterator[Event]:
        """Every event, in the order received (those of a kind this room does not know, written
        by a later version of it, left out)."""
        query = f"SELECT {', '.join(_READ)} FROM events ORDER BY id"
        for row in self._db.execute(query):
            common = dict(zip(_READ, row, strict=True))
            fields = None if common["fields"] is None else json.loads(common["fields"])
            event = from_stored(common["kind"], common, fields, common["detail"])
            if event is not None:
                yield event

    def close(self) -> None:
        self._db.close()
