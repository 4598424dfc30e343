"""A workshop room at full size: 200 learners working through the course's exercises at once.

    .venv/bin/python bench/bench_room.py                # 200 learners, lessons 01-09
    .venv/bin/python bench/bench_room.py --learners 50  # a smaller room
    .venv/bin/python bench/bench_room.py --beat 45      # heartbeats as often as a kernel's
    .venv/bin/python bench/bench_room.py --liveness     # a killed kernel and a hung check

It starts ``course-room serve`` in its own process, with a dashboard listening to its live stream
in another, then lets 200 simulated learners post concurrently (one thread each, every event a new
connection through urllib, as a kernel's room client sends it). Each learner joins, sends lesson
00's ready event (one in twenty a failed setup, with its reason), then for each exercise of lessons
01-09 in order: maybe one run of the stub (not attempted), a few incorrect tries with the hint
rising (0-4, most often 0 or 1), most naming a recognised mistake with its idea and fix, a raised
hand after the third and lowered after it, then a pass; and last, a leave (a check's start is
sent only when it runs over 5 s: none here). Each learner's events carry its learner key, and
beside them each learner sends a heartbeat every ``--beat`` seconds (5 by default: nine times a
kernel's rate, so that their load shows), counted apart in the report. Two rounds on the same
room:

* **burst**: no pause between a learner's events, so the server is the limit: events per second;
* **paced**: each learner waits 0.2-1.2 s between events (about 300 events a second from the room,
  still hundreds of times a real room's rate): the time from an event to the dashboard's update.

Latency is from just before a learner's request to the moment the dashboard's stream delivers an
update whose id covers that event; "stored to dashboard" starts instead when the server stored it
(its ``received`` time in the export), leaving out the wait for a busy server to take the request.
Both are read on this machine's wall clock. Then every
event must be in the room's export, and the server's memory is read. Last, the cost the room adds
to one ``check()`` in this process: the same check with and without a joined room (the reference),
as a ratio and in milliseconds. The per-learner and per-address rate and connection limits are
raised for the run (a real room's learners each come from their own address), so that the server
itself is measured.

With ``--liveness`` it measures instead, at the room's and the client's default thresholds, how
long the dashboard takes to show two real learner processes in trouble: one killed with SIGKILL
(goal: within 2 min) and one whose check hangs (goal: within 90 s of the check's start).

Goals: every event stored, heartbeats included; p99 dashboard latency <= 1 s at 200 learners; a
check's own cost with the room on (its heartbeats' thread running) <= 5 ms above the same check
without it.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import psutil

from course_lib.checks import all_exercises, check, join_room, leave_room

GOAL_P99_S = 1.0
GOAL_CHECK_MS = 5.0


def start_server(folder: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    info = folder / "info.json"
    command = [sys.executable, "-m", "course_tools.room", "serve", str(folder / "bench.sqlite")]
    limits = ["--rate", "100000", "--host-rate", "1000000", "--connections-per-address", "1000"]
    server = subprocess.Popen(
        [*command, "--port", "0", "--info", str(info), *limits], stdout=subprocess.DEVNULL
    )
    while not (info.exists() and info.read_text()):
        if server.poll() is not None:
            raise SystemExit("course-room serve did not start")
        time.sleep(0.05)
    return server, json.loads(info.read_text())


def listen(stream_url: str, received: Any, ready: Any, stop: Any) -> None:
    """In its own process: read the dashboard's stream, noting when each update's id arrived."""
    seen = []
    with urllib.request.urlopen(stream_url, timeout=600) as stream:
        ready.set()
        last_id = 0
        while not stop.is_set():
            line = stream.readline()
            if not line:
                break
            if line.startswith(b"id: "):
                last_id = int(line[4:])
            elif line.startswith(b"data: "):
                seen.append((last_id, time.time()))
    received.send(seen)


def plan(rng: random.Random, exercises: list[str]) -> list[dict[str, Any]]:
    """One learner's events through the course, with realistic retries."""
    ready = {"kind": "ready", "outcome": "passed", "jax": "0.10.2", "backend": "cpu"}
    if rng.random() < 0.05:
        ready = {
            **ready,
            "outcome": "error",
            "reason": "RuntimeError: Unable to initialize backend",
        }
    events: list[dict[str, Any]] = [{"kind": "join"}, ready]
    for exercise in exercises:
        if rng.random() < 0.3:
            events.append({"kind": "check", "exercise": exercise, "outcome": "not_attempted"})
            events[-1]["hint"] = 0
        tries = min(int(rng.expovariate(0.8)), 4)
        for hint in range(1, tries + 1):
            outcome = "error" if rng.random() < 0.1 else "incorrect"
            events.append({"kind": "check", "exercise": exercise, "outcome": outcome, "hint": hint})
            if outcome == "incorrect" and rng.random() < 0.7:
                mistake = rng.choice(["adds_step", "drops_none", "counts_leaves"])
                events[-1].update(
                    mistake=mistake,
                    idea=f"The idea behind {mistake}. " * 4,
                    fix=f"The fix for {mistake}, close to the answer. " * 2,
                )
            if hint == 3:
                events.append({"kind": "hand", "text": "stuck on this one"})
        if tries >= 3:
            events.append({"kind": "done"})
        events.append({"kind": "check", "exercise": exercise, "outcome": "passed", "hint": 0})
    events.append({"kind": "leave"})
    return events


