"""The learner's side of a workshop room: joining, what a check sends, and a room that is down,
slow or failing never slowing or breaking a check.

The rooms here are stand-ins on loopback (the standard library's HTTP server, answering as told),
so that each fault can be made on purpose; tests/room/ tests the real server.
"""

from __future__ import annotations

import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from course_lib.checks import (
    CheckFailedError,
    _room,
    check,
    done,
    help_me,
    join_room,
    leave_room,
    ready,
)

pytestmark = pytest.mark.usefixtures("fresh_checks")


def count_params_wrong(tree: Any) -> int:
    return 0


def count_params_right(tree: Any) -> int:
    import jax
    import numpy as np

    return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))


@pytest.fixture(autouse=True)
def no_room(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Each test starts outside any room, whatever the environment says, with its own folder for
    a join kept between kernels."""
    monkeypatch.delenv(_room.ROOM_ENV, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    new_kernel(monkeypatch)
    yield
    if _room._room is not None:
        _room._room.close()


class StandIn:
    """A loopback room that answers ``reply(n)`` to the n-th request (from 0), after ``delay``
    seconds, and records the events it accepted: the starts of checks and the heartbeats in
    ``alive``, the others in ``events``."""

    def __init__(self, reply: Callable[[int], int], delay: float = 0.0) -> None:
        self.events: list[dict[str, Any]] = []
        self.alive: list[dict[str, Any]] = []
        self.requests = 0
        self.reply, self.delay = reply, delay
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                time.sleep(outer.delay)
                status = outer.reply(outer.requests)
                outer.requests += 1
                if status < 300:
                    kept = outer.alive if body["kind"] in ("start", "beat") else outer.events
                    kept.append(body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                message = {"error": "wrong join code"} if status == 403 else {"id": 1}
                self.wfile.write(json.dumps(message).encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def wait_for(self, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.events


@contextmanager
def stand_in(reply: Callable[[int], int] = lambda n: 201, delay: float = 0.0) -> Iterator[StandIn]:
    room = StandIn(reply, delay)
    try:
        yield room
    finally:
        room.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_joining_says_what_is_sent_and_each_check_sends_outcome_and_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with stand_in() as room:
        join_room(room.url, code="K7PX-3MQD", name="  Ada  ")
        joined = capsys.readouterr().out
        assert joined.startswith(f"Joined the room at {room.url} as 'Ada': each check now sends")
        assert "never your code or its values" in joined
        check("01.count_params", count_params_wrong)
        check("01.count_params", count_params_wrong)
        check("01.count_params", count_params_right)
        events = room.wait_for(4)
    assert [e["kind"] for e in events] == ["join", "check", "check", "check"]
    assert [(e["outcome"], e["hint"]) for e in events[1:]] == [
        ("incorrect", 0),
        ("incorrect", 1),
        ("passed", 0),
    ]
    for event in events[1:]:
        assert set(event) == {
            *("code", "name", "learner_key", "kind", "exercise", "outcome", "hint", "sent_at")
        }
        assert (event["code"], event["name"], event["exercise"]) == (
            "K7PX-3MQD",
            "Ada",
            "01.count_params",
        )


def test_not_attempted_and_a_non_function_are_sent_as_such() -> None:
    def stub(tree: Any) -> int:
        raise NotImplementedError

    with stand_in() as room:
        join_room(room.url, code="C", name="Bo")
        check("01.count_params", stub)
        check("01.count_params", 42)  # type: ignore[arg-type]
        events = room.wait_for(3)
    assert [(e["outcome"], e["hint"]) for e in events[1:]] == [("not_attempted", 0), ("error", 0)]


def test_a_strict_check_still_raises_and_still_sends() -> None:
    with stand_in() as room:
        join_room(room.url, code="C", name="Cy")
        with pytest.raises(CheckFailedError):
            check("01.count_params", count_params_wrong, strict=True)
        assert room.wait_for(2)[1]["outcome"] == "incorrect"


def test_ready_sends_the_jax_version_and_backend(capsys: pytest.CaptureFixture[str]) -> None:
    import jax

    with stand_in() as room:
        join_room(room.url, code="C", name="Dee")
        ready()
        event = room.wait_for(2)[1]
    assert event["kind"] == "ready" and event["outcome"] == "passed"
    assert (event["jax"], event["backend"]) == (jax.__version__, jax.default_backend())
    assert f"Ready: JAX {jax.__version__} compiles and differentiates" in capsys.readouterr().out


def test_ready_reports_a_broken_jax_as_an_error_and_never_raises(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import jax

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("no backend")

    monkeypatch.setattr(jax, "grad", broken)
    with stand_in() as room:
        join_room(room.url, code="C", name="Dee")
        ready()
        event = room.wait_for(2)[1]
    assert event["outcome"] == "error"
    said = capsys.readouterr().out
    assert "Not ready: JAX" in said and "failed: RuntimeError: no backend" in said


def test_a_refused_code_joins_nothing_and_says_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with stand_in(lambda n: 403) as room:
        join_room(room.url, code="WRONG", name="Eve")
        said = capsys.readouterr().out
        check("01.count_params", count_params_wrong)
    assert said.startswith(f"Not joined: the room at {room.url} refused you (wrong join code)")
    assert "run this cell again" in said
    assert _room.current_room() is None


def test_an_unreachable_room_is_said_once_at_join_with_advice_for_the_cloud(
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    join_room(url, code="C", name="Fay")
    said = capsys.readouterr().out
    assert said.startswith(f"Could not reach the room at {url}: it did not answer")
    assert "Colab or Binder" in said and "ask your instructor for the room's public address" in said
    for _ in range(3):
        check("01.count_params", count_params_wrong)
    assert "room" not in capsys.readouterr().out.replace("(run this check again", "")


@pytest.mark.parametrize("join", ["join_room", "environment"])
def test_bad_join_lines_say_what_they_should_look_like(
    join: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if join == "join_room":
        with pytest.raises(ValueError, match="must start with http:// or https://"):
            join_room("192.168.1.5:8765", code="C", name="Gil")
        with pytest.raises(ValueError, match="a name must be 1 to 64 printable characters"):
            join_room("http://127.0.0.1:9", code="C", name="")
    else:
        monkeypatch.setenv(_room.ROOM_ENV, "http://10.0.0.5:8765?name=Gil")
        check("01.count_params", count_params_wrong)
        said = capsys.readouterr().out
        assert "(not joining a workshop room: COURSE_ROOM must look like" in said
        assert _room.current_room() is None


def test_the_environment_variable_joins_at_the_first_check_once_the_room_took_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with stand_in() as room:
        monkeypatch.setenv(_room.ROOM_ENV, f"{room.url}?code=K7PX&name=Hal Jordan")
        check("01.count_params", count_params_right)
        events = room.wait_for(2)
    said = capsys.readouterr().out
    assert said.startswith(
        f"(joined the workshop room at {room.url} as 'Hal Jordan' from COURSE_ROOM"
    )
    assert [(e["kind"], e["name"], e["code"]) for e in events] == [
        ("join", "Hal Jordan", "K7PX"),
        ("check", "Hal Jordan", "K7PX"),
    ]


def test_a_wrong_code_in_the_environment_variable_says_only_that_it_was_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with stand_in(lambda n: 403) as room:
        monkeypatch.setenv(_room.ROOM_ENV, f"{room.url}?code=WRONG&name=Hal Jordan")
        check("01.count_params", count_params_right)
        check("01.count_params", count_params_right)
        assert room.requests == 1  # the join, refused; nothing sent after it
    said = capsys.readouterr().out
    assert "joined" not in said
    assert said.startswith(
        f"(not in the workshop room: the room at {room.url} refused COURSE_ROOM's join "
        "(wrong join code). Copy the code and your name from your instructor's join line"
    )
    assert said.count("workshop room") == 1
    assert _room.current_room() is None


def new_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a fresh kernel starts with: no room joined in it yet, the environment not read."""
    monkeypatch.setattr(_room, "_room", None)
    monkeypatch.setattr(_room, "_said_stamp", False)
    monkeypatch.setattr(_room, "_joined_here", False)
    monkeypatch.setattr(_room, "_key", None)


def test_a_join_holds_for_the_learners_next_kernels_until_they_leave(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with stand_in() as room:
        join_room(room.url, code="K7PX", name="Kim")
        assert (
            "Your other notebooks join too, open ones included, for 12" in capsys.readouterr().out
        )
        assert _room.saved_join_path().stat().st_mode & 0o077 == 0  # it holds the join code
        new_kernel(monkeypatch)
        check("01.count_params", count_params_right)
        said = capsys.readouterr().out
        assert said.startswith(f"(in the workshop room at {room.url} as 'Kim', joined at ")
        events = room.wait_for(3)
        assert [(e["kind"], e["name"]) for e in events] == [
            ("join", "Kim"), ("join", "Kim"), ("check", "Kim")
        ]  # fmt: skip
        leave_room()
        new_kernel(monkeypatch)
        check("01.count_params", count_params_right)
        assert "workshop room" not in capsys.readouterr().out
        assert [e["kind"] for e in room.events[3:]] == ["leave"]  # and nothing after it


@pytest.mark.parametrize("why", ["off", "expired"])
def test_a_kept_join_is_not_used_when_off_or_older_than_a_day_of_teaching(
    why: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with stand_in() as room:
        join_room(room.url, code="K7PX", name="Lou")
        if why == "off":
            monkeypatch.setenv(_room.ROOM_ENV, "off")
        else:
            saved = json.loads(_room.saved_join_path().read_text())
            saved["at"] -= (_room.SAVED_HOURS + 1) * 3600
            _room.saved_join_path().write_text(json.dumps(saved))
        new_kernel(monkeypatch)
        capsys.readouterr()
        check("01.count_params", count_params_right)
        assert "workshop room" not in capsys.readouterr().out
        assert _room.current_room() is None
        assert len(room.wait_for(1)) == 1  # the join only


def check_seconds(fn: Callable[[Any], int], times: int = 7) -> float:
    """The longest of several checks."""
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        check("01.count_params", fn)
        spent.append(time.perf_counter() - start)
    return max(spent)


@pytest.mark.parametrize("fault", ["unreachable", "slow", "failing"])
def test_a_room_down_slow_or_failing_never_slows_or_breaks_a_check(
    fault: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A check hands its event to the room's own thread and goes on: no post to the room runs on
    the learner's thread, so a check never waits for the room, however it fails (a slow room
    answers after 5 s, twice the client's 2 s timeout)."""
    check_seconds(count_params_right, 2)  # warm: references computed, programs compiled
    with stand_in(lambda n: 500 if fault == "failing" else 201, delay=5.0 * (fault == "slow")) as r:
        url = f"http://127.0.0.1:{closed_port()}" if fault == "unreachable" else r.url
        room = _room.RoomClient(url, code="C", name="Ivy", timeout=2.0)
        posted_from: list[threading.Thread] = []
        post = room.post

        def recorded_post(event: dict[str, Any]) -> tuple[int | None, str]:
            posted_from.append(threading.current_thread())
            return post(event)

        room.post = recorded_post  # type: ignore[method-assign]
        capsys.readouterr()
        _room._room = room  # joined without join_room's wait
        longest = check_seconds(count_params_right, 7)
        time.sleep(0.3)  # the sender meets the fault
        check_seconds(count_params_right, 3)
        said = capsys.readouterr().out
    assert posted_from, "no event reached the room's client"
    assert threading.current_thread() not in posted_from, posted_from
    assert longest < 2.0, longest  # far less than the room's timeout: nothing waited for it
    notices = [line for line in said.splitlines() if "workshop room" in line]
    if fault == "slow":
        assert len(notices) <= 1  # one once the first post times out (after 2 s), if it did yet
    else:
        assert len(notices) == 1, said
        assert "your checks work as usual" in notices[0]
    assert said.count("01.count_params: passed") == 10


def test_events_sent_while_the_room_fails_arrive_once_it_answers() -> None:
    with stand_in(lambda n: 500 if n < 3 else 201) as room:
        client = _room.RoomClient(room.url, code="C", name="Jo", max_pause=0.2)
        for i in range(5):
            client.send(
                {"kind": "check", "exercise": "01.count_params", "outcome": "passed", "hint": i}
            )
        events = room.wait_for(5)
        client.close()
    assert [e["hint"] for e in events] == [0, 1, 2, 3, 4]
    assert room.requests == 8


def test_joining_a_room_that_answers_a_byte_at_a_time_waits_the_timeout_in_all(
    capsys: pytest.CaptureFixture[str],
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(4096)
            for byte in b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}":
                if stop.wait(0.3):
                    return
                connection.sendall(bytes([byte]))

    threading.Thread(target=trickle, daemon=True).start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    started = time.monotonic()
    join_room(url, code="K7PX", name="Tess", timeout=1.0)
    waited = time.monotonic() - started
    stop.set()
    listener.close()
    assert waited < 2.0
    assert "no whole answer within 1 s" in capsys.readouterr().out


class Kernel:
    """One of the learner's kernels, as far as the room goes: what ``_room`` holds in it. The
    kernels share only the kept join, as real ones do."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.state: tuple[Any, Any, bool] = (None, False, False)

    def __enter__(self) -> None:
        self.monkeypatch.setattr(_room, "_room", self.state[0])
        self.monkeypatch.setattr(_room, "_said_stamp", self.state[1])
        self.monkeypatch.setattr(_room, "_joined_here", self.state[2])

    def __exit__(self, *exc: object) -> None:
        self.state = (_room._room, _room._said_stamp, _room._joined_here)


def test_a_join_anywhere_reaches_every_open_kernel_and_a_leave_anywhere_ends_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lesson, exercises = Kernel(monkeypatch), Kernel(monkeypatch)
    with stand_in() as room:
        with lesson:
            check("01.count_params", count_params_right)  # before any join: nothing sent
        with exercises:
            join_room(room.url, code="K7PX", name="Noor")
        with lesson:
            check("01.count_params", count_params_wrong)
        assert "(in the workshop room at" in capsys.readouterr().out
        events = room.wait_for(3)
        assert [(e["kind"], e.get("outcome")) for e in events] == [
            ("join", None), ("join", None), ("check", "incorrect")
        ]  # fmt: skip
        with lesson:
            leave_room()
        said = capsys.readouterr().out
        assert said.startswith(f"Left the room at {room.url}: none of your notebooks sends")
        assert "a hand you raised is down" in said
        with exercises:
            check("01.count_params", count_params_right)
        assert "(not in the workshop room: you left it at" in capsys.readouterr().out
        time.sleep(0.2)
        assert [e["kind"] for e in room.events[3:]] == ["leave"]  # the room lowers a hand


def test_a_leave_holds_against_course_room_in_a_kernel_started_after_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with stand_in() as room:
        monkeypatch.setenv(_room.ROOM_ENV, f"{room.url}?code=K7PX&name=Ola")
        check("01.count_params", count_params_right)
        room.wait_for(2)
        leave_room()
        assert "COURSE_ROOM included" in capsys.readouterr().out
        new_kernel(monkeypatch)
        check("01.count_params", count_params_right)
        assert "you left it at" in capsys.readouterr().out
        time.sleep(0.2)
        assert [e["kind"] for e in room.events] == ["join", "check", "leave"]
    new_kernel(monkeypatch)
    leave_room()
    assert "You were not in a workshop room" in capsys.readouterr().out


def test_a_raised_hand_and_a_lowered_one_reach_the_room(
    capsys: pytest.CaptureFixture[str],
) -> None:
    help_me("lost in tree.map")
    assert "You are not in a workshop room" in capsys.readouterr().out
    with stand_in() as room:
        join_room(room.url, code="K7PX", name="Pia")
        help_me("  lost in tree.map ")
        done()
        help_me()
        events = room.wait_for(4)
    assert [(e["kind"], e.get("text")) for e in events] == [
        ("join", None), ("hand", "lost in tree.map"), ("done", None), ("hand", None)
    ]  # fmt: skip
    said = capsys.readouterr().out
    assert "Your hand is up" in said and "Your hand is down" in said
    with pytest.raises(ValueError, match="at most 100 characters"):
        help_me("x" * 101)


def test_leaving_from_a_kernel_that_never_sent_lowers_the_hand_raised_in_another(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with stand_in() as room:
        join_room(room.url, code="K7PX", name="Pia")
        help_me("stuck")
        new_kernel(monkeypatch)  # another notebook, no check run in it
        leave_room()
        events = room.wait_for(3)
    assert [(e["kind"], e["name"]) for e in events] == [
        ("join", "Pia"), ("hand", "Pia"), ("leave", "Pia")
    ]  # fmt: skip
    assert "a hand you raised is down" in capsys.readouterr().out


def test_a_leave_the_room_does_not_hear_says_the_hand_may_still_show(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_room, "HAND_WAIT", 0.3)
    join_room("http://127.0.0.1:9", code="K7PX", name="Pia", timeout=0.5)  # nothing listens there
    capsys.readouterr()
    leave_room()
    said = capsys.readouterr().out
    assert said.startswith("Left the room at http://127.0.0.1:9:")
    assert "a hand you raised may still show: tell a helper" in said


def test_a_hand_the_room_has_not_taken_is_not_said_to_be_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    join_room("http://127.0.0.1:9", code="K7PX", name="Pia", timeout=0.5)  # nothing listens there
    capsys.readouterr()
    help_me("stuck")
    said = capsys.readouterr().out
    assert "has not taken your hand yet" in said and "sticky note" in said
    assert "Your hand is up" not in said


def test_a_hand_the_room_refuses_is_said_refused_with_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with stand_in(lambda n: 201 if n == 0 else 403) as room:  # the join taken, then refused
        join_room(room.url, code="K7PX", name="Pia")
        capsys.readouterr()
        help_me("stuck")
        said = capsys.readouterr().out
        assert "refused your hand (wrong join code)" in said and "sticky note" in said
        assert "join_room line" in said
        assert "has not taken your hand yet" not in said and "goes up" not in said
        done()
        said = capsys.readouterr().out
        assert "refused it (wrong join code)" in said and "as soon as it does" not in said


@pytest.mark.parametrize(
    "placeholder",
    [
        "YOUR NAME",
        "your  name",
        "Name",
        "<your name>",
        "[your name]",
        "YOUR_NAME",
        "Your Name,",
        "Firstname Lastname",
    ],
)
def test_the_placeholder_name_is_refused_saying_what_to_put(placeholder: str) -> None:
    with pytest.raises(ValueError, match="placeholder: put your own name in its place"):
        join_room("http://127.0.0.1:9", code="C", name=placeholder)


@pytest.mark.parametrize("name", ["Ada Lovelace", "Nam", "Yourn Ame-Smith", "José"])
def test_a_name_near_a_placeholder_is_taken(name: str) -> None:
    assert _room.valid_name(name) == name


def test_under_course_room_off_a_join_made_in_this_kernel_still_sends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(_room.ROOM_ENV, "off")
    with stand_in() as room:
        join_room(room.url, code="K7PX", name="Uma")
        check("01.count_params", count_params_right)
        assert [e["kind"] for e in room.wait_for(2)] == ["join", "check"]


def test_every_kernel_of_one_learner_sends_one_key_and_another_account_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with stand_in() as room:
        join_room(room.url, code="C", name="Sam")
        new_kernel(monkeypatch)  # a second notebook, or the first one restarted
        check("01.count_params", count_params_right)
        room.wait_for(3)
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "another-account"))
        new_kernel(monkeypatch)
        join_room(room.url, code="C", name="Sam")
        events = room.wait_for(4)
    assert [event["kind"] for event in events] == ["join", "join", "check", "join"]
    keys = [event["learner_key"] for event in events]
    assert keys[0] == keys[1] == keys[2] != keys[3]


def test_kernels_joining_from_course_room_in_one_home_are_one_learner_and_in_two_homes_two(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("XDG_CONFIG_HOME")
    with stand_in() as room:
        monkeypatch.setenv(_room.ROOM_ENV, f"{room.url}?code=C&name=Sam")
        homes = ("sam", "sam", "another-sam")  # Sam's kernel, restarted, then another Sam
        for sent, home in enumerate(homes, start=1):
            monkeypatch.setenv("HOME", str(tmp_path / home))
            new_kernel(monkeypatch)
            check("01.count_params", count_params_right)
            events = room.wait_for(2 * sent)  # each kernel's events, before the next one starts
        monkeypatch.setenv("HOME", str(tmp_path / "sam"))
        monkeypatch.delenv(_room.ROOM_ENV)
        new_kernel(monkeypatch)
        assert _room.current_room() is None  # the key was kept, not a join
    assert [event["kind"] for event in events] == ["join", "check"] * 3
    keys = [event["learner_key"] for event in events]
    assert keys[0] == keys[1] == keys[2] == keys[3] != keys[4] == keys[5]
    assert _room.saved_join_path().stat().st_mode & 0o077 == 0


def test_two_learners_named_sam_stay_two_and_the_second_is_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from room_support import served_room

    with served_room(tmp_path / "room.sqlite") as room:
        join_room(room.url, code=room.code, name="Sam")
        assert f"Joined the room at {room.url} as 'Sam': each check" in capsys.readouterr().out
        monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "second-laptop"))
        new_kernel(monkeypatch)
        join_room(room.url, code=room.code, name="Sam")
        said = capsys.readouterr().out
        assert said.startswith(
            f"Joined the room at {room.url} as 'Sam (2)': Sam is taken in this room: you are "
            "Sam (2); join_room(..., name=...) to choose another. Each check now sends"
        ), said
        new_kernel(monkeypatch)  # the second Sam's next notebook stays the second Sam
        check("01.count_params", count_params_wrong)
        assert "in the workshop room at" in capsys.readouterr().out
        _room._room.wait_answer(_room._room.send({"kind": "done"}), 5.0)  # type: ignore[union-attr]
        rows = room.exported()
    assert len({row["learner_key"] for row in rows}) == 2
    second = [row["kind"] for row in rows if row["learner_key"] == rows[-1]["learner_key"]]
    assert [kind for kind in second if kind not in ("start", "beat")] == [
        "join",
        "join",
        "check",
        "done",
    ]


def test_a_slow_check_tells_its_start_and_a_joined_kernel_beats_while_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_room, "BEAT_S", 0.1)
    monkeypatch.setattr(_room, "START_AFTER_S", 0.2)

    def slow(tree: Any) -> int:
        time.sleep(0.05)
        return count_params_right(tree)

    with stand_in() as room:
        join_room(room.url, code="C", name="Finn")
        check("01.count_params", count_params_right)  # quick: its end alone
        check("01.count_params", slow)  # ten cases, half a second
        room.wait_for(3)
        time.sleep(0.5)
        starts = [event for event in room.alive if event["kind"] == "start"]
        assert [(event["exercise"], event["name"]) for event in starts] == [
            ("01.count_params", "Finn")
        ]
        assert starts[0]["sent_at"] <= room.events[2]["sent_at"]  # told while it still ran
        beats = [event for event in room.alive if event["kind"] == "beat"]
        assert 3 <= len(beats) <= 12, beats
        leave_room()
        time.sleep(0.3)
        after = len(room.alive)
        time.sleep(0.3)
        assert len(room.alive) == after  # a kernel that left beats no more


def test_a_check_where_jax_cannot_start_names_the_setup_and_tells_the_room_so(
    tmp_path: Path,
) -> None:
    learner = (
        "import sys\n"
        "from course_lib.checks import check, join_room\n"
        "join_room(sys.argv[1], code='C', name='Eve')\n"
        "def sgd_step(params, grads, lr):\n"
        "    return params\n"
        "check('02.sgd_step', sgd_step)\n"
        "import time; time.sleep(1.5)  # the room's thread sends the last event\n"
    )
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cuda",  # a backend this machine lacks
        "XDG_CONFIG_HOME": str(tmp_path),
        "COURSE_ROOM": "",
        "COURSE_STRICT_CHECKS": "",
        "CI": "",
    }
    with stand_in() as room:
        ran = subprocess.run(
            [sys.executable, "-c", learner, room.url],
            env={key: value for key, value in env.items() if value},
            capture_output=True,
            text=True,
            timeout=120,
        )
        events = room.wait_for(2)
    said = ran.stdout.splitlines()[-1]
    assert said == (
        "Not checked: JAX could not start a backend for JAX_PLATFORMS='cuda' (AssertionError). "
        "This is your setup, not your answer: set JAX_PLATFORMS=cpu (or unset it), restart the "
        "kernel, and run the cell again."
    ), ran.stdout + ran.stderr
    assert ran.returncode == 0 and "Traceback" not in ran.stderr
    assert [(event["kind"], event.get("outcome")) for event in events] == [
        ("join", None),
        ("ready", "error"),
    ]
    assert events[1]["reason"].startswith("JAX could not start a backend for JAX_PLATFORMS")
