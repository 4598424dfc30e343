"""Grade a class while another process grabs and releases TCP ports in a loop: no kernel may be
lost at start, and the gradebook must equal a quiet run's.

    .venv/bin/python bench/stress_kernel_ports.py                  # 200 students, --jobs 8
    .venv/bin/python bench/stress_kernel_ports.py --students 40 --tcp

The class is lesson ``--lesson``'s, half solved and half blank (as in ``bench_grade.py``). It is
graded three times into fresh folders: quietly; while the grabber runs; and, with ``--tcp``, once
more while it runs with the kernels' sockets left open (``COURSE_GRADE_NO_SOCKET_FILTER``), which
makes the grader talk to its kernels over TCP ports as on a machine without seccomp. The grabber
binds and listens on ``--grab`` loopback ports at a time (each chosen by the system, as a kernel's
ports are), holds them a few milliseconds and lets them go, over and over.

The table gives, per run: wall time, submissions whose kernel could not be started, kernels that
died at start and were started again (the grader's note in the record), and whether every row of
the gradebook equals the quiet run's.
"""

import argparse
import json
import multiprocessing
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_grade import build_class

ROOT = Path(__file__).resolve().parents[1]
RETRIED = "a kernel died while starting"
NOT_STARTED = "could not start a kernel"


def grab_ports(count: int, hold_seconds: float, stop: "multiprocessing.synchronize.Event") -> None:
    """Bind and listen on ``count`` ports chosen by the system, hold them, release, repeat."""
    while not stop.is_set():
        held = []
        for _ in range(count):
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", 0))
                sock.listen()
            except OSError:
                sock.close()
                break
            held.append(sock)
        time.sleep(hold_seconds)
        for sock in held:
            sock.close()


def grade(folder: Path, out: Path, jobs: int, env: dict[str, str]) -> tuple[float, dict]:
    command = [sys.executable, "-m", "course_tools.grade", str(folder), "--out", str(out)]
    command += ["--quiet", "--jobs", str(jobs)]
    start = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    seconds = time.monotonic() - start
    if not (out / "gradebook.json").exists():
        sys.exit(f"course-grade failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return seconds, json.loads((out / "gradebook.json").read_text())


def summary(book: dict) -> dict[str, object]:
    """What a run leaves in its record: lost kernels, retried ones, and each student's marks."""
    submissions = book["submissions"]
    return {
        "not started": sum(NOT_STARTED in s["message"] for s in submissions),
        "retried": sum(note.startswith(RETRIED) for s in submissions for note in s["notes"]),
        "marks": {
            s["student"]: [(e["id"], e["status"], e["points"]) for e in s["exercises"]]
            for s in submissions
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--lesson", default="09")
    parser.add_argument("--grab", type=int, default=2000, help="ports held at once")
    parser.add_argument("--hold", type=float, default=0.005, help="seconds each batch is held")
    parser.add_argument("--tcp", action="store_true", help="add a stressed run over TCP")
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="stress-ports-"))
    build_class(base / "class", args.lesson, args.students)
    runs = [("quiet", {}, False), ("ports grabbed", {}, True)]
    if args.tcp:
        runs.append(("ports grabbed, TCP", {"COURSE_GRADE_NO_SOCKET_FILTER": "1"}, True))
    rows = []
    reference = None
    for name, extra, stressed in runs:
        stop = multiprocessing.Event()
        grabber = multiprocessing.Process(target=grab_ports, args=(args.grab, args.hold, stop))
        if stressed:
            grabber.start()
        env = {**os.environ, **extra}
        seconds, book = grade(base / "class", base / name.replace(" ", "-"), args.jobs, env)
        if stressed:
            stop.set()
            grabber.join()
        found = summary(book)
        reference = reference or found["marks"]
        same = found["marks"] == reference
        rows.append((name, seconds, found["not started"], found["retried"], same))
        print(f"{name}: {seconds:.1f} s", file=sys.stderr)

    print(f"{args.students} submissions of lesson {args.lesson}, --jobs {args.jobs}, grabber: ")
    print(f"{args.grab} ports held {args.hold * 1000:g} ms at a time\n")
    print("| run | wall s | kernels not started | started again | gradebook as quiet |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, seconds, lost, retried, same in rows:
        print(f"| {name} | {seconds:.1f} | {lost} | {retried} | {'yes' if same else 'NO'} |")
    # The TCP run shows what retrying once recovers; only unix sockets promise no loss.
    failed = any(lost or not same for name, _, lost, _, same in rows if "TCP" not in name)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