def post(info: dict[str, str], name: str, event: dict[str, Any]) -> int | None:
    """POST one event as a learner's kernel does (urllib, a new connection each time, the learner's
    key made from its name): its id, or ``None`` when it was not stored."""
    key = "bench-" + "".join(c if c.isalnum() else "-" for c in name)
    body = json.dumps({"code": info["code"], "name": name, "learner_key": key, **event}).encode()
    request = urllib.request.Request(
        f"{info['url']}/api/events", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(json.loads(reply.read())["id"])
    except OSError:
        return None


def run_room(
    info: dict[str, str],
    learners: int,
    pause: tuple[float, float],
    seed: int,
    tag: str,
    beat: float,
) -> tuple[list[tuple[int, float]], int, float, int, int]:
    """Every learner's events, posted concurrently, and their heartbeats every ``beat`` seconds
    while they work: (id, start) of each event, heartbeats included, refusals, wall time, the
    number of planned events and the number of heartbeats stored."""
    exercises = [e.id for e in all_exercises()]
    sent: list[tuple[int, float]] = []
    refused = [0]
    beats = [0]
    lock = threading.Lock()

    def send(name: str, event: dict[str, Any]) -> None:
        start = time.time()
        event_id = post(info, name, event)
        with lock:
            if event_id is None:
                refused[0] += 1
            else:
                sent.append((event_id, start))
                beats[0] += event["kind"] == "beat"

    working: set[str] = set()

    def learner(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        name = f"{tag} {i:03d}"
        for event in plan(rng, exercises):
            send(name, event)
            if pause[1]:
                time.sleep(rng.uniform(*pause))
        with lock:
            working.discard(name)

    def heartbeats(names: list[str]) -> None:
        """A heartbeat for each of ``names`` still working, every ``beat`` seconds, spread
        evenly (one thread for many learners: the bench's own threads stay few)."""
        while True:
            for name in names:
                time.sleep(beat / len(names))
                with lock:
                    if not working:
                        return
                    if name not in working:
                        continue
                send(name, {"kind": "beat"})

    names = [f"{tag} {i:03d}" for i in range(learners)]
    working.update(names)
    threads = [threading.Thread(target=learner, args=(i,)) for i in range(learners)]
    threads += [
        threading.Thread(target=heartbeats, args=(names[start : start + 25],))
        for start in range(0, learners, 25)
    ]
    began = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.time() - began
    total = sum(len(plan(random.Random(seed * 1000 + i), exercises)) for i in range(learners))
    return sent, refused[0], wall, total + beats[0], beats[0]


def latencies(sent: list[tuple[int, float]], seen: list[tuple[int, float]]) -> list[float]:
    """For each event, the time from ``start`` to the first update that covers its id."""
    seen = sorted(seen, key=lambda pair: pair[1])
    covered = []  # the highest id covered so far, at each update's time
    highest = 0
    for last, at in seen:
        highest = max(highest, last)
        covered.append((highest, at))
    found = []
    position = 0
    for event_id, start in sorted(sent):
        while position < len(covered) and covered[position][0] < event_id:
            position += 1
        if position < len(covered):
            found.append(max(0.0, covered[position][1] - start))
    return found


def stored_times(export: str) -> dict[int, float]:
    """Each event's id and the server's time of storing it, from the room's export."""
    rows = export.splitlines()[1:]
    return {
        int(row.split(",")[0]): datetime.fromisoformat(row.split(",")[1]).timestamp()
        for row in rows
    }


def percentile(values: list[float], share: float) -> float:
    """The value below which ``share`` of the sorted ``values`` lie (nearest rank)."""
    return values[min(len(values) - 1, int(share * len(values)))]


def check_cost(url: str, code: str, repeats: int = 60) -> tuple[float, float]:
    """Median seconds of one check without a room (the reference) and with one."""

    def count_params(tree: Any) -> int:
        import jax
        import numpy as np

        return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))

    def timed() -> float:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            check("01.count_params", count_params)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        timed()  # warm: the references and compiled programs
        alone = timed()
        join_room(url, code=code, name="bench check")
        with_room = timed()
        leave_room()
        alone_again = timed()
    return (alone + alone_again) / 2, with_room


