"""Grading a whole class: LMS downloads, rosters, one row per student, LMS layouts, safe re-runs,
overrides, resume after an interrupt, due dates and the class report."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import time
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import nbformat
import pytest
from test_grade import (
    NAME,
    NO_CANARY,
    exercise_version,
    grade,
    replace_body,
    run_main,
    solution,
    start_grader,
    tree_hashes,
    write,
)

from course_tools.grade.intake import UsageError, find_class, folding

FAST = ["--timeout", "20", "--notebook-timeout", "120", "--jobs", "2", "--quiet"]
DUE = "2026-12-01T23:59+00:00"
DUE_STAMP = datetime(2026, 12, 1, 23, 59, tzinfo=UTC).timestamp()


def notebook_bytes(nb: nbformat.NotebookNode) -> bytes:
    return nbformat.writes(nb).encode()


def rows(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(path.read_text(encoding="utf-8").splitlines()))


def by_key(path: Path) -> dict[str, dict[str, str]]:
    return {row["student"]: row for row in rows(path)}


def put(path: Path, data: bytes, stamp: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (stamp, stamp))


# --- a Canvas download, flat and zipped, with a roster --------------------------------------------

WRONG = replace_body(
    solution(),
    "01.leaf_paths",
    "    return [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_leaves_with_path(tree)]",
)
ROSTER = (
    "id,name,email,section\n"
    "1001,Alice Smith,alice.a@example.org,A\n"
    "2002,Alice Smith,alice.b@example.org,B\n"
    "1003,Bob Jones,bob@example.org,A\n"
    "1004,Cy Lee,cy@example.org,B\n"
    "1005,Dee Kim,dee@example.org,A\n"
    "1006,Eve Absent,eve@example.org,B\n"
)


def _canvas_download(folder: Path) -> None:
    early = (
        DUE_STAMP - 3600
    )  # an hour before the due time, an even second (zip times have 2 s steps)
    put(folder / f"smithalice_1001_5001_{NAME}", notebook_bytes(solution()), early)
    put(folder / f"smithalice_2002_5002_{NAME}", notebook_bytes(WRONG), early)
    put(
        folder / "smithalice_2002_5007_01_copy.ipynb", notebook_bytes(exercise_version()), early
    )  # a second notebook of lesson 01
    # Bob uploaded twice; Canvas named the second upload ...-1. He was late by 1 day 2 h.
    put(folder / f"jonesbob_LATE_1003_5003_{NAME}", notebook_bytes(exercise_version()), early)
    put(
        folder / f"jonesbob_LATE_1003_5004_{NAME.replace('.ipynb', '-1.ipynb')}",
        notebook_bytes(solution()),
        DUE_STAMP + 26 * 3600,
    )
    put(folder / "leecy_1004_5005_homework.py", b"def count_params(tree):\n    return 0\n", early)
    put(folder / "kimdee_1005_5006_notebooks.zip", b"PK\x05\x06" + b"\x00" * 18, early)


@pytest.fixture(scope="module")
def canvas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("canvas")
    flat = base / "submissions"
    _canvas_download(flat)
    archive = base / "submissions.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(flat.iterdir()):
            info = zipfile.ZipInfo(path.name, time.localtime(path.stat().st_mtime)[:6])
            zf.writestr(info, path.read_bytes())
    (base / "roster.csv").write_text(ROSTER)
    before = tree_hashes(flat)
    common = [
        "--roster",
        base / "roster.csv",
        "--due",
        DUE,
        "--late-penalty",
        "10",
        "--format",
        "canvas",
        "--format",
        "moodle",
        "--assignment",
        "Pytree (77)",
    ]
    for source, out in ((flat, "out_flat"), (archive, "out_zip")):
        result = grade([source], base / out, *FAST, *map(str, common))
        assert result.returncode == 0, result.stderr[-3000:]
    assert tree_hashes(flat) == before, "grading changed the submissions"
    return {"base": base, "flat": base / "out_flat", "zip": base / "out_zip", "archive": archive}


def test_canvas_download_graded_into_the_right_students(canvas: dict[str, Path]) -> None:
    book = by_key(canvas["flat"] / "gradebook.csv")
    assert list(book) == ["1001", "1003", "1004", "1005", "1006", "2002"]
    assert (
        book["1001"]["name"] == book["2002"]["name"] == "Alice Smith"
    )  # same name, two sections, two students
    assert (book["1001"]["section"], book["2002"]["section"]) == ("A", "B")
    assert (book["1001"]["points"], book["1001"]["status"]) == ("8", "graded")
    assert (book["2002"]["points"], book["2002"]["01.leaf_paths"]) == (
        "6",
        "0",
    )  # the better of her two notebooks
    graded = json.loads((canvas["flat"] / "gradebook.json").read_text())["submissions"]
    assert sorted((s["student"], s["notebook"]) for s in graded) == [
        ("1001", NAME),
        ("1003", NAME),
        ("2002", "01_copy.ipynb"),
        ("2002", NAME),
    ]
    assert book["1003"]["points"] == "8", "Bob's later upload (-1) is the one graded"
    assert [book[k]["status"] for k in ("1004", "1005", "1006")] == [
        "no_notebook",
        "archive_only",
        "missing",
    ]
    assert "homework.py" in book["1004"]["notes"] and "notebooks.zip" in book["1005"]["notes"]
    assert all(
        book[k]["total"] == "0" and book[k]["max_points"] == "8" for k in ("1004", "1005", "1006")
    )


def test_canvas_zip_gives_the_same_gradebook_as_the_folder(canvas: dict[str, Path]) -> None:
    for name in ("gradebook.csv", "gradebook-canvas.csv", "gradebook-moodle.csv", "report.html"):
        assert (canvas["flat"] / name).read_bytes() == (canvas["zip"] / name).read_bytes(), name
    paths = [
        s["path"] for s in json.loads((canvas["zip"] / "gradebook.json").read_text())["submissions"]
    ]
    assert all(p.startswith(str(canvas["archive"]) + "/") for p in paths), (
        paths
    )  # the zip, not a scratch folder


def test_lateness_and_penalty(canvas: dict[str, Path]) -> None:
    book = by_key(canvas["flat"] / "gradebook.csv")
    assert book["1003"]["late_by_hours"] == "26.00"
    assert (book["1003"]["late_penalty"], book["1003"]["total"]) == (
        "1.6",
        "6.4",
    )  # 2 started days x 10% of 8
    assert book["1001"]["late_by_hours"] == "" and book["1001"]["late_penalty"] == "0"
    summary = next((canvas["flat"] / "feedback").glob("Bob Jones/_summary.txt")).read_text()
    assert "Total: 6.4 / 8" in summary and "late by 1 day 2 h" in summary
    policy = json.loads((canvas["flat"] / "gradebook.json").read_text())["class"]
    assert policy == {
        "due": "2026-12-01T23:59:00+00:00",
        "late_penalty_percent_per_day": 10,
        "late_penalty_cap_percent": 100,
    }


def test_canvas_layout_column_by_column(canvas: dict[str, Path]) -> None:
    table = list(csv.reader((canvas["flat"] / "gradebook-canvas.csv").read_text().splitlines()))
    assert table[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Pytree (77)"]
    assert table[1] == ["Points Possible", "", "", "", "", "8"]
    assert table[2:] == [
        ["Alice Smith", "1001", "", "", "A", "8"],
        ["Bob Jones", "1003", "", "", "A", "6.4"],
        ["Cy Lee", "1004", "", "", "B", "0"],
        ["Dee Kim", "1005", "", "", "A", "0"],
        ["Eve Absent", "", "1006", "", "B", "0"],
        ["Alice Smith", "2002", "", "", "B", "6"],
    ]


def test_moodle_layout_column_by_column(canvas: dict[str, Path]) -> None:
    table = list(csv.DictReader((canvas["flat"] / "gradebook-moodle.csv").read_text().splitlines()))
    assert list(table[0]) == [
        "Identifier",
        "Full name",
        "Email address",
        "Status",
        "Grade",
        "Maximum Grade",
        "Grade can be changed",
        "Last modified (submission)",
        "Last modified (grade)",
        "Feedback comments",
    ]
    bob = next(r for r in table if r["Full name"] == "Bob Jones")
    assert (bob["Email address"], bob["Status"], bob["Grade"], bob["Maximum Grade"]) == (
        "bob@example.org",
        "Submitted for grading",
        "6.4",
        "8",
    )
    assert datetime.fromisoformat(bob["Last modified (submission)"]) == datetime(
        2026, 12, 3, 1, 59, tzinfo=UTC
    )
    assert "1.6 off for being late by 1 day 2 h" in bob["Feedback comments"]
    eve = next(r for r in table if r["Full name"] == "Eve Absent")
    assert (eve["Status"], eve["Grade"]) == ("No submission", "0")


def test_report_is_deterministic_and_counts_students(canvas: dict[str, Path]) -> None:
    report = (canvas["flat"] / "report.html").read_text()
    assert "http" not in report.replace("http-equiv", "")  # no external assets
    # Alice of section B handed in two notebooks of lesson 01: one student, counted once (3 of 3,
    # not of 4).
    assert (
        "<tr><td>01.count_params</td><td>3</td><td>3</td>"
        "<td class='bar' style='--share:100%'>100%</td></tr>" in report
    )
    # Totals 8, 6.4 and 6 of 8 points, and 0 for the three without a graded notebook: each range
    # of one point counts its students, the last one holding 8.
    assert "<th>total points (of 8)</th>" in report
    totals = report.split("<h2>Totals</h2>")[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>([^<]+)</td><td>(\d+)</td><td[^>]*>([^<]+)</td></tr>", totals)
    assert rows == [
        ("0 to under 1", "3", "50%"),
        *[(f"{i} to under {i + 1}", "0", "0%") for i in range(1, 6)],
        ("6 to under 7", "2", "33%"),
        ("7 to 8", "1", "17%"),
    ]
    assert (
        "<tr><td>01.leaf_paths</td><td>1</td><td>For a dict with <code>None</code> values" in report
    )  # the hint, 1 student
    assert (
        "<td>Alice Smith (1001)</td><td>Bob Jones (1003)</td><td>01.count_params (identical)"
        in report
    )
    copies = report.split("contain the course's solution")[1]
    assert "Alice Smith (1001)" in copies and "Bob Jones (1003)" in copies
    assert "Eve Absent (1006)</td><td>missing" in report


def test_roster_errors_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path / "class", "ann", b"{}")
    (tmp_path / "roster.csv").write_text("name,email\nAnn,a@x\n")
    status, err = run_main(
        capsys, tmp_path / "class", "--roster", tmp_path / "roster.csv", "--out", tmp_path / "out"
    )
    assert status == 2 and "the header needs the column(s) id" in err
    (tmp_path / "roster.csv").write_text("id,name\n1,Ann\n1,Bo\n")
    status, err = run_main(
        capsys, tmp_path / "class", "--roster", tmp_path / "roster.csv", "--out", tmp_path / "out"
    )
    assert status == 2 and "line 3: the id '1' is already on line 2" in err


# --- folders as instructors collect them ----------------------------------------------------------


def test_class_folders_empty_zip_only_py_only_and_two_sections(tmp_path: Path) -> None:
    for section in ("sec1", "sec2"):
        write(tmp_path / section, "alice", b"{}")
    (tmp_path / "sec1" / "empty").mkdir()
    put(tmp_path / "sec1" / "zipped" / "work.zip", b"PK", 0)
    put(tmp_path / "sec2" / "script" / "answer.py", b"x = 1", 0)
    intake = find_class([str(tmp_path / "sec1"), str(tmp_path / "sec2")])
    assert [(s.student, s.notebook) for s in intake.submissions] == [
        ("sec1/alice", NAME),
        ("sec2/alice", NAME),
    ]
    statuses = {k: (s.status, s.section) for k, s in intake.students.items()}
    assert statuses == {
        "sec1/alice": ("", "sec1"),
        "sec2/alice": ("", "sec2"),
        "empty": ("empty", "sec1"),
        "zipped": ("archive_only", "sec1"),
        "script": ("no_notebook", "sec2"),
    }


def test_moodle_download_folders(tmp_path: Path) -> None:
    folder = tmp_path / "moodle"
    put(folder / "Jürgen Schmidt_4021_assignsubmission_file_" / NAME, b"{}", DUE_STAMP)
    put(folder / "Ann Lee_4022_assignsubmission_file_" / "notes.txt", b"hi", DUE_STAMP)
    (folder / "Bo Li_4023_assignsubmission_file_").mkdir()
    intake = find_class([str(folder)])
    assert [(s.student, s.notebook) for s in intake.submissions] == [("4021", NAME)]
    found = {k: (s.name, s.lms, s.status) for k, s in intake.students.items()}
    assert found == {
        "4021": ("Jürgen Schmidt", "moodle", ""),
        "4022": ("Ann Lee", "moodle", "no_notebook"),
        "4023": ("Bo Li", "moodle", "empty"),
    }
    assert intake.students["4021"].submitted == "2026-12-01T23:59:00+00:00"


def test_a_zip_with_path_traversal_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as zf:
        zf.writestr(f"smithalice_1001_5001_{NAME}", "{}")
        zf.writestr("../../escaped.ipynb", "{}")
    status, err = run_main(capsys, tmp_path / "evil.zip", "--out", tmp_path / "out")
    assert status == 2 and "would be written outside the folder" in err
    assert not (tmp_path.parent / "escaped.ipynb").exists() and not list(
        tmp_path.rglob("escaped.ipynb")
    )


def test_a_zip_with_too_many_members_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from course_tools.grade.intake import _unzip

    monkeypatch.setattr(_unzip, "MAX_MEMBERS", 3)
    with zipfile.ZipFile(tmp_path / "big.zip", "w") as zf:
        for i in range(4):
            zf.writestr(f"s{i}/{NAME}", "{}")
    with pytest.raises(UsageError, match="4 members, more than the 3"):
        find_class([str(tmp_path / "big.zip")])


# --- names that must not collide, re-runs and overrides -------------------------------------------

NAMES = {
    "Jürgen Schmidt": solution(),
    "Jörgen Schmidt": exercise_version(),
    "ann": WRONG,
    "Ann": solution(),
}


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("named")
    for student, nb in NAMES.items():
        write(base / "class", student, nb)
    result = grade([base / "class"], base / "out", *FAST, NO_CANARY)
    assert result.returncode == 0, result.stderr[-3000:]
    return {"base": base, "class": base / "class", "out": base / "out"}


def _scores(out: Path) -> dict[str, str]:
    found = {}
    for path in sorted((out / "feedback").glob("*/01_what_is_a_pytree.txt")):
        head = path.read_text().splitlines()
        found[path.parent.name] = head[1]
    return found


def test_unicode_and_case_only_names_get_their_own_feedback(named: dict[str, Path]) -> None:
    scores = _scores(named["out"])
    assert scores["Jürgen Schmidt"] == "Score: 8 / 8" and scores["Jörgen Schmidt"] == "Score: 0 / 8"
    case_pair = {k: v for k, v in scores.items() if folding(k).startswith("ann")}
    assert len(case_pair) == 2 and len({folding(k) for k in case_pair}) == 2, (
        case_pair
    )  # distinct even on a case-insensitive disk
    assert sorted(case_pair.values()) == ["Score: 6 / 8", "Score: 8 / 8"]
    folders = {
        s["key"]: s["folder"]
        for s in json.loads((named["out"] / "gradebook.json").read_text())["students"]
    }
    assert folders["ann"].startswith("ann (") and folders["Ann"].startswith(
        "Ann ("
    )  # the suffix shows whose it is
    assert (scores[folders["ann"]], scores[folders["Ann"]]) == ("Score: 6 / 8", "Score: 8 / 8")


def test_regrading_one_student_keeps_the_others(named: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(named["out"], out)
    others = {
        p: p.read_bytes()
        for p in (out / "feedback").rglob("*.txt")
        if not p.parent.name.startswith("Jörgen")
    }
    stamps = {p: p.stat().st_mtime_ns for p in others}
    old_rows = by_key(out / "gradebook.csv")
    (named["class"] / "Jörgen Schmidt" / NAME).write_bytes(
        notebook_bytes(solution())
    )  # he resubmitted
    try:
        result = grade([named["class"]], out, *FAST, NO_CANARY, "--only", "Jörgen Schmidt")
    finally:
        (named["class"] / "Jörgen Schmidt" / NAME).write_bytes(
            notebook_bytes(NAMES["Jörgen Schmidt"])
        )
    assert result.returncode == 0, result.stderr[-3000:]
    new_rows = by_key(out / "gradebook.csv")
    assert (
        new_rows["Jörgen Schmidt"]["points"] == "8" and old_rows["Jörgen Schmidt"]["points"] == "0"
    )
    assert {k: v for k, v in new_rows.items() if k != "Jörgen Schmidt"} == {
        k: v for k, v in old_rows.items() if k != "Jörgen Schmidt"
    }
    assert {p: p.read_bytes() for p in others} == others
    assert {p: p.stat().st_mtime_ns for p in others} == stamps  # not even rewritten


def test_overrides_are_applied_and_shown(named: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(named["out"], out)
    (tmp_path / "overrides.csv").write_text(
        "student,exercise,points,comment\nann,01.leaf_paths,1.5,None entries were asked for late\n"
    )
    result = grade(
        [named["class"]], out, *FAST[:-1], NO_CANARY, "--overrides", str(tmp_path / "overrides.csv")
    )  # not --quiet
    assert result.returncode == 0, result.stderr[-3000:]
    assert (
        "grading 0 notebook(s), 2 at a time; 4 unchanged since" in result.stderr
    )  # no kernel needed for an override
    row = by_key(out / "gradebook.csv")["ann"]
    assert (row["01.leaf_paths"], row["points"], row["total"]) == ("1.5", "7.5", "7.5")
    folder = (
        out
        / "feedback"
        / {
            s["key"]: s["folder"]
            for s in json.loads((out / "gradebook.json").read_text())["students"]
        }["ann"]
    )
    text = (folder / "01_what_is_a_pytree.txt").read_text()
    assert (
        "Score: 7.5 / 8" in text
        and "Your instructor set the points to 1.5/2: None entries were asked for late" in text
    )
    assert "set by your instructor: None entries" in (folder / "_summary.txt").read_text()


@pytest.mark.parametrize(
    ("row", "words"),
    [
        ("nobody,01.leaf_paths,1,x", "line 2: no student 'nobody'"),
        ("ann,01.nothing,1,x", "line 2: no exercise '01.nothing'"),
        ("ann,01.leaf_paths,3,x", "line 2: 3 points for 01.leaf_paths is outside 0..2"),
        ("ann,01.leaf_paths,two,x", "line 2: points 'two' is not a number"),
        ("ann,01.leaf_paths,,x", "line 2: points is empty"),
    ],
)
def test_a_bad_overrides_row_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], row: str, words: str
) -> None:
    write(tmp_path / "class", "ann", solution())
    (tmp_path / "overrides.csv").write_text(f"student,exercise,points,comment\n{row}\n")
    status, err = run_main(
        capsys,
        tmp_path / "class",
        "--overrides",
        tmp_path / "overrides.csv",
        "--out",
        tmp_path / "out",
    )
    assert status == 2 and words in err, err
    assert not (tmp_path / "out" / "gradebook.json").exists()


def test_a_gradebook_from_other_settings_is_not_mixed(
    named: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    shutil.copytree(named["out"], out)
    status, err = run_main(
        capsys,
        named["class"],
        "--out",
        out,
        "--timeout",
        "20",
        "--notebook-timeout",
        "120",
        "--seed",
        "7",
    )
    assert (
        status == 2
        and "was graded with other settings (seed 0 then, 7 now); a re-run keeps its rows" in err
    )


# --- an interrupted run, resumed ------------------------------------------------------------------


def test_interrupted_run_resumes_to_the_same_gradebook(tmp_path: Path) -> None:
    folder = tmp_path / "class"
    for i, nb in enumerate([solution(), WRONG, exercise_version()]):
        write(folder, f"student{i}", nb)
    args = [str(folder), "--timeout", "20", "--notebook-timeout", "120", "--jobs", "1", NO_CANARY]
    whole = grade([folder], tmp_path / "whole", *args[1:], "--quiet")
    assert whole.returncode == 0, whole.stderr[-3000:]
    out = tmp_path / "out"
    process = start_grader(*args, "--out", str(out), ctrl_c=True)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        if (
            journal.exists() and len(journal.read_text().splitlines()) >= 2
        ):  # the header and one result
            break
        time.sleep(0.2)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-3000:]
    assert "--resume" in err and not (out / "gradebook.json").exists()
    kept = len(journal.read_text().splitlines()) - 1
    assert 1 <= kept < 3
    again = grade([folder], out, *args[1:])
    assert again.returncode == 2 and "left from an interrupted run" in again.stderr
    resumed = grade([folder], out, *args[1:], "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"grading {3 - kept} notebook(s)" in resumed.stderr
    assert not journal.exists()
    for name in ("gradebook.csv", "gradebook.json", "report.html"):
        assert (out / name).read_bytes() == (tmp_path / "whole" / name).read_bytes(), name
    assert tree_hashes(out / "feedback") == tree_hashes(tmp_path / "whole" / "feedback")


def test_sigterm_stops_the_run_where_ctrl_c_is_ignored(tmp_path: Path) -> None:
    """Started as a script's background job is (SIGINT ignored), the grader keeps grading through
    a Ctrl-C meant for the script, and SIGTERM stops it as Ctrl-C would."""
    write(tmp_path / "class", "ann", add_loop(solution()))
    process = start_grader(
        str(tmp_path / "class"),
        "--out",
        str(tmp_path / "out"),
        "--timeout",
        "15",
        "--no-canary",
        ctrl_c=False,
    )
    assert process.stderr is not None and process.stderr.readline().startswith(
        "grading 1 notebook(s)"
    )
    time.sleep(3)  # the student's kernel is starting or running the loop (no canary before it)
    process.send_signal(signal.SIGINT)
    with pytest.raises(subprocess.TimeoutExpired):  # Ctrl-C stops a run in about a second
        process.wait(timeout=3)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err[-3000:]
    assert "interrupted; every kernel was stopped" in err and "0 finished notebook(s)" in err


def add_loop(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.cells.insert(2, nbformat.v4.new_code_cell("import time\nwhile True:\n    time.sleep(0.1)"))
    return nb


def test_only_names_a_student_that_exists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "class", "ann", solution())
    status, err = run_main(
        capsys, tmp_path / "class", "--only", "nobody", "--out", tmp_path / "out"
    )
    assert status == 2 and "--only nobody: no such student" in err


def test_moodle_zip_keeps_member_times(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "moodle.zip", "w") as zf:
        zf.writestr(
            zipfile.ZipInfo(f"Ann Lee_4022_assignsubmission_file_/{NAME}", (2026, 12, 2, 8, 30, 0)),
            "{}",
        )
        zf.writestr(
            zipfile.ZipInfo("Bo Li_4023_assignsubmission_file_/answers.py", (2026, 12, 1, 9, 0, 0)),
            "x = 1",
        )
    intake = find_class([str(tmp_path / "moodle.zip")])
    try:
        assert [(s.student, s.notebook, s.shown) for s in intake.submissions] == [
            ("4022", NAME, f"{tmp_path / 'moodle.zip'}/Ann Lee_4022_assignsubmission_file_/{NAME}")
        ]
        ann, bo = intake.students["4022"], intake.students["4023"]
        local = datetime(2026, 12, 2, 8, 30).astimezone()  # zip times carry no zone: local time
        assert ann.submitted is not None and ann.name == "Ann Lee"
        assert datetime.fromisoformat(ann.submitted) == local
        assert bo.status == "no_notebook"
    finally:
        intake.close()
    assert not any(Path(h.name).exists() for h in intake.scratch)  # the scratch folder is gone


def test_roster_by_sis_id_matches_canvas_names(tmp_path: Path) -> None:
    put(tmp_path / "dl" / f"smithalice_1001_5001_{NAME}", b"{}", DUE_STAMP)
    put(tmp_path / "dl" / f"jonesbob_1003_5003_{NAME}", b"{}", DUE_STAMP)
    (tmp_path / "roster.csv").write_text("id,name,section\ns-17,Alice Smith,A\ns-18,Cy Lee,B\n")
    from course_tools.grade.intake import read_roster

    intake = find_class([str(tmp_path / "dl")], read_roster(tmp_path / "roster.csv"))
    found = {k: (s.name, s.lms_id, s.status) for k, s in intake.students.items()}
    assert found == {
        "s-17": ("Alice Smith", "1001", ""),
        "s-18": ("Cy Lee", "", "missing"),
        "1003": ("jonesbob", "1003", ""),  # not on the roster: kept, and warned about
    }
    assert intake.warnings == ["jonesbob (1003) is not on the roster; graded under '1003'"]


def test_submission_times_from_a_moodle_worksheet(tmp_path: Path) -> None:
    from course_tools.grade.intake import apply_times, read_submission_times

    put(tmp_path / "dl" / "Ann Lee_4022_assignsubmission_file_" / NAME, b"{}", 0)
    put(tmp_path / "dl" / "Bo Li_4023_assignsubmission_file_" / NAME, b"{}", 0)
    (tmp_path / "worksheet.csv").write_text(
        "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,Last "
        "modified (submission),Last modified (grade),Feedback comments\n"
        'Participant 4022,Ann Lee,ann@x,Submitted for grading,,8,Yes,"Wednesday, 2 December 2026, '
        '8:30 AM",-,\n'
        "Participant 4023,Bo Li,bo@x,No submission,,8,Yes,-,-,\n"
    )
    intake = find_class([str(tmp_path / "dl")])
    apply_times(intake, read_submission_times(tmp_path / "worksheet.csv"))
    ann, bo = intake.students["4022"].submitted, intake.students["4023"].submitted
    assert ann is not None and bo is not None
    assert datetime.fromisoformat(ann) == datetime(2026, 12, 2, 8, 30).astimezone()
    assert datetime.fromisoformat(bo) == datetime.fromtimestamp(0, UTC)  # the file's time
    (tmp_path / "times.csv").write_text("student,submitted\n4023,yesterday\n")
    with pytest.raises(UsageError, match="line 2: 'yesterday' is not a time"):
        read_submission_times(tmp_path / "times.csv")
