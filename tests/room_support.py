"""A real room server for the tests: ``course-room serve`` in its own process, on a free port."""

from __future__ import annotations

import csv
import json
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class ServedRoom:
    url: str
    dashboard: str
    code: str
    token: str
    helper_token: str
    process: subprocess.Popen[str]
    path: Path

    def post(self, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None) -> Any:
        """POST one event: ``(status, parsed reply)``."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}/api/events",
            data=data,
            headers={"Content-Type": "application/json", **(headers or {})},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return reply.status, json.loads(reply.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    def event(self, name: str, kind: str = "check", **fields: Any) -> dict[str, Any]:
        """An event with this room's code."""
        return {"code": self.code, "name": name, "kind": kind, **fields}

    def get(self, path: str) -> tuple[int, bytes, Any]:
        """GET a path under the room: status, body and headers."""
        try:
            with urllib.request.urlopen(f"{self.url}/{path}", timeout=10) as reply:
                return reply.status, reply.read(), reply.headers
        except urllib.error.HTTPError as error:
            return error.code, error.read(), error.headers

    def export_csv_lines(self) -> list[str]:
        """The export's lines, its header first."""
        status, body, _ = self.get(f"export.csv?token={self.token}")
        assert status == 200
        return body.decode().splitlines()

    def export_rows(self) -> list[str]:
        return self.export_csv_lines()[1:]

    def exported(self) -> list[dict[str, str]]:
        """The export's rows, each by its column's name."""
        return list(csv.DictReader(self.export_csv_lines()))


def start_room(path: Path, *args: str, open_files: int | None = None) -> ServedRoom:
    """Start ``course-room serve path`` on a free port and wait until it listens; with
    ``open_files``, as a process that may open no more files than that."""
    info = path.with_name(path.name + ".info.json")
    info.unlink(missing_ok=True)
    # The limit is set by the new interpreter itself, before the room starts: a preexec_fn would
    # make this process fork, and JAX, imported here by other tests, warns against forking.
    launcher = (
        "import resource, runpy, sys\n"
        "if sys.argv[1] != 'unlimited':\n"
        "    resource.setrlimit(resource.RLIMIT_NOFILE, (int(sys.argv[1]),) * 2)\n"
        "sys.argv = ['course-room', *sys.argv[2:]]\n"
        "runpy.run_module('course_tools.room', run_name='__main__')"
    )
    limit = "unlimited" if open_files is None else str(open_files)
    command = [sys.executable, "-c", launcher, limit, "serve", str(path), "--port", "0"]
    process = subprocess.Popen(
        [*command, "--info", str(info), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not (info.exists() and info.read_text()):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            output = process.stdout.read() if process.stdout else ""
            raise RuntimeError(f"course-room serve did not start:\n{output}")
        time.sleep(0.05)
    data = json.loads(info.read_text())
    return ServedRoom(
        data["url"],
        data["dashboard"],
        data["code"],
        data["token"],
        data["helper_token"],
        process,
        path,
    )


def stop_room(room: ServedRoom, kill: bool = False) -> str:
    """Stop the server (SIGTERM, or SIGKILL with ``kill``) and return what it printed."""
    room.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
    output, _ = room.process.communicate(timeout=30)
    return output


@contextmanager
def served_room(path: Path, *args: str) -> Iterator[ServedRoom]:
    room = start_room(path, *args)
    try:
        yield room
    finally:
        if room.process.poll() is None:
            stop_room(room)