GOAL_GONE_S = 120.0
GOAL_RUNNING_S = 90.0
LIVE_LEARNER = """
import sys, time
from course_lib.checks import check, join_room
join_room(sys.argv[1], code=sys.argv[2], name=sys.argv[3])
def right(tree):
    import jax, numpy as np
    return sum(int(np.size(leaf)) for leaf in jax.tree.leaves(tree))
def hangs(tree):
    time.sleep(3600)
check("01.count_params", right)
print("started", time.time(), flush=True)
if sys.argv[3] == "Hung":
    check("01.count_params", hangs)
time.sleep(3600)
"""


def liveness(folder: Path) -> int:
    """Two real learners at the defaults: seconds until Needs help shows one killed with SIGKILL
    20 s after its first check, and one whose second check hangs (from that check's start)."""
    server, info = start_server(folder)
    learners: dict[str, subprocess.Popen[str]] = {}
    try:
        started = {}
        for name in ("Killed", "Hung"):
            env = {**os.environ, "XDG_CONFIG_HOME": str(folder / name), "COURSE_ROOM": ""}
            learner = subprocess.Popen(
                [sys.executable, "-c", LIVE_LEARNER, info["url"], info["code"], name],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                text=True,
            )
            learners[name] = learner
            assert learner.stdout is not None
            for line in learner.stdout:
                if line.startswith("started"):
                    started[name] = float(line.split()[1])
                    break
        time.sleep(20)
        learners["Killed"].kill()
        started["Killed"] = time.time()
        shown: dict[str, float] = {}
        stream_url = f"{info['url']}/api/stream?token={info['token']}"
        with urllib.request.urlopen(stream_url, timeout=300) as stream:
            while len(shown) < 2 and time.time() - started["Killed"] < 300:
                line = stream.readline()
                if line.startswith(b"data: "):
                    for row in json.loads(line[6:]).get("needs_help", []):
                        if (row["name"], row["kind"]) in (("Killed", "gone"), ("Hung", "running")):
                            shown.setdefault(row["name"], time.time())
    finally:
        for learner in learners.values():
            learner.kill()
        server.terminate()
        server.wait(30)
    gone = shown.get("Killed", math.inf) - started["Killed"]
    running = shown.get("Hung", math.inf) - started["Hung"]
    print(f"A kernel killed with SIGKILL: shown as gone after {gone:.0f} s")
    print(f"A check that hangs: shown as running {running:.0f} s after it began")
    goals = {
        f"a killed kernel shown within {GOAL_GONE_S:g} s": gone <= GOAL_GONE_S,
        f"a hung check shown within {GOAL_RUNNING_S:g} s": running <= GOAL_RUNNING_S,
    }
    for goal, met in goals.items():
        print(f"{'met' if met else 'MISSED'}: {goal}")
    return 0 if all(goals.values()) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", type=int, default=200)
    parser.add_argument(
        "--beat", type=float, default=5.0, help="seconds between a learner's heartbeats"
    )
    parser.add_argument(
        "--liveness", action="store_true", help="measure a killed kernel and a hung check instead"
    )
    args = parser.parse_args()
    if args.liveness:
        with tempfile.TemporaryDirectory() as folder:
            return liveness(Path(folder))

    with tempfile.TemporaryDirectory() as folder:
        server, info = start_server(Path(folder))
        try:
            stream_url = f"{info['url']}/api/stream?token={info['token']}"
            rows = []
            stored_expected = 0
            for tag, pause in (("burst", (0.0, 0.0)), ("paced", (0.2, 1.2))):
                receiver, sender = multiprocessing.Pipe(duplex=False)
                ready, stop = multiprocessing.Event(), multiprocessing.Event()
                listener = multiprocessing.Process(
                    target=listen, args=(stream_url, sender, ready, stop)
                )
                listener.start()
                ready.wait(30)
                print(f"{tag}: {args.learners} learners posting...", file=sys.stderr)
                sent, refused, wall, total, beats = run_room(
                    info, args.learners, pause, 1, tag, args.beat
                )
                time.sleep(1.0)  # the last update reaches the dashboard
                stop.set()
                # One more event wakes the listener's read, so that it sees stop.
                post(info, "bench wake", {"kind": "join"})
                seen = receiver.recv()
                listener.join(30)
                stored_expected += len(sent) + 1
                rows.append((tag, total, len(sent), refused, wall, sent, seen, beats))
            rss = psutil.Process(server.pid).memory_info().rss
            export_url = f"{info['url']}/export.csv?token={info['token']}"
            received = stored_times(urllib.request.urlopen(export_url).read().decode())
            stored = len(received)
            alone, with_room = check_cost(info["url"], info["code"])
        finally:
            server.terminate()
            server.wait(30)

    print(
        f"Room of {args.learners} learners, {len(all_exercises())} exercises (lessons 01-09), "
        f"a heartbeat from each every {args.beat:g} s"
    )
    print()
    print(
        "| round | events | accepted | refused | wall (s) | events/s | event to dashboard, "
        "median / p99 / max (ms) | stored to dashboard, median / p99 (ms) | covered | "
        "heartbeats (per s, share of events) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    p99s = {}
    for tag, total, accepted, refused, wall, sent, seen, beats in rows:
        found = sorted(latencies(sent, seen))
        after = sorted(latencies([(i, received[i]) for i, _ in sent if i in received], seen))
        p99s[tag] = percentile(found, 0.99)
        print(
            f"| {tag} | {total:,} | {accepted:,} | {refused} | {wall:.1f} | {accepted / wall:,.0f} "
            f"| {percentile(found, 0.5) * 1000:.0f} / {p99s[tag] * 1000:.0f} / "
            f"{found[-1] * 1000:.0f} | {percentile(after, 0.5) * 1000:.0f} / "
            f"{percentile(after, 0.99) * 1000:.0f} | {len(found):,} of {accepted:,} "
            f"| {beats:,} ({beats / wall:.1f}/s, {beats / max(accepted, 1):.1%}) |"
        )
    print()
    print(f"Stored in the room's export: {stored:,} of {stored_expected:,} accepted events")
    print(f"Server memory (RSS) at the end: {rss / 2**20:.0f} MiB")
    extra_ms = (with_room - alone) * 1000
    print(
        f"One check, median: {alone * 1000:.2f} ms alone (reference), {with_room * 1000:.2f} ms "
        f"in a room: ratio {with_room / alone:.3f}, {extra_ms:+.2f} ms"
    )
    goals = {
        "every event stored": stored == stored_expected,
        f"p99 latency <= {GOAL_P99_S:g} s (paced)": p99s["paced"] <= GOAL_P99_S,
        f"a check's cost in a room <= {GOAL_CHECK_MS:g} ms above": extra_ms <= GOAL_CHECK_MS,
    }
    for goal, met in goals.items():
        print(f"{'met' if met else 'MISSED'}: {goal}")
    return 0 if all(goals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
