"""The room server as learners and the instructor meet it: a real ``course-room serve`` process,
spoken to over HTTP. Security (the two secrets, validation, size, rate), faults (killed and
restarted), the live stream, and a reverse proxy's prefix and forwarded addresses."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from room_support import ServedRoom, served_room, start_room, stop_room

from course_lib.checks import all_exercises

CHECK: dict[str, Any] = {"exercise": "01.count_params", "outcome": "incorrect", "hint": 1}


@pytest.fixture(scope="module")
def room(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedRoom]:
    with served_room(tmp_path_factory.mktemp("room") / "class.sqlite", "--rate", "1000") as served:
        yield served


def test_a_check_event_is_stored_and_exported(room: ServedRoom) -> None:
    status, reply = room.post(room.event("Grace", **CHECK, sent_at=1_800_000_000.5))
    assert status == 201 and isinstance(reply["id"], int)
    rows = [row for row in room.exported() if row["learner"] == "Grace"]
    assert len(rows) == 1
    assert (rows[0]["kind"], rows[0]["exercise"], rows[0]["outcome"], rows[0]["hint"]) == (
        "check",
        "01.count_params",
        "incorrect",
        "1",
    )
    assert rows[0]["sent"] == "2027-01-15T08:00:00.500+00:00"
    assert rows[0]["mistake"] == rows[0]["jax"] == rows[0]["actor"] == ""


@pytest.mark.parametrize(
    ("change", "status", "said"),
    [
        ({"code": "WRONG-CODE"}, 403, "wrong join code"),
        ({"code": None}, 403, "wrong join code"),
        ({"exercise": "99.not_an_exercise"}, 400, "unknown exercise '99.not_an_exercise'"),
        ({"outcome": "great"}, 400, "outcome must be one of"),
        ({"hint": "2"}, 400, "hint must be a whole number"),
        ({"hint": True}, 400, "hint must be a whole number"),
        ({"name": ""}, 400, "a name must be 1 to 64"),
        ({"name": "x" * 65}, 400, "a name must be 1 to 64"),
        ({"name": "tab\tname"}, 400, "a name must be 1 to 64 printable"),
        ({"kind": "grade"}, 400, "kind must be one of"),
        ({"code_snippet": "def f(): ..."}, 400, "unknown field(s) for a check event: code_snippet"),
        ({"sent_at": "yesterday"}, 400, "sent_at must be a time"),
        ({"sent_at": 1e18}, 400, "sent_at must be a time"),
        ({"sent_at": -1e15}, 400, "sent_at must be a time"),
        ({"exercise": []}, 400, "unknown exercise []"),
        ({"exercise": {}}, 400, "unknown exercise {}"),
    ],
)
def test_a_bad_event_gets_a_4xx_saying_why_and_nothing_is_stored(
    room: ServedRoom, change: dict[str, object], status: int, said: str
) -> None:
    before = len(room.export_rows())
    got, reply = room.post({**room.event("Mallory", **CHECK), **change})
    assert (got, said in reply["error"]) == (status, True), reply
    assert len(room.export_rows()) == before


def test_the_join_code_may_be_typed_in_lower_case_or_without_its_dash(room: ServedRoom) -> None:
    for typed in (
        room.code.lower(),
        room.code.replace("-", ""),
        f" {room.code[:4]} {room.code[5:]}",
    ):
        assert room.post({**room.event("Typist", "join"), "code": typed})[0] == 201, typed


def test_a_ready_event_takes_a_version_and_a_backend_only(room: ServedRoom) -> None:
    ready = room.event("Lin", "ready", outcome="passed", jax="0.10.2", backend="cpu")
    assert room.post(ready)[0] == 201
    assert room.post({**ready, "reason": ""})[0] == 201
    assert room.post({**ready, "reason": "but why"})[0] == 400
    assert room.post({**ready, "name": "Mac", "backend": "METAL"})[0] == 201
    last = room.exported()[-1]
    assert (last["learner"], last["outcome"], last["jax"], last["backend"], last["reason"]) == (
        "Mac",
        "passed",
        "0.10.2",
        "metal",
        "",
    )
    assert room.post({**ready, "jax": "<b>0.10</b>"})[0] == 400
    assert room.post({**ready, "backend": "CPU; DROP TABLE"})[0] == 400
    assert room.post({**ready, "exercise": "01.count_params"})[0] == 400


def test_oversize_and_malformed_bodies_are_refused(room: ServedRoom) -> None:
    before = len(room.export_rows())
    big = {**room.event("Oscar", **CHECK), "padding": "x" * 4000}
    status, reply = room.post(json.dumps(big).encode())
    assert status == 413 and "at most 2048 bytes" in reply["error"]
    status, reply = room.post(b"{not json")
    assert status == 400 and "one JSON object" in reply["error"]
    status, reply = room.post(b"[1, 2]")
    assert status == 400 and "JSON object" in reply["error"]
    status, reply = room.post(b"[" * 1000 + b"]" * 1000)  # under the size limit, too deep to read
    assert status == 400 and "one JSON object" in reply["error"]
    assert len(room.export_rows()) == before


def test_the_join_page_opened_on_the_rooms_machine_shows_no_dead_join_line(
    room: ServedRoom,
) -> None:
    status, body, _ = room.get("")
    page = body.decode()
    assert status == 200
    # The room listens on loopback only: no line with its address, and what to do instead.
    assert "join_room(&quot;http://127.0.0.1" not in page
    assert "restart it with --host 0.0.0.0" in page
    assert room.token not in page and "Grace" not in page


def test_the_join_page_reached_from_outside_shows_the_address_used(room: ServedRoom) -> None:
    port = room.url.rsplit(":", 1)[1]
    request = urllib.request.Request(f"{room.url}/", headers={"Host": f"192.168.1.20:{port}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        page = reply.read().decode()
    line = f"join_room(&quot;http://192.168.1.20:{port}&quot;, code=&quot;{room.code}&quot;"
    assert line in page and 'class="warning"' not in page
    # What the agenda opens with: join, then ready(); kept as long as the docs say.
    assert page.index(line) < page.index("ready()") and "for 12 hours" in page
    assert "rest of the day" not in page
    assert room.token not in page and room.helper_token not in page


@pytest.mark.parametrize("path", ["dashboard", "api/stream", "export.csv"])
def test_the_instructors_pages_need_the_token(room: ServedRoom, path: str) -> None:
    for query in ("", "?token=", f"?token={room.code}", f"?token={room.token[:-1]}"):
        status, body, _ = room.get(path + query)
        assert status == 401, (path, query)
        assert b"instructor's token" in body
        assert b"Grace" not in body


def test_settings_need_the_token_and_a_sane_number(room: ServedRoom) -> None:
    def settings(body: bytes, token: str) -> int:
        request = urllib.request.Request(
            f"{room.url}/api/settings", data=body, headers={"X-Room-Token": token}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as error:
            return error.code

    assert settings(b'{"idle_minutes": 3}', room.code) == 401
    assert settings(b'{"idle_minutes": 0}', room.token) == 400
    assert settings(b'{"idle_minutes": "soon"}', room.token) == 400
    assert settings(b'{"idle_minutes": 7}', room.token) == 200


def test_the_dashboard_page_loads_nothing_from_elsewhere(room: ServedRoom) -> None:
    status, body, headers = room.get(f"dashboard?token={room.token}")
    assert status == 200
    assert "script-src 'self'" in headers["Content-Security-Policy"]
    assert headers["Referrer-Policy"] == "no-referrer"
    assert not re.search(rb"(src|href)=\"(https?:)?//", body)
    for asset in ("static/dashboard.js", "static/dashboard.css", "static/favicon.svg"):
        assert room.get(asset)[0] == 200


def test_one_address_cannot_fill_the_room_with_made_up_names(tmp_path: Path) -> None:
    with served_room(tmp_path / "names.sqlite", "--max-learners", "100") as names:
        statuses = [names.post(names.event(f"fake {i}", "join"))[0] for i in range(80)]
        assert statuses[:60] == [201] * 60 and statuses.count(429) >= 15
        # Names already in the room go on as before.
        assert names.post(names.event("fake 0", "join"))[0] == 201
        assert len(names.export_rows()) == statuses.count(201) + 1


def test_a_flood_from_one_learner_is_slowed_and_only_accepted_events_are_stored(
    tmp_path: Path,
) -> None:
    with served_room(tmp_path / "flood.sqlite", "--rate", "2") as flood:
        statuses = [flood.post(flood.event("Flo", **CHECK))[0] for _ in range(60)]
        accepted = statuses.count(201)
        assert set(statuses) == {201, 429}
        assert 30 <= accepted < 45  # the burst of 30, and 2 a second after it
        assert len(flood.export_rows()) == accepted
        # Another learner is not slowed by Flo's flood.
        assert flood.post(flood.event("Ann", **CHECK))[0] == 201


def test_a_server_killed_and_started_again_keeps_every_event_code_and_token(
    tmp_path: Path,
) -> None:
    path = tmp_path / "workshop.sqlite"
    first = start_room(path, "--rate", "1000")
    stored = [first.post(first.event(f"L{i}", **CHECK))[0] for i in range(50)]
    assert stored == [201] * 50
    assert (path.with_name(path.name + ".info.json").stat().st_mode & 0o077) == 0  # the token
    assert (path.stat().st_mode & 0o077) == 0
    said = stop_room(first, kill=True)  # SIGKILL: no chance to close anything
    # Without --host it listened on loopback only, and said so and how to open it.
    port = int(first.url.rsplit(":", 1)[1])
    assert f"Listening on 127.0.0.1:{port}, this machine only" in said
    assert "--host 0.0.0.0" in said
    assert f'join_room("{first.url}", code="{first.code}", name="YOUR NAME")' in said
    assert f"{first.url}/dashboard?token={first.token}" in said

    second = start_room(path)
    try:
        assert (second.code, second.token) == (first.code, first.token)
        assert len(second.export_rows()) == 50
        snapshot = read_stream(second, lambda kind, data: kind == "snapshot")
        assert sorted(snapshot["learners"]) == sorted(f"L{i}" for i in range(50))
        assert snapshot["exercises"]["01.count_params"]["incorrect"] == 50
    finally:
        output = stop_room(second)
    assert "reopened, 50 learners and their events kept" in output
    assert f"Join code: {first.code}" in output


def read_stream(room: ServedRoom, wanted: Callable[[str, Any], bool], timeout: float = 10.0) -> Any:
    """Read the dashboard's stream until ``wanted(kind, data)``; that message's data."""
    with urllib.request.urlopen(f"{room.url}/api/stream?token={room.token}", timeout=timeout) as s:
        kind = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = s.readline().decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                if wanted(kind, data):
                    return data
    raise AssertionError("the stream never sent the message wanted")


def test_the_stream_shows_an_event_within_a_second(room: ServedRoom) -> None:
    posted: list[float] = []

    def post_later() -> None:
        time.sleep(0.3)
        posted.append(time.monotonic())
        room.post(room.event("Quick", **{**CHECK, "outcome": "passed", "hint": 0}))

    threading.Thread(target=post_later).start()
    update = read_stream(room, lambda kind, data: "Quick" in data.get("learners", {}))
    seen = time.monotonic()
    cell = update["learners"]["Quick"]["cells"]["01.count_params"]
    assert (cell["outcome"], cell["tries"]) == ("passed", 1)
    assert seen - posted[0] < 1.0


def test_behind_a_proxy_routes_take_the_prefix_and_rates_the_forwarded_address(
    tmp_path: Path,
) -> None:
    args = ("--base-path", "/room/", "--behind-proxy", "--host-rate", "1")
    with served_room(tmp_path / "proxied.sqlite", *args) as proxied:
        assert proxied.url.endswith("/room")
        assert proxied.get(f"dashboard?token={proxied.token}")[0] == 200
        # Two learners behind the proxy, at two addresses: each has its own budget.
        for address in ("10.1.0.1", "10.1.0.2"):
            forwarded = {"X-Forwarded-For": address}
            event = proxied.event(f"at {address}", **CHECK)
            statuses = [proxied.post(event, forwarded)[0] for _ in range(3)]
            assert statuses == [201, 201, 429]


def test_every_exercise_of_the_course_is_accepted(room: ServedRoom) -> None:
    for exercise in all_exercises():
        event = room.event("Everyone", exercise=exercise.id, outcome="passed", hint=0)
        assert room.post(event)[0] == 201, exercise.id


# Hardening: each of these once answered 500, or took the room down, or leaked the token.


def test_a_lone_surrogate_in_the_code_or_name_is_a_4xx(room: ServedRoom) -> None:
    for field, status in (("code", 403), ("name", 400)):
        event = room.event("Sur", "join")
        body = json.dumps({**event, field: "SURROGATE"}).replace("SURROGATE", "\\ud800")
        got, reply = room.post(body.encode())
        assert got == status and reply["error"], (field, reply)


def test_a_nul_byte_in_a_static_path_is_a_404(room: ServedRoom) -> None:
    for path in ("static/%00", "static/dashboard.js%00", "static/a%00b.css"):
        assert room.get(path)[0] == 404, path


def test_settings_too_deep_to_read_are_a_400(room: ServedRoom) -> None:
    request = urllib.request.Request(
        f"{room.url}/api/settings",
        data=b"[" * 1000 + b"]" * 1000,
        headers={"X-Room-Token": room.token},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    assert b"idle_minutes" in refused.value.read()


def test_a_body_over_64_kib_gets_a_413_saying_the_limit(room: ServedRoom) -> None:
    status, reply = room.post(b" " * 70_000)
    assert status == 413 and "at most 2048 bytes" in reply["error"]


def half_sent_requests(room: ServedRoom, count: int, source: str = "") -> list[socket.socket]:
    """``count`` connections from ``source`` (on Linux any 127.x address is this machine's; by
    default the system's choice), each with a request begun and never finished."""
    host, port = room.url.split("//")[1].rsplit(":", 1)
    opened: list[socket.socket] = []
    for _ in range(count):
        try:
            connection = socket.create_connection(
                (host, int(port)), timeout=5, source_address=(source, 0) if source else None
            )
        except OSError as error:
            if opened or not source:
                raise
            pytest.skip(f"this system cannot send from {source}: {error}")
        connection.sendall(b"POST /api/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n")
        opened.append(connection)
    return opened


def closed_by_server(connection: socket.socket, within: float) -> bool:
    connection.settimeout(within)
    try:
        return connection.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_idle_half_sent_requests_from_one_address_cannot_take_the_room_down(
    room: ServedRoom,
) -> None:
    hoarded = half_sent_requests(room, 80, "127.0.0.2")
    try:
        # Past 64 connections from one address, the next ones are closed at once ...
        assert sum(closed_by_server(c, 0.2) for c in hoarded[64:]) == 16
        # ... and learners elsewhere are still answered.
        assert room.post(room.event("Elsewhere", "join"))[0] == 201
    finally:
        for connection in hoarded:
            connection.close()


def answered_soon(attempt: Callable[[], bool], within: float = 5.0) -> bool:
    """Whether ``attempt()`` comes true within ``within`` seconds (the server notices closed
    connections a moment after the client closes them)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if attempt():
                return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def test_a_room_short_of_open_files_refuses_connections_says_so_once_and_stays_up(
    tmp_path: Path,
) -> None:
    room = start_room(tmp_path / "few.sqlite", open_files=100)
    try:
        hoarded = []
        for block in range(3):  # 150 half-sent requests, 50 from each of three addresses
            hoarded += half_sent_requests(room, 50, f"127.0.{block}.{2 + block}")
        held = sum(not closed_by_server(c, 0.05) for c in hoarded)
        assert held < 100
        for connection in hoarded:
            connection.close()
        assert answered_soon(lambda: room.post(room.event("After", "join"))[0] == 201)
    finally:
        said = stop_room(room)
    assert said.count("too many connections") == 1, said
    assert "Too many open files" not in said


@pytest.fixture(scope="module")
def open_room(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedRoom]:
    """A room open to the network (every interface), with a one-second request timeout."""
    path = tmp_path_factory.mktemp("open") / "open.sqlite"
    with served_room(path, "--host", "0.0.0.0", "--request-timeout", "1") as served:
        yield served


def test_a_request_that_never_finishes_is_closed_after_the_request_timeout(
    open_room: ServedRoom,
) -> None:
    started = time.monotonic()
    [trickle] = half_sent_requests(open_room, 1)
    assert closed_by_server(trickle, 5)
    assert time.monotonic() - started < 3
    trickle.close()


def test_the_join_page_opened_on_localhost_shows_the_address_learners_use(
    open_room: ServedRoom,
) -> None:
    port = open_room.url.rsplit(":", 1)[1]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
        page = reply.read().decode()
    # Projected from the instructor's laptop: the address learners use, and no notice on screen.
    assert f"join_room(&quot;{open_room.url}&quot;" in page
    assert "join_room(&quot;http://127.0.0.1" not in page
    assert 'class="warning"' not in page and "localhost" not in page
    # The instructor's dashboard says it instead; the helpers' does not.
    said = read_stream(open_room, lambda kind, data: kind == "snapshot")["reach"]
    assert said.startswith(f"Learners reach the room at {open_room.url}: the join page shows")
    helpers = ServedRoom(**{**open_room.__dict__, "token": open_room.helper_token})
    assert "reach" not in read_stream(helpers, lambda kind, data: kind == "snapshot")


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"mistake": "x" * 41}, "mistake must be an id"),
        ({"mistake": "adds step"}, "mistake must be an id"),
        ({"mistake": "adds_step", "idea": "y" * 301}, "idea must be one line of at most 300"),
        ({"mistake": "adds_step", "idea": "a\nb"}, "idea must be one line"),
        ({"idea": "no mistake"}, "an idea or a fix comes with the mistake it is for"),
        ({"fix": "no mistake"}, "an idea or a fix comes with the mistake it is for"),
        ({"mistake": "adds_step", "fix": "z" * 301}, "fix must be one line of at most 300"),
    ],
)
def test_a_checks_mistake_and_idea_are_checked(
    room: ServedRoom, fields: dict[str, Any], said: str
) -> None:
    status, reply = room.post(room.event("Mia", **CHECK, **fields))
    assert status == 400 and said in reply["error"]


def test_a_check_sends_its_mistake_a_setup_its_failure_and_a_hand_its_words(
    room: ServedRoom,
) -> None:
    check = room.event(
        "Nia", **CHECK, mistake="adds_step", idea="a step goes downhill", fix="subtract the step"
    )
    assert room.post(check)[0] == 201
    last = room.exported()[-1]
    assert (last["learner"], last["mistake"], last["idea"], last["fix"]) == (
        "Nia",
        "adds_step",
        "a step goes downhill",
        "subtract the step",
    )
    broken = room.event("Nia", "ready", outcome="error", jax="", backend="")
    assert "reason must be one line" in room.post(broken)[1]["error"]
    assert (
        room.post({**broken, "reason": "RuntimeError: Unable to initialize backend 'cuda'"})[0]
        == 201
    )
    last = room.exported()[-1]
    assert (last["kind"], last["outcome"], last["reason"]) == (
        "ready",
        "error",
        "RuntimeError: Unable to initialize backend 'cuda'",
    )
    assert room.post(room.event("Nia", "hand", text="x" * 101))[0] == 400
    assert room.post(room.event("Nia", "hand", text="stuck on tree.map"))[0] == 201
    assert room.post(room.event("Nia", "done"))[0] == 201
    assert room.post(room.event("Nia", "leave"))[0] == 201


def test_the_placeholder_name_is_refused_with_what_to_do(room: ServedRoom) -> None:
    status, reply = room.post(room.event("YOUR NAME", "join"))
    assert status == 400 and "placeholder: put your own name" in reply["error"]


def action(room: ServedRoom, token: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        f"{room.url}/api/actions", data=json.dumps(body).encode(), headers={"X-Room-Token": token}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_helpers_mark_helped_and_only_the_instructor_tidies_names_or_exports(
    room: ServedRoom,
) -> None:
    for name in ("Omar", "Omar K"):
        room.post(room.event(name, **CHECK))
    helper = room.helper_token
    status, reply = action(room, helper, {"kind": "helped", "name": "Omar"})
    assert status == 400 and "type your name at the top of the helpers' page" in reply["error"]
    assert action(room, helper, {"kind": "helped", "name": "Omar", "by": "Alex"})[0] == 201
    status, reply = action(room, helper, {"kind": "rename", "name": "Omar", "to": "Omar K"})
    assert (
        status == 403 and "helpers' link can claim learners and mark them helped" in reply["error"]
    )
    assert room.get(f"export.csv?token={helper}")[0] == 403
    assert room.get(f"dashboard?token={helper}")[0] == 200
    assert action(room, room.code, {"kind": "helped", "name": "Omar"})[0] == 401
    assert action(room, helper, {"kind": "helped", "name": "Nobody", "by": "Alex"})[0] == 404
    assert action(room, room.token, {"kind": "rename", "name": "Omar", "to": "YOUR NAME"})[0] == 400
    for only_yours in ({"kind": "block"}, {"kind": "undo", "id": 1}):
        assert action(room, helper, only_yours)[0] == 403
    assert action(room, room.token, {"kind": "rename", "name": "Omar", "to": "Omar K"})[0] == 201
    rows = room.exported()
    # The export says whose dashboard took each action.
    took = [(row["learner"], row["kind"], row["to"], row["actor"]) for row in rows[-2:]]
    assert took == [
        ("Omar", "helped", "", "helper:Alex"),
        ("Omar", "merge", "Omar K", "instructor"),
    ]
    snapshot = read_stream(room, lambda kind, data: kind == "snapshot")
    assert "Omar" not in snapshot["learners"]
    assert snapshot["learners"]["Omar K"]["cells"]["01.count_params"]["tries"] == 2
